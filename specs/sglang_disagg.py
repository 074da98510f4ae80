"""SGLang PD disaggregation end to end, by release: intake, chunked Mooncake transfer, aborts,
ABORT / ABORT_ACK after drain, deferred decode release and its timeout.

A sibling of sglang_pd.py (which isolates the admission bug). Models sglang 0.5.19 to 0.5.23,
Mooncake backend, default "early" decode allocation, as read from the released wheels
(python/sglang/srt/disaggregation/{prefill,decode}.py, common/conn.py, mooncake/conn.py,
managers/scheduler.py); see docs/protocols/sglang-pd.md sections 3 to 8 and
docs/specs/sglang_disagg.md.

The bugs it finds (docs/bugs.md):
- C1 (#30233, #32605; fixed by #36988 in 0.5.20 and #38935 in 0.5.21; #38704 proposed): prefill
  rejects a long prompt that decode accepts, sends a one-page placeholder with Success, and
  decode reads pages that hold earlier requests' KV: stale-read.
- C3 (#24527, #32564; #27372, #35049 on by default in 0.5.21): decode aborts and frees its pages
  at once while prefill's write is in flight (free-in-flight), or before prefill has seen the
  ABORT, so the write it still sends lands in pages decode gave up (write-unowned).
- C4 (#38961, open): with deferred release, the release timeout ("releasing anyway") fires
  while prefill may still write, because Mooncake cannot cancel a write; still in 0.5.23. So
  are prefill's source pages, freed on a local failure while a timed-out batch still reads them.

Liveness (docs/specs/sglang_disagg.md, "Liveness"): every page comes back, every transfer
lands and every request leaves both nodes in every release, under weak fairness of the
protocol's own steps (its timeouts included); `held-decode-pages` measures what the waiting
costs (0.5.20: 2 pages until the waiting timeout; 0.5.21 on: held for the drain ACK).

Abstractions (sound for the properties checked, argued in docs/specs/sglang_disagg.md):
- lengths are in pages; a chunk is one page; the placeholder is 1 page; a prompt of n pages is
  sent as n chunks, the last one carrying the aux slot;
- one prefill rank, one decode rank, one Mooncake session: a room's chunks are sent in order,
  one at a time (the worker is synchronous per chunk), so at most one write per request is in
  flight; bootstrap rooms are never reused (one room per request), so generations (S6) and
  the metadata slot (S7) are not modelled;
- intake on both nodes and decode's preallocation (with the TransferInfo to prefill) are one
  step; prefill keeps its copy of decode's page list after decode lets the pages go (the
  belief the C3/C4 writes use);
- adding a chunk to the queue, the worker dequeuing it and posting the RDMA write is one step
  (the worker checks for Failed at dequeue, and counts the chunk outstanding before it); the
  write landing and batch_transfer_sync returning 0 is one step; the Success status, prefill's
  inflight-queue poll and its release of the source pages are one step; decode's commit,
  decoding and release are one step;
- time is not modelled: every timeout can fire at any moment its guard allows (the sound
  over-approximation: a 30 s timeout is not a proof that a write has stopped);
- the radix cache, retraction, staging buffers, host destinations and PP/TP fan-out are left
  out; decode's pool holds the whole context window, so decode never rejects at its door.
"""

from enum import IntEnum

from ownership import (
    If,
    Min,
    Request,
    Spec,
    action,
    any_of,
    count,
    first,
    fix,
    ints,
    leads_to,
    measure,
    param,
    per_request,
    pool,
    sometimes,
    without,
)


class P(IntEnum):
    """Where the request is on the prefill node."""

    NEW = 0        # not arrived
    QUEUED = 1     # PrefillBootstrapQueue: bootstrapped by decode's TransferInfo, not yet run
    SENDING = 2    # forwarded: its KV is in prefill pages; chunks go out (inflight queue)
    RELEASED = 3   # concluded (Success or Failed) and its prefill pages released
    RETIRED = 4    # rejected with 400 (at the door, or after the forward); decode is not told


