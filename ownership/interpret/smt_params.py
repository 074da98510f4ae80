"""Symbolic parameters of the z3 encoding (`--symbolic prefill_pool=1..8`): parsing them,
refusing one that sizes the state, and tracing the model with each one as a Term variable.

`trace_parametric` traces a fresh copy of the model with a parameter attribute replaced by a
Term variable (index >= model.width), after checking that the parameter sizes no pool, domain,
initial value or action argument (`check_layout`). ownership.interpret.smt encodes that trace;
this module does not load z3.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, UsageError, shorten
from ..ir.tracer import INT, Term, TracedModel, trace_model
from ..lang.model import Model
from ..lang.spec import Spec, did_you_mean

#: A parameter range this large or smaller is checked value by value for layout changes.
LAYOUT_CHECK_ALL = 256

#: The range of a symbolic parameter given without one (`--symbolic prefill_pool`).
DEFAULT_HIGH = 1024


@dataclass(frozen=True)
class SymbolicParam:
    """An integer parameter left unknown within lo..hi (`--symbolic prefill_pool=1..8`)."""

    name: str
    lo: int
    hi: int

    def show(self) -> str:
        return f"{self.name}={self.lo}..{self.hi}"


_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


def parse_symbolic(texts: Iterable[str], spec_cls: type[Spec], env: dict[str, int]) -> list[SymbolicParam]:
    """`NAME` or `NAME=LO..HI` options to SymbolicParams, checked against the spec's parameters.

    Without a range a parameter ranges from its declared minimum to DEFAULT_HIGH."""
    out: list[SymbolicParam] = []
    for text in texts:
        name, sep, rng = text.partition("=")
        name = name.strip()
        if name not in spec_cls._params:
            raise UsageError(
                f"--symbolic {text!r}: spec {spec_cls.__name__} has no parameter {name!r}."
                + did_you_mean(name, spec_cls._params) + f" Parameters: {', '.join(spec_cls._params)}."
            )
        p = spec_cls._params[name]
        derived = [n for n, q in spec_cls._params.items() if q.derived is not None and name in q.derived.names()]
        if derived:
            raise UsageError(f"--symbolic {name}: parameter {derived[0]} is derived from it"
                             f" ({derived[0]} = {spec_cls._params[derived[0]].derived!r}), and a derived parameter"
                             f" is a number known when the spec is built; give {derived[0]} a value with --param"
                             f" {derived[0]}=N, or leave {name} concrete")
        if sep:
            m = _RANGE.match(rng.replace("_", ""))
            if m is None:
                raise UsageError(f"--symbolic {shorten(repr(text), 60)}: expected NAME=LO..HI, e.g. --symbolic {name}=1..8")
            if max(len(m.group(1).lstrip("-0")), len(m.group(2).lstrip("-0"))) > 18:
                # (int() refuses more than 4,300 digits: an internal error, issue 29)
                raise UsageError(f"--symbolic {shorten(text, 60)}: a bound has at most 18 digits (no pool or slot"
                                 f" holds more than 134,217,728 values); give a range such as {name}=1..8")
            lo, hi = int(m.group(1)), int(m.group(2))
        else:
            lo, hi = p.minimum, max(DEFAULT_HIGH, p.minimum)
        if lo > hi:
            raise UsageError(f"--symbolic {text!r}: the range {lo}..{hi} is empty")
        if lo < p.minimum:
            raise UsageError(f"--symbolic {text!r}: {name} must be >= {p.minimum} ({p.help})")
        if any(s.name == name for s in out):
            raise UsageError(f"--symbolic {name} is given twice")
        out.append(SymbolicParam(name, lo, hi))
    return out


def _layout(model: Model) -> tuple[Any, ...]:
    slots = tuple((s.name, s.offset, s.length, s.lo, s.hi) for s in model.slots)
    bindings = tuple((b.action.name, b.args) for b in model.bindings)
    pools = tuple((p.name, p.size) for p in model.pools.values())
    return slots, model.initial, bindings, pools


def _declaration_line(cls: type[Spec], attr: str) -> tuple[str | None, int | None]:
    """The file and line where a spec class assigns `attr` (for error messages)."""
    try:
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return cls.source_file(), None
    pat = re.compile(rf"^\s*{re.escape(attr)}\s*(:[^=]*)?=")
    for i, text in enumerate(lines):
        if pat.match(text):
            return cls.source_file(), start + i
    return cls.source_file(), start


def _sizes(model: Model, other: Model, name: str, value: int) -> SpecError:
    """The error for a parameter that changes the model's layout: which slot or pool it sizes."""
    cls = model.spec_cls
    here = model.env[name]
    what, attr = "the initial state", None
    for pname, info in model.pools.items():
        if other.pools[pname].size != info.size:
            what, attr = f"pool {pname} ({info.size} pages at {name}={here}, {other.pools[pname].size} at {name}={value})", pname
            break
    else:
        for a, b in zip(model.slots, other.slots):
            if (a.length, a.lo, a.hi) != (b.length, b.lo, b.hi):
                base = a.name.split(".")[0]
                what = f"slot {a.name} (domain {a.lo}..{a.hi} x {a.length} at {name}={here}, {b.lo}..{b.hi} x {b.length} at {name}={value})"
                attr = base if base in cls._slots or base in cls._pools else None
                break
        else:
            if len(model.bindings) != len(other.bindings):
                what = f"the arguments of the actions ({len(model.bindings)} bindings at {name}={here}, {len(other.bindings)} at {name}={value})"
    file, line = _declaration_line(cls, attr) if attr else (cls.source_file(), None)
    return SpecError(
        f"parameter {name} cannot be symbolic: it sizes {what}. The symbolic engine keeps the"
        " state layout fixed; leave only parameters used inside actions and properties symbolic"
        " (and check the others at several values with --param).",
        file=file, line=line,
    )


