"""Replay: re-execute a trace's actions on a Model from its initial state, which answers "does
this fix kill this trace?" (violated again, blocked at a step, or passed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceFormatError, shorten
from ..lang.model import Binding, Model
from .data import Step, Trace, Violation
from .json_values import _kind
from .messages import build_trace


@dataclass
class ReplayResult:
    """What re-executing a trace on a Model showed."""

    outcome: str                     # "violated" | "blocked" | "passed"
    steps_run: int
    violation: Violation | None = None
    blocked_step: int | None = None  # the step whose action is not enabled any more
    blocked_action: str | None = None
    diverged_step: int | None = None # the first step whose state differs from the recording
    diverged_vars: list[str] = field(default_factory=list)
    trace: Trace | None = None       # the replayed run, as far as it went
    states: list[tuple[int, ...]] = field(default_factory=list)  # its states, the initial one first
    bindings: list[Binding] = field(default_factory=list)        # the binding of each of its steps


def replay(trace: Trace, model: Model) -> ReplayResult:
    """Re-execute the trace's actions from its initial state on `model`.

    The trace must start from the spec's initial state (at the model's parameters), and a
    trace that records a violation must have steps to replay: otherwise "no longer violates"
    would be a pass that checked nothing. Both are TraceFormatError (bad input)."""
    from ..interpret.concrete import Concrete

    if trace.foreign:
        raise TraceFormatError("this ITF trace was not written by ownership (no #meta.ownership): it has no actions to replay")
    if not trace.steps:
        raise TraceFormatError("the trace has no states, not even an initial state: nothing to replay")
    name = model.spec_cls.__name__
    if len(trace.steps) == 1 and trace.violation is not None and trace.loop is None:
        raise TraceFormatError(
            f"the trace records a violation of {trace.violation.property!r} but has no steps after its"
            " initial state: nothing to replay (was it cut short?)"
        )
    try:
        state = model.parse(trace.steps[0].state)
    except ValueError as e:
        raise TraceFormatError(f"the trace's initial state does not fit spec {name}: {e}") from None
    if state != model.initial:
        differ = [s.name for s in model.slots
                  if state[s.offset:s.offset + s.length] != model.initial[s.offset:s.offset + s.length]]
        setting = " ".join(f"{k}={v}" for k, v in model.env.items())
        raise TraceFormatError(
            f"the trace does not start from the initial state of spec {name} at {setting}:"
            f" {', '.join(map(repr, differ))} differ{'s' if len(differ) == 1 else ''}"
            " (a trace replays from the spec's own initial state)"
        )
    interp = Concrete(model)
    states = [state]
    bindings: list[Binding] = []
    diverged: tuple[int, list[str]] | None = None

    def result(outcome: str, flags: list[Any] | None = None, **kw: Any) -> ReplayResult:
        run = build_trace(model, states, bindings, flags or [], engine="replay")
        return ReplayResult(outcome, len(bindings), violation=run.violation, trace=run,
                            diverged_step=diverged[0] if diverged else None,
                            diverged_vars=diverged[1] if diverged else [], states=states,
                            bindings=bindings, **kw)

    flags = interp.state_flags(state)
    if flags:
        return result("violated", flags)
    for i, step in enumerate(trace.steps[1:], start=1):
        _check_argument_kinds(model, i, step)
        binding = model.binding_of(step.action, tuple(step.args.values()))
        if binding is None:
            raise TraceFormatError(
                f"step {i}: action {shorten(repr(step.label()), 120)} is not an action of spec {name}"
                " with these arguments"
            )
        out = interp.step(states[-1], binding)
        if out is None:
            return result("blocked", blocked_step=i, blocked_action=step.label())
        states.append(out.state)
        bindings.append(binding)
        if diverged is None:
            shown = model.show(out.state)
            differ = [v for v in shown if v in step.state and not _same(shown[v], step.state[v])]
            if differ:
                diverged = (i, differ)
        flags = out.flags or interp.state_flags(out.state)
        if flags:
            return result("violated", flags)
    return result("passed")


def _holds_bool(v: Any) -> bool:
    """Whether a value read from JSON is, or holds, a boolean (true, false)."""
    if isinstance(v, bool):
        return True
    if isinstance(v, (list, tuple, frozenset, set)):
        return any(_holds_bool(x) for x in v)
    if isinstance(v, dict):
        return any(_holds_bool(x) for x in (*v.keys(), *v.values()))
    return False


def _check_argument_kinds(model: Model, i: int, step: Step) -> None:
    """A step's argument that is a boolean where the action takes an integer (or a set of page
    numbers), or an integer where it takes a boolean, is refused: Python's True == 1, so
    `"n": true` would otherwise be read as the binding n=1."""
    from ..lang.declare import BoolDomain, Domain, PageSetDomain, as_domain

    decl = model.spec_cls._actions.get(step.action or "")
    if decl is None:
        return  # (not an action of the spec: said by replay)
    for name, declared in decl.args:
        if name not in step.args:
            continue
        value = step.args[name]
        domain = as_domain(declared, f"action {decl.name}, argument {name}")
        at = f"step {i}: argument {name} of action {decl.name}"
        if isinstance(domain, BoolDomain):
            if not isinstance(value, bool) and isinstance(value, int):
                raise TraceFormatError(f"{at} is {_kind(value)}; the action takes a boolean there, so true or"
                                       " false is expected")
            continue
        lo, hi = domain.bounds(model.env)
        if isinstance(domain, PageSetDomain):
            expected = f"a set of page numbers (integers 0..{domain.pool.size(model.env) - 1})"
        elif type(domain).show is Domain.show:
            expected = f"an integer ({lo}..{hi})"
        else:
            continue  # (names, keys, holders: a boolean matches none of them, and replay says so)
        if isinstance(value, bool):
            raise TraceFormatError(f"{at} is {_kind(value)}, a boolean; {expected} is expected:"
                                   ' write it as a number, e.g. {"#bigint": "1"}')
        if _holds_bool(value):
            raise TraceFormatError(f"{at} is a set holding a boolean; {expected} is expected: write each"
                                   ' page as a number, e.g. {"#set": [{"#bigint": "1"}]}')


def _same(a: Any, b: Any) -> bool:
    """a == b, where a boolean is not the integer 0 or 1 (Python's True == 1): a recorded
    `true` where the spec has the integer 1 is a difference."""
    if a != b:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if type(a) in (list, tuple) and type(b) in (list, tuple):
        if set(map(type, a)) | set(map(type, b)) <= {int, str}:  # (a pool's pages: the common case)
            return True
        return all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict and type(b) is dict:
        return _holds_bool(list(a)) == _holds_bool(list(b)) and all(_same(x, b[k]) for k, x in a.items())
    return _holds_bool(a) == _holds_bool(b)
