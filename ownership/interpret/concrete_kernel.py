"""The kernel's operations on a concrete state, at the cost of the pages they touch (docs/adr/0007).

ownership.kernel defines each operation once, in the spec language, for every interpreter:
loops over a pool's pages (unrolled when tracing) and `If` per page, and for a LIFO pool a
shift of the whole free list written as a `select` per entry. Run by the concrete interpreter
as it is, that costs a pool's size in Python steps per page (a shift is quadratic), which is
what kept fuzz at a few steps a second at 4,096 pages. Here are the same operations for a
`ConcreteState`, where every value is known: page sets are ints, the pages of a slot holding
a value are its `groups` (ownership.interpret.store), a free list is a chain of runs.

NOTE(one-semantics): this is not a second definition but the same one computed directly.
Each function calls the kernel's own `<op>_arguments` first (NOTE(one-check) in
ownership/kernel.py: the same spec errors, in the same order, at the same file and line),
then computes exactly the successor state, the flags (same property, page, request, other
and expected, in the generic code's order: by page, ascending, and within a page in the
order its `_flag` calls are written) and the value returned (its class too: the lifo `alloc`
of a Python 0 returns a Python 0, as the generic code does). tests/engines/test_concrete_scale.py
runs random operations on pools of every kind through both and compares them state by state;
`Concrete(model, generic_kernel=True)` runs the generic definition, for that test and for
the baseline of benchmarks/fuzz_scale.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import kernel
from ..kernel import (
    COUNT_BELOW_ZERO,
    DOUBLE_FREE,
    FREE_IN_FLIGHT,
    FREE_PINNED,
    READ_UNOWNED,
    STALE_READ,
    WRITE_UNOWNED,
)
from ..lang import faults
from ..lang.values import _low_bits
from .store import pages_of

if TYPE_CHECKING:
    from ..lang.model import PoolInfo, SlotInfo
    from .concrete import ConcreteState


def _int(x: Any) -> int:
    """The integer of a concrete value or a Python constant (a PageSet, an IntEnum member)."""
    v = getattr(x, "v", None)
    return int(x) if v is None else v


class Pool:
    """What the fast path needs of one pool of a state: its slots and its holders' fields."""

    __slots__ = ("name", "info", "size", "full", "holder", "content", "inflight", "outbound", "pins",
                 "incoming", "free_list", "bits", "ones", "requests")

    def __init__(self, s: ConcreteState, name: str) -> None:
        info: PoolInfo = s.model.pools[name]
        slot = s.model.by_name
        self.name = name
        self.info = info
        self.size = info.size
        self.full = (1 << info.size) - 1
        self.holder: SlotInfo = slot[f"{name}.holders" if info.shared else f"{name}.owner"]
        self.content: SlotInfo = slot[f"{name}.content"]
        self.inflight: SlotInfo = slot[f"{name}.inflight"]
        self.outbound: SlotInfo = slot[f"{name}.outbound"]
        self.pins: SlotInfo | None = slot.get(f"{name}.pins")
        self.incoming: SlotInfo | None = slot.get(f"{name}.incoming")
        self.free_list: SlotInfo | None = slot.get(f"{name}.free_list")
        self.bits = info.holders().bits if info.shared else 0
        self.ones = (1 << self.bits) - 1
        self.requests = s.model.requests

    def shift(self, who: Any) -> int:
        """Where `who`'s field starts in a holder value (kernel._unit, kernel._field)."""
        if isinstance(who, str):
            return (self.requests + self.info.owners.index(who)) * self.bits
        return (_int(who) - 1) * self.bits

    def unit(self, who: Any) -> int:
        return 1 << self.shift(who)

    def field(self, who: Any) -> int:
        return self.ones << self.shift(who)

    def count(self, value: int, who: Any) -> int:
        return (value >> self.shift(who)) & self.ones

    def holds(self, h: int, who: Any) -> bool:
        """kernel._holds on the holder value h."""
        return (h & self.field(who)) != 0 if self.info.shared else h == _int(who)

    def exclusive(self, h: int, who: Any) -> bool:
        """kernel._exclusive on the holder value h."""
        if self.info.shared:
            return h != 0 and (h & self.field(who)) == h
        return h == _int(who)


