"""The operations of the spec language on values: `If`, `Min`, `Max`, page-set helpers.

A value inside an action is whatever the running interpreter uses: a concrete number, a
symbolic term, later a numpy column. Each such value class names its interpreter's `Ops`
table in a class attribute `ops`; the functions here find that table from their arguments
and call it, so one action function runs under every interpreter. Plain Python ints and
bools (parameters, constants) use `PYTHON`, which computes directly.

NOTE(no-python-control-flow): a value of an interpreter refuses `bool()`, `int()`,
`hash()` and indexing, raising a SpecError at the spec's own file and line: that is how a
Python `if`/`and`/`or`/`not`/`while` on state is caught (`spec_location` finds the line).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import SpecError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SPECS_DIR = os.path.join(_PACKAGE_DIR, "specs")


def spec_location() -> tuple[str | None, int | None]:
    """The innermost stack frame that belongs to a spec (not to ownership's own code)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR + os.sep) or path.startswith(_SPECS_DIR + os.sep):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None, None


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
    spec error at the spec's line (NOTE(no-python-control-flow))."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise control_flow_error("Python `if`, `and`, `or`, `not`, `while` or a conditional expression")

    def __index__(self) -> int:
        raise control_flow_error("Using a state value as a Python index or count (range, list[...])")

    def __hash__(self) -> int:
        raise control_flow_error("Using a state value as a dict key or set member")


class Ops:
    """The primitive operations an interpreter provides beyond Python's operators."""

    def If(self, c: Any, a: Any, b: Any) -> Any: raise NotImplementedError
    def popcount(self, m: Any) -> Any: raise NotImplementedError
    def first(self, m: Any, n: Any) -> Any: raise NotImplementedError
    def nth(self, m: Any, j: Any, default: int) -> Any: raise NotImplementedError
    def bit(self, p: Any) -> Any: raise NotImplementedError
    def select(self, values: list[Any], idx: Any, default: int) -> Any: raise NotImplementedError
    def complement(self, m: Any) -> Any: raise NotImplementedError
    def truth(self, c: Any) -> bool | None:
        """A Python bool when the condition is known, else None (symbolic)."""
        raise NotImplementedError


class PythonOps(Ops):
    """Operations on plain Python ints and bools (parameters and constants)."""

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def popcount(self, m: Any) -> Any:
        return int(m).bit_count()

    def first(self, m: Any, n: Any) -> Any:
        out, m, n = 0, int(m), int(n)
        while m and n > 0:
            low = m & -m
            out |= low
            m ^= low
            n -= 1
        return out

    def nth(self, m: Any, j: Any, default: int) -> Any:
        m, j = int(m), int(j)
        if j < 0:
            return default
        while m:
            low = m & -m
            if j == 0:
                return low.bit_length() - 1
            m ^= low
            j -= 1
        return default

    def bit(self, p: Any) -> Any:
        # page(p) of a page number out of range (e.g. "no block": -1) is the empty set
        p = int(p)
        return 1 << p if 0 <= p < 64 else 0

    def select(self, values: list[Any], idx: Any, default: int) -> Any:
        i = int(idx)
        return values[i] if 0 <= i < len(values) else default

    def complement(self, m: Any) -> Any:
        return ~int(m)

    def truth(self, c: Any) -> bool | None:
        return bool(c)


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
    if isinstance(c, (bool, int)) and getattr(type(c), "ops", None) is None:
        return a if c else b
    return ops_of(c, a, b).If(c, a, b)


def Min(a: Any, b: Any) -> Any:
    """The smaller of two values."""
    return If(a <= b, a, b)


def Max(a: Any, b: Any) -> Any:
    """The larger of two values."""
    return If(a >= b, a, b)


def all_of(*conds: Any) -> Any:
    """The conjunction of conditions (Python's `all` would branch on state)."""
    out: Any = True
    for c in conds:
        out = c if out is True else out & c
    return out


def any_of(*conds: Any) -> Any:
    """The disjunction of conditions (Python's `any` would branch on state)."""
    out: Any = False
    for c in conds:
        out = c if out is False else out | c
    return out


# -- page sets (bitmasks over a pool's pages) --------------------------------------------


def page(p: Any) -> Any:
    """The page set holding just page p (empty when p is not a page number 0..63)."""
    return ops_of(p).bit(p)


def has(pages: Any, p: int) -> Any:
    """Condition: page p (a page number known when tracing) is in the set."""
    return (pages & (1 << p)) != 0


def count(pages: Any) -> Any:
    """The number of pages in a set."""
    return ops_of(pages).popcount(pages)


def first(pages: Any, n: Any) -> Any:
    """The n lowest-numbered pages of a set (all of them if it has fewer)."""
    return ops_of(pages, n).first(pages, n)


def without(a: Any, b: Any) -> Any:
    """The pages of a that are not in b."""
    # `~` on a value of the spec language is logical negation of a condition; a bitmask
    # complement is an operation of its own so that conditions and page sets never mix.
    return a & ops_of(b).complement(b)


def nth(pages: Any, j: Any, default: int = -1) -> Any:
    """The j-th lowest page of a set (counting from 0), or `default` if it has no such page."""
    return ops_of(pages, j).nth(pages, j, default)


def select(values: list[Any], idx: Any, default: int = 0) -> Any:
    """values[idx] where idx may be a state value; `default` when idx is out of range."""
    # ops_of(idx, *values) would copy the whole list on every call: O(pages) per select, and
    # O(pages^2) for the kernel's free-list shifts. Find the interpreter without copying.
    ops = getattr(type(idx), "ops", None)
    if ops is None:
        ops = next((o for x in values if (o := getattr(type(x), "ops", None)) is not None), PYTHON)
    return ops.select(values, idx, default)
