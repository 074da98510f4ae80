"""The symbolic interpreter: traces actions into expression graphs over the state variables.

Tracing runs the same action functions as the concrete interpreter, with `Term` values. It
is how a spec is validated when it loads: a Term refuses `bool()` (a Python `if`, `and`,
`or`, `not`, `while` on state), so every action binding is traced once and any such use is
reported with the spec's file and line before an engine starts. The resulting graphs (the
guard, the new value of every slot, the condition of each property) are what a solver or
vectorised interpreter consumes (docs/adr/0001-trace-to-our-own-terms.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..kernel import KernelOperations
from ..lang import sorts
from ..lang.faults import Fault
from ..lang.location import spec_location
from ..lang.model import Binding, Model, SlotInfo
from ..lang.sorts import BOOL, INT, PAGES
from ..lang.state import StateView
from ..lang.values import Ops, RefusesControlFlow

#: The logical operator of each bitwise one, for conditions.
_LOGIC = {"and": "and", "or": "or", "xor": "xor"}


class Term(RefusesControlFlow):
    """A node of an expression graph: an operation, its arguments and its sort (bool, int or
    pages; ownership.lang.sorts). A constant read back from a slot is a `const` Term, so that
    it behaves as a value of the language (`~` on it is logical), not as a Python constant."""

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
        if self.op == "const":
            return repr(self.args[0])
        return f"{self.op}({', '.join(map(repr, self.args))})"

    def _op(self, op: str, o: Any, swap: bool = False) -> Term:
        a, b = (o, self) if swap else (self, o)
        sort = sorts.binary(op, a, b)
        name = op
        if op in _LOGIC and sort is not BOOL:
            name = "bit" + op
        return Term(name, (a, b), sort)

    def __eq__(self, o: Any) -> Term: return self._op("eq", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Term: return self._op("ne", o)  # type: ignore[override]
    def __lt__(self, o: Any) -> Term: return self._op("lt", o)
    def __le__(self, o: Any) -> Term: return self._op("le", o)
    def __gt__(self, o: Any) -> Term: return self._op("gt", o)
    def __ge__(self, o: Any) -> Term: return self._op("ge", o)

    def __add__(self, o: Any) -> Term: return self._op("add", o)
    def __radd__(self, o: Any) -> Term: return self._op("add", o, True)
    def __sub__(self, o: Any) -> Term: return self._op("sub", o)
    def __rsub__(self, o: Any) -> Term: return self._op("sub", o, True)
    def __mul__(self, o: Any) -> Term: return self._op("mul", o)
    def __rmul__(self, o: Any) -> Term: return self._op("mul", o, True)
    def __floordiv__(self, o: Any) -> Term: return self._divide("div", o)
    def __rfloordiv__(self, o: Any) -> Term: return self._divide("div", o, True)
    def __mod__(self, o: Any) -> Term: return self._divide("mod", o)
    def __rmod__(self, o: Any) -> Term: return self._divide("mod", o, True)
    def __lshift__(self, o: Any) -> Term: return self._shift("shl", o)
    def __rlshift__(self, o: Any) -> Term: return self._shift("shl", o, True)
    def __rshift__(self, o: Any) -> Term: return self._shift("shr", o)
    def __rrshift__(self, o: Any) -> Term: return self._shift("shr", o, True)

    def _divide(self, op: str, o: Any, swap: bool = False) -> Term:
        t = self._op(op, o, swap)
        divisor = t.args[1]
        record_fault("division", _raw("eq", divisor, 0))
        return t

    def _shift(self, op: str, o: Any, swap: bool = False) -> Term:
        t = self._op(op, o, swap)
        record_fault("shift", _raw("lt", t.args[1], 0))
        return t

    def __and__(self, o: Any) -> Term: return self._op("and", o)
    def __rand__(self, o: Any) -> Term: return self._op("and", o, True)
    def __or__(self, o: Any) -> Term: return self._op("or", o)
    def __ror__(self, o: Any) -> Term: return self._op("or", o, True)
    def __xor__(self, o: Any) -> Term: return self._op("xor", o)
    def __rxor__(self, o: Any) -> Term: return self._op("xor", o, True)

    def __neg__(self) -> Term:
        if self.sort is not INT:
            raise sorts.refused("neg", self.sort)
        return Term("neg", (self,), INT)

    def __invert__(self) -> Term:
        if self.sort is not BOOL:
            raise sorts.refused("not", self.sort)
        return Term("not", (self,), BOOL)


def constant(v: Any, sort: str) -> Term:
    """A constant of a sort, as a Term (a slot written with a Python constant reads back so)."""
    return Term("const", (bool(v) if sort is BOOL else int(v),), sort)


def _raw(op: str, a: Any, b: Any) -> Any:
    """A comparison of the interpreters' own checks (not the spec's: no sort rules), folded
    when both sides are constants."""
    if not isinstance(a, Term) and not isinstance(b, Term):
        return {"eq": int(a) == int(b), "lt": int(a) < int(b), "gt": int(a) > int(b)}[op]
    return Term(op, (a, b), BOOL)


def _raw_or(a: Any, b: Any) -> Any:
    if a is False or b is True:
        return b
    if b is False or a is True:
        return a
    return Term("or", (a, b), BOOL)


class SymbolicOps(Ops):
    """The spec language's operations as graph nodes."""

    def If(self, c: Any, a: Any, b: Any, sort: str) -> Any:
        return Term("ite", (c, a, b), sort)

    def popcount(self, m: Any) -> Any:
        return Term("popcount", (m,), INT)

    def first(self, m: Any, n: Any) -> Any:
        return Term("first", (m, n), PAGES)

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return Term("nth", (m, j, default), INT)

    def bit(self, p: Any) -> Any:
        return Term("bit", (p,), PAGES)

    def select(self, values: list[Any], idx: Any, default: Any, sort: str) -> Any:
        return Term("select", (tuple(values), idx, bool(default) if sort is BOOL else int(default)), sort)

    def complement(self, m: Any) -> Any:
        return Term("compl", (m,), PAGES)


