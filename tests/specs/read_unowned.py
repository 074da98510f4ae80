"""Violates read-unowned: a request frees its page but keeps it in its table and reads it.

With the fix `forget-on-free`, the table is cleared when the page is freed."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    HOLDING = 1
    RELEASED = 2
    DONE = 3


class ReadUnowned(Spec):
    requests = param(1, "requests")
    forget_on_free = fix("the block table is cleared when its pages are freed")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def allocate(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        pages = s.alloc("kv", r, 1)
        s.write("kv", r, pages)
        s.table[r] = pages
        s.stage[r] = Stage.HOLDING

    @action
    def release(self, s, r: Request):
        s.require(s.stage[r] == Stage.HOLDING)
        s.free("kv", r, s.table[r])
        if self.forget_on_free:
            s.table[r] = 0
        s.stage[r] = Stage.RELEASED

    @action
    def attend(self, s, r: Request):
        s.require(s.stage[r] == Stage.RELEASED)
        s.read("kv", r, s.table[r])
        s.stage[r] = Stage.DONE
