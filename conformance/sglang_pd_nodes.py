"""One SGLang prefill node and one decode node on CPU: the real disaggregation queues over real pools.

Built for sglang 0.5.23 (the conformance venv) and 0.5.19 (its wheel unpacked by setup.sh, run
in a subprocess: the two cannot share a process). Real, per node: `MHATokenToKVPool`,
`PagedTokenToKVPoolAllocator` (need_sort False: freed pages first), `ReqToTokenPool` /
`DecodeReqToTokenPool`, the tree cache the registry builds with the radix cache off
(`UnifiedRadixCache(disable=True)`; 0.5.19 `ChunkCache`), `ReqToMetadataIdxAllocator`,
`MetadataBuffers`; `PrefillBootstrapQueue`, `DecodePreallocQueue`, `DecodeTransferQueue`
with `TransferBackend.FAKE` (`FakeKVManager`, `FakeKVSender`, `FakeKVReceiver`). The admission
limit is `TpModelWorker.get_worker_info`'s, the check `managers/utils.py:validate_input_length`,
the placeholder `Req.set_finish_with_abort`, the queueing `Scheduler._add_request_to_queue`.

Stubbed, because they need a model or a GPU: the `Scheduler` (a SimpleNamespace holding what
these paths read, with the real methods of `SchedulerDisaggregationPrefillMixin` and the few
`Scheduler` methods below bound to it), the process groups (a one-rank gloo group) and the
model forward: `forward` takes the request's KV the way `alloc_for_extend` does (the real
`ReqToTokenPool.alloc`, `allocator.alloc_extend`, `req_to_token_pool.write`) and samples
nothing. 0.5.19's `alloc_extend` launches a Triton kernel; it is routed to that module's own
torch reference, `alloc_extend_naive`.

Each queue call runs with only the request it is for in the queue (`_alone`): the real
scheduler pops whatever is ready, and which requests are ready at one poll is a matter of
timing, which the spec's interleavings choose.
"""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from unittest.mock import MagicMock

import sglang
import torch
import torch.distributed as dist
from sglang.srt.disaggregation.decode import (
    DecodePreallocQueue,
    DecodeReqToTokenPool,
    DecodeTransferQueue,
)
from sglang.srt.disaggregation.prefill import (
    PrefillBootstrapQueue,
    SchedulerDisaggregationPrefillMixin,
)
from sglang.srt.disaggregation.utils import (
    FAKE_BOOTSTRAP_HOST,
    DisaggregationMode,
    MetadataBuffers,
    ReqToMetadataIdxAllocator,
    TransferBackend,
)
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.managers.tp_worker import TpModelWorker
from sglang.srt.managers.utils import validate_input_length
from sglang.srt.mem_cache.allocator import PagedTokenToKVPoolAllocator
from sglang.srt.mem_cache.cache_init_params import CacheInitParams
from sglang.srt.mem_cache.common import release_kv_cache
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
from sglang.srt.runtime_context import get_parallel, publish, reset_context
from sglang.srt.sampling.sampling_params import SamplingParams
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

VERSION = sglang.__version__
OLD = VERSION == "0.5.19"  # constructors with explicit ranks, extend_range, ChunkCache, Triton alloc_extend
PAGE_SIZE = 8


def prompt_tokens(pages: int) -> int:
    """The shortest prompt of `pages` pages. With one output token (max_new_tokens=1) it
    still fits its pages, and a node whose KV capacity is c pages admits it exactly when
    pages <= c: SGLang keeps 6 tokens of the capacity back (max_req_len = capacity - 1,
    max_req_input_len = max_req_len - 5, and validate_input_length rejects len >= it), less
    than the 7 spare tokens of the prompt's last page."""
    return (pages - 1) * PAGE_SIZE + 1


if OLD:
    from sglang.srt.mem_cache import chunk_cache
    from sglang.srt.mem_cache.allocator import paged

    class _NaiveAllocExtend:
        """`alloc_extend_kernel[grid](...)` runs the module's torch reference instead (no Triton driver on CPU)."""

        def __getitem__(self, grid: Any) -> Any:
            def run(prefix_lens, seq_lens, last_loc, free_pages, out_indices, _bs_pow2, page_size):
                paged.alloc_extend_naive(prefix_lens, seq_lens, last_loc, free_pages, out_indices, page_size,
                                         out_indices.device)
            return run

    paged.alloc_extend_kernel = _NaiveAllocExtend()
