"""Violates double-free: a grammar error releases a request's pages, and the transfer's
terminal cleanup releases them again (docs/bugs.md C9, #30937).

With the fix `release-once`, the error path leaves the release to the terminal cleanup."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    SENDING = 1
    ERRORED = 2
    DONE = 3


class DoubleFree(Spec):
    requests = param(1, "requests")
    release_once = fix("#30937: defer the release to the transfer's terminal state")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def prefill(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        pages = s.alloc("kv", r, 1)
        s.write("kv", r, pages)
        s.table[r] = pages
        s.stage[r] = Stage.SENDING

    @action
    def grammar_error(self, s, r: Request):
        s.require(s.stage[r] == Stage.SENDING)
        if not self.release_once:
            s.free("kv", r, s.table[r])
        s.stage[r] = Stage.ERRORED

    @action
    def terminal_cleanup(self, s, r: Request):
        s.require(s.stage[r] == Stage.ERRORED)
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE
