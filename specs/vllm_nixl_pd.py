"""vLLM v1 prefill/decode disaggregation over NIXL, pull mode: prefill holds its blocks under a
lease, decode READs them, a notification or the lease's expiry frees them.

Models vllm 0.33.0, NixlConnector in pull mode (the default), as read from the released wheel
(vllm/distributed/kv_transfer/kv_connector/v1/nixl/{pull_scheduler,base_scheduler,pull_worker,
base_worker}.py, vllm/v1/core/sched/scheduler.py); see docs/protocols/vllm.md section 2 and
docs/specs/vllm_nixl_pd.md.

The bugs it finds (docs/bugs.md):
- V1 (#32255, merged 2026-01): a client aborts the decode request while its READ is landing;
  finish_requests frees the blocks at once, the READ lands in blocks handed to another request:
  free-in-flight. The fix delays the free until finished_recving; its first cut also delayed
  it when finished_recving had already arrived, holding the blocks for ever (leak; the race
  the review found).
- V5 (#21570, #38027/#41383, aws-samples/aws-do-eks #84, #47021, #58222, #53095): prefill
  reaps an expired lease and frees the blocks before decode READs them (read-unowned, or
  stale-read once another request reuses them), or while the READ is still reading them
  (free-in-flight). Heartbeats (#41383) extend the lease only while decode is heartbeating;
  declining expired reads (#47021, merged for turn-2 readbacks only) covers the read that
  starts too late; a READ that outlives the safety margin is still exposed.

Liveness (docs/specs/vllm_nixl_pd.md, "Liveness"): under weak fairness of the protocol's steps
(the lease's clock and its reaper included), every block comes back and every READ lands in
0.33.0; #32255's first cut holds an aborted request's decode block for ever (eventually-released
fails: the run stops with the block held).

Abstractions (sound for the properties checked, argued in docs/specs/vllm_nixl_pd.md):
- one prefill and one decode engine, one TP rank each, one KV cache group; a prompt is
  `blocks` blocks; decode's local prefix cache is off (every block is pulled);
- the proxy, decode's admission, allocate_slots, update_state_after_alloc and the worker's
  start_load_kv -> _read_blocks are one step (an abort is handled between engine steps);
- the READ completing, decode's get_finished -> finished_recving, and prefill's processing of
  the completion notification (_get_new_notifs) are one step;
- time is abstract: a lease is LIVE, then LATE (within _KV_BLOCKS_EXPIRY_SAFETY_MARGIN of its
  deadline, or past it), then reaped; heartbeats are not messages but a guard (the lease does
  not run late while decode heartbeats, unless heartbeats may be lost);
- push mode, the HMA/SWA block clipping, turn-2 readbacks, invalid-block recovery and the
  remote registration generation are left out.
"""

from enum import IntEnum

from ownership import If, Request, Spec, action, any_of, fix, param, per_request, pool, sometimes


class P(IntEnum):
    """Where the request is on the prefill node."""

    NEW = 0        # not arrived
    LEASED = 1     # finished (max_tokens=1): blocks held by request_finished's delay_free_blocks
    FREED = 2      # every consumer's READ notification arrived: blocks freed
    EXPIRED = 3    # the lease was reaped (_reap_expired_send_leases): blocks freed


class Lease(IntEnum):
    """How prefill's lease on the request's blocks stands (kv_lease_duration, 30 s)."""

    LIVE = 0       # more than the safety margin left
    LATE = 1       # within the safety margin of the deadline, or past it: prefill may reap


class D(IntEnum):
    """Where the request is on the decode node."""

    NEW = 0        # not arrived (the proxy has not forwarded prefill's kv_transfer_params)
    READING = 1    # WAITING_FOR_REMOTE_KVS: blocks allocated, READ posted
    RECVD = 2      # finished_recving arrived; still WAITING_FOR_REMOTE_KVS until scheduled
    DONE = 3       # decoded to the end, blocks freed
    HOLD = 4       # finished (aborted) with its blocks held for finished_recving (#32255)
    FREED = 5      # finished (aborted or declined), blocks freed


