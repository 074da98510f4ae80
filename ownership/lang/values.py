"""The operations of the spec language on values: `If`, `Min`, `Max`, page-set helpers.

A value inside an action is whatever the running interpreter uses: a concrete number, a
symbolic term, later a numpy column. Each such value class names its interpreter's `Ops`
table in a class attribute `ops`; the functions here check the sorts of their arguments
(ownership.lang.sorts: the one table of what each operation accepts), find that table from
their arguments and call it, so one action function runs under every interpreter with one
meaning. Plain Python ints and bools (parameters, constants) use `PYTHON`, which computes
directly; a constant page set (`page(2)`, `page(0) | page(1)`) is a `PageSet`.

NOTE(no-python-control-flow): a value of an interpreter refuses `bool()`, `int()`,
`hash()` and indexing, raising a SpecError at the spec's own file and line: that is how a
Python `if`/`and`/`or`/`not`/`while` on state is caught (`spec_location` finds the line).
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from . import sorts
from .location import spec_location
from .sorts import BOOL, INT, PAGES


def control_flow_error(what: str) -> SpecError:
    """The error for Python control flow on a state value (see NOTE(no-python-control-flow))."""
    file, line = spec_location()
    return SpecError(
        f"{what} on a state value: an action is traced by several interpreters (concrete,"
        " symbolic), so it cannot branch in Python on the state. Write If(cond, a, b) instead of"
        " `if`/`a if c else b`, `&`, `|`, `~` instead of `and`, `or`, `not`, Min/Max instead of"
        " min/max, and s.require(cond) for a guard. Python control flow on parameters, fixes and"
        " action arguments is fine.",
        file=file,
        line=line,
    )


class RefusesControlFlow:
    """Base of every interpreter's value class: refuses bool(), indexing and hashing with a
    spec error at the spec's line (NOTE(no-python-control-flow)), and true division."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise control_flow_error("Python `if`, `and`, `or`, `not`, `while` or a conditional expression")

    def __index__(self) -> int:
        file, line = spec_location()
        raise SpecError("a state value used as a Python index or count (list[i], range(n)): its value is"
                        " not known when tracing. Write select(values, i) for values[i] with a state index,"
                        " and loop over a bound known when tracing (a parameter) with If(...) inside",
                        file=file, line=line)

    def __len__(self) -> int:
        raise _not_a_collection(self, "len()")

    def __iter__(self) -> Any:
        raise _not_a_collection(self, "iteration (for, list(), in)")

    def __getitem__(self, i: Any) -> Any:
        raise _not_a_collection(self, "indexing ([...])")

    def __hash__(self) -> int:
        raise control_flow_error("Using a state value as a dict key or set member")

    def __truediv__(self, o: Any) -> Any:
        raise _no_true_division()

    def __rtruediv__(self, o: Any) -> Any:
        raise _no_true_division()


def _not_a_collection(value: Any, what: str) -> SpecError:
    file, line = spec_location()
    if getattr(value, "sort", None) == PAGES:
        hint = ("a page set has no Python length or members: count(pages) is its number of pages,"
                " has(pages, p) tests page p, nth(pages, i) is its i-th lowest page, first(pages, n)"
                " the set of its n lowest, and `for p in range(pool_size)` with has(pages, p)"
                " visits its pages")
    else:
        hint = "a state value is one number or condition, not a collection"
    return SpecError(f"{what} on a state value: {hint}", file=file, line=line)


def _no_true_division() -> SpecError:
    file, line = spec_location()
    return SpecError("`/` is not an operation of the spec language (values are integers): write"
                     " `//` for floor division", file=file, line=line)