Term.ops = SymbolicOps()


@dataclass
class Event:
    """A guard (`kind` "guard": the action is disabled where `cond` fails) or a possible spec
    error (`kind` "error": the concrete interpreter raises where `cond` holds), in program order."""

    kind: str
    cond: Any
    fault: Fault | None = None


@dataclass
class Traced:
    """One action binding (or a state property, with `binding` None) as graphs: its guards and
    possible spec errors in program order (`events`), the new value of every slot written
    (`writes`) and the condition of each kernel flag (`flags`).

    The concrete interpreter stops at the first event that fires: a failing guard (disabled)
    or an error (a SpecError). So an error is raised where the guards BEFORE it hold and its
    own condition does (`errors()`); the action is enabled where every guard holds, and then
    only if no error fired (ownership.interpret.batch and .smt compute exactly that)."""

    binding: Binding | None
    events: list[Event] = field(default_factory=list)
    writes: dict[int, Any] = field(default_factory=dict)
    flags: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)

    @property
    def guard(self) -> list[Any]:
        """The guards, in program order."""
        return [e.cond for e in self.events if e.kind == "guard"]

    def errors(self) -> list[tuple[list[Any], Any, Fault]]:
        """Each possible error: (the guards before it, its condition, where it is)."""
        out: list[tuple[list[Any], Any, Fault]] = []
        before: list[Any] = []
        for e in self.events:
            if e.kind == "guard":
                before.append(e.cond)
            else:
                assert e.fault is not None
                out.append((list(before), e.cond, e.fault))
        return out


#: NOTE(recording): the Traced being recorded while an action or property is traced. An
#: operation that can fail depending on the state (`//`, `%`, `<<`, `>>` on a Term) adds its
#: error condition here, in program order, as the concrete interpreter raises it in order.
_RECORDING: list[Traced] = []