else:
    from sglang.srt.mem_cache.unified_cache.components import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
    from sglang.srt.runtime_context import SpawnRanks

#: the published server args first, then what must stay alive with them (0.5.19's entered override)
_WORLD: list[Any] = []


def start_runtime() -> ServerArgs:
    """The process's runtime context: published server args (fake transfer backend, CPU), a
    one-rank gloo group, and the parallel groups the queues read. Once per process."""
    if _WORLD:
        return _WORLD[0]
    args = ServerArgs(model_path="dummy", disaggregation_mode="prefill", disaggregation_transfer_backend="fake",
                      device="cpu")
    reset_context()
    if OLD:
        publish(args, role="scheduler")
    else:
        publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0, gpu_id=0))
    if not dist.is_initialized():
        rendezvous = tempfile.NamedTemporaryFile(prefix="ownership-gloo-", delete=False).name  # noqa: SIM115
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=0, world_size=1)
    if OLD:  # no override_permanently: a scoped override entered for the rest of the process
        get_parallel().stamp_derived_widths(attn_tp_size=1, attn_cp_size=1, attn_dp_size=1)
        ranks = get_parallel().override(tp_rank=0, tp_size=1)
        ranks.__enter__()
        _WORLD.append(ranks)
    else:
        group = SimpleNamespace(cpu_group=dist.group.WORLD, world_size=1, is_last_rank=True, is_first_rank=True)
        get_parallel().override_permanently(attn_tp_group=group, attn_cp_group=group, pp_group=group, tp_group=group)
    _WORLD.insert(0, args)
    return args


def make_req(rid: str, tokens: int, room: int, mode: DisaggregationMode) -> Req:
    """A request as the scheduler builds it from the tokenizer's: `tokens` prompt tokens, one
    output token, the fake bootstrap host (FAKE_BOOTSTRAP_HOST: the queues pick the fake
    sender and receiver)."""
    return Req(rid, "", array("q", range(100, 100 + tokens)), SamplingParams(max_new_tokens=1),
               bootstrap_host=FAKE_BOOTSTRAP_HOST, bootstrap_port=8998, bootstrap_room=room, disagg_mode=mode,
               vocab_size=256)


