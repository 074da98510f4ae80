"""Pins: symmetry is refused for a spec whose @sometimes names r1 only.

`r1_finishes_first` (r1 done while r2 is new) is reached by the plain search; a symmetry check
that compared the invariants but not the @sometimes properties would accept the spec, and the
reduced search keeps (r1 new, r2 done) instead, so the @sometimes would be reported as never
reached.
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


class SymSometimesR1(Spec):
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
    def r1_finishes_first(self, s):
        return (s.stage[1] == Stage.DONE) & (s.stage[2] == Stage.NEW)

    @sometimes
    def a_request_finishes(self, s):
        return any_of(*(s.stage[r] == Stage.DONE for r in range(1, self.requests + 1)))

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
