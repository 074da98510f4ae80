"""Violates double-free: a retry path releases pages that the first attempt already released.

Batch-engine test spec, with a boolean per-request slot and `Max`. With the fix `release-once`
the retry checks the flag first."""

from enum import IntEnum

from ownership import Max, Request, Spec, action, fix, ints, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    HOLDING = 1
    RELEASED = 2


class DoubleFreeRetry(Spec):
    requests = param(2, "requests")

    release_once = fix("a retry releases only what is still held")

    kv = pool(3)

    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)
    released = per_request(bool, False)
    tries = per_request(ints(0, 2))

    @action
    def take(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = Stage.HOLDING

    @action
    def release(self, s, r: Request):
        s.require((s.stage[r] == Stage.HOLDING) | (s.stage[r] == Stage.RELEASED))
        s.require(s.tries[r] < 2)
        if self.release_once:
            s.require(~s.released[r])
        s.free("kv", r, s.table[r])
        s.released[r] = True
        s.tries[r] = Max(s.tries[r] + 1, 1)
        s.stage[r] = Stage.RELEASED
