"""Pins: a leak of the last page of a pool (not the first) is found, and named.

A request allocates both pages of the pool and, when it finishes, gives back only the first
of them (the last block of its table is forgotten): a leak of kv page 1 at step 2. With
`free-all` it gives back both: verified.
"""

from enum import IntEnum

from ownership import Request, Spec, action, first, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class LeakLastPage(Spec):
    requests = param(1, "requests")
    free_all = fix("give back every page of the table")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 2)
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.free("kv", r, s.table[r] if self.free_all else first(s.table[r], 1))
        s.table[r] = 0
        s.stage[r] = Stage.DONE

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
