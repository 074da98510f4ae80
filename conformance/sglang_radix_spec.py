"""SGLang's radix prefix cache over a real allocator: insert, match, lock, unlock, evict.

Models sglang 0.5.23 python/sglang/srt/mem_cache/radix_cache.py (docs/protocols/sglang-pd.md
section 6): a request's prompt is one page of a shared prefix (class c) and one page of its
own. `match_prefix` finds the prefix page when the tree holds it; the request allocates the
rest, `insert`s the whole prompt (the tree now references its pages) and locks its path
(`inc_lock_ref`) while it runs; `dec_lock_ref` unlocks it when it finishes; `evict` frees
the pages of every unlocked leaf, and of the prefixes left childless, through the allocator.

Ownership, in a shared pool: request r1 stands for the tree itself (it holds every page the
tree references); requests r2, r3, ... hold the pages of their prompt while they run. A page
is free when neither the tree nor a running request holds it. The allocator's free-list
order is not modelled (checked with match="renamed").
"""

from enum import IntEnum

from ownership import (
    If,
    Request,
    Spec,
    action,
    array,
    first,
    has,
    ints,
    nth,
    page,
    param,
    per_page,
    per_request,
    pool,
    sometimes,
    without,
)

TREE = 1  # request r1 is the radix tree


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class SGLangRadixCache(Spec):
    """RadixCache over PagedTokenToKVPoolAllocator: prefix hits share pages, eviction frees them."""

    requests = param(4, "r1 is the tree; r2.. are requests", minimum=2)
    pages = param(4, "pages in the pool (SGLang's padding page 0 aside)", minimum=2)
    prefixes = param(2, "distinct prompt prefixes", minimum=1)

    # content keys: 1..prefixes are the prefixes' KV, prefixes + r is request r's own page
    kv = pool(pages, shared=True, keys=prefixes + requests,
              help="the KV pool; the tree and the requests using a page hold it")

    Prefix = ints(1, prefixes)

    stage = per_request(Stage, Stage.NEW)
    prompt = per_request(kv)                              # the request's pages (prefix and own)
    own = per_request(kv)                                 # its own page
    prefix_of = per_request(ints(0, prefixes), 0)         # its prefix class
    in_tree = per_page(kv, bool, False)                   # the tree references the page
    users = per_page(kv, ints(0, requests), 0)            # running requests on the page (lock_ref)
    index = array(ints(1, prefixes), ints(0, pages), 0)   # prefix class -> its page + 1 (0: not cached)
    evicted = per_request(bool, False)                    # (for `sometimes`) an eviction freed pages

    @action
    def start(self, s, r: Request, c: Prefix):
        """match_prefix, allocate the rest, insert the prompt, inc_lock_ref on its last node."""
        if r == TREE:
            s.require(False)
        s.require(s.stage[r] == Stage.NEW)
        cached = s.index[c]
        hit = cached != 0
        new = s.alloc("kv", r, If(hit, 1, 2))
        prefix = If(hit, page(cached - 1), first(new, 1))
        own = without(new, prefix)
        s.write("kv", r, If(hit, 0, prefix), key=c)    # the forward computes the new pages
        s.write("kv", r, own, key=self.prefixes + r)
        s.share("kv", r, If(hit, prefix, 0))           # the hit: r uses the tree's prefix page
        s.share("kv", TREE, new)                       # insert: the tree references r's new pages
        mine = prefix | new
        for p in range(self.pages):
            inside = has(mine, p)
            s.in_tree[p] = s.in_tree[p] | inside
            s.users[p] = If(inside, s.users[p] + 1, s.users[p])
        s.index[c] = If(hit, cached, nth(prefix, 0, -1) + 1)
        s.prompt[r] = mine
        s.own[r] = own
        s.prefix_of[r] = c
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        """The request finishes: dec_lock_ref; its pages stay in the tree."""
        s.require(s.stage[r] == Stage.RUNNING)
        s.read("kv", r, without(s.prompt[r], s.own[r]), key=s.prefix_of[r])
        s.read("kv", r, s.own[r], key=self.prefixes + r)
        s.free("kv", r, s.prompt[r])                   # drops r's reference only
        for p in range(self.pages):
            inside = has(s.prompt[r], p)
            s.users[p] = If(inside, s.users[p] - 1, s.users[p])
        s.prompt[r] = 0
        s.stage[r] = Stage.DONE

    @action
    def evict(self, s):
        """evict(all): every unlocked leaf, then every prefix left childless and unlocked."""
        gone = 0
        for p in range(self.pages):
            gone = gone | If(s.in_tree[p] & (s.users[p] == 0), page(p), 0)
        s.require(gone != 0)
        s.free("kv", TREE, gone)
        for p in range(self.pages):
            s.in_tree[p] = s.in_tree[p] & ~has(gone, p)
        for k in range(1, self.prefixes + 1):
            entry = s.index[k]
            dropped = (entry != 0) & ((page(If(entry != 0, entry - 1, 0)) & gone) != 0)
            s.index[k] = If(dropped, 0, entry)
        s.evicted[TREE] = True

    @sometimes
    def a_prefix_hit(self, s):
        """Two requests use the same tree page at once."""
        shared = False
        for p in range(self.pages):
            shared = shared | (s.users[p] >= 2)
        return shared

    @sometimes
    def an_eviction(self, s):
        """The tree gave pages back to the allocator."""
        return s.evicted[TREE]
