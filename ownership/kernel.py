"""The ownership kernel: shadow page state and the built-in properties of the bug class.

Every pool has, per page, ground truth that the protocol cannot lie about:
  owner[p]    which request owns page p (0: free);
  content[p]  whose KV data the page holds (0: never written; r0: an earlier request's, in a
              warm pool), never cleared on free, exactly like a real GPU pool;
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

from .lang.values import If, count, first, has, nth, page, select

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


def owned(s: Any, pool: str, r: Any) -> Any:
    """The set of pages of `pool` that request r owns."""
    owner = s._array(f"{pool}.owner")
    out: Any = 0
    for p in range(_size(s, pool)):
        out = out | If(owner[p] == r, 1 << p, 0)
    return out


def free_pages(s: Any, pool: str) -> Any:
    """The set of free pages of `pool`."""
    return owned(s, pool, 0)


def in_flight(s: Any, r: Any) -> Any:
    """Condition: a transfer of request r is still in flight (into or out of any page)."""
    out: Any = False
    for pool in s.model.pools:
        for name in ("inflight", "outbound"):
            marks = s._array(f"{pool}.{name}")
            for p in range(_size(s, pool)):
                out = out | (marks[p] == r)
    return out


def reused(s: Any, pool: str) -> Any:
    """The pages of `pool` owned by one request while holding another (modelled) request's KV."""
    owner = s._array(f"{pool}.owner")
    content = s._array(f"{pool}.content")
    earlier = s.model.earlier
    out: Any = 0
    for p in range(_size(s, pool)):
        other = (owner[p] != 0) & (content[p] != 0) & (content[p] != owner[p]) & (content[p] != earlier)
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
    owner = s._array(f"{pool}.owner")
    for p in range(size):
        owner[p] = If(has(got, p), r, owner[p])
    return got


def free(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r returns `pages` to the pool. Flags double-free and free-in-flight."""
    size = _size(s, pool)
    owner = s._array(f"{pool}.owner")
    inflight = s._array(f"{pool}.inflight")
    outbound = s._array(f"{pool}.outbound")
    for p in range(size):
        inside = has(pages, p)
        s._flag(DOUBLE_FREE, inside & (owner[p] != r), pool=pool, page=p, request=r, other=owner[p])
        busy = (inflight[p] != 0) | (outbound[p] != 0)
        s._flag(FREE_IN_FLIGHT, inside & busy, pool=pool, page=p, request=r,
                other=If(inflight[p] != 0, inflight[p], outbound[p]))
        owner[p] = If(inside, 0, owner[p])
    if s.model.pools[pool].order == "lifo":
        # SGLang's paged allocator prepends freed pages (_release_page_ids): reused first.
        fl = s._array(f"{pool}.free_list")
        old = list(fl)
        k = count(pages)
        for j in range(size):
            fl[j] = If(j < k, nth(pages, j, size), select(old, j - k, size))


def write(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r computes its KV into `pages`. Flags write-unowned."""
    owner = s._array(f"{pool}.owner")
    content = s._array(f"{pool}.content")
    for p in range(_size(s, pool)):
        inside = has(pages, p)
        s._flag(WRITE_UNOWNED, inside & (owner[p] != r), pool=pool, page=p, request=r, other=owner[p])
        content[p] = If(inside, r, content[p])


def read(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r attends over `pages`. Flags read-unowned and stale-read."""
    owner = s._array(f"{pool}.owner")
    content = s._array(f"{pool}.content")
    for p in range(_size(s, pool)):
        inside = has(pages, p)
        s._flag(READ_UNOWNED, inside & (owner[p] != r), pool=pool, page=p, request=r, other=owner[p])
        s._flag(STALE_READ, inside & (content[p] != r), pool=pool, page=p, request=r, other=content[p])


def send(s: Any, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
    """Start a transfer of request r's KV from `src_pages` into `dst_pages` (RDMA in flight).

    The source pages are read now (checked as a read by r); the destination pages are written
    when the transfer lands (`land`). Until then both are marked in flight."""
    read(s, src_pool, r, src_pages)
    outbound = s._array(f"{src_pool}.outbound")
    for p in range(_size(s, src_pool)):
        outbound[p] = If(has(src_pages, p), r, outbound[p])
    inflight = s._array(f"{dst_pool}.inflight")
    for p in range(_size(s, dst_pool)):
        inflight[p] = If(has(dst_pages, p), r, inflight[p])


def land(s: Any, r: Any) -> None:
    """Every transfer of request r in flight lands: its destination pages now hold r's KV.

    A transfer engine cannot cancel a write (Mooncake, NIXL), so this may happen after the
    receiver gave the pages up. Flags write-unowned where r no longer owns a page."""
    for pool in s.model.pools:
        owner = s._array(f"{pool}.owner")
        content = s._array(f"{pool}.content")
        inflight = s._array(f"{pool}.inflight")
        outbound = s._array(f"{pool}.outbound")
        for p in range(_size(s, pool)):
            incoming = inflight[p] == r
            s._flag(WRITE_UNOWNED, incoming & (owner[p] != r), pool=pool, page=p, request=r, other=owner[p])
            content[p] = If(incoming, r, content[p])
            inflight[p] = If(incoming, 0, inflight[p])
            outbound[p] = If(outbound[p] == r, 0, outbound[p])


def leak(s: Any, r: int) -> list[tuple[str, int, Any]]:
    """Per page: (pool, page, condition) under which finished request r still owns it."""
    done = s.model.spec.finished(s, r)
    out = []
    for pool in s.model.pools:
        owner = s._array(f"{pool}.owner")
        for p in range(_size(s, pool)):
            out.append((pool, p, done & (owner[p] == r)))
    return out


__all__ = [
    "PROPERTIES", "alloc", "free", "write", "read", "send", "land", "owned", "free_pages",
    "in_flight", "reused", "leak",
]
