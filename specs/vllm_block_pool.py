"""vLLM v1 block pool with prefix caching: reference counts, the free queue, eviction.

Models vllm 0.33.0 (vllm/v1/core/block_pool.py, kv_cache_manager.py,
single_type_kv_cache_manager.py; docs/protocols/vllm.md section 1; docs/specs/vllm_block_pool.md).

Each request's prompt is one full block of a shared prefix (a prefix class, hashed and cached)
followed by one block of its own (never full, so never cached). A prefix-cache hit takes a
reference to the cached block instead of computing it. Blocks with ref_cnt 0 wait in the free
queue, uncached ones at the front (reused first) and cached ones at the back (LRU), where a
later hit can revive them; `get_new_blocks` pops from the front and evicts a cached block by
dropping its hash from the index.

The bug it reproduces (V9 in docs/bugs.md; vLLM #4764, block manager v2): an evicted block
stayed in the hash index, so a later prefix hit handed out a block that another request had
just reused: two holders, and the hit reads the other prompt's KV. Fix `evict-drops-hash`.

Abstractions (docs/specs/vllm_block_pool.md): one prefix block and one own block per request;
block 0 (vLLM's null block) is not modelled; one KV cache group; the scheduler's token budget
and preemption are left out (a request waits while the free queue is short).
"""

from enum import IntEnum