def token_pages(tokens: torch.Tensor) -> list[int]:
    """SGLang page ids of a req_to_token slice, in order, each once."""
    return list(dict.fromkeys(int(t) // PAGE_SIZE for t in tokens.tolist()))


@contextmanager
def _alone(owner: Any, name: str, entry: Any) -> Iterator[None]:
    """Run a poll of the queue `owner.<name>` with only `entry` in it; the others are put back
    after it, in order (the polls rebind the attribute to the entries they keep)."""
    others = [e for e in getattr(owner, name) if e is not entry]
    setattr(owner, name, [e for e in getattr(owner, name) if e is entry])
    try:
        yield
    finally:
        setattr(owner, name, list(getattr(owner, name)) + others)


class _Node:
    """What both nodes have: the pools, the metadata slots, the scheduler namespace."""

    mode: DisaggregationMode

    def __init__(self, args: ServerArgs, pages: int, capacity_pages: int, context_pages: int) -> None:
        size = pages * PAGE_SIZE
        self.kv = MHATokenToKVPool(size=size, page_size=PAGE_SIZE, dtype=torch.float16, head_num=2, head_dim=8,
                                   layer_num=2, device="cpu", enable_memory_saver=False)
        self.allocator = PagedTokenToKVPoolAllocator(size=size, page_size=PAGE_SIZE, dtype=torch.float16,
                                                     device="cpu", kvcache=self.kv, need_sort=False)
        self.rows = self._rows()
        self.tree = self._tree()
        self.meta_slots = ReqToMetadataIdxAllocator(8)
        self.meta = MetadataBuffers(8, hidden_size=16, hidden_states_dtype=torch.float32, max_sampling_mask_tokens=16)
        self.sched = self._scheduler(args, capacity_pages * PAGE_SIZE, context_pages * PAGE_SIZE)
        self.max_req_input_len = TpModelWorker.get_worker_info(self.sched.tp_worker)[5]

    def _rows(self) -> ReqToTokenPool:
        return ReqToTokenPool(size=4, max_context_len=256, device="cpu", enable_memory_saver=False)

    def _tree(self) -> Any:
        params = CacheInitParams(disable=True, req_to_token_pool=self.rows, token_to_kv_pool_allocator=self.allocator,
                                 page_size=PAGE_SIZE)
        if OLD:
            return chunk_cache.ChunkCache(params)
        params.tree_components = (ComponentType.FULL,)
        return UnifiedRadixCache(params)

    def _scheduler(self, args: ServerArgs, capacity: int, context_len: int) -> SimpleNamespace:
        """The attributes of `Scheduler` (and of its `TpModelWorker`) that these paths read."""
        group = dist.group.WORLD
        runner = SimpleNamespace(kv_cache_dtype_str="float16", effective_max_total_num_tokens=capacity,
                                 effective_logical_max_total_num_tokens=capacity,
                                 logical_max_total_num_tokens=capacity, max_total_num_tokens=capacity,
                                 token_to_kv_pool_allocator=self.allocator, token_to_kv_pool=self.kv,
                                 req_to_token_pool=self.rows,
                                 max_running_requests=4, forward_stream=None)
        model_config = SimpleNamespace(num_hidden_layers=2, get_total_num_kv_heads=lambda: 2, hf_text_config=None,
                                       num_key_value_heads=2, context_len=context_len)
        worker = SimpleNamespace(is_hybrid_swa=False, model_runner=runner, model_config=model_config,
                                 ps=SimpleNamespace(attn_dcp_size=1), dllm_algorithm=None, random_seed=0, device="cpu")
        s = SimpleNamespace(
            server_args=args, disaggregation_mode=self.mode, token_to_kv_pool_allocator=self.allocator,
            req_to_token_pool=self.rows, tree_cache=self.tree, tp_worker=worker, model_config=model_config,
            ps=SimpleNamespace(pp_size=1, tp_rank=0, pp_rank=0, tp_size=1, dp_rank=None, gpu_id=0, attn_tp_size=1,
                               attn_tp_rank=0, attn_cp_size=1, attn_cp_rank=0, dp_size=1),
            enable_hisparse=False, hisparse_coordinator=None, random_seed=0, rust_server=None, kv_shard_widening=1,
            attn_cp_cpu_group=group, attn_tp_cpu_group=group, processed_tokens_counter=0,
            output_streamer=MagicMock(), metrics_reporter=MagicMock(enable_metrics=False),
            running_batch=SimpleNamespace(reqs=[]), waiting_queue=[], last_batch=None, chunked_req=None,
            enable_priority_scheduling=False, abort_on_priority_when_disabled=False, enable_hicache_storage=False,
            enable_lmcache=False, enable_lora=False, enable_decode_hicache=False, enable_staging=False,
            enable_overlap=False, scheduler_stage_metrics=None, spec_algorithm=SpeculativeAlgorithm.NONE,
            batch_result_processor=MagicMock(), beam_coordinator=MagicMock(),
            maybe_send_health_check_signal=lambda: None,
            disagg_metadata_buffers=self.meta, req_to_metadata_buffer_idx_allocator=self.meta_slots,
            disagg_prefill_pending_chunk_rids=set(), disagg_prefill_inflight_queue=[],
        )
        for name, fn in vars(SchedulerDisaggregationPrefillMixin).items():
            if callable(fn) and not name.startswith("__"):
                setattr(s, name, fn.__get__(s))
        for name in ("_add_request_to_queue", "_set_or_validate_priority", "_prefetch_kvcache",
                     "_release_aborted_request", "retire_unadmitted_request"):
            if hasattr(Scheduler, name):  # retire_unadmitted_request: 0.5.21+
                setattr(s, name, getattr(Scheduler, name).__get__(s))
        return s

    def admit(self, req: Req) -> str | None:
        """`Scheduler._handle_generate_request`'s length check: `validate_input_length` against
        the node's `max_req_input_len`; a prompt too long becomes the one-token placeholder
        (`Req.set_finish_with_abort`); either way `_add_request_to_queue`. The error, if any."""
        error = validate_input_length(req, self.max_req_input_len, False)
        if error:
            req.set_finish_with_abort(error)
        self.sched._add_request_to_queue(req)
        return error

    def pages(self, req: Req) -> list[int]:
        """The SGLang pages of the request's prompt in its req_to_token row (none once released)."""
        if not req.kv.holds_kv:
            return []
        return token_pages(self.rows.req_to_token[req.kv.req_pool_idx, :len(req.origin_input_ids)])

    def free_pages(self) -> list[int]:
        """The allocator's free list (need_sort is off: nothing is staged; 0.5.19 has no
        get_all_free_pages)."""
        return [int(p) for p in self.allocator.free_pages.tolist()]


class PrefillNode(_Node):
    """PrefillBootstrapQueue, the forward (stubbed), the result and the inflight queue."""

    mode = DisaggregationMode.PREFILL

    def __init__(self, args: ServerArgs, pages: int, capacity_pages: int, context_pages: int) -> None:
        super().__init__(args, pages, capacity_pages, context_pages)
        common = dict(token_to_kv_pool=self.kv, draft_token_to_kv_pool=None,
                      req_to_metadata_buffer_idx_allocator=self.meta_slots, metadata_buffers=self.meta, gpu_id=0,
                      bootstrap_port=8998, max_total_num_tokens=self.allocator.size, scheduler=self.sched,
                      transfer_backend=TransferBackend.FAKE)
        if OLD:
            self.queue = PrefillBootstrapQueue(tp_rank=0, tp_size=1, gloo_group=dist.group.WORLD, pp_rank=0, pp_size=1,
                                               **common)
        else:
            self.queue = PrefillBootstrapQueue(scheduler_stage_metrics=None, **common)
        self.sched.disagg_prefill_bootstrap_queue = self.queue

    def bootstrap(self, req: Req) -> bool:
        """`PrefillBootstrapQueue.pop_bootstrapped`: the fake sender is ready at once, so
        `finalize_bootstrap` takes a metadata slot and calls `sender.init(num_pages, slot)`."""
        with _alone(self.queue, "queue", req):
            return req in self.queue.pop_bootstrapped()

    def forward(self, req: Req) -> bool:
        """The stub of the scheduler's extend: the KV of the whole prompt allocated as
        `alloc_for_extend` does it, with the real pools; no model runs. False when the pool
        has no room."""
        n = len(req.origin_input_ids)
        self.rows.alloc([req])
        loc = self.allocator.alloc_extend(prefix_lens=torch.tensor([0]), prefix_lens_cpu=torch.tensor([0]),
                                          seq_lens=torch.tensor([n]), seq_lens_cpu=torch.tensor([n]),
                                          last_loc=torch.tensor([-1]), extend_num_tokens=n)
        if loc is None:
            return False
        self.rows.write((req.kv.req_pool_idx, slice(0, n)), loc)
        req.kv.kv_allocated_len = req.kv.kv_committed_len = n
        req.prefix_len = 0
        if OLD:
            req.set_extend_range(0, n)
        else:
            req.extend_end = n
        return True

    def result(self, req: Req) -> None:
        """`process_batch_result_disagg_prefill` over a batch of this one request, with its
        sampled first token: it sends the KV (`send_kv_chunk(last_chunk=True)`) or, for an
        aborted request (0.5.20+), retires it (`_retire_aborted_prefill_result`)."""
        batch = SimpleNamespace(reqs=[req], spec_info=None, prefill_stats=None, dp_cooperation_info=None,
                                return_logprob=False)
        result = SimpleNamespace(logits_output=None, next_token_ids=torch.tensor([7]), extend_input_len_per_req=None,
                                 extend_logprob_start_len_per_req=None, copy_done=None, auxiliary_host_output=None,
                                 routed_experts_output=None, indexer_topk_output=None, next_draft_input=None,
                                 can_run_cuda_graph=False)
        self.sched.process_batch_result_disagg_prefill(batch, result)

    def conclude(self, req: Req) -> bool:
        """`process_disagg_prefill_inflight_queue`: the sender polls Success, the KV is
        released (`release_kv_cache`) and the metadata slot freed. True once it left the queue."""
        with _alone(self.sched, "disagg_prefill_inflight_queue", req):
            self.sched.process_disagg_prefill_inflight_queue()
            return req not in self.sched.disagg_prefill_inflight_queue


class DecodeNode(_Node):
    """DecodePreallocQueue and DecodeTransferQueue; the finish of a decoded request."""

    mode = DisaggregationMode.DECODE

    def __init__(self, args: ServerArgs, pages: int, capacity_pages: int, context_pages: int) -> None:
        super().__init__(args, pages, capacity_pages, context_pages)
        s = self.sched
        if OLD:
            self.transfer = DecodeTransferQueue(gloo_group=dist.group.WORLD,
                                                req_to_metadata_buffer_idx_allocator=self.meta_slots, tp_rank=0,
                                                metadata_buffers=self.meta, scheduler=s, tree_cache=self.tree)
            ranks = dict(gloo_group=dist.group.WORLD, tp_rank=0, tp_size=1, dp_size=1, pp_rank=0)
        else:
            self.transfer = DecodeTransferQueue(self.meta_slots, self.meta, s, self.tree)
            ranks = {}
        self.queue = DecodePreallocQueue(
            req_to_token_pool=self.rows, token_to_kv_pool_allocator=self.allocator, draft_token_to_kv_pool=None,
            req_to_metadata_buffer_idx_allocator=self.meta_slots, metadata_buffers=self.meta, scheduler=s,
            transfer_queue=self.transfer, tree_cache=self.tree, gpu_id=0, bootstrap_port=8998,
            max_total_num_tokens=self.allocator.size, num_reserved_decode_tokens=0,
            transfer_backend=TransferBackend.FAKE, **ranks)
        s.disagg_decode_prealloc_queue = self.queue

    def _rows(self) -> ReqToTokenPool:
        return DecodeReqToTokenPool(size=4, max_context_len=256, device="cpu", enable_memory_saver=False,
                                    pre_alloc_size=4)

    def entry(self, req: Req) -> Any:
        """The request's DecodeRequest in the prealloc or the transfer queue, or None."""
        for e in [*self.queue.queue, *self.transfer.queue]:
            if e.req is req:
                return e
        return None

    def prealloc(self, req: Req) -> bool:
        """`DecodePreallocQueue.pop_preallocated`: `_pre_alloc` reserves the prompt's pages
        (`alloc_for_decode_prealloc`), and the page ids go to prefill (`receiver.send_metadata`);
        then, as the scheduler does, `DecodeTransferQueue.extend`."""
        entry = self.entry(req)
        with _alone(self.queue, "queue", entry):
            ready, _failed = self.queue.pop_preallocated()
        self.transfer.extend(ready)
        return any(e.req is req for e in ready)

    def commit(self, req: Req) -> bool:
        """`DecodeTransferQueue.pop_transferred`: Success, `_commit_transfer_to_req`."""
        with _alone(self.transfer, "queue", self.entry(req)):
            return req in self.transfer.pop_transferred()

    def fail(self, req: Req) -> None:
        """The receiver concludes Failed (what Mooncake's receiver does once
        SGLANG_DISAGGREGATION_WAITING_TIMEOUT passes; the fake receiver has no timeout, so
        `abort()` sets it), then `pop_transferred` aborts the request and releases its KV."""
        entry = self.entry(req)
        entry.kv_receiver.abort()
        with _alone(self.transfer, "queue", entry):
            self.transfer.pop_transferred()

    def finish(self, req: Req) -> None:
        """The decoded request finishes: `release_kv_cache` (checkpoint=True in 0.5.23, the
        insert default in 0.5.19), as `process_batch_result_decode` does."""
        if OLD:
            release_kv_cache(req, self.tree)
        else:
            release_kv_cache(req, self.tree, checkpoint=True)


def nodes(*, context: int, prefill_pool: int, decode_pool: int) -> tuple[PrefillNode, DecodeNode]:
    """A prefill node whose pool holds the context window but whose capacity (its admission
    limit) is `prefill_pool` pages, and a decode node of `decode_pool` pages (spec sglang_pd)."""
    args = start_runtime()
    return (PrefillNode(args, context, prefill_pool, context),
            DecodeNode(args, decode_pool, decode_pool, context))
