"""The batch interpreter: runs a Model's traced actions over a whole BFS frontier at once.

A frontier is a block of states, one row per state. States travel *packed*: every position of
the flat state becomes a bit field (value minus its slot's lower bound) in 64-bit words, so a
row is a handful of uint64 words (`Layout`). For evaluation a block is *unpacked* into one
int64 column per state position.

The action graphs come from the symbolic interpreter (`trace_model`), with the kernel's
operations already unrolled over pages. They are compiled once per model:
- hash-consed into one shared node table, so a subexpression used by several bindings (or
  pages) is one node, folded where its arguments are constants or its interval decides it
  (e.g. `prompt > 3` when prompt ranges over 0..3);
- emitted as straight-line numpy code, one Python function per program: guards become boolean
  masks, `ite` becomes `np.where`, page-set primitives (`popcount`, `first`, `nth`, `select`)
  are vectorised helpers below. Every intermediate is computed once per call (the CSE of the
  node table is the cache per term within one evaluation).

The hot path has no per-state Python loop: per block it runs one function for the cheap parts of
every guard (stage comparisons) over all rows, then per binding a function over only the rows
where that binding is enabled, which writes the successor's packed words directly and returns
whether a kernel property was flagged and whether a write left its slot's domain (a spec error,
re-run concretely to get the concrete interpreter's message).

Semantics are those of ownership.interpret.concrete on Python integers, in int64
(NOTE(int64-exact)): a model runs here only where every value fits. A page set of a pool of
at most 62 pages is one non-negative int64 column; a larger pool's page sets are limbs of 63
bits (NOTE(wide-pages); ownership.engines.batch refuses pools over MAX_WIDE_POOL_PAGES, and the
per-state engine checks them); every slot's domain, every constant and
every intermediate that interval analysis cannot bound inside int64 makes the model
`unsupported`, and it is checked with Python's integers instead. (A 64-page pool was once
let in, its page 63 held as a negative int64: exact inside the kernel's operations, but a
state read back from a packed row held a negative page set, on which the concrete
interpreter then judged counterexamples and liveness wrongly.)
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import ops
from ..lang.model import Model
from ..lang.values import PYTHON
from .symbolic import BOOL, INT, PAGES, Term, postorder, trace_model

#: Largest pool (in pages) whose page sets fit one int64 column as non-negative numbers, as
#: the concrete interpreter's Python integers are (NOTE(int64-exact)): pages 0..size, since a
#: LIFO free list names page `size` for "none" and computes page(size); larger pools take
#: several columns (NOTE(wide-pages)).
MAX_POOL_PAGES = 62

#: Bits of a page set held by one limb (one int64 column) of a wide page set (NOTE(wide-pages)).
LIMB_BITS = 63
_LIMB_MASK = (1 << LIMB_BITS) - 1

#: Largest pool the batch engine takes, in limbs of 63 pages (ownership.engines.batch.supports).
MAX_WIDE_POOL_PAGES = 1024


# NOTE(wide-pages): a page set of a pool of more than 62 pages is K limbs of 63 bits (page p in
# limb p // 63, bit p % 63), K = ceil((largest pool + 1) / 63). Every limb but the top one is a
# non-negative int64 (0 .. 2**63 - 1); the top limb is the value shifted right by 63 * (K - 1)
# (Python's arithmetic shift), so it carries the sign: the complement of m has lower limbs
# m_k ^ (2**63 - 1) and top limb ~m_top, and equality of limbs is equality of Python's
# integers, negative ones included. The graph is lowered at the Term -> Graph boundary
# (Graph.limbs): every page-set term becomes K integer nodes and every consumer combines them
# (==, count, nth, first, has, ...), so the emitted code sees only int and bool nodes. In the
# state, a position whose page set needs more than 63 bits is several columns of the unpacked
# matrix X: limb 0 at the position's own row, the other limbs at rows after model.width
# (`limb_plan`); Layout packs columns, and unpacks a row back into the flat tuple of Python
# integers. Where a limb that count/first/nth or a write reads may be negative, the model is
# refused (Graph.too_wide) and checked with Python's integers. With K = 1 nothing of this runs.


def limb_plan(model: Model) -> tuple[int, list[tuple[int, ...]]]:
    """K, the limbs of a page set (NOTE(wide-pages)), and each state position's columns of the
    unpacked matrix: (i,) for a position of one column, (i, extra...) for a wide page set."""
    biggest = max((p.size for p in model.pools.values()), default=0)
    # (pages 0..size: the kernel's free lists name page `size` for "none", and page(size) & the
    # pool's pages must still be computed, so a 126-page pool takes 3 limbs)
    k_limbs = 1 if biggest <= MAX_POOL_PAGES else -(-(biggest + 1) // LIMB_BITS)
    cols: list[tuple[int, ...]] = [(i,) for i in range(model.width)]
    if k_limbs == 1:
        return 1, cols
    extra = model.width
    for s in model.slots:
        need = -(-s.hi.bit_length() // LIMB_BITS)
        if s.sort != PAGES or s.lo != 0 or need <= 1 or need > k_limbs:
            continue
        for k in range(s.length):
            cols[s.offset + k] = (s.offset + k,) + tuple(range(extra, extra + need - 1))
            extra += need - 1
    return k_limbs, cols


def split_limbs(v: int, n: int) -> list[int]:
    """The n limbs of a Python integer (the top one signed; NOTE(wide-pages))."""
    return [(v >> (LIMB_BITS * k)) & _LIMB_MASK for k in range(n - 1)] + [v >> (LIMB_BITS * (n - 1))]


def join_limbs(limbs: list[int]) -> int:
    """The Python integer of its limbs (split_limbs' inverse)."""
    return sum(int(x) << (LIMB_BITS * k) for k, x in enumerate(limbs))

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

#: Page sets of at most this many bits use lookup tables for `first` and `nth`.
_TABLE_BITS = 10


# --------------------------------------------------------------------------- packing


@dataclass(frozen=True)
class Field:
    """Where one state position lives in a packed row."""

    word: int
    shift: int
    bits: int
    lo: int


class Layout:
    """How a state packs into 64-bit words: one bit field per position, none straddling a word.

    `constant`: positions that keep one value in every reachable state, with that value; they
    take no bits (NOTE(constant-positions))."""

    def __init__(self, model: Model, constant: dict[int, int] | None = None) -> None:
        """`constant`: by column of the unpacked matrix (a position's own column when it has
        one; NOTE(wide-pages))."""
        _, self.cols = limb_plan(model)
        #: the positions of several columns (wide page sets), with their columns
        self.wide = [(i, c) for i, c in enumerate(self.cols) if len(c) > 1]
        self.width = model.width
        self.columns = max([model.width] + [c[-1] + 1 for _, c in self.wide])
        fields: list[Field | None] = [None] * self.columns
        word, shift = 0, 0
        constant = constant or {}
        for slot in model.slots:
            for e in range(slot.length):
                for k, col in enumerate(self.cols[slot.offset + e]):
                    if col in constant:
                        fields[col] = Field(word, shift, 0, int(constant[col]))
                        continue
                    lo, hi = slot.lo, slot.hi
                    if k or len(self.cols[slot.offset + e]) > 1:   # a limb of a wide page set
                        lo, hi = 0, min(_LIMB_MASK, slot.hi >> (LIMB_BITS * k))
                    bits = max(0, (hi - lo).bit_length())
                    if shift + bits > 64:
                        word, shift = word + 1, 0
                    fields[col] = Field(word, shift, bits, lo)
                    shift += bits
        self.fields: list[Field] = fields  # type: ignore[assignment]
        self.words = word + 1
        self.bits = sum(f.bits for f in self.fields)
        self.pack: Callable[[np.ndarray], np.ndarray] = self._compile_pack()
        self.unpack: Callable[[np.ndarray], np.ndarray] = self._compile_unpack()

    def _compile_pack(self) -> Callable[[np.ndarray], np.ndarray]:
        lines = ["def pack(X):", f"    P = np.zeros(({self.words}, X.shape[1]), dtype=np.uint64)"]
        for i, f in enumerate(self.fields):
            if f.bits == 0:
                continue
            v = f"X[{i}]" if f.lo == 0 else f"(X[{i}] - {f.lo})"
            v = f"{v}.astype(np.uint64)"
            if f.shift:
                v = f"({v} << {f.shift})"
            lines.append(f"    P[{f.word}] |= {v}")
        lines.append("    return P")
        return _compile("\n".join(lines), "pack")

    def _compile_unpack(self) -> Callable[[np.ndarray], np.ndarray]:
        lines = ["def unpack(P):", f"    X = np.empty(({self.columns}, P.shape[1]), dtype=np.int64)",
                 "    U = X.view(np.uint64)", "    T = np.empty(P.shape[1], dtype=np.uint64)"]
        for i, f in enumerate(self.fields):
            if f.bits == 0:
                lines.append(f"    X[{i}] = {f.lo}")
                continue
            src = f"P[{f.word}]"
            if f.shift and f.shift + f.bits < 64:
                lines.append(f"    np.right_shift({src}, {f.shift}, out=T)")
                src = "T"
            if f.shift + f.bits < 64:
                lines.append(f"    np.bitwise_and({src}, {(1 << f.bits) - 1}, out=U[{i}])")
            elif f.shift:
                lines.append(f"    np.right_shift({src}, {f.shift}, out=U[{i}])")
            else:
                lines.append(f"    U[{i}] = {src}")
            if f.lo:
                lines.append(f"    X[{i}] += {f.lo}")
        lines.append("    return X")
        return _compile("\n".join(lines), "unpack")

    def pack_rows(self, states: list[tuple[int, ...]]) -> np.ndarray:
        """Packed words (words x n) of concrete states."""
        if self.wide:
            return self.pack(np.array([self.split(st) for st in states], dtype=np.int64)
                             .reshape(len(states), self.columns).T.copy())
        X = np.array(states, dtype=np.int64).reshape(len(states), self.width).T
        return self.pack(np.ascontiguousarray(X))

    def split(self, state: tuple[int, ...]) -> list[int]:
        """A concrete state's value in each column (a wide page set's limbs: NOTE(wide-pages))."""
        out = list(state) + [0] * (self.columns - self.width)
        for i, cols in self.wide:
            for col, limb in zip(cols, split_limbs(int(state[i]), len(cols))):
                out[col] = limb
        return out

    def unpack_row(self, P: np.ndarray, j: int) -> tuple[int, ...]:
        """The concrete state of column j of packed words P (the flat tuple of Python ints)."""
        X = self.unpack(np.ascontiguousarray(P[:, j:j + 1]))
        out = [int(v) for v in X[:self.width, 0]]
        for i, cols in self.wide:
            out[i] = join_limbs([int(X[c, 0]) for c in cols])
        return tuple(out)


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


# --------------------------------------------------------------------------- the node table

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"bitand": "&", "bitor": "|", "bitxor": "^"}
_LOGIC = {"and": "&", "or": "|", "xor": "^"}


