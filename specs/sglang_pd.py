"""SGLang prefill/decode disaggregation: intake, preallocation, KV transfer, commit (the GLM-5.3 leak).

Models sglang 0.5.19 to 0.5.23, Mooncake backend, default "early" decode allocation, read from
the released wheels (python/sglang/srt/disaggregation/{prefill,decode}.py,
managers/scheduler.py, managers/utils.py, mem_cache/allocator/paged.py); see
docs/protocols/sglang-pd.md sections 4, 5 and 9, and docs/specs/sglang_pd.md.

The bug it reproduces (C1 in docs/bugs.md; the Cloudflare GLM-5.3 incident, docs/incident.md):
prefill's KV pool is smaller than the advertised context window, so prefill rejects a long
prompt that decode accepts. Prefill replaces the prompt with a one-token placeholder
(Req.set_finish_with_abort sets to_finish, not finished_reason), bootstraps it, computes one
page and sends it with "Success"; decode had reserved ceil(L/page) pages, commits, and attends
over pages that still hold KV of earlier requests: a cross-request leak with HTTP 200. Issues
#30233, #32605; fixed by #36988 (0.5.20) and #38935 (0.5.21); hardening proposed in #38704.

Abstractions (sound for the properties checked here, see docs/specs/sglang_pd.md):
- lengths are in pages (ceil(tokens / page_size) already applied); the placeholder is 1 page;
- one prefill rank and one decode rank; the ZMQ/bootstrap handshake is one step: prefill
  reads decode's block table (the TransferInfo page list) when it sends;
- prefill's page pool has room for one prompt of the context window; its admission limit is
  its real KV capacity (`prefill_pool`), as validate_input_length computes it;
- the decode waiting timeout fires only once prefill will never answer (it retired the
  request); early timeouts while a write is in flight belong to issue #6's transfer spec;
- decode's pool is warm: every page starts holding KV of an earlier request (r0), because a
  real pool is never zeroed.
"""

from enum import IntEnum

from ownership import (
    If,
    Min,
    Request,
    Spec,
    action,
    count,
    first,
    fix,
    ints,
    measure,
    param,
    per_request,
    pool,
    sometimes,
)


class P(IntEnum):
    """Where the request is on the prefill node."""

    NEW = 0        # not arrived
    QUEUED = 1     # PrefillBootstrapQueue: waiting for decode's TransferInfo
    FORWARDED = 2  # prefilled: its KV is in prefill pages
    SENDING = 3    # send_kv_chunk(last_chunk=True): RDMA write in flight
    DONE = 4       # transfer concluded Success, prefill pages released
    RETIRED = 5    # rejected with 400 (at the door, or after the forward); no send


class D(IntEnum):
    """Where the request is on the decode node."""

    NEW = 0        # not arrived
    QUEUED = 1     # DecodePreallocQueue: waiting for pages
    WAITING = 2    # pages reserved, TransferInfo sent: DecodeTransferQueue
    RUNNING = 3    # committed: decoding over its block table
    DONE = 4       # finished, pages released
    RETIRED = 5    # rejected with 400 at the door (0.5.21+)
    ABORTED = 6    # aborted (waiting timeout, or the coverage check), pages released


