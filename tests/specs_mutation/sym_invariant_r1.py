"""Pins: symmetry is refused for a spec whose invariant names r1 only.

The actions treat the requests alike; only the invariant `r1_not_first` singles out r1
("r1 never finishes while r2 has not started"). The plain search finds it violated in 2 steps.
A symmetry check that ignored the properties would accept the spec, and the reduced search
would then keep only the representative of (r1 done, r2 new), which is (r1 new, r2 done),
where the invariant holds: a wrong "verified".
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


class SymInvariantR1(Spec):
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

    @invariant
    def r1_not_first(self, s):
        return ~((s.stage[1] == Stage.DONE) & (s.stage[2] == Stage.NEW))

    @sometimes
    def a_request_finishes(self, s):
        return any_of(*(s.stage[r] == Stage.DONE for r in range(1, self.requests + 1)))

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
