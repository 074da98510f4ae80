"""Violates stale-read: a request attends over a page that no one wrote for it.

With the fix `write-first`, the request computes its KV before reading it."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    ALLOCATED = 1
    WRITTEN = 2
    DONE = 3


class StaleRead(Spec):
    requests = param(1, "requests")
    pages = param(2, "pages in the pool")
    write_first = fix("the request writes its page before reading it")

    kv = pool(pages)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def allocate(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = Stage.ALLOCATED

    @action
    def compute(self, s, r: Request):
        s.require((s.stage[r] == Stage.ALLOCATED) & self.write_first)
        s.write("kv", r, s.table[r])
        s.stage[r] = Stage.WRITTEN

    @action
    def attend(self, s, r: Request):
        ready = Stage.WRITTEN if self.write_first else Stage.ALLOCATED
        s.require(s.stage[r] == ready)
        s.read("kv", r, s.table[r])
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE
