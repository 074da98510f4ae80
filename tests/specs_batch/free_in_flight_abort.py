"""Violates free-in-flight: the sender frees its source pages while its RDMA read is in flight.

Batch-engine test spec, with a scalar slot counting aborts (a `state`) and `without`. With the
fix `free-after-landing` the sender frees only after the transfer landed."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, ints, param, per_request, pool, state, without


class Stage(IntEnum):
    NEW = 0
    READY = 1
    SENDING = 2
    ABORTED = 3
    DONE = 4


class FreeInFlightAbort(Spec):
    requests = param(2, "requests")

    free_after_landing = fix("an abort waits for the transfer to land before freeing")

    src = pool(2)
    dst = pool(2)

    stage = per_request(Stage, Stage.NEW)
    pages = per_request(src)
    aborts = state(ints(0, 2), 0)

    @action
    def prepare(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.pages[r] = s.alloc("src", r, 1)
        s.write("src", r, s.pages[r])
        s.stage[r] = Stage.READY

    @action
    def send(self, s, r: Request):
        s.require(s.stage[r] == Stage.READY)
        got = s.alloc("dst", r, 1)
        s.send(r, "src", s.pages[r], "dst", got)
        s.stage[r] = Stage.SENDING

    @action
    def abort(self, s, r: Request):
        s.require(s.stage[r] == Stage.SENDING)
        if self.free_after_landing:
            s.require(~s.in_flight(r))
        s.free("src", r, s.pages[r])
        s.pages[r] = without(s.pages[r], s.pages[r])
        s.aborts = s.aborts + 1
        s.stage[r] = Stage.ABORTED

    @action
    def land(self, s, r: Request):
        s.require(s.in_flight(r))
        s.land(r)
