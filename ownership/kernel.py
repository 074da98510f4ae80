"""The ownership kernel: shadow page state and the built-in properties of the bug class.

Every pool has, per page, ground truth that the protocol cannot lie about:
  owner[p]    which request owns page p (0: free); in a shared pool, holders[p] instead: the
              set of requests holding a reference (a prefix-cache hit shares a page), then
              the pool's owners that are not requests (`owners=`: the prefix cache's own
              reference, an offload worker), each a field of bits of one integer: one bit,
              or in a counted pool (`counted=N`) the holder's number of references;
  pins[p]     in a pool with pins, the same fields for pins (SGLang's lock_ref: a page
              pinned must not lose its last reference);
  content[p]  whose KV data the page holds (0: never written; r0: an earlier request's, in a
              warm pool), never cleared on free, exactly like a real GPU pool; in a keyed
              pool, a key chosen by the spec (a prefix's block hash) instead of a request;
  inflight[p] which request's transfer is writing into the page (0: none);
  outbound[p] which request's transfer is reading out of the page (0: none);
  incoming[p] in a keyed pool, the key that the transfer in flight into the page writes;
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

from .errors import SpecError
from .lang import faults, sorts
from .lang.location import spec_location
from .lang.properties import (
    COUNT_BELOW_ZERO,
    DOUBLE_FREE,
    FREE_IN_FLIGHT,
    FREE_PINNED,
    LEAK,
    PROPERTIES,
    READ_UNOWNED,
    STALE_READ,
    WRITE_UNOWNED,
)
from .lang.sorts import INT, PAGES
from .lang.spec import did_you_mean
from .lang.values import If, PageSet, count, first, has, nth, page, select

# The built-in properties' names live on the language's floor (ownership.lang.properties).
__all__ = [
    "COUNT_BELOW_ZERO", "DOUBLE_FREE", "FREE_IN_FLIGHT", "FREE_PINNED", "KernelOperations", "LEAK", "PROPERTIES", "READ_UNOWNED", "STALE_READ",
    "WRITE_UNOWNED", "alloc", "free", "write", "read", "send", "land", "fail", "share", "take", "pin", "unpin", "owned",
    "free_pages", "in_flight", "reused", "written", "holds", "references", "pinned_pages", "leak",
]


def _size(s: Any, pool: str) -> int:
    return s.model.pools[pool].size


def _shared(s: Any, pool: str) -> bool:
    return s.model.pools[pool].shared


def _holder_slot(s: Any, pool: str) -> Any:
    return s._array(f"{pool}.holders" if _shared(s, pool) else f"{pool}.owner")


# -- holders: a request (a term or an int) or, in a shared pool, an owner named by a string ------


def _fields(s: Any, pool: str) -> tuple[int, int]:
    """(bits per holder, the field's mask) of a shared pool's holders and pins."""
    bits = s.model.pools[pool].holders().bits
    return bits, (1 << bits) - 1


def _unit(s: Any, pool: str, who: Any) -> Any:
    """One reference of `who` in a shared pool's holder value: the lowest bit of its field
    (request r: field r-1; the k-th owner: field requests+k)."""
    bits, _ = _fields(s, pool)
    n = s.model.requests
    if isinstance(who, str):
        return 1 << ((n + s.model.pools[pool].owners.index(who)) * bits)
    return select([1 << (k * bits) for k in range(n)], who - 1, 0)


def _field(s: Any, pool: str, who: Any) -> Any:
    """The bits of `who`'s field in a shared pool's holder value."""
    bits, ones = _fields(s, pool)
    n = s.model.requests
    if isinstance(who, str):
        return ones << ((n + s.model.pools[pool].owners.index(who)) * bits)
    return select([ones << (k * bits) for k in range(n)], who - 1, 0)


def _count(s: Any, pool: str, value: Any, who: Any) -> Any:
    """How many references (or pins) `who` has in a holder value of a shared pool."""
    bits, ones = _fields(s, pool)
    n = s.model.requests
    if isinstance(who, str):
        return (value >> ((n + s.model.pools[pool].owners.index(who)) * bits)) & ones
    return select([(value >> (k * bits)) & ones for k in range(n)], who - 1, 0)


def _flagged(s: Any, pool: str, who: Any) -> Any:
    """`who` as a flag names it: a request id, or -(k+1) for the k-th owner of the pool."""
    return -(s.model.pools[pool].owners.index(who) + 1) if isinstance(who, str) else who


def _add(s: Any, pool: str, value: Any, who: Any, inside: Any, op: str, page_: int) -> Any:
    """`value` with one more reference (or pin) of `who` where `inside`: a set's bit, or in a
    counted pool one more in its count, which must stay within `counted` (a spec error)."""
    info = s.model.pools[pool]
    if info.counted is None:
        return If(inside, value | _unit(s, pool, who), value)
    full = _count(s, pool, value, who) >= info.counted
    if full is not False:
        s._check("count", inside & full, lambda: faults.count_message(
            op, pool, page_, _who_name(s, who), info.counted))
    return If(inside, value + _unit(s, pool, who), value)


def _who_name(s: Any, who: Any) -> str:
    return who if isinstance(who, str) else f"request r{s._int(who)}"


def _error(message: str) -> SpecError:
    file, line = spec_location()
    return SpecError(message, file=file, line=line)


# -- the arguments of every operation, checked once for every interpreter ----------------------


def _pool(s: Any, pool: Any, op: str) -> None:
    """A pool name the spec declares (else a spec error naming the pools there are)."""
    pools = s.model.pools
    if isinstance(pool, str) and pool in pools:
        return
    raise _error(f"{op}: {pool!r} is not a pool of this spec." + did_you_mean(str(pool), pools)
                 + f" Pools: {', '.join(pools) or '(none)'} (the name of the attribute declared with pool(...))")


def _request(s: Any, r: Any, op: str) -> None:
    """A request id 1..requests: at once when it is known, else where the state makes it one."""
    if isinstance(r, str):  # (an owner's name where only a request can act)
        raise _error(f"{op}: {r!r} is not a request; an owner that is not a request (pool(..., owners=...)) may"
                     " alloc, take, share, pin, unpin and free pages, and hold them, but only a request has KV to"
                     " write, read, send or land")
    sorts.expect(r, INT, f"{op}, the request")
    n = s.model.requests
    if isinstance(r, int):
        if not 1 <= r <= n:
            raise _error(faults.request_message(op, int(r), n))
        return
    bad = s._outside(r, 1, n)
    if bad is not False:
        s._check("request", bad, lambda: faults.request_message(op, s._int(r), n))


def _holder(s: Any, pool: str, who: Any, op: str) -> None:
    """A holder of `pool`: a request, or (a string) one of the pool's owners that are not
    requests (`owners=`)."""
    if not isinstance(who, str):
        _request(s, who, op)
        return
    owners = s.model.pools[pool].owners
    if who not in owners:
        known = f"its owners besides requests are {', '.join(owners)}" if owners else \
            "it has none besides requests (declare them: pool(..., owners=(\"cache\",)))"
        raise _error(f"{op}: {who!r} is not an owner of pool {pool}; {known}." + did_you_mean(who, owners))


def _pages(s: Any, pool: str, pages: Any, op: str) -> None:
    """A page set within the pool: a page outside it is a spec error, not silently dropped."""
    sorts.expect(pages, PAGES, f"{op}, the pages")
    size = _size(s, pool)
    outside = ~((1 << size) - 1)

    bad = s._has_bits(pages, outside)
    if bad is False:
        return

    def message() -> str:
        m = s._int(pages)
        shown = [p for p in range(size, max(m.bit_length(), size + 1)) if m >> p & 1] if m >= 0 else [-1]
        return faults.pool_message(op, pool, shown, size)

    s._check("pool", bad, message)


def _key(s: Any, pool: str, key: Any, op: str) -> None:
    """`key=` exactly for a keyed pool, and within its keys 1..K."""
    keys = s.model.pools[pool].keys
    if keys is None:
        if key is not None:
            raise _error(f"{op}: key= is for a pool whose content is keys; declare pool {pool} with keys=K,"
                         " or drop key=")
        return
    if key is None:
        raise _error(f"{op}: pool {pool} holds keys (pool(..., keys={keys})): say which with key=...")
    sorts.expect(key, INT, f"{op}, the key")
    if isinstance(key, int):
        if not 1 <= key <= keys:
            raise _error(faults.key_message(op, int(key), pool, keys))
        return
    s._check("key", s._outside(key, 1, keys), lambda: faults.key_message(op, s._int(key), pool, keys))


def _page_number(s: Any, pool: str, p: Any, op: str) -> None:
    if not isinstance(p, int) or isinstance(p, bool) or not 0 <= p < _size(s, pool):
        raise _error(f"{op}: page {p!r} is not a page of pool {pool} (0..{_size(s, pool) - 1}); give a"
                     " page number known when tracing, or use has(s.owned(pool, r), p)")


# -- queries ---------------------------------------------------------------------------------------


def holds(s: Any, pool: str, p: int, r: Any) -> Any:
    """Condition: request r owns page p (or, in a shared pool, is one of its holders; r may
    then be one of the pool's owners that are not requests)."""
    _pool(s, pool, "holds()")
    _page_number(s, pool, p, "holds()")
    _holder(s, pool, r, "holds()")
    return _holds(s, pool, p, r)


def references(s: Any, pool: str, p: int, who: Any) -> Any:
    """How many references `who` (a request, or an owner of the pool) holds on page p: 0 or
    1, or up to N in a counted pool (`counted=N`)."""
    _pool(s, pool, "references()")
    _page_number(s, pool, p, "references()")
    _holder(s, pool, who, "references()")
    h = _holder_slot(s, pool)[p]
    if _shared(s, pool):
        return _count(s, pool, h, who)
    return If(h == who, 1, 0)


def pinned_pages(s: Any, pool: str, who: Any = None) -> Any:
    """The set of pages of `pool` that `who` pins (or anybody, without `who`)."""
    _pool(s, pool, "pinned_pages()")
    _pins_of(s, pool, "pinned_pages()")
    if who is None:
        return s._bit_positions(f"{pool}.pins", (1 << (s.model.pools[pool].holders().bits
                                                      * (s.model.requests + len(s.model.pools[pool].owners)))) - 1)
    _holder(s, pool, who, "pinned_pages()")
    return s._bit_positions(f"{pool}.pins", _field(s, pool, who))


def _pins_of(s: Any, pool: str, op: str) -> None:
    if not s.model.pools[pool].pins:
        raise _error(f"{op}: pool {pool} keeps no pins; declare it with pool(..., pins=True)")


def _holds(s: Any, pool: str, p: int, r: Any) -> Any:
    h = _holder_slot(s, pool)[p]
    if _shared(s, pool):
        return (h & _field(s, pool, r)) != 0
    return h == r


def _exclusive(s: Any, pool: str, p: int, r: Any) -> Any:
    """Condition: request r alone holds page p (a write must not reach other holders)."""
    h = _holder_slot(s, pool)[p]
    if _shared(s, pool):
        return (h != 0) & ((h & _field(s, pool, r)) == h)
    return h == r


def _is_free(s: Any, pool: str, p: int) -> Any:
    return _holder_slot(s, pool)[p] == 0


def _no_keys(s: Any, pool: str, what: str) -> None:
    if s.model.pools[pool].keys is not None:
        raise _error(f"{what} is not defined for pool {pool}, whose content is keys, not requests")


def owned(s: Any, pool: str, r: Any) -> Any:
    """The set of pages of `pool` that request r owns (holds, in a shared pool; r may then be
    one of the pool's owners that are not requests)."""
    _pool(s, pool, "owned()")
    _holder(s, pool, r, "owned()")
    return _owned(s, pool, r)


def _owned(s: Any, pool: str, r: Any) -> Any:
    if _shared(s, pool):
        return s._bit_positions(f"{pool}.holders", _field(s, pool, r))
    return s._positions(f"{pool}.owner", r)


def free_pages(s: Any, pool: str) -> Any:
    """The set of free pages of `pool` (held by no request)."""
    _pool(s, pool, "free_pages()")
    return _free_pages(s, pool)


def _free_pages(s: Any, pool: str) -> Any:
    return s._positions(f"{pool}.holders" if _shared(s, pool) else f"{pool}.owner", 0)


def in_flight(s: Any, r: Any) -> Any:
    """Condition: a transfer of request r is still in flight (into or out of any page of any pool)."""
    _request(s, r, "in_flight()")
    out: Any = False
    for pool in s.model.pools:
        for name in ("inflight", "outbound"):
            out = out | (s._positions(f"{pool}.{name}", r) != 0)
    return out


def written(s: Any, pool: str, r: Any = None, key: Any = None) -> Any:
    """The set of pages of `pool` that hold request r's KV (written or landed for r), or in a
    keyed pool key `key` (`s.written(pool, key=k)`), whoever owns them now: the kernel's truth
    of what a page contains, for invariants and lemmas."""
    _pool(s, pool, "written()")
    if s.model.pools[pool].keys is not None:
        if r is not None:
            raise _error(f"written(): pool {pool} holds keys, not requests' KV: ask for the pages of a key with"
                         f" s.written({pool!r}, key=k)")
        _key(s, pool, key, "written()")
        return s._positions(f"{pool}.content", key)
    if key is not None or r is None:
        raise _error(f"written(): pool {pool} holds requests' KV: ask for a request's pages with"
                     f" s.written({pool!r}, r)")
    _request(s, r, "written()")
    return s._positions(f"{pool}.content", r)


def reused_arguments(s: Any, pool: Any) -> None:
    _pool(s, pool, "reused()")
    _no_keys(s, pool, "reused()")


def reused(s: Any, pool: str) -> Any:
    """The pages of `pool` owned by one request while holding another (modelled) request's KV."""
    reused_arguments(s, pool)
    content = s._array(f"{pool}.content")
    earlier = s.model.pools[pool].earlier
    out: Any = 0
    for p in range(_size(s, pool)):
        c = content[p]
        other = ~_is_free(s, pool, p) & (c != 0) & (c != earlier) & ~_holds(s, pool, p, c)
        out = out | If(other, page(p), 0)
    return out


# -- operations ------------------------------------------------------------------------------------


# NOTE(one-check): each operation's arguments are checked by one function, `<op>_arguments`,
# which the generic definition below and the concrete interpreter's fast path
# (ownership.interpret.concrete_kernel) both call first: one set of spec errors, one order.


def alloc_arguments(s: Any, pool: Any, r: Any, n: Any) -> None:
    _pool(s, pool, "alloc()")
    _holder(s, pool, r, "alloc()")
    sorts.expect(n, INT, "alloc(), the number of pages")
    if isinstance(n, int):
        if n < 0:
            raise _error(faults.alloc_message(pool, int(n)))
    else:
        s._check("alloc", s._outside(n, 0, None), lambda: faults.alloc_message(pool, s._int(n)))


def alloc(s: Any, pool: str, r: Any, n: Any) -> Any:
    """Request r takes n free pages; the action waits (is disabled) while fewer are free.

    Which pages: the lowest free ones ("lowest"), or the head of the free list ("lifo")."""
    alloc_arguments(s, pool, r, n)
    size = _size(s, pool)
    free = _free_pages(s, pool)
    s.require(count(free) >= n)
    if s.model.pools[pool].order == "lifo":
        fl = s._array(f"{pool}.free_list")
        old = list(fl)
        inside = PageSet((1 << size) - 1)
        got: Any = 0
        for i in range(size):
            got = got | If(n > i, page(select(old, i, size)) & inside, 0)
        for j in range(size):
            fl[j] = select(old, n + j, size)
    else:
        got = first(free, n)
    holder = _holder_slot(s, pool)
    mine = _unit(s, pool, r) if _shared(s, pool) else r
    for p in s._members(got, size):  # NOTE(members-loop)
        holder[p] = If(has(got, p), mine, holder[p])
    return got


def take_arguments(s: Any, pool: Any, r: Any, pages: Any) -> None:
    _pool(s, pool, "take()")
    if s.model.pools[pool].order == "lifo":
        raise _error(f"take() chooses pages itself; pool {pool} keeps its own free list"
                     " (order=\"lifo\"): use alloc(), or declare the pool with order=\"lowest\"")
    _holder(s, pool, r, "take()")
    _pages(s, pool, pages, "take()")


def take(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r takes `pages` that the spec's own allocator chose (e.g. vLLM's free queue).

    Nothing is checked here: if a page is still held by another request, the harm shows when
    either one writes or reads it (write-unowned, read-unowned, stale-read)."""
    take_arguments(s, pool, r, pages)
    if _shared(s, pool):
        _reference(s, pool, "holders", r, pages, "take()")
        return
    holder = _holder_slot(s, pool)
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        holder[p] = If(has(pages, p), r, holder[p])


def share_arguments(s: Any, pool: Any, r: Any, pages: Any) -> None:
    _pool(s, pool, "share()")
    if not _shared(s, pool):
        raise _error(f"share() needs a shared pool; declare {pool} = pool(..., shared=True)")
    _holder(s, pool, r, "share()")
    _pages(s, pool, pages, "share()")


def share(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r (or an owner of the pool) takes a reference to `pages` of a shared pool (a
    prefix-cache hit; in a counted pool, one more reference)."""
    share_arguments(s, pool, r, pages)
    _reference(s, pool, "holders", r, pages, "share()")


def _reference(s: Any, pool: str, kind: str, who: Any, pages: Any, op: str) -> None:
    """One more reference (kind "holders") or pin ("pins") of `who` on each of `pages`."""
    arr = s._array(f"{pool}.{kind}")
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        arr[p] = _add(s, pool, arr[p], who, has(pages, p), op, p)


def pin_arguments(s: Any, pool: Any, who: Any, pages: Any, op: str) -> None:
    """The arguments of pin() and unpin() (`op`)."""
    _pool(s, pool, op)
    _pins_of(s, pool, op)
    _holder(s, pool, who, op)
    _pages(s, pool, pages, op)


def pin(s: Any, pool: str, who: Any, pages: Any) -> None:
    """`who` (a request, or an owner of the pool) pins `pages`: while a page is pinned, its
    last reference must not be dropped (free-pinned). In a counted pool pins count too."""
    pin_arguments(s, pool, who, pages, "pin()")
    _reference(s, pool, "pins", who, pages, "pin()")


def unpin(s: Any, pool: str, who: Any, pages: Any) -> None:
    """`who` drops a pin of each of `pages`; one it does not have is count-below-zero."""
    pin_arguments(s, pool, who, pages, "unpin()")
    pins = s._array(f"{pool}.pins")
    unit = _unit(s, pool, who)
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        inside = has(pages, p)
        mine = _count(s, pool, pins[p], who) != 0
        s._flag(COUNT_BELOW_ZERO, inside & ~mine, pool=pool, page=p, request=_flagged(s, pool, who), other=pins[p],
                text="pin")
        pins[p] = If(inside & mine, pins[p] - unit, pins[p])


def free_arguments(s: Any, pool: Any, r: Any, pages: Any) -> None:
    _pool(s, pool, "free()")
    _holder(s, pool, r, "free()")
    _pages(s, pool, pages, "free()")


def free(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r (or an owner of a shared pool) returns `pages` (in a shared pool: drops one
    reference). Flags double-free and free-in-flight (in a shared pool, where the page's last
    reference goes: NOTE(last-reference)); in a counted pool, a reference dropped on a page
    nobody holds is count-below-zero; in a pool with pins, dropping a page's last reference
    while it is pinned is free-pinned."""
    free_arguments(s, pool, r, pages)
    size = _size(s, pool)
    holder = _holder_slot(s, pool)
    inflight = s._array(f"{pool}.inflight")
    outbound = s._array(f"{pool}.outbound")
    info = s.model.pools[pool]
    who = _flagged(s, pool, r) if info.shared else r
    for p in s._members(pages, size):  # NOTE(members-loop)
        inside = has(pages, p)
        h = holder[p]
        mine = _holds(s, pool, p, r)
        if info.counted is not None:  # (nobody holds it: the count itself goes below zero)
            s._flag(DOUBLE_FREE, inside & ~mine & (h != 0), pool=pool, page=p, request=who, other=h)
            s._flag(COUNT_BELOW_ZERO, inside & ~mine & (h == 0), pool=pool, page=p, request=who, other=h)
        else:
            s._flag(DOUBLE_FREE, inside & ~mine, pool=pool, page=p, request=who, other=h)
        busy = (inflight[p] != 0) | (outbound[p] != 0)
        if info.shared:
            # NOTE(last-reference): a page of a shared pool is freed when its last reference
            # goes; dropping one while others keep the page allocated frees nothing, and is no
            # free-in-flight (a transfer's own reference keeps its pages: issue 31)
            drop = _unit(s, pool, r) if info.counted is not None else h & _unit(s, pool, r)
            freed = inside & mine & (h - drop == 0)
        else:
            freed = inside
        s._flag(FREE_IN_FLIGHT, freed & busy, pool=pool, page=p, request=who,
                other=If(inflight[p] != 0, inflight[p], outbound[p]))
        if info.shared:
            holder[p] = If(inside & mine, h - drop, h)
            if info.pins:  # the last reference goes while the page is pinned
                pins = s._array(f"{pool}.pins")[p]
                s._flag(FREE_PINNED, inside & mine & (holder[p] == 0) & (pins != 0), pool=pool, page=p,
                        request=who, other=pins)
        else:
            holder[p] = If(inside, 0, h)
    if s.model.pools[pool].order == "lifo":
        # SGLang's paged allocator prepends freed pages (_release_page_ids): reused first.
        fl = s._array(f"{pool}.free_list")
        old = list(fl)
        k = count(pages)
        for j in range(size):
            fl[j] = If(k > j, nth(pages, j, size), select(old, j - k, size))


def access_arguments(s: Any, pool: Any, r: Any, pages: Any, key: Any, op: str) -> None:
    """The arguments of write() and read() (`op`)."""
    _pool(s, pool, op)
    _request(s, r, op)
    _pages(s, pool, pages, op)
    _key(s, pool, key, op)


def write(s: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
    """Request r computes KV into `pages`: its own, or content `key` in a keyed pool.
    Flags write-unowned (in a shared pool: unless r is the only holder)."""
    access_arguments(s, pool, r, pages, key, "write()")
    holder = _holder_slot(s, pool)
    content = s._array(f"{pool}.content")
    value = r if key is None else key
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        inside = has(pages, p)
        s._flag(WRITE_UNOWNED, inside & ~_exclusive(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
        content[p] = If(inside, value, content[p])


def read(s: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
    """Request r attends over `pages`, expecting its own KV (or content `key` in a keyed pool).
    Flags read-unowned (unless r holds or pins each page) and stale-read."""
    access_arguments(s, pool, r, pages, key, "read()")
    _read(s, pool, r, pages, key)


def _may_read(s: Any, pool: str, p: int, r: Any) -> Any:
    """Condition: r may read page p: it holds it, or it pins it (a pin, like SGLang's lock_ref
    on a radix node, lets a request use pages that the tree holds)."""
    if s.model.pools[pool].pins:
        return _holds(s, pool, p, r) | ((s._array(f"{pool}.pins")[p] & _field(s, pool, r)) != 0)
    return _holds(s, pool, p, r)


def _read(s: Any, pool: str, r: Any, pages: Any, key: Any) -> None:
    holder = _holder_slot(s, pool)
    content = s._array(f"{pool}.content")
    expect = r if key is None else key
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        inside = has(pages, p)
        s._flag(READ_UNOWNED, inside & ~_may_read(s, pool, p, r), pool=pool, page=p, request=r, other=holder[p])
        s._flag(STALE_READ, inside & (content[p] != expect), pool=pool, page=p, request=r, other=content[p],
                expected=expect)


def send_arguments(s: Any, r: Any, src_pool: Any, src_pages: Any, dst_pool: Any, dst_pages: Any) -> None:
    _pool(s, src_pool, "send()")
    _pool(s, dst_pool, "send()")
    keys = s.model.pools[src_pool].keys
    if keys != s.model.pools[dst_pool].keys:
        raise _error(f"send(): pools {src_pool} and {dst_pool} hold different kinds of content"
                     f" ({_content_kind(s, src_pool)}, {_content_kind(s, dst_pool)}); a transfer copies requests'"
                     " KV between pools of requests, or keys between pools of the same keys")
    _request(s, r, "send()")
    _pages(s, src_pool, src_pages, "send(), the source")
    _pages(s, dst_pool, dst_pages, "send(), the destination")


def send(s: Any, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
    """Start a transfer of request r's KV from `src_pages` into `dst_pages` (RDMA in flight).

    The source pages are read now (checked as a read by r); the destination pages are written
    when the transfer lands (`land`). Until then both are marked in flight.

    Between two keyed pools (content: keys, e.g. block hashes) a transfer copies keys: the
    j-th lowest destination page receives the key of the j-th lowest source page (none where
    the source has fewer pages), and the source is checked as held by r, not for r's KV."""
    send_arguments(s, r, src_pool, src_pages, dst_pool, dst_pages)
    if s.model.pools[src_pool].keys is None:
        _read(s, src_pool, r, src_pages, None)
    else:
        _held(s, src_pool, r, src_pages)
        _copy_keys(s, src_pool, src_pages, dst_pool, dst_pages)
    outbound = s._array(f"{src_pool}.outbound")
    for p in s._members(src_pages, _size(s, src_pool)):  # NOTE(members-loop)
        outbound[p] = If(has(src_pages, p), r, outbound[p])
    inflight = s._array(f"{dst_pool}.inflight")
    for p in s._members(dst_pages, _size(s, dst_pool)):  # NOTE(members-loop)
        inflight[p] = If(has(dst_pages, p), r, inflight[p])


def _content_kind(s: Any, pool: str) -> str:
    keys = s.model.pools[pool].keys
    return "requests' KV" if keys is None else f"{keys} keys"


def _held(s: Any, pool: str, r: Any, pages: Any) -> None:
    """Request r reads `pages` without expecting its own KV (a keyed source): read-unowned only."""
    holder = _holder_slot(s, pool)
    for p in s._members(pages, _size(s, pool)):  # NOTE(members-loop)
        s._flag(READ_UNOWNED, has(pages, p) & ~_may_read(s, pool, p, r), pool=pool, page=p, request=r,
                other=holder[p])


def _copy_keys(s: Any, src_pool: str, src: Any, dst_pool: str, dst: Any) -> None:
    """The key each destination page will receive when the transfer lands (`incoming`)."""
    content = list(s._array(f"{src_pool}.content"))
    incoming = s._array(f"{dst_pool}.incoming")
    n = count(src)
    src_size = _size(s, src_pool)
    for p in s._members(dst, _size(s, dst_pool)):  # NOTE(members-loop)
        rank = count(dst & PageSet((1 << p) - 1))       # destination pages below p
        key = If(rank < n, select(content, nth(src, rank, src_size), 0), 0)
        incoming[p] = If(has(dst, p), key, incoming[p])


def land_arguments(s: Any, r: Any, pool: Any, pages: Any) -> None:
    _request(s, r, "land()")
    if pages is not None and pool is None:
        raise _error("land(r, pages=...): a partial landing names its pool: land(r, pool, pages)")
    if pool is not None:
        _pool(s, pool, "land()")
    if pages is not None:
        _pages(s, pool, pages, "land(), the pages")


def land(s: Any, r: Any, pool: str | None = None, pages: Any = None) -> None:
    """Transfers of request r in flight land: their destination pages now hold r's KV. All of
    them (`land(r)`), those into one pool (`land(r, "aux")`: several transfers of a request in
    flight at once, each landing on its own), or those into some pages of a pool
    (`land(r, "decode", pages)`: a partial landing, a transfer that lands in chunks).

    NOTE(sources-held): the kernel does not pair a source page with its destination, so r's
    source pages stay read (outbound: freeing one is free-in-flight) until no transfer of r is
    in flight any more, i.e. until its last landing. A transfer engine cannot cancel a write
    (Mooncake, NIXL), so a landing may happen after the receiver gave the pages up: it flags
    write-unowned where r no longer owns a page."""
    land_arguments(s, r, pool, pages)
    _end(s, r, pool, pages, None)


def fail_arguments(s: Any, r: Any, pool: Any, pages: Any, wrote: Any) -> None:
    land_arguments(s, r, pool, pages)
    if wrote is not None:
        if pool is None:
            raise _error("fail(r, wrote=...): the pages written before the failure are pages of one pool: name it,"
                         " fail(r, pool, wrote=pages)")
        _pages(s, pool, wrote, "fail(), wrote")


def fail(s: Any, r: Any, pool: str | None = None, pages: Any = None, wrote: Any = None) -> None:
    """Transfers of request r in flight end without landing: they failed (the transport
    reported an error, a timeout gave up on them) or were cancelled and quiesced (the
    transport guarantees that no write lands any more). Which ones: as for `land`. Their
    destination pages keep what they held, so a later read of one expecting r's KV is
    stale-read; `wrote=pages` (of `pool`): those pages had received r's KV before the
    failure (a transfer that fails after writing part of its pages). Their sources are
    released as by a landing (NOTE(sources-held)).

    A cancellation that does not quiesce the transport is no kernel operation: the write is
    still in flight (freeing its pages is free-in-flight) and may land later (`land`)."""
    fail_arguments(s, r, pool, pages, wrote)
    _end(s, r, pool, pages, 0 if wrote is None else wrote)


def _end(s: Any, r: Any, pool: str | None, pages: Any, wrote: Any) -> None:
    """Transfers of r in flight end (into `pool`, into `pages` of it); the destination pages
    receive r's KV (or their keys) where `wrote` has them (None: every page, a landing)."""
    for q in s.model.pools:
        if pool is not None and q != pool:
            continue
        holder = _holder_slot(s, q)
        content = s._array(f"{q}.content")
        inflight = s._array(f"{q}.inflight")
        landing = s._positions(f"{q}.inflight", r)
        if pages is not None:
            landing = landing & pages
        keyed = s.model.pools[q].keys is not None
        keys = s._array(f"{q}.incoming") if keyed else None
        for p in s._members(landing, _size(s, q)):  # NOTE(members-loop)
            ending = has(landing, p)
            incoming = ending if wrote is None else ending & has(wrote, p)
            if incoming is not False:
                s._flag(WRITE_UNOWNED, incoming & ~_exclusive(s, q, p, r), pool=q, page=p, request=r,
                        other=holder[p])
            if keys is not None:  # a keyed pool receives the keys of the source pages
                content[p] = If(incoming, keys[p], content[p])
                keys[p] = If(ending, 0, keys[p])
            else:
                content[p] = If(incoming, r, content[p])
            inflight[p] = If(ending, 0, inflight[p])
    # the sources are released by the last landing (NOTE(sources-held))
    done: Any = True
    if pool is not None:  # (a landing of some transfers: the last one if none is left)
        for q in s.model.pools:
            done = done & (s._positions(f"{q}.inflight", r) == 0)
    for q in s.model.pools:
        outbound = s._array(f"{q}.outbound")
        sending = s._positions(f"{q}.outbound", r)
        for p in s._members(sending, _size(s, q)):  # NOTE(members-loop)
            released = has(sending, p) if done is True else has(sending, p) & done
            outbound[p] = If(released, 0, outbound[p])


def leak(s: Any, r: int) -> list[tuple[str, int, Any]]:
    """Per page: (pool, page, condition) under which finished request r still owns it."""
    done = s._property(type(s.model.spec).finished, f"finished(s, r={r})", r)
    out = []
    for pool in s.model.pools:
        mine = _owned(s, pool, r)
        for p in s._members(mine, _size(s, pool)):  # NOTE(members-loop)
            out.append((pool, p, done & has(mine, p)))
    return out


class KernelOperations:
    """The kernel's operations as methods of the state `s` of an action (`s.alloc(...)`): every
    interpreter's state class derives from this and from ownership.lang.state.StateView, so
    the language itself never imports the kernel."""

    def alloc(self, pool: str, r: Any, n: Any) -> Any:
        return alloc(self, pool, r, n)

    def free(self, pool: str, r: Any, pages: Any) -> None:
        free(self, pool, r, pages)

    def write(self, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        write(self, pool, r, pages, key)

    def read(self, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        read(self, pool, r, pages, key)

    def take(self, pool: str, r: Any, pages: Any) -> None:
        take(self, pool, r, pages)

    def share(self, pool: str, r: Any, pages: Any) -> None:
        share(self, pool, r, pages)

    def pin(self, pool: str, who: Any, pages: Any) -> None:
        pin(self, pool, who, pages)

    def unpin(self, pool: str, who: Any, pages: Any) -> None:
        unpin(self, pool, who, pages)

    def holds(self, pool: str, p: int, r: Any) -> Any:
        return holds(self, pool, p, r)

    def references(self, pool: str, p: int, who: Any) -> Any:
        return references(self, pool, p, who)

    def pinned_pages(self, pool: str, who: Any = None) -> Any:
        return pinned_pages(self, pool, who)

    def send(self, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
        send(self, r, src_pool, src_pages, dst_pool, dst_pages)

    def land(self, r: Any, pool: str | None = None, pages: Any = None) -> None:
        land(self, r, pool, pages)

    # -- reached as s.kernel.<name> only (NOTE(kernel-namespace)) --

    def _kernel_fail(self, r: Any, pool: str | None = None, pages: Any = None, wrote: Any = None) -> None:
        fail(self, r, pool, pages, wrote)

    def owned(self, pool: str, r: Any) -> Any:
        return owned(self, pool, r)

    def free_pages(self, pool: str) -> Any:
        return free_pages(self, pool)

    def in_flight(self, r: Any) -> Any:
        return in_flight(self, r)

    def reused(self, pool: str) -> Any:
        return reused(self, pool)

    def written(self, pool: str, r: Any = None, key: Any = None) -> Any:
        return written(self, pool, r, key)

