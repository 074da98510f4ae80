"""Seeded bug (read-unowned): a request frees its page but keeps it in its table and reads it.

Shortest counterexample: take(r), release(r), attend(r), 3 steps; the page still holds r's KV,
so only read-unowned is violated (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    HOLDS = 1
    RELEASED = 2
    DONE = 3


class ReadUnowned(Spec):
    """Free, then read through a stale block table."""

    pages = param(2, "pages in the pool", minimum=1)
    node = pool(pages)

    stage = per_request(St, St.NEW)
    table = per_request(node)

    @action
    def take(self, s, r: Request):
        """Reserve one page and compute KV into it."""
        s.require(s.stage[r] == St.NEW)
        got = s.alloc("node", r, 1)
        s.write("node", r, got)
        s.table[r] = got
        s.stage[r] = St.HOLDS

    @action
    def release(self, s, r: Request):
        """Free the page, but forget to clear the table."""
        s.require(s.stage[r] == St.HOLDS)
        s.free("node", r, s.table[r])
        s.stage[r] = St.RELEASED

    @action
    def attend(self, s, r: Request):
        """Attend over the (stale) table."""
        s.require(s.stage[r] == St.RELEASED)
        s.read("node", r, s.table[r])
        s.stage[r] = St.DONE
