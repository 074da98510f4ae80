"""The symbolic interpreter: traces actions into expression graphs over the state variables.

Tracing runs the same action functions as the concrete interpreter, with `Term` values. It
is how a spec is validated when it loads: a Term refuses `bool()` (a Python `if`, `and`,
`or`, `not`, `while` on state), so every action binding is traced once and any such use is
reported with the spec's file and line before an engine starts. The resulting graphs (the
guard, the new value of every slot, the condition of each property) are what a solver or
vectorised interpreter consumes (docs/adr/0001-trace-to-our-own-terms.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..lang.model import Binding, Model, SlotInfo
from ..lang.state import StateView
from ..lang.values import Ops, RefusesControlFlow

BOOL, INT = "bool", "int"


class Term(RefusesControlFlow):
    """A node of an expression graph: an operation, its arguments and its sort (bool or int)."""

    __slots__ = ("op", "args", "sort")
    ops: Ops

    def __init__(self, op: str, args: tuple[Any, ...], sort: str) -> None:
        self.op = op
        self.args = args
        self.sort = sort

    # Defining __eq__ below would otherwise set __hash__ to None (a plain TypeError).
    __hash__ = RefusesControlFlow.__hash__

    def __repr__(self) -> str:
        if self.op == "var":
            return f"v{self.args[0]}"
        return f"{self.op}({', '.join(map(repr, self.args))})"

    def _cmp(self, op: str, o: Any) -> Term:
        return Term(op, (self, o), BOOL)

    def __eq__(self, o: Any) -> Term: return self._cmp("eq", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Term: return self._cmp("ne", o)  # type: ignore[override]
    def __lt__(self, o: Any) -> Term: return self._cmp("lt", o)
    def __le__(self, o: Any) -> Term: return self._cmp("le", o)
    def __gt__(self, o: Any) -> Term: return self._cmp("gt", o)
    def __ge__(self, o: Any) -> Term: return self._cmp("ge", o)

    def _arith(self, op: str, o: Any, swap: bool = False) -> Term:
        return Term(op, (o, self) if swap else (self, o), INT)

    def __add__(self, o: Any) -> Term: return self._arith("add", o)
    def __radd__(self, o: Any) -> Term: return self._arith("add", o, True)
    def __sub__(self, o: Any) -> Term: return self._arith("sub", o)
    def __rsub__(self, o: Any) -> Term: return self._arith("sub", o, True)
    def __mul__(self, o: Any) -> Term: return self._arith("mul", o)
    def __rmul__(self, o: Any) -> Term: return self._arith("mul", o, True)
    def __floordiv__(self, o: Any) -> Term: return self._arith("div", o)
    def __rfloordiv__(self, o: Any) -> Term: return self._arith("div", o, True)
    def __mod__(self, o: Any) -> Term: return self._arith("mod", o)
    def __neg__(self) -> Term: return Term("neg", (self,), INT)
    def __lshift__(self, o: Any) -> Term: return self._arith("shl", o)
    def __rlshift__(self, o: Any) -> Term: return self._arith("shl", o, True)
    def __rshift__(self, o: Any) -> Term: return self._arith("shr", o)

    def _logic(self, op: str, o: Any, swap: bool = False) -> Term:
        both_bool = self.sort == BOOL and (isinstance(o, bool) or getattr(o, "sort", None) == BOOL)
        if both_bool:
            return Term(op, (o, self) if swap else (self, o), BOOL)
        return Term("bit" + op, (o, self) if swap else (self, o), INT)

    def __and__(self, o: Any) -> Term: return self._logic("and", o)
    def __rand__(self, o: Any) -> Term: return self._logic("and", o, True)
    def __or__(self, o: Any) -> Term: return self._logic("or", o)
    def __ror__(self, o: Any) -> Term: return self._logic("or", o, True)
    def __xor__(self, o: Any) -> Term: return self._logic("xor", o)
    def __rxor__(self, o: Any) -> Term: return self._logic("xor", o, True)

    def __invert__(self) -> Term:
        if self.sort != BOOL:
            from ..errors import SpecError
            from ..lang.values import spec_location

            file, line = spec_location()
            raise SpecError(
                "`~` negates a condition, and this is an integer or a page set. For the pages of a"
                " not in b write without(a, b); for a number compare it (x == 0).",
                file=file, line=line,
            )
        return Term("not", (self,), BOOL)


def _sort(x: Any) -> str:
    if isinstance(x, Term):
        return x.sort
    return BOOL if isinstance(x, bool) else INT


class SymbolicOps(Ops):
    """The spec language's operations as graph nodes."""

    def If(self, c: Any, a: Any, b: Any) -> Any:
        sort = BOOL if _sort(a) == BOOL and _sort(b) == BOOL else INT
        return Term("ite", (c, a, b), sort)

    def popcount(self, m: Any) -> Any:
        return Term("popcount", (m,), INT)

    def first(self, m: Any, n: Any) -> Any:
        return Term("first", (m, n), INT)

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return Term("nth", (m, j, default), INT)

    def bit(self, p: Any) -> Any:
        return Term("shl", (1, p), INT)

    def select(self, values: list[Any], idx: Any, default: int) -> Any:
        return Term("select", (tuple(values), idx, default), INT)

    def complement(self, m: Any) -> Any:
        return Term("compl", (m,), INT)

    def truth(self, c: Any) -> bool | None:
        return None