class SGLangPD(Spec):
    """SGLang PD disaggregation: a prompt that prefill rejects but decode accepts."""

    requests = param(2, "concurrent requests", minimum=1)
    context = param(3, "advertised context window, in pages (1,048,576 tokens in the incident)", minimum=1)
    prefill_pool = param(2, "prefill's real KV capacity, in pages: it rejects longer prompts (681,280 tokens in the"
                            " incident); its pool in the model holds the context window instead (`context` pages)", minimum=1)
    decode_pool = param(4, "decode KV pool, in pages", minimum=1)

    post_forward_retire = fix("0.5.20, #36988: prefill retires an aborted request after its forward instead of sending it (decode then waits for its timeout)")
    door_retire = fix("0.5.21, #38935: a rejected request is retired at the door of each node (is_unadmitted_reject) and never enters the handoff")
    pool_fits_context = fix("configuration: the prefill pool holds the whole context window (the incident's fix: about 2.04 M tokens)")
    coverage_check = fix("#38704 (proposed): decode verifies at commit that prefill sent every reserved page, and aborts otherwise")

    releases = {  # the release table of docs/protocols/sglang-pd.md, from diffing the wheels
        "0.5.19": [],
        "0.5.20": ["post-forward-retire"],
        "0.5.21": ["post-forward-retire", "door-retire"],
        "0.5.22": ["post-forward-retire", "door-retire"],
        "0.5.23": ["post-forward-retire", "door-retire"],  # #38704's coverage check is still open
    }

    prefill = pool(context, order="lowest",
                   help="prefill's KV pages: one context window (`context`), room for any prompt it admits;"
                        " what it admits is `prefill_pool`")
    decode = pool(decode_pool, order="lifo", warm=True,
                  help="decode's KV pages; freed pages are reused first (PagedTokenToKVPoolAllocator prepends them)")

    Length = ints(1, context)  # a prompt length, in pages

    p_stage = per_request(P, P.NEW)
    d_stage = per_request(D, D.NEW)
    prompt = per_request(ints(0, context))      # pages, as decode sees the prompt
    sent = per_request(ints(0, context))        # pages prefill believes the prompt has
    aborted = per_request(bool, False)          # prefill's to_finish = FINISH_ABORT(400)
    p_table = per_request(prefill)              # prefill's pages for the request
    d_table = per_request(decode)               # decode's block table: a belief

    @action(actor="router")
    def arrive(self, s, r: Request, n: Length):
        """Scheduler._handle_generate_request -> validate_input_length, on both nodes.

        Prefill admits prompts up to its KV capacity; a longer one is marked aborted
        (Req.set_finish_with_abort: to_finish=FINISH_ABORT(400)) and its input replaced by a
        one-token placeholder. Decode checks the prompt against its own limits."""
        s.require((s.p_stage[r] == P.NEW) & (s.d_stage[r] == D.NEW))
        prefill_limit = self.context if self.pool_fits_context else Min(self.prefill_pool, self.context)
        decode_limit = Min(self.decode_pool, self.context)
        p_rejected = n > prefill_limit
        d_rejected = n > decode_limit
        s.aborted[r] = p_rejected
        s.sent[r] = If(p_rejected, 1, n)                  # the one-page placeholder
        s.prompt[r] = If(d_rejected, 1, n)
        retire = self.door_retire                          # is_unadmitted_reject -> retire_unadmitted_request
        s.p_stage[r] = If(p_rejected & retire, P.RETIRED, P.QUEUED)
        s.d_stage[r] = If(d_rejected & retire, D.RETIRED, D.QUEUED)

    @action(actor="decode")
    def decode_prealloc(self, s, r: Request):
        """DecodePreallocQueue.pop_preallocated -> _pre_alloc -> receiver.send_metadata.

        The pre-pass drops only requests whose finished_reason is FINISH_ABORT; then decode
        reserves ceil(L/page) pages (alloc_extend) and sends their ids to prefill."""
        s.require(s.d_stage[r] == D.QUEUED)
        s.d_table[r] = s.alloc("decode", r, s.prompt[r])
        s.d_stage[r] = D.WAITING

    @action(actor="prefill")
    def prefill_forward(self, s, r: Request):
        """PrefillBootstrapQueue.pop_bootstrapped -> finalize_bootstrap, then the forward.

        Bootstrapped once decode's TransferInfo arrived; num_pages comes from prefill's OWN
        prompt length (_num_pages_to_send). The scheduler allocates pages (alloc_extend) and
        the forward computes the KV into them."""
        s.require((s.p_stage[r] == P.QUEUED) & (s.d_stage[r] == D.WAITING))
        pages = s.alloc("prefill", r, s.sent[r])
        s.write("prefill", r, pages)
        s.p_table[r] = pages
        s.p_stage[r] = P.FORWARDED

    @action(actor="prefill")
    def prefill_result(self, s, r: Request):
        """process_batch_result_disagg_prefill -> send_kv_chunk(last_chunk=True).

        With #36988 an aborted request is retired here instead (_retire_aborted_prefill_result:
        sender.abort() is local only, so decode is not told). Otherwise the transfer worker
        RDMA-writes the pages prefill believes in into decode's first destination pages."""
        s.require(s.p_stage[r] == P.FORWARDED)
        retire = s.aborted[r] & self.post_forward_retire
        dst = first(s.d_table[r], s.sent[r])            # dst_kv_indices[index_slice]
        src = first(s.p_table[r], count(dst))           # "len(dst) < len(src)": truncate the source
        s.send(r, "prefill", If(retire, 0, src), "decode", If(retire, 0, dst))
        s.free("prefill", r, If(retire, s.p_table[r], 0))
        s.p_table[r] = If(retire, 0, s.p_table[r])
        s.p_stage[r] = If(retire, P.RETIRED, P.SENDING)

    @action(actor="transfer")
    def transfer_done(self, s, r: Request):
        """MooncakeKVManager.transfer_worker: the write lands, conclude_transfer(Success); then
        process_disagg_prefill_inflight_queue releases prefill's KV (release_kv_cache)."""
        s.require(s.p_stage[r] == P.SENDING)
        s.land(r)
        s.free("prefill", r, s.p_table[r])
        s.p_table[r] = 0
        s.p_stage[r] = P.DONE

    @action(actor="decode")
    def decode_commit(self, s, r: Request):
        """DecodeTransferQueue.pop_transferred -> _commit_transfer_to_req, then the first
        decode step attends over the whole block table.

        Decode checks the aux slot's bootstrap_room, not how many pages were written. With
        #38704 it compares the pages sent with the pages reserved and aborts on a shortfall."""
        s.require((s.d_stage[r] == D.WAITING) & (s.p_stage[r] == P.DONE))
        ok = (s.sent[r] >= s.prompt[r]) if self.coverage_check else True
        table = s.d_table[r]
        s.read("decode", r, If(ok, table, 0))
        s.free("decode", r, If(ok, 0, table))
        s.d_table[r] = If(ok, table, 0)
        s.d_stage[r] = If(ok, D.RUNNING, D.ABORTED)

    @action(actor="decode")
    def decode_finish(self, s, r: Request):
        """The request finishes decoding: release_kv_cache frees its pages."""
        s.require(s.d_stage[r] == D.RUNNING)
        s.free("decode", r, s.d_table[r])
        s.d_table[r] = 0
        s.d_stage[r] = D.DONE

    @action(actor="decode")
    def decode_timeout(self, s, r: Request):
        """DecodeTransferQueue: SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) fires because
        prefill retired the request without telling decode -> abort(500), _release_request."""
        s.require((s.d_stage[r] == D.WAITING) & (s.p_stage[r] == P.RETIRED))
        s.free("decode", r, s.d_table[r])
        s.d_table[r] = 0
        s.d_stage[r] = D.ABORTED

    def finished(self, s, r):
        """A request has left both nodes: it must then own no page (leak)."""
        p_done = (s.p_stage[r] == P.DONE) | (s.p_stage[r] == P.RETIRED)
        d_done = (s.d_stage[r] == D.DONE) | (s.d_stage[r] == D.RETIRED) | (s.d_stage[r] == D.ABORTED)
        return p_done & d_done

    def describe(self, s, step):
        """Each step of a trace in the protocol's words: `ownership check` prints it beside the step."""
        r, n = step.args.get("r"), step.args.get("n")
        before = step.before
        if step.action is None:
            limit = self.context if self.pool_fits_context else min(self.prefill_pool, self.context)
            admits = "context" if self.pool_fits_context else "prefill_pool"
            return (f"prefill pool: {_count(self.context, 'page')} (context), admits up to {limit} ({admits});"
                    f" decode pool: {_count(self.decode_pool, 'page')} of old KV (r0)")
        if step.action == "arrive":
            told = []
            if s.aborted[r] and s.p_stage[r] == "RETIRED":
                told.append(f"prefill rejects {_count(n, 'page')} and retires the request at the door")
            elif s.aborted[r]:
                told.append(f"prefill rejects {_count(n, 'page')}; its placeholder is {_count(s.sent[r], 'page')}")
            if s.d_stage[r] == "RETIRED":
                told.append(f"decode rejects {_count(n, 'page')} at the door")
            elif s.prompt[r] != n:
                told.append(f"decode rejects {_count(n, 'page')}; its placeholder is {_count(s.prompt[r], 'page')}")
            return "; ".join(told) or f"prefill and decode admit a prompt of {_count(n, 'page')}"
        if step.action == "decode_prealloc":
            return f"decode reserves pages {s.d_table[r]}"
        if step.action == "prefill_forward":
            return f"prefill computes {_count(len(s.p_table[r]), 'page')}"
        if step.action == "prefill_result":
            if s.p_stage[r] == "RETIRED":
                return "prefill retires the aborted request after its forward; decode is not told"
            into = s.decode.in_flight(r)
            return f"... and sends {'it' if len(into) == 1 else 'them'} into decode {into.listed}"
        if step.action == "transfer_done":
            return f'"Success": the KV lands in decode {before.decode.in_flight(r).listed}'
        if step.action == "decode_commit":
            if s.d_stage[r] == "RUNNING":
                return f"decode attends over {s.d_table[r].listed}"
            return f"decode finds {s.sent[r]} of {_count(s.prompt[r], 'page')} sent and aborts the request"
        if step.action == "decode_finish":
            return f"decode finishes the request and frees {before.d_table[r].listed}"
        if step.action == "decode_timeout":
            return (f"decode's waiting timeout fires (prefill retired the request without telling it);"
                    f" decode frees {before.d_table[r].listed}")
        return None

    @sometimes
    def a_request_completes(self, s):
        """Some request is decoded to the end."""
        done = False
        for r in range(1, self.requests + 1):
            done = done | (s.d_stage[r] == D.DONE)
        return done

    @sometimes
    def a_freed_page_is_reused(self, s):
        """A decode page freed by one request is handed to another while holding the first's KV."""
        return s.reused("decode") != 0

    @measure
    def stranded_decode_pages(self, s):
        """Decode pages reserved for requests that prefill retired without telling decode: safe,
        but held until SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) fires (0.5.20's cost)."""
        total = 0
        for r in range(1, self.requests + 1):
            stranded = (s.p_stage[r] == P.RETIRED) & (s.d_stage[r] == D.WAITING)
            total = total + If(stranded, count(s.d_table[r]), 0)
        return total


def _count(k, word):
    """'1 page', '3 pages': a number of things in a narrative."""
    return f"{k} {word}" if k == 1 else f"{k} {word}s"
