"""The SMT interpreter: the symbolic tracer's Term graphs read as z3 formulas.

The symbolic interpreter (ownership.ir.tracer) traces every action binding once into
expression graphs: the guard, the value of every assignment, the condition of every kernel
flag, and the spec's state properties. This module gives those graphs a meaning in z3, so the
bounded model checker and k-induction (ownership.engines.bmc) check the spec's own action
functions and the kernel's own operations: nothing is written a second time for the solver
(docs/adr/0001-trace-to-our-own-terms.md).

Three layers (docs/engines.md, "the symbolic encoding"), each importing only the ones below:
- ownership.interpret.smt_params: symbolic parameters (`--symbolic`), and the trace of the
  model with each one as a Term variable (no z3);
- ownership.interpret.smt_terms: the z3 value of every node of the traced graphs, as signed
  bit-vectors of one width W chosen by interval analysis (nothing wraps silently), each node at
  its own width inside (NOTE(narrow-values), NOTE(narrow-counts), NOTE(unary-counts)), each
  operation by its row of a table;
- this module, the Encoding: from those values, the templates the engines instantiate: each
  binding's guard, successor, kernel flags and error condition, the transition relation, the
  state properties, the liveness obligations; what each binding reads and writes as a step
  (NOTE(footprints)); and reading states back from a z3 model.

What the concrete interpreter refuses at run time (an assignment leaving its slot's domain,
division by zero, a negative shift count, a page outside its pool: the tracer's error events,
ownership.lang.faults) becomes the *error condition* of a binding: each error under the guards
before it, as the concrete interpreter raises it before any later `require`. A step that raises
one has no successor; engines report it as a spec error.

One Encoding holds templates over a generic pre-state `x`, a selector `act` (which binding
fires) and a post-state `y`; engines instantiate them for step k by substitution (`at`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from ..ir.tracer import TracedModel, postorder, state_property_graphs
from ..lang.model import Model, SlotInfo
from .smt_params import SymbolicParam, check_layout, parse_symbolic, trace_parametric
from .smt_terms import Translation

#: The pseudo-property of a step that the concrete interpreter would refuse with a SpecError
#: (a value outside its slot's domain, division by zero, a negative shift count).
SPEC_ERROR = "spec-error"

#: z3's resource limit for each question of Encoding.footprints (about 0.1 s): a question it
#: leaves unanswered counts as a write, which only makes fewer steps commute.
FOOTPRINT_RLIMIT = 5_000_000


def trace_lemmas(model: Model) -> tuple[list[tuple[str, Any]], list[Any]]:
    """The spec's lemmas (strengthening invariants, `@lemma`) as graphs over one state, and
    their possible spec errors (events)."""
    lemmas = [p for p in model.spec_cls._properties.values() if p.kind == "lemma"]
    if not lemmas:
        return [], []
    return state_property_graphs(model, lemmas, "lemma")


# --------------------------------------------------------------------------- the encoding


@dataclass
class LiveObligation:
    """One liveness obligation (a property, for one request or one page) as z3 templates over
    x: whenever p holds, q holds then or later (`eventually`: from the initial state)."""

    name: str
    kind: str
    p: Any
    q: Any
    request: int | None = None
    page: tuple[str, int] | None = None
    text_p: str = ""
    text_q: str = ""


@dataclass
class _Binding:
    """One traced binding as z3 templates over the pre-state x."""

    guard: Any
    flags: dict[str, Any]                        # property -> condition (guard not included)
    error: Any                                   # raises a spec error (the guards before each included)
    writes: dict[int, Any] = field(default_factory=dict)


class Encoding:
    """A model's traced graphs as z3 templates over a pre-state x, a selector and a post-state y."""

    def __init__(self, model: Model, traced: TracedModel, *, params: dict[int, SymbolicParam] | None = None,
                 lemmas: tuple[list[tuple[str, Any]], list[Any]] | None = None) -> None:
        self.model = model
        self.params = dict(params or {})
        props = traced.properties
        lemma_graphs, lemma_errors = lemmas or ([], [])
        roots: list[Any] = []
        for action in traced.actions:
            roots.extend(e.cond for e in action.events)
            roots.extend(action.writes.values())
            for _, cond, details in action.flags:
                roots.extend(x for x in (cond, details.get("request"), details.get("other"), details.get("expected"))
                             if x is not None)
        roots.extend(c for _, c in props.invariants)
        roots.extend(c for _, c in props.sometimes)
        roots.extend(c for c, _ in props.leak)
        roots.extend(e.cond for e in props.errors)
        for _, _, p, q in props.liveness:
            roots.extend((p, q))
        roots.extend(e.cond for _, e in props.liveness_errors)
        roots.extend(c for _, c in lemma_graphs)
        roots.extend(e.cond for e in lemma_errors)
        order = postorder(roots)

        # The translation: every node's interval and the width W, then its z3 value.
        self.terms = terms = Translation(model, self.params, order)
        self.W = terms.W

        # Template variables.
        self.slot_of: list[SlotInfo] = [None] * model.width  # type: ignore[list-item]
        for s in model.slots:
            for k in range(s.length):
                self.slot_of[s.offset + k] = s
        self.x = terms.fresh_state("x")
        self.y = terms.fresh_state("y")
        n = len(model.bindings)
        self.act_bits = max(1, n.bit_length())
        self.act = z3.BitVec("act", self.act_bits)
        self.param_vars: dict[int, Any] = {i: z3.BitVec(f"param:{p.name}", self.W) for i, p in self.params.items()}

        self._templates: dict[tuple[Any, ...], Any] = {}
        terms.translate(order, self.x, self.param_vars)
        #: NOTE(unary-counts): the page sets that got unary counts (the translation's)
        self._unary = terms.unary

        self.bindings: list[_Binding] = [self._binding(action) for action in traced.actions]
        skip: frozenset[str] = model.skip
        self.invariants: list[tuple[str, Any]] = [
            (name, self._cond(c)) for name, c in props.invariants if name not in skip]
        self.sometimes: list[tuple[str, Any]] = [(name, self._cond(c)) for name, c in props.sometimes]
        leak = [self._cond(c) for c, _ in props.leak] if "leak" not in skip else []
        self.leak: Any = z3.Or(leak) if leak else z3.BoolVal(False)
        self.lemmas: list[tuple[str, Any]] = [(name, self._cond(c)) for name, c in lemma_graphs]
        errors = [self._cond(e.cond) for e in props.errors]
        #: over x: a state property raises a spec error (lemmas: also one of the lemmas does)
        self.state_errors: Any = z3.Or(errors) if errors else z3.BoolVal(False)
        more = [self._cond(e.cond) for e in lemma_errors]
        self.lemma_errors: Any = z3.Or(more) if more else z3.BoolVal(False)
        self.trans = self._transition()
        self._actions = traced.actions
        #: NOTE(footprints): what each binding reads and writes as a step, computed on demand.
        #: A binding *writes* a slot only where some in-domain state enabling it (and raising no
        #: spec error there) gets another value in it: z3 decides it per slot, because the
        #: kernel's operations assign whole pools, mostly to the values they had (decode_commit
        #: of sglang_pd assigns 14 slots and changes one). It *reads* the slots that its guards,
        #: its spec errors and those writes' values mention; its kernel flags are not part of
        #: the step. In-domain states suffice: every state of an execution is in its domain (a
        #: value outside it is a spec error, not a step).
        self._footprints: list[tuple[set[int], set[int]]] | None = None
        checked = set(model.liveness_checked())
        #: the liveness obligations, in the explicit engine's order (liveness.instances)
        self.live: list[LiveObligation] = [
            LiveObligation(prop.name, prop.kind, self._cond(p), self._cond(q), request=r)
            for prop, r, p, q in props.liveness if prop.name in checked]
        for ob in model.kernel_obligations():
            held = self.x[ob.at] if self.slot_of[ob.at].is_bool else self.x[ob.at] != 0
            self.live.append(LiveObligation(ob.name, "leads-to", held, z3.Not(held), page=(ob.pool, ob.page),
                                            text_p=ob.text_p, text_q=ob.text_q))
        more = [self._cond(e.cond) for name, e in props.liveness_errors if name in checked]
        #: over x: a checked liveness property raises a spec error in x
        self.live_errors: Any = z3.Or(more) if more else z3.BoolVal(False)

    # -- variables ----------------------------------------------------------------------------

    def fresh_state(self, tag: str) -> list[Any]:
        """New z3 constants for one state, named after the slots (`d_stage[r1]@3`)."""
        return self.terms.fresh_state(tag)

    def fresh_act(self, tag: str) -> Any:
        return z3.BitVec(f"act@{tag}", self.act_bits)

    def _cond(self, c: Any) -> Any:
        """A traced condition (or integer, true where not 0) as a z3 Bool over x."""
        return self.terms.as_bool(self.terms.val(c))

    # -- bindings and the transition relation -------------------------------------------------

    def _binding(self, t: Any) -> _Binding:
        guards = [self._cond(g) for g in t.guard]
        guard = z3.And(guards) if guards else z3.BoolVal(True)
        flags: dict[str, list[Any]] = {}
        skip: frozenset[str] = self.model.skip
        for prop, cond, _ in t.flags:
            if prop not in skip:  # `--skip PROPERTY`: as the concrete interpreter drops its flags
                flags.setdefault(prop, []).append(self._cond(cond))
        # each possible spec error, where the guards before it hold (Traced.errors)
        errors: list[Any] = []
        for before, cond, _ in t.errors():
            c = self._cond(cond)
            errors.append(z3.And(*[self._cond(g) for g in before], c) if before else c)
        writes: dict[int, Any] = {}
        for i, value in t.writes.items():
            e = self.terms.val(value)
            writes[i] = self.terms.as_bool(e) if self.slot_of[i].is_bool else self.terms.as_bv(e)
        return _Binding(
            guard=guard,
            flags={p: z3.Or(cs) for p, cs in flags.items()},
            error=z3.Or(errors) if errors else z3.BoolVal(False),
            writes=writes,
        )

    def _transition(self) -> Any:
        """T(x, act, y): `act` names a binding enabled in x that raises no spec error there, and
        y is its successor (the concrete interpreter's step)."""
        n = len(self.bindings)
        chosen = [self.act == b for b in range(n)]
        enabled = z3.Or([z3.And(chosen[b], self.bindings[b].guard, z3.Not(self.bindings[b].error))
                         for b in range(n)]) if n else z3.BoolVal(False)
        frame = []
        for i in range(self.model.width):
            value = self.x[i]
            for b in reversed(range(n)):
                w = self.bindings[b].writes.get(i)
                if w is not None:
                    value = z3.If(chosen[b], w, value)
            frame.append(self.y[i] == value)
        return z3.simplify(z3.And(z3.ULT(self.act, n), enabled, *frame))

    def footprints(self) -> list[tuple[set[int], set[int]]]:
        """For each binding, the slots it reads as a step and the slots it writes (NOTE(footprints))."""
        if self._footprints is not None:
            return self._footprints
        width = self.model.width

        def reads_of(roots: list[Any]) -> set[int]:
            return {t.args[0] for t in postorder(roots) if t.op == "var" and t.args[0] < width}

        solver = z3.SolverFor("QF_BV")
        solver.set("rlimit", FOOTPRINT_RLIMIT)
        solver.add(self.domain(self.x), self.param_ranges())
        out: list[tuple[set[int], set[int]]] = []
        for binding, action in zip(self.bindings, self._actions):
            solver.push()
            solver.add(binding.guard, z3.Not(binding.error))
            if solver.check() == z3.unsat:  # never a step: it reads and writes nothing
                solver.pop()
                out.append((set(), set()))
                continue
            wrote: set[int] = set()
            for i, value in binding.writes.items():
                if z3.eq(z3.simplify(value), self.x[i]):
                    continue
                if solver.check(value != self.x[i]) != z3.unsat:  # (unknown counts as a write)
                    wrote.add(i)
            solver.pop()
            out.append((reads_of([e.cond for e in action.events] + [action.writes[i] for i in sorted(wrote)]), wrote))
        self._footprints = out
        return out

    def commuting(self) -> list[frozenset[int]]:
        """For each binding a, the bindings b that commute with it as steps: from any in-domain
        state where a then b can be taken (enabled, raising no spec error), b then a can be
        taken too and reach the same state, and the other way round (bmc's NOTE(canonical-order)):
        neither writes a slot that the other reads or writes (NOTE(footprints))."""
        fp = self.footprints()
        n = len(fp)
        return [frozenset(b for b in range(n) if b != a and not fp[a][1] & (fp[b][0] | fp[b][1])
                          and not fp[b][1] & fp[a][0])
                for a in range(n)]

    # -- properties as templates -----------------------------------------------------------------

    def step_props(self) -> list[str]:
        """The kernel properties that some binding can flag."""
        seen: list[str] = []
        for b in self.bindings:
            for p in b.flags:
                if p not in seen:
                    seen.append(p)
        return seen

    def _cached(self, key: tuple[Any, ...], make: Any) -> Any:
        got = self._templates.get(key)
        if got is None:
            got = self._templates[key] = z3.simplify(make())
        return got

    def _violation(self, b: _Binding, wanted: set[str] | None) -> Any:
        conds = [c for p, c in b.flags.items() if wanted is None or p in wanted]
        if not conds:
            return z3.BoolVal(False)
        return z3.And(b.guard, z3.Not(b.error), z3.Or(conds))

    def step_violation(self, props: Iterable[str] | None = None) -> Any:
        """Over x and act: the chosen binding is enabled, raises no spec error, and flags a
        kernel property of `props` (all if None)."""
        wanted = None if props is None else tuple(props)
        return self._cached(("step", wanted), lambda: z3.Or(
            [z3.And(self.act == i, self._violation(b, None if wanted is None else set(wanted)))
             for i, b in enumerate(self.bindings)] or [z3.BoolVal(False)]))

    #: confirm_trace and older callers: a step's violation of `props`
    step_bad = step_violation

    def any_step_error(self) -> Any:
        """Over x alone: SOME binding raises a spec error."""
        return self._cached(("step-error",), lambda: z3.Or([b.error for b in self.bindings] or [z3.BoolVal(False)]))

    def any_step_bad(self) -> Any:
        """Over x alone: SOME binding raises a flag or a spec error (the induction step's bad)."""
        return self._cached(("any-step",), lambda: z3.Or(
            [z3.Or(b.error, self._violation(b, None)) for b in self.bindings] or [z3.BoolVal(False)]))

    def _fails(self, wanted: tuple[str, ...] | None, lemmas: bool) -> Any:
        parts = [z3.Not(c) for name, c in self.invariants if wanted is None or name in wanted]
        if lemmas:
            parts += [z3.Not(c) for name, c in self.lemmas if wanted is None or name in wanted]
        if wanted is None or "leak" in wanted:
            parts.append(self.leak)
        return z3.Or(parts) if parts else z3.BoolVal(False)

    def state_error(self, *, lemmas: bool = False) -> Any:
        """Over x: a state property (with `lemmas`, also a lemma) raises a spec error."""
        return self._cached(("state-error", lemmas),
                            lambda: z3.Or(self.state_errors, self.lemma_errors) if lemmas else self.state_errors)

    def state_violation(self, props: Iterable[str] | None = None, *, lemmas: bool = False) -> Any:
        """Over x: no property raises a spec error, and an invariant (or lemma) of `props` fails
        or the kernel's leak property is violated."""
        wanted = None if props is None else tuple(props)
        return self._cached(("state", wanted, lemmas),
                            lambda: z3.And(z3.Not(self.state_error(lemmas=lemmas)), self._fails(wanted, lemmas)))

    def state_bad(self, props: Iterable[str] | None = None, *, lemmas: bool = False) -> Any:
        """Over x: a property fails or raises a spec error (the induction step's bad)."""
        wanted = None if props is None else tuple(props)
        return self._cached(("state-bad", wanted, lemmas),
                            lambda: z3.Or(self.state_error(lemmas=lemmas), self._fails(wanted, lemmas)))

    def holds(self, name: str) -> Any:
        """Over x: the sometimes-property `name` holds."""
        return self._cached(("sometimes", name), lambda: dict(self.sometimes)[name])

    def enabled(self, b: int) -> Any:
        """Over x: binding b is enabled (where no step raises a spec error: a settled depth)."""
        return self.bindings[b].guard

    def dead_end(self) -> Any:
        """Over x: no binding is enabled, and none raises a spec error: the run stops there."""
        return self._cached(("dead-end",), lambda: z3.And(
            [z3.And(z3.Not(b.guard), z3.Not(b.error)) for b in self.bindings] or [z3.BoolVal(True)]))

    def same(self, a: Sequence[Any], b: Sequence[Any]) -> Any:
        """States a and b are equal."""
        return z3.And([x == y for x, y in zip(a, b)])

    def domain(self, state: Sequence[Any]) -> Any:
        """Every slot of `state` within its domain (booleans are z3 Bools already)."""
        parts = []
        for i, s in enumerate(self.slot_of):
            if not s.is_bool:
                parts.append(z3.And(state[i] >= s.lo, state[i] <= s.hi))
        return z3.And(parts)

    def param_ranges(self) -> Any:
        return z3.And([z3.And(self.param_vars[i] >= p.lo, self.param_vars[i] <= p.hi) for i, p in self.params.items()])

    def equals(self, state: Sequence[Any], values: Sequence[int]) -> Any:
        """`state` holds the concrete `values`."""
        parts = []
        for i, v in enumerate(values):
            parts.append(state[i] == z3.BoolVal(bool(v)) if self.slot_of[i].is_bool else state[i] == z3.BitVecVal(v, self.W))
        return z3.And(parts)

    def at(self, expr: Any, pre: Sequence[Any], act: Any = None, post: Sequence[Any] | None = None) -> Any:
        """A template instantiated at the given state (and selector, and post-state) variables."""
        pairs = list(zip(self.x, pre))
        if act is not None:
            pairs.append((self.act, act))
        if post is not None:
            pairs += list(zip(self.y, post))
        return z3.substitute(expr, *pairs)

    # -- reading a model ------------------------------------------------------------------------

    def decode(self, zmodel: Any, state: Sequence[Any]) -> tuple[int, ...]:
        """The concrete state that a z3 model gives to `state`."""
        out = []
        for e in state:
            got = zmodel.eval(e, model_completion=True)
            out.append(1 if z3.is_true(got) else 0 if z3.is_bool(got) else got.as_signed_long())
        return tuple(out)

    def decode_act(self, zmodel: Any, act: Any) -> int:
        return zmodel.eval(act, model_completion=True).as_long()

    def decode_params(self, zmodel: Any) -> dict[str, int]:
        return {p.name: zmodel.eval(self.param_vars[i], model_completion=True).as_signed_long()
                for i, p in self.params.items()}

    def block_params(self, values: dict[str, int]) -> Any:
        """Rule out exactly this assignment of the symbolic parameters."""
        return z3.Or([self.param_vars[i] != values[p.name] for i, p in self.params.items()])


def encode(model: Model, *, symbolic: Sequence[SymbolicParam] = (), lemmas: bool = False) -> Encoding:
    """Trace `model` (with the given parameters symbolic) and encode it for z3."""
    traced_model, traced, by_index = trace_parametric(model, symbolic)
    lemma_graphs = trace_lemmas(traced_model) if lemmas else ([], [])
    return Encoding(model, traced, params=by_index, lemmas=lemma_graphs)


__all__ = [
    "SPEC_ERROR", "Encoding", "LiveObligation", "SymbolicParam", "check_layout", "encode", "parse_symbolic",
    "trace_lemmas", "trace_parametric",
]
