"""Seeded bug (double-free): a request can release its page twice (a retry path that forgets
the first release).

Shortest counterexample: take(r), release(r), release(r), 3 steps (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    HOLDS = 1
    RELEASED = 2


class DoubleFree(Spec):
    """Release twice."""

    pages = param(2, "pages in the pool", minimum=1)
    node = pool(pages)

    stage = per_request(St, St.NEW)
    table = per_request(node)

    @action
    def take(self, s, r: Request):
        """Reserve one page."""
        s.require(s.stage[r] == St.NEW)
        s.table[r] = s.alloc("node", r, 1)
        s.stage[r] = St.HOLDS

    @action
    def release(self, s, r: Request):
        """Free the table's pages; the guard also admits an already released request."""
        s.require((s.stage[r] == St.HOLDS) | (s.stage[r] == St.RELEASED))
        s.free("node", r, s.table[r])
        s.stage[r] = St.RELEASED
