"""Violates crash: a request's pages are released twice, and the allocator asserts.

Batch-engine test spec for the step property `crash` (s.crash): two requests share a pool; an
abort that races the normal finish releases the request again, and an assertion of the
engine's own (the request must still hold pages) fails. With the fix `release-once` the
second release is skipped."""

from ownership import If, Request, Spec, action, fix, ints, param, per_request, pool

NEW, RUNNING, RELEASED = 0, 1, 2


class CrashReleaseTwice(Spec):
    requests = param(2, "requests")
    release_once = fix("a request already released is not released again")

    kv = pool(3)
    stage = per_request(ints(0, 2), NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = RUNNING

    @action
    def release(self, s, r: Request):
        """Finish or abort: the request's pages go back to the pool."""
        s.require(s.stage[r] != NEW)
        if self.release_once:
            s.require(s.stage[r] == RUNNING)
        s.crash("AssertionError in release: the request holds no pages any more", when=s.stage[r] == RELEASED)
        s.free("kv", r, If(s.stage[r] == RUNNING, s.table[r], 0))
        s.table[r] = 0
        s.stage[r] = RELEASED