@dataclass
class Node:
    """One operation of the shared graph; `args` are node ids except the trailing constants
    of `nth` and `select` (their defaults); `lo`..`hi` bounds every value it can take."""

    op: str
    args: tuple[Any, ...]
    sort: str
    lo: int
    hi: int
    value: Any = None  # for "const": a Python int or bool; for "var": the state position


def _py(x: Any) -> Any:
    """A constant as plain Python (IntEnum members become ints)."""
    if isinstance(x, bool):
        return x
    if isinstance(x, enum.IntEnum):
        return int(x)
    return x


class Graph:
    """Hash-consed, constant-folded nodes for every traced term of a model."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.nodes: list[Node] = []
        self._index: dict[tuple[Any, ...], int] = {}
        self._memo: dict[int, int] = {}
        self._keep: list[Any] = []  # the terms memoised by id(), kept alive
        self._warming = False  # inside _warm (NOTE(no-recursion))
        #: a term (or a named value) whose integer values may not fit int64 (None: every
        #: value fits: NOTE(int64-exact))
        self.too_wide: Term | str | None = None
        #: limbs of a page set and each position's columns (NOTE(wide-pages); K = 1: one column each)
        self.K, self.cols = limb_plan(model)
        columns = max(c[-1] + 1 for c in self.cols) if self.cols else 0
        self.var_sort: list[str] = [INT] * columns
        self.var_bounds: list[tuple[int, int]] = [(0, 0)] * columns
        for s in model.slots:
            for k in range(s.length):
                self.var_sort[s.offset + k] = BOOL if s.is_bool else INT
                self.var_bounds[s.offset + k] = (s.lo, s.hi)
                cols = self.cols[s.offset + k]
                for j, col in enumerate(cols if len(cols) > 1 else ()):   # a wide page set's limbs
                    self.var_bounds[col] = (0, min(_LIMB_MASK, s.hi >> (LIMB_BITS * j)))
            if s.length and len(self.cols[s.offset]) > 1:
                continue   # (a wide page set: limbs of 63 bits)
            if self.too_wide is None and (s.lo < _INT64_MIN or s.hi > _INT64_MAX):
                self.too_wide = f"slot {s.name}, of domain {s.lo}..{s.hi}"
        self._limb_memo: dict[int, tuple[int, ...]] = {}
        self._paged: dict[int, bool] = {}

    # -- building ----------------------------------------------------------------------------

    def const(self, v: Any) -> int:
        v = _py(v)
        if isinstance(v, bool):
            return self._add(("const", v), Node("const", (), BOOL, int(v), int(v), v))
        v = int(v)
        if self.too_wide is None and not _INT64_MIN <= v <= _INT64_MAX:
            self.too_wide = f"the constant {v}"
        return self._add(("const", v), Node("const", (), INT, v, v, v))

    def var(self, i: int) -> int:
        lo, hi = self.var_bounds[i]
        return self._add(("var", i), Node("var", (), self.var_sort[i], lo, hi, i))

    def is_const(self, n: int) -> bool:
        return self.nodes[n].op == "const"

    def cval(self, n: int) -> Any:
        return self.nodes[n].value

    def _add(self, key: tuple[Any, ...], node: Node) -> int:
        got = self._index.get(key)
        if got is not None:
            return got
        self.nodes.append(node)
        self._index[key] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def _warm(self, root: Term) -> None:
        """NOTE(no-recursion): make the nodes (or limbs) of root's subterms children first,
        without recursion, so that `term` and `limbs` on root then recurse one level at most.
        A kernel operation over a pool chains one `|` a page (a free list of 1,000 pages was
        nested 1,000 deep), and a spec's loop may chain thousands of `+`: recursing down such a
        chain passed Python's recursion limit (an internal error, exit 4). A page set is made
        into limbs, anything else into a node, as the caller up the chain would ask for it."""
        order = postorder(root, lambda t: id(t) in self._memo or id(t) in self._limb_memo)
        self._warming = True
        try:
            for u in order[:-1]:  # (root itself: the caller's)
                if self.K > 1 and self.is_pages(u):
                    self.limbs(u)
                else:
                    self.term(u)
        finally:
            self._warming = False

    def term(self, t: Any) -> int:
        """The node of a traced term (or Python constant)."""
        if not isinstance(t, Term):
            return self.const(t)
        got = self._memo.get(id(t))
        if got is not None:
            return got
        if not self._warming:
            self._warm(t)
        if self.K > 1 and self._wide_consumer(t):
            n = self._lowered(t)
        elif t.op == "var":
            n = self.var(t.args[0])
        elif t.op == "const":
            n = self.const(t.args[0])
        elif t.op == "select":
            values, idx, default = t.args
            n = self.select([self.term(v) for v in values], self.term(idx), _py(default))
        elif t.op == "nth":
            m, j, default = t.args
            self.const(default)  # (a default past int64 makes the model unsupported, as a constant does)
            n = self.mk("nth", (self.term(m), self.term(j)), INT, (_py(default),))
        else:
            n = self.mk(t.op, tuple(self.term(a) for a in t.args), BOOL if t.sort == BOOL else INT)
            self._check_fits(n, t)
        self._memo[id(t)] = n
        self._keep.append(t)
        return n

    # -- wide page sets (NOTE(wide-pages)) ----------------------------------------------------

    def is_pages(self, t: Any) -> bool:
        """Whether a traced term's value is a page set (its sort, or `&`, `|`, `^`, If or
        select over page sets: the kernel tests `pages & mask != 0` with an int-sorted `&`)."""
        if not isinstance(t, Term):
            return False
        if t.sort == PAGES:
            return True
        if t.sort == BOOL or t.op not in ("bitand", "bitor", "bitxor", "compl", "ite", "select"):
            return False
        got = self._paged.get(id(t))
        if got is None:
            args = t.args[1:] if t.op == "ite" else t.args[0] if t.op == "select" else t.args
            got = self._paged[id(t)] = any(self.is_pages(a) for a in args)
            self._keep.append(t)
        return got

    def _wide_consumer(self, t: Term) -> bool:
        """A term that reads page sets as a whole (or is one), lowered over limbs when K > 1."""
        if t.op in ("popcount", "nth"):
            return True
        if t.op in _CMP:
            return any(self.is_pages(a) for a in t.args)
        return self.is_pages(t)

    def _const_limbs(self, v: int) -> tuple[int, ...]:
        return tuple(self.const(x) for x in split_limbs(v, self.K))

    def _nonnegative(self, limbs: tuple[int, ...], t: Any) -> None:
        """Refuse the model (too_wide) where a limb that count/first/nth or a write reads may
        be negative: Python's integers would differ from the limbs there (NOTE(wide-pages))."""
        if self.too_wide is None and any(self.nodes[x].lo < 0 for x in limbs):
            self.too_wide = t

    def _prefix_counts(self, limbs: tuple[int, ...]) -> list[int]:
        """S_0 = 0, S_k = the pages of limbs 0..k-1 (S_K: all of them)."""
        out = [self.const(0)]
        for x in limbs:
            out.append(self.mk("add", (out[-1], self.mk("popcount", (x,), INT)), INT))
        return out

    def _lowered(self, t: Term) -> int:
        """The node of a term that reads page sets, over their limbs (NOTE(wide-pages))."""
        op, a = t.op, t.args
        if op in ("eq", "ne"):
            x, y = self.limbs(a[0]), self.limbs(a[1])
            parts = tuple(self.mk(op, (p, q), BOOL) for p, q in zip(x, y))
            return self.mk("and" if op == "eq" else "or", parts, BOOL)
        if op in _CMP:   # (the domain checks' v < lo, v > hi): lexicographic, top limb signed
            x, y = self.limbs(a[0]), self.limbs(a[1])
            strict = "lt" if op in ("lt", "ge") else "gt"
            out = self.mk(strict, (x[0], y[0]), BOOL)
            for p, q in zip(x[1:], y[1:]):
                same = self.mk("and", (self.mk("eq", (p, q), BOOL), out), BOOL)
                out = self.mk("or", (self.mk(strict, (p, q), BOOL), same), BOOL)
            return out if op in ("lt", "gt") else self.mk("not", (out,), BOOL)
        if op == "popcount":
            x = self.limbs(a[0])
            self._nonnegative(x, t)
            return self._prefix_counts(x)[-1]
        if op == "nth":   # the j-th page is in limb k when S_k <= j < S_k+1
            m, j, default = a
            self.const(default)
            x = self.limbs(m)
            self._nonnegative(x, t)
            jn = self.term(j)
            pre = self._prefix_counts(x)
            out = self.const(_py(default))
            for k in reversed(range(self.K)):
                inside = self.mk("and", (self.mk("le", (pre[k], jn), BOOL), self.mk("lt", (jn, pre[k + 1]), BOOL)), BOOL)
                got = self.mk("nth", (x[k], self.mk("sub", (jn, pre[k]), INT)), INT, (-1,))
                got = self.mk("add", (got, self.const(LIMB_BITS * k)), INT)
                out = self.mk("ite", (inside, got, out), INT)
            return out
        # a page set where an integer is read: never made by the language's operations
        self.too_wide = self.too_wide or f"a page set of {LIMB_BITS * self.K} bits read as one integer ({op})"
        return self.limbs(t)[0]

    def limbs(self, t: Any) -> tuple[int, ...]:
        """The K limb nodes of a page-set term or constant (NOTE(wide-pages)), memoised."""
        if not isinstance(t, Term):
            return self._const_limbs(int(_py(t)))
        got = self._limb_memo.get(id(t))
        if got is not None:
            return got
        if not self._warming:
            self._warm(t)
        op, a, K = t.op, t.args, self.K
        zero = self.const(0)
        out: tuple[int, ...]
        if op == "var":
            cols = self.cols[a[0]]
            out = tuple(self.var(c) for c in cols) + (zero,) * (K - len(cols))
        elif op == "const":
            out = self._const_limbs(int(a[0]))
        elif op in _BITS:
            x, y = self.limbs(a[0]), self.limbs(a[1])
            out = tuple(self.mk(op, (p, q), INT) for p, q in zip(x, y))
        elif op == "compl":
            x = self.limbs(a[0])
            mask = self.const(_LIMB_MASK)
            out = tuple(self.mk("bitxor", (p, mask), INT) for p in x[:-1]) + (self.mk("compl", (x[-1],), INT),)
        elif op == "ite":
            c = self.term(a[0])
            x, y = self.limbs(a[1]), self.limbs(a[2])
            out = tuple(self.mk("ite", (c, p, q), INT) for p, q in zip(x, y))
        elif op == "select":
            values, idx, default = a
            i = self.term(idx)
            per = [self.limbs(v) for v in values]
            d = split_limbs(int(_py(default)), K)
            out = tuple(self.select([p[k] for p in per], i, d[k]) for k in range(K))
        elif op == "first":   # limb k: first(m_k, n - S_k)
            x = self.limbs(a[0])
            self._nonnegative(x, t)
            n = self.term(a[1])
            pre = self._prefix_counts(x)
            out = tuple(self.mk("first", (x[k], self.mk("sub", (n, pre[k]), INT)), INT) for k in range(K))
        elif op == "bit":   # limb k: page p - 63k where 63k <= p <= 63k + 62
            p = self.term(a[0])
            if self.nodes[p].hi >= LIMB_BITS * K and self.too_wide is None:
                self.too_wide = t   # (a page past every limb: 2**p has no limbs here)
            parts = []
            for k in range(K):
                q = self.mk("sub", (p, self.const(LIMB_BITS * k)), INT)
                if self.nodes[q].hi > LIMB_BITS - 1:   # (only where it is in range: keep bit's argument < 63)
                    q = self.mk("mod", (q, self.const(LIMB_BITS)), INT)
                inside = self.mk("and", (self.mk("ge", (p, self.const(LIMB_BITS * k)), BOOL),
                                         self.mk("le", (p, self.const(LIMB_BITS * k + LIMB_BITS - 1)), BOOL)), BOOL)
                parts.append(self.mk("ite", (inside, self.mk("bit", (q,), INT), zero), INT))
            out = tuple(parts)
        else:
            self.too_wide = self.too_wide or t
            out = (zero,) * K
        self._limb_memo[id(t)] = out
        self._keep.append(t)
        return out

    def write_nodes(self, i: int, t: Any) -> list[tuple[int, int]]:
        """The (column, node) writes of a value written to state position i: one, or a wide
        page set's limbs (NOTE(wide-pages))."""
        if self.K > 1 and isinstance(t, Term) and not self._warming:
            self._warm(t)  # (is_pages recurses too: NOTE(no-recursion))
        if self.K == 1 or not self.is_pages(t):
            return [(i, self.term(t))]
        x = self.limbs(t)
        cols = self.cols[i]
        self._nonnegative(x[:len(cols)], t)
        return list(zip(cols, x))

    def _check_fits(self, n: int, t: Term) -> None:
        """Note an integer that may not fit int64 (interval analysis, before clamping): the
        batch interpreter would compute it wrongly, so it refuses the model (`too_wide`)."""
        node = self.nodes[n]
        if self.too_wide is not None:
            return
        if node.op == "bit":  # a page set in a non-negative int64: page numbers up to 62
            if self.nodes[node.args[0]].hi >= LIMB_BITS:
                self.too_wide = t
            return
        if node.op == "div":  # (int64's least value over -1 is one past its largest)
            (alo, _), (dlo, dhi) = [(self.nodes[a].lo, self.nodes[a].hi) for a in node.args[:2]]
            if alo <= _INT64_MIN and dlo <= -1 <= dhi:
                self.too_wide = t
            return
        if t.sort == PAGES or node.op not in ("add", "sub", "mul", "neg", "shl"):
            return
        args = node.args[:2] if node.op != "neg" else node.args[:1]
        if node.op == "shl" and self.nodes[args[1]].hi >= 64 and (self.nodes[args[0]].lo, self.nodes[args[0]].hi) != (0, 0):
            self.too_wide = t  # (numpy's shift by 64 or more is not Python's)
            return
        lo, hi = self._exact(node.op, args, ())
        if lo < _INT64_MIN or hi > _INT64_MAX:
            self.too_wide = t

    def select(self, values: list[int], idx: int, default: int) -> int:
        if self.is_const(idx):
            i = int(self.cval(idx))
            return values[i] if 0 <= i < len(values) else self.const(default)
        lo, hi = self.nodes[idx].lo, self.nodes[idx].hi
        reach = [k for k in range(len(values)) if lo <= k <= hi]
        out_of_range = lo < 0 or hi >= len(values)
        cands = [values[k] for k in reach] + ([self.const(default)] if out_of_range else [])
        if cands and all(c == cands[0] for c in cands):
            return cands[0]
        stack = self._add(("stack", tuple(values)), Node("stack", tuple(values), INT, 0, 0))
        lo_v, hi_v = self._exact("select", (*values, idx), (default,))
        return self._add(("select", stack, idx, default), Node("select", (stack, idx, default), INT, lo_v, hi_v))

    def mk(self, op: str, args: tuple[int, ...], sort: str, extra: tuple[Any, ...] = ()) -> int:
        """A node for op(args), simplified; `extra` holds trailing constants (nth's default)."""
        nodes = self.nodes
        if op in ("and", "or"):
            return self._junction(op, args)
        if all(nodes[a].op == "const" for a in args):
            try:
                return self.const(_py(ops.meaning(op, [nodes[a].value for a in args], extra)))
            except (ZeroDivisionError, ValueError):
                pass
        simpler = self._simplify(op, args, sort)
        if simpler is not None:
            return simpler
        lo, hi = self._bounds(op, args, extra)
        if op in _CMP or op in ("xor", "not"):
            sort = BOOL
        if op == "ite" and sort == BOOL and not all(nodes[a].sort == BOOL for a in args[1:]):
            sort = INT
        return self._add((op, args, extra), Node(op, args + extra, sort, lo, hi))

    def _junction(self, op: str, args: tuple[int, ...]) -> int:
        unit, zero = (True, False) if op == "and" else (False, True)
        flat: list[int] = []
        for a in args:
            node = self.nodes[a]
            if node.op == "const":
                if bool(node.value) == zero:
                    return self.const(zero)
                continue
            parts = list(node.args) if node.op == op else [a]
            for p in parts:
                if p not in flat:
                    flat.append(p)
        if not flat:
            return self.const(unit)
        if len(flat) == 1:
            return flat[0]
        return self._add((op, tuple(flat)), Node(op, tuple(flat), BOOL, 0, 1))

    def _simplify(self, op: str, args: tuple[int, ...], sort: str) -> int | None:
        nodes = self.nodes
        const = [nodes[a].value if nodes[a].op == "const" else None for a in args]
        if op == "ite":
            c, a, b = args
            if const[0] is not None:
                return a if const[0] else b
            if a == b:
                return a
            if sort == BOOL and const[1] is True and const[2] is False:
                return c
            if sort == BOOL and const[1] is False and const[2] is True:
                return self.mk("not", (c,), BOOL)
            return None
        if op == "not":
            inner = nodes[args[0]]
            if inner.op == "not":
                return inner.args[0]
            if inner.op in _CMP:  # one comparison instead of a comparison and a negation
                return self.mk(_NEGATED[inner.op], inner.args, BOOL)
            return None
        if op in _CMP:
            a, b = args
            if a == b:
                return self.const(op in ("eq", "le", "ge"))
            (alo, ahi), (blo, bhi) = (nodes[a].lo, nodes[a].hi), (nodes[b].lo, nodes[b].hi)
            decided = {
                "eq": (False if ahi < blo or bhi < alo else None),
                "ne": (True if ahi < blo or bhi < alo else None),
                "lt": (True if ahi < blo else False if alo >= bhi else None),
                "le": (True if ahi <= blo else False if alo > bhi else None),
                "gt": (True if alo > bhi else False if ahi <= blo else None),
                "ge": (True if alo >= bhi else False if ahi < blo else None),
            }[op]
            if decided is None and op in ("eq", "ne") and alo == ahi == blo == bhi:
                decided = op == "eq"
            if decided is None and op in ("eq", "ne") and 0 in const:
                bit = self._bit_test(args[1] if const[0] == 0 else args[0])
                if bit is not None:
                    return bit if op == "ne" else self.mk("not", (bit,), BOOL)
            return None if decided is None else self.const(decided)
        if op == "bitor" or op == "bitxor":
            if const[0] == 0 and nodes[args[1]].sort == INT:
                return args[1]
            if const[1] == 0 and nodes[args[0]].sort == INT:
                return args[0]
            return None
        if op == "bitand":
            if const[0] == 0 or const[1] == 0:
                return self.const(0)
            for k, other in ((0, 1), (1, 0)):
                cv = const[k]
                o = nodes[args[other]]
                if cv is not None and not isinstance(cv, bool) and o.sort == INT and o.lo >= 0:
                    if cv == -1 or (cv >= 0 and (cv + 1) & cv == 0 and o.hi <= cv):
                        return args[other]
                    low = (1 << o.hi.bit_length()) - 1   # every bit the other operand can have
                    if cv & low == 0:                      # e.g. a page set & the bits outside its pool
                        return self.const(0)
                    if cv & low == low:
                        return args[other]
            return None
        if op in ("add", "sub"):
            if const[1] == 0 and nodes[args[0]].sort == INT:
                return args[0]
            if op == "add" and const[0] == 0 and nodes[args[1]].sort == INT:
                return args[1]
            return None
        if op == "mul":
            if const[0] == 1 and nodes[args[1]].sort == INT:
                return args[1]
            if const[1] == 1 and nodes[args[0]].sort == INT:
                return args[0]
            return None
        return None

    def _bit_test(self, n: int) -> int | None:
        """A boolean node equal to `n != 0` when n is `m & 2**j` and m is built from constants
        by `|` and `If` (how the kernel builds a page mask from per-page conditions), else None.

        The kernel then tests each page's bit of that mask: `(mask & 4) != 0` is the condition
        it was built from for page 2, so the mask and the tests drop out of the generated code
        (about a third of the operations of the heaviest bodies)."""
        node = self.nodes[n]
        if node.op != "bitand":
            return None
        for k in (0, 1):
            kv = self.nodes[node.args[k]]
            if kv.op == "const" and not isinstance(kv.value, bool) and 0 < kv.value < 1 << 62 \
                    and kv.value & (kv.value - 1) == 0:
                got = self._bit_of(node.args[1 - k], kv.value, 0)
                return None if isinstance(got, bool) else got
        return None

    def _bit_of(self, n: int, bit: int, depth: int) -> int | bool | None:
        """`n & bit != 0` for n made of constants, `|` and `If`: a Python bool when constant,
        else a boolean node; None for any other n. (Constants stay Python bools: the node table
        keys True and 1 alike, so `const(True)` may be the integer node 1.)"""
        node = self.nodes[n]
        if node.op == "const":
            return bool(int(node.value) & bit)
        if depth > 16:
            return None
        if node.op == "bitor":
            parts = [self._bit_of(a, bit, depth + 1) for a in node.args]
            if any(p is None for p in parts):
                return None
            if any(p is True for p in parts):
                return True
            nodes = tuple(p for p in parts if p is not False)
            return self.mk("or", nodes, BOOL) if nodes else False  # type: ignore[arg-type]
        if node.op == "ite" and node.sort == INT and self.nodes[node.args[0]].sort == BOOL:
            c = node.args[0]
            a, b = (self._bit_of(x, bit, depth + 1) for x in node.args[1:])
            if a is None or b is None:
                return None
            if isinstance(a, bool) and isinstance(b, bool):
                return a if a == b else (c if a else self.mk("not", (c,), BOOL))
            if isinstance(b, bool):   # c and a, or (not c) or a
                return self.mk("or", (self.mk("not", (c,), BOOL), a), BOOL) if b else self.mk("and", (c, a), BOOL)
            if isinstance(a, bool):   # c or b, or (not c) and b
                return self.mk("or", (c, b), BOOL) if a else self.mk("and", (self.mk("not", (c,), BOOL), b), BOOL)
            got = self.mk("ite", (c, a, b), BOOL)
            return got if self.nodes[got].sort == BOOL else None
        return None

    def _exact(self, op: str, args: tuple[int, ...], extra: tuple[Any, ...]) -> tuple[int, int]:
        """Every value op(args) can take, on Python's integers (NOTE(one-interval))."""
        return ops.interval(op, [(self.nodes[a].lo, self.nodes[a].hi) for a in args], extra)

    def _bounds(self, op: str, args: tuple[int, ...], extra: tuple[Any, ...]) -> tuple[int, int]:
        """An interval holding every value of op(args) (Python semantics) within int64: where
        it passes int64, the model does not run here at all (_check_fits, NOTE(int64-exact))."""
        return _clamp(*self._exact(op, args, extra))

    def bit_width(self, n: int) -> int:
        """How many low bits a page-set node can use (64 when it may be negative)."""
        node = self.nodes[n]
        if node.lo < 0:
            return 64
        return max(1, min(64, node.hi.bit_length()))


