"""Not symmetric: request r1 is a privileged tenant that may skip the queue.

Batch-engine test spec for symmetry reduction: renaming requests changes what the spec
allows, so `--symmetry` must refuse it (and the search without it works as usual)."""

from enum import IntEnum

from ownership import Request, Spec, action, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    QUEUED = 1
    RUNNING = 2
    DONE = 3


class Asymmetric(Spec):
    requests = param(2, "requests")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def arrive(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.stage[r] = Stage.QUEUED

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.QUEUED)
        if r != 1:  # Python control flow on an action argument: allowed, and not symmetric
            s.require(s.stage[1] != Stage.QUEUED)
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