class PageSet(int):
    """A page set known when tracing (`page(2)`, `page(0) | page(1)`): a bitmask of page numbers.

    It is an int for the interpreters (which read constants as numbers), with the sort of a
    page set, so that `s.free(pool, r, page(2))` is accepted and `s.free(pool, r, 4)` is not."""

    sort = PAGES

    def __repr__(self) -> str:
        pages = [p for p in range(int(self).bit_length()) if int(self) >> p & 1]
        return "page set {" + ", ".join(map(str, pages)) + "}"

    def _set_op(self, op: str, o: Any, f: Any) -> Any:
        if getattr(type(o), "ops", None) is not None:
            return NotImplemented  # a value of an interpreter handles it (its reflected method)
        sorts.binary(op, self, o)
        return PageSet(f(int(self), int(o)))

    def __and__(self, o: Any) -> Any: return self._set_op("and", o, int.__and__)
    def __rand__(self, o: Any) -> Any: return self._set_op("and", o, int.__and__)
    def __or__(self, o: Any) -> Any: return self._set_op("or", o, int.__or__)
    def __ror__(self, o: Any) -> Any: return self._set_op("or", o, int.__or__)
    def __xor__(self, o: Any) -> Any: return self._set_op("xor", o, int.__xor__)
    def __rxor__(self, o: Any) -> Any: return self._set_op("xor", o, int.__xor__)

    def __getitem__(self, i: Any) -> Any:
        raise _not_a_collection(self, "indexing ([...])")

    def _refuse(self, op: str, o: Any = None) -> Any:
        if o is not None and getattr(type(o), "ops", None) is not None:
            return NotImplemented
        raise sorts.refused(op, PAGES, None if o is None else sorts.sort_of(o))

    def __add__(self, o: Any) -> Any: return self._refuse("add", o)
    def __radd__(self, o: Any) -> Any: return self._refuse("add", o)
    def __sub__(self, o: Any) -> Any: return self._refuse("sub", o)
    def __rsub__(self, o: Any) -> Any: return self._refuse("sub", o)
    def __mul__(self, o: Any) -> Any: return self._refuse("mul", o)
    def __rmul__(self, o: Any) -> Any: return self._refuse("mul", o)
    def __floordiv__(self, o: Any) -> Any: return self._refuse("div", o)
    def __mod__(self, o: Any) -> Any: return self._refuse("mod", o)
    def __lshift__(self, o: Any) -> Any: return self._refuse("shl", o)
    def __rshift__(self, o: Any) -> Any: return self._refuse("shr", o)
    def __lt__(self, o: Any) -> Any: return self._refuse("lt", o)
    def __le__(self, o: Any) -> Any: return self._refuse("le", o)
    def __gt__(self, o: Any) -> Any: return self._refuse("gt", o)
    def __ge__(self, o: Any) -> Any: return self._refuse("ge", o)
    def __neg__(self) -> Any: return self._refuse("neg")
    def __invert__(self) -> Any: return self._refuse("not")

    def __eq__(self, o: Any) -> Any:
        if getattr(type(o), "ops", None) is not None:
            return NotImplemented
        sorts.binary("eq", self, o)
        return int(self) == int(o)

    def __ne__(self, o: Any) -> Any:
        if getattr(type(o), "ops", None) is not None:
            return NotImplemented
        sorts.binary("ne", self, o)
        return int(self) != int(o)

    __hash__ = int.__hash__


class Ops:
    """The primitive operations an interpreter provides beyond Python's operators. Arguments
    are already sort-checked by the language functions below; `sort` is the result's sort."""

    def If(self, c: Any, a: Any, b: Any, sort: str) -> Any: raise NotImplementedError
    def popcount(self, m: Any) -> Any: raise NotImplementedError
    def first(self, m: Any, n: Any) -> Any: raise NotImplementedError
    def nth(self, m: Any, j: Any, default: int) -> Any: raise NotImplementedError
    def bit(self, p: Any) -> Any: raise NotImplementedError
    def select(self, values: list[Any], idx: Any, default: Any, sort: str) -> Any: raise NotImplementedError
    def complement(self, m: Any) -> Any: raise NotImplementedError


def _low_bits(m: int, n: int) -> int:
    out = 0
    while m and n > 0:
        low = m & -m
        out |= low
        m ^= low
        n -= 1
    return out


def _nth_bit(m: int, j: int, default: int) -> int:
    if j < 0:
        return default
    while m:
        low = m & -m
        if j == 0:
            return low.bit_length() - 1
        m ^= low
        j -= 1
    return default


def bit_of(p: int) -> int:
    """The bitmask of page(p) for a page number: {p} when p >= 0, empty when p < 0 ("no page")."""
    return 1 << p if p >= 0 else 0


class PythonOps(Ops):
    """Operations on plain Python ints and bools (parameters and constants)."""

    def If(self, c: Any, a: Any, b: Any, sort: str) -> Any:
        return a if c else b

    def popcount(self, m: Any) -> Any:
        return int(m).bit_count()

    def first(self, m: Any, n: Any) -> Any:
        return PageSet(_low_bits(int(m), int(n)))

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return _nth_bit(int(m), int(j), default)

    def bit(self, p: Any) -> Any:
        return PageSet(bit_of(int(p)))

    def select(self, values: list[Any], idx: Any, default: Any, sort: str) -> Any:
        i = int(idx)
        return values[i] if 0 <= i < len(values) else default

    def complement(self, m: Any) -> Any:
        return PageSet(~int(m))


PYTHON = PythonOps()


def ops_of(*xs: Any) -> Ops:
    """The interpreter of the first argument that belongs to one; PYTHON for constants."""
    for x in xs:
        o = getattr(type(x), "ops", None)
        if o is not None:
            return o
    return PYTHON


