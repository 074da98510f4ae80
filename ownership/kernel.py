"""The ownership kernel: shadow page state and the built-in properties of the bug class.

Every pool has, per page, ground truth that the protocol cannot lie about:
  owner[p]    which request owns page p (0: free); in a shared pool, holders[p] instead: the
              set of requests holding a reference (a prefix-cache hit shares a page);
  content[p]  whose KV data the page holds (0: never written; r0: an earlier request's, in a
              warm pool), never cleared on free, exactly like a real GPU pool; in a keyed
              pool, a key chosen by the spec (a prefix's block hash) instead of a request;
  inflight[p] which request's transfer is writing into the page (0: none);
  outbound[p] which request's transfer is reading out of the page (0: none);
and, for a pool with LIFO order, the free list (freed pages are handed out first).

The operations are written in the spec language itself (If, &, |, loops over pages known
when tracing), so every interpreter runs this one definition. Each operation judges its call
against the properties below and flags a violation where one happens; protocol beliefs (block
tables, queues, "transfer complete") stay in the spec's own slots.

Modelling choices (docs/spec-language.md): a landing transfer writes the sending request's
KV (contents are per request, not per token position); `send` is checked as a read of the
source pages by the sending request; a page set frees and prepends in ascending page order.
"""

from __future__ import annotations

from typing import Any

from .lang.values import If, count, first, has, nth, page, select, without

STALE_READ = "stale-read"
READ_UNOWNED = "read-unowned"
WRITE_UNOWNED = "write-unowned"
FREE_IN_FLIGHT = "free-in-flight"
DOUBLE_FREE = "double-free"
LEAK = "leak"

#: The built-in properties, in the order a report lists them, with when each is violated.
PROPERTIES: dict[str, str] = {
    STALE_READ: "a read covers a page whose content is not the reader's: another request's KV (a cross-request leak) or never written",
    READ_UNOWNED: "a read covers a page that the reader does not own",
    WRITE_UNOWNED: "a write or a landing transfer hits a page that the writer does not own (freed and reused meanwhile)",
    FREE_IN_FLIGHT: "a page is freed while a transfer into or out of it is in flight (too-early free)",
    DOUBLE_FREE: "a page is freed that is free already, or owned by another request",
    LEAK: "a finished request still owns a page (it was never returned to the pool)",
}


def _size(s: Any, pool: str) -> int:
    return s.model.pools[pool].size


def _shared(s: Any, pool: str) -> bool:
    return s.model.pools[pool].shared


def _holder_slot(s: Any, pool: str) -> Any:
    return s._array(f"{pool}.holders" if _shared(s, pool) else f"{pool}.owner")


def _bit(r: Any) -> Any:
    return page(r - 1)


def holds(s: Any, pool: str, p: int, r: Any) -> Any:
    """Condition: request r owns page p (or, in a shared pool, is one of its holders)."""
    h = _holder_slot(s, pool)[p]
    if _shared(s, pool):
        return (h & _bit(r)) != 0
    return h == r


def _exclusive(s: Any, pool: str, p: int, r: Any) -> Any:
    """Condition: request r alone holds page p (a write must not reach other holders)."""
    h = _holder_slot(s, pool)[p]
    return h == (_bit(r) if _shared(s, pool) else r)


def _is_free(s: Any, pool: str, p: int) -> Any:
    return _holder_slot(s, pool)[p] == 0


def _no_keys(s: Any, pool: str, what: str) -> None:
    if s.model.pools[pool].keys is not None:
        from .errors import SpecError
        from .lang.values import spec_location

        file, line = spec_location()
        raise SpecError(f"{what} is not defined for pool {pool}, whose content is keys, not requests",
                        file=file, line=line)


def owned(s: Any, pool: str, r: Any) -> Any:
    """The set of pages of `pool` that request r owns (holds, in a shared pool)."""
    if _shared(s, pool):
        return s._bit_positions(f"{pool}.holders", _bit(r))
    return s._positions(f"{pool}.owner", r)


