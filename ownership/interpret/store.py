"""How the concrete interpreter stores a state, so that a step costs what it changes (docs/adr/0007).

A state of a model is a flat tuple of ints (ownership.lang.model), and at real pool sizes a
tuple of several slots per page: 65,536 pages make 330,000 positions, and copying, hashing or
comparing that tuple on every step costs more than the step itself. A `Packed` state holds the
same values so that a successor shares what it did not change with its predecessor:

- the positions in chunks of CHUNK, a successor copying only the chunks it writes;
- each LIFO free list (`{pool}.free_list`) as a `Chain` of runs, so that handing out the
  head (alloc) and prepending freed pages (free) cost the pages moved, not the pool;
- per page slot, once asked for, its `groups`: each value's page set (an int bitmask), which
  the kernel's queries read (`_positions`) and every write keeps up to date;
- its polynomial hash over the flat values (sum of value * BASE**position mod 2**61 - 1),
  kept up to date by every write, so that fuzz's count of distinct states costs O(1) a step.

`Packed.flat()` is the flat tuple again, the one state every engine, trace and test knows;
two Packed states are equal exactly when their flat tuples are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..lang.model import Model, SlotInfo

#: Positions per chunk (a power of two): a write copies one chunk, a step the outer tuple.
CHUNK_BITS = 8
CHUNK = 1 << CHUNK_BITS
LOW = CHUNK - 1

#: What a step logs as read or written (ownership.interpret.concrete.ConcreteStore): a
#: position, a page slot's or free list's name, or (page slot, value).
Key = int | str | tuple[str, int]

#: The hash is sum(value * BASE**position) mod MODULUS, the same in every process.
MODULUS = (1 << 61) - 1
BASE = 0x2545F4914F6CDD1D % MODULUS


class Layout:
    """Where a model's slots lie in chunks, and the powers of BASE its hash needs."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.width = model.width
        self.chunks = (self.width + CHUNK - 1) >> CHUNK_BITS
        #: the LIFO free lists, each by its index in Packed.lists
        self.free_lists: list[SlotInfo] = [s for s in model.slots if s.free_list]
        self.list_of: dict[str, int] = {s.name: k for k, s in enumerate(self.free_lists)}
        self._within: list[int] | None = None
        self._chunk_pow: list[int] | None = None
        self._inverse = pow(BASE - 1, -1, MODULUS)

    def power(self, i: int) -> int:
        """BASE**i mod MODULUS, for 0 <= i <= width (two table look-ups)."""
        if self._within is None:
            within = [1] * CHUNK
            for j in range(1, CHUNK):
                within[j] = within[j - 1] * BASE % MODULUS
            step = within[-1] * BASE % MODULUS
            chunk_pow = [1] * (self.chunks + 2)
            for k in range(1, len(chunk_pow)):
                chunk_pow[k] = chunk_pow[k - 1] * step % MODULUS
            self._within, self._chunk_pow = within, chunk_pow
        assert self._chunk_pow is not None
        return self._chunk_pow[i >> CHUNK_BITS] * self._within[i & LOW] % MODULUS

    def series(self, n: int) -> int:
        """BASE**0 + ... + BASE**(n-1) mod MODULUS."""
        return (self.power(n) - 1) * self._inverse % MODULUS

    def hash_flat(self, flat: tuple[int, ...] | list[int]) -> int:
        """The hash of a flat state, from scratch (Horner's rule from the last position)."""
        h = 0
        for v in reversed(flat):
            h = (h * BASE + v) % MODULUS
        return h


# -- LIFO free lists: a chain of runs -----------------------------------------------------------


