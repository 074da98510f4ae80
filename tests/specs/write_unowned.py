"""Violates write-unowned: the sender writes into a page its receiver gave up and another
request took (the shape of docs/bugs.md C3, without a transfer in flight at the free).

With the fix `abort-notifies-sender`, the receiver's abort withdraws the sender's target."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RESERVED = 1
    GONE = 2


class WriteUnowned(Spec):
    requests = param(2, "requests")
    abort_notifies_sender = fix("an abort withdraws the sender's destination pages")

    kv = pool(1)
    stage = per_request(Stage, Stage.NEW)
    target = per_request(kv)      # the sender's copy of the destination pages: a belief

    @action
    def reserve(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        pages = s.alloc("kv", r, 1)
        s.target[r] = pages
        s.stage[r] = Stage.RESERVED

    @action
    def abort(self, s, r: Request):
        s.require(s.stage[r] == Stage.RESERVED)
        s.free("kv", r, s.owned("kv", r))
        s.target[r] = If(self.abort_notifies_sender, 0, s.target[r])
        s.stage[r] = Stage.GONE

    @action
    def sender_writes(self, s, r: Request):
        s.require(s.target[r] != 0)
        s.write("kv", r, s.target[r])
        s.target[r] = 0
