"""Page-set operations on pages past 63: a pool wider than one 64-bit limb.

Batch-engine test spec (tests/engines/test_batch_wide.py, NOTE(wide-pages) in
ownership/interpret/batch.py). A request takes 66 pages (0..65, across the first limb's
end), gives back the 60 lowest (first, without, free), takes more (the lowest free ones),
remembers its highest page (nth, count) and reads it (page). The invariant reads a page set
past page 63: without the fix `small-second-grab` the second grab takes 62 pages, 0..59 and
66..67, and the highest page held passes 65, which it forbids. With `spill=1`, `overflow`
writes a page past the pool into the request's set: a spec error (outside the slot's domain)."""

from ownership import (
    If,
    Request,
    Spec,
    action,
    count,
    first,
    fix,
    has,
    ints,
    invariant,
    nth,
    page,
    param,
    per_request,
    pool,
    sometimes,
    state,
    without,
)


class WidePages(Spec):
    requests = param(1, "requests")
    pages = param(72, "pool size")
    spill = param(0, "1: the overflow action writes a page past the pool")

    small_second_grab = fix("the second grab takes 6 pages, not 62")

    kv = pool(pages, help="the pages")
    held = per_request(kv)
    top = per_request(ints(-1, 71), -1)
    spare = state(kv)

    @action
    def grab(self, s, r: Request):
        s.require(count(s.held[r]) == 0)
        s.require(s.top[r] == -1)
        s.held[r] = s.alloc("kv", r, 66)
        s.write("kv", r, s.held[r])

    @action
    def give_back(self, s, r: Request):
        s.require(count(s.held[r]) == 66)
        low = first(s.held[r], 60)
        s.free("kv", r, low)
        s.held[r] = without(s.held[r], low)
        s.spare = s.spare | If(has(low, 59), page(61), 0)

    @action
    def grow(self, s, r: Request):
        s.require(count(s.held[r]) == 6)
        more = s.alloc("kv", r, If(has(s.held[r], 65), 6 if self.small_second_grab else 62, 0))
        s.write("kv", r, more)
        s.held[r] = s.held[r] | more
        s.top[r] = nth(s.held[r], count(s.held[r]) - 1, -1)

    @action
    def read_top(self, s, r: Request):
        s.require(s.top[r] >= 0)
        s.read("kv", r, page(s.top[r]))
        s.spare = without(s.spare, page(61))

    @action
    def overflow(self, s, r: Request):
        s.require(s.top[r] >= 0)
        s.require(self.spill == 1)
        s.held[r] = s.held[r] | page(s.top[r] + 8)

    @invariant
    def nothing_past_page_65(self, s):
        return (nth(s.held[1], count(s.held[1]) - 1, -1) <= 65) & (count(s.spare) <= 1)

    @sometimes
    def page_64_is_held(self, s):
        return has(s.held[1], 64)
