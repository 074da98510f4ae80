"""Pins: a LIFO free list that a double free corrupted never hands out a page outside the pool.

`bad_free` frees page 0 while it is free (a double-free). With `--skip double-free` the search
goes on: the free list now holds page 0 twice and has lost page 1, so allocations hand out
page 0 again and then run off the end of the list. Running off the end must give no page
(the end-of-list marker is page `size`, outside the pool, masked away), never page 2, which
the request's table (a page set of this 2-page pool) could not even hold: verified, 6 states.
"""

from ownership import Request, Spec, action, count, has, page, param, per_request, pool


class LifoDoubleFree(Spec):
    requests = param(1, "requests")

    kv = pool(2, order="lifo")
    table = per_request(kv)

    @action
    def take_one(self, s, r: Request):
        s.require(count(s.table[r]) < 2)
        s.table[r] = s.table[r] | s.alloc("kv", r, 1)

    @action
    def bad_free(self, s, r: Request):
        s.require(has(s.free_pages("kv"), 0))
        s.free("kv", r, page(0))
