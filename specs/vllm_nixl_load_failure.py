"""vLLM NIXL pull mode under heterogeneous TP: one of a request's READ handles fails while a sibling
handle is still writing into the same decode blocks.

Models vllm 0.29.0 (the bug) and 0.30.0 (the fix), NixlConnector in pull mode with prefill at
TP 2 and decode at TP 1, as read from the released wheels:
- vllm/distributed/kv_transfer/kv_connector/v1/nixl/pull_worker.py: NixlPullWorker
  _read_blocks_for_req ("Remote tp_size > local tp_size: we must perform multiple reads", one
  handle per remote rank, each into its own chunk of the local blocks,
  src_xfer_handles_by_tp_ratio) and _read_blocks (make_prepped_xfer, transfer,
  _recving_transfers[req].append(handle));
- .../nixl/base_worker.py: get_finished (0.29.0) / get_transfer_results (0.30.0),
  _pop_done_transfers, _handle_failed_transfer, get_block_ids_with_load_errors;
- vllm/v1/worker/kv_connector_model_runner_mixin.py: finished_recving and invalid_block_ids
  leave the worker in the same KVConnectorOutput;
- vllm/v1/core/sched/scheduler.py: update_from_output -> _handle_invalid_blocks
  (kv_load_failure_policy, "fail" by default in both releases) -> finish_requests
  (FINISHED_ERROR) -> _update_from_kv_xfer_finished -> _free_blocks; with "recompute",
  _update_waiting_for_remote_kv -> kv_cache_manager.free(request).
See docs/specs/vllm_nixl_load_failure.md and docs/bugs.md V10.

The bug (V10; vllm-project/vllm#56104, "[Bugfix][NIXL] Fix multiple handles xfer race", opened
2026-09-09, merged; absent from 0.29.0, in 0.30.0): in 0.29.0 the first handle seen in ERR makes
_handle_failed_transfer mark all the request's blocks invalid and queue the request on
_failed_recv_reqs, and get_finished reports it in done_recving at once, while a sibling handle
is still PROC. The scheduler fails the request (or, with "recompute", rolls it back to zero
computed tokens) and frees its blocks; NIXL cannot cancel a posted READ, so the sibling's write
lands in blocks that may already belong to another request: free-in-flight at the free,
write-unowned at the landing. The fix keeps a failed request in _recv_failures and reports it
only once no handle of it is outstanding (and keeps a handle whose release_xfer_handle fails).
A second consequence in 0.29.0: when the sibling handle ends later, get_finished reports the
request again and `assert meta is not None` (its metadata was popped at the first report)
takes the engine down (the crash that #54518 reports; that assert is still in 0.30.0 and 0.33.0,
where #56104 makes the second report unreachable); reached only past the free.

Abstractions (argued in docs/specs/vllm_nixl_load_failure.md):
- one prefill engine at TP 2 and one decode engine at TP 1 (tp_ratio -2: two READ handles per
  request, one per prefill rank); one KV cache group; HMA off (under HMA, 0.29.0 and 0.30.0
  report no invalid blocks for a failed READ: not modelled); decode's prefix cache off;
- a decode block is two pools, decode_rank0 and decode_rank1: the chunk of each block's heads
  that the READ from prefill rank 0 (rank 1) writes. The scheduler allocates and frees a block
  as one: the two pools get the same pages by construction (same order, same calls);
- a handle's READ ending (DONE or ERR) is a transport step; the worker's poll
  (_pop_done_transfers in get_finished) and the scheduler's update_from_output on the output of
  that engine step are one step; a failed READ wrote nothing that decode may use (the blocks
  are invalid whatever part landed), so kernel.fail is called without `wrote`;
- prefill is abstracted: it frees its blocks once no READ of the request is in flight (the
  notification of a READ that landed, the lease's expiry for one that failed). Prefill freeing
  under a READ is V5 (specs/vllm_nixl_pd.py); the kernel does not pair a source page with its
  destination, so a rank's source stays read until the request's last READ ends, and a free of
  rank 0's blocks after its READ failed but while rank 1's runs would be flagged although it is
  safe: the spec does not take that step;
- client aborts (V1, #32255), leases and heartbeats are left to specs/vllm_nixl_pd.py; a
  handle whose release_xfer_handle raises (0.30.0 keeps it, since "a status error does not
  guarantee that the backend stopped DMA") is not modelled: kernel.fail means the READ stopped.
"""

