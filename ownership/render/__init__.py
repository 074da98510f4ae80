"""Renderers: turn results and traces into text for people (the only code that formats output)."""