class D(IntEnum):
    """Where the request is on the decode node."""

    NEW = 0        # not arrived
    WAITING = 1    # pages reserved, TransferInfo sent: DecodeTransferQueue
    DONE = 2       # committed, decoded, pages released
    HELD = 3       # failed or aborted; pages held for the drain ACK or the timeout (D5)
    RELEASED = 4   # failed or aborted; pages released


class Worker(IntEnum):
    """Prefill's Mooncake transfer worker, for this request's room."""

    IDLE = 0       # no chunk outstanding
    BUSY = 1       # inside batch_transfer_sync for a chunk
    STUCK = 2      # the batch timed out but is still running; tracked only by the proposed fixes


class Told(IntEnum):
    """The last KV status prefill sent to decode (send_kv_status_message)."""

    NONE = 0
    SUCCESS = 1
    FAILED = 2


class Abort(IntEnum):
    """Decode's ABORT and prefill's ABORT_ACK for this room."""

    NONE = 0       # no ABORT sent
    SENT = 1       # ABORT on its way to prefill
    TARGET = 2     # prefill registered the ack target; the ACK waits for the drain
    ACKED = 3      # prefill sent ABORT_ACK


def chunk(pages, k):
    """The k-th page (counting from 0) of a page set, as a set: empty if there is none."""
    return without(first(pages, k + 1), first(pages, k))


