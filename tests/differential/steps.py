"""One step of a generated spec under the z3 encoding and the batch interpreter, against the reference.

The engines compare whole searches (tests/differential/runner.py); these compare single
steps, where a disagreement is easiest to read: from a given state and binding, the z3
templates of ownership.interpret.smt (guard, successor, kernel flags, error condition, state
properties) and the compiled numpy programs of ownership.interpret.batch (successor, flag,
bad write, state properties) must say exactly what the concrete interpreter does. This is
tests/engines/test_bmc.py's z3-versus-concrete step test, extended to any spec, and its batch twin.

Each function returns the disagreements as sentences (empty when they agree).
"""

from __future__ import annotations

import warnings
from typing import Any

from ownership.errors import SpecError
from ownership.interpret.concrete import Concrete
from ownership.lang.model import Model


def concrete(model: Model, state: tuple[int, ...], b: int) -> tuple[str, Any]:
    """The reference's step: ("error", SpecError), ("disabled", None) or ("step", Outcome).
    Any exception raised by spec code counts as the spec error it should be."""
    try:
        out = Concrete(model).step(state, model.bindings[b])
    except Exception as e:
        return "error", e
    return ("disabled", None) if out is None else ("step", out)


def concrete_state(model: Model, state: tuple[int, ...]) -> tuple[str, Any]:
    """The reference's judgement of a state: ("error", exception) or ("flags", set of properties)."""
    try:
        return "flags", {f.prop for f in Concrete(model).state_flags(state)}
    except Exception as e:
        return "error", e


def reachable(model: Model, limit: int = 300) -> list[tuple[int, ...]]:
    """Up to `limit` states reachable by the reference (past flagged steps too)."""
    seen = {model.initial}
    order = [model.initial]
    for state in order:
        for b in range(len(model.bindings)):
            kind, out = concrete(model, state, b)
            if kind == "step" and out.state not in seen and len(seen) < limit:
                seen.add(out.state)
                order.append(out.state)
    return order


def in_domain(model: Model, draw_int: Any) -> tuple[int, ...]:
    """Any state whose every position is inside its slot's domain (`draw_int(lo, hi)`)."""
    values = []
    for s in model.slots:
        values += [draw_int(s.lo, s.hi) for _ in range(s.length)]
    return tuple(values)


def z3_step(model: Model, enc: Any, solver: Any, state: tuple[int, ...], b: int) -> list[str]:
    """The z3 encoding of binding b at `state` against the concrete interpreter."""
    import z3

    label = f"{model.bindings[b].label()} at {model.show(state)}"
    x = [z3.BoolVal(bool(v)) if enc.slot_of[i].is_bool else z3.BitVecVal(v, enc.W) for i, v in enumerate(state)]
    act = z3.BitVecVal(b, enc.act_bits)

    def holds(e: Any) -> bool:
        return z3.is_true(z3.simplify(enc.at(e, x, act)))

    out: list[str] = []
    kind, got = concrete(model, state, b)
    error = kind == "error"
    if holds(enc.bindings[b].error) != error:
        out.append(f"{label}: z3's error condition is {not error}, the reference"
                   f" {'raises ' + _short(got) if error else 'raises nothing'}")
    if not error:
        solver.push()
        try:
            solver.add(enc.equals(enc.x, state), enc.act == b, enc.trans)
            sat = solver.check() == z3.sat
            if kind == "disabled" and sat:
                out.append(f"{label}: z3 enables a step that the reference disables")
            elif kind == "step" and not sat:
                out.append(f"{label}: z3 disables a step that the reference takes")
            elif kind == "step":
                succ = enc.decode(solver.model(), enc.y)
                if succ != got.state:
                    out.append(f"{label}: z3's successor {model.show(succ)} is not the reference's {model.show(got.state)}")
                solver.add(z3.Not(enc.equals(enc.y, got.state)))
                if solver.check() != z3.unsat:
                    out.append(f"{label}: z3 has another successor than the reference's")
        finally:
            solver.pop()
        if kind == "step":
            raised = {f.prop for f in got.flags}
            for prop in enc.step_props():
                if holds(enc.step_bad([prop])) != (prop in raised):
                    out.append(f"{label}: z3 {'does not flag' if prop in raised else 'flags'} {prop}, the reference"
                               f" {'does' if prop in raised else 'does not'}")
    out += _z3_state(model, enc, state, holds)
    return out