from ownership import (
    If,
    Request,
    Spec,
    action,
    array,
    fix,
    has,
    ints,
    invariant,
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
    RUNNING = 1
    DONE = 2


class VLLMBlockPool(Spec):
    """vLLM v1 BlockPool with prefix caching: a hash index that must forget evicted blocks."""

    requests = param(3, "requests", minimum=1)
    blocks = param(2, "KV blocks in the pool (the null block aside)", minimum=2)
    prefixes = param(2, "distinct prompt prefixes (block hashes)", minimum=1)

    evict_drops_hash = fix("#4764: evicting a cached block drops it from the hash index (_maybe_evict_cached_block)")

    # Keys 1..prefixes are the prefixes' block hashes; prefixes + r is request r's own block.
    kv = pool(blocks, shared=True, keys=prefixes + requests, help="GPU KV blocks; a hit shares one")

    Prefix = ints(1, prefixes)

    stage = per_request(Stage, Stage.NEW)
    prefix = per_request(ints(0, prefixes), 0)        # the request's prefix class
    cached_part = per_request(kv)                     # its prefix block (shared on a hit)
    own_part = per_request(kv)                        # its own block
    hit = per_request(bool, False)                    # it got its prefix from the cache
    ref = per_page(kv, ints(0, requests), 0)          # KVCacheBlock.ref_cnt: a belief
    block_hash = per_page(kv, ints(0, prefixes), 0)   # KVCacheBlock.block_hash (0: none)
    index = array(ints(1, prefixes), ints(0, blocks), 0)  # cached_block_hash_to_block: block + 1
    free_queue = per_page(kv, ints(0, blocks), init=lambda i: i)  # FreeKVCacheBlockQueue, front first; `blocks` ends it
    evicted = state(bool, False)                      # a cached block was evicted (for `sometimes`)

    @action(actor="scheduler")
    def schedule(self, s, r: Request, c: Prefix):
        """Scheduler.schedule -> KVCacheManager.get_computed_blocks (a prefix-cache hit:
        BlockPool.touch) and allocate_slots (BlockPool.get_new_blocks for the rest), then the
        forward computes the new blocks and cache_full_blocks hashes the full one."""
        n = self.blocks
        s.require(s.stage[r] == Stage.NEW)
        queue = list(s.free_queue)
        cached = s.index[c]                                   # block + 1, or 0
        hit = cached != 0
        hit_block = cached - 1
        # touch: a cached block with ref_cnt 0 leaves the free queue
        revive = hit & (select(list(s.ref), hit_block, 0) == 0)
        pos = 0
        for i in range(n):
            pos = pos + If(queue[i] == hit_block, i, 0)
        after_touch = [If(revive & (i >= pos), select(queue, i + 1, n), queue[i]) for i in range(n)]
        length = 0
        for i in range(n):
            length = length + (after_touch[i] != n)
        need = If(hit, 1, 2)
        s.require(length >= need)
        # get_new_blocks: pop `need` blocks from the front
        first_new = after_touch[0]
        second_new = after_touch[1]
        prefix_block = If(hit, hit_block, first_new)
        own_block = If(hit, first_new, second_new)
        new_pages = page(first_new) | If(hit, 0, page(second_new))
        for i in range(n):
            s.free_queue[i] = select(after_touch, i + need, n)
        # _maybe_evict_cached_block for each popped block
        for b in range(n):
            popped = has(new_pages, b)
            was_cached = popped & (s.block_hash[b] != 0)
            s.evicted = s.evicted | was_cached
            if self.evict_drops_hash:
                for k in range(1, self.prefixes + 1):
                    s.index[k] = If(was_cached & (s.block_hash[b] == k) & (s.index[k] == b + 1), 0, s.index[k])
            s.block_hash[b] = If(popped, 0, s.block_hash[b])
            s.ref[b] = If(popped, 1, If(hit & (b == hit_block), s.ref[b] + 1, s.ref[b]))
        # the kernel: who holds which block now
        s.share("kv", r, If(hit, page(hit_block), 0))
        s.take("kv", r, new_pages)
        # the forward: compute the prefix block on a miss, and the own block; cache_full_blocks
        s.write("kv", r, If(hit, 0, page(prefix_block)), key=c)
        s.write("kv", r, page(own_block), key=self.prefixes + r)
        for b in range(n):
            fresh = ~hit & (prefix_block == b)
            s.block_hash[b] = If(fresh, c, s.block_hash[b])
        s.index[c] = If(hit, s.index[c], prefix_block + 1)
        s.prefix[r] = c
        s.cached_part[r] = page(prefix_block)
        s.own_part[r] = page(own_block)
        s.hit[r] = hit
        s.stage[r] = Stage.RUNNING

    @action(actor="scheduler")
    def finish(self, s, r: Request):
        """The request finishes: attention over its blocks, then KVCacheManager.free ->
        BlockPool.free_blocks in reverse order: the own block first (uncached: prepended to
        the free queue), then the prefix block (cached: appended, evicted last)."""
        n = self.blocks
        s.require(s.stage[r] == Stage.RUNNING)
        s.read("kv", r, s.cached_part[r], key=s.prefix[r])
        s.read("kv", r, s.own_part[r], key=self.prefixes + r)
        for part in (s.own_part[r], s.cached_part[r]):        # reverse order
            queue = list(s.free_queue)
            for b in range(n):
                mine = has(part, b)
                last = mine & (s.ref[b] == 1)
                s.ref[b] = If(mine, s.ref[b] - 1, s.ref[b])
                length = 0
                for i in range(n):
                    length = length + (queue[i] != n)
                cached = s.block_hash[b] != 0
                for i in range(n):
                    prepend = If(i == 0, b, select(queue, i - 1, n))
                    append = If(i == length, b, queue[i])
                    s.free_queue[i] = If(last, If(cached, append, prepend), s.free_queue[i])
            s.free("kv", r, part)
        s.stage[r] = Stage.DONE

    def describe(self, s, step):
        """Each step of a trace in the protocol's words: `ownership check` prints it beside the step."""
        r, c, b = step.args.get("r"), step.args.get("c"), step.before
        if step.action is None:
            return f"{self.blocks} KV blocks, all free; prompts of {self.prefixes} prefixes"
        if step.action == "schedule":
            mine, prefix = s.own_part[r], s.cached_part[r]
            new = mine if s.hit[r] else mine | prefix
            told = (f"prefix {c} hits block {min(prefix)}; {r} takes block {min(mine)}" if s.hit[r]
                    else f"prefix {c} misses: {r} takes blocks {_blocks(new)} and hashes block {min(prefix)} as prefix {c}")
            evicted = sorted(x for x in new if b.block_hash[x] != 0)
            for x in evicted:
                told += f"; evicts block {x} (cached prefix {b.block_hash[x]})"
                stale = [k for k, entry in s.index.items() if entry == x + 1 and s.block_hash[x] != k]
                told += "".join(f", the hash index still maps prefix {k} to it" for k in stale)
            return told
        if step.action == "finish":
            return (f"{r} finishes: reads blocks {_blocks(b.cached_part[r] | b.own_part[r])}, frees its own block"
                    f" {min(b.own_part[r])} first, then prefix block {min(b.cached_part[r])} (kept cached)")
        return None

    def finished(self, s, r):
        """A finished request must hold no block (leak)."""
        return s.stage[r] == Stage.DONE

    @invariant
    def free_queue_holds_exactly_the_unreferenced_blocks(self, s):
        """A block is in the free queue if and only if its ref_cnt is 0 (once in the queue)."""
        n = self.blocks
        ok = True
        queue = list(s.free_queue)
        for b in range(n):
            inside = 0
            for i in range(n):
                inside = inside + (queue[i] == b)
            ok = ok & (inside == If(s.ref[b] == 0, 1, 0))
        return ok

    @invariant
    def hash_index_points_at_blocks_with_that_hash(self, s):
        """cached_block_hash_to_block[h] is a block whose block_hash is h (V9: an evicted block
        stayed indexed)."""
        ok = True
        for k in range(1, self.prefixes + 1):
            entry = s.index[k]
            ok = ok & ((entry == 0) | (select(list(s.block_hash), entry - 1, 0) == k))
        return ok

    @sometimes
    def a_prefix_hit(self, s):
        """Some request takes its prefix from the cache."""
        any_hit = False
        for r in range(1, self.requests + 1):
            any_hit = any_hit | s.hit[r]
        return any_hit

    @sometimes
    def an_eviction(self, s):
        """A cached block is evicted to make room."""
        return s.evicted

    @sometimes
    def every_request_completes(self, s):
        """All requests finish."""
        done = True
        for r in range(1, self.requests + 1):
            done = done & (s.stage[r] == Stage.DONE)
        return done


def _blocks(pages):
    """A set of blocks in a narrative: {0, 1}."""
    return "{" + ", ".join(str(x) for x in sorted(pages)) + "}"