def _clamp(lo: int, hi: int) -> tuple[int, int]:
    return max(lo, _INT64_MIN), min(hi, _INT64_MAX)


def _literal(v: Any) -> str:
    """A constant as it appears in generated code, in int64's two's complement."""
    if isinstance(v, bool):
        return repr(v)
    v = int(v)
    if v > _INT64_MAX:
        v -= 1 << 64
    return repr(v)


# --------------------------------------------------------------------------- code generation


class _Emitter:
    """Straight-line numpy code for a set of root nodes, each node computed once."""

    def __init__(self, graph: Graph, *, gathered: bool) -> None:
        self.g = graph
        self.gathered = gathered
        self.lines: list[str] = []
        self.done: set[int] = set()
        self.tables: dict[str, np.ndarray] = {}  # lookup tables the code reads (built once)

    def table(self, values: list[int]) -> str:
        """The name of a constant int64 lookup table in the generated code's namespace."""
        name = f"_T{len(self.tables)}"
        if any(not _INT64_MIN <= v <= _INT64_MAX for v in values):
            # (NOTE(int64-exact): the model will be unsupported and this code never run)
            self.g.too_wide = self.g.too_wide or f"a value of {min(values)}..{max(values)}"
            values = [min(max(v, _INT64_MIN), _INT64_MAX) for v in values]
        self.tables[name] = np.array(values, dtype=np.int64)
        return name

    def ref(self, n: int, *, as_int: bool = False, as_bool: bool = False) -> str:
        node = self.g.nodes[n]
        if node.op == "const":
            v = node.value
            if as_int:
                return _literal(int(v))
            if as_bool:
                return repr(bool(v))
            return _literal(v)
        self.need(n)
        name = f"t{n}"
        if as_int and node.sort == BOOL:
            return f"{name}.astype(np.int64)"
        if as_bool and node.sort == INT:
            return f"({name} != 0)"
        return name

    def need(self, root: int) -> None:
        """Emit the code of `root` and of everything it depends on (iteratively, in id order)."""
        if root in self.done or self.g.nodes[root].op == "const":
            return
        todo: set[int] = set()
        stack = [root]
        while stack:
            n = stack.pop()
            if n in todo or n in self.done:
                continue
            node = self.g.nodes[n]
            if node.op == "const":
                continue
            todo.add(n)
            stack.extend(a for a in self._children(node))
        for n in sorted(todo):
            self.done.add(n)
            self.lines.append(self._line(n))

    def _line(self, n: int) -> str:
        """The statement that computes node n (ownership.interpret.native writes C instead)."""
        return f"    t{n} = {self._expr(n)}"

    def _children(self, node: Node) -> list[int]:
        if node.op in ("var", "const"):
            return []
        if node.op == "stack":
            return list(node.args)
        if node.op == "select":
            stack = self.g.nodes[node.args[0]]
            if all(self.g.is_const(v) for v in stack.args):
                return [node.args[1]]
            return [node.args[0], node.args[1]]
        if node.op == "nth":
            return [node.args[0], node.args[1]]
        return list(node.args)

    def _expr(self, n: int) -> str:
        g, node = self.g, self.g.nodes[n]
        op, a = node.op, node.args
        if op == "var":
            col = f"X[{node.value}].take(idx)" if self.gathered else f"X[{node.value}]"
            return f"({col} != 0)" if node.sort == BOOL else col
        if op in _CMP:
            return f"({self.ref(a[0])} {_CMP[op]} {self.ref(a[1])})"
        if op in _ARITH:
            return f"({self.ref(a[0], as_int=True)} {_ARITH[op]} {self.ref(a[1], as_int=True)})"
        if op == "div":
            return f"np.floor_divide({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)})"
        if op == "mod":
            return f"np.remainder({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)})"
        if op == "neg":
            return f"(-{self.ref(a[0], as_int=True)})"
        if op == "shl":
            return f"np.left_shift({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)})"
        if op == "shr":
            return f"np.right_shift({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)})"
        if op in ("and", "or"):
            sym = _LOGIC[op]
            return "(" + f" {sym} ".join(self.ref(x, as_bool=True) for x in a) + ")"
        if op == "xor":
            return f"({self.ref(a[0], as_bool=True)} ^ {self.ref(a[1], as_bool=True)})"
        if op == "not":
            return f"(~{self.ref(a[0], as_bool=True)})"
        if op in _BITS:
            return f"({self.ref(a[0], as_int=True)} {_BITS[op]} {self.ref(a[1], as_int=True)})"
        if op == "compl":
            return f"(~{self.ref(a[0], as_int=True)})"
        if op == "ite":
            as_int = node.sort == INT
            branches = [self.ref(x, as_int=as_int, as_bool=not as_int) for x in a[1:]]
            return f"np.where({self.ref(a[0], as_bool=True)}, {branches[0]}, {branches[1]})"
        if op == "bit":
            p = self.ref(a[0], as_int=True)
            if g.nodes[a[0]].lo >= 0:
                return f"np.left_shift(1, {p})"
            return f"np.where({p} >= 0, np.left_shift(1, np.maximum({p}, 0)), 0)"
        if op == "popcount":
            return f"_popcount({self.ref(a[0], as_int=True)})"
        if op in ("first", "nth") and g.bit_width(a[0]) > _TABLE_BITS and g.nodes[a[0]].lo >= 0 \
                and np.little_endian:
            # a page set of more than 10 pages, or a limb of a wide one (NOTE(wide-pages)): byte
            # tables, not a loop over its bits (a 62-page pool ran at half the speed of 63)
            if op == "first":
                return f"_first_bytes({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)})"
            return f"_nth_bytes({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)}, {_literal(a[2])})"
        if op == "first":
            return f"_first({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)}, {g.bit_width(a[0])})"
        if op == "nth" and g.is_const(a[1]) and g.bit_width(a[0]) <= _TABLE_BITS:
            # a constant j (the kernel's unrolled loops): one gather from a table of nth(m, j)
            # over every m the page set can hold (0 <= m < 2**bits), instead of _nth's ~8 ops
            bits, j = g.bit_width(a[0]), int(g.cval(a[1]))
            nth_table = self.table([PYTHON.nth(m, j, a[2]) for m in range(1 << bits)])
            return f"{nth_table}.take({self.ref(a[0], as_int=True)})"
        if op == "nth":
            return f"_nth({self.ref(a[0], as_int=True)}, {self.ref(a[1], as_int=True)}, {_literal(a[2])}, {g.bit_width(a[0])})"
        if op == "stack":
            return "_stack((" + "".join(self.ref(v, as_int=True) + ", " for v in a) + "), N)"
        if op == "select":
            stack, idx, default = a
            if all(g.is_const(v) for v in g.nodes[stack].args):
                values = [int(g.cval(v)) for v in g.nodes[stack].args]
                inode = g.nodes[idx]
                if 0 <= inode.lo and inode.hi < len(values):  # always in range: a plain gather
                    return f"{self.table(values)}.take({self.ref(idx, as_int=True)})"
                return f"_select_const({self.table(values + [default])}, {self.ref(idx, as_int=True)})"
            return f"_select({self.ref(stack)}, {self.ref(idx, as_int=True)}, {_literal(default)})"
        raise ValueError(f"the batch interpreter has no rule for {op!r}")


