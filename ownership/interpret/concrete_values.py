"""The concrete interpreter's values: small wrappers of Python integers (CInt, CBool, CPages)
and the spec language's operations on them (ConcreteOps).

Wrappers rather than bare ints, so that `~` is the logical negation of a condition and Python
control flow on state is refused in the concrete interpreter too (NOTE(no-python-control-flow)
in ownership.lang.values); each operator follows the one table of sorts (ownership.lang.sorts),
and a division by zero or an out-of-range shift is a spec error at the spec's line, as in every
interpreter. The interpreter itself is ownership.interpret.concrete.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..lang import faults, sorts
from ..lang.location import spec_location
from ..lang.sorts import BINARY, BOOL, INT, PAGES, TYPE_SORT
from ..lang.values import PYTHON, Ops, RefusesControlFlow, bit_of


def _v(x: Any) -> int:
    """The integer of a concrete value or Python constant."""
    t = type(x)
    if t is CInt or t is CBool or t is CPages:
        return x.v
    return int(x)


def _make(sort: str, v: int) -> Any:
    """A concrete value of a sort."""
    if sort is BOOL:
        return TRUE if v else FALSE
    if sort is PAGES:
        return CPages(v)
    return CInt(v)


def _fault(message: str) -> SpecError:
    file, line = spec_location()
    return SpecError(message, file=file, line=line)


class CVal(RefusesControlFlow):
    """A concrete value: its integer `v` and, from its class, its sort (ownership.lang.sorts).

    Every operator checks the sorts with the one table in ownership.lang.sorts, as the
    symbolic tracer's Term does, so both accept and refuse exactly the same operations."""

    __slots__ = ("v",)
    ops: Ops
    sort: str

    def __init__(self, v: int) -> None:
        self.v = v

    # Defining __eq__ below would otherwise set __hash__ to None (a plain TypeError).
    __hash__ = RefusesControlFlow.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.v})"

    def _op(self, op: str, o: Any, f: Any) -> Any:
        # the hot path of the per-state engine: the sort table looked up inline
        so = TYPE_SORT.get(type(o))
        got = BINARY[op].get((self.sort, so)) if so is not None else None
        if got is None:
            got = sorts.binary(op, self, o)
        v = f(self.v, o.v if isinstance(o, CVal) else int(o))
        if got is BOOL:
            return TRUE if v else FALSE
        return CInt(v) if got is INT else CPages(v)

    def _rop(self, op: str, o: Any, f: Any) -> Any:
        so = TYPE_SORT.get(type(o))
        got = BINARY[op].get((so, self.sort)) if so is not None else None
        if got is None:
            got = sorts.binary(op, o, self)
        v = f(int(o), self.v)
        if got is BOOL:
            return TRUE if v else FALSE
        return CInt(v) if got is INT else CPages(v)

    def __eq__(self, o: Any) -> Any: return self._op("eq", o, int.__eq__)  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return self._op("ne", o, int.__ne__)  # type: ignore[override]
    def __lt__(self, o: Any) -> Any: return self._op("lt", o, int.__lt__)
    def __le__(self, o: Any) -> Any: return self._op("le", o, int.__le__)
    def __gt__(self, o: Any) -> Any: return self._op("gt", o, int.__gt__)
    def __ge__(self, o: Any) -> Any: return self._op("ge", o, int.__ge__)

    def __add__(self, o: Any) -> Any: return self._op("add", o, int.__add__)
    def __radd__(self, o: Any) -> Any: return self._rop("add", o, int.__add__)
    def __sub__(self, o: Any) -> Any: return self._op("sub", o, int.__sub__)
    def __rsub__(self, o: Any) -> Any: return self._rop("sub", o, int.__sub__)
    def __mul__(self, o: Any) -> Any: return self._op("mul", o, int.__mul__)
    def __rmul__(self, o: Any) -> Any: return self._rop("mul", o, int.__mul__)
    def __floordiv__(self, o: Any) -> Any: return self._op("div", o, _floordiv)
    def __rfloordiv__(self, o: Any) -> Any: return self._rop("div", o, _floordiv)
    def __mod__(self, o: Any) -> Any: return self._op("mod", o, _mod)
    def __rmod__(self, o: Any) -> Any: return self._rop("mod", o, _mod)
    def __lshift__(self, o: Any) -> Any: return self._op("shl", o, _shl)
    def __rlshift__(self, o: Any) -> Any: return self._rop("shl", o, _shl)
    def __rshift__(self, o: Any) -> Any: return self._op("shr", o, _shr)
    def __rrshift__(self, o: Any) -> Any: return self._rop("shr", o, _shr)

    def __and__(self, o: Any) -> Any: return self._op("and", o, int.__and__)
    def __rand__(self, o: Any) -> Any: return self._rop("and", o, int.__and__)
    def __or__(self, o: Any) -> Any: return self._op("or", o, int.__or__)
    def __ror__(self, o: Any) -> Any: return self._rop("or", o, int.__or__)
    def __xor__(self, o: Any) -> Any: return self._op("xor", o, int.__xor__)
    def __rxor__(self, o: Any) -> Any: return self._rop("xor", o, int.__xor__)

    def __neg__(self) -> Any:
        if self.sort is not INT:
            raise sorts.refused("neg", self.sort)
        return CInt(-self.v)

    def __invert__(self) -> Any:
        if self.sort is not BOOL:
            raise sorts.refused("not", self.sort)
        return FALSE if self.v else TRUE


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise _fault(faults.division_message("//"))
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise _fault(faults.division_message("%"))
    return a % b


def _shl(a: int, b: int) -> int:
    if b < 0:
        raise _fault(faults.shift_message(b))
    return a << b


def _shr(a: int, b: int) -> int:
    if b < 0:
        raise _fault(faults.shift_message(b))
    return a >> b


class CInt(CVal):
    """A concrete integer."""

    __slots__ = ()
    sort = INT


class CBool(CVal):
    """A concrete condition (0 or 1). `&`, `|`, `^`, `~` are logical."""

    __slots__ = ()
    sort = BOOL


class CPages(CVal):
    """A concrete page set: a bitmask of page numbers. `&` `|` `^` are intersection, union and
    symmetric difference; `==` and `!=` compare sets (0 is the empty set)."""

    __slots__ = ()
    sort = PAGES


TRUE = CBool(1)
FALSE = CBool(0)


class ConcreteOps(Ops):
    """The spec language's operations on concrete values."""

    def If(self, c: Any, a: Any, b: Any, sort: str) -> Any:
        # a value of the language even when the branch chosen is a Python constant: the
        # tracer's ite is one too, so that ~(If(c, 1, 2) == 2) is logical in both
        return _make(sort, _v(a if _v(c) else b))

    def popcount(self, m: Any) -> Any:
        return CInt(_v(m).bit_count())

    def first(self, m: Any, n: Any) -> Any:
        return CPages(_v(PYTHON.first(_v(m), _v(n))))

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return CInt(PYTHON.nth(_v(m), _v(j), default))

    def bit(self, p: Any) -> Any:
        return CPages(bit_of(_v(p)))

    def select(self, values: list[Any], idx: Any, default: Any, sort: str) -> Any:
        i = _v(idx)
        return _make(sort, _v(values[i] if 0 <= i < len(values) else default))

    def complement(self, m: Any) -> Any:
        return CPages(~_v(m))


CONCRETE = ConcreteOps()
CVal.ops = CONCRETE


__all__ = ["CONCRETE", "FALSE", "TRUE", "CBool", "CInt", "CPages", "CVal", "ConcreteOps"]
