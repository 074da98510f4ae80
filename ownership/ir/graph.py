"""The batch graph: the intermediate form the numpy, C and symmetry backends read (issue 30, item 1).

Tracing (ownership.ir.tracer) gives each action and property as a graph of `Term`s;
`Graph` makes them one shared table of `Node`s for a model:
- hash-consed, so that a subexpression used by several bindings (or pages) is one node;
- folded where its arguments are constants (with the meanings of ownership.ir.ops) or where
  its interval decides it (`prompt > 3` when prompt ranges over 0..3);
- bounded: each node carries the interval of its values (ownership.ir.ops's rules,
  NOTE(one-interval)), clamped to int64 once the model is known to fit (NOTE(int64-exact));
- lowered: a page set of a pool over 62 pages becomes limbs of 63 bits (NOTE(wide-pages)).
Its operations are those of ownership.ir.ops.OPERATIONS (every one of them can be held: each
backend writes them all, tests/language/test_operations.py), besides the leaves `var` (a state position)
and `const`, and `stack` (the values a `select` picks from, one node for every select of them).

NOTE(int64-exact): numpy and C compute in int64, the concrete interpreter (which defines a
spec) on Python's unbounded integers. The two agree only where every value fits int64, so the
graph notes (`Graph.too_wide`) any slot's domain, constant or intermediate whose interval, on
Python's integers, leaves int64 (or a shift by 64 or more, `//` of int64's least value by -1,
a page set read where a limb may be negative), and such a model is `unsupported`: the engines
check it with Python's integers instead. Only after that decision are intervals clamped to
int64 (`_bounds`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ..lang.model import Model
from . import ops
from .tracer import BOOL, INT, PAGES, Term, postorder

#: Largest pool (in pages) whose page sets fit one int64 column as non-negative numbers, as
#: the concrete interpreter's Python integers are (NOTE(int64-exact)): pages 0..size, since a
#: LIFO free list names page `size` for "none" and computes page(size); larger pools take
#: several columns (NOTE(wide-pages)).
MAX_POOL_PAGES = 62

#: Bits of a page set held by one limb (one int64 column) of a wide page set (NOTE(wide-pages)).
LIMB_BITS = 63
LIMB_MASK = (1 << LIMB_BITS) - 1

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
# (`limb_plan`); ownership.interpret.batch.Layout packs columns, and unpacks a row back into the flat tuple of Python
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
    return [(v >> (LIMB_BITS * k)) & LIMB_MASK for k in range(n - 1)] + [v >> (LIMB_BITS * (n - 1))]


def join_limbs(limbs: list[int]) -> int:
    """The Python integer of its limbs (split_limbs' inverse)."""
    return sum(int(x) << (LIMB_BITS * k) for k, x in enumerate(limbs))


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

#: The comparisons, each with its negation (`not (a < b)` is `a >= b`).
NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
COMPARISONS = frozenset(NEGATED)
#: The operations that act on each bit (of a page set: on each page) alone.
BITWISE = frozenset({"bitand", "bitor", "bitxor"})
#: The operations of ownership.ir.ops.OPERATIONS that no node holds, the graph writing them with
#: others: none (`not` stays where it negates no comparison, `select` where its index is not
#: constant); every backend writes the rest (NOTE(emit-tables), tests/language/test_operations.py).
LOWERED: frozenset[str] = frozenset()
#: What a node holds besides an operation: a state position, a constant, a select's values.
STRUCTURE = frozenset({"var", "const", "stack"})


# --------------------------------------------------------------------------- the node table


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


def plain(x: Any) -> Any:
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
                    self.var_bounds[col] = (0, min(LIMB_MASK, s.hi >> (LIMB_BITS * j)))
            if s.length and len(self.cols[s.offset]) > 1:
                continue   # (a wide page set: limbs of 63 bits)
            if self.too_wide is None and (s.lo < INT64_MIN or s.hi > INT64_MAX):
                self.too_wide = f"slot {s.name}, of domain {s.lo}..{s.hi}"
        self._limb_memo: dict[int, tuple[int, ...]] = {}
        self._paged: dict[int, bool] = {}

    # -- building ----------------------------------------------------------------------------

    def const(self, v: Any) -> int:
        v = plain(v)
        if isinstance(v, bool):
            return self._add(("const", v), Node("const", (), BOOL, int(v), int(v), v))
        v = int(v)
        if self.too_wide is None and not INT64_MIN <= v <= INT64_MAX:
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
            n = self.select([self.term(v) for v in values], self.term(idx), plain(default))
        elif t.op == "nth":
            m, j, default = t.args
            self.const(default)  # (a default past int64 makes the model unsupported, as a constant does)
            n = self.mk("nth", (self.term(m), self.term(j)), INT, (plain(default),))
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
        if t.op in COMPARISONS:
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
        if op in COMPARISONS:   # (the domain checks' v < lo, v > hi): lexicographic, top limb signed
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
            out = self.const(plain(default))
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
            return self._const_limbs(int(plain(t)))
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
        elif op in BITWISE:
            x, y = self.limbs(a[0]), self.limbs(a[1])
            out = tuple(self.mk(op, (p, q), INT) for p, q in zip(x, y))
        elif op == "compl":
            x = self.limbs(a[0])
            mask = self.const(LIMB_MASK)
            out = tuple(self.mk("bitxor", (p, mask), INT) for p in x[:-1]) + (self.mk("compl", (x[-1],), INT),)
        elif op == "ite":
            c = self.term(a[0])
            x, y = self.limbs(a[1]), self.limbs(a[2])
            out = tuple(self.mk("ite", (c, p, q), INT) for p, q in zip(x, y))
        elif op == "select":
            values, idx, default = a
            i = self.term(idx)
            per = [self.limbs(v) for v in values]
            d = split_limbs(int(plain(default)), K)
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
            if alo <= INT64_MIN and dlo <= -1 <= dhi:
                self.too_wide = t
            return
        if t.sort == PAGES or node.op not in ("add", "sub", "mul", "neg", "shl"):
            return
        args = node.args[:2] if node.op != "neg" else node.args[:1]
        if node.op == "shl" and self.nodes[args[1]].hi >= 64 and (self.nodes[args[0]].lo, self.nodes[args[0]].hi) != (0, 0):
            self.too_wide = t  # (numpy's shift by 64 or more is not Python's)
            return
        lo, hi = self._exact(node.op, args, ())
        if lo < INT64_MIN or hi > INT64_MAX:
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
                return self.const(plain(ops.meaning(op, [nodes[a].value for a in args], extra)))
            except (ZeroDivisionError, ValueError):
                pass
        simpler = self._simplify(op, args, sort)
        if simpler is not None:
            return simpler
        lo, hi = self._bounds(op, args, extra)
        if op in COMPARISONS or op in ("xor", "not"):
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
            if inner.op in COMPARISONS:  # one comparison instead of a comparison and a negation
                return self.mk(NEGATED[inner.op], inner.args, BOOL)
            return None
        if op in COMPARISONS:
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
    return max(lo, INT64_MIN), min(hi, INT64_MAX)

