"""Violates leak: an aborted request leaves both nodes and still owns a page.

Batch-engine test spec with two pools and `finished`. With the fix `free-on-abort` the abort
returns the page."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2
    ABORTED = 3


class LeakAbort(Spec):
    requests = param(2, "requests")

    free_on_abort = fix("the abort path frees the request's pages")

    kv = pool(3)
    host = pool(1)

    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.write("kv", r, s.table[r])
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.read("kv", r, s.table[r])
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE

    @action
    def abort(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.free("kv", r, If(self.free_on_abort, s.table[r], 0))
        s.table[r] = If(self.free_on_abort, 0, s.table[r])
        s.stage[r] = Stage.ABORTED

    def finished(self, s, r):
        return (s.stage[r] == Stage.DONE) | (s.stage[r] == Stage.ABORTED)