def _pool(s: ConcreteState, name: str) -> Pool:
    got = s._pools_fast.get(name)
    if got is None:
        got = s._pools_fast[name] = Pool(s, name)
    return got


def _members(pool: Pool, pages: Any) -> list[int]:
    return pages_of(_int(pages) & pool.full)


def _may_read(s: ConcreteState, pool: Pool, p: int, r: Any) -> bool:
    """kernel._may_read: r holds page p, or pins it."""
    held = pool.holds(s._value(pool.holder, p), r)
    if pool.pins is not None:
        return held or (s._value(pool.pins, p) & pool.field(r)) != 0
    return held


# -- operations -----------------------------------------------------------------------------------


def alloc(s: ConcreteState, name: str, r: Any, n: Any) -> Any:
    kernel.alloc_arguments(s, name, r, n)
    pool = _pool(s, name)
    want = _int(n)
    free = s._pages_with(pool.holder, 0)
    s.require(free.bit_count() >= want)
    if pool.free_list is not None:
        got = 0
        for p in s._list_pop(pool.free_list, want):
            if p < pool.size:
                got |= 1 << p
        if want == 0 and not hasattr(n, "v"):
            return 0  # (the generic code's `0 | If(0 > i, ..., 0)` over the pages: a Python 0)
    else:
        got = _low_bits(free, want)
    s._fill(pool.holder, got, pool.unit(r) if pool.info.shared else _int(r))
    return s._pages_value(got)


def take(s: ConcreteState, name: str, r: Any, pages: Any) -> None:
    kernel.take_arguments(s, name, r, pages)
    pool = _pool(s, name)
    if pool.info.shared:
        _reference(s, pool, pool.holder, r, pages, "take()")
        return
    s._fill(pool.holder, _int(pages) & pool.full, _int(r))


def share(s: ConcreteState, name: str, r: Any, pages: Any) -> None:
    kernel.share_arguments(s, name, r, pages)
    pool = _pool(s, name)
    _reference(s, pool, pool.holder, r, pages, "share()")


def pin(s: ConcreteState, name: str, who: Any, pages: Any) -> None:
    kernel.pin_arguments(s, name, who, pages, "pin()")
    pool = _pool(s, name)
    assert pool.pins is not None
    _reference(s, pool, pool.pins, who, pages, "pin()")


def _reference(s: ConcreteState, pool: Pool, slot: SlotInfo, who: Any, pages: Any, op: str) -> None:
    """kernel._reference: one more reference (or pin) of `who` on each of `pages`; in a counted
    pool, the lowest page where `who` already has `counted` is the spec error."""
    members = _members(pool, pages)
    old = [s._value(slot, p) for p in members]
    unit = pool.unit(who)
    counted = pool.info.counted
    if counted is None:
        s._write_pages(slot, members, [v | unit for v in old])
        return
    for p, v in zip(members, old):
        if pool.count(v, who) >= counted:
            s._check("count", True, lambda p=p: faults.count_message(op, pool.name, p, kernel._who_name(s, who), counted))
    s._write_pages(slot, members, [v + unit for v in old])


def unpin(s: ConcreteState, name: str, who: Any, pages: Any) -> None:
    kernel.pin_arguments(s, name, who, pages, "unpin()")
    pool = _pool(s, name)
    slot = pool.pins
    assert slot is not None
    unit = pool.unit(who)
    flagged = kernel._flagged(s, name, who)
    members = _members(pool, pages)
    new = []
    for p in members:
        v = s._value(slot, p)
        mine = pool.count(v, who) != 0
        if not mine:
            s._flag(COUNT_BELOW_ZERO, True, pool=name, page=p, request=flagged, other=v, text="pin")
        new.append(v - unit if mine else v)
    s._write_pages(slot, members, new)


