"""How SGLang's scheduler uses a token-to-KV-pool allocator: the spec its real allocators are tested against.

Models sglang 0.5.23 python/sglang/srt/mem_cache/allocator/{paged,token,base}.py
(docs/protocols/sglang-pd.md section 6): a new request allocates whole pages (`alloc`), a
prefill chunk extends it (`alloc_extend`), a decode step adds one token and a page when the
last one is full (`alloc_decode`), and a finished request frees its token indices (`free`),
possibly batched with another inside a free group (`free_group_begin` / `free_group_end`).

The pool hands out the most recently freed pages first: PagedTokenToKVPoolAllocator with
need_sort=False prepends freed pages (`_release_page_ids`), in ascending order (`torch.unique`),
and allocates from the head. That is the kernel's "lifo" order, so this spec predicts the
page numbers exactly; the other orders (need_sort=True: staged, then merged and sorted when an
allocation runs short; TokenToKVPoolAllocator: appended, FIFO) are checked up to a renaming of
pages (ownership.bridges.testing, match="renamed"). So are free groups, which free the union of their
pages sorted in one prepend, where the kernel frees one request after the other.

`misuse=1` adds a client bug on purpose, a second free of a request's pages (SGLang #30937:
a prefill grammar error released KV that the transfer's terminal state released again): the
kernel flags it as a double free, and the test asks whether the allocator notices.
"""

from ownership import If, Request, Spec, action, ints, param, per_request, pool, sometimes


class SGLangAllocator(Spec):
    """A client of SGLang's KV pool allocator: alloc, alloc_extend, alloc_decode, free, free groups."""

    requests = param(2, "concurrent requests", minimum=1)
    pages = param(6, "pages in the pool (SGLang's padding page 0 aside)", minimum=1)
    page_size = param(2, "tokens per page (1: TokenToKVPoolAllocator)", minimum=1)
    groups = param(0, "1: two requests may also be freed together inside a free group")
    misuse = param(0, "1: the client may free a request's pages a second time (a client bug, as #30937)")

    kv = pool(pages, order="lifo", help="the KV pool; freed pages are reused first")

    Pages = ints(1, 2)

    table = per_request(kv)                      # the request's pages (its req_to_token row)
    fill = per_request(ints(0, page_size - 1))   # tokens in its last page beyond whole pages
    last_freed = per_request(kv)                 # the pages it gave back last (for misuse)

    @action
    def alloc(self, s, r: Request, n: Pages):
        """A new request takes n whole pages: allocator.alloc(n * page_size)."""
        s.require(s.table[r] == 0)
        got = s.alloc("kv", r, n)
        s.write("kv", r, got)
        s.table[r] = got
        s.fill[r] = 0
        s.last_freed[r] = 0

    @action
    def extend(self, s, r: Request, n: Pages):
        """A prefill chunk of n whole pages for a request whose last page is full: alloc_extend."""
        s.require((s.table[r] != 0) & (s.fill[r] == 0))
        got = s.alloc("kv", r, n)
        s.write("kv", r, got)
        s.table[r] = s.table[r] | got

    @action
    def decode(self, s, r: Request):
        """One decode token: alloc_decode, which takes a new page when the last one is full."""
        s.require(s.table[r] != 0)
        got = s.alloc("kv", r, If(s.fill[r] == 0, 1, 0))
        s.write("kv", r, got)
        s.table[r] = s.table[r] | got
        s.fill[r] = If(s.fill[r] + 1 == self.page_size, 0, s.fill[r] + 1)

    @action
    def free(self, s, r: Request):
        """The request finishes: allocator.free(its token indices)."""
        s.require(s.table[r] != 0)
        s.free("kv", r, s.table[r])
        s.last_freed[r] = s.table[r]
        s.table[r] = 0
        s.fill[r] = 0

    @action
    def free_group(self, s, r: Request):
        """r and the next request finish in one batch: free_group_begin, free, free, free_group_end."""
        other = r % self.requests + 1
        if not self.groups or other == r:
            s.require(False)
        s.require((s.table[r] != 0) & (s.table[other] != 0))
        for q in (r, other):
            s.free("kv", q, s.table[q])
            s.last_freed[q] = s.table[q]
            s.table[q] = 0
            s.fill[q] = 0

    @action
    def free_twice(self, s, r: Request):
        """A client bug (misuse=1): free the pages the request gave back last once more."""
        if not self.misuse:
            s.require(False)
        s.require((s.last_freed[r] != 0) & (s.table[r] == 0))
        s.free("kv", r, s.last_freed[r])
        s.last_freed[r] = 0

    @sometimes
    def a_freed_page_is_reused(self, s):
        """A page freed by one request is handed to another."""
        return s.reused("kv") != 0