def free_pages(s: Any, pool: str) -> Any:
    """The set of free pages of `pool` (held by no request)."""
    return s._positions(f"{pool}.holders" if _shared(s, pool) else f"{pool}.owner", 0)


def in_flight(s: Any, r: Any) -> Any:
    """Condition: a transfer of request r is still in flight (into or out of any page)."""
    out: Any = False
    for pool in s.model.pools:
        for name in ("inflight", "outbound"):
            out = out | (s._positions(f"{pool}.{name}", r) != 0)
    return out


def reused(s: Any, pool: str) -> Any:
    """The pages of `pool` owned by one request while holding another (modelled) request's KV."""
    _no_keys(s, pool, "reused()")
    content = s._array(f"{pool}.content")
    earlier = s.model.pools[pool].earlier
    out: Any = 0
    for p in range(_size(s, pool)):
        c = content[p]
        other = ~_is_free(s, pool, p) & (c != 0) & (c != earlier) & ~holds(s, pool, p, c)
        out = out | If(other, 1 << p, 0)
    return out


def alloc(s: Any, pool: str, r: Any, n: Any) -> Any:
    """Request r takes n free pages; the action waits (is disabled) while fewer are free.

    Which pages: the lowest free ones ("lowest"), or the head of the free list ("lifo")."""
    size = _size(s, pool)
    free = free_pages(s, pool)
    s.require(count(free) >= n)
    if s.model.pools[pool].order == "lifo":
        fl = s._array(f"{pool}.free_list")
        old = list(fl)
        got: Any = 0
        for i in range(size):
            got = got | If(i < n, page(select(old, i, size)) & ((1 << size) - 1), 0)
        for j in range(size):
            fl[j] = select(old, j + n, size)
    else:
        got = first(free, n)
    holder = _holder_slot(s, pool)
    mine = _bit(r) if _shared(s, pool) else r
    for p in s._members(got, size):  # NOTE(members-loop)
        holder[p] = If(has(got, p), mine, holder[p])
    return got


def take(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r takes `pages` that the spec's own allocator chose (e.g. vLLM's free queue).

    Nothing is checked here: if a page is still held by another request, the harm shows when
    either one writes or reads it (write-unowned, read-unowned, stale-read)."""
    if s.model.pools[pool].order == "lifo":
        from .errors import SpecError
        from .lang.values import spec_location

        file, line = spec_location()
        raise SpecError(f"take() chooses pages itself; pool {pool} keeps its own free list"
                        " (order=\"lifo\"): use alloc(), or declare the pool with order=\"lowest\"",
                        file=file, line=line)
    holder = _holder_slot(s, pool)
    shared = _shared(s, pool)
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        holder[p] = If(has(pages, p), holder[p] | _bit(r) if shared else r, holder[p])


def share(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r takes a reference to `pages` of a shared pool (a prefix-cache hit)."""
    if not _shared(s, pool):
        from .errors import SpecError
        from .lang.values import spec_location

        file, line = spec_location()
        raise SpecError(f"share() needs a shared pool; declare {pool} = pool(..., shared=True)", file=file, line=line)
    holder = _holder_slot(s, pool)
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        holder[p] = If(has(pages, p), holder[p] | _bit(r), holder[p])


