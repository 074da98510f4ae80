"""The numpy helpers the batch interpreter's generated code calls, and compiling that code.

The page-set primitives (`popcount`, `first`, `nth` by lookup tables for page sets of at most
_TABLE_BITS bits, byte by byte for larger ones and for the limbs of wide page sets:
NOTE(wide-pages) in ownership.interpret.batch), `select` over a stacked list, the successors'
words side by side, and `_compile`: generated straight-line code executed in a namespace of
these helpers, each temporary deleted after its last use.
"""


from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..lang.values import PYTHON

#: Page sets of at most this many bits use lookup tables for `first` and `nth`.
_TABLE_BITS = 10


# --------------------------------------------------------------------------- primitives

_table_cache: dict[tuple[str, int], np.ndarray] = {}


def _first_table(bits: int) -> np.ndarray:
    """first(m, n) for every m < 2**bits and n in 0..bits, flattened as m * (bits+1) + n."""
    key = ("first", bits)
    if key not in _table_cache:
        out = np.zeros((1 << bits, bits + 1), dtype=np.int64)
        for m in range(1 << bits):
            for n in range(bits + 1):
                out[m, n] = PYTHON.first(m, n)
        _table_cache[key] = out.ravel()
    return _table_cache[key]


def _nth_table(bits: int) -> np.ndarray:
    """nth(m, j, -1) for every m < 2**bits and j in 0..bits-1, flattened as m * bits + j."""
    key = ("nth", bits)
    if key not in _table_cache:
        out = np.full((1 << bits, max(bits, 1)), -1, dtype=np.int64)
        for m in range(1 << bits):
            for j in range(bits):
                out[m, j] = PYTHON.nth(m, j, -1)
        _table_cache[key] = out.ravel()
    return _table_cache[key]


def _popcount(m: np.ndarray) -> np.ndarray:
    return np.bitwise_count(np.asarray(m, dtype=np.int64).view(np.uint64)).astype(np.int64)