class Run:
    """A tuple of free-list entries, with its suffix hashes once a hash needs them."""

    __slots__ = ("entries", "_suffix")

    def __init__(self, entries: tuple[int, ...]) -> None:
        self.entries = entries
        self._suffix: list[int] | None = None

    def hash_from(self, start: int) -> int:
        """The hash of entries[start:] (entry start at power 0)."""
        suffix = self._suffix
        if suffix is None:
            suffix = [0] * (len(self.entries) + 1)
            for i in range(len(self.entries) - 1, -1, -1):
                suffix[i] = (suffix[i + 1] * BASE + self.entries[i]) % MODULUS
            self._suffix = suffix
        return suffix[start]


class Chain:
    """The entries of a free list before its padding, as runs: run.entries[start:], then `rest`.

    Immutable; a free list is a Chain or None (no entries: all padding). Its flat slot is the
    entries followed by the pool size (no page) up to the pool's size."""

    __slots__ = ("run", "start", "rest", "length", "_hash")

    def __init__(self, run: Run, start: int, rest: Chain | None) -> None:
        self.run = run
        self.start = start
        self.rest = rest
        self.length: int = len(run.entries) - start + (rest.length if rest is not None else 0)
        self._hash: int | None = None


def chain_hash(chain: Chain | None, layout: Layout) -> int:
    """The hash of a chain's entries (the first at power 0), computed once per link."""
    pending = []
    c = chain
    while c is not None and c._hash is None:
        pending.append(c)
        c = c.rest
    h = 0 if c is None else c._hash
    assert h is not None
    for link in reversed(pending):
        own = len(link.run.entries) - link.start
        h = (link.run.hash_from(link.start) + layout.power(own) * h) % MODULUS
        link._hash = h
    return h


def list_hash(chain: Chain | None, size: int, layout: Layout) -> int:
    """The hash of a free list's flat slot: its entries, then `size` as padding up to `size`."""
    n = 0 if chain is None else chain.length
    pad = (layout.series(size) - layout.series(n)) % MODULUS
    return (chain_hash(chain, layout) + size * pad) % MODULUS


def chain_entries(chain: Chain | None, limit: int | None = None) -> list[int]:
    """The first `limit` entries of a chain (all without a limit)."""
    out: list[int] = []
    c = chain
    while c is not None and (limit is None or len(out) < limit):
        entries = c.run.entries
        stop = len(entries) if limit is None else min(len(entries), c.start + limit - len(out))
        out.extend(entries[c.start:stop])
        c = c.rest
    return out


def chain_of(entries: list[int] | tuple[int, ...], size: int) -> Chain | None:
    """The chain of a free list's flat values (trailing padding dropped)."""
    n = len(entries)
    while n and entries[n - 1] == size:
        n -= 1
    return Chain(Run(tuple(entries[:n])), 0, None) if n else None


def chain_pop(chain: Chain | None, n: int) -> tuple[list[int], Chain | None]:
    """The first n entries (fewer if there are fewer) and the chain after them."""
    taken = chain_entries(chain, n)
    left = len(taken)
    c = chain
    while c is not None and left:
        own = len(c.run.entries) - c.start
        if own > left:
            return taken, Chain(c.run, c.start + left, c.rest)
        left -= own
        c = c.rest
    return taken, c


def chain_push(chain: Chain | None, pages: list[int], size: int) -> Chain | None:
    """`pages` before the chain's entries, keeping the first `size` entries in all."""
    if not pages:
        return chain
    out = Chain(Run(tuple(pages)), 0, chain)
    if out.length > size:  # (entries fall off the end: only a list that lost track of the pages)
        return chain_of(chain_entries(out, size), size)
    return out


def list_flat(chain: Chain | None, size: int) -> list[int]:
    """The flat values of a free list's slot."""
    entries = chain_entries(chain)
    return entries + [size] * (size - len(entries))


# -- a packed state -------------------------------------------------------------------------------


