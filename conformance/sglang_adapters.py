"""Every SGLang set-up of the conformance suites: adapters over sglang 0.5.23's real allocators.

The adapters drive `PagedTokenToKVPoolAllocator` and `TokenToKVPoolAllocator` (both free-list
orders: need_sort False and True) on CPU the way the scheduler does, for the spec in
sglang_allocator_spec.py: `alloc`, `alloc_extend`, `alloc_decode`, `free`, and free groups
(`free_group_begin` / `free_group_end`). These are internals of a pinned release; importing
this module fails when sglang is not installed, and the tests then skip with the reason.

Page numbers: SGLang's page 0 is the padding page, so the spec's page p is SGLang's page p+1
(with page_size 1, token index p+1).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import _stubs

_stubs.stub_torchvision()

import sglang  # noqa: E402  (after the torchvision stub)
import torch  # noqa: E402
from sglang.srt.mem_cache.allocator import (  # noqa: E402
    PagedTokenToKVPoolAllocator,
    TokenToKVPoolAllocator,
)
from sglang.srt.mem_cache.base_prefix_cache import (  # noqa: E402
    EvictParams,
    InsertParams,
    MatchPrefixParams,
)
from sglang.srt.mem_cache.cache_init_params import CacheInitParams  # noqa: E402
from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey  # noqa: E402

from ownership.bridges.testing import Ownership, Refused  # noqa: E402

VERSION = sglang.__version__
SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_allocator_spec.py")
RADIX_SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_radix_spec.py")


@contextmanager
def _debug_memory_pool(on: bool) -> Iterator[None]:
    """SGLANG_DEBUG_MEMORY_POOL as the allocator reads it at construction."""
    old = os.environ.get("SGLANG_DEBUG_MEMORY_POOL")
    if on:
        os.environ["SGLANG_DEBUG_MEMORY_POOL"] = "1"
    else:
        os.environ.pop("SGLANG_DEBUG_MEMORY_POOL", None)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SGLANG_DEBUG_MEMORY_POOL", None)
        else:
            os.environ["SGLANG_DEBUG_MEMORY_POOL"] = old


def _ints(t: torch.Tensor) -> list[int]:
    return [int(x) for x in t.tolist()]


class PagedAllocatorAdapter:
    """The scheduler's calls into PagedTokenToKVPoolAllocator, need_sort=False (freed pages first)."""

    need_sort = False
    debug = False

    def __init__(self, params: dict[str, int]) -> None:
        self.page_size = params["page_size"]
        self.requests = params["requests"]
        with _debug_memory_pool(self.debug):
            self.allocator = self._make(params["pages"])
        self.tokens: dict[int, torch.Tensor] = {}  # request -> its token indices (req_to_token row)
        self.freed: dict[int, torch.Tensor] = {}   # request -> the token indices it freed last

    def _make(self, pages: int) -> PagedTokenToKVPoolAllocator | TokenToKVPoolAllocator:
        return PagedTokenToKVPoolAllocator(size=pages * self.page_size, page_size=self.page_size,
                                           dtype=torch.float16, device="cpu", kvcache=None,
                                           need_sort=self.need_sort)

    # -- the spec's actions -------------------------------------------------------------------

    def alloc(self, r: int, n: int) -> None:
        out = self.allocator.alloc(n * self.page_size)
        assert out is not None, "the spec allocates only when enough pages are free"
        self.tokens[r] = out
        self.freed.pop(r, None)

    def extend(self, r: int, n: int) -> None:
        row = self.tokens[r]
        length, new = len(row), n * self.page_size
        out = self.allocator.alloc_extend(
            prefix_lens=torch.tensor([length]), prefix_lens_cpu=torch.tensor([length]),
            seq_lens=torch.tensor([length + new]), seq_lens_cpu=torch.tensor([length + new]),
            last_loc=torch.tensor([int(row[-1])]), extend_num_tokens=new,
        )
        assert out is not None, "the spec extends only when enough pages are free"
        self.tokens[r] = torch.cat([row, out])

    def decode(self, r: int) -> None:
        row = self.tokens[r]
        out = self.allocator.alloc_decode(
            seq_lens=torch.tensor([len(row) + 1]), seq_lens_cpu=torch.tensor([len(row) + 1]),
            last_loc=torch.tensor([int(row[-1])]),
        )
        assert out is not None, "the spec decodes only when a page is free"
        self.tokens[r] = torch.cat([row, out])

    def free(self, r: int) -> None:
        row = self.tokens.pop(r)
        self._release(row)
        self.freed[r] = row

    def free_group(self, r: int) -> None:
        other = r % self.requests + 1
        self.allocator.free_group_begin()
        for q in (r, other):
            row = self.tokens.pop(q)
            self.allocator.free(row)
            self.freed[q] = row
        try:
            self.allocator.free_group_end()
        except AssertionError as e:  # SGLANG_DEBUG_MEMORY_POOL: duplicate pages on the free list
            raise Refused("the allocator's debug check refused the free group") from e

    def free_twice(self, r: int) -> None:
        self._release(self.freed.pop(r))

    def _release(self, row: torch.Tensor) -> None:
        try:
            self.allocator.free(row)
        except AssertionError as e:  # SGLANG_DEBUG_MEMORY_POOL: _debug_check_no_duplicate_pages
            raise Refused("the allocator's debug check refused the free") from e

    # -- what the allocator says --------------------------------------------------------------

    def observe(self) -> Ownership:
        ps = self.page_size
        free = _ints(self.allocator.get_all_free_pages())
        held = {r: sorted({t // ps for t in _ints(row)}) for r, row in self.tokens.items()}
        return Ownership(free=[p - 1 for p in free], held={r: [p - 1 for p in ps_] for r, ps_ in held.items()})


class SortedPagedAllocatorAdapter(PagedAllocatorAdapter):
    """need_sort=True: freed pages are staged, merged and sorted when an allocation runs short."""

    need_sort = True


class DebugPagedAllocatorAdapter(PagedAllocatorAdapter):
    """SGLANG_DEBUG_MEMORY_POOL=1: free() checks the free list for duplicate pages."""

    debug = True


class TokenAllocatorAdapter(PagedAllocatorAdapter):
    """TokenToKVPoolAllocator (page_size 1): freed indices are appended (FIFO), or staged and
    sorted with need_sort. It has no alloc_extend / alloc_decode: the scheduler allocates
    extend and decode slots with alloc (alloc_token_slots), and so does this adapter."""

    def _make(self, pages: int) -> TokenToKVPoolAllocator:
        assert self.page_size == 1, "TokenToKVPoolAllocator has pages of one token"
        return TokenToKVPoolAllocator(size=pages, dtype=torch.float16, device="cpu", kvcache=None,
                                      need_sort=self.need_sort)

    def extend(self, r: int, n: int) -> None:
        out = self.allocator.alloc(n)
        assert out is not None
        self.tokens[r] = torch.cat([self.tokens[r], out])

    def decode(self, r: int) -> None:
        out = self.allocator.alloc(1)
        assert out is not None
        self.tokens[r] = torch.cat([self.tokens[r], out])


class SortedTokenAllocatorAdapter(TokenAllocatorAdapter):
    """TokenToKVPoolAllocator with need_sort=True."""

    need_sort = True


class RadixCacheAdapter:
    """RadixCache over a real PagedTokenToKVPoolAllocator (page_size 2), driven the way the
    scheduler does for the spec in sglang_radix_spec.py. Request r1 stands for the tree."""

    page_size = 2

    def __init__(self, params: dict[str, int]) -> None:
        ps = self.page_size
        self.allocator = PagedTokenToKVPoolAllocator(size=params["pages"] * ps, page_size=ps, dtype=torch.float16,
                                                     device="cpu", kvcache=None, need_sort=False)
        self.tree = RadixCache(CacheInitParams(disable=False, req_to_token_pool=None,
                                               token_to_kv_pool_allocator=self.allocator, page_size=ps))
        self.rows: dict[int, torch.Tensor] = {}   # running request -> its token indices
        self.nodes: dict[int, object] = {}        # running request -> the node it locked
        #: across the runs of a check: prefix hits and pages evicted in the real tree
        type(self).hits = getattr(type(self), "hits", 0)
        type(self).evicted = getattr(type(self), "evicted", 0)

    def _tokens(self, r: int, c: int) -> list[int]:
        ps = self.page_size
        return [100 * c + i for i in range(ps)] + [10_000 * r + i for i in range(ps)]

    def start(self, r: int, c: int) -> None:
        tokens = self._tokens(r, c)
        match = self.tree.match_prefix(MatchPrefixParams(key=RadixKey(tokens)))
        hit = int(match.device_prefix_len)
        prefix = self.tree.path_device_indices(match.last_device_node)[:hit] if hit else torch.empty(0, dtype=torch.int64)
        new = self.allocator.alloc(len(tokens) - hit)
        assert new is not None, "the spec starts a request only when enough pages are free"
        row = torch.cat([prefix.to(torch.int64), new])
        result = self.tree.insert(InsertParams(key=RadixKey(tokens), value=row))
        assert result.prefix_len == hit, "the tree already held exactly the matched prefix"
        self.tree.inc_lock_ref(result.last_device_node)
        self.nodes[r] = result.last_device_node
        self.rows[r] = row
        type(self).hits += hit > 0

    def finish(self, r: int) -> None:
        self.tree.dec_lock_ref(self.nodes.pop(r))
        del self.rows[r]

    def evict(self) -> None:
        before = self.allocator.available_size()
        self.tree.evict(EvictParams(num_tokens=10**9))
        type(self).evicted += self.allocator.available_size() > before

    def observe(self) -> Ownership:
        ps = self.page_size
        in_tree = sorted({t // ps - 1 for t in _ints(self.tree.all_values_flatten())}) if self.tree.total_size() else []
        held = {1: in_tree}
        held.update({r: sorted({t // ps - 1 for t in _ints(row)}) for r, row in self.rows.items()})
        return Ownership(free=[p - 1 for p in _ints(self.allocator.get_all_free_pages())], held=held)


def recorded_paged_allocator(pages: int, page_size: int, log, node: str) -> PagedTokenToKVPoolAllocator:
    """A real PagedTokenToKVPoolAllocator (need_sort=False) whose every alloc and free is
    written to `log` (an ownership.bridges.record.EventLog) as page events of pool `node`."""
    from ownership.bridges.record import record_sglang_allocator

    allocator = PagedTokenToKVPoolAllocator(size=pages * page_size, page_size=page_size, dtype=torch.float16,
                                            device="cpu", kvcache=None, need_sort=False)
    return record_sglang_allocator(allocator, log, node=node)


class RecordingPagedAllocatorAdapter(PagedAllocatorAdapter):
    """PagedAllocatorAdapter whose real allocator is recorded (ownership.bridges.record) into the
    class's `log`: each run of a conformance check is its own pool, `decode-run<k>`, each of
    its requests `r<r>`. A forward (write) follows each allocation and a decode step (read)
    precedes each free, as the scheduler does, so the monitor checks reads as well."""

    log = None  # an ownership.bridges.record.EventLog, set by the test
    runs = 0

    def __init__(self, params: dict[str, int]) -> None:
        super().__init__(params)
        from ownership.bridges.record import record_sglang_allocator

        type(self).runs += 1
        self.node = f"decode-run{type(self).runs}"
        record_sglang_allocator(self.allocator, self.log, node=self.node)

    def _pages(self, tokens: torch.Tensor) -> list[int]:
        return sorted({int(t) // self.page_size for t in _ints(tokens)})

    def alloc(self, r: int, n: int) -> None:
        with self.log.acting(f"r{r}"):
            super().alloc(r, n)
        self.log.write(self.node, f"r{r}", self._pages(self.tokens[r]))

    def extend(self, r: int, n: int) -> None:
        with self.log.acting(f"r{r}"):
            super().extend(r, n)
        self.log.write(self.node, f"r{r}", self._pages(self.tokens[r]))

    def decode(self, r: int) -> None:
        with self.log.acting(f"r{r}"):
            super().decode(r)
        self.log.write(self.node, f"r{r}", self._pages(self.tokens[r][-1:]))

    def free(self, r: int) -> None:
        self.log.read(self.node, f"r{r}", self._pages(self.tokens[r]))
        with self.log.acting(f"r{r}"):
            super().free(r)

    def free_twice(self, r: int) -> None:
        with self.log.acting(f"r{r}"):
            super().free_twice(r)
