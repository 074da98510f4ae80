"""The one table of the intermediate form's operations (issue 30, item 1).

Tracing a spec (ownership.ir.tracer) turns its actions and properties into graphs of
operations; the backends (numpy and C in ownership.interpret.batch and .native, z3 in
ownership.interpret.smt) compute them. This table says which operations exist, and for each:
its sorts, its meaning on Python's integers (the concrete interpreter's, which defines a spec:
the batch graph folds constants with it), and its interval rule, the one interval analysis
that serves z3's bit widths and the int64 check of numpy and C alike (NOTE(one-interval)).
tests/language/test_operations.py fails when a backend lacks an operation of the table, when a meaning
differs from the concrete interpreter's, or when an interval rule misses a value.

Intervals are of Python's integers, unbounded: (lo, hi) holds every value the operation can
take when each argument lies in its own interval. A boolean is the interval 0..1. Where an
operation is a spec error for some arguments (`//` by 0, a negative shift), the rule bounds the
values of the other arguments only: the error is its own event (ownership.lang.faults).

NOTE(one-interval): an interval is the exact Python one. The batch graph clamps it to int64
only after deciding whether the model fits int64 at all (NOTE(int64-exact)); z3 takes a
node's width from it (NOTE(narrow-values)). A rule here that is too narrow is unsound in every
backend at once, which is why the property test samples every rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..lang.values import PYTHON, bit_of

#: An interval of Python integers, both ends included.
Interval = tuple[int, int]

BOOL_INTERVAL: Interval = (0, 1)

#: The widest value an interval rule computes, in bits. A shift or a page(p) whose result could
#: be wider gets TOO_WIDE, an interval that no backend takes (z3 stops at 1,024 bits, numpy and C
#: at 64), instead of an exact one that would need a number of millions of bits to write down.
MAX_BITS = 4096
TOO_WIDE: Interval = (-(1 << MAX_BITS), 1 << MAX_BITS)


@dataclass(frozen=True)
class Operation:
    """One operation of the intermediate form: its name in the graphs, how many graph
    arguments it takes (None: two or more), how many trailing constants follow them (nth's
    default), its sorts in words, its meaning on Python values and its interval rule."""

    name: str
    arity: int | None
    sorts: str
    meaning: Callable[..., Any]
    interval: Callable[[Sequence[Interval], tuple[Any, ...]], Interval]
    constants: int = 0


def signed_bits(lo: int, hi: int) -> int:
    """The width of a two's complement bit-vector holding every integer in lo..hi."""

    def need(v: int) -> int:
        return (v.bit_length() if v >= 0 else (~v).bit_length()) + 1

    return max(need(lo), need(hi))


