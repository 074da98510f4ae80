"""Pins: the symmetry check sees r1 singled out in exactly one part of an action, where a
check that compared that part only in part would not (one spec, `how` choosing the part).

how=0: symmetric (every request reads page 0 as itself, expecting its own key): accepted.
how=1: a read as r1 by every request: only the first kernel flag (read-unowned) names r1.
how=2: a read expecting r1's key: only the second flag (stale-read) names r1.
how=3: one guard before the only spec error and the other after it, swapped for r1: only the
       one guard before the error tells r1 apart.
how=4: `select([1, 2], s.k) != s.last`: the choices are request ids because they are compared
       with one (the slot `last`), although none of them is a slot.
how=5: `select([1, s.last], s.k) == r`: r1 is the first choice only.
how=6: `select([s.last, 1], s.k) == r`: r1 is the second choice only.
how=7: `nth(s.free_pages("kv"), r)`: the request is a position in a page set, a number.
how=8: symmetric, with `nth(s.owned("kv", r), s.n[r])`, an index that is a state value:
       accepted.
Each asymmetric variant is refused.
"""

from ownership import (
    Request,
    Spec,
    action,
    ints,
    nth,
    page,
    param,
    per_request,
    pool,
    select,
    state,
)
from ownership.lang.declare import RequestDomain


class SymOnePart(Spec):
    requests = param(2, "requests")
    how = param(0, "which part singles out r1 (0 and 8: none)")

    kv = pool(2, keys=2)
    want = per_request(ints(1, 2), 1)
    n = per_request(ints(0, 1), 0)
    k = state(ints(0, 1), 0)
    last = state(RequestDomain(none="nobody"), 0)

    @action
    def pick(self, s, r: Request):
        """A request picks the key it will read, and becomes the last one to act."""
        s.require(s.want[r] == 1)
        s.want[r] = 2
        s.last = r

    @action
    def flip(self, s):
        s.k = 1 - s.k

    @action
    def look(self, s, r: Request):
        how = self.how
        if how == 3:
            first = s.n[r] == 0
            second = s.k == 0
            s.require(first if r == 1 else second)
            share = 2 // (s.k + s.n[r])  # noqa: F841  (where both are 0)
            s.require(second if r == 1 else first)
            s.n[r] = 1
            return
        s.require(s.n[r] == 0)
        if how == 1:
            s.read("kv", 1, page(0), key=s.want[r])
        elif how == 2:
            s.read("kv", r, page(0), key=s.want[1])
        else:
            s.read("kv", r, page(0), key=s.want[r])
        if how == 4:
            s.require(select([1, 2], s.k) != s.last)
        if how == 5:
            s.require(select([1, s.last], s.k) == r)
        if how == 6:
            s.require(select([s.last, 1], s.k) == r)
        if how == 7:
            s.require(nth(s.free_pages("kv"), r) == 0)
        if how == 8:
            s.require(nth(s.owned("kv", r), s.n[r]) < 1)
        s.n[r] = 1