def _first(m: Any, n: Any, bits: int) -> np.ndarray:
    """The n lowest set bits of each m (all of them if it has fewer; none if n <= 0)."""
    m = np.asarray(m, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if bits <= _TABLE_BITS:
        return _first_table(bits)[m * (bits + 1) + np.clip(n, 0, bits)]
    out = np.zeros(np.broadcast(m, n).shape, dtype=np.int64)
    rest = np.broadcast_to(m, out.shape).copy()
    for i in range(bits):
        low = rest & -rest
        take = n > i
        out |= np.where(take, low, 0)
        rest ^= low
    return out


def _nth(m: Any, j: Any, default: int, bits: int) -> np.ndarray:
    """The index of the j-th lowest set bit of each m, or `default`."""
    m = np.asarray(m, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    ok = (j >= 0) & (j < bits)
    if bits <= _TABLE_BITS:
        got = _nth_table(bits)[m * max(bits, 1) + np.where(ok, j, 0)]
        return np.where(ok & (got >= 0), got, default)
    shape = np.broadcast(m, j).shape
    out = np.full(shape, default, dtype=np.int64)
    rest = np.broadcast_to(m, shape).copy()
    for i in range(bits):
        low = rest & -rest
        here = (j == i) & (low != 0)
        idx = _popcount(low - 1)
        out = np.where(here, idx, out)
        rest ^= low
    return out


_BYTE_POP = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)
_BYTE_NTH = np.array([PYTHON.nth(b, r, 0) for b in range(256) for r in range(8)], dtype=np.int64)
_BYTE_FIRST = np.array([PYTHON.first(b, r) for b in range(256) for r in range(9)], dtype=np.uint8)


def _bytes_of(m: Any, other: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The bytes (n x 8, lowest first) of non-negative int64 m, `other` broadcast beside it."""
    m = np.asarray(m, dtype=np.int64)
    other = np.asarray(other, dtype=np.int64)
    shape = np.broadcast(m, other).shape
    flat = np.ascontiguousarray(np.broadcast_to(m, shape)).reshape(-1)   # (little-endian only: _Emitter)
    return flat.view(np.uint8).reshape(-1, 8), np.broadcast_to(other, shape).reshape(-1), shape


def _nth_bytes(m: Any, j: Any, default: int) -> np.ndarray:
    """_nth for page sets of up to 63 bits (the limbs of wide page sets, NOTE(wide-pages)) in
    a fixed number of operations: the byte that holds the j-th set bit from the bytes' running
    counts, then a table of nth within a byte."""
    b, j, shape = _bytes_of(m, j)
    cum = _BYTE_POP.take(b)
    np.cumsum(cum, axis=1, out=cum)
    byte = np.count_nonzero(cum <= j[:, None], axis=1)
    ok = (j >= 0) & (byte < 8)
    byte = np.minimum(byte, 7)
    rows = np.arange(b.shape[0])
    before = np.where(byte > 0, cum[rows, np.maximum(byte - 1, 0)], 0)
    rank = np.clip(j - before, 0, 7)
    got = _BYTE_NTH.take(b[rows, byte].astype(np.int64) * 8 + rank) + 8 * byte
    return np.where(ok, got, default).reshape(shape)


def _first_bytes(m: Any, n: Any) -> np.ndarray:
    """_first for page sets of up to 63 bits (NOTE(wide-pages)): each byte keeps its lowest
    n - (set bits of the bytes below it) bits, from a table."""
    b, n, shape = _bytes_of(m, n)
    pop = _BYTE_POP.take(b)
    below = np.cumsum(pop, axis=1)
    below -= pop
    keep = np.clip(n[:, None] - below, 0, 8)
    keep += b.astype(np.int64) * 9
    out = _BYTE_FIRST.take(keep)
    return out.reshape(-1).view(np.int64).reshape(shape)


def _stack(values: tuple[Any, ...], n: int) -> np.ndarray:
    """The values (columns or constants) as rows of one (len(values), n) int64 array."""
    out = np.empty((len(values), n), dtype=np.int64)
    for k, v in enumerate(values):
        out[k] = v
    return out


def _select(stack: np.ndarray, idx: Any, default: int) -> np.ndarray:
    """stack[idx[i], i] for each row i, `default` where idx is out of range."""
    nv, n = stack.shape
    idx = np.asarray(idx, dtype=np.int64)
    ok = (idx >= 0) & (idx < nv)
    flat = np.where(ok, idx, 0)
    flat *= n
    flat += _arange(n)
    got = stack.ravel().take(flat)
    if ok.all():
        return got
    return np.where(ok, got, default)


_aranges: dict[int, np.ndarray] = {}


def _arange(n: int) -> np.ndarray:
    """0..n-1, cached (read-only) for the block sizes a search uses."""
    got = _aranges.get(n)
    if got is None:
        if len(_aranges) > 64:
            _aranges.clear()
        got = _aranges[n] = np.arange(n, dtype=np.int64)
        got.flags.writeable = False
    return got


def _select_const(table: np.ndarray, idx: Any) -> np.ndarray:
    """table[idx] where the last entry of table is the default for out-of-range idx."""
    nv = table.shape[0] - 1
    idx = np.asarray(idx, dtype=np.int64)
    return table[np.where((idx >= 0) & (idx < nv), idx, nv)]


def _words(parts: list[tuple[np.ndarray, ...]], k: int) -> np.ndarray:
    """The packed words of several bodies' successors, side by side (k x total)."""
    total = sum(p[0].shape[0] for p in parts)
    out = np.empty((k, total), dtype=np.uint64)
    at = 0
    for p in parts:
        m = p[0].shape[0]
        for w in range(k):
            out[w, at:at + m] = p[w]
        at += m
    return out


_NAMESPACE: dict[str, Any] = {
    "np": np, "_popcount": _popcount, "_first": _first, "_nth": _nth,
    "_first_bytes": _first_bytes, "_nth_bytes": _nth_bytes,
    "_stack": _stack, "_select": _select, "_select_const": _select_const,
}


_TEMP = re.compile(r"\bt\d+\b")


def _free_dead(source: str) -> str:
    """`del` each temporary of straight-line generated code after its last use.

    A body has a hundred or more temporaries of a few thousand rows; kept alive to the end of
    the function they are megabytes that fall out of the cache, while freed ones are reused at
    once by the next allocation of the same size (still in cache)."""
    lines = source.split("\n")
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        for name in _TEMP.findall(line):
            last[name] = i
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if line.startswith("    ") and not line.lstrip().startswith("return"):
            dead = sorted({n for n in _TEMP.findall(line) if last[n] == i})
            if dead:
                out.append(f"    del {', '.join(dead)}")
    return "\n".join(out)


def _compile(source: str, name: str, extra: dict[str, Any] | None = None) -> Any:
    source = _free_dead(source)
    namespace = dict(_NAMESPACE)
    if extra:
        namespace.update(extra)
    exec(compile(source, f"<ownership.batch {name}>", "exec"), namespace)  # our own generated code
    fn = namespace[name]
    fn.source = source  # for debugging and tests
    return fn

