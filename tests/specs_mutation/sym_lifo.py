"""Pins: a spec with a LIFO pool (its free list holds page numbers, not request ids) whose
requests are interchangeable is accepted, and the reduced search stands for every state.

The same spec as sym_symmetric.py with `kv = pool(2, order="lifo")`: the free list is read with
`select(old, i, size)`, whose default, the page number `size`, must not be relabelled like a
request id (it is 2, a request id too, at 2 requests).
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


class SymLifo(Spec):
    requests = param(2, "requests")

    kv = pool(2, order="lifo")
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
        return s.stage[r] == Stage.DONE