from enum import IntEnum

from ownership import (
    If,
    Request,
    Spec,
    action,
    any_of,
    fix,
    ints,
    param,
    per_request,
    pool,
    sometimes,
)


class P(IntEnum):
    """Where the request is on the prefill node."""

    NEW = 0        # not arrived
    HELD = 1       # computed, its blocks held for decode's READs (delay_free_blocks)
    FREED = 2      # every READ of it ended: freed (notification, or the lease for a failed READ)


class X(IntEnum):
    """One READ handle of the request on decode (NIXL's check_xfer_state, and the worker's view)."""

    NONE = 0       # not posted
    PROC = 1       # posted, in flight ("PROC")
    DONE = 2       # the READ landed ("DONE"), not polled yet
    ERR = 3        # the READ failed ("ERR"), not polled yet
    GONE = 4       # polled and released (release_xfer_handle): no longer in _recving_transfers


class D(IntEnum):
    """Where the request is on the decode node."""

    NEW = 0        # not arrived
    WAITING = 1    # WAITING_FOR_REMOTE_KVS, READs posted, nothing reported yet
    RECVD = 2      # finished_recving reported without invalid blocks: schedulable
    RETRY = 3      # failed load under "recompute": failed_recving_kv_req_ids, to be recomputed
    LOCAL = 4      # rolled back under "recompute": blocks freed, WAITING to be computed locally
    DONE = 5       # decoded to the end, blocks freed
    FAILED = 6     # FINISHED_ERROR under "fail": blocks freed


