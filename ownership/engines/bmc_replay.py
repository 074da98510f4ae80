"""From a z3 model back to the concrete interpreter: bmc's counterexamples, spec errors,
liveness lassos and counterexamples to induction, each decoded from the solver's model and
re-run by the concrete interpreter (which must agree, else an InternalError) into the same
Trace or SpecError the explicit engine gives.

A layer of ownership.engines.bmc above the encoding (ownership.interpret.smt) and the answers
(bmc_answers); it reads a run's solver model and its state and action variables (an unrolling
or an induction step), and asks no query. Every trace is built here, through build_trace (the
one counterexample rule, ownership/confirm.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InternalError, SpecError
from ..interpret.concrete import Concrete, Flag
from ..lang.model import Binding, Model
from ..trace import Trace, build_trace
from .bmc_answers import InductionFailure

if TYPE_CHECKING:
    from ..interpret.smt import Encoding


class Run(Protocol):
    """What a run found by z3 holds: the solver (its `model`), and the variables of its states
    and of its steps' bindings (an Unrolling, or an induction step)."""

    solver: Any
    states: list[list[Any]]
    acts: list[Any]


_HINT = (
    "The first state of this run may be unreachable from the initial state: induction with k = {k}"
    " cannot rule it out, so this is not (yet) a bug. Either add a lemma (a @lemma method,"
    " from ownership import lemma) that is false in that state and true in every"
    " reachable one, or raise --k: with loop-free runs, k-induction succeeds once k exceeds the"
    " longest loop-free execution."
)


def _model_at(model: Model, values: dict[str, int]) -> Model:
    """The model at concrete values of its symbolic parameters (the layout is the same)."""
    if not values or all(model.env.get(k) == v for k, v in values.items()):
        return model
    env = dict(model.env)
    env.update(values)
    spec = model.spec_cls(params=env, fixes=model.spec.fixes, release=model.spec.release)
    return Model(spec, skip=model.skip)


def _lemma_flags(model: Model, state: tuple[int, ...]) -> list[Flag]:
    return Concrete(model).lemma_flags(state)


def _disagree(what: str) -> InternalError:
    return InternalError(f"the symbolic and the concrete interpreter disagree: {what}")


def _run(model: Model, states: list[tuple[int, ...]], bindings: list[Binding]) -> None:
    """Check that z3's path is the concrete interpreter's path, step by step, without flags."""
    interp = Concrete(model)
    for j, b in enumerate(bindings):
        out = interp.step(states[j], b)
        if out is None:
            raise _disagree(f"step {j + 1}, {b.label()}, is disabled concretely")
        if out.state != states[j + 1]:
            raise _disagree(f"step {j + 1}, {b.label()}, leads to another state concretely")
        if out.flags:
            raise _disagree(f"step {j + 1}, {b.label()}, raises {out.flags[0].prop} concretely")


def _extract(enc: Encoding, zmodel: Any, states_vars: list[list[Any]], acts_vars: list[Any],
             k: int) -> tuple[Model, dict[str, int], list[tuple[int, ...]], list[Binding]]:
    """The parameter values, the concrete model, and the first k+1 states and k bindings."""
    values = enc.decode_params(zmodel)
    model = _model_at(enc.model, values)
    states = [enc.decode(zmodel, states_vars[j]) for j in range(k + 1)]
    bindings = [model.bindings[enc.decode_act(zmodel, acts_vars[j])] for j in range(k)]
    return model, values, states, bindings


def _last_step(model: Model, states: list[tuple[int, ...]], binding: Binding, *,
               lemmas: bool) -> tuple[tuple[int, ...], list[Flag]]:
    """Re-run the last step concretely: its successor and the flags of the step or the state."""
    interp = Concrete(model)
    out = interp.step(states[-1], binding)
    if out is None:
        raise _disagree(f"the last step, {binding.label()}, is disabled concretely")
    if out.flags:
        return out.state, out.flags
    flags = interp.state_flags(out.state) + (_lemma_flags(model, out.state) if lemmas else [])
    return out.state, flags


def counterexample(enc: Encoding, run: Run, k: int, *, lemmas: bool,
                    engine: str) -> tuple[Trace, Model, dict[str, int]]:
    """The shortest counterexample found at depth k, as the same Trace the explicit engine builds."""
    zmodel = run.solver.model
    model, values, states, bindings = _extract(enc, zmodel, run.states, run.acts, max(k - 1, 0))
    if k == 0:
        states = states[:1]
        flags = Concrete(model).state_flags(states[0]) + (_lemma_flags(model, states[0]) if lemmas else [])
        if not flags:
            raise _disagree("the initial state violates a property symbolically, not concretely")
        return build_trace(model, states, [], flags, engine=engine), model, values
    if states[0] != model.initial:
        raise _disagree("the first state is not the initial state")
    _run(model, states, bindings)
    last = model.bindings[enc.decode_act(zmodel, run.acts[k - 1])]
    path = [*bindings, last]
    nxt, flags = _last_step(model, states, last, lemmas=lemmas)
    if not flags:
        raise _disagree(f"step {k}, {last.label()}, violates a property symbolically, not concretely")
    return build_trace(model, [*states, nxt], path, flags, engine=engine), model, values


