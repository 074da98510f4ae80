"""Pins: the symmetry check compares every part of an action: its writes, its kernel flags, its
spec errors and the guards before each error (one spec, `how` choosing the part).

how=0: symmetric; only r1's `finish` also writes `seen[1] = seen[1]`, which changes nothing
       (an unchanged slot is no write): accepted.
how=1: every request's `finish` also marks r1 done (a write of r1's slot only): refused.
how=2: `finish` copies r1's `done` into r's `seen` (a copy of another request's slot): refused.
how=3: `finish` reads r's page as r1 for every request (only the kernel's flags name r1): refused.
how=4: `finish` can raise two spec errors, the second for r1 only: refused.
how=5: r1 checks two guards before the spec error of `finish`, the others one: refused.
how=6: r1 checks one guard before the spec error and the other after it, the others the other
       way round (the same guards, so only the guards before the error differ): refused.
how=7: a guard sums r1's page count with r's (r1 inside a sum): refused.
how=8: a guard compares r's page count with r1's, r1 on the right: refused.
"""

from enum import IntEnum

from ownership import Request, Spec, action, count, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class SymParts(Spec):
    requests = param(2, "requests")
    how = param(0, "which part of `finish` singles out r1 (0: none)")

    kv = pool(2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)
    done = per_request(bool, False)
    seen = per_request(bool, False)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.write("kv", r, s.table[r])
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        how = self.how
        running = s.stage[r] == Stage.RUNNING
        mine = s.table[r] != 0
        if how == 5:  # r1: two guards before the error; the others: one
            s.require(running)
            if r == 1:
                s.require(mine)
            share = 2 // count(s.table[r])  # noqa: F841  (where r holds no page)
            if r != 1:
                s.require(mine)
        elif how == 6:  # the same two guards, the other one before the error for r1
            s.require(running if r == 1 else mine)
            share = 2 // count(s.table[r])  # noqa: F841
            s.require(mine if r == 1 else running)
        else:
            s.require(running)
        if how == 4:
            share = 2 // (2 - count(s.table[r]))  # noqa: F841  (never: r holds at most 1 page)
            share = 2 // (1 + count(s.table[2]) - count(s.table[1]))  # noqa: F841
        if how == 3:
            s.read("kv", 1, s.table[r])
        else:
            s.read("kv", r, s.table[r])
        if how == 7:
            s.require(count(s.table[1]) + count(s.table[r]) <= 2)
        if how == 8:
            s.require(count(s.table[r]) >= count(s.table[1]) - 1)
        if how == 0 and r == 1:
            s.seen[1] = s.seen[1]
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE
        s.done[r] = True
        if how == 1:
            s.done[1] = True
        if how == 2:
            s.seen[r] = s.done[1]
