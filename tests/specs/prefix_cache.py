"""A shared, keyed pool: a prefix cache whose index outlives an eviction (vLLM #4764, docs/bugs.md V9).

Requests r1 and r3 share a prompt prefix (key k1); r2 has another (k2). A miss allocates a
page and computes the prefix's KV into it; a hit takes a reference to the cached page. The
pool has one page, so r2's miss evicts the cached block and reuses its page: without the fix
the hash index still points at it, r3 hits, and reads r2's KV (stale-read of key k2). The fix
`drop-on-evict` removes a block from the index when its page is handed out again."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool, state, without


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class PrefixCache(Spec):
    requests = param(3, "requests; r2 has a different prefix from the others")
    drop_on_evict = fix("#4764: drop an evicted block from the hash index before reusing its page")

    kv = pool(1, shared=True, keys=2)
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)
    index = state(kv, 0)          # the prefix cache: the page believed to hold key k1

    def key(self, r: int) -> int:
        return 2 if r == 2 else 1

    @action
    def miss(self, s, r: Request):
        """BlockPool.get_new_blocks (evicting a cached block), then the forward computes it."""
        s.require(s.stage[r] == Stage.NEW)
        pages = s.alloc("kv", r, 1)
        if self.drop_on_evict:
            s.index = without(s.index, pages)     # _maybe_evict_cached_block
        s.write("kv", r, pages, key=self.key(r))
        if self.key(r) == 1:
            s.index = pages                       # cache_full_blocks
        s.table[r] = pages
        s.stage[r] = Stage.RUNNING

    @action
    def hit(self, s, r: Request):
        """KVCacheManager.get_computed_blocks -> BlockPool.touch: a prefix-cache hit."""
        s.require((s.stage[r] == Stage.NEW) & (s.index != 0) & (self.key(r) == 1))
        s.share("kv", r, s.index)
        s.table[r] = s.index
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        """Attention over the prompt's blocks, then KVCacheManager.free."""
        s.require(s.stage[r] == Stage.RUNNING)
        s.read("kv", r, s.table[r], key=self.key(r))
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
