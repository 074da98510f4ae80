"""Recording what a real engine does to its KV pages, as the event log `ownership monitor` reads.

`EventLog` writes one JSON line per event (the format of ownership/bridges/monitor.py). The hooks wrap
the methods of a real engine object in place, so that every call is recorded with the pages it
really handed out or took back, for a staging server or a test run:

    log = EventLog("events.jsonl")
    record_sglang_allocator(allocator, log, node="decode")   # alloc, alloc_extend, alloc_decode, free
    with log.acting("req-17"):                                # whose call it is (the allocator does not know)
        pages = allocator.alloc(64)
    log.write("decode", "req-17", pages)                      # a forward filled them
    log.read("decode", "req-17", pages)                       # a decode step attended over them

- `record_sglang_allocator`: SGLang's PagedTokenToKVPoolAllocator and TokenToKVPoolAllocator
  (token indices are turned into page ids: index // page_size);
- `record_vllm_block_pool`: vLLM v1's BlockPool (`get_new_blocks`, `touch` for a prefix-cache
  hit, `free_blocks`), as pages that several requests may hold;
- `PDHandoff`: SGLang's prefill/decode KV handoff, over a request's KV receiver (decode:
  `send_metadata`, the pages it reserved) and KV sender (prefill: `send`, the pages it sends;
  `poll`, the transfer's Success), paired by bootstrap room as `send` and `land` events.

The allocator's calls are recorded for the request set with `log.acting(request)`; a call
outside it is recorded for the request `"?"`, which the monitor then reports against (a call
nobody owns is worth seeing). Nothing here imports an engine: the hooks use only the objects'
own methods and `tolist()`. `unrecord(obj)` puts the original methods back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

#: The request recorded for an allocator call made outside `EventLog.acting`.
UNKNOWN_REQUEST = "?"


class EventLog:
    """A page-event log being written: a path (opened for appending) or a text stream."""

    def __init__(self, sink: str | Path | IO[str]) -> None:
        self._own = isinstance(sink, str | Path)
        self._out: IO[str] = open(sink, "a", encoding="utf-8") if isinstance(sink, str | Path) else sink  # noqa: SIM115
        self.request: str = UNKNOWN_REQUEST
        self.events = 0

    def event(self, kind: str, node: str, request: str, pages: Iterable[int] | None = None, **extra: Any) -> None:
        """Write one event (`extra`: `to`, `to_pages`, `t`)."""
        doc: dict[str, Any] = {"event": kind, "node": node, "request": request}
        if pages is not None:
            doc["pages"] = _page_list(pages)
        doc.update(extra)
        self._out.write(json.dumps(doc) + "\n")
        self.events += 1

    def alloc(self, node: str, request: str, pages: Iterable[int]) -> None:
        self.event("alloc", node, request, pages)

    def free(self, node: str, request: str, pages: Iterable[int]) -> None:
        self.event("free", node, request, pages)

    def write(self, node: str, request: str, pages: Iterable[int], key: str | None = None) -> None:
        self.event("write", node, request, pages, **({} if key is None else {"key": key}))

    def read(self, node: str, request: str, pages: Iterable[int], key: str | None = None) -> None:
        self.event("read", node, request, pages, **({} if key is None else {"key": key}))

    def send(self, node: str, request: str, pages: Iterable[int], to: str, to_pages: Iterable[int]) -> None:
        self.event("send", node, request, pages, to=to, to_pages=_page_list(to_pages))

    def land(self, node: str, request: str, pages: Iterable[int] | None = None) -> None:
        self.event("land", node, request, pages)

    def finish(self, node: str, request: str) -> None:
        self.event("finish", node, request)

    @contextmanager
    def acting(self, request: str) -> Iterator[None]:
        """The allocator calls inside are recorded for `request`."""
        old, self.request = self.request, str(request)
        try:
            yield
        finally:
            self.request = old

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        self._out.flush()
        if self._own:
            self._out.close()


def _page_list(pages: Iterable[int]) -> list[int]:
    """Page ids in first-seen order, each once (a page of several tokens appears once)."""
    return list(dict.fromkeys(int(p) for p in pages))


def _values(x: Any) -> list[int]:
    """The ints of a tensor, an array or a list."""
    if x is None:
        return []
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, int):
        return [x]
    return [int(v) for v in x]


_ORIGINALS = "_ownership_record_originals"


def _wrap(obj: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(obj, name)
    saved = obj.__dict__.setdefault(_ORIGINALS, {})
    saved.setdefault(name, original)
    setattr(obj, name, make(original))


def unrecord(obj: Any) -> None:
    """Put back the methods a record_* hook wrapped."""
    for name, original in obj.__dict__.pop(_ORIGINALS, {}).items():
        if getattr(obj, name, None) is not original:
            delattr(obj, name)  # the wrapper is an instance attribute over the class's method


def record_sglang_allocator(allocator: Any, log: EventLog, *, node: str) -> Any:
    """Record every alloc, alloc_extend, alloc_decode and free of an SGLang token-to-KV
    allocator (PagedTokenToKVPoolAllocator, TokenToKVPoolAllocator) as page events.

    Token indices become page ids (index // page_size); an allocation records only the pages
    it opens (alloc_extend and alloc_decode continue the request's last page first). The
    frees are `free` and `free_segment` (token indices; what `release_kv_cache` calls, through
    `free_kv_row`) and `free_page_ids` (page ids). A call made inside another recorded call
    (free_segment -> free_page_ids, free_group_end -> free) is the outer call's, recorded once.
    A free inside free_group_begin / free_group_end is recorded when SGLang really frees it, at
    free_group_end. Returns the allocator."""
    page_size = int(getattr(allocator, "page_size", 1) or 1)
    depth = [0]  # recorded calls running: only the outermost one is recorded

    def outermost(original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool]:
        outer = depth[0] == 0
        depth[0] += 1
        try:
            return original(*args, **kwargs), outer
        finally:
            depth[0] -= 1

    def pages_of(tokens: Any) -> list[int]:
        return _page_list(t // page_size for t in _values(tokens))

    def new_pages(tokens: Any) -> list[int]:
        # alloc_extend and alloc_decode first fill the rest of the request's last page, which
        # it holds already: a page is new when the first of its tokens is among those returned
        return _page_list(t // page_size for t in _values(tokens) if t % page_size == 0)

    def allocating(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            out, outer = outermost(original, args, kwargs)
            if outer and out is not None:
                got = new_pages(out)
                if got:
                    log.alloc(node, log.request, got)
            return out
        return call

    grouped: list[tuple[str, list[int]]] = []
    in_group = [False]

    def freeing(pages: Callable[[Any], list[int]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(freed: Any, *args: Any, **kwargs: Any) -> Any:
                out, outer = outermost(original, (freed, *args), kwargs)
                if outer:
                    got = pages(freed)
                    if in_group[0]:
                        grouped.append((log.request, got))
                    elif got:
                        log.free(node, log.request, got)
                return out
            return call
        return wrap

    def group_begin(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            in_group[0] = True
            return original(*args, **kwargs)
        return call

    def group_end(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            in_group[0] = False
            try:
                return outermost(original, args, kwargs)[0]
            finally:
                for request, got in grouped:
                    if got:
                        log.free(node, request, got)
                grouped.clear()
        return call

    for name in ("alloc", "alloc_extend", "alloc_decode"):
        if hasattr(allocator, name):
            _wrap(allocator, name, allocating)
    _wrap(allocator, "free", freeing(pages_of))
    if hasattr(allocator, "free_segment"):
        _wrap(allocator, "free_segment", freeing(pages_of))
    if hasattr(allocator, "free_page_ids"):
        _wrap(allocator, "free_page_ids", freeing(lambda ids: _page_list(_values(ids))))
    if hasattr(allocator, "free_group_begin") and hasattr(allocator, "free_group_end"):
        _wrap(allocator, "free_group_begin", group_begin)
        _wrap(allocator, "free_group_end", group_end)
    return allocator


def record_vllm_block_pool(pool: Any, log: EventLog, *, node: str) -> Any:
    """Record vLLM v1 BlockPool calls as page events of shared pages: `get_new_blocks` as
    alloc (the block ids handed out), `touch` as share (a prefix-cache hit takes a reference
    to a cached block), `free_blocks` as free (each call drops the acting request's reference;
    a block another request still references stays held by it). Returns the pool."""

    def allocating(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            blocks = original(*args, **kwargs)
            ids = [int(b.block_id) for b in blocks]
            if ids:
                log.alloc(node, log.request, ids)
            return blocks
        return call

    def sharing(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(blocks: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(blocks, *args, **kwargs)
            ids = [int(b.block_id) for group in _groups(blocks) for b in group if not getattr(b, "is_null", False)]
            if ids:
                log.event("share", node, log.request, ids)
            return out
        return call

    def freeing(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(ordered_blocks: Any, *args: Any, **kwargs: Any) -> Any:
            blocks = list(ordered_blocks)
            out = original(blocks, *args, **kwargs)
            ids = [int(b.block_id) for b in blocks if not getattr(b, "is_null", False)]
            if ids:
                log.free(node, log.request, ids)
            return out
        return call

    _wrap(pool, "get_new_blocks", allocating)
    if hasattr(pool, "touch"):
        _wrap(pool, "touch", sharing)
    _wrap(pool, "free_blocks", freeing)
    return pool


def _groups(blocks: Any) -> list[list[Any]]:
    """BlockPool.touch takes the blocks of each KV-cache group (a tuple of lists), or a list."""
    items = list(blocks)
    if items and isinstance(items[0], list | tuple):
        return [list(g) for g in items]
    return [items]


class PDHandoff:
    """Records SGLang's prefill/decode KV handoff (disaggregation/base/conn.py's sender and
    receiver interface, any backend) as `send` and `land` events.

    Decode's receiver announces the pages it reserved for a request (`send_metadata(kv_indices,
    ...)`, page ids); prefill's sender sends pages of its own (`send(kv_indices, ...)`, page ids,
    one call per chunk). The two nodes never see each other's objects, so the recorder pairs
    them by the request's bootstrap room, position by position: the i-th page prefill sends
    lands in the i-th page decode announced. Where prefill sends more pages than decode
    announced, the extra ones are left out, as Mooncake's transfer worker cuts the source
    short (`len(dst) < len(src)`). The first time the sender's `poll()` says Success, the
    request's pages in flight `land` on decode (`success`: the backend's Success value,
    `KVPoll.Success` of disaggregation/base/conn.py). Wrap the receiver before its
    `send_metadata` and the sender before its first `send`."""

    def __init__(self, log: EventLog, *, success: Any, prefill: str = "prefill", decode: str = "decode") -> None:
        self.log = log
        self.success = success
        self.prefill = prefill
        self.decode = decode
        self._announced: dict[Any, list[int]] = {}  # room -> decode pages, in order
        self._sent: dict[Any, int] = {}             # room -> how many of them prefill has sent into

    def receiver(self, receiver: Any, request: str, room: Any) -> Any:
        """Record `receiver.send_metadata`: the decode pages `room`'s KV goes into."""

        def announcing(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(kv_indices: Any, *args: Any, **kwargs: Any) -> Any:
                self._announced[room] = _values(kv_indices)
                self._sent[room] = 0
                return original(kv_indices, *args, **kwargs)
            return call

        _wrap(receiver, "send_metadata", announcing)
        return receiver

    def sender(self, sender: Any, request: str, room: Any) -> Any:
        """Record `sender.send` as a send of `request`'s prefill pages into the decode pages
        announced for `room`, and its first Success poll as their landing."""
        landed = [False]

        def sending(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(kv_indices: Any, *args: Any, **kwargs: Any) -> Any:
                pages = _values(kv_indices)
                start = self._sent.get(room, 0)
                into = self._announced.get(room, [])[start:start + len(pages)]
                if into:
                    self.log.send(self.prefill, request, pages[:len(into)], self.decode, into)
                    self._sent[room] = start + len(into)
                return original(kv_indices, *args, **kwargs)
            return call

        def polling(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                state = original(*args, **kwargs)
                if not landed[0] and state == self.success:
                    landed[0] = True
                    self.log.land(self.decode, request)
                return state
            return call

        _wrap(sender, "send", sending)
        _wrap(sender, "poll", polling)
        return sender


__all__ = ["UNKNOWN_REQUEST", "EventLog", "PDHandoff", "record_sglang_allocator", "record_vllm_block_pool", "unrecord"]