def free(s: ConcreteState, name: str, r: Any, pages: Any) -> None:
    kernel.free_arguments(s, name, r, pages)
    pool = _pool(s, name)
    info = pool.info
    who = kernel._flagged(s, name, r) if info.shared else r
    unit = pool.unit(r) if info.shared else 0
    members = _members(pool, pages)
    new = []
    for p in members:
        h = s._value(pool.holder, p)
        mine = pool.holds(h, r)
        if not mine:
            if info.counted is not None and h == 0:
                s._flag(COUNT_BELOW_ZERO, True, pool=name, page=p, request=who, other=h)
            else:
                s._flag(DOUBLE_FREE, True, pool=name, page=p, request=who, other=h)
        into, out = s._value(pool.inflight, p), s._value(pool.outbound, p)
        left = (h - (unit if info.counted is not None else h & unit) if mine else h) if info.shared else 0
        freed = mine and left == 0 if info.shared else True  # NOTE(last-reference)
        if freed and (into != 0 or out != 0):
            s._flag(FREE_IN_FLIGHT, True, pool=name, page=p, request=who, other=into if into != 0 else out)
        if info.shared:
            if pool.pins is not None and mine and left == 0:
                pinned = s._value(pool.pins, p)
                if pinned != 0:
                    s._flag(FREE_PINNED, True, pool=name, page=p, request=who, other=pinned)
            new.append(left)
        else:
            new.append(0)
    s._write_pages(pool.holder, members, new)
    if pool.free_list is not None and members:
        # SGLang's paged allocator prepends freed pages (_release_page_ids): reused first.
        s._list_push(pool.free_list, members)


def write(s: ConcreteState, name: str, r: Any, pages: Any, key: Any = None) -> None:
    kernel.access_arguments(s, name, r, pages, key, "write()")
    pool = _pool(s, name)
    members = _members(pool, pages)
    for p in members:
        h = s._value(pool.holder, p)
        if not pool.exclusive(h, r):
            s._flag(WRITE_UNOWNED, True, pool=name, page=p, request=r, other=h)
    s._write_pages(pool.content, members, [_int(r if key is None else key)] * len(members))


def read(s: ConcreteState, name: str, r: Any, pages: Any, key: Any = None) -> None:
    kernel.access_arguments(s, name, r, pages, key, "read()")
    _read(s, _pool(s, name), r, pages, key)


def _read(s: ConcreteState, pool: Pool, r: Any, pages: Any, key: Any) -> None:
    expect = _int(r if key is None else key)
    for p in _members(pool, pages):
        if not _may_read(s, pool, p, r):
            s._flag(READ_UNOWNED, True, pool=pool.name, page=p, request=r, other=s._value(pool.holder, p))
        c = s._value(pool.content, p)
        if c != expect:
            s._flag(STALE_READ, True, pool=pool.name, page=p, request=r, other=c, expected=expect)


def send(s: ConcreteState, r: Any, src_name: str, src_pages: Any, dst_name: str, dst_pages: Any) -> None:
    kernel.send_arguments(s, r, src_name, src_pages, dst_name, dst_pages)
    src, dst = _pool(s, src_name), _pool(s, dst_name)
    if src.info.keys is None:
        _read(s, src, r, src_pages, None)
    else:
        for p in _members(src, src_pages):  # (kernel._held: a keyed source is read, not for r's KV)
            if not _may_read(s, src, p, r):
                s._flag(READ_UNOWNED, True, pool=src_name, page=p, request=r, other=s._value(src.holder, p))
        _copy_keys(s, src, src_pages, dst, dst_pages)
    sources = _members(src, src_pages)
    s._write_pages(src.outbound, sources, [_int(r)] * len(sources))
    targets = _members(dst, dst_pages)
    s._write_pages(dst.inflight, targets, [_int(r)] * len(targets))


