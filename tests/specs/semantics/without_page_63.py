"""The complement of page(63) (NOTE(int64-exact)): -(2**63) - 1 does not fit int64, and the
batch engine's generated code overflowed on it (an internal error). The value now makes the
batch engine step aside for the per-state engine."""

from ownership import (
    Request,
    Spec,
    action,
    count,
    invariant,
    page,
    param,
    per_request,
    pool,
    without,
)


class WithoutPage63(Spec):
    requests = param(1, "requests")
    kv = pool(64)
    table = per_request(kv, 0)

    @action
    def take(self, s, r: Request):
        s.require(s.table[r] == 0)
        s.table[r] = without(s.alloc("kv", r, 2), page(63))

    @invariant
    def at_most_one(self, s):
        """The table holds at most one page (it holds two after one step)."""
        return count(s.table[1]) <= 1
