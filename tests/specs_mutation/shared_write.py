"""Pins: a write into a page of a shared pool that two requests hold is write-unowned.

A shared pool (a prefix cache) lets several requests hold one page; a write must not reach the
other holders, so it needs the writer to be the page's *only* holder, not merely one of them
(kernel._exclusive, not kernel._holds). Here r1 computes a prefix into a cached page, r2 hits
the cache (takes a reference), and r1 writes into the page again (its decode step appends into
the last, shared block): that overwrites the KV r2 reads, a write-unowned at step 3. With the
fix `copy-on-write` r1 first gives up the shared page and writes into a page of its own.
"""

from ownership import Request, Spec, action, fix, param, per_request, pool, state


class SharedWrite(Spec):
    requests = param(2, "requests")
    copy_on_write = fix("a request appends into a fresh page instead of the shared one")

    kv = pool(2, shared=True)
    table = per_request(kv)       # the request's block table: one page
    cached = state(kv, 0)         # the prefix cache: the page holding the shared prefix

    @action
    def miss(self, s, r: Request):
        """No cached prefix: r allocates a page and computes the prefix into it."""
        s.require((s.table[r] == 0) & (s.cached == 0))
        pages = s.alloc("kv", r, 1)
        s.write("kv", r, pages)
        s.table[r] = pages
        s.cached = pages

    @action
    def hit(self, s, r: Request):
        """A prefix-cache hit: r takes a reference to the cached page."""
        s.require((s.table[r] == 0) & (s.cached != 0))
        s.share("kv", r, s.cached)
        s.table[r] = s.cached

    @action
    def append(self, s, r: Request):
        """r's decode step writes into its last block."""
        s.require(s.table[r] != 0)
        if self.copy_on_write:
            s.free("kv", r, s.table[r])
            s.table[r] = s.alloc("kv", r, 1)
        s.write("kv", r, s.table[r])
