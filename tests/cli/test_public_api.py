"""The public API is exactly what ownership.__all__ lists (after httpx's test_exported_members)."""

import ownership

EXPECTED = [
    "CheckResult", "ConfigError", "Coverage", "If", "Max", "Min", "OwnershipError", "Request",
    "Spec", "SpecError", "Trace", "TraceFormatError", "UsageError", "Verdict", "Violation",
    "action", "all_of", "array", "any_of", "check", "count", "eventually", "first", "fix", "has", "ints", "invariant", "leads_to", "lemma", "measure",
    "model_for", "nth", "page", "param", "per_page", "per_request", "pool", "read_itf",
    "replay_trace", "select", "sometimes", "state", "without", "write_itf",
]


def test_the_public_api_is_pinned():
    """Adding or removing a public name is a deliberate change to this list."""
    assert sorted(ownership.__all__) == sorted(EXPECTED)
    for name in EXPECTED:
        assert hasattr(ownership, name), name
