"""The z3 translation of the traced IR: each node of the symbolic tracer's Term graphs as a
z3 formula (the layer under ownership.interpret.smt's Encoding, which builds the step relation
and the properties from these values).

- Every integer value is a signed bit-vector of ONE width W, chosen per model by an interval
  analysis of every term from the slot domains, the ranges of symbolic parameters and the
  constants (`interval_of`: the rule of ownership.ir.ops's table, NOTE(one-interval), within
  z3's limit MAX_WIDTH): W holds every value any term can take on an in-domain state (plus a
  margin bit for floor division), so bit-vector arithmetic equals Python's unbounded integers
  and nothing wraps silently. Conditions and boolean slots are z3 Bools.
- Page sets are bitmasks, as in the concrete interpreter; `first`, `nth` and `popcount`
  unroll over the bits the mask can have; page(p) is {p} for p >= 0 and empty for p < 0.
- W is the width of the templates' values; inside, each node is computed at its own
  interval's width (NOTE(narrow-values)), counts of bits in as few bits as they need and
  page(p) as a decoder (NOTE(narrow-counts)), and a count compared with a constant in unary
  (NOTE(unary-counts)): the same values on in-domain states, in fewer and simpler clauses.
  Floor division and modulo follow Python.

Each operation of ownership.ir.ops.OPERATIONS is translated by its row of `FORMS`, as the numpy
and C emitters write theirs from their own tables (NOTE(emit-tables)): an operation the table
lacks is refused by name, and tests/language/test_operations.py fails. Translation is cached per
Term object, so a graph shared by several roots is translated once.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import z3

from ..errors import SpecError
from ..ir import ops
from ..ir.ops import Interval, signed_bits
from ..ir.tracer import BOOL, Term
from ..lang.model import Model, SlotInfo
from .smt_params import SymbolicParam

#: Refuse models whose values need wider bit-vectors than this (a shift by a huge amount).
MAX_WIDTH = 1024

#: The largest page set whose counts are also kept in unary (NOTE(unary-counts)).
UNARY_PAGES = 128

#: The comparisons, whose sides an interval or a unary count may decide.
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _decided(op: str, a: Interval, b: Interval) -> bool | None:
    """A comparison that the intervals of its sides decide, or None."""
    (alo, ahi), (blo, bhi) = a, b
    if op in ("eq", "ne"):
        if ahi < blo or bhi < alo:
            return op == "ne"
        if alo == ahi == blo == bhi:
            return op == "eq"
        return None
    if op == "lt":
        return True if ahi < blo else False if alo >= bhi else None
    if op == "le":
        return True if ahi <= blo else False if alo > bhi else None
    if op == "gt":
        return True if alo > bhi else False if ahi <= blo else None
    return True if alo >= bhi else False if ahi < blo else None


def _mask_bits(m: Interval) -> int | None:
    """How many low bits a mask in this interval can have set; None if it can be negative."""
    return m[1].bit_length() if m[0] >= 0 else None


def interval_of(term: Term, arg: Any) -> Interval:
    """The interval of one Term from the intervals of its arguments (`arg` looks them up):
    the table's rule (NOTE(one-interval)), after refusing what z3 cannot hold."""
    op, args = term.op, term.args
    if op == "const":
        v = int(args[0])
        return v, v
    if term.sort == BOOL and op != "ite":
        return 0, 1
    if op not in ops.OPERATIONS:
        raise _unsupported(term)
    if op == "bit" and arg(args[0])[1] > MAX_WIDTH:
        raise _too_wide(term)
    if op in ("shl", "shr") and arg(args[1])[1] > MAX_WIDTH:
        raise _too_wide(term)
    if op == "select":
        values, idx, default = args
        return ops.interval(op, [*(arg(v) for v in values), arg(idx)], (default,))
    if op == "nth":
        return ops.interval(op, [arg(args[0]), arg(args[1])], (args[2],))
    return ops.interval(op, [arg(a) for a in args], ())


