"""Seeded bug (leak): a request finishes without returning its page to the pool.

Shortest counterexample: take(r), finish(r), 2 steps (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    HOLDS = 1
    DONE = 2


class Leak(Spec):
    """Finish without freeing."""

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
    def finish(self, s, r: Request):
        """Finish, forgetting to free the page."""
        s.require(s.stage[r] == St.HOLDS)
        s.table[r] = 0
        s.stage[r] = St.DONE

    def finished(self, s, r):
        """A finished request must own no page."""
        return s.stage[r] == St.DONE
