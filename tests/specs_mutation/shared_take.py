"""Pins: take() of a page of a shared pool that another request holds adds a holder.

The spec's own allocator (a prefix cache's free queue, say) hands r2 the page r1 computed
its prefix into; in a shared pool that makes r2 a second holder, it does not take the page
away from r1: r1 still reads its own KV there. Verified; with `writer-second` r2 writes into
the page it shares, a write-unowned at step 2 naming both holders.
"""

from ownership import Spec, action, fix, page, param, per_request, pool


class SharedTake(Spec):
    requests = param(2, "requests")
    writer_second = fix("the second holder writes into the shared page (a bug)")

    kv = pool(1, shared=True)
    done = per_request(bool, False)

    @action
    def compute(self, s):
        """r1 takes the page from the allocator and computes into it."""
        s.require(s.free_pages("kv") == page(0))
        s.take("kv", 1, page(0))
        s.write("kv", 1, page(0))

    @action
    def handed(self, s):
        """The allocator hands the page to r2 too, while r1 holds it."""
        s.require(s.holds("kv", 0, 1) & ~s.holds("kv", 0, 2))
        s.take("kv", 2, page(0))
        if self.writer_second:
            s.write("kv", 2, page(0))

    @action
    def attend(self, s):
        """r1 reads its prefix, once, while it holds the page."""
        s.require(s.holds("kv", 0, 1) & ~s.done[1])
        s.read("kv", 1, page(0))
        s.done[1] = True
