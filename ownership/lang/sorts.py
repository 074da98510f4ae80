"""The sorts of the spec language and the one table of what each operator accepts.

Every value an action or a property sees has one of three sorts: a condition (`bool`), an
integer (`int`), or a set of pages (`pages`, a bitmask over a pool's page numbers). The sort
of a value follows from how it was made, never from the state, so the concrete interpreter
and the symbolic tracer compute the same sorts and refuse the same operations here, at the
spec's file and line, before any engine runs (docs/spec-language.md, "Values and operators").

Python constants take part as: `True`/`False` conditions, ints (parameters, enum members,
literals) integers, and the literal `0` also as the empty page set where a page set is
expected. A Python operator on two Python constants is computed by Python before ownership
sees it (`~True` is -2): its result is an int, so it is refused where a condition is needed.
"""

from __future__ import annotations

import enum
from typing import Any

from ..errors import SpecError
from .location import spec_location

BOOL, INT, PAGES = "bool", "int", "pages"

_NAMES = {BOOL: "a condition", INT: "an integer", PAGES: "a page set"}

#: Operators on two values: the sorts they accept and the sort of the result.
#: `+`, `-`, `*` count a condition as 0 or 1 (e.g. adding up conditions); every other
#: mixing of sorts is refused.
BINARY: dict[str, dict[tuple[str, str], str]] = {
    "eq": {(BOOL, BOOL): BOOL, (INT, INT): BOOL, (PAGES, PAGES): BOOL},
    "lt": {(INT, INT): BOOL},
    "add": {(INT, INT): INT, (BOOL, INT): INT, (INT, BOOL): INT, (BOOL, BOOL): INT},
    "div": {(INT, INT): INT},
    "shl": {(INT, INT): INT},
    "and": {(BOOL, BOOL): BOOL, (INT, INT): INT, (PAGES, PAGES): PAGES},
}
for _op, _like in (("ne", "eq"), ("le", "lt"), ("gt", "lt"), ("ge", "lt"), ("sub", "add"),
                   ("mul", "add"), ("mod", "div"), ("shr", "shl"), ("or", "and"), ("xor", "and")):
    BINARY[_op] = BINARY[_like]

SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "add": "+",
          "sub": "-", "mul": "*", "div": "//", "mod": "%", "shl": "<<", "shr": ">>", "and": "&",
          "or": "|", "xor": "^", "not": "~", "neg": "-"}

_HINT = {
    (BOOL, "arith"): "count a condition with If(c, 1, 0)",
    (PAGES, "arith"): "count(pages) is the number of pages; | is the union, without(a, b) the difference",
    (PAGES, "order"): "compare count(a) with count(b), or test membership with has(pages, p)",
    (BOOL, "order"): "compare conditions with == or combine them with & and |",
    "mixed-bits": "& | ^ combine two conditions, two integers or two page sets; for a page p of a set write has(pages, p), for the set of one page page(p)",
    "mixed-eq": "compare a condition with True/False, a number with a number, a page set with a page set or 0",
}


#: The sort of each value class whose instances all have one (filled as classes are met):
#: the hot path of every operator of the concrete interpreter starts here.
TYPE_SORT: dict[type, str] = {bool: BOOL, int: INT}


def sort_of(x: Any) -> str:
    """The sort of a value of any interpreter, or of a Python constant."""
    t = type(x)
    got = TYPE_SORT.get(t)
    if got is not None:
        return got
    s = getattr(t, "sort", None)
    if isinstance(s, str):
        TYPE_SORT[t] = s
        return s
    s = getattr(x, "sort", None)
    if isinstance(s, str):
        return s
    if isinstance(x, int):  # an IntEnum member
        TYPE_SORT[t] = INT
        return INT
    file, line = spec_location()
    raise SpecError(
        f"{x!r} (a Python {type(x).__name__}) is not a value of the spec language: values are"
        " conditions (True/False, comparisons), integers and page sets. Use If(c, a, b) for a"
        " choice, and ints(...) or an IntEnum for a slot's values",
        file=file, line=line,
    )


def is_empty_literal(x: Any) -> bool:
    """The Python literal 0 (not False), which also stands for the empty page set."""
    return type(x) is int and x == 0


def _operand_sorts(a: Any, b: Any) -> tuple[str, str]:
    sa, sb = sort_of(a), sort_of(b)
    if sa == PAGES and sb == INT and is_empty_literal(b):
        sb = PAGES
    elif sb == PAGES and sa == INT and is_empty_literal(a):
        sa = PAGES
    return sa, sb


