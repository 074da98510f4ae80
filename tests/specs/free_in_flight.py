"""Violates free-in-flight: a receiver frees a page while a transfer into it is in flight
(docs/bugs.md C3/V1: abort during an RDMA write or NIXL READ).

With the fix `hold-until-landed`, the receiver keeps the page until the write has landed."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RECEIVING = 1
    DONE = 2


class FreeInFlight(Spec):
    requests = param(1, "requests")
    hold_until_landed = fix("an aborted receiver keeps its pages until the write landed")

    src = pool(1)
    dst = pool(1)
    stage = per_request(Stage, Stage.NEW)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        into = s.alloc("dst", r, 1)
        out = s.alloc("src", r, 1)
        s.write("src", r, out)
        s.send(r, "src", out, "dst", into)
        s.stage[r] = Stage.RECEIVING

    @action
    def land(self, s, r: Request):
        s.require(s.in_flight(r))
        s.land(r)
        s.free("src", r, s.owned("src", r))

    @action
    def abort(self, s, r: Request):
        s.require(s.stage[r] == Stage.RECEIVING)
        if self.hold_until_landed:
            s.require(~s.in_flight(r))
        s.free("dst", r, s.owned("dst", r))
        s.stage[r] = Stage.DONE