Term.ops = SymbolicOps()


@dataclass
class Traced:
    """One action binding as graphs: enabled where `guard` holds; `writes` are the new slots."""

    binding: Binding | None
    guard: list[Any] = field(default_factory=list)
    writes: dict[int, Any] = field(default_factory=dict)
    flags: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)
    #: every assignment in program order: (state index, value, how many guards came before
    #: it). The concrete interpreter checks each assignment against the slot's domain as it
    #: happens, before any later `require`; the SMT engines need the same order to agree.
    assigned: list[tuple[int, Any, int]] = field(default_factory=list)


class SymbolicState(StateView):
    """A StateView whose every slot starts as a variable `var(i)` of the pre-state."""

    def __init__(self, model: Model, traced: Traced) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "vals", [Term("var", (i,), INT) for i in range(model.width)])
        object.__setattr__(self, "traced", traced)
        for info in model.slots:
            if info.is_bool:
                for k in range(info.length):
                    self.vals[info.offset + k] = Term("var", (info.offset + k,), BOOL)

    def _get(self, i: int, info: SlotInfo) -> Any:
        return self.vals[i]

    def _set(self, i: int, value: Any, info: SlotInfo) -> None:
        if isinstance(value, bool) or (isinstance(value, Term) and value.sort == BOOL):
            if not info.is_bool:
                value = Term("ite", (value, 1, 0), INT)
        self.vals[i] = value
        self.traced.writes[i] = value
        self.traced.assigned.append((i, value, len(self.traced.guard)))

    def _index(self, i: Any) -> int | None:
        return None if isinstance(i, Term) else int(i)

    def require(self, cond: Any) -> None:
        self.traced.guard.append(cond)

    def _flag(self, prop: str, cond: Any, *, pool: str, page: int, request: Any, other: Any,
              expected: Any = None) -> None:
        if cond is False:
            return
        self.traced.flags.append((prop, cond, {"pool": pool, "page": page, "request": request,
                                               "other": other, "expected": expected}))


def trace_binding(model: Model, binding: Binding) -> Traced:
    """Trace one action binding; raises SpecError on Python control flow on state."""
    traced = Traced(binding)
    view = SymbolicState(model, traced)
    binding.action.fn(model.spec, view, *binding.args)
    return traced


@dataclass
class TracedProperties:
    """The state properties as graphs over one state's variables.

    `invariants`: (name, condition that must hold); `sometimes`: (name, condition to reach);
    `leak`: (condition under which the kernel's leak property is violated, details)."""

    invariants: list[tuple[str, Any]] = field(default_factory=list)
    sometimes: list[tuple[str, Any]] = field(default_factory=list)
    leak: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)


@dataclass
class TracedModel:
    """Every action binding of a model (in `model.bindings` order) and its properties, traced."""

    actions: list[Traced]
    properties: TracedProperties


def trace_properties(model: Model) -> TracedProperties:
    """Trace the invariants, sometimes properties and the kernel's leak property."""
    from .. import kernel

    out = TracedProperties()
    view = SymbolicState(model, Traced(None))
    for prop in model.invariants:
        out.invariants.append((prop.name, prop.fn(model.spec, view)))
    for prop in model.sometimes:
        out.sometimes.append((prop.name, prop.fn(model.spec, view)))
    if model.checks_leak:
        for r in range(1, model.requests + 1):
            for pool, p, cond in kernel.leak(view, r):
                out.leak.append((cond, {"pool": pool, "page": p, "request": r}))
    return out


def trace_model(model: Model) -> TracedModel:
    """Trace every action binding and property of a model, once (cached on the model).

    This is also the load-time validation of a spec: Python control flow on state raises a
    SpecError here, with the spec's file and line."""
    cached = getattr(model, "_traced", None)
    if cached is None:
        cached = TracedModel([trace_binding(model, b) for b in model.bindings], trace_properties(model))
        model._traced = cached  # type: ignore[attr-defined]
    return cached