def binary(op: str, a: Any, b: Any) -> str:
    """The sort of `a op b`, or a SpecError at the spec's line saying what to write instead."""
    got = BINARY[op].get((TYPE_SORT.get(type(a)), TYPE_SORT.get(type(b))))  # type: ignore[arg-type]
    if got is not None:
        return got
    sa, sb = _operand_sorts(a, b)
    got = BINARY[op].get((sa, sb))
    if got is not None:
        return got
    inverted = [x for x in (a, b) if type(x) is int and x in (-1, -2)]
    if op in ("and", "or", "xor") and BOOL in (sa, sb) and inverted:
        file, line = spec_location()
        raise SpecError(f"`{SYMBOL[op]}` on a condition and the integer {inverted[0]}: that integer is what Python's ~"
                        f" makes of a Python bool (~{inverted[0] == -2}), computed before ownership sees it; on a"
                        " parameter or a fix write `not x` (on a state condition ~ is logical)", file=file, line=line)
    raise refused(op, sa, sb)


def refused(op: str, sa: str, sb: str | None = None) -> SpecError:
    """The error for an operator applied to sorts it does not accept."""
    sym = SYMBOL.get(op, op)
    what = f"{_NAMES[sa]}" if sb is None else f"{_NAMES[sa]} and {_NAMES[sb]}"
    if op in ("add", "sub", "mul", "div", "mod", "shl", "shr", "neg"):
        odd = sa if sa != INT else (sb or INT)
        hint = _HINT.get((odd, "arith"), "arithmetic takes integers")
    elif op in ("lt", "le", "gt", "ge"):
        odd = sa if sa != INT else (sb or INT)
        hint = _HINT.get((odd, "order"), "ordering compares integers")
    elif op in ("eq", "ne"):
        hint = _HINT["mixed-eq"]
    elif op == "not":
        hint = ("~ negates a condition; for the pages of a not in b write without(a, b); for a"
                " number compare it (x == 0); on a parameter or a fix (a Python value) write `not`")
    else:
        hint = _HINT["mixed-bits"]
    file, line = spec_location()
    return SpecError(f"`{sym}` on {what} is not an operation of the spec language: {hint}",
                     file=file, line=line)


def condition(c: Any, where: str) -> None:
    """Refuse anything but a condition (a state condition or True/False) in a condition's place."""
    if (TYPE_SORT.get(type(c)) or sort_of(c)) is BOOL:
        return
    file, line = spec_location()
    extra = ""
    if type(c) is int and c in (-1, -2):
        extra = (" (Python's ~ of a Python bool is an integer: ~True == -2; on a parameter or a fix"
                 " write `not x`, on a state condition ~ is logical)")
    raise SpecError(f"{where}: expected a condition, got {_NAMES[sort_of(c)]} ({_show(c)}){extra}."
                    " A condition is a comparison, a bool slot, has(...), or &, |, ~ of conditions",
                    file=file, line=line)


def ite(c: Any, a: Any, b: Any) -> str:
    """The sort of If(c, a, b); c must be a condition, a and b of one sort (0 joins page sets)."""
    condition(c, "If(c, a, b)")
    sa = TYPE_SORT.get(type(a))
    if sa is not None and sa is TYPE_SORT.get(type(b)):
        return sa
    sa, sb = _operand_sorts(a, b)
    if sa == sb:
        return sa
    file, line = spec_location()
    raise SpecError(f"If(c, a, b) chooses between {_NAMES[sa]} and {_NAMES[sb]}: both branches must"
                    " be of one sort (0 also stands for the empty page set)", file=file, line=line)


def expect(x: Any, sort: str, where: str) -> None:
    """Refuse a value of another sort where `sort` is expected (0 is accepted as a page set)."""
    got = TYPE_SORT.get(type(x)) or sort_of(x)
    if got == sort or (sort == PAGES and is_empty_literal(x)):
        return
    if sort == BOOL:
        condition(x, where)
    file, line = spec_location()
    hint = ""
    if sort == PAGES and got == INT:
        hint = (" An integer is not a page set: write page(p) for the set holding page p, 0 for"
                " the empty set, and a | b for a union")
    elif sort == INT and got == PAGES:
        hint = " For the number of pages in a set write count(pages)"
    elif sort == INT and got == BOOL:
        hint = " Write If(c, 1, 0) for a condition counted as a number"
    raise SpecError(f"{where}: expected {_NAMES[sort]}, got {_NAMES[got]} ({_show(x)}).{hint}",
                    file=file, line=line)


def _show(x: Any) -> str:
    if isinstance(x, enum.Enum):
        return f"{type(x).__name__}.{x.name}"
    if isinstance(x, (bool, int)):
        return repr(x)
    return "a state value"


__all__ = ["BOOL", "INT", "PAGES", "binary", "condition", "expect", "is_empty_literal", "ite",
           "refused", "sort_of"]
