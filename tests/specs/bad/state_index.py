"""A bad spec on purpose (tests/language/test_spec_language.py: the error names the fix)."""

from ownership import Spec, action, pool, Request, per_request, state, ints
class E(Spec):
    requests = 1
    kv = pool(2)
    i = state(ints(0, 1), 0)
    t = per_request(kv)
    @action
    def go(self, s, r: Request):
        x = [1, 2][s.i]
        y = len(s.t[r])
