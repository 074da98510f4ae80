"""Owners that are not requests, and pins beside references (issue 13, item 6), modelled on
SGLang's radix cache (`mem_cache/radix_cache.py`): when a request finishes, its pages go to
the tree (`cache_finished_req`: the tree's own reference, owner "cache"); a later request
that matches the prefix pins the tree's pages (`inc_lock_ref`) and attends over them, then
unpins (`dec_lock_ref`); `evict` frees the tree's pages under memory pressure.

`evict` that does not look at the locks frees a page while r2 still has it pinned
(free-pinned at step 3): the pool may hand it to another request before r2 attends. The
fix `evict-only-unlocked` evicts only pages nobody pins, as `evict` does (leaves with
`lock_ref == 0`). Abstracted: the tree's shape (one node), token positions, the allocator
behind `free_segment`."""

from ownership import Spec, action, fix, ints, per_request, pool

NEW, CACHED, MATCHED, DONE = 0, 1, 2, 3


class EvictPinned(Spec):
    requests = 2
    evict_only_unlocked = fix("evict only pages that no request has pinned (lock_ref == 0)")

    kv = pool(1, keys=1, owners=("cache",), pins=True, help="KV pages of prefix k1; the radix tree holds a reference")
    stage = per_request(ints(0, 3), NEW)

    @action
    def first_request_finishes(self, s):
        """r1 computes the prefix and finishes; cache_finished_req hands its page to the tree."""
        s.require(s.stage[1] == NEW)
        pages = s.alloc("kv", 1, 1)
        s.write("kv", 1, pages, key=1)
        s.share("kv", "cache", pages)
        s.free("kv", 1, pages)
        s.stage[1] = CACHED

    @action
    def match_prefix(self, s):
        """r2 matches the cached prefix: inc_lock_ref pins the tree's page for it."""
        s.require((s.stage[1] == CACHED) & (s.stage[2] == NEW))
        s.pin("kv", 2, s.owned("kv", "cache"))
        s.stage[2] = MATCHED

    @action
    def evict(self, s):
        """The tree drops its reference to its pages (free_segment)."""
        cached = s.owned("kv", "cache")
        s.require(cached != 0)
        if self.evict_only_unlocked:
            s.require((cached & s.pinned_pages("kv")) == 0)
        s.free("kv", "cache", cached)

    @action
    def next_turn_allocates(self, s):
        """r1's next turn allocates a page: whichever is free (an evicted one, too)."""
        s.require(s.stage[1] == CACHED)
        s.alloc("kv", 1, 1)
        s.stage[1] = DONE

    @action
    def attend_and_unlock(self, s):
        """r2 attends over the prefix it pinned, then dec_lock_ref."""
        s.require(s.stage[2] == MATCHED)
        pages = s.pinned_pages("kv", 2)
        s.read("kv", 2, pages, key=1)
        s.unpin("kv", 2, pages)
        s.stage[2] = DONE