def check_layout(model: Model, params: Sequence[SymbolicParam]) -> None:
    """Refuse a symbolic parameter that sizes a pool, a domain, an initial value or the
    arguments of an action: the model must have the same layout at every value in range."""
    cls = model.spec_cls
    base = _layout(model)
    for p in params:
        span = p.hi - p.lo + 1
        values = range(p.lo, p.hi + 1) if span <= LAYOUT_CHECK_ALL else (p.lo, (p.lo + p.hi) // 2, p.hi)
        for v in values:
            if v == model.env[p.name]:
                continue
            env = dict(model.env)
            env[p.name] = v
            try:
                other = Model(cls(params=env, fixes=model.spec.fixes, release=model.spec.release))
            except SpecError as e:
                raise SpecError(f"parameter {p.name} cannot be symbolic over {p.lo}..{p.hi}: at {p.name}={v}, {e}") from None
            if _layout(other) != base:
                raise _sizes(model, other, p.name, v)


def trace_parametric(model: Model, params: Sequence[SymbolicParam]) -> tuple[Model, TracedModel, dict[int, SymbolicParam]]:
    """Trace a fresh copy of `model` whose spec sees each symbolic parameter as a Term variable.

    Returns the copy (whose `spec` holds the Terms), its TracedModel, and the variable index of
    each parameter (model.width + j). The cached trace of `model` is left untouched. Python
    control flow on a symbolic parameter raises a SpecError naming the spec's file and line."""
    if not params:
        return model, trace_model(model), {}
    check_layout(model, params)
    spec = copy.copy(model.spec)
    by_index: dict[int, SymbolicParam] = {}
    for j, p in enumerate(params):
        index = model.width + j
        object.__setattr__(spec, p.name, Term("var", (index,), INT))
        by_index[index] = p
    clone = copy.copy(model)
    clone.__dict__.pop("_traced", None)
    clone.spec = spec
    names = ", ".join(p.name for p in params)
    try:
        traced = trace_model(clone)
    except SpecError as e:
        text = str(e)
        prefix = f"{e.file}:{e.line}: " if e.file and e.line else (f"{e.file}: " if e.file else "")
        text = text[len(prefix):] if text.startswith(prefix) else text
        what = (text.split(" on a state value")[0] if " on a state value" in text else text).replace("a state value", "it")
        raise SpecError(
            f"parameter {names} cannot be symbolic: the spec uses it here in Python control flow ({what}), which"
            " needs a number known when tracing. Write If(cond, a, b), Min/Max, comparisons and"
            " arithmetic on it instead, or give it a value with --param.",
            file=e.file, line=e.line,
        ) from None
    return clone, traced, by_index


__all__ = ["DEFAULT_HIGH", "LAYOUT_CHECK_ALL", "SymbolicParam", "check_layout", "parse_symbolic", "trace_parametric"]
