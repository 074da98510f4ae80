"""A bad spec on purpose (tests/language/test_spec_language.py: the error names the fix)."""

from ownership import Spec, action, pool, per_page
class E(Spec):
    requests = 1
    kv = pool(2)
    pinned = per_page("kv", bool, False)