class VLLMNixlLoadFailure(Spec):
    """vLLM NIXL pull mode, prefill TP 2 -> decode TP 1: a failed READ handle and its sibling."""

    requests = param(2, "concurrent requests", minimum=1)
    blocks = param(1, "blocks per prompt", minimum=1)
    prefill_pool = param(2, "KV blocks on each prefill rank", minimum=1)
    decode_pool = param(2, "decode KV blocks", minimum=1)
    recompute = param(0, "kv_load_failure_policy: 0 'fail' (the default since #34896, in 0.29.0 and 0.30.0), 1 'recompute'")

    defer_failure_until_all_stopped = fix("#56104 (merged; in 0.30.0, not in 0.29.0): a failed request is reported (done_recving, invalid blocks) only once none of its READ handles is outstanding")

    releases = {  # the two releases whose source was read: the last without #56104 and the first with it
        "0.29.0": [],
        "0.30.0": ["defer-failure-until-all-stopped"],
    }

    prefill_rank0 = pool(prefill_pool, order="lifo", help="prefill TP rank 0's KV blocks (its half of the heads)")
    prefill_rank1 = pool(prefill_pool, order="lifo", help="prefill TP rank 1's KV blocks (the other half)")
    decode_rank0 = pool(decode_pool, order="lifo", warm=True,
                        help="decode's KV blocks, the chunk of heads that the READ from prefill rank 0 writes; never zeroed")
    decode_rank1 = pool(decode_pool, order="lifo", warm=True,
                        help="decode's KV blocks, the chunk of heads that the READ from prefill rank 1 writes; never zeroed")

    p_stage = per_request(P, P.NEW)
    d_stage = per_request(D, D.NEW)
    xfer0 = per_request(X, X.NONE)       # the READ handle from prefill rank 0
    xfer1 = per_request(X, X.NONE)       # the READ handle from prefill rank 1
    failed = per_request(bool, False)    # a handle of the request was seen in ERR (0.30.0: _recv_failures)
    reported = per_request(bool, False)  # get_finished reported it (its _recving_metadata entry is popped)
    remote0 = per_request(prefill_rank0)  # remote_block_ids on rank 0, as decode was told
    remote1 = per_request(prefill_rank1)
    local = per_request(decode_rank0)    # decode's blocks for the request (the same pages in both pools)

    # -- prefill ---------------------------------------------------------------------------

    @action(actor="prefill")
    def prefill_finishes(self, s, r: Request):
        """Both prefill ranks compute the prompt (max_tokens=1); request_finished returns
        delay_free_blocks=True, so each rank holds its blocks for decode's READ."""
        s.require(s.p_stage[r] == P.NEW)
        s.remote0[r] = s.alloc("prefill_rank0", r, self.blocks)
        s.remote1[r] = s.alloc("prefill_rank1", r, self.blocks)
        s.write("prefill_rank0", r, s.remote0[r])
        s.write("prefill_rank1", r, s.remote1[r])
        s.p_stage[r] = P.HELD

    @action(actor="prefill")
    def prefill_frees(self, s, r: Request):
        """Once no READ of the request is in flight, each rank frees its blocks: _get_new_notifs
        for a READ that landed, _reap_expired_send_leases for one that failed (it sends no
        notification)."""
        s.require((s.p_stage[r] == P.HELD) & (s.d_stage[r] != D.NEW) & ~s.in_flight(r))
        s.free("prefill_rank0", r, s.remote0[r])
        s.free("prefill_rank1", r, s.remote1[r])
        s.p_stage[r] = P.FREED

    # -- decode ----------------------------------------------------------------------------

    @action(actor="decode")
    def decode_reads(self, s, r: Request):
        """allocate_slots -> update_state_after_alloc (WAITING_FOR_REMOTE_KVS); start_load_kv ->
        _read_blocks_for_req posts one READ per prefill rank (tp_ratio < 0), each into its own
        chunk of the local blocks, and appends both handles to _recving_transfers[req]."""
        s.require((s.d_stage[r] == D.NEW) & (s.p_stage[r] == P.HELD))
        got = s.alloc("decode_rank0", r, self.blocks)
        s.alloc("decode_rank1", r, self.blocks)      # (the same pages: see the docstring)
        s.send(r, "prefill_rank0", s.remote0[r], "decode_rank0", got)
        s.send(r, "prefill_rank1", s.remote1[r], "decode_rank1", got)
        s.local[r] = got
        s.xfer0[r] = X.PROC
        s.xfer1[r] = X.PROC
        s.d_stage[r] = D.WAITING

    @action(actor="transfer")
    def read_lands(self, s, r: Request, rank: ints(0, 1)):
        """The READ from prefill rank `rank` completes: its chunk of the blocks holds r's KV,
        whatever decode did with the blocks meanwhile (NIXL cannot cancel a posted READ)."""
        s.require(self._handle(s, r, rank) == X.PROC)
        s.land(r, f"decode_rank{rank}")
        self._set(s, r, rank, X.DONE)

    @action(actor="transfer")
    def read_fails(self, s, r: Request, rank: ints(0, 1)):
        """The READ from prefill rank `rank` fails (check_xfer_state returns ERR: the peer or
        its NIC went away) and stops; its chunk keeps what it held."""
        s.require(self._handle(s, r, rank) == X.PROC)
        s.kernel.fail(r, f"decode_rank{rank}")
        self._set(s, r, rank, X.ERR)

    @action(actor="decode")
    def update_from_output(self, s, r: Request):
        """One engine step: the worker's get_finished polls r's handles (_pop_done_transfers
        releases those DONE or ERR; _handle_failed_transfer queues the failure), and the
        scheduler's update_from_output acts on the report.

        0.29.0 reports a failure at once, with the blocks invalid, though a sibling handle is
        still PROC; a later poll of that sibling reports r again and `assert meta is not None`
        fails. 0.30.0 (#56104) keeps the failure in _recv_failures and reports r once no handle
        is outstanding. On a failure report, "fail" finishes r FINISHED_ERROR and
        _update_from_kv_xfer_finished frees its blocks; "recompute" rolls it back
        (_handle_invalid_blocks, failed_recving_kv_req_ids)."""
        x0, x1 = s.xfer0[r], s.xfer1[r]
        news = (x0 == X.DONE) | (x0 == X.ERR) | (x1 == X.DONE) | (x1 == X.ERR)
        s.require((s.d_stage[r] != D.NEW) & news)
        newly_failed = (x0 == X.ERR) | (x1 == X.ERR)
        outstanding = (x0 == X.PROC) | (x1 == X.PROC)
        failed = s.failed[r] | newly_failed
        if self.defer_failure_until_all_stopped:
            report = ~outstanding
        else:
            report = newly_failed | ~outstanding
        s.crash("AssertionError in get_finished: `assert meta is not None`, the request's _recving_metadata was popped at its first report",
                when=report & s.reported[r])
        first = report & ~s.reported[r]
        fail_now = first & failed & (self.recompute == 0)
        s.free("decode_rank0", r, If(fail_now, s.local[r], 0))
        s.free("decode_rank1", r, If(fail_now, s.local[r], 0))
        s.d_stage[r] = If(first, If(failed, If(self.recompute == 0, D.FAILED, D.RETRY), D.RECVD), s.d_stage[r])
        s.xfer0[r] = If((x0 == X.DONE) | (x0 == X.ERR), X.GONE, x0)
        s.xfer1[r] = If((x1 == X.DONE) | (x1 == X.ERR), X.GONE, x1)
        s.failed[r] = failed
        s.reported[r] = s.reported[r] | report

    @action(actor="decode")
    def decode_runs(self, s, r: Request):
        """_update_waiting_for_remote_kv caches the blocks and r is scheduled: it attends over its
        blocks (both chunks of heads), decodes to the end and KVCacheManager.free releases them."""
        s.require(s.d_stage[r] == D.RECVD)
        s.read("decode_rank0", r, s.local[r])
        s.read("decode_rank1", r, s.local[r])
        s.free("decode_rank0", r, s.local[r])
        s.free("decode_rank1", r, s.local[r])
        s.d_stage[r] = D.DONE

    @action(actor="decode")
    def decode_rolls_back(self, s, r: Request):
        """kv_load_failure_policy="recompute": _update_waiting_for_remote_kv finds no valid
        computed token (every block of r was marked invalid), so kv_cache_manager.free releases
        the blocks, and r goes back to WAITING."""
        s.require(s.d_stage[r] == D.RETRY)
        s.free("decode_rank0", r, s.local[r])
        s.free("decode_rank1", r, s.local[r])
        s.d_stage[r] = D.LOCAL

    @action(actor="decode")
    def decode_recomputes(self, s, r: Request):
        """r is scheduled again: allocate_slots gives it blocks, it computes the prompt locally,
        attends, decodes to the end and KVCacheManager.free releases the blocks."""
        s.require(s.d_stage[r] == D.LOCAL)
        got = s.alloc("decode_rank0", r, self.blocks)
        s.alloc("decode_rank1", r, self.blocks)
        s.write("decode_rank0", r, got)
        s.write("decode_rank1", r, got)
        s.read("decode_rank0", r, got)
        s.read("decode_rank1", r, got)
        s.free("decode_rank0", r, got)
        s.free("decode_rank1", r, got)
        s.local[r] = got
        s.d_stage[r] = D.DONE

    # -- helpers (plain Python on the action's arguments) --------------------------------------

    def _handle(self, s, r, rank):
        """The state of r's READ handle from prefill rank `rank`."""
        return s.xfer0[r] if rank == 0 else s.xfer1[r]

    def _set(self, s, r, rank, value):
        """Set the state of r's READ handle from prefill rank `rank`."""
        if rank == 0:
            s.xfer0[r] = value
        else:
            s.xfer1[r] = value

    # -- properties ------------------------------------------------------------------------

    def describe(self, s, step):
        """Each step of a trace in the protocol's words: `ownership check` prints it beside the step."""
        r, b = step.args.get("r"), step.before
        rank = step.args.get("rank")
        if step.action is None:
            return (f"prefill TP 2: {_count(self.prefill_pool, 'block')} per rank; decode TP 1:"
                    f" {_count(self.decode_pool, 'block')} of old KV (r0); a prompt is {_count(self.blocks, 'block')}")
        if step.action == "prefill_finishes":
            return f"prefill computes {r} on both ranks and holds its blocks for decode"
        if step.action == "prefill_frees":
            return "no READ of it is in flight: both prefill ranks free their blocks"
        if step.action == "decode_reads":
            return f"decode reserves {_named(s.local[r])} and posts two NIXL READs, one per prefill rank"
        if step.action == "read_lands":
            return f"the READ from prefill rank {rank} lands in decode {_named(b.local[r])}"
        if step.action == "read_fails":
            return f"the READ from prefill rank {rank} fails (ERR); the other one is {_state(b, r, 1 - rank)}"
        if step.action == "update_from_output":
            if s.d_stage[r] == "FAILED" and b.d_stage[r] == "WAITING":
                return f"the worker reports the failure; the scheduler fails {r} and frees {_named(b.local[r])}"
            if s.d_stage[r] == "RETRY" and b.d_stage[r] == "WAITING":
                return f"the worker reports the failure; the scheduler marks {r} for recompute"
            if s.d_stage[r] == "RECVD" and b.d_stage[r] == "WAITING":
                return "the worker reports both READs done: finished_recving"
            if b.reported[r]:
                return f"the worker polls {r}'s last READ and reports {r} a second time"
            return f"the worker polls {r}'s READs and holds back the failure: a READ is still outstanding"
        if step.action == "decode_runs":
            return f"decode attends over {_named(b.local[r])}, decodes and frees them"
        if step.action == "decode_rolls_back":
            return f"no valid token left: decode frees {_named(b.local[r])} and requeues {r} to compute locally"
        if step.action == "decode_recomputes":
            return f"decode computes {r} locally in {_named(s.local[r])}, decodes and frees it"
        return None

    def finished(self, s, r):
        """The request has left both engines."""
        d_done = (s.d_stage[r] == D.DONE) | (s.d_stage[r] == D.FAILED)
        return (s.p_stage[r] == P.FREED) & d_done

    def each(self, cond):
        """Some request satisfies cond(r)."""
        return any_of(*(cond(r) for r in range(1, self.requests + 1)))

    @sometimes
    def a_request_completes(self, s):
        """Some request is decoded to the end."""
        return self.each(lambda r: s.d_stage[r] == D.DONE)

    @sometimes
    def a_failed_load_ends_its_request(self, s):
        """A request whose load failed has been failed or recomputed, and left decode."""
        return self.each(lambda r: s.failed[r] & ((s.d_stage[r] == D.FAILED) | (s.d_stage[r] == D.DONE)))

    @sometimes
    def a_sibling_read_lands_after_a_failure(self, s):
        """One READ of a request failed and its sibling landed."""
        return self.each(lambda r: ((s.xfer0[r] == X.ERR) & (s.xfer1[r] == X.DONE))
                         | ((s.xfer1[r] == X.ERR) & (s.xfer0[r] == X.DONE)))


def _state(state, r, rank):
    """'still in flight', 'done', ...: a READ handle in a narrative."""
    x = state.xfer0[r] if rank == 0 else state.xfer1[r]
    return {"PROC": "still in flight", "DONE": "done", "ERR": "failed too", "GONE": "over"}.get(str(x), str(x))


def _count(k, word):
    """'1 block', '2 blocks': a number of things in a narrative."""
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _named(blocks):
    """'block 0', 'blocks 0, 1': blocks in a narrative."""
    listed = ", ".join(str(x) for x in sorted(blocks))
    return f"block {listed}" if len(blocks) == 1 else (f"blocks {listed}" if blocks else "no block")
