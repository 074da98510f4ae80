"""Violates write-unowned: a transfer lands in a page its receiver gave up, now another's.

Batch-engine test spec: send/land across two pools. The receiver times out and frees its page
before the sender started; the sender still believes in the old destination (its copy of the
block table), a second request takes the page, and the RDMA write lands in it. With the fix
`timeout-notifies-sender` the timeout withdraws the sender's destination."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    WAITING = 1
    GAVE_UP = 2


class WriteUnownedLate(Spec):
    requests = param(2, "requests")

    timeout_notifies_sender = fix("the receiver's timeout withdraws the sender's destination")

    src = pool(2)
    dst = pool(1)

    stage = per_request(Stage, Stage.NEW)
    src_pages = per_request(src)
    target = per_request(dst)     # the sender's copy of the destination: a belief
    sent = per_request(bool, False)

    @action
    def reserve(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.target[r] = s.alloc("dst", r, 1)
        s.src_pages[r] = s.alloc("src", r, 1)
        s.write("src", r, s.src_pages[r])
        s.stage[r] = Stage.WAITING

    @action
    def time_out(self, s, r: Request):
        s.require((s.stage[r] == Stage.WAITING) & ~s.sent[r])
        s.free("dst", r, s.owned("dst", r))
        s.target[r] = If(self.timeout_notifies_sender, 0, s.target[r])
        s.stage[r] = Stage.GAVE_UP

    @action
    def send(self, s, r: Request):
        s.require(s.target[r] != 0)
        s.send(r, "src", s.src_pages[r], "dst", s.target[r])
        s.target[r] = 0
        s.sent[r] = True

    @action
    def land(self, s, r: Request):
        s.require(s.in_flight(r))
        s.land(r)
        s.free("src", r, s.src_pages[r])
        s.src_pages[r] = 0