class VLLMNixlPD(Spec):
    """vLLM NIXL pull-mode PD: prefill leases its blocks, decode READs them."""

    requests = param(2, "concurrent requests", minimum=1)
    blocks = param(1, "blocks per prompt", minimum=1)
    prefill_pool = param(2, "prefill KV blocks", minimum=1)
    decode_pool = param(2, "decode KV blocks", minimum=1)
    client_aborts = param(1, "1: a client may abort a decode request while it waits for its KV; 0: never")
    lost_heartbeats = param(1, "1: decode's heartbeats may fail to reach prefill in time (a congested decode, a partition: #21570, aws-do-eks #84, #53095); 0: they always do")
    slow_reads = param(1, "1: a READ may take longer than the safety margin (_KV_BLOCKS_EXPIRY_SAFETY_MARGIN, 5 s); 0: never")

    delay_free_aborted_loads = fix("#32255 (merged 2026-01; in 0.33.0): finish_requests delays the free of an aborted request whose READ started until finished_recving, unless finished_recving already arrived")
    delay_free_before_review = fix("#32255 as first proposed (for the record, not a release): the free is delayed whenever the READ started, even if finished_recving already arrived (the race the review found)")
    heartbeat_lease = fix("#41383 (merged; in 0.33.0): decode heartbeats 'HB:req,...' while it waits for the KV; each extends prefill's lease (_handle_heartbeat)")
    decline_expired_reads = fix("#47021 (merged for turn-2 readbacks only; proposed here for prefill leases): decode declines a READ whose lease is within the safety margin of its deadline")

    releases = {  # only the release whose source we read (docs/protocols/vllm.md): 0.33.0
        "0.33.0": ["delay-free-aborted-loads", "heartbeat-lease"],
    }

    #: Liveness (docs/specs/vllm_nixl_pd.md, "Liveness"): every block owned on either node is
    #: free again later and every READ lands, on every behaviour in which each step that stays
    #: enabled happens (weak fairness: the actions marked fair=True, the lease's clock and its
    #: reaper included); client aborts are the environment.
    liveness = ("eventually-released", "eventually-landed")

    prefill = pool(prefill_pool, order="lifo", help="prefill's KV blocks (BlockPool: freed blocks are prepended)")
    decode = pool(decode_pool, order="lifo", warm=True,
                  help="decode's KV blocks; never zeroed for attention layers")

    p_stage = per_request(P, P.NEW)
    lease = per_request(Lease, Lease.LIVE)
    d_stage = per_request(D, D.NEW)
    remote = per_request(prefill)        # remote_block_ids: prefill's blocks, as decode was told
    local = per_request(decode)          # decode's blocks for the request
    rdma = per_request(bool, False)      # the NIXL READ is in flight (the transfer's own state)
    read_live = per_request(bool, False) # the READ was posted with the lease LIVE

    # -- prefill ---------------------------------------------------------------------------

    @action(actor="prefill", fair=True)
    def prefill_finishes(self, s, r: Request):
        """Prefill computes the prompt (max_tokens=1) and finishes FINISHED_LENGTH_CAPPED:
        Scheduler._free_request -> NixlPullConnectorScheduler.request_finished returns
        delay_free_blocks=True and records the lease (_reqs_need_send: now + kv_lease_duration)."""
        s.require(s.p_stage[r] == P.NEW)
        got = s.alloc("prefill", r, self.blocks)
        s.write("prefill", r, got)
        s.remote[r] = got
        s.p_stage[r] = P.LEASED

    @action(actor="prefill", fair=True)
    def lease_runs_late(self, s, r: Request):
        """Time passes on prefill's lease. With #41383 decode's heartbeats (_send_heartbeats ->
        _handle_heartbeat) keep it live while decode tracks the request (from on_new_request to
        finished_recving or request_finished), unless heartbeats may be lost."""
        s.require((s.p_stage[r] == P.LEASED) & (s.lease[r] == Lease.LIVE))
        if self.heartbeat_lease and not self.lost_heartbeats:
            s.require(s.d_stage[r] != D.READING)
        s.lease[r] = Lease.LATE

    @action(actor="prefill", fair=True)
    def lease_expires(self, s, r: Request):
        """NixlBaseWorker._reap_expired_send_leases: "Releasing expired KV blocks" ->
        done_sending -> Scheduler._update_from_kv_xfer_finished -> _free_blocks.

        Prefill cannot tell whether a READ is still reading the blocks. Without slow reads, a READ
        posted with the lease live is done before the deadline (the safety margin)."""
        s.require((s.p_stage[r] == P.LEASED) & (s.lease[r] == Lease.LATE))
        if not self.slow_reads:
            s.require(~(s.rdma[r] & s.read_live[r]))
        s.free("prefill", r, s.remote[r])
        s.p_stage[r] = P.EXPIRED

    # -- decode ----------------------------------------------------------------------------

    @action(actor="decode", fair=True)
    def decode_reads(self, s, r: Request):
        """The proxy forwards prefill's kv_transfer_params (do_remote_prefill): decode's
        get_num_new_matched_tokens -> allocate_slots -> update_state_after_alloc
        (WAITING_FOR_REMOTE_KVS), then the worker's start_load_kv -> _read_blocks_for_req ->
        _read_blocks posts the NIXL READ of remote_block_ids into the local blocks.

        With the declining fix (#47021's _is_turn2_read_expired, applied to prefill leases) a
        READ within the safety margin is declined (_handle_failed_transfer): the request fails
        or recomputes locally, and prefill's blocks wait for their lease."""
        s.require((s.d_stage[r] == D.NEW) & (s.p_stage[r] != P.NEW))
        if self.decline_expired_reads:
            s.require(s.lease[r] == Lease.LIVE)
        got = s.alloc("decode", r, self.blocks)
        s.send(r, "prefill", s.remote[r], "decode", got)
        s.local[r] = got
        s.rdma[r] = True
        s.read_live[r] = s.lease[r] == Lease.LIVE
        s.d_stage[r] = D.READING

    @action(actor="decode", fair=True)
    def decode_declines(self, s, r: Request):
        """Proposed (#47021's check for prefill leases): _read_blocks_for_req sees the deadline
        within the safety margin, logs "Declining expired remote read" and fails the load
        (_handle_failed_transfer; kv_load_failure_policy then fails or recomputes)."""
        s.require(self.decline_expired_reads)
        s.require((s.d_stage[r] == D.NEW) & (s.p_stage[r] != P.NEW) & (s.lease[r] == Lease.LATE))
        s.d_stage[r] = D.FREED

    @action(actor="transfer", fair=True)
    def read_completes(self, s, r: Request):
        """The NIXL READ completes: the data lands in decode's blocks whatever decode did
        meanwhile (NIXL cannot cancel it); decode's get_finished reports finished_recving
        (_update_from_kv_xfer_finished: an aborted request's held blocks are freed now); the
        READ's notification reaches prefill (_get_new_notifs), which frees its blocks, or only
        logs "Potentially invalid KV blocks ... may have expired" if the lease was reaped."""
        s.require(s.rdma[r])
        s.land(r)
        s.rdma[r] = False
        held = s.d_stage[r] == D.HOLD
        s.free("decode", r, If(held, s.local[r], 0))
        s.d_stage[r] = If(held, D.FREED, If(s.d_stage[r] == D.READING, D.RECVD, s.d_stage[r]))
        leased = s.p_stage[r] == P.LEASED
        s.free("prefill", r, If(leased, s.remote[r], 0))
        s.p_stage[r] = If(leased, P.FREED, s.p_stage[r])

    @action(actor="decode", fair=True)
    def decode_runs(self, s, r: Request):
        """_update_waiting_for_remote_kv caches the blocks and the request is scheduled: it
        attends over its blocks, decodes to the end and KVCacheManager.free releases them."""
        s.require(s.d_stage[r] == D.RECVD)
        s.read("decode", r, s.local[r])
        s.free("decode", r, s.local[r])
        s.d_stage[r] = D.DONE

    @action(actor="client")
    def decode_abort(self, s, r: Request):
        """The client aborts: Scheduler.finish_requests(FINISHED_ABORTED) on a request in
        WAITING_FOR_REMOTE_KVS -> _free_request. Before #32255 the blocks are freed at once (V1);
        with it the free waits for finished_recving, unless that already arrived."""
        s.require(self.client_aborts >= 1)
        s.require((s.d_stage[r] == D.READING) | (s.d_stage[r] == D.RECVD))
        if self.delay_free_before_review:
            delay = True
        elif self.delay_free_aborted_loads:
            delay = s.d_stage[r] == D.READING
        else:
            delay = False
        s.free("decode", r, If(delay, 0, s.local[r]))
        s.d_stage[r] = If(delay, D.HOLD, D.FREED)

    # -- properties ------------------------------------------------------------------------

    def describe(self, s, step):
        """Each step of a trace in the protocol's words: `ownership check` prints it beside the step."""
        r, b = step.args.get("r"), step.before
        if step.action is None:
            return (f"prefill: {_count(self.prefill_pool, 'block')}; decode: {_count(self.decode_pool, 'block')}"
                    f" of old KV (r0); a prompt is {_count(self.blocks, 'block')}")
        if step.action == "prefill_finishes":
            return f"prefill computes {r} into {_named(s.remote[r])} and leases {'it' if len(s.remote[r]) == 1 else 'them'} to decode"
        if step.action == "lease_runs_late":
            return f"{r}'s lease on prefill nears its deadline"
        if step.action == "lease_expires":
            return f"prefill reaps the expired lease: frees {_named(b.remote[r])}"
        if step.action == "decode_reads":
            return f"decode reserves {_named(s.local[r])} and posts the NIXL READ of prefill {_named(s.remote[r])}"
        if step.action == "decode_declines":
            return "decode declines the READ: the lease is too close to its deadline"
        if step.action == "read_completes":
            told = f"the READ lands in decode {_named(b.local[r])}"
            if s.p_stage[r] == "FREED" and b.p_stage[r] == "LEASED":
                told += "; prefill frees its blocks"
            if s.d_stage[r] == "FREED" and b.d_stage[r] == "HOLD":
                told += "; decode frees the aborted request's blocks"
            return told
        if step.action == "decode_runs":
            return f"decode attends over {_named(b.local[r])}, decodes and frees them"
        if step.action == "decode_abort":
            if s.d_stage[r] == "HOLD":
                return f"the client aborts; decode holds {_named(b.local[r])} until the READ is done"
            return f"the client aborts; decode frees {_named(b.local[r])} at once"
        return None

    def finished(self, s, r):
        """The request has left both engines, or nothing will ever free its blocks: a request
        held for a finished_recving that already came (the review's race) counts as finished."""
        p_done = (s.p_stage[r] == P.FREED) | (s.p_stage[r] == P.EXPIRED)
        d_done = (s.d_stage[r] == D.DONE) | (s.d_stage[r] == D.FREED)
        stranded = (s.d_stage[r] == D.HOLD) & ~s.rdma[r]
        return p_done & (d_done | stranded)

    def each(self, cond):
        """Some request satisfies cond(r)."""
        return any_of(*(cond(r) for r in range(1, self.requests + 1)))

    @sometimes
    def a_request_completes(self, s):
        """Some request is decoded to the end."""
        return self.each(lambda r: s.d_stage[r] == D.DONE)

    @sometimes
    def a_lease_expires(self, s):
        """Prefill reaps some lease."""
        return self.each(lambda r: s.p_stage[r] == P.EXPIRED)

    @sometimes
    def an_expired_block_is_reused(self, s):
        """A prefill block whose lease was reaped belongs to another request now."""
        def taken(r):
            others = [s.owned("prefill", o) for o in range(1, self.requests + 1) if o != r]
            return any_of(*((s.remote[r] & o) != 0 for o in others))
        return self.each(lambda r: (s.p_stage[r] == P.EXPIRED) & taken(r))

    @sometimes
    def an_aborted_request_waits_for_its_read(self, s):
        """Decode holds an aborted request's blocks while its READ is still landing."""
        return self.each(lambda r: (s.d_stage[r] == D.HOLD) & s.rdma[r])


def _count(k, word):
    """'1 block', '2 blocks': a number of things in a narrative."""
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _named(blocks):
    """'block 0', 'blocks 0, 1': blocks in a narrative."""
    listed = ", ".join(str(x) for x in sorted(blocks))
    return f"block {listed}" if len(blocks) == 1 else (f"blocks {listed}" if blocks else "no block")
