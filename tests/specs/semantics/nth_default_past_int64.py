"""nth() with a default past int64 (NOTE(int64-exact)): the default is no node of its own, so
the batch engine's check of constants missed it, and building nth's lookup table overflowed
(an internal error). It now makes the batch engine step aside for the per-state engine."""

from ownership import Request, Spec, action, invariant, nth, param, per_request, pool, state


class NthDefault(Spec):
    requests = param(1, "requests")
    kv = pool(2)
    table = per_request(kv, 0)
    big = state(bool, False)

    @action
    def go(self, s, r: Request):
        s.require(~s.big)
        s.big = nth(s.table[r], 1, 2 ** 70) > 5

    @invariant
    def small(self, s):
        """Never big (the empty table has no page 1: nth is the default, 2**70)."""
        return ~s.big
