"""Pins: the kernel's queries (holds, owned, free_pages, reused) and take() mean what they say.

`kv` is a warm plain pool (every page starts with KV of an earlier request, r0) handed out by
the spec's own allocator (`take` of the free page the action names, from page `lowest` on);
`cold` is a plain pool of one page that is never written; `ref` is a shared pool of one page
that a request takes and computes into (`first`) or joins (`share`). The guards use holds /
owned / free_pages, and four invariants test the queries:

- `ref_queries_agree`: r holds the shared page exactly when it is in owned(ref, r), and the
  page is free exactly when nobody holds it (true in every state);
- `ref_reuse`: reused(ref) is empty: it fails at step 3, when r1 (whose KV the page holds)
  leaves and r2 still holds it; while r1 holds it too, it is not reused;
- `no_reuse`: no kv page is held by one request while holding another request's KV: it fails
  at step 4, when r2 takes the page that r1 computed into and gave back (content is never
  cleared on free); pages holding r0's KV (warm) or their holder's own do not count;
- `cold_not_reused`: a page never written is not reused (true in every state).
"""

from ownership import (
    Request,
    Spec,
    action,
    all_of,
    any_of,
    count,
    has,
    ints,
    invariant,
    page,
    param,
    pool,
)


class Queries(Spec):
    requests = param(2, "requests")
    lowest = param(0, "the first kv page that grab may take")

    kv = pool(2, warm=True)
    cold = pool(1)
    ref = pool(1, shared=True)

    @action
    def grab(self, s, r: Request, p: ints(lowest, 1)):
        """r takes free kv page p (the spec's own allocator chose it)."""
        s.require(has(s.free_pages("kv"), p))
        s.take("kv", r, page(p))

    @action
    def compute(self, s, r: Request, p: ints(lowest, 1)):
        """r computes its KV into page p, which it holds."""
        s.require(s.holds("kv", p, r))
        s.write("kv", r, page(p))

    @action
    def drop(self, s, r: Request):
        """r gives back every kv page it holds."""
        s.require(count(s.owned("kv", r)) > 0)
        s.free("kv", r, s.owned("kv", r))

    @action
    def chill(self, s, r: Request):
        """r takes the cold page (never written) while it is free."""
        s.require(count(s.free_pages("cold")) == 1)
        s.take("cold", r, page(0))

    @action
    def thaw(self, s, r: Request):
        """r gives the cold page back."""
        s.require(s.holds("cold", 0, r))
        s.free("cold", r, s.owned("cold", r))

    @action
    def first(self, s, r: Request):
        """r takes the free shared page and computes its KV into it."""
        s.require(count(s.free_pages("ref")) == 1)
        s.take("ref", r, page(0))
        s.write("ref", r, page(0))

    @action
    def join(self, s, r: Request):
        """r takes a reference to the shared page that another request holds."""
        s.require((count(s.free_pages("ref")) == 0) & ~s.holds("ref", 0, r))
        s.share("ref", r, page(0))

    @action
    def leave(self, s, r: Request):
        """r drops its reference."""
        s.require(s.holds("ref", 0, r))
        s.free("ref", r, s.owned("ref", r))

    @invariant
    def ref_queries_agree(self, s):
        rs = range(1, self.requests + 1)
        held = any_of(*(s.holds("ref", 0, r) for r in rs))
        return all_of(*(s.holds("ref", 0, r) == has(s.owned("ref", r), 0) for r in rs)) & \
            (has(s.free_pages("ref"), 0) == ~held)

    @invariant
    def ref_reuse(self, s):
        return s.reused("ref") == 0

    @invariant
    def no_reuse(self, s):
        return s.reused("kv") == 0

    @invariant
    def cold_not_reused(self, s):
        return s.reused("cold") == 0
