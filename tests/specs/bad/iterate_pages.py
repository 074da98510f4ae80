"""A bad spec on purpose (tests/language/test_spec_language.py: the error names the fix)."""

from ownership import Spec, action, pool, Request, per_request, count
class E(Spec):
    requests = 1
    kv = pool(2)
    t = per_request(kv)
    @action
    def go(self, s, r: Request):
        for p in s.t[r]:
            pass
