"""Seeded bug (stale-read): a request attends over a page it allocated but never wrote.

Shortest counterexample: take(r), attend(r), 2 steps. Part of the zoo that every engine must
catch (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    HOLDS = 1
    DONE = 2


class StaleRead(Spec):
    """Allocate, then read without writing."""

    pages = param(3, "pages in the pool", minimum=1)
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
    def attend(self, s, r: Request):
        """Attend over the table: nobody wrote it."""
        s.require(s.stage[r] == St.HOLDS)
        s.read("node", r, s.table[r])
        s.stage[r] = St.DONE