# --------------------------------------------------------------------------- compiled model


@dataclass
class Program:
    """One action binding compiled: `rest` (guards not in the shared first stage), `body`, and
    `errors` (where the binding raises a spec error; None when it never can)."""

    binding: int
    rest: Callable[..., Any] | None
    body: Callable[..., Any] | None   # None: never enabled
    errors: Callable[..., Any] | None = None


@dataclass
class Expansion:
    """The successors of a block of states: one entry per enabled (state, binding) pair that
    raises no spec error, grouped by binding in model order, rows ascending within a binding;
    and the (state, binding) pairs that raise a spec error (`error_rows`, `error_binding`)."""

    rows: np.ndarray       # int64: the row of the parent in the block
    binding: np.ndarray    # int64: index into model.bindings
    words: np.ndarray      # uint64 (words x m): the packed successor
    flagged: np.ndarray    # bool: a kernel property is violated by this transition
    error_rows: np.ndarray     # int64: rows where a binding raises a spec error
    error_binding: np.ndarray  # int64: which binding


@dataclass
class StepPlan:
    """One binding's graph: its guard's conjuncts (None: never enabled), the writes (state
    position, node), the kernel's flag, and where it raises a spec error (None: never)."""

    guards: list[int] | None
    writes: list[tuple[int, int]]
    flag: int | None
    error: int | None