def If(c: Any, a: Any, b: Any) -> Any:
    """`a` where the condition `c` holds, else `b` (both are evaluated: no side effects)."""
    sort = sorts.ite(c, a, b)
    if type(c) is bool:
        return a if c else b
    return ops_of(c, a, b).If(c, a, b, sort)


def Min(a: Any, b: Any) -> Any:
    """The smaller of two integers."""
    return If(a <= b, a, b)


def Max(a: Any, b: Any) -> Any:
    """The larger of two integers."""
    return If(a >= b, a, b)


def all_of(*conds: Any) -> Any:
    """The conjunction of conditions (Python's `all` would branch on state)."""
    out: Any = True
    for c in conds:
        sorts.condition(c, "all_of(...)")
        out = c if out is True else out & c
    return out


def any_of(*conds: Any) -> Any:
    """The disjunction of conditions (Python's `any` would branch on state)."""
    out: Any = False
    for c in conds:
        sorts.condition(c, "any_of(...)")
        out = c if out is False else out | c
    return out


# -- page sets (bitmasks over a pool's pages) --------------------------------------------


def page(p: Any) -> Any:
    """The page set holding just page p (empty when p < 0: "no page")."""
    sorts.expect(p, INT, "page(p)")
    return ops_of(p).bit(p)


def has(pages: Any, p: Any) -> Any:
    """Condition: page p is in the set."""
    sorts.expect(pages, PAGES, "has(pages, p)")
    return (pages & page(p)) != 0


def count(pages: Any) -> Any:
    """The number of pages in a set."""
    sorts.expect(pages, PAGES, "count(pages)")
    return ops_of(pages).popcount(pages)


def first(pages: Any, n: Any) -> Any:
    """The n lowest-numbered pages of a set (all of them if it has fewer; none if n <= 0)."""
    sorts.expect(pages, PAGES, "first(pages, n)")
    sorts.expect(n, INT, "first(pages, n)")
    return ops_of(pages, n).first(pages, n)


def without(a: Any, b: Any) -> Any:
    """The pages of a that are not in b."""
    sorts.expect(a, PAGES, "without(a, b)")
    sorts.expect(b, PAGES, "without(a, b)")
    # `~` on a value of the spec language is logical negation of a condition; a bitmask
    # complement is an operation of its own so that conditions and page sets never mix.
    return a & ops_of(b).complement(b)


def nth(pages: Any, j: Any, default: int = -1) -> Any:
    """The j-th lowest page of a set (counting from 0), or `default` if it has no such page."""
    sorts.expect(pages, PAGES, "nth(pages, j)")
    sorts.expect(j, INT, "nth(pages, j)")
    if type(default) is not int:
        file, line = spec_location()
        raise SpecError(f"nth(pages, j, default): the default must be an int known when tracing, got {default!r}",
                        file=file, line=line)
    return ops_of(pages, j).nth(pages, j, default)


def select(values: list[Any], idx: Any, default: Any = 0) -> Any:
    """values[idx] where idx may be a state value; `default` when idx is out of range."""
    sorts.expect(idx, INT, "select(values, idx)")
    sort = values_sort(values, default, "select(values, idx, default)")
    # ops_of(idx, *values) would copy the whole list on every call: O(pages) per select, and
    # O(pages^2) for the kernel's free-list shifts. Find the interpreter without copying.
    ops = getattr(type(idx), "ops", None)
    if ops is None:
        ops = next((o for x in values if (o := getattr(type(x), "ops", None)) is not None), PYTHON)
    return ops.select(values, idx, default, sort)


def values_sort(values: list[Any], default: Any, where: str) -> str:
    """The one sort of a list of values and a default (a literal 0 joins any sort), or a SpecError."""
    kinds = set(map(type, values))  # (a list of one interpreter's values: no Python step per value)
    if int not in kinds and all(k in sorts.TYPE_SORT for k in kinds):
        found = {sorts.TYPE_SORT[k] for k in kinds}
        if not sorts.is_empty_literal(default):
            found.add(sorts.sort_of(default))
    else:
        found = {sorts.sort_of(v) for v in (*values, default) if not sorts.is_empty_literal(v)}
    if len(found) > 1:
        file, line = spec_location()
        raise SpecError(f"{where}: the values and the default must be of one sort, got "
                        + " and ".join(sorted(found)), file=file, line=line)
    return found.pop() if found else INT


__all__ = [
    "BOOL", "INT", "PAGES", "PYTHON", "If", "Max", "Min", "Ops", "PageSet", "RefusesControlFlow",
    "all_of", "any_of", "bit_of", "control_flow_error", "count", "first", "has", "nth", "ops_of",
    "page", "select", "spec_location", "values_sort", "without",
]
