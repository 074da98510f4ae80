"""Pins: the kernel's queries (holds, owned, free_pages, reused) and take() mean what they say.

`kv` is a warm plain pool (every page starts with KV of an earlier request, r0) handed out by
the spec's own allocator (`take` of the free page the action names); `ref` is a shared pool of one page that requests take (`take` when free) or join (`share`). The guards use
holds / owned / free_pages, and two invariants tie the queries together:

- `ref_queries_agree`: r holds the shared page exactly when it is in owned(ref, r), and the page
  is free exactly when nobody holds it (true in every state);
- `no_reuse`: no kv page is held by one request while holding another request's KV (reused).
  It fails at step 4: r1 takes page 0 and computes into it, gives it back, and r2 takes page 0,
  which still holds r1's KV (content is never cleared on free). Pages holding r0's KV (warm)
  or written by their holder do not count.
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

    kv = pool(2, warm=True)
    ref = pool(1, shared=True)

    @action
    def grab(self, s, r: Request, p: ints(0, 1)):
        """r takes free kv page p (the spec's own allocator chose it)."""
        s.require(has(s.free_pages("kv"), p))
        s.take("kv", r, page(p))

    @action
    def compute(self, s, r: Request, p: ints(0, 1)):
        """r computes its KV into page p, which it holds."""
        s.require(s.holds("kv", p, r))
        s.write("kv", r, page(p))

    @action
    def drop(self, s, r: Request):
        """r gives back every kv page it holds."""
        s.require(count(s.owned("kv", r)) > 0)
        s.free("kv", r, s.owned("kv", r))

    @action
    def first(self, s, r: Request):
        """r takes the free shared page."""
        s.require(count(s.free_pages("ref")) == 1)
        s.take("ref", r, page(0))

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
    def no_reuse(self, s):
        return s.reused("kv") == 0