def _unsupported(term: Term) -> SpecError:
    return SpecError(
        f"the symbolic engine cannot encode the operation {term.op!r}; the spec language's"
        " operations are listed in ownership.lang.values. Use the explicit engine for this spec."
    )


def _not_a_value(a: Any) -> SpecError:
    return SpecError(f"the symbolic engine cannot encode the value {a!r} of type {type(a).__name__}")


def _too_wide(term: Term) -> SpecError:
    return SpecError(
        f"a value of the spec needs more than {MAX_WIDTH} bits in the symbolic engine"
        f" ({term.op} by a count that can exceed {MAX_WIDTH}); bound the shift or use the explicit engine."
    )


class Translation:
    """The z3 values of every node of a model's traced graphs: first the interval of each node
    and the width W that holds them all (`__init__`), then, over the variables of a pre-state
    and of the symbolic parameters, each node's value (`translate`, `val`)."""

    def __init__(self, model: Model, params: dict[int, SymbolicParam], order: Sequence[Term]) -> None:
        """The intervals of the nodes of `order` (children before parents) and the width W;
        `params` are the symbolic parameters, by their variable index."""
        self.model = model
        self.params = params
        ivl: dict[int, Interval] = {}

        def arg_ivl(a: Any) -> Interval:
            if isinstance(a, Term):
                return ivl[id(a)]
            if isinstance(a, bool):
                return int(a), int(a)
            if isinstance(a, int):
                return int(a), int(a)
            raise _not_a_value(a)

        for term in order:
            if term.op == "var":
                ivl[id(term)] = self._var_interval(term.args[0])
            else:
                ivl[id(term)] = interval_of(term, arg_ivl)
        bits = 2
        for lo, hi in ivl.values():
            bits = max(bits, signed_bits(lo, hi))
        for s in model.slots:
            bits = max(bits, signed_bits(s.lo, s.hi))
        for p in params.values():
            bits = max(bits, signed_bits(p.lo, p.hi))
        bits += 1  # margin: floor division computes a - (a mod b) before dividing
        if bits > MAX_WIDTH:
            raise SpecError(f"the values of this spec need {bits}-bit numbers; the symbolic engine stops at {MAX_WIDTH}")
        self.W = bits
        self._ivl = ivl
        #: NOTE(unary-counts): the unary prefix counts of a page set, by the set's Term
        self.unary: dict[int, list[list[Any]]] = {}
        self.x: list[Any] = []
        self.param_vars: dict[int, Any] = {}
        self._z: dict[int, Any] = {}

    def translate(self, order: Sequence[Term], x: list[Any], param_vars: dict[int, Any]) -> None:
        """Every node of `order` (children before parents) over the pre-state `x` and the
        parameters' variables, cached per Term."""
        self.x = x
        self.param_vars = param_vars
        for term in order:
            self._z[id(term)] = self._translate(term)

    # -- variables ----------------------------------------------------------------------------

    def _var_interval(self, i: int) -> Interval:
        if i < self.model.width:
            info = self._slot(i)
            return info.lo, info.hi
        p = self.params.get(i)
        if p is None:
            raise SpecError(f"the traced graphs use variable {i}, which is neither a slot nor a symbolic parameter")
        return p.lo, p.hi

    def _slot(self, i: int) -> SlotInfo:
        for s in self.model.slots:
            if s.offset <= i < s.offset + s.length:
                return s
        raise IndexError(i)

    def fresh_state(self, tag: str) -> list[Any]:
        """New z3 constants for one state, named after the slots (`d_stage[r1]@3`)."""
        out: list[Any] = []
        for s in self.model.slots:
            for k in range(s.length):
                name = s.name if s.shape == "scalar" else f"{s.name}[{'r' if s.shape == 'request' else ''}{k + s.base}]"
                out.append(z3.Bool(f"{name}@{tag}") if s.is_bool else z3.BitVec(f"{name}@{tag}", self.W))
        return out

    # -- values -------------------------------------------------------------------------------
    #
    # NOTE(narrow-values): every integer node is translated at the width its interval needs
    # (`_width`), not at W: the interval analysis that chose W bounds each node on every
    # in-domain state, and every state the engines ask about is in its domain (the initial
    # state, successors of steps that raise no spec error, and the arbitrary states of the
    # induction step and of NOTE(footprints), whose domain is asserted). On such states a node's
    # narrow value is its W-bit value, so the formulas mean what the W-bit ones meant; they
    # just bit-blast into fewer clauses (the step of sglang_pd at 6 decode pages: a third
    # fewer). How each operation stays exact:
    # - a slot or a parameter is the low bits of its W-bit variable (its domain fits in them);
    # - +, -, *, negation, complement and the bitwise operations are computed at the width of
    #   their result, on operands sign-extended or truncated to it: two's complement arithmetic
    #   modulo 2^w agrees with Python's in the low w bits, and the result's interval fits w;
    # - comparisons sign-extend both sides to the wider of the two; `select` compares its
    #   index only with the positions its interval can reach;
    # - floor division, modulo and shifts are computed at W as before (they are rare; their
    #   value where they fault, a zero divisor or a negative count, is a spec error and reaches
    #   no step, flag or property), then truncated to their result's width;
    # - page sets: NOTE(narrow-counts).
    # `val` gives every node at W (sign-extended: free in the bit-blasted formula), for the
    # templates the engines instantiate; a slot read as a whole is its own variable.
    #
    # NOTE(narrow-counts): `count`, and the running counts inside `first` and `nth`, add up
    # single bits: they are computed in as few bits as the largest count needs (3 bits for a
    # 6-page pool, instead of W adders of W bits each), and `page(p)` is a decoder (bit i is
    # the condition p == i, for the positions p can take) instead of a barrel shifter: both
    # are the same numbers, in a fraction of the clauses. The LIFO free list (ownership.kernel:
    # alloc takes its head with `select`, free prepends with `nth` after `count`) was two thirds
    # of sglang_pd's step relation before.

    def val(self, a: Any) -> Any:
        """The z3 expression of a Term or a Python constant, an integer at width W."""
        if isinstance(a, Term):
            if a.op == "var":
                i = a.args[0]
                return self.x[i] if i < self.model.width else self.param_vars[i]
            e = self._z[id(a)]
            return e if z3.is_bool(e) else self._fit(e, self.W)
        if isinstance(a, bool):
            return z3.BoolVal(a)
        if isinstance(a, int):
            return z3.BitVecVal(int(a), self.W)
        raise _not_a_value(a)

    def as_bv(self, e: Any) -> Any:
        """An integer: a condition counts as 0 or 1, as in the concrete interpreter."""
        if z3.is_bool(e):
            return z3.If(e, z3.BitVecVal(1, self.W), z3.BitVecVal(0, self.W))
        return e

    def as_bool(self, e: Any) -> Any:
        """A condition: an integer holds where it is not 0, as in the concrete interpreter."""
        if z3.is_bool(e):
            return e
        return e != z3.BitVecVal(0, e.size())

    def _ivl_of(self, a: Any) -> Interval:
        if isinstance(a, Term):
            return self._ivl[id(a)]
        return int(a), int(a)

    def _width(self, a: Any) -> int:
        """The width of a node's narrow value: its interval's signed width, at most W."""
        return min(self.W, signed_bits(*self._ivl_of(a)))

    @staticmethod
    def _fit(e: Any, w: int) -> Any:
        """A bit-vector sign-extended or truncated to width w (NOTE(narrow-values))."""
        n = e.size()
        if n == w:
            return e
        return z3.SignExt(w - n, e) if n < w else z3.Extract(w - 1, 0, e)

    def _nval(self, a: Any) -> Any:
        """The narrow value of a Term or a constant: a Bool, or a bit-vector of `_width(a)`."""
        if isinstance(a, Term):
            return self._z[id(a)]
        if isinstance(a, bool):
            return z3.BoolVal(a)
        if isinstance(a, int):
            return z3.BitVecVal(int(a), signed_bits(int(a), int(a)))
        raise _not_a_value(a)

    def _nbv(self, a: Any, w: int | None = None) -> Any:
        """A node's narrow value as an integer (a condition is 0 or 1), at width w if given."""
        e = self._nval(a)
        if z3.is_bool(e):
            e = z3.If(e, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2))
        return e if w is None else self._fit(e, w)

    def _pair(self, a: Any, b: Any) -> tuple[Any, Any]:
        """Two integer operands at the wider of their widths (for a comparison)."""
        x, y = self._nbv(a), self._nbv(b)
        w = max(x.size(), y.size())
        return self._fit(x, w), self._fit(y, w)

    def _translate(self, t: Term) -> Any:
        """The narrow value of one node (NOTE(narrow-values)), from its arguments' narrow values:
        a leaf itself, an operation by its row of FORMS."""
        op, args = t.op, t.args
        if op == "var":
            i = args[0]
            e = self.x[i] if i < self.model.width else self.param_vars[i]
            return e if z3.is_bool(e) else self._fit(e, self._width(t))
        if op == "const":
            return z3.BoolVal(bool(args[0])) if t.sort == BOOL else z3.BitVecVal(int(args[0]), self._width(t))
        form = FORMS.get(op)
        if form is None:
            raise _unsupported(t)
        return form(self, t)

    # -- the operations (each a row of FORMS) ---------------------------------------------------

    def _comparison(self, t: Term) -> Any:
        """A comparison: decided by the sides' intervals, or in unary (NOTE(unary-counts)), or
        on both sides at the wider of their widths (conditions compared as conditions)."""
        op, args = t.op, t.args
        if not any(isinstance(x, Term) and x.sort == BOOL for x in args):
            decided = _decided(op, self._ivl_of(args[0]), self._ivl_of(args[1]))
            if decided is not None:
                return z3.BoolVal(decided)
            unary = self._count_compare(op, args[0], args[1])
            if unary is not None:
                return unary
        if op in ("eq", "ne"):
            a, b = self._nval(args[0]), self._nval(args[1])
            if not (z3.is_bool(a) and z3.is_bool(b)):
                a, b = self._pair(args[0], args[1])
            return a == b if op == "eq" else a != b
        a, b = self._pair(args[0], args[1])
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]

    def _logic(self, t: Term) -> Any:
        """and, or, xor: of conditions (an integer holds where it is not 0)."""
        parts = [self.as_bool(self._nval(x)) for x in t.args]
        if t.op == "xor":
            return z3.Xor(*parts)
        return z3.And(*parts) if t.op == "and" else z3.Or(*parts)

    def _not(self, t: Term) -> Any:
        return z3.Not(self.as_bool(self._nval(t.args[0])))

    def _ite(self, t: Term) -> Any:
        args, w = t.args, self._width(t)
        c, a, b = self.as_bool(self._nval(args[0])), self._nval(args[1]), self._nval(args[2])
        if z3.is_bool(a) and z3.is_bool(b):
            return z3.If(c, a, b)
        a, b = self._nbv(args[1]), self._nbv(args[2])
        wide = max(a.size(), b.size(), w)
        return self._fit(z3.If(c, self._fit(a, wide), self._fit(b, wide)), w)

    def _select(self, t: Term) -> Any:
        """values[index], or the default: the index compared only with the positions its
        interval can reach (in unary where it is a count plus a constant)."""
        args, w = t.args, self._width(t)
        idx = self._nbv(args[1])
        lo, hi = self._ivl_of(args[1])
        values = [self._nbv(x) for x in args[0]]
        wide = max([w, *(x.size() for x in values)])
        out = z3.BitVecVal(int(args[2]), wide)
        affine = self._count_affine(args[1])
        for i in reversed(range(len(values))):
            if lo <= i <= hi:  # (the index can be i: i fits the index's width)
                if affine is not None:  # index = sign * count(mask) + offset (NOTE(unary-counts))
                    mask, sign, offset = affine
                    hit = self._count_is(mask, sign * (i - offset))
                else:
                    hit = idx == z3.BitVecVal(i, idx.size())
                out = z3.If(hit, self._fit(values[i], wide), out)
        return self._fit(out, w)

    def _popcount(self, t: Term) -> Any:
        """How many bits of a page set are set (of |m|, as Python counts a negative m)."""
        w = self._width(t)
        m = self._nbv(t.args[0])
        lo, hi = self._ivl_of(t.args[0])
        if lo < 0:
            m = z3.SignExt(1, m)  # (|m| of the most negative m needs one bit more)
            m = z3.If(m < 0, -m, m)
        n = min(max(hi.bit_length(), (-lo).bit_length() if lo < 0 else 0), m.size())
        if n == 0:
            return z3.BitVecVal(0, w)
        return self._fit(z3.ZeroExt(1, self._count_bits([z3.Extract(i, i, m) for i in range(n)])), w)

    def _page_of(self, t: Term) -> Any:
        """page(p): {p} for p >= 0, the empty set for p < 0, as in the concrete interpreter."""
        w = self._width(t)
        p = t.args[0]
        return self._page(self._nbv(p), self._ivl_of(p), w)

    def _count_bits(self, bits: list[Any]) -> Any:
        """How many of the 1-bit vectors `bits` are 1, as an unsigned bit-vector just wide
        enough for len(bits) (NOTE(narrow-counts)); at least one bit wide."""
        cw = max(1, len(bits).bit_length())
        if not bits:
            return z3.BitVecVal(0, cw)
        wide = [z3.ZeroExt(cw - 1, b) if cw > 1 else b for b in bits]
        return wide[0] if len(wide) == 1 else z3.Sum(wide)

    def _page(self, n: Any, ivl: Interval, w: int) -> Any:
        """page(n) = {n} for n >= 0, the empty set for n < 0, as a mask of width w: bit i is
        the condition n == i, for the positions i that n can take (NOTE(narrow-counts))."""
        lo, hi = ivl
        top = min(hi, w - 1)
        if top < max(lo, 0):
            return z3.BitVecVal(0, w)
        one, zero = z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
        bits = [z3.If(n == z3.BitVecVal(i, n.size()), one, zero) if max(lo, 0) <= i else zero
                for i in range(top + 1)]
        out = bits[0] if len(bits) == 1 else z3.Concat(*reversed(bits))
        return z3.ZeroExt(w - out.size(), out) if out.size() < w else out

    def _mask(self, arg: Any) -> tuple[Any, int]:
        """A page set's bits as a bit-vector, and how many of its low bits can be set: those
        below its interval's top for a set that cannot be negative, else W (as two's complement
        at W, where a negative set's bits above its width repeat its sign)."""
        bits = _mask_bits(self._ivl_of(arg))
        m = self._nbv(arg)
        if bits is None:
            return self._fit(m, self.W), self.W
        size = min(bits, self.W)
        return self._fit(m, max(m.size(), size)), size

    def _prefix_counts(self, m: Any, n: int) -> tuple[list[Any], list[Any]]:
        """The bits of m below n as conditions, and how many of them are set below each, as
        non-negative bit-vectors just wide enough (NOTE(narrow-counts)), one sign bit included."""
        bits = [z3.Extract(i, i, m) == 1 for i in range(n)]
        cw = max(1, n.bit_length()) + 1
        one, zero = z3.BitVecVal(1, cw), z3.BitVecVal(0, cw)
        counts = [zero]
        for b in bits[:-1] if bits else []:
            counts.append(counts[-1] + z3.If(b, one, zero))
        return bits, counts

    def _first(self, t: Term) -> Any:
        """The n lowest pages of a set."""
        w = self._width(t)
        m, size = self._mask(t.args[0])
        if size == 0:
            return z3.BitVecVal(0, w)
        n = self._nbv(t.args[1])
        bits, counts = self._prefix_counts(m, size)
        cmp = max(n.size(), counts[0].size())
        n = self._fit(n, cmp)
        keep = [z3.If(z3.And(bits[i], self._fit(counts[i], cmp) < n), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
                for i in range(size)]
        out = keep[0] if size == 1 else z3.Concat(*reversed(keep))
        # (the n lowest bits of a set: never more than its interval's top, which fits w)
        return z3.ZeroExt(w - size, out) if size < w else z3.Extract(w - 1, 0, out)

    def _nth(self, t: Term) -> Any:
        """The j-th lowest page of a set, or the default."""
        w = self._width(t)
        m, size = self._mask(t.args[0])
        j = self._nbv(t.args[1])
        jlo, jhi = self._ivl_of(t.args[1])
        out = z3.BitVecVal(int(t.args[2]), w)
        bits, counts = self._prefix_counts(m, size)
        cmp = max(j.size(), counts[0].size())
        jj = self._fit(j, cmp)
        ones = self._ones(t.args[0]) if jlo == jhi else None
        for i in reversed(range(size)):
            if jlo <= i and jhi >= 0:  # (the count below bit i is 0..i: j can be it)
                below = (self._exactly(ones, i, jlo) if ones is not None  # NOTE(unary-counts)
                         else self._fit(counts[i], cmp) == jj)
                out = z3.If(z3.And(bits[i], below), z3.BitVecVal(i, w), out)
        return out

    # NOTE(unary-counts): the kernel's LIFO free list compares counts of a page set with
    # constants: free() tests count(pages) > j and reads old[j - count(pages)] for each
    # position j, and nth(pages, j) asks whether exactly j pages lie below page i. As sums in
    # binary, each such test is an adder and a comparator (and z3's simplifier, solving
    # `j - count == i` for one bit of the sum, copies the adder into every test). Here a page
    # set's counts are also kept in unary, once per set: ones[i][c] is the condition "at least
    # c of the bits below i are set", by the recurrence ones[i+1][c] = ones[i][c] or (bit i and
    # ones[i][c-1]) (i * (i + 1) / 2 gates); a comparison of the count with a constant is one
    # of those conditions, or two. Only for sets whose interval is non-negative (their bits
    # are all there is), only where the other side is a constant, and only for sets of at
    # most UNARY_PAGES bits (i * (i + 1) / 2 gates: half a million for a pool of 1,000 pages):
    # the binary sum stays the value everywhere else.

    def _ones(self, mask: Any) -> list[list[Any]] | None:
        """The unary prefix counts of a page set (NOTE(unary-counts)), or None when the set
        is a constant or can be negative."""
        if not isinstance(mask, Term) or self._ivl_of(mask)[0] < 0:
            return None
        got = self.unary.get(id(mask))
        if got is None:
            m, size = self._mask(mask)
            if size > UNARY_PAGES:
                return None
            rows: list[list[Any]] = [[z3.BoolVal(True)]]
            for i in range(size):
                bit, prev = z3.Extract(i, i, m) == 1, rows[-1]
                row = [z3.BoolVal(True)]
                for c in range(1, i + 2):
                    carry = bit if c == 1 else z3.And(bit, prev[c - 1])
                    row.append(z3.Or(prev[c], carry) if c <= i else carry)
                rows.append(row)
            got = self.unary[id(mask)] = rows
        return got

    @staticmethod
    def _at_least(ones: list[list[Any]], i: int, c: int) -> Any:
        """At least c of the bits below i are set."""
        return z3.BoolVal(True) if c <= 0 else z3.BoolVal(False) if c > i else ones[i][c]

    def _exactly(self, ones: list[list[Any]], i: int, c: int) -> Any:
        """Exactly c of the bits below i are set."""
        if c < 0 or c > i:
            return z3.BoolVal(False)
        if c == i:
            return self._at_least(ones, i, c)
        return z3.And(self._at_least(ones, i, c), z3.Not(self._at_least(ones, i, c + 1)))

    def _count_is(self, mask: Any, c: int) -> Any:
        """count(mask) == c, for a set with unary counts."""
        ones = self._ones(mask)
        assert ones is not None
        return self._exactly(ones, len(ones) - 1, c)

    def _constant(self, a: Any) -> int | None:
        """The one value a node can take, if its interval has one."""
        lo, hi = self._ivl_of(a)
        return lo if lo == hi and not (isinstance(a, Term) and a.sort == BOOL) else None

    def _count_affine(self, a: Any) -> tuple[Term, int, int] | None:
        """(mask, sign, offset) when a = sign * count(mask) + offset for a set with unary
        counts and a constant offset (NOTE(unary-counts)), else None."""
        if not isinstance(a, Term):
            return None
        if a.op == "popcount":
            return (a.args[0], 1, 0) if self._ones(a.args[0]) is not None else None
        if a.op not in ("add", "sub"):
            return None
        x, y = a.args
        for count, other, sign in ((x, y, 1), (y, x, -1 if a.op == "sub" else 1)):
            if isinstance(count, Term) and count.op == "popcount" and self._ones(count.args[0]) is not None:
                c = self._constant(other)
                if c is not None:
                    if sign == 1 and a.op == "sub":  # count - c
                        return count.args[0], 1, -c
                    return count.args[0], sign, c
        return None

    def _count_compare(self, op: str, a: Any, b: Any) -> Any:
        """A comparison of count(mask) with a constant, in unary (NOTE(unary-counts)), or None."""
        flip = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
        if isinstance(b, Term) and b.op == "popcount" and not (isinstance(a, Term) and a.op == "popcount"):
            a, b, op = b, a, flip[op]
        if not (isinstance(a, Term) and a.op == "popcount"):
            return None
        c = self._constant(b)
        ones = self._ones(a.args[0])
        if c is None or ones is None:
            return None
        n = len(ones) - 1
        if op == "eq":
            return self._exactly(ones, n, c)
        if op == "ne":
            return z3.Not(self._exactly(ones, n, c))
        at_least = {"ge": c, "gt": c + 1, "lt": c, "le": c + 1}[op]
        e = self._at_least(ones, n, at_least)
        return e if op in ("ge", "gt") else z3.Not(e)


def _narrow(f: Callable[..., Any]) -> Callable[[Translation, Term], Any]:
    """The row of an operation computed at its result's width, on operands sign-extended or
    truncated to it (NOTE(narrow-values): modulo 2^w, two's complement agrees with Python)."""

    def row(tr: Translation, t: Term) -> Any:
        w = tr._width(t)
        return f(*[tr._nbv(a, w) for a in t.args])

    return row


def _at_width(f: Callable[[Any, Any], Any]) -> Callable[[Translation, Term], Any]:
    """The row of an operation computed at W, then truncated to its result's width (division
    and shifts: where they fault, a zero divisor or a negative count, the value is a spec
    error and reaches no step, flag or property)."""

    def row(tr: Translation, t: Term) -> Any:
        w = tr._width(t)
        a, b = tr._nbv(t.args[0], tr.W), tr._nbv(t.args[1], tr.W)
        return tr._fit(f(a, b), w)

    return row


#: How z3 computes each operation of ownership.ir.ops.OPERATIONS, by its name (the numpy and C
#: emitters' tables: NOTE(emit-tables)). z3's `%` is bvsmod (the sign of the divisor, as
#: Python's %), `/` signed division, `>>` the arithmetic shift (as Python's).
FORMS: dict[str, Callable[[Translation, Term], Any]] = {
    **dict.fromkeys(COMPARISONS, Translation._comparison),
    **dict.fromkeys(("and", "or", "xor"), Translation._logic),
    "not": Translation._not,
    "ite": Translation._ite,
    "select": Translation._select,
    "neg": _narrow(operator.neg),
    "compl": _narrow(operator.invert),
    "add": _narrow(operator.add),
    "sub": _narrow(operator.sub),
    "mul": _narrow(operator.mul),
    "bitand": _narrow(operator.and_),
    "bitor": _narrow(operator.or_),
    "bitxor": _narrow(operator.xor),
    "div": _at_width(lambda a, b: (a - a % b) / b),  # floor: a - (a mod b) divides exactly
    "mod": _at_width(operator.mod),
    "shl": _at_width(operator.lshift),
    "shr": _at_width(operator.rshift),
    "popcount": Translation._popcount,
    "bit": Translation._page_of,
    "first": Translation._first,
    "nth": Translation._nth,
}
