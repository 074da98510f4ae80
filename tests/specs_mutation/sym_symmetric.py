"""Pins: a spec whose requests are interchangeable is accepted by the symmetry check, and the
reduced search stands for exactly the states of the plain one.

Every part the check compares treats the requests alike: the actions (guards, writes, kernel
flags), two invariants (one of which can raise two spec errors, the same for every request), a
@sometimes and `finished` (the leak property), all over every request.
tests/engines/test_symmetry.py pins the state counts with and without reduction at 2 and 3 requests.
Each sibling spec sym_*.py is this spec with one part that singles out a request, and must be
refused.
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


class SymSymmetric(Spec):
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
    def spread(self, s):
        total = 3 + sum(count(s.table[r]) for r in range(1, self.requests + 1))
        share = 6 // total  # noqa: F841  (two spec errors that can never happen, the same for all)
        return (6 // (total + 1)) >= 0

    @sometimes
    def a_request_finishes(self, s):
        return any_of(*(s.stage[r] == Stage.DONE for r in range(1, self.requests + 1)))

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
