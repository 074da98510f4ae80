"""Adapters that drive SGLang's real prefill/decode handoff (sglang_pd_nodes) for specs/sglang_pd.py.

One method per action of the shipped spec, each the real calls it stands for:

| action | real calls (python/sglang/srt/...) |
|---|---|
| `arrive(r, n)` | on each node: `managers/utils.py:validate_input_length` against the node's limit (`TpModelWorker.get_worker_info`), `Req.set_finish_with_abort` when it fails, `Scheduler._add_request_to_queue` -> `PrefillBootstrapQueue.add` / `DecodePreallocQueue.add` (0.5.21+: `is_unadmitted_reject` -> `Scheduler.retire_unadmitted_request`) |
| `decode_prealloc(r)` | `DecodePreallocQueue.pop_preallocated` (`_pre_alloc`, `alloc_for_decode_prealloc`, `receiver.send_metadata`), `DecodeTransferQueue.extend` |
| `prefill_forward(r)` | `PrefillBootstrapQueue.pop_bootstrapped` (`finalize_bootstrap`, `sender.init`), then the forward stub (`ReqToTokenPool.alloc`, `alloc_extend`) |
| `prefill_result(r)` | `SchedulerDisaggregationPrefillMixin.process_batch_result_disagg_prefill` -> `send_kv_chunk(last_chunk=True)` (page ids from `kv_to_page_indices`), or 0.5.20+ `_retire_aborted_prefill_result` |
| `transfer_done(r)` | `process_disagg_prefill_inflight_queue`: the sender's Success, `release_kv_cache` |
| `decode_commit(r)` | `DecodeTransferQueue.pop_transferred` -> `_commit_transfer_to_req` |
| `decode_finish(r)` | `mem_cache/common.py:release_kv_cache` |
| `decode_timeout(r)` | the receiver concludes Failed (`abort()`), `pop_transferred` -> `prepare_abort`, `_release_request` |

Where the real queue does not do what the model's step does (it preallocates, bootstraps,
commits or concludes nothing), the adapter raises Refused: a divergence, since the model
allows the step. `observe` reports each node's pages (SGLang page p is the spec's p - 1).

The fake transfer backend never pairs a sender with a receiver and moves no bytes; the
order of the two sides (decode commits only after prefill's Success) is the spec's, and
`RecordingPDAdapter` pairs what each side said by bootstrap room (ownership.bridges.record.PDHandoff)
into the event log that `ownership monitor` checks.
"""

from __future__ import annotations

from typing import Any

import sglang_pd_nodes as nodes
from sglang.srt.disaggregation.base.conn import KVPoll
from sglang.srt.disaggregation.utils import DisaggregationMode

from ownership.bridges.record import EventLog, PDHandoff, record_sglang_allocator
from ownership.bridges.testing import Ownership, Refused

VERSION = nodes.VERSION


class PDAdapter:
    """The shipped spec sglang_pd's actions on the real queues of one prefill and one decode node."""

    #: across the runs of a check: prompts each node rejected, rejected prompts that entered the
    #: prefill bootstrap queue as the one-token placeholder, and requests aborted on decode
    prefill_rejected = 0
    decode_rejected = 0
    placeholders = 0
    aborted = 0

    @classmethod
    def reset(cls) -> None:
        cls.prefill_rejected = cls.decode_rejected = cls.placeholders = cls.aborted = 0

    def __init__(self, params: dict[str, int]) -> None:
        self.prefill, self.decode = nodes.nodes(context=params["context"], prefill_pool=params["prefill_pool"],
                                                decode_pool=params["decode_pool"])
        self.on_prefill: dict[int, Any] = {}  # request -> its Req on each node
        self.on_decode: dict[int, Any] = {}

    def rid(self, r: int) -> str:
        return f"r{r}"

    # -- the spec's actions -------------------------------------------------------------------

    def arrive(self, r: int, n: int) -> None:
        tokens, room = nodes.prompt_tokens(n), 100 + r
        p = self.on_prefill[r] = nodes.make_req(self.rid(r), tokens, room, DisaggregationMode.PREFILL)
        d = self.on_decode[r] = nodes.make_req(self.rid(r), tokens, room, DisaggregationMode.DECODE)
        counts = PDAdapter  # one tally for every adapter class of a check
        if self.prefill.admit(p):
            counts.prefill_rejected += 1
            counts.placeholders += p in self.prefill.queue.queue
        if self.decode.admit(d):
            counts.decode_rejected += 1

    def decode_prealloc(self, r: int) -> None:
        if not self.decode.prealloc(self.on_decode[r]):
            raise Refused(f"DecodePreallocQueue.pop_preallocated did not preallocate {self.rid(r)}")

    def prefill_forward(self, r: int) -> None:
        req = self.on_prefill[r]
        if not self.prefill.bootstrap(req):
            raise Refused(f"PrefillBootstrapQueue.pop_bootstrapped did not bootstrap {self.rid(r)}")
        if not self.prefill.forward(req):
            raise Refused(f"the prefill pool has no room for {self.rid(r)}'s {len(req.origin_input_ids)} tokens")

    def prefill_result(self, r: int) -> None:
        self.prefill.result(self.on_prefill[r])

    def transfer_done(self, r: int) -> None:
        if not self.prefill.conclude(self.on_prefill[r]):
            raise Refused(f"{self.rid(r)}'s KV sender did not conclude Success")

    def decode_commit(self, r: int) -> None:
        if not self.decode.commit(self.on_decode[r]):
            raise Refused(f"DecodeTransferQueue.pop_transferred did not commit {self.rid(r)}")

    def decode_finish(self, r: int) -> None:
        self.decode.finish(self.on_decode[r])

    def decode_timeout(self, r: int) -> None:
        self.decode.fail(self.on_decode[r])
        PDAdapter.aborted += 1

    # -- what the nodes say -------------------------------------------------------------------

    def observe(self) -> dict[str, Ownership]:
        return {"prefill": self._pool(self.prefill, self.on_prefill), "decode": self._pool(self.decode, self.on_decode)}

    @staticmethod
    def _pool(node: Any, reqs: dict[int, Any]) -> Ownership:
        held = {r: [p - 1 for p in node.pages(req)] for r, req in reqs.items()}
        return Ownership(free=[p - 1 for p in node.free_pages()], held=held)


