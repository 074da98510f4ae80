"""A spec invariant over arithmetic, a per-page slot, a scalar and page-set primitives.

Batch-engine test spec. Requests take pages from a lowest-order pool and mark them in a
per-page `pinned` flag; a scalar `budget` counts pages handed out. The invariant says the
budget matches the pool's owned pages; the bug (`double_count` off) counts a retake twice.
It also exercises `nth`, `select` with a state index, `has`, `page`, `Min`, `%` and `//`."""

from enum import IntEnum

from ownership import (
    If,
    Min,
    Request,
    Spec,
    action,
    count,
    fix,
    has,
    ints,
    invariant,
    nth,
    page,
    param,
    per_page,
    per_request,
    pool,
    select,
    sometimes,
    state,
)


class Stage(IntEnum):
    NEW = 0
    HOLDING = 1
    DONE = 2


class InvariantBudget(Spec):
    requests = param(2, "requests")
    pages = param(3, "pool size")

    exact_budget = fix("the budget is recomputed from the pool instead of being counted")

    kv = pool(pages)

    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)
    last = per_request(ints(0, 3))            # the highest page index taken, plus one
    pinned = per_page(kv, bool, False)
    budget = state(ints(0, 4), 0)

    @action
    def take(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        got = s.alloc("kv", r, Min(2, self.pages))
        s.table[r] = got
        top = nth(got, count(got) - 1, -1)
        s.last[r] = top + 1
        for p in range(self.pages):
            s.pinned[p] = If(has(got, p), True, s.pinned[p])
        s.budget = Min(s.budget + count(got), 4)
        s.stage[r] = Stage.HOLDING

    @action
    def give_back_one(self, s, r: Request):
        s.require(s.stage[r] == Stage.HOLDING)
        s.require(s.last[r] > 0)
        p = select([0, 1, 2, 3], s.last[r] - 1, 0)
        one = page(p) & s.table[r]
        s.free("kv", r, one)
        s.table[r] = s.table[r] ^ one
        s.last[r] = (s.last[r] - 1) % 4
        for q in range(self.pages):
            s.pinned[q] = If(has(one, q), False, s.pinned[q])
        if self.exact_budget:
            s.budget = count(s.owned("kv", 1)) + (count(s.owned("kv", 2)) if self.requests > 1 else 0)
        else:
            s.budget = s.budget - count(one) // 2
        s.stage[r] = If(s.table[r] == one, Stage.DONE, Stage.HOLDING)

    @invariant
    def budget_matches_the_pool(self, s):
        """The budget counts exactly the pages owned by requests."""
        return s.budget == self.pages - count(s.free_pages("kv"))

    @sometimes
    def a_page_is_pinned(self, s):
        """Some page is pinned."""
        out = False
        for p in range(self.pages):
            out = out | s.pinned[p]
        return out
