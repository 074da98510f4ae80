"""Counted holders (issue 13, item 6): a request that holds its prefill page twice, and a
reference count that goes below zero, modelled on SGLang's double KV release on a prefill
grammar error (#30937, C9 in docs/bugs.md) under the allocator refcount pinning proposed for
C3 (#24519): the transfer takes the request's second reference to its pages when the send
starts (`send_kv_chunk`) and drops it when the transfer reaches a terminal state.

The grammar error (`accept_token` fails after the send started) releases the request's KV at
once, and the terminal cleanup releases it again: the request drops three references where it
held two, the last on a page that is already free (count-below-zero at step 3). The fix
`release-at-terminal-state` (#30937) leaves the release to the terminal cleanup alone.
Abstracted: the decode side and the data itself (one page, no landing)."""

from ownership import Request, Spec, action, fix, ints, per_request, pool

NEW, SENDING, FAILED, DONE = 0, 1, 2, 3


class ReleaseTwiceCounted(Spec):
    requests = 1
    release_at_terminal_state = fix("release the KV only at the transfer's terminal state (#30937)")

    prefill = pool(1, counted=2, help="prefill's KV pages, reference-counted per holder")
    stage = per_request(ints(0, 3), NEW)
    table = per_request(prefill)

    @action
    def forward_and_send(self, s, r: Request):
        """The forward computes the KV; the send takes the transfer's reference."""
        s.require(s.stage[r] == NEW)
        pages = s.alloc("prefill", r, 1)
        s.write("prefill", r, pages)
        s.share("prefill", r, pages)
        s.table[r] = pages
        s.stage[r] = SENDING

    @action
    def grammar_error(self, s, r: Request):
        s.require(s.stage[r] == SENDING)
        if not self.release_at_terminal_state:
            s.free("prefill", r, s.table[r])   # released at once (before #30937)
        s.stage[r] = FAILED

    @action
    def transfer_terminal(self, s, r: Request):
        """The transfer fails or succeeds: it drops its reference; the cleanup releases the KV."""
        s.require((s.stage[r] == SENDING) | (s.stage[r] == FAILED))
        s.free("prefill", r, s.table[r])
        s.free("prefill", r, s.table[r])
        s.stage[r] = DONE

    def finished(self, s, r):
        return s.stage[r] == DONE