class RecordingPDAdapter(PDAdapter):
    """PDAdapter whose nodes are recorded (ownership.bridges.record) into the class's `log`: both
    allocators (alloc, free), the handoff (PDHandoff: send, land), and what only the
    scheduler knows: the forward's write, the first decode step's read over the request's
    row, and each node's finish. Each run is its own pair of pools, `prefill-run<k>` and
    `decode-run<k>`, its requests `run<k>.r<r>`; `single` names them prefill, decode and r<r>."""

    log: EventLog | None = None  # set by the test
    single = False
    runs = 0

    def __init__(self, params: dict[str, int]) -> None:
        super().__init__(params)
        type(self).runs += 1
        tag = "" if self.single else f"-run{type(self).runs}"
        self.run = "" if self.single else f"run{type(self).runs}."
        self.pnode, self.dnode = f"prefill{tag}", f"decode{tag}"
        assert self.log is not None, "set RecordingPDAdapter.log to an EventLog first"
        record_sglang_allocator(self.prefill.allocator, self.log, node=self.pnode)
        record_sglang_allocator(self.decode.allocator, self.log, node=self.dnode)
        self.handoff = PDHandoff(self.log, success=KVPoll.Success, prefill=self.pnode, decode=self.dnode)

    def rid(self, r: int) -> str:
        return f"{self.run}r{r}"

    def _acting(self, r: int, action: Any, *args: Any) -> None:
        with self.log.acting(self.rid(r)):
            action(r, *args)

    def arrive(self, r: int, n: int) -> None:
        self._acting(r, super().arrive, n)
        p, d = self.on_prefill[r], self.on_decode[r]
        if p.disagg_kv_sender is not None:
            self.handoff.sender(p.disagg_kv_sender, self.rid(r), p.bootstrap_room)
        else:  # retired at the door: it never held anything on prefill
            self.log.finish(self.pnode, self.rid(r))
        entry = self.decode.entry(d)
        if entry is not None:
            self.handoff.receiver(entry.kv_receiver, self.rid(r), d.bootstrap_room)
        else:
            self.log.finish(self.dnode, self.rid(r))

    def decode_prealloc(self, r: int) -> None:
        self._acting(r, super().decode_prealloc)

    def prefill_forward(self, r: int) -> None:
        self._acting(r, super().prefill_forward)
        self.log.write(self.pnode, self.rid(r), self.prefill.pages(self.on_prefill[r]))

    def prefill_result(self, r: int) -> None:
        self._acting(r, super().prefill_result)
        if not self.on_prefill[r].kv.holds_kv:  # 0.5.20+: retired after the forward
            self.log.finish(self.pnode, self.rid(r))

    def transfer_done(self, r: int) -> None:
        self._acting(r, super().transfer_done)
        self.log.finish(self.pnode, self.rid(r))

    def decode_commit(self, r: int) -> None:
        self._acting(r, super().decode_commit)
        self.log.read(self.dnode, self.rid(r), self.decode.pages(self.on_decode[r]))

    def decode_finish(self, r: int) -> None:
        self._acting(r, super().decode_finish)
        self.log.finish(self.dnode, self.rid(r))

    def decode_timeout(self, r: int) -> None:
        self._acting(r, super().decode_timeout)
        self.log.finish(self.dnode, self.rid(r))