@dataclass
class WordWrites:
    """How a successor's packed words are made from its parent's (the numpy and the C writers
    both follow it): per word, the bits of the written fields (cleared), the bits of constant
    values (set), and the fields whose value a node computes, in the order of the writes."""

    cleared: dict[int, int]
    constant: dict[int, int]
    computed: list[tuple[Field, int]]

    @staticmethod
    def of(graph: Graph, layout: Layout, writes: list[tuple[int, int]]) -> WordWrites:
        cleared: dict[int, int] = {}
        constant: dict[int, int] = {}
        computed: list[tuple[Field, int]] = []
        for i, node_id in writes:
            f = layout.fields[i]
            if f.bits == 0:
                continue
            mask = (1 << f.bits) - 1
            cleared[f.word] = cleared.get(f.word, 0) | (mask << f.shift)
            node = graph.nodes[node_id]
            if node.op == "const":
                constant[f.word] = constant.get(f.word, 0) | (((int(node.value) - f.lo) & mask) << f.shift)
            else:
                computed.append((f, node_id))
        return WordWrites(cleared, constant, computed)

    def kept(self, word: int) -> int | None:
        """The mask of the parent's bits a word keeps (None: all of them)."""
        return ((1 << 64) - 1) ^ self.cleared[word] if word in self.cleared else None