def span(bits: int) -> Interval:
    """Every integer of a signed bit-vector of `bits` bits."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def corners(f: Callable[[int, int], int], a: Interval, b: Interval) -> Interval:
    """The interval of f over two intervals, for an f monotone in each argument."""
    vals = [f(x, y) for x in a for y in b]
    return min(vals), max(vals)


def _boolean(_: Sequence[Interval], __: tuple[Any, ...]) -> Interval:
    return BOOL_INTERVAL


def _add(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return b[0][0] + b[1][0], b[0][1] + b[1][1]


def _sub(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return b[0][0] - b[1][1], b[0][1] - b[1][0]


def _mul(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return corners(lambda x, y: x * y, b[0], b[1])


def _neg(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return -b[0][1], -b[0][0]


def _div(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    big = max(abs(b[0][0]), abs(b[0][1]))  # |a // d| <= |a| for every d != 0
    return -big, big


def _mod(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    (dlo, dhi) = b[1]
    if dlo > 0:
        return 0, dhi - 1  # Python's % takes the divisor's sign
    if dhi < 0:
        return dlo + 1, 0
    big = max(abs(dlo), abs(dhi))
    return (-(big - 1), big - 1) if big else (0, 0)


def _shl(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    counts = (max(b[1][0], 0), max(b[1][1], 0))  # (a negative count is a spec error)
    if counts[1] > MAX_BITS and b[0] != (0, 0):
        return TOO_WIDE
    return corners(lambda x, y: x << y, b[0], counts)


def _shr(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    counts = (max(b[1][0], 0), min(max(b[1][1], 0), signed_bits(*b[0])))  # (past a's bits: 0 or -1 alike)
    return corners(lambda x, y: x >> y, b[0], counts)


def _bitand(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    a, c = b[0], b[1]
    if a[0] >= 0 and c[0] >= 0:
        return 0, min(a[1], c[1])
    if a[0] >= 0:
        return 0, a[1]
    if c[0] >= 0:
        return 0, c[1]
    return span(max(signed_bits(*a), signed_bits(*c)))


def _bitor(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    a, c = b[0], b[1]
    if a[0] >= 0 and c[0] >= 0:
        return 0, (1 << max(a[1].bit_length(), c[1].bit_length())) - 1
    return span(max(signed_bits(*a), signed_bits(*c)))


def _compl(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return ~b[0][1], ~b[0][0]


def _ite(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    return min(b[1][0], b[2][0]), max(b[1][1], b[2][1])


def _bit(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    lo, hi = b[0]
    if hi < 0:
        return 0, 0  # page(p) of no page is the empty set
    if hi > MAX_BITS:
        return TOO_WIDE
    return (0 if lo <= 0 else 1 << lo), 1 << hi


def _popcount(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    lo, hi = b[0]  # (Python counts the bits of |m|)
    return 0, max(max(hi, 0).bit_length(), (-lo).bit_length() if lo < 0 else 0)


def _first(b: Sequence[Interval], _: tuple[Any, ...]) -> Interval:
    m, n = b[0], b[1]
    if m[0] >= 0:
        return 0, max(m[1], 0)
    return 0, (1 << (signed_bits(*m) + max(n[1], 0))) - 1


def _nth(b: Sequence[Interval], extra: tuple[Any, ...]) -> Interval:
    m, j = b[0], b[1]
    default = int(extra[0])
    top = max(max(m[1], 0).bit_length() - 1, 0) if m[0] >= 0 else signed_bits(*m) + max(j[1], 0)
    return min(default, 0), max(default, top)


def _select(b: Sequence[Interval], extra: tuple[Any, ...]) -> Interval:
    """select's arguments: the values (as many as the array has), then the index; its one
    constant, the default."""
    default = int(extra[0])
    values = [*b[:-1], (default, default)]
    return min(v[0] for v in values), max(v[1] for v in values)


def _floordiv(a: int, d: int) -> int:
    return a // d


def _select_meaning(*args: Any) -> Any:
    *values, idx, default = args
    i = int(idx)
    return values[i] if 0 <= i < len(values) else default


#: Every operation of the intermediate form, by name (NOTE(one-interval) for the intervals).
OPERATIONS: dict[str, Operation] = {op.name: op for op in (
    Operation("eq", 2, "int, int -> bool (or bool, bool)", lambda a, b: int(a) == int(b), _boolean),
    Operation("ne", 2, "int, int -> bool (or bool, bool)", lambda a, b: int(a) != int(b), _boolean),
    Operation("lt", 2, "int, int -> bool", lambda a, b: int(a) < int(b), _boolean),
    Operation("le", 2, "int, int -> bool", lambda a, b: int(a) <= int(b), _boolean),
    Operation("gt", 2, "int, int -> bool", lambda a, b: int(a) > int(b), _boolean),
    Operation("ge", 2, "int, int -> bool", lambda a, b: int(a) >= int(b), _boolean),
    Operation("add", 2, "int, int -> int", lambda a, b: int(a) + int(b), _add),
    Operation("sub", 2, "int, int -> int", lambda a, b: int(a) - int(b), _sub),
    Operation("mul", 2, "int, int -> int", lambda a, b: int(a) * int(b), _mul),
    Operation("div", 2, "int, int -> int (floor; a spec error by 0)", lambda a, b: _floordiv(int(a), int(b)), _div),
    Operation("mod", 2, "int, int -> int (the divisor's sign; a spec error by 0)", lambda a, b: int(a) % int(b), _mod),
    Operation("neg", 1, "int -> int", lambda a: -int(a), _neg),
    Operation("shl", 2, "int, int -> int (a spec error for a negative count)", lambda a, b: int(a) << int(b), _shl),
    Operation("shr", 2, "int, int -> int (arithmetic; a spec error for a negative count)",
              lambda a, b: int(a) >> int(b), _shr),
    Operation("and", None, "bool, bool, ... -> bool", lambda *a: all(bool(x) for x in a), _boolean),
    Operation("or", None, "bool, bool, ... -> bool", lambda *a: any(bool(x) for x in a), _boolean),
    Operation("xor", 2, "bool, bool -> bool", lambda a, b: bool(a) != bool(b), _boolean),
    Operation("not", 1, "bool -> bool", lambda a: not a, _boolean),
    Operation("bitand", 2, "int or pages, int or pages -> int or pages", lambda a, b: int(a) & int(b), _bitand),
    Operation("bitor", 2, "int or pages, int or pages -> int or pages", lambda a, b: int(a) | int(b), _bitor),
    Operation("bitxor", 2, "int or pages, int or pages -> int or pages", lambda a, b: int(a) ^ int(b), _bitor),
    Operation("compl", 1, "pages -> pages (every page not in the set)", lambda a: ~int(a), _compl),
    Operation("ite", 3, "bool, T, T -> T", lambda c, a, b: a if c else b, _ite),
    Operation("bit", 1, "int -> pages (page(p): {p}, or empty for p < 0)", lambda p: bit_of(int(p)), _bit),
    Operation("popcount", 1, "pages -> int (count)", lambda m: PYTHON.popcount(m), _popcount),
    Operation("first", 2, "pages, int -> pages (the n lowest pages)", lambda m, n: int(PYTHON.first(m, n)), _first),
    Operation("nth", 2, "pages, int, default -> int (the j-th lowest page)",
              lambda m, j, d: PYTHON.nth(m, j, d), _nth, constants=1),
    Operation("select", None, "T, ..., int, default -> T (values[i], or the default)", _select_meaning, _select,
              constants=1),
)}


def interval(op: str, args: Sequence[Interval], extra: tuple[Any, ...] = ()) -> Interval:
    """The interval of op(args) from its arguments' intervals (NOTE(one-interval)); TOO_WIDE
    where it passes MAX_BITS bits (a chain of products doubles its bits at each step)."""
    lo, hi = OPERATIONS[op].interval(args, extra)
    if lo.bit_length() > MAX_BITS or hi.bit_length() > MAX_BITS:
        return TOO_WIDE
    return lo, hi


def meaning(op: str, values: Sequence[Any], extra: tuple[Any, ...] = ()) -> Any:
    """op(values) on Python values, as the concrete interpreter computes it; raises as it does
    (ZeroDivisionError, ValueError) where the operation is a spec error."""
    return OPERATIONS[op].meaning(*values, *extra)
