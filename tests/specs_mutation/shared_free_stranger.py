"""Pins: in a shared pool, a free by a request that does not hold the page drops nothing.

r1 takes the page and computes its prefix into it; r2, which never held it, frees it (a
double-free at step 2). With `--skip double-free` the search goes on: the page still has its
one holder, r1, which reads its own KV and gives the page back: verified, 4 states.
"""

from ownership import Spec, action, page, param, pool, state


class SharedFreeStranger(Spec):
    requests = param(2, "requests")

    kv = pool(1, shared=True)
    stranger_freed = state(bool, False)

    @action
    def compute(self, s):
        """r1 takes the page and computes into it."""
        s.require(s.free_pages("kv") == page(0))
        s.take("kv", 1, page(0))
        s.write("kv", 1, page(0))

    @action
    def stranger_frees(self, s):
        """r2 frees the page it never held, once."""
        s.require(s.holds("kv", 0, 1) & ~s.stranger_freed)
        s.free("kv", 2, page(0))
        s.stranger_freed = True

    @action
    def finish(self, s):
        """r1 reads its prefix and gives the page back."""
        s.require(s.holds("kv", 0, 1) & s.stranger_freed)
        s.read("kv", 1, page(0))
        s.free("kv", 1, page(0))
