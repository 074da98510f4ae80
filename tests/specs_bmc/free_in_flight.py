"""Seeded bug (free-in-flight): the receiver frees its pages while the transfer into them is
still in flight (a release on timeout; the transfer engine cannot cancel the write).

Shortest counterexample: reserve(r), send(r), give_up(r), 3 steps (tests/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class St(IntEnum):
    NEW = 0
    RESERVED = 1
    SENDING = 2
    LANDED = 3
    GAVE_UP = 4


class FreeInFlight(Spec):
    """A transfer from `src` into `dst`; the receiver may give up early."""

    pages = param(2, "pages in each pool", minimum=1)
    src = pool(pages)
    dst = pool(pages)

    stage = per_request(St, St.NEW)
    src_table = per_request(src)
    dst_table = per_request(dst)

    @action
    def reserve(self, s, r: Request):
        """Both sides take a page; the sender computes KV into its own."""
        s.require(s.stage[r] == St.NEW)
        a = s.alloc("src", r, 1)
        s.write("src", r, a)
        s.src_table[r] = a
        s.dst_table[r] = s.alloc("dst", r, 1)
        s.stage[r] = St.RESERVED

    @action
    def send(self, s, r: Request):
        """Start the RDMA write."""
        s.require(s.stage[r] == St.RESERVED)
        s.send(r, "src", s.src_table[r], "dst", s.dst_table[r])
        s.stage[r] = St.SENDING

    @action
    def land(self, s, r: Request):
        """The write lands."""
        s.require(s.stage[r] == St.SENDING)
        s.land(r)
        s.stage[r] = St.LANDED

    @action
    def give_up(self, s, r: Request):
        """The receiver times out and frees its page: the write is still in flight."""
        s.require(s.stage[r] == St.SENDING)
        s.free("dst", r, s.dst_table[r])
        s.dst_table[r] = 0
        s.stage[r] = St.GAVE_UP
