"""Violates count-below-zero: in a reference-counted pool (vLLM's `ref_cnt`), a request that
had a prefix hit on another request's block drops its reference on abort and again on finish.

Batch-engine test spec, with a counted shared pool: a request holds its own block once and may
hold another's (`touch` on a prefix hit). With the fix `free-once` the finish drops only what
the abort left."""

from enum import IntEnum

from ownership import If, Request, Spec, action, fix, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    ABORTED = 2
    DONE = 3


class PrefixHitUnderflow(Spec):
    requests = param(2, "requests")

    free_once = fix("the finish after an abort frees nothing more")

    kv = pool(2, counted=2, help="GPU KV blocks, reference-counted per holder")

    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def allocate(self, s, r: Request):
        """get_new_blocks: a block of its own."""
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = Stage.RUNNING

    @action
    def prefix_hit(self, s, r: Request, other: Request):
        """touch: a reference to the block another running request computed."""
        s.require((s.stage[r] == Stage.NEW) & (s.stage[other] == Stage.RUNNING) & (r != other))
        s.share("kv", r, s.table[other])
        s.table[r] = s.table[other]
        s.stage[r] = Stage.RUNNING

    @action
    def abort(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.free("kv", r, s.table[r])
        s.stage[r] = Stage.ABORTED

    @action
    def finish(self, s, r: Request):
        """free_blocks at the end of the request (after an abort too, before the fix)."""
        s.require((s.stage[r] == Stage.RUNNING) | (s.stage[r] == Stage.ABORTED))
        if self.free_once:
            s.free("kv", r, If(s.stage[r] == Stage.ABORTED, 0, s.table[r]))
        else:
            s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE

    def finished(self, s, r):
        return s.stage[r] == Stage.DONE
