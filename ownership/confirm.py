"""The one counterexample rule: no violation is reported before the concrete interpreter has
re-run its whole trace (issue 29, item 1).

Every engine builds its counterexample from states it stored or computed itself (packed rows,
partitions, checkpoint files, compiled code, a z3 model, a shrunk random run), and re-executes
at most the last step. A damaged checkpoint or a wrong packing would then give a trace that no
run of the spec can take, and a verdict of "violated" that is not true. So, before a violation
is reported, the concrete interpreter (the definition of what a spec means) replays the trace
from the spec's initial state: every step must be enabled, every state must equal the recorded
one, and the same property must fail at the same step (a lasso: close its loop fairly and fail
again). A trace that does not re-run is a bug of ownership (InternalError, exit 4), never a
verdict.

`replayed` is also what `ownership replay` runs (ownership.api.replay_trace): the replay of a
trace, a liveness counterexample's loop included.
"""

from __future__ import annotations

from .errors import InternalError, OwnershipError
from .lang.model import Model
from .result import CheckResult, Verdict
from .trace import ReplayResult, Trace, Violation, replay


def replayed(trace: Trace, model: Model) -> ReplayResult:
    """The trace replayed on `model`, a lasso's loop included."""
    result = replay(trace, model)
    if trace.loop is not None or (trace.violation is not None and trace.violation.property in model.within):
        _replay_loop(trace, model, result)
    return result


def _replay_loop(trace: Trace, model: Model, result: ReplayResult) -> None:
    """A liveness counterexample replayed to its end: a lasso violates again when its last
    state closes the loop fairly (or is a dead end) and its property still fails on it; a
    bounded response (leads_to within=N) when the response still comes too late on it."""
    from .engines import liveness

    name = trace.violation.property if trace.violation is not None else None
    if result.outcome != "passed" or result.trace is None or name not in model.liveness_checked():
        return
    run = result.trace
    if liveness.violates(model, result.states, result.bindings, trace.loop, name):
        run.loop = trace.loop
        assert trace.violation is not None
        run.violation = Violation(name, trace.violation.step,
                                  f"{name} still fails on this behaviour: " + trace.violation.message,
                                  list(trace.violation.requests), list(trace.violation.pages))
        result.outcome = "violated"
        result.violation = run.violation


def confirm(result: CheckResult, model: Model | None = None) -> None:
    """Re-run a violation's trace in the concrete interpreter before it is reported; raise
    InternalError when it does not re-run to the same violation at the same step. A result
    that is not a violation passes untouched. `model`: the model the trace is of (default:
    the result's own, which for bmc with symbolic parameters is the witness's)."""
    if result.verdict is not Verdict.VIOLATED or result.trace is None:
        return
    model = model if model is not None else getattr(result, "model", None)
    if model is None:
        raise InternalError("a violation was reported without the model its trace is of; it cannot be re-run")
    trace = result.trace
    why = _why_not(trace, model)
    if why is not None:
        claimed = trace.violation.property if trace.violation is not None else "a property"
        raise InternalError(
            f"the {trace.engine or 'search'} engine reported a violation of {claimed} in {len(trace.steps) - 1}"
            f" steps, but the concrete interpreter, re-running that trace from the initial state, {why}: the"
            " engine's trace is not a run of the spec, so no verdict is given (a bug of ownership)")


def _why_not(trace: Trace, model: Model) -> str | None:
    """What keeps the concrete re-run of `trace` from confirming its violation, or None."""
    claimed = trace.violation
    if claimed is None:
        return "found no violation recorded in it"
    try:
        again = replayed(trace, model)
    except OwnershipError as e:  # (the trace names what the spec does not have, or another start)
        return f"could not replay it ({e})"
    if again.blocked_step is not None:
        return f"found step {again.blocked_step}, {again.blocked_action}, not enabled"
    if again.diverged_step is not None:
        return (f"reached another state at step {again.diverged_step}"
                f" ({', '.join(again.diverged_vars[:4])} differ{'s' if len(again.diverged_vars) == 1 else ''})")
    if again.outcome != "violated" or again.violation is None:
        return f"ran its {again.steps_run} steps without a violation"
    found = again.violation
    if found.property != claimed.property:
        return f"found {found.property}, not {claimed.property}"
    if claimed.property in model.liveness_checked():
        return None  # (a behaviour: its loop, or its late response, re-ran: liveness.violates)
    if found.step != claimed.step:
        return f"found {found.property} at step {found.step}, not at step {claimed.step}"
    if found.message != claimed.message:
        return f"found {found.property} with another explanation: {found.message!r}"
    return None
