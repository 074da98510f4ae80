"""Violates leak: an aborted request finishes without returning its pages.

With the fix `free-on-abort`, the abort path frees them."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    ABORTED = 2
    DONE = 3


class Leak(Spec):
    requests = param(1, "requests")
    free_on_abort = fix("the abort path releases the request's pages")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
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