class SGLangDisagg(Spec):
    """SGLang PD disaggregation end to end: intake, chunked transfer, aborts, deferred release."""

    requests = param(2, "concurrent requests", minimum=1)
    context = param(2, "advertised context window, in pages (1,048,576 tokens in the incident)", minimum=1)
    prefill_pool = param(2, "prefill KV capacity, in pages: prefill rejects longer prompts (681,280 tokens in the incident; set it below context for C1)", minimum=1)
    decode_pool = param(2, "decode KV pool, in pages (at least the context window)", minimum=1)
    client_aborts = param(2, "client aborts on decode: 0 none, 1 only before prefill forwards the request, 2 at any time")
    transfer_timeouts = param(1, "1: a Mooncake batch may time out (batch_transfer_sync returns -1) while its write is still in flight; 0: never")

    post_forward_retire = fix("0.5.20, #36988: prefill retires an aborted request after its forward instead of sending it (decode then waits for its timeout)")
    door_retire = fix("0.5.21, #38935: prefill retires a rejected request at the door (is_unadmitted_reject); it never bootstraps")
    deferred_release = fix("0.5.21 (on by default), #35049: decode holds an aborted request's pages until prefill's drain ACK or the release timeout; prefill ACKs only once the room's chunks have drained")
    defer_all_failures = fix("0.5.21: failures decode did not initiate are deferred too (ensure_abort_notified(force_arm=True) in pop_transferred; the gap #38961 reports as its item 4)")
    poison_unsettled = fix("0.5.22: after a failed send prefill never ACKs the room (_poison_unsettled_send), so decode falls back to its timeout")
    coverage_check = fix("#38704 (proposed): decode verifies at commit that prefill sent every reserved page, and aborts otherwise")
    quiesced_release = fix("proposed (for the hazard #38961 names: the timeout path is itself a use-after-free window; what 0.5.21+ already does for host destinations; LightLLM #1406): decode releases a held request only on the drain ACK, never on the timeout; prefill tracks a timed-out batch until it settles and ACKs after")
    hold_source = fix("proposed (#38961 'hold prefill source pages'; LightLLM #1406): prefill keeps its source pages until its transfer has settled, also after a timed-out batch")

    releases = {  # the release table of docs/protocols/sglang-pd.md, from diffing the wheels
        "0.5.19": [],
        "0.5.20": ["post-forward-retire"],
        "0.5.21": ["post-forward-retire", "door-retire", "deferred-release", "defer-all-failures"],
        "0.5.22": ["post-forward-retire", "door-retire", "deferred-release", "defer-all-failures", "poison-unsettled"],
        "0.5.23": ["post-forward-retire", "door-retire", "deferred-release", "defer-all-failures", "poison-unsettled"],
    }

    #: Liveness (docs/specs/sglang_disagg.md, "Liveness"): every page owned on either node is
    #: free again later, and every transfer lands, on every behaviour in which each step of the
    #: protocol that stays enabled happens (weak fairness: the actions marked fair=True, the
    #: timeouts included); arrivals, client aborts and Mooncake's timeouts are the environment.
    liveness = ("eventually-released", "eventually-landed")

    prefill = pool(context, order="lowest", help="prefill's KV pages")
    decode = pool(decode_pool, order="lifo", warm=True,
                  help="decode's KV pages; freed pages are reused first (PagedTokenToKVPoolAllocator prepends them)")

    Length = ints(1, context)  # a prompt length, in pages

    p_stage = per_request(P, P.NEW)
    d_stage = per_request(D, D.NEW)
    prompt = per_request(ints(0, context))      # pages decode reserves (decode's prompt length)
    sent = per_request(ints(0, context))        # pages prefill will send (its own prompt length);
                                                # fewer than prompt: rejected, the placeholder
    p_table = per_request(prefill)              # prefill's pages for the request
    table = per_request(decode)                 # decode's pages; prefill's copy (TransferInfo) outlives them
    chunks = per_request(ints(0, context))      # chunks whose write completed (curr_idx)
    worker = per_request(Worker, Worker.IDLE)
    rdma = per_request(bool, False)             # a Mooncake batch of the room is running (the
                                                # transfer engine's own state; = s.in_flight(r))
    told = per_request(Told, Told.NONE)
    failed = per_request(bool, False)           # prefill's request_status[room] is Failed
    poisoned = per_request(bool, False)         # the room is in _deferred_ack_poisoned_rooms
    abort = per_request(Abort, Abort.NONE)

    # -- helpers (plain functions of the state, traced with the actions that call them) -------

    def tracks_stuck(self):
        """A proposed fix keeps the handle of a timed-out batch and waits for it to settle."""
        return self.quiesced_release or self.hold_source

    def drained(self, s, r):
        """Nothing of the room is outstanding for the ACK (_maybe_ack_drained_abort)."""
        unpoisoned = True if self.tracks_stuck() else ~s.poisoned[r]
        return (s.worker[r] == Worker.IDLE) & unpoisoned

    def ack_if_drained(self, s, r):
        """_maybe_ack_drained_abort: a registered ack target fires once the room has drained."""
        fire = (s.abort[r] == Abort.TARGET) & self.drained(s, r)
        s.abort[r] = If(fire, Abort.ACKED, s.abort[r])

    def forget_if_gone(self, s, r):
        """Once a request has left both nodes and nothing of it is in flight, its leftover
        bookkeeping (counters, status, ABORT state, prefill's copy of the page list) can never
        matter again: reset it, so that states differing only there are one state."""
        gone = self.finished(s, r) & ~s.rdma[r] & (s.worker[r] == Worker.IDLE)
        for slot in ("prompt", "sent", "chunks", "told", "abort", "table"):
            getattr(s, slot)[r] = If(gone, 0, getattr(s, slot)[r])
        for flag in ("failed", "poisoned"):
            getattr(s, flag)[r] = If(gone, False, getattr(s, flag)[r])
        s.p_stage[r] = If(gone, P.RELEASED, s.p_stage[r])

    # -- intake and preallocation --------------------------------------------------------------

    @action(actor="router")
    def arrive(self, s, r: Request, n: Length):
        """Scheduler._handle_generate_request -> validate_input_length on both nodes, then
        DecodePreallocQueue.pop_preallocated -> _pre_alloc -> receiver.send_metadata.

        Prefill admits prompts up to its KV capacity; a longer one is marked aborted
        (Req.set_finish_with_abort: to_finish=FINISH_ABORT(400)) and its input replaced by a
        one-token placeholder. With #38935 PrefillBootstrapQueue.add retires it
        (is_unadmitted_reject -> retire_unadmitted_request): no sender, no room, decode not
        told. Decode reserves its pages (alloc_extend; the request waits while they are short)
        and sends their ids to prefill (TransferInfo), which keeps that list for the room's life."""
        s.require(s.p_stage[r] == P.NEW)
        s.require(s.d_stage[r] == D.NEW)
        rejected = n > Min(self.prefill_pool, self.context)
        s.sent[r] = If(rejected, 1, n)                    # the one-page placeholder
        s.prompt[r] = n
        s.p_stage[r] = If(rejected & self.door_retire, P.RETIRED, P.QUEUED)
        s.table[r] = s.alloc("decode", r, n)
        s.d_stage[r] = D.WAITING

    # -- prefill: forward and chunked transfer -------------------------------------------------

    @action(actor="prefill", fair=True)
    def prefill_forward(self, s, r: Request):
        """PrefillBootstrapQueue.pop_bootstrapped -> finalize_bootstrap, the forward
        (alloc_extend, chunked prefill) and process_batch_result_disagg_prefill.

        num_pages comes from prefill's OWN prompt length (_num_pages_to_send). With #36988 an
        aborted request is retired after the forward (_retire_aborted_prefill_result):
        sender.abort() is local only, so decode is not told."""
        s.require(s.p_stage[r] == P.QUEUED)
        s.require(~s.failed[r])
        retire = (s.sent[r] < s.prompt[r]) & self.post_forward_retire   # rejected: the placeholder
        pages = s.alloc("prefill", r, If(retire, 0, s.sent[r]))
        s.write("prefill", r, pages)
        s.p_table[r] = pages
        s.p_stage[r] = If(retire, P.RETIRED, P.SENDING)
        self.forget_if_gone(s, r)

    @action(actor="prefill", fair=True)
    def send_chunk(self, s, r: Request):
        """send_kv_chunk -> MooncakeKVManager.add_transfer_request -> transfer_worker ->
        send_kvcache: RDMA-write the next chunk into dst_kv_indices[index_slice].

        add_transfer_request and the worker both drop a chunk of a Failed room; the worker counts
        it outstanding (_staging_outstanding) before it checks."""
        s.require(s.p_stage[r] == P.SENDING)
        s.require((s.worker[r] == Worker.IDLE) & ~s.failed[r])
        s.require(s.chunks[r] < s.sent[r])
        k = s.chunks[r]
        s.send(r, "prefill", chunk(s.p_table[r], k), "decode", chunk(s.table[r], k))
        s.worker[r] = Worker.BUSY
        s.rdma[r] = True

    @action(actor="transfer", fair=True)
    def chunk_completes(self, s, r: Request):
        """The Mooncake batch completes: its RDMA write lands and batch_transfer_sync returns 0
        to transfer_worker. On the last chunk send_aux and conclude_transfer(Success); then
        process_disagg_prefill_inflight_queue polls Success and releases prefill's KV
        (release_kv_cache). _maybe_ack_drained_abort once the outstanding count drops."""
        s.require(s.rdma[r])
        s.require(s.worker[r] == Worker.BUSY)
        s.land(r)
        s.rdma[r] = False
        done = s.chunks[r] + 1
        s.chunks[r] = done
        s.worker[r] = Worker.IDLE
        success = (done == s.sent[r]) & ~s.failed[r]      # Failed is absorbing (update_status)
        s.told[r] = If(success, Told.SUCCESS, s.told[r])
        s.free("prefill", r, If(success, s.p_table[r], 0))
        s.p_table[r] = If(success, 0, s.p_table[r])
        s.p_stage[r] = If(success, P.RELEASED, s.p_stage[r])
        self.ack_if_drained(s, r)
        self.forget_if_gone(s, r)

    @action(actor="transfer", fair=True)
    def late_write_lands(self, s, r: Request):
        """A timed-out Mooncake batch (TransferEnginePy::batchTransferSync returned -1, the batch
        still running) completes after all: nothing cancels it. It lands after prefill marked
        the room Failed, after decode gave its pages up (MooncakeKVManager._poison_unsettled_send:
        "a failed send may still be writing decode's pages")."""
        s.require(s.rdma[r])
        s.require(s.worker[r] != Worker.BUSY)
        s.land(r)
        s.rdma[r] = False
        self.forget_if_gone(s, r)

    # -- decode: commit, abort, failure, deferred release --------------------------------------

    @action(actor="decode", fair=True)
    def decode_commit(self, s, r: Request):
        """DecodeTransferQueue.pop_transferred -> _commit_transfer_to_req, then decoding to the
        end and release_kv_cache.

        Decode checks the aux slot's bootstrap_room, not how many pages were written. With
        #38704 it compares the pages sent with the pages reserved and aborts on a shortfall."""
        s.require(s.d_stage[r] == D.WAITING)
        s.require(s.told[r] == Told.SUCCESS)
        ok = (s.sent[r] >= s.prompt[r]) if self.coverage_check else True
        table = s.table[r]
        s.read("decode", r, If(ok, table, 0))
        s.free("decode", r, table)
        s.d_stage[r] = If(ok, D.DONE, D.RELEASED)
        self.forget_if_gone(s, r)

    @action(actor="client")
    def decode_abort(self, s, r: Request):
        """Scheduler.abort_request on the transfer queue -> CommonKVReceiver.abort (#27372: an
        ABORT to prefill), then pop_transferred sees Failed: _defer_release when deferred
        release is on (#35049), else release_kv_cache at once (C3)."""
        s.require(self.client_aborts >= 1)
        s.require(s.d_stage[r] == D.WAITING)
        if self.client_aborts == 1:
            s.require(s.p_stage[r] == P.QUEUED)   # the client gives up before prefill forwards
        s.abort[r] = Abort.SENT
        if self.deferred_release:
            s.d_stage[r] = D.HELD
        else:
            s.free("decode", r, s.table[r])
            s.d_stage[r] = D.RELEASED
        self.forget_if_gone(s, r)

    @action(actor="decode", fair=True)
    def decode_on_failure(self, s, r: Request):
        """pop_transferred sees a failure decode did not initiate: prefill's Failed status
        (apply_prefill_status), or SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) after prefill
        retired the request silently. Released at once ("a prefill-initiated failure has
        already stopped writing"), unless 0.5.21's force_arm defers it too."""
        s.require(s.d_stage[r] == D.WAITING)
        s.require((s.told[r] == Told.FAILED) | (s.p_stage[r] == P.RETIRED))
        if self.deferred_release and self.defer_all_failures:
            s.abort[r] = Abort.SENT                 # ensure_abort_notified(force_arm=True)
            s.d_stage[r] = D.HELD
        else:
            s.free("decode", r, s.table[r])
            s.d_stage[r] = D.RELEASED
        self.forget_if_gone(s, r)

    @action(actor="decode", fair=True)
    def decode_release_on_ack(self, s, r: Request):
        """resolve_deferred_releases: is_abort_release_safe (the ABORT_ACK arrived) -> _do_release."""
        s.require(s.d_stage[r] == D.HELD)
        s.require(s.abort[r] == Abort.ACKED)
        s.free("decode", r, s.table[r])
        s.d_stage[r] = D.RELEASED
        self.forget_if_gone(s, r)

    @action(actor="decode", fair=True)
    def decode_release_timeout(self, s, r: Request):
        """resolve_deferred_releases: the deadline (SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_
        RELEASE_TIMEOUT, 30 s) passed without the ACK: "releasing anyway" -> _do_release (C4)."""
        s.require(not self.quiesced_release)
        s.require(s.d_stage[r] == D.HELD)
        s.free("decode", r, s.table[r])
        s.d_stage[r] = D.RELEASED
        self.forget_if_gone(s, r)

    # -- prefill: failures and the ABORT -------------------------------------------------------

    @action(actor="prefill")
    def worker_timeout(self, s, r: Request):
        """transfer_worker: batch_transfer_sync returns -1 on its wall-clock timeout while the
        batch is still running (freeBatchID refuses a busy batch) -> conclude_failure: room
        Failed and a Failed status to decode. 0.5.22: _poison_unsettled_send."""
        s.require(self.transfer_timeouts >= 1)
        s.require(s.rdma[r])
        s.require(s.worker[r] == Worker.BUSY)
        s.failed[r] = True
        s.told[r] = Told.FAILED
        s.poisoned[r] = s.poisoned[r] | self.poison_unsettled
        s.worker[r] = Worker.STUCK if self.tracks_stuck() else Worker.IDLE   # else: handle dropped
        self.ack_if_drained(s, r)

    @action(actor="prefill", fair=True)
    def batch_settles(self, s, r: Request):
        """Proposed fixes only, no source function yet (#38961; LightLLM #1406; Mori's drain
        queue in #37077): prefill keeps the timed-out batch's handle (MultiTransport::freeBatchID
        refuses a busy batch anyway) and polls its status until it is no longer in progress,
        then drops the outstanding count."""
        s.require(self.tracks_stuck())
        s.require(s.worker[r] == Worker.STUCK)
        s.require(~s.rdma[r])
        s.worker[r] = Worker.IDLE
        self.ack_if_drained(s, r)
        self.forget_if_gone(s, r)

    @action(actor="prefill", fair=True)
    def prefill_release_failed(self, s, r: Request):
        """pop_bootstrapped -> handle_bootstrap_failure, or process_disagg_prefill_inflight_queue
        -> handle_inflight_transfer_failure: prefill polls Failed, releases its KV
        (release_kv_cache) and clears the sender, whether or not the worker is still inside
        batch_transfer_sync (C4 (d)). With the proposed hold-source fix it waits for the drain."""
        s.require(s.failed[r])
        s.require((s.p_stage[r] == P.QUEUED) | (s.p_stage[r] == P.SENDING))
        if self.hold_source:
            s.require(s.worker[r] == Worker.IDLE)
        s.free("prefill", r, s.p_table[r])
        s.p_table[r] = 0
        s.p_stage[r] = P.RELEASED
        self.forget_if_gone(s, r)

    @action(actor="prefill", fair=True)
    def prefill_on_abort(self, s, r: Request):
        """The ABORT arrives: MooncakeKVManager's bootstrap thread (0.5.22+: _handle_abort_notification).

        An active room (not concluded) is marked Failed first. Deferred: register the ack target
        and _maybe_ack_drained_abort; legacy: ABORT_ACK at once, not drain-aware."""
        s.require(s.abort[r] == Abort.SENT)
        active = (s.p_stage[r] == P.QUEUED) | (s.p_stage[r] == P.SENDING)
        s.failed[r] = s.failed[r] | active
        if self.deferred_release:
            s.abort[r] = If(self.drained(s, r), Abort.ACKED, Abort.TARGET)
        else:
            s.abort[r] = Abort.ACKED

    # -- narrative ----------------------------------------------------------------------------

    def describe(self, s, step):
        """Each step of a trace in the protocol's words: `ownership check` prints it beside the step."""
        r, n, b = step.args.get("r"), step.args.get("n"), step.before
        if step.action is None:
            return (f"prefill pool: {_count(self.context, 'page')} (context), admits up to"
                    f" {min(self.prefill_pool, self.context)} (prefill_pool); decode pool:"
                    f" {_count(self.decode_pool, 'page')} of old KV (r0)")
        if step.action == "arrive":
            head = (f"prefill rejects {_count(n, 'page')}; its placeholder is {_count(s.sent[r], 'page')}"
                    if s.sent[r] < n else f"prefill admits {_count(n, 'page')}")
            if s.p_stage[r] == "RETIRED":
                head = f"prefill rejects {_count(n, 'page')} and retires the request at the door"
            return f"{head}; decode reserves pages {s.table[r]}"
        if step.action == "prefill_forward":
            if s.p_stage[r] == "RETIRED":
                return "prefill retires the aborted request after its forward; decode is not told"
            return f"prefill computes {_count(len(s.p_table[r]), 'page')}"
        if step.action == "send_chunk":
            return f"prefill writes chunk {b.chunks[r] + 1} into decode {s.decode.in_flight(r).listed}"
        if step.action == "chunk_completes":
            landed = b.decode.in_flight(r).listed
            return f'the write lands in decode {landed}; "Success"' if s.told[r] == "SUCCESS" and b.told[r] != "SUCCESS" \
                else f"the write lands in decode {landed}"
        if step.action == "late_write_lands":
            return f"a timed-out write lands after all, in decode {b.decode.in_flight(r).listed}"
        if step.action == "decode_commit":
            if s.d_stage[r] == "DONE":
                return f"decode attends over {b.table[r].listed} and frees them"
            return f"decode finds {b.sent[r]} of {_count(b.prompt[r], 'page')} sent and aborts the request"
        if step.action == "decode_abort":
            if s.d_stage[r] == "HELD":
                return f"the client aborts; decode sends ABORT and holds {b.table[r].listed} for the ACK"
            return f"the client aborts; decode sends ABORT and frees {b.table[r].listed} at once"
        if step.action == "decode_on_failure":
            why = "prefill said Failed" if b.told[r] == "FAILED" else "the waiting timeout fires"
            if s.d_stage[r] == "HELD":
                return f"{why}; decode holds {b.table[r].listed} for the ACK"
            return f"{why}; decode frees {b.table[r].listed}"
        if step.action == "decode_release_on_ack":
            return f"the ABORT_ACK arrived: decode frees {b.table[r].listed}"
        if step.action == "decode_release_timeout":
            return f"no ABORT_ACK in time: decode frees {b.table[r].listed} anyway"
        if step.action == "worker_timeout":
            return "prefill's batch times out while its write is still running; prefill tells decode Failed"
        if step.action == "batch_settles":
            return "the timed-out batch settles; prefill drops it from the outstanding count"
        if step.action == "prefill_release_failed":
            return f"prefill sees Failed and frees {b.p_table[r].listed}"
        if step.action == "prefill_on_abort":
            return "prefill gets the ABORT" + ("; it sends ABORT_ACK" if s.abort[r] == "ACKED" else "; the ACK waits for the drain")
        return None

    # -- properties ----------------------------------------------------------------------------

    def finished(self, s, r):
        """A request has left both nodes: it must then own no page (leak)."""
        p_done = (s.p_stage[r] == P.RELEASED) | (s.p_stage[r] == P.RETIRED)
        d_done = (s.d_stage[r] == D.DONE) | (s.d_stage[r] == D.RELEASED)
        return p_done & d_done

    def each(self, cond):
        """Some request satisfies cond(r)."""
        return any_of(*(cond(r) for r in range(1, self.requests + 1)))

    @sometimes
    def a_request_completes(self, s):
        """Some request is decoded to the end."""
        return self.each(lambda r: s.d_stage[r] == D.DONE)

    @sometimes
    def a_freed_page_is_reused(self, s):
        """A decode page freed by one request is handed to another while holding the first's KV."""
        return s.reused("decode") != 0

    @sometimes
    def a_prompt_is_sent_in_two_chunks(self, s):
        """Some request's KV crosses in two chunks (chunked transfer is exercised)."""
        return self.each(lambda r: s.chunks[r] >= 2)

    @sometimes
    def an_abort_ack_arrives(self, s):
        """Prefill answers some decode ABORT with an ABORT_ACK."""
        return self.each(lambda r: s.abort[r] == Abort.ACKED)

    @sometimes
    def a_timed_out_write_is_still_in_flight(self, s):
        """Prefill reported a transfer Failed while its RDMA write is still running (Mooncake)."""
        return self.each(lambda r: (s.told[r] == Told.FAILED) & s.rdma[r])


    @leads_to
    def every_request_leaves(self, s, r):
        """A request that arrived leaves both nodes (decoded, or failed and released)."""
        return s.d_stage[r] != D.NEW, self.finished(s, r)

    @measure
    def held_decode_pages(self, s):
        """Decode pages held for requests nobody serves any more: HELD for the ABORT_ACK or the
        release timeout, or waiting for a request prefill retired without a word (until the
        300 s waiting timeout): 0.5.20's cost, and deferred release's."""
        total = 0
        for r in range(1, self.requests + 1):
            held = (s.d_stage[r] == D.HELD) | ((s.d_stage[r] == D.WAITING) & (s.p_stage[r] == P.RETIRED))
            total = total + If(held, count(s.table[r]), 0)
        return total


def _count(k, word):
    """'1 page', '3 pages': a number of things in a narrative."""
    return f"{k} {word}" if k == 1 else f"{k} {word}s"