def _z3_state(model: Model, enc: Any, state: tuple[int, ...], holds: Any) -> list[str]:
    """The z3 state properties (and, where the encoding has one, their error condition)."""
    kind, got = concrete_state(model, state)
    where = f"state {model.show(state)}"
    has_errors = hasattr(enc, "state_error")
    raises = has_errors and holds(enc.state_error())
    if kind == "error":
        if not has_errors:
            return [f"{where}: the reference raises {_short(got)} judging it; z3 has no error condition for state properties"]
        return [] if raises else [f"{where}: z3's state error condition is False, the reference raises {_short(got)}"]
    if raises:
        return [f"{where}: z3's state error condition holds, the reference raises nothing judging it"]
    out = []
    violation = enc.state_violation if hasattr(enc, "state_violation") else enc.state_bad
    for prop in [name for name, _ in enc.invariants] + (["leak"] if model.checks_leak else []):
        if holds(violation([prop])) != (prop in got):
            out.append(f"{where}: z3 says {prop} {'holds' if prop in got else 'fails'}, the reference the opposite")
    return out


def _batch(model: Model, states: list[tuple[int, ...]]) -> tuple[dict, set, list[bool], list[bool] | None, list[str]]:
    """The batch interpreter on `states`: successors {(row, binding): (state, flagged)}, the
    (row, binding) pairs that raise a spec error, per row whether a state property fails and
    whether one raises (None when the interpreter cannot say), and numpy's warnings. (Both
    forms of ownership.interpret.batch: a `bad` mask among the successors, or `error_rows`.)"""
    from ownership.interpret.batch import BatchModel

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bm = BatchModel(model)
        P = bm.layout.pack_rows(states)
        exp = bm.expand(P)
        checks = bm.state_properties(bm.layout.unpack(P))
    succ: dict[tuple[int, int], tuple[tuple[int, ...], bool]] = {}
    errors: set[tuple[int, int]] = set()
    bad_mask = getattr(exp, "bad", None)
    for j, (row, b) in enumerate(zip(exp.rows, exp.binding)):
        if bad_mask is not None and bool(bad_mask[j]):
            errors.add((int(row), int(b)))
        else:
            succ[(int(row), int(b))] = (bm.layout.unpack_row(exp.words, j), bool(exp.flagged[j]))
    if hasattr(exp, "error_rows"):
        errors |= {(int(r), int(b)) for r, b in zip(exp.error_rows, exp.error_binding)}
    if isinstance(checks, tuple):
        bad, raises = [bool(x) for x in checks[0]], None
    else:
        bad = [bool(x) for x in checks.bad]
        raises = [bool(x) for x in checks.error] if checks.error is not None else [False] * len(states)
    noted = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return succ, errors, bad, raises, noted


def batch_steps(model: Model, states: list[tuple[int, ...]]) -> list[str]:
    """The batch interpreter's expansion of `states` against the concrete interpreter."""
    succ, errors, bad_state, raises, noted = _batch(model, states)
    note = f" (numpy warned: {'; '.join(noted)})" if noted else ""
    out = []
    for i, state in enumerate(states):
        for b, binding in enumerate(model.bindings):
            label = f"{binding.label()} at {model.show(state)}"
            kind, ref = concrete(model, state, b)
            mine = succ.get((i, b))
            if kind == "error":
                if (i, b) not in errors:
                    what = "disables the step" if mine is None else "takes the step"
                    out.append(f"{label}: batch {what}, the reference raises {_short(ref)}{note}")
            elif (i, b) in errors:
                out.append(f"{label}: batch raises a spec error, the reference {'disables the step' if kind == 'disabled' else 'does not'}{note}")
            elif kind == "disabled":
                if mine is not None:
                    out.append(f"{label}: batch takes a step that the reference disables{note}")
            elif mine is None:
                out.append(f"{label}: batch disables a step that the reference takes{note}")
            else:
                nxt, flagged = mine
                if nxt != ref.state:
                    out.append(f"{label}: batch's successor {model.show(nxt)} is not the reference's"
                               f" {model.show(ref.state)}{note}")
                if flagged != bool(ref.flags):
                    out.append(f"{label}: batch {'flags' if flagged else 'does not flag'} the step, the reference"
                               f" {'flags ' + ', '.join(sorted({f.prop for f in ref.flags})) if ref.flags else 'does not'}{note}")
        kind, props = concrete_state(model, state)
        where = f"state {model.show(state)}"
        if kind == "error":
            if raises is None or not raises[i]:
                out.append(f"{where}: the reference raises {_short(props)} judging it; batch"
                           f" {'flags' if bad_state[i] else 'accepts'} it{note}")
        elif raises is not None and raises[i]:
            out.append(f"{where}: batch raises a spec error judging it, the reference does not{note}")
        elif bad_state[i] != bool(props):
            out.append(f"{where}: batch {'flags' if bad_state[i] else 'accepts'} it, the reference"
                       f" {'flags ' + ', '.join(sorted(props)) if props else 'accepts it'}{note}")
    return out


def _short(e: BaseException) -> str:
    if isinstance(e, SpecError):
        return f"a SpecError at line {e.line}"
    return f"{type(e).__name__}: {e}"


__all__ = ["batch_steps", "concrete", "concrete_state", "in_domain", "reachable", "z3_step"]
