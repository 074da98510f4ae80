"""Violates read-unowned: a block table keeps a page after the request released it.

Batch-engine test spec: a per-request page set (a belief) and `count`/`first` on it. With the
fix `forget-on-release` the table is cleared when the pages are released."""

from enum import IntEnum

from ownership import Request, Spec, action, count, first, fix, ints, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    HOLDING = 1
    RELEASED = 2
    DONE = 3


class ReadUnownedTable(Spec):
    requests = param(2, "requests")
    pages = param(4, "pool size")

    forget_on_release = fix("the block table is cleared when the pages are released")

    kv = pool(pages)
    Want = ints(1, 2)

    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)
    held = per_request(ints(0, 2))

    @action
    def take(self, s, r: Request, n: Want):
        s.require(s.stage[r] == Stage.NEW)
        got = s.alloc("kv", r, n)
        s.write("kv", r, got)
        s.table[r] = got
        s.held[r] = count(got)
        s.stage[r] = Stage.HOLDING

    @action
    def release(self, s, r: Request):
        s.require(s.stage[r] == Stage.HOLDING)
        s.free("kv", r, s.table[r])
        if self.forget_on_release:
            s.table[r] = 0
        s.stage[r] = Stage.RELEASED

    @action
    def attend(self, s, r: Request):
        s.require(s.stage[r] == Stage.RELEASED)
        s.read("kv", r, first(s.table[r], s.held[r]))
        s.stage[r] = Stage.DONE