def spec_error(enc: Encoding, run: Run, k: int, kind: str, *, lemmas: bool) -> SpecError:
    """The spec error found at depth k (a step into it, or a property of its state), raised by
    the concrete interpreter on the path z3 found, with the steps that lead to it."""
    zmodel = run.solver.model
    depth = k - 1 if kind == "step-error" else k
    model, _, states, bindings = _extract(enc, zmodel, run.states, run.acts, depth)
    if states[0] != model.initial:
        raise _disagree("the first state is not the initial state")
    _run(model, states, bindings)
    interp = Concrete(model)
    steps = [b.label() for b in bindings]
    try:
        if kind == "step-error":
            for b in model.bindings:
                interp.step(states[-1], b)
        else:
            interp.state_flags(states[-1])
            if lemmas:
                interp.lemma_flags(states[-1])
    except SpecError as e:
        e.steps = steps
        return e
    raise _disagree(f"a spec error at depth {k} symbolically, not concretely")


def lasso(enc: Encoding, run: Run, k: int, i: int) -> tuple[Trace, Model, dict[str, int]]:
    """The liveness counterexample of k steps for obligation i that z3 found, replayed in the
    concrete semantics (ownership.engines.liveness decides that it is one) as the explicit
    engine's Trace."""
    from . import liveness

    model, values, states, bindings = _extract(enc, run.solver.model, run.states, run.acts, k)
    if states[0] != model.initial:
        raise _disagree("the first state is not the initial state")
    _run(model, states, bindings)
    ob = enc.live[i]
    inst = liveness.on_run(model, states, ob.name, ob.request, ob.page)
    bound = model.within.get(ob.name)
    loops: list[int | None] = [j for j in range(k) if states[j] == states[k]] + [k]
    for loop in loops + ([None] if bound is not None else []):
        if loop == k and any(Concrete(model).step(states[k], b) is not None for b in model.bindings):
            continue  # not a dead end (a late response's window alone says nothing of one)
        if liveness.violates(model, states, bindings, loop, ob.name):
            t = liveness.trigger_of(inst, loop, k, bound)
            if t is not None:
                return liveness.lasso_trace(model, inst, states, bindings, loop, t, engine="bmc"), model, values
    raise _disagree(f"a run of {k} steps violates {ob.name} symbolically, not concretely")


def liveness_error(enc: Encoding, run: Run, k: int) -> SpecError:
    """The spec error a liveness property raises in the state z3 found at depth k, raised by
    the concrete interpreter there, with the steps that lead to it."""
    from . import liveness, reachable

    model, _, states, bindings = _extract(enc, run.solver.model, run.states, run.acts, k)
    _run(model, states, bindings)
    try:
        liveness.instances(model, Concrete(model), reachable.Graph.of_states(states[-1:]))
    except SpecError as e:
        e.steps = [b.label() for b in bindings]
        return e
    raise _disagree(f"a liveness property raises a spec error at depth {k} symbolically, not concretely")


def induction_failure(enc: Encoding, run: Run, k: int) -> InductionFailure:
    """The counterexample to induction of k steps in the solver's model, re-run concretely."""
    from ..interpret.smt import SPEC_ERROR

    model, values, states, bindings = _extract(enc, run.solver.model, run.states, run.acts, k)
    _run(model, states, bindings)
    last = states[-1]
    interp = Concrete(model)
    prop = message = ""
    run_states, run_bindings = list(states), list(bindings)
    try:
        flags = interp.state_flags(last) + _lemma_flags(model, last)
    except SpecError as e:  # a property raises a spec error in the last state
        flags, prop, message = [], SPEC_ERROR, str(e)
    if not flags and not prop:
        for b in model.bindings:  # the first binding that breaks a property from the last state
            try:
                out = interp.step(last, b)
            except SpecError as e:
                prop, message = SPEC_ERROR, str(e)
                run_bindings.append(b)
                break
            if out is not None and out.flags:
                flags = out.flags
                run_states.append(out.state)
                run_bindings.append(b)
                break
        else:
            raise _disagree("the induction step fails symbolically, not concretely")
    # with a spec error, the failing binding has no successor: the trace stops before it
    trace = build_trace(model, run_states, run_bindings[: len(run_states) - 1], flags, engine="k-induction")
    if trace.violation is not None:
        prop, message = trace.violation.property, trace.violation.message
    return InductionFailure(k, run_states, run_bindings, prop, message, values, trace, _HINT.format(k=k))


__all__ = ["Run", "counterexample", "induction_failure", "lasso", "liveness_error", "spec_error"]