def record_fault(kind: str, bad: Any) -> None:
    """Record a possible spec error of `kind` where `bad` holds (nothing when `bad` is False)."""
    if bad is False or not _RECORDING:
        return
    file, line = spec_location()
    _RECORDING[-1].events.append(Event("error", bad, Fault(kind, file, line)))


class SymbolicState(KernelOperations, StateView):
    """A StateView whose every slot starts as a variable `var(i)` of the pre-state."""

    def __init__(self, model: Model, traced: Traced) -> None:
        object.__setattr__(self, "model", model)
        vals = []
        for info in model.slots:
            for k in range(info.length):
                vals.append(Term("var", (info.offset + k,), info.sort))
        object.__setattr__(self, "vals", vals)
        object.__setattr__(self, "traced", traced)

    def _get(self, i: int, info: SlotInfo) -> Any:
        return self.vals[i]

    def _store(self, i: int, value: Any, info: SlotInfo) -> None:
        if not isinstance(value, Term):
            value = constant(value, info.sort)
        self.vals[i] = value
        self.traced.writes[i] = value

    def _index(self, i: Any) -> int | None:
        return None if isinstance(i, Term) else int(i)

    def require(self, cond: Any) -> None:
        sorts.condition(cond, "s.require(...)")
        if cond is True:
            return
        self.traced.events.append(Event("guard", cond))

    def _flag(self, prop: str, cond: Any, *, pool: str | None, page: int | None, request: Any, other: Any,
              expected: Any = None, text: str | None = None) -> None:
        if cond is False:
            return
        self.traced.flags.append((prop, cond, {"pool": pool, "page": page, "request": request,
                                               "other": other, "expected": expected, "text": text}))

    def _check(self, kind: str, bad: Any, message: Callable[[], str]) -> None:
        if bad is False:
            return
        file, line = spec_location()
        self.traced.events.append(Event("error", bad, Fault(kind, file, line)))

    def _outside(self, v: Any, lo: int, hi: int | None) -> Any:
        below = _raw("lt", v, lo)
        return below if hi is None else _raw_or(below, _raw("gt", v, hi))

    def _has_bits(self, v: Any, mask: int) -> Any:
        if not isinstance(v, Term):
            return int(v) & mask != 0
        return Term("ne", (Term("bitand", (v, mask), INT), 0), BOOL)


def recording(traced: Traced, fn: Callable[..., Any], *args: Any) -> Any:
    """Run spec code with `traced` receiving its possible errors (NOTE(recording))."""
    _RECORDING.append(traced)
    try:
        return fn(*args)
    finally:
        _RECORDING.pop()


def trace_binding(model: Model, binding: Binding) -> Traced:
    """Trace one action binding; raises SpecError on Python control flow on state, or on any
    operation the spec language refuses, with the spec's file and line."""
    from ..lang.failure import run_spec

    traced = Traced(binding)
    view = SymbolicState(model, traced)
    run_spec(lambda: recording(traced, binding.action.fn, model.spec, view, *binding.args),
             model, f"in action {binding.label()}")
    return traced


@dataclass
class TracedProperties:
    """The state properties as graphs over one state's variables.

    `invariants`: (name, condition that must hold); `sometimes`: (name, condition to reach);
    `leak`: (condition under which the kernel's leak property is violated, details);
    `errors`: the possible spec errors of evaluating all of them (a division by a slot that
    can be 0, ...): a state where one fires is a spec error, whatever the properties say."""

    invariants: list[tuple[str, Any]] = field(default_factory=list)
    sometimes: list[tuple[str, Any]] = field(default_factory=list)
    leak: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    errors: list[Event] = field(default_factory=list)
    #: whether a sometimes property can raise a spec error (then every engine evaluates the
    #: sometimes properties in every state, even once they have been reached)
    sometimes_can_fail: bool = False
    #: the spec's liveness properties, one per request where they take `r`: (the declaration,
    #: the request or None, p, q); `eventually`'s p is True (the engines take the initial state)
    liveness: list[tuple[Any, int | None, Any, Any]] = field(default_factory=list)
    #: the possible spec errors of evaluating them, by property (apart from `errors`: the
    #: safety search never evaluates a liveness property, the liveness search does)
    liveness_errors: list[tuple[str, Event]] = field(default_factory=list)


