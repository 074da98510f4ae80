"""A tiny allocator client, the spec that docs/testing.md tests a real allocator against.

Requests take pages from one pool and give them back. The pool hands out the most recently
freed pages first (LIFO), as SGLang's paged allocator does. `free_twice` is a client bug on
purpose (a request releases its pages a second time, as in SGLang #30937): the kernel flags it
as a double free, so an implementation must refuse it (raise) rather than accept it silently.
"""

from ownership import Request, Spec, action, ints, param, per_request, pool


class ToyAllocator(Spec):
    """One pool, requests that allocate and free pages, and a client that may free twice."""

    pages = param(4, "pages in the pool", minimum=1)
    requests = param(2, "requests", minimum=1)

    kv = pool(pages, order="lifo", help="the KV pool; freed pages are reused first")

    table = per_request(kv)                  # the pages the request believes it holds
    freed = per_request(kv)                  # the pages it gave back last (for the buggy client)

    @action
    def alloc(self, s, r: Request, n: ints(1, 2)):
        """The request takes n pages (waits while fewer are free)."""
        s.require(s.table[r] == 0)
        s.table[r] = s.alloc("kv", r, n)
        s.freed[r] = 0

    @action
    def free(self, s, r: Request):
        """The request gives its pages back."""
        s.require(s.table[r] != 0)
        s.free("kv", r, s.table[r])
        s.freed[r] = s.table[r]
        s.table[r] = 0

    @action
    def free_twice(self, s, r: Request):
        """A client bug: the request gives the pages it already gave back once more."""
        s.require((s.freed[r] != 0) & (s.table[r] == 0))
        s.free("kv", r, s.freed[r])
        s.freed[r] = 0
