"""Every vLLM set-up of the conformance suites: an adapter over vllm 0.33.0's real KVCacheManager.

The adapter drives `KVCacheManager` (and through it `BlockPool`, `FreeKVCacheBlockQueue` and
the prefix-cache hash index) on CPU the way the scheduler does, for the shipped spec
specs/vllm_block_pool.py: a request's prompt is one full block of a shared prefix followed by
a partial block of its own; `get_computed_blocks` finds a prefix-cache hit, `allocate_slots`
touches the hit block and takes new ones (evicting cached blocks from the front of the free
queue), and `free` returns the blocks in reverse order. These are internals of a pinned
release; importing this module fails when vllm is not installed, and the tests then skip.

Block numbers: vLLM's block 0 is the null block, so the spec's block b is vLLM's block b+1.
"""

from __future__ import annotations

import _stubs

_stubs.stub_torchvision()

import torch  # noqa: E402
import vllm  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.utils.hashing import sha256  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheManager  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

from ownership.bridges.testing import Ownership  # noqa: E402

VERSION = vllm.__version__
SPEC = "vllm_block_pool"
BLOCK_SIZE = 4

init_none_hash(sha256)


class KVCacheManagerAdapter:
    """The scheduler's calls into KVCacheManager with prefix caching on; counts hits and evictions."""

    #: across every run of a check: how often the real manager hit the prefix cache and
    #: evicted a cached block (the suite asserts that both were exercised)
    hits = 0
    evictions = 0

    def __init__(self, params: dict[str, int]) -> None:
        spec = FullAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=1, head_size=8, dtype=torch.float16)
        config = KVCacheConfig(num_blocks=params["blocks"] + 1, kv_cache_tensors=[],
                               kv_cache_groups=[KVCacheGroupSpec(["layer.0"], spec)])
        self.manager = KVCacheManager(config, max_model_len=16 * BLOCK_SIZE, scheduler_block_size=BLOCK_SIZE,
                                      hash_block_size=BLOCK_SIZE, enable_caching=True)
        self.pool = self.manager.block_pool
        self.hasher = get_request_block_hasher(BLOCK_SIZE, sha256)
        self.running: dict[int, Request] = {}

    def schedule(self, r: int, c: int) -> None:
        """Prompt: a full block of prefix c, then BLOCK_SIZE - 2 tokens of its own (a partial block)."""
        tokens = [100 * c + i for i in range(BLOCK_SIZE)] + [10_000 * r + i for i in range(BLOCK_SIZE - 2)]
        request = Request(f"r{r}", tokens, SamplingParams(max_tokens=1), None, block_hasher=self.hasher)
        cached_before = len(self.pool.cached_block_hash_to_block)
        computed, hit_tokens, _ = self.manager.get_computed_blocks(request)
        blocks = self.manager.allocate_slots(request, len(tokens) - hit_tokens,
                                             num_new_computed_tokens=hit_tokens, new_computed_blocks=computed)
        assert blocks is not None, "the spec schedules only when enough blocks are free"
        request.num_computed_tokens = len(tokens)
        type(self).hits += hit_tokens > 0
        # a miss caches one new block; fewer entries than that means one was evicted
        expected = cached_before + (0 if hit_tokens else 1)
        type(self).evictions += max(0, expected - len(self.pool.cached_block_hash_to_block))
        self.running[r] = request

    def finish(self, r: int) -> None:
        self.manager.free(self.running.pop(r))

    def observe(self) -> Ownership:
        free = [b.block_id - 1 for b in self.pool.free_block_queue.get_all_free_blocks()]
        held = {r: [b - 1 for b in self.manager.get_block_ids(req.request_id)[0]]
                for r, req in self.running.items()}
        return Ownership(free=free, held=held)


class RecordingKVCacheManagerAdapter(KVCacheManagerAdapter):
    """KVCacheManagerAdapter whose real BlockPool is recorded (ownership.bridges.record) into the
    class's `log`: each run its own pool `decode-run<k>`, each request `r<r>`. After a
    schedule the forward writes the request's new blocks (the prefix block under the key
    `p<c>` of its prefix, the partial block as the request's own KV); before a finish the
    decode step reads them, the prefix block by its key."""

    log = None  # an ownership.bridges.record.EventLog, set by the test
    runs = 0

    def __init__(self, params: dict[str, int]) -> None:
        super().__init__(params)
        from ownership.bridges.record import record_vllm_block_pool

        type(self).runs += 1
        self.node = f"decode-run{type(self).runs}"
        self.prefix: dict[int, int] = {}
        record_vllm_block_pool(self.pool, self.log, node=self.node)

    def _blocks(self, r: int) -> list[int]:
        return list(self.manager.get_block_ids(self.running[r].request_id)[0])

    def schedule(self, r: int, c: int) -> None:
        hits = type(self).hits
        with self.log.acting(f"r{r}"):
            super().schedule(r, c)
        first, own = self._blocks(r)
        self.prefix[r] = c
        if type(self).hits == hits:  # a miss: the forward computes the prefix block too
            self.log.write(self.node, f"r{r}", [first], key=f"p{c}")
        self.log.write(self.node, f"r{r}", [own])

    def finish(self, r: int) -> None:
        first, own = self._blocks(r)
        self.log.read(self.node, f"r{r}", [first], key=f"p{self.prefix[r]}")
        self.log.read(self.node, f"r{r}", [own])
        with self.log.acting(f"r{r}"):
            super().finish(r)