class Packed:
    """One state of a model, immutable, sharing its unchanged parts with its predecessor.

    `chunks` hold every position (a free list's positions there are stale: its values are
    `lists`); `groups` is a cache of derived page sets (slot name -> value -> pages), filled
    as the kernel's queries ask; `_hash` is the hash of `flat()`, None until asked for."""

    __slots__ = ("layout", "chunks", "lists", "groups", "_hash", "_flat")

    def __init__(self, layout: Layout, chunks: tuple[Any, ...], lists: tuple[Chain | None, ...],
                 groups: dict[str, dict[int, int]], hash_: int | None) -> None:
        self.layout = layout
        self.chunks = chunks
        self.lists = lists
        self.groups = groups
        self._hash = hash_
        self._flat: tuple[int, ...] | None = None

    @classmethod
    def of(cls, layout: Layout, flat: tuple[int, ...]) -> Packed:
        """The packed form of a flat state."""
        if type(flat) is not tuple:  # (a list: never shared with the caller, who may change it)
            flat = tuple(flat)
        if len(flat) <= CHUNK:
            chunks: tuple[Any, ...] = (flat,) if flat else ()
        else:
            chunks = tuple(flat[k:k + CHUNK] for k in range(0, len(flat), CHUNK))
        lists = tuple(chain_of(flat[s.offset:s.offset + s.length], s.length) for s in layout.free_lists)
        out = cls(layout, chunks, lists, {}, None)
        out._flat = flat
        return out

    def flat(self) -> tuple[int, ...]:
        """The state as the flat tuple of ints every engine knows."""
        if self._flat is not None:
            return self._flat
        return flatten(self.layout, self.chunks, self.lists)

    def hashed(self) -> Packed:
        """This state with its hash known (from scratch: O(width) once, then kept by steps)."""
        if self._hash is None:
            self._hash = self.layout.hash_flat(self.flat())
        return self

    def __hash__(self) -> int:
        return self.hashed()._hash  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Packed):
            return NotImplemented
        if self is other:
            return True
        if hash(self) != hash(other):
            return False
        return self.chunks == other.chunks and self.lists == other.lists or self.flat() == other.flat()


def flatten(layout: Layout, rows: Any, lists: Any) -> tuple[int, ...]:
    """The flat tuple of chunks (tuples or lists) and free-list chains."""
    if len(rows) == 1 and not layout.free_lists:
        return tuple(rows[0])
    out: list[int] = []
    for row in rows:
        out.extend(row)
    for info, chain in zip(layout.free_lists, lists):
        out[info.offset:info.offset + info.length] = list_flat(chain, info.length)
    return tuple(out)


#: per byte value, the positions of its set bits
_BYTE_BITS = [tuple(b for b in range(8) if v >> b & 1) for v in range(256)]


def pages_of(mask: int) -> list[int]:
    """The positions of the set bits of a non-negative int, ascending: for a few pages, one
    step per page; for many, a pass over the mask's bytes."""
    if mask.bit_count() <= 16 or mask.bit_length() <= 256:
        out = []
        while mask:
            low = mask & -mask
            out.append(low.bit_length() - 1)
            mask ^= low
        return out
    out = []
    data = mask.to_bytes((mask.bit_length() + 7) >> 3, "little")
    for k, byte in enumerate(data):
        if byte:
            base = k << 3
            out.extend(base + b for b in _BYTE_BITS[byte])
    return out


def groups_of(values: list[int] | tuple[int, ...]) -> dict[int, int]:
    """Each value's page set in a page slot's values."""
    out: dict[int, int] = {}
    if len(values) <= 512:
        for p, x in enumerate(values):
            out[x] = out.get(x, 0) | (1 << p)
        return out
    import numpy as np

    arr = np.asarray(values, dtype=np.int64)
    for x in np.unique(arr).tolist():
        bits = np.packbits(arr == x, bitorder="little")
        out[int(x)] = int.from_bytes(bits.tobytes(), "little")
    return out


__all__ = ["CHUNK", "Chain", "Key", "Layout", "MODULUS", "Packed", "Run", "chain_entries", "chain_of", "chain_pop",
           "chain_push", "flatten", "groups_of", "list_flat", "list_hash", "pages_of"]