@dataclass
class TracedModel:
    """Every action binding of a model (in `model.bindings` order) and its properties, traced."""

    actions: list[Traced]
    properties: TracedProperties


def state_property_graphs(model: Model, decls: Any, kind: str) -> tuple[list[tuple[str, Any]], list[Event]]:
    """Trace properties of one kind (`invariant`, `sometimes`, `lemma`): their conditions and
    their possible errors."""
    from ..lang.failure import run_spec

    traced = Traced(None)
    view = SymbolicState(model, traced)
    out = []
    for prop in decls:
        cond: Any = True
        # a property of each request (`(self, s, r)`): the conjunction of its instances
        for args in ([(r,) for r in range(1, model.requests + 1)] if prop.per_request else [()]):
            what = prop.what(args)
            one = run_spec(lambda p=prop, w=what, a=args: recording(traced, view._property, p.fn, w, *a), model,
                           f"in {what}")
            cond = one if cond is True else cond & one
        out.append((prop.name, cond))
    return out, traced.events


def trace_liveness(model: Model) -> tuple[list[tuple[Any, int | None, Any, Any]], list[tuple[str, Event]]]:
    """Trace the spec's liveness properties (each request's, where they take `r`): their
    (p, q) conditions and their possible errors (with the property's name)."""
    from ..lang.failure import run_spec

    out, errors = [], []
    for prop in model.liveness:
        traced = Traced(None)
        view = SymbolicState(model, traced)
        for r in (range(1, model.requests + 1) if prop.per_request else (None,)):
            args = () if r is None else (r,)
            what = prop.what(args)
            p, q = run_spec(lambda t=traced, v=view, p=prop, w=what, a=args: recording(t, v._liveness, p, w, a), model,
                            f"in {what}")
            out.append((prop, r, p, q))
        errors += [(prop.name, e) for e in traced.events]
    return out, errors


def trace_properties(model: Model) -> TracedProperties:
    """Trace the invariants, sometimes properties and the kernel's leak property."""
    from .. import kernel
    from ..lang.failure import run_spec

    out = TracedProperties()
    out.invariants, errors = state_property_graphs(model, model.invariants, "invariant")
    out.sometimes, more = state_property_graphs(model, model.sometimes, "sometimes")
    out.errors = errors + more
    out.sometimes_can_fail = bool(more)
    out.liveness, out.liveness_errors = trace_liveness(model)
    if model.checks_leak:
        traced = Traced(None)
        view = SymbolicState(model, traced)
        for r in range(1, model.requests + 1):
            got = run_spec(lambda r=r: recording(traced, kernel.leak, view, r), model, f"in finished(r=r{r})")
            for pool, p, cond in got:
                out.leak.append((cond, {"pool": pool, "page": p, "request": r}))
        out.errors += traced.events
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


def postorder(roots: Any, known: Callable[[Term], bool] | None = None) -> list[Term]:
    """Every Term reachable from `roots` (Terms, or lists and tuples of them), children before
    parents, each once, without those `known` says are done and what lies below them only.
    Without recursion: the kernel's graphs chain one `|` a page, and a spec's loop may chain
    thousands of `+` (ownership.interpret.smt and NOTE(no-recursion) in ownership.interpret.batch)."""
    out: list[Term] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(roots, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, (tuple, list)):
            stack.extend((c, False) for c in reversed(node))
            continue
        if not isinstance(node, Term):
            continue
        if done:
            out.append(node)
            continue
        if id(node) in seen or (known is not None and known(node)):
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((a, False) for a in reversed(node.args))
    return out
