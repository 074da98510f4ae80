"""Pins: symmetry is refused for a spec whose invariant can raise a spec error for r1 only.

The invariant `balanced` divides by 1 + (r2's pages) - (r1's pages), so it raises a division
by zero where r1 holds a page and r2 does not: at step 1 of the plain search (r1 started). Its
condition reads no state (True), the same for every request: only the spec errors that the
properties can raise tell the requests apart. Accepted, the reduced search would keep
(r1 new, r2 running) instead and find the error two steps later. With `other_error` the
invariant can raise a second error, the same for every request, before (1) or after (2) it:
the check must compare every error, not only the first or the last.
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


class SymPropertyErrorR1(Spec):
    requests = param(2, "requests")
    other_error = param(0, "1: a symmetric spec error before r1's, 2: after it")

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
    def balanced(self, s):
        total = 3 + count(s.table[1]) + count(s.table[2])  # (never 0: an error the same for all)
        if self.other_error == 1:
            share = 2 // total  # noqa: F841
        share = 2 // (1 + count(s.table[2]) - count(s.table[1]))  # noqa: F841
        if self.other_error == 2:
            share = 2 // total  # noqa: F841
        return True

    @sometimes
    def a_request_finishes(self, s):
        return any_of(*(s.stage[r] == Stage.DONE for r in range(1, self.requests + 1)))

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
