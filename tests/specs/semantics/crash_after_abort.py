"""A crash of the engine as a step property (issue 13, item 6): `s.crash(...)` where the real
engine's own code fails.

Modelled on vLLM's NIXL connector before vllm-project/vllm#25067 ("[NIXL] Ignore abort on
already-finished request"; observed in llm-d/llm-d#187): prefill finishes a request and keeps
its blocks for the remote decode (delay_free_blocks); a client disconnect then aborts it, and
the scheduler drops it from `self.requests`; when the worker's `finished_sending` arrives,
`Scheduler._update_from_kv_xfer_finished` looks it up there, and the KeyError takes the engine
core down with every request on it. The fix `ignore-abort-after-finish` is #25067's: an abort
of a request that has finished is ignored (the connector frees its blocks later, on a
timeout). Abstracted away: the blocks themselves, the timeout, decode."""

from ownership import Request, Spec, action, fix, ints, per_request

RUNNING, FINISHED, GONE = 0, 1, 2


class FinishedSendingCrash(Spec):
    requests = 1
    phase = per_request(ints(0, 2), RUNNING)
    sending = per_request(ints(0, 1), 0)
    ignore_abort_after_finish = fix("an abort of a finished request is ignored (vllm-project/vllm#25067)")

    @action
    def finish_prefill(self, s, r: Request):
        """Prefill is done; its blocks are kept for decode's read (delay_free_blocks)."""
        s.require(s.phase[r] == RUNNING)
        s.phase[r] = FINISHED
        s.sending[r] = 1

    @action
    def abort(self, s, r: Request):
        """The client disconnects: the scheduler drops the request."""
        s.require(s.phase[r] == RUNNING if self.ignore_abort_after_finish else s.phase[r] != GONE)
        s.phase[r] = GONE

    @action
    def finished_sending(self, s, r: Request):
        """The worker reports the send done; the scheduler looks the request up to free it."""
        s.require(s.sending[r] == 1)
        s.crash("KeyError in _update_from_kv_xfer_finished: self.requests[req_id], dropped by the abort",
                when=s.phase[r] == GONE)
        s.sending[r] = 0
        s.phase[r] = GONE