@dataclass
class StateRoots:
    """The state properties' graph roots (ownership.interpret.batch.BatchModel.state_roots)."""

    bad: int
    error: int
    sometimes: list[int]


@dataclass
class StateChecks:
    """The state properties of a block's rows: `bad` (an invariant or the leak property fails,
    in a row that raises no spec error), `sometimes` (per sometimes property, where it holds),
    `error` (a property raises a spec error in the row; None when none can)."""

    bad: np.ndarray
    sometimes: list[np.ndarray]
    error: np.ndarray | None


class BatchModel:
    """A Model's traced graphs compiled to numpy code (see the module docstring)."""

    def __init__(self, model: Model, *, reachable: bool = False) -> None:
        """`reachable`: the model will only be run on states reachable from its initial state
        (a search), so positions that no binding writes are packed in no bits
        (NOTE(constant-positions)); without it, every in-domain state packs."""
        self.model = model
        self.layout = Layout(model)
        traced = trace_model(model)
        g = self.graph = Graph(model)
        self.n_bindings = len(model.bindings)
        #: per binding, its graph roots (None: never enabled), for other back ends (ownership.interpret.native)
        self.steps: list[StepPlan | None] = [None] * self.n_bindings
        cheap_roots: list[int | None] = []
        before_error_roots: list[int | None] = []
        plans: list[tuple[int, int | None, list[tuple[int, int]], int | None, int | None]] = []
        for b, tr in enumerate(traced.actions):
            conj = self._conjuncts(tr.guard)
            error_root, ahead = self._error_root(tr)
            ahead_cheap = [c for c in self._conjuncts(ahead) if not g.is_const(c) and self._cheap(c)]
            before_error_roots.append(None if error_root is None else
                                      (g.mk("and", tuple(ahead_cheap), BOOL) if ahead_cheap else -1))
            if any(g.is_const(c) and not g.cval(c) for c in conj):
                cheap_roots.append(None)   # never enabled (it may still raise a spec error)
                plans.append((b, None, [], None, error_root))
                self.steps[b] = StepPlan(None, [], None, error_root)
                continue
            conj = [c for c in conj if not g.is_const(c)]
            cheap = [c for c in conj if self._cheap(c)]
            rest = [c for c in conj if c not in cheap]
            cheap_roots.append(g.mk("and", tuple(cheap), BOOL) if cheap else -1)
            writes = [cw for i, w in sorted(tr.writes.items()) for cw in g.write_nodes(i, w)]
            writes = [(i, w) for i, w in writes if not (g.nodes[w].op == "var" and g.nodes[w].value == i)]
            checked = [c for prop, c, _ in tr.flags if prop not in self.model.skip]  # --skip
            flag = g.mk("or", tuple(g.term(c) for c in checked), BOOL) if checked else g.const(False)
            plans.append((b, g.mk("and", tuple(rest), BOOL) if rest else None, writes, flag, error_root))
            self.steps[b] = StepPlan(cheap + rest, writes, flag, error_root)
        self.never = [r is None for r in cheap_roots]
        # NOTE(constant-positions): a position that no binding writes keeps its initial value in
        # every reachable state (a state is reached only by steps), so a search packs it in no
        # bits: the kernel's in-flight marks of a pool that nothing sends into, say. This is a
        # fact of the traced writes, not a guess: a write of any other value makes the position
        # a field. Only for searches (`reachable`): the step of an arbitrary in-domain state,
        # which tests compare with the concrete one, needs every position's own bits.
        if reachable:
            # (by column: a wide page set's limbs each; NOTE(wide-pages))
            written = {i for _, _, writes, _, _ in plans for i, _ in writes}
            self.layout = Layout(model, {i: v for i, v in enumerate(self.layout.split(model.initial))
                                         if i not in written})
        props = traced.properties
        self.state_roots = self._prop_roots(props)
        self.state_can_fail = any(not (g.is_const(n) and not g.cval(n)) for n in
                                  (g.term(e.cond) for e in props.errors))
        self.can_fail = any(error_root is not None for *_, error_root in plans)
        # NOTE(lazy-numpy): the numpy programs are compiled on first use: the native engine
        # (ownership.interpret.native) reads only the graph, the steps and the state roots, and
        # compiling Python source for a model with thousands of nodes a binding (pools of
        # hundreds of pages) took longer than the search.
        self._pending: tuple[Any, ...] | None = (cheap_roots + before_error_roots, plans, props)
        self.sometimes_names = [name for name, _ in props.sometimes]
        #: why this model cannot run here (an integer that may not fit 64 bits), or None
        self.unsupported: str | None = None
        if g.too_wide is not None:
            wide = g.too_wide if isinstance(g.too_wide, str) else repr(g.too_wide)
            self.unsupported = ("a value of the spec may not fit a 64-bit integer (" + wide[:120]
                                + "), which the batch engine computes in")

    # -- compilation ------------------------------------------------------------------------

    def _compile_numpy(self) -> None:
        """The numpy programs of the steps and the state properties (NOTE(lazy-numpy))."""
        if self._pending is None:
            return
        stage1_roots, plans, props = self._pending
        self._stage1 = self._compile_stage1(stage1_roots)
        self.programs: list[Program | None] = []
        for b, rest_root, writes, flag_root, error_root in plans:
            errors_fn = self._compile_rest(b, error_root) if error_root is not None else None
            if self.never[b] or flag_root is None:
                self.programs.append(None if errors_fn is None else Program(b, None, None, errors_fn))
                continue
            rest_fn = self._compile_rest(b, rest_root) if rest_root is not None else None
            self.programs.append(Program(b, rest_fn, self._compile_body(b, writes, flag_root), errors_fn))
        self._props = self._compile_props(props)
        self._props_only = self._compile_props(props, sometimes=False)
        self._pending = None

    def _conjuncts(self, conds: list[Any]) -> list[int]:
        g = self.graph
        conj: list[int] = []
        for cond in conds:
            c = g.term(cond)
            node = g.nodes[c]
            conj.extend(node.args if node.op == "and" else [c])
        return conj

    def _error_root(self, tr: Any) -> tuple[int | None, list[Any]]:
        """Where the binding raises a spec error: some error whose guards before it hold and
        whose own condition holds (None when no error can happen); and the guards before the
        first possible error."""
        g = self.graph
        parts = []
        ahead: list[Any] | None = None
        for before, cond, _ in tr.errors():
            c = g.term(cond)
            if g.is_const(c) and not g.cval(c):
                continue
            guard = self._conjuncts(before)
            if any(g.is_const(x) and not g.cval(x) for x in guard):
                continue
            if ahead is None:
                ahead = before
            parts.append(g.mk("and", tuple(guard) + (c,), BOOL))
        if not parts:
            return None, []
        root = g.mk("or", tuple(parts), BOOL)
        if g.is_const(root) and not g.cval(root):
            return None, []
        return root, ahead or []

    def _cheap(self, root: int) -> bool:
        """A guard conjunct made only of comparisons of slots with constants (a stage check)."""
        g = self.graph
        stack, seen = [root], set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            node = g.nodes[n]
            if node.op in ("var", "const"):
                continue
            if node.op not in _CMP and node.op not in ("and", "or", "not"):
                return False
            stack.extend(node.args)
        return len(seen) <= 12

    def _compile_stage1(self, roots: list[int | None]) -> Callable[[np.ndarray], list[Any]]:
        em = _Emitter(self.graph, gathered=False)
        outs = []
        for r in roots:
            if r is None:
                outs.append("False")
            elif r == -1:
                outs.append("None")
            else:
                outs.append(em.ref(r, as_bool=True))
        src = "def stage1(X):\n    N = X.shape[1]\n" + "\n".join(em.lines) + f"\n    return [{', '.join(outs)}]\n"
        return _compile(src, "stage1", em.tables)

    def _compile_rest(self, b: int, root: int) -> Callable[..., Any]:
        em = _Emitter(self.graph, gathered=True)
        out = em.ref(root, as_bool=True)
        src = "def rest(X, idx):\n    N = idx.shape[0]\n" + "\n".join(em.lines) + f"\n    return {out}\n"
        return _compile(src, "rest", em.tables)

    def _compile_body(self, b: int, writes: list[tuple[int, int]], flag: int) -> Callable[..., Any]:
        """The successor's packed words and the kernel's flag, for rows where the binding is
        enabled. A value outside its slot's domain is a spec error found by the `errors`
        program (ownership.lang.state checks every write), so here every value fits its field."""
        g, lay = self.graph, self.layout
        em = _Emitter(g, gathered=True)
        plan = WordWrites.of(g, lay, writes)
        per_word: dict[int, list[str]] = {}
        for f, w in plan.computed:
            node = g.nodes[w]
            ref = em.ref(w, as_int=True) if node.sort == INT else em.ref(w)
            if node.sort == BOOL:
                piece = f"{ref}.astype(np.uint64)"
            elif f.lo:
                piece = f"({ref} - {f.lo}).view(np.uint64)"
            else:
                piece = f"{ref}.view(np.uint64)"
            if f.bits < 64:
                piece = f"({piece} & {(1 << f.bits) - 1})"
            if f.shift:
                piece = f"({piece} << {f.shift})"
            per_word.setdefault(f.word, []).append(piece)
        flag_ref = None if g.is_const(flag) and not g.cval(flag) else em.ref(flag, as_bool=True)
        lines = list(em.lines)
        outs = []
        for wd in range(lay.words):
            lines.append(f"    w{wd} = P[{wd}].take(idx)")
            if plan.kept(wd) is not None:
                lines.append(f"    w{wd} &= {plan.kept(wd)}")
            if plan.constant.get(wd):
                lines.append(f"    w{wd} |= {plan.constant[wd]}")
            for piece in per_word.get(wd, []):
                lines.append(f"    w{wd} |= {piece}")
            outs.append(f"w{wd}")
        flag_out = "None" if flag_ref is None else (
            "np.ones(N, dtype=bool)" if flag_ref == "True" else f"np.broadcast_to({flag_ref}, (N,))")
        src = ("def body(X, P, idx):\n    N = idx.shape[0]\n" + "\n".join(lines)
               + f"\n    return ({', '.join(outs)},), {flag_out}\n")
        return _compile(src, "body", em.tables)

    def _prop_roots(self, props: Any) -> StateRoots:
        """The roots of the state properties: an invariant or the leak property fails (not
        counting --skip), a property raises a spec error, each sometimes property holds."""
        g = self.graph
        bad = []
        skip = self.model.skip  # --skip: properties the user chose not to check
        for name, cond in props.invariants:
            if name in skip:
                continue
            n = g.mk("not", (g.term(cond),), BOOL) if not g.is_const(g.term(cond)) else g.const(not g.cval(g.term(cond)))
            bad.append(n)
        for cond, _ in ([] if "leak" in skip else props.leak):
            bad.append(g.term(cond))
        root = g.mk("or", tuple(bad), BOOL) if bad else g.const(False)
        errors = [g.term(e.cond) for e in props.errors]
        error_root = g.mk("or", tuple(errors), BOOL) if errors else g.const(False)
        return StateRoots(root, error_root, [g.term(cond) for _, cond in props.sometimes])

    def _compile_props(self, props: Any, *, sometimes: bool = True) -> Callable[[np.ndarray], Any]:
        g = self.graph
        em = _Emitter(g, gathered=False)
        roots = self._prop_roots(props)
        root, error_root = roots.bad, roots.error
        bad_ref = em.ref(root, as_bool=True)
        error_ref = "None" if g.is_const(error_root) and not g.cval(error_root) else \
            f"np.broadcast_to({em.ref(error_root, as_bool=True)}, (N,))"
        some = [em.ref(r, as_bool=True) for r in roots.sometimes] if sometimes else []
        src = ("def props(X):\n    N = X.shape[1]\n" + "\n".join(em.lines)
               + f"\n    return np.broadcast_to({bad_ref}, (N,)), [np.broadcast_to(s, (N,)) for s in ({''.join(s + ', ' for s in some)})], {error_ref}\n")
        return _compile(src, "props", em.tables)

    # -- running ----------------------------------------------------------------------------

    def expand(self, P: np.ndarray, X: np.ndarray | None = None) -> Expansion:
        """Every successor of the packed block P (words x n); X is P unpacked, if at hand."""
        self._compile_numpy()
        if X is None:
            X = self.layout.unpack(P)
        n = P.shape[1]
        B = self.n_bindings
        with np.errstate(all="ignore"):
            masks = self._stage1(X)
            rows, binds, words, flags = [], [], [], []
            error_rows, error_binds = [], []
            all_rows: np.ndarray | None = None
            for b, prog in enumerate(self.programs):
                if prog is None:
                    continue
                failing: np.ndarray | None = None
                if prog.errors is not None:
                    m = masks[B + b]
                    if all_rows is None:
                        all_rows = np.arange(n, dtype=np.int64)
                    cand = all_rows if m is None else np.flatnonzero(m)
                    if cand.size:
                        hit = np.broadcast_to(prog.errors(X, cand), cand.shape)
                        if hit.any():
                            failing = cand[hit]
                            error_rows.append(failing)
                            error_binds.append(np.full(failing.size, b, dtype=np.int64))
                if prog.body is None:
                    continue
                m = masks[b]
                if m is None:
                    if all_rows is None:
                        all_rows = np.arange(n, dtype=np.int64)
                    idx = all_rows
                else:
                    idx = np.flatnonzero(m)
                if prog.rest is not None and idx.size:
                    keep = prog.rest(X, idx)
                    idx = idx[np.broadcast_to(keep, idx.shape)]
                if failing is not None and idx.size:  # a step that raises a spec error has no successor
                    fails = np.zeros(n, dtype=bool)
                    fails[failing] = True
                    idx = idx[~fails.take(idx)]
                if idx.size == 0:
                    continue
                w, flag = prog.body(X, P, idx)
                rows.append(idx)
                binds.append(b)
                words.append(w)
                flags.append(np.zeros(idx.size, dtype=bool) if flag is None else flag)
        k = self.layout.words
        e = np.zeros(0, dtype=np.int64)
        er = np.concatenate(error_rows) if error_rows else e
        eb = np.concatenate(error_binds) if error_binds else e.copy()
        if not rows:
            return Expansion(e, e.copy(), np.zeros((k, 0), dtype=np.uint64), np.zeros(0, bool), er, eb)
        sizes = [r.size for r in rows]
        return Expansion(np.concatenate(rows), np.repeat(np.array(binds, dtype=np.int64), sizes),
                         _words(words, k), np.concatenate(flags), er, eb)

    def state_properties(self, X: np.ndarray, *, sometimes: bool = True) -> StateChecks:
        """Per row: does an invariant or the leak property fail (where no property raises a
        spec error); each sometimes property (an empty list with sometimes=False, once a search
        has reached them all); and where a property raises a spec error."""
        self._compile_numpy()
        with np.errstate(all="ignore"):
            bad, some, error = (self._props if sometimes else self._props_only)(X)
        if error is not None:
            bad = bad & ~error
            if not error.any():
                error = None
        return StateChecks(bad, some, error)
