"""A 64-page pool whose page 63 is taken (NOTE(int64-exact)): the batch and native engines once
kept it as a negative int64 and read it back so, and the concrete count() of the state they
handed back was wrong (an internal error where the invariant is violated). Pools of 64 pages
and more are checked with Python's integers now."""

from ownership import Request, Spec, action, count, invariant, param, per_request, pool


class AllPages(Spec):
    requests = param(1, "requests")
    kv = pool(64)
    table = per_request(kv, 0)

    @action
    def take_all(self, s, r: Request):
        s.require(s.table[r] == 0)
        s.table[r] = s.alloc("kv", r, 64)

    @invariant
    def fewer_than_64(self, s):
        """The table holds fewer than 64 pages (it holds all 64 after one step)."""
        return count(s.table[1]) < 64
