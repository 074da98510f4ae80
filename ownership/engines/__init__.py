"""Search engines over a Model: each returns a CheckResult and reports progress, never prints."""
