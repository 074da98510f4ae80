"""Violates stale-read on a warm LIFO pool: a request attends over pages before its KV lands.

Batch-engine test spec. The transfer is sent into the reserved pages and may land after the
decode side already reads them; a freed page is handed out again first (LIFO), still holding
the last tenant's KV. With the fix `wait-for-landing` the read waits for the transfer."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool, sometimes


class Stage(IntEnum):
    NEW = 0
    RESERVED = 1
    SENT = 2
    LANDED = 3
    DONE = 4


class StaleReadLifo(Spec):
    requests = param(2, "requests")
    pages = param(3, "pool size")

    wait_for_landing = fix("the reader waits until the transfer has landed")

    src = pool(pages, help="the sender's pages")
    dst = pool(pages, order="lifo", warm=True, help="the reader's pages")

    stage = per_request(Stage, Stage.NEW)
    src_pages = per_request(src)
    dst_pages = per_request(dst)

    @action
    def reserve(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.src_pages[r] = s.alloc("src", r, 1)
        s.write("src", r, s.src_pages[r])
        s.dst_pages[r] = s.alloc("dst", r, 1)
        s.stage[r] = Stage.RESERVED

    @action
    def send(self, s, r: Request):
        s.require(s.stage[r] == Stage.RESERVED)
        s.send(r, "src", s.src_pages[r], "dst", s.dst_pages[r])
        s.stage[r] = Stage.SENT

    @action
    def land(self, s, r: Request):
        s.require(s.stage[r] == Stage.SENT)
        s.land(r)
        s.free("src", r, s.src_pages[r])
        s.src_pages[r] = 0
        s.stage[r] = Stage.LANDED

    @action
    def read_and_finish(self, s, r: Request):
        if self.wait_for_landing:
            s.require(s.stage[r] == Stage.LANDED)
        else:
            s.require((s.stage[r] == Stage.SENT) | (s.stage[r] == Stage.LANDED))
        s.read("dst", r, If(s.stage[r] == Stage.LANDED, s.dst_pages[r], s.dst_pages[r]))
        s.free("dst", r, s.dst_pages[r])
        s.dst_pages[r] = 0
        s.stage[r] = If(s.stage[r] == Stage.LANDED, Stage.DONE, Stage.DONE)

    @sometimes
    def a_request_finishes(self, s):
        """Some request is done."""
        done = False
        for r in range(1, self.requests + 1):
            done = done | (s.stage[r] == Stage.DONE)
        return done
