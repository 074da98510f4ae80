"""Pins: symmetry is refused for a spec whose `finished` (the leak property) singles out r1.

r1 counts as finished already while running (a slip: `>=` RUNNING for r1, DONE for the
others), so a running r1 that holds its page is a leak, at step 1 of the plain search; the
actions, the invariant and the @sometimes treat the requests alike.
"""

from enum import IntEnum

from ownership import (
    Request,
    Spec,
    action,
    all_of,
    any_of,
    count,
    invariant,
    param,
    per_request,
    pool,
    sometimes,
)


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class SymLeakR1(Spec):
    requests = param(2, "requests")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
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

    @invariant
    def one_page_each(self, s):
        return all_of(*(count(s.table[r]) <= 1 for r in range(1, self.requests + 1)))

    @sometimes
    def a_request_finishes(self, s):
        return any_of(*(s.stage[r] == Stage.DONE for r in range(1, self.requests + 1)))

    def finished(self, s, r):
        if r == 1:
            return s.stage[r] >= Stage.RUNNING
        return s.stage[r] == Stage.DONE
