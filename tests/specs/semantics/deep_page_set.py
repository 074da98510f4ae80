"""A page set nested a thousand deep (NOTE(no-recursion) in ownership/interpret/batch.py): the
set of all 1,000 pages of a pool made one `|` a page, as the kernel's operations over a pool
chain theirs. The batch engine's graph builder recursed down the chain, into the page set's
limbs, and passed Python's recursion limit (an internal error, exit 4; sglang_pd at
decode_pool=1000 did the same). The per-state, batch, native and partitioned searches violate
`not-all` at step 1, as the concrete interpreter does (bmc and prove: a 1,000-bit vector,
slow to solve; tests/specs/semantics/deep_sum.py checks them on a deep sum)."""

from ownership import Request, Spec, action, count, invariant, page, per_request, pool


class DeepPageSet(Spec):
    requests = 1
    kv = pool(1000)
    table = per_request(kv, 0)

    @action
    def take_all(self, s, r: Request):
        s.require(s.table[r] == 0)
        pages = s.table[r]  # (a state value first: the chain is not folded to a constant)
        for i in range(1000):
            pages = pages | page(i)
        s.table[r] = pages

    @invariant
    def not_all(self, s):
        return count(s.table[1]) < 1000
