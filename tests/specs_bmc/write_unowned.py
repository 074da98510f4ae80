"""Seeded bug (write-unowned): a request computes KV into a page after freeing it.

Shortest counterexample: take(r), release(r), compute(r), 3 steps (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    HOLDS = 1
    RELEASED = 2
    DONE = 3


class WriteUnowned(Spec):
    """Free, then write through a stale block table."""

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
        """Free the page, but keep it in the table."""
        s.require(s.stage[r] == St.HOLDS)
        s.free("node", r, s.table[r])
        s.stage[r] = St.RELEASED

    @action
    def compute(self, s, r: Request):
        """Compute KV into the (stale) table."""
        s.require(s.stage[r] == St.RELEASED)
        s.write("node", r, s.table[r])
        s.stage[r] = St.DONE
