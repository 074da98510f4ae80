"""Violates free-pinned: SGLang's radix cache evicts a node whose pages a running request has
locked (`inc_lock_ref`), so the allocator can hand them out under the request.

Batch-engine test spec, with an owner that is not a request (the tree, "cache") and pins: a
finished request's pages go to the tree (`cache_finished_req`), a request that matches the
prefix pins them and attends over them. With the fix `evict-unlocked` the tree evicts only
pages nobody pins (`evict` takes leaves with `lock_ref == 0`)."""

from enum import IntEnum

from ownership import Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    LOCKED = 1
    DONE = 2


class EvictUnderLock(Spec):
    requests = param(2, "requests")

    evict_unlocked = fix("evict only pages that no request has locked")

    kv = pool(2, keys=1, owners=("cache",), pins=True, help="KV pages of prefix k1")

    stage = per_request(Stage, Stage.NEW)

    @action
    def prefill_and_cache(self, s, r: Request):
        """r computes the prefix; cache_finished_req hands its page to the tree."""
        s.require((s.stage[r] == Stage.NEW) & (s.owned("kv", "cache") == 0))
        got = s.alloc("kv", r, 1)
        s.write("kv", r, got, key=1)
        s.share("kv", "cache", got)
        s.free("kv", r, got)
        s.stage[r] = Stage.DONE

    @action
    def match_prefix(self, s, r: Request):
        """match_prefix + inc_lock_ref: r pins the tree's pages."""
        s.require((s.stage[r] == Stage.NEW) & (s.owned("kv", "cache") != 0))
        s.pin("kv", r, s.owned("kv", "cache"))
        s.stage[r] = Stage.LOCKED

    @action
    def evict(self, s):
        cached = s.owned("kv", "cache")
        s.require(cached != 0)
        if self.evict_unlocked:
            s.require((cached & s.pinned_pages("kv")) == 0)
        s.free("kv", "cache", cached)

    @action
    def attend_and_unlock(self, s, r: Request):
        """r attends over the prefix, then dec_lock_ref."""
        s.require(s.stage[r] == Stage.LOCKED)
        mine = s.pinned_pages("kv", r)
        s.read("kv", r, mine, key=1)
        s.unpin("kv", r, mine)
        s.stage[r] = Stage.DONE