def _copy_keys(s: ConcreteState, src: Pool, src_pages: Any, dst: Pool, dst_pages: Any) -> None:
    """kernel._copy_keys: the j-th lowest destination page will receive the key of the j-th
    lowest source page (0 where the source has fewer pages)."""
    sources = pages_of(_int(src_pages))  # (within the pool: send_arguments checked it)
    targets = _members(dst, dst_pages)
    keys = [s._value(src.content, sources[j]) if j < len(sources) else 0 for j in range(len(targets))]
    assert dst.incoming is not None
    s._write_pages(dst.incoming, targets, keys)


def land(s: ConcreteState, r: Any, name: str | None = None, pages: Any = None) -> None:
    kernel.land_arguments(s, r, name, pages)
    who = _int(r)
    for q in s.model.pools:
        if name is not None and q != name:
            continue
        pool = _pool(s, q)
        landing = s._pages_with(pool.inflight, who)
        if pages is not None:
            landing &= _int(pages)
        members = pages_of(landing & pool.full)
        for p in members:
            h = s._value(pool.holder, p)
            if not pool.exclusive(h, r):
                s._flag(WRITE_UNOWNED, True, pool=q, page=p, request=r, other=h)
        if pool.incoming is not None:  # a keyed pool receives the keys of the source pages
            s._write_pages(pool.content, members, [s._value(pool.incoming, p) for p in members])
            s._write_pages(pool.incoming, members, [0] * len(members))
        else:
            s._write_pages(pool.content, members, [who] * len(members))
        s._write_pages(pool.inflight, members, [0] * len(members))
    # the sources are released by the last landing (NOTE(sources-held) in ownership/kernel.py)
    if name is not None and any(s._pages_with(_pool(s, q).inflight, who) for q in s.model.pools):
        return
    for q in s.model.pools:
        pool = _pool(s, q)
        s._fill(pool.outbound, s._pages_with(pool.outbound, who) & pool.full, 0)


def reused(s: ConcreteState, name: str) -> Any:
    kernel.reused_arguments(s, name)
    pool = _pool(s, name)
    holders = s._group_of(pool.holder)
    busy = pool.full & ~holders.get(0, 0)
    out = 0
    for c, pages in s._group_of(pool.content).items():
        if c == 0 or c == pool.info.earlier:
            continue
        if not pool.info.shared:
            held = holders.get(c, 0)
        elif 1 <= c <= pool.requests:
            field = pool.field(c)
            held = 0
            for h, where in holders.items():
                if h & field:
                    held |= where
        else:
            held = 0
        out |= pages & busy & ~held
    return s._pages_value(out)


class FastKernel:
    """The kernel's operations on a concrete state (see the module docstring): a ConcreteState
    derives from this before ownership.kernel.KernelOperations, whose queries it keeps."""

    def alloc(self: Any, pool: str, r: Any, n: Any) -> Any:
        return alloc(self, pool, r, n)

    def free(self: Any, pool: str, r: Any, pages: Any) -> None:
        free(self, pool, r, pages)

    def write(self: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        write(self, pool, r, pages, key)

    def read(self: Any, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        read(self, pool, r, pages, key)

    def take(self: Any, pool: str, r: Any, pages: Any) -> None:
        take(self, pool, r, pages)

    def share(self: Any, pool: str, r: Any, pages: Any) -> None:
        share(self, pool, r, pages)

    def pin(self: Any, pool: str, who: Any, pages: Any) -> None:
        pin(self, pool, who, pages)

    def unpin(self: Any, pool: str, who: Any, pages: Any) -> None:
        unpin(self, pool, who, pages)

    def send(self: Any, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
        send(self, r, src_pool, src_pages, dst_pool, dst_pages)

    def land(self: Any, r: Any, pool: str | None = None, pages: Any = None) -> None:
        land(self, r, pool, pages)

    def reused(self: Any, pool: str) -> Any:
        return reused(self, pool)


__all__ = ["FastKernel"]