def free(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r returns `pages` (in a shared pool: drops its reference). Flags double-free
    and free-in-flight."""
    size = _size(s, pool)
    holder = _holder_slot(s, pool)
    inflight = s._array(f"{pool}.inflight")
    outbound = s._array(f"{pool}.outbound")
    shared = _shared(s, pool)
    for p in s._members(pages, size):  # NOTE(members-loop)
        inside = has(pages, p)
        s._flag(DOUBLE_FREE, inside & ~holds(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
        busy = (inflight[p] != 0) | (outbound[p] != 0)
        s._flag(FREE_IN_FLIGHT, inside & busy, pool=pool, page=p, request=r,
                other=If(inflight[p] != 0, inflight[p], outbound[p]))
        holder[p] = If(inside, without(holder[p], _bit(r)) if shared else 0, holder[p])
    if s.model.pools[pool].order == "lifo":
        # SGLang's paged allocator prepends freed pages (_release_page_ids): reused first.
        fl = s._array(f"{pool}.free_list")
        old = list(fl)
        k = count(pages)
        for j in range(size):
            fl[j] = If(j < k, nth(pages, j, size), select(old, j - k, size))


def write(s: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
    """Request r computes KV into `pages`: its own, or content `key` in a keyed pool.
    Flags write-unowned (in a shared pool: unless r is the only holder)."""
    holder = _holder_slot(s, pool)
    content = s._array(f"{pool}.content")
    value = r if key is None else key
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        inside = has(pages, p)
        s._flag(WRITE_UNOWNED, inside & ~_exclusive(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
        content[p] = If(inside, value, content[p])


def read(s: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
    """Request r attends over `pages`, expecting its own KV (or content `key` in a keyed pool).
    Flags read-unowned and stale-read."""
    holder = _holder_slot(s, pool)
    content = s._array(f"{pool}.content")
    expect = r if key is None else key
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        inside = has(pages, p)
        s._flag(READ_UNOWNED, inside & ~holds(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
        s._flag(STALE_READ, inside & (content[p] != expect), pool=pool, page=p, request=r, other=content[p],
                expected=expect)


def send(s: Any, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
    """Start a transfer of request r's KV from `src_pages` into `dst_pages` (RDMA in flight).

    The source pages are read now (checked as a read by r); the destination pages are written
    when the transfer lands (`land`). Until then both are marked in flight."""
    _no_keys(s, src_pool, "send()")
    _no_keys(s, dst_pool, "send()")
    read(s, src_pool, r, src_pages)
    outbound = s._array(f"{src_pool}.outbound")
    for p in s._members(src_pages, _size(s, src_pool)):  # NOTE(members-loop)
        outbound[p] = If(has(src_pages, p), r, outbound[p])
    inflight = s._array(f"{dst_pool}.inflight")
    for p in s._members(dst_pages, _size(s, dst_pool)):  # NOTE(members-loop)
        inflight[p] = If(has(dst_pages, p), r, inflight[p])


def land(s: Any, r: Any) -> None:
    """Every transfer of request r in flight lands: its destination pages now hold r's KV.

    A transfer engine cannot cancel a write (Mooncake, NIXL), so this may happen after the
    receiver gave the pages up. Flags write-unowned where r no longer owns a page."""
    for pool in s.model.pools:
        holder = _holder_slot(s, pool)
        content = s._array(f"{pool}.content")
        inflight = s._array(f"{pool}.inflight")
        outbound = s._array(f"{pool}.outbound")
        size = _size(s, pool)
        landing = s._positions(f"{pool}.inflight", r)
        sending = s._positions(f"{pool}.outbound", r)
        for p in s._members(landing, size):  # NOTE(members-loop)
            incoming = has(landing, p)
            s._flag(WRITE_UNOWNED, incoming & ~_exclusive(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
            content[p] = If(incoming, r, content[p])
            inflight[p] = If(incoming, 0, inflight[p])
        for p in s._members(sending, size):  # NOTE(members-loop)
            outbound[p] = If(has(sending, p), 0, outbound[p])


def leak(s: Any, r: int) -> list[tuple[str, int, Any]]:
    """Per page: (pool, page, condition) under which finished request r still owns it."""
    done = s.model.spec.finished(s, r)
    out = []
    for pool in s.model.pools:
        mine = owned(s, pool, r)
        for p in s._members(mine, _size(s, pool)):  # NOTE(members-loop)
            out.append((pool, p, done & has(mine, p)))
    return out


__all__ = [
    "PROPERTIES", "alloc", "free", "write", "read", "send", "land", "share", "take", "owned", "free_pages",
    "in_flight", "reused", "holds", "leak",
]
