"""Liveness over a 64-page pool (NOTE(int64-exact)): the reachable graph was built by the batch
interpreter and its states read back with page 63's set as a negative number (all 64 pages:
-1), so p and q were judged on count(-1) == 1: the default engine said this property holds,
though the table never holds one page, and the measure said 1 where it is 64."""

from ownership import Request, Spec, action, count, eventually, measure, param, per_request, pool


class EventuallyOne(Spec):
    requests = param(1, "requests")
    kv = pool(64)
    table = per_request(kv, 0)

    @action(fair=True)
    def take_all(self, s, r: Request):
        s.require(s.table[r] == 0)
        s.table[r] = s.alloc("kv", r, 64)

    @eventually
    def exactly_one(self, s):
        """Eventually the table holds exactly one page (it holds 0, then 64, for ever)."""
        return count(s.table[1]) == 1

    @measure
    def held(self, s):
        """Pages the table holds."""
        return count(s.table[1])
