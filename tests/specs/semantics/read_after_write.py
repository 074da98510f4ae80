"""A slot read back after it was written in the same action is the value written (issue 11, 1).

`s.ready[r] = True` then `~s.ready[r]`: False in every interpreter, so the request goes BAD and
its read of a never-written page is a stale-read (2 steps). The tracer once read back the
Python constant True, and Python's ~True is -2: the batch engine, bmc and prove said verified."""

from enum import IntEnum

from ownership import If, Request, Spec, action, page, per_request, pool


class Stage(IntEnum):
    SAFE = 0
    BAD = 1


class ReadAfterWrite(Spec):
    requests = 1
    kv = pool(1)
    ready = per_request(bool, False)
    stage = per_request(Stage, Stage.SAFE)
    done = per_request(bool, False)

    @action
    def go(self, s, r: Request):
        s.require(~s.done[r])
        s.ready[r] = True
        s.stage[r] = If(~s.ready[r], Stage.SAFE, Stage.BAD)
        s.done[r] = True

    @action
    def use(self, s, r: Request):
        s.require(s.stage[r] == Stage.BAD)
        s.read("kv", r, page(0))
        s.stage[r] = Stage.SAFE
