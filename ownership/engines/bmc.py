"""The symbolic engine: bounded model checking and k-induction with z3, over the traced spec.

`check` unrolls the transition relation one step at a time in one incremental z3 solver: the
first depth at which a violation is satisfiable gives a shortest counterexample, returned as
the same Trace as the explicit engine's (its states come from the z3 model, its last step and
its flags from re-running the concrete interpreter, which must agree). No violation within the
bound is `bounded` ("no violation within K steps"); an unrolling that becomes unsatisfiable
(no execution is that long) is `verified`; a solver `unknown`, a timeout or Ctrl-C is
`inconclusive`, never a pass.

`prove` (ownership.engines.bmc_induction) adds k-induction: from ANY in-domain state, k steps
that keep every property (and the spec's `@lemma`s) cannot reach a state that breaks one.

Symbolic parameters (`SymbolicParam`) are left unknown within a range; a violation names the
value that breaks the spec, and with `sweep` the engine lists every value that does within
the bound (ParameterAnswer). The formulas come from ownership.interpret.smt, which reads the
symbolic tracer's graphs: no action is written a second time.

The engine in layers, each importing only the ones below it (docs/ARCHITECTURE.md):
- bmc.py (this module): `check`, and the entry points `run`, `run_proof`, `confirm_trace`;
- bmc_induction.py: `prove`, the induction step;
- lasso.py: the liveness counterexamples' formulas over the unrolling;
- bmc_unrolling.py: the base case, settled depth by depth, and the queries at each depth;
- bmc_order.py: the canonical order of steps the unrolling explores (NOTE(canonical-order));
- bmc_replay.py: what z3 found, re-run by the concrete interpreter into a Trace or a SpecError;
- bmc_solver.py: the incremental solver with a deadline, and how a search stops;
- bmc_answers.py: the results, the parametric answer, the counterexample to induction;
all over the encoding (ownership.interpret.smt).

z3 is imported lazily (ownership.interpret.smt): importing this module does not load it, so
`ownership check` with the explicit engine never pays for it. This module never prints;
progress goes to a reporter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..errors import UsageError
from ..interpret.smt_params import SymbolicParam, parse_symbolic
from ..lang.model import Model
from ..progress import Progress, Reporter
from ..result import Verdict
from ..trace import Trace
from .bmc_answers import (
    SWEEP_LIMIT,
    InductionFailure,
    ParameterAnswer,
    ParameterOutcome,
    SymbolicCoverage,
    SymbolicResult,
)
from .bmc_induction import DEFAULT_K, prove
from .bmc_order import interchangeable
from .bmc_replay import counterexample, lasso, liveness_error, spec_error
from .bmc_solver import Solver, Stopping, interruptible
from .bmc_unrolling import Unrolling
from .lasso import Lassos

#: The default bound of `ownership check --engine bmc` without --max-depth, in steps.
DEFAULT_DEPTH = 20


def check(
    model: Model,
    *,
    max_depth: int,
    max_seconds: float | None = None,
    reporter: Reporter | None = None,
    symbolic: Sequence[SymbolicParam] = (),
    sweep: bool = True,
    sometimes: bool = True,
    liveness: bool = False,
    canonical: bool = True,
) -> SymbolicResult:
    """Bounded model checking of `model` up to `max_depth` steps; a shortest counterexample first.

    `symbolic`: parameters left unknown within their ranges; with `sweep`, after the first
    counterexample the search goes on to list every violating value (ParameterAnswer).
    `sometimes`: also look for a state reaching each sometimes-property, depth by depth.
    `liveness`: also look for a liveness counterexample of each depth once it is settled (a
    lasso, a dead end, a bounded response too late: ownership.engines.lasso); a run of k
    steps that violates a liveness property is found before a safety violation of k + 1.
    `canonical`: explore one order of commuting steps and one renaming of interchangeable
    requests (NOTE(canonical-order)); False explores every execution, for comparisons (the
    answers are the same, benchmarks/bmc.py measures the difference)."""
    from ..interpret.smt import encode

    if liveness and symbolic:
        raise UsageError("liveness with --symbolic parameters is not supported: give the parameters values"
                         " (--param), or leave the liveness properties out with --skip")
    start = time.monotonic()
    deadline = None if max_seconds is None else start + max_seconds
    enc = encode(model, symbolic=symbolic)
    counter = [0]
    solver = Solver(deadline, counter)
    live = bool(liveness and enc.live)  # a lasso needs every order of steps (NOTE(canonical-order))
    reduce = canonical and not live
    run = Unrolling(enc, solver, lemmas=False, reduce=reduce,
                    symmetric=reduce and interchangeable(enc, symbolic=symbolic, lemmas=False))
    lassos = Lassos(enc, model, run.states, run.acts) if live else None
    pending = [name for name, _ in enc.sometimes] if sometimes else []
    reached: dict[str, bool | None] = {name: None for name, _ in enc.sometimes}
    first: tuple[Trace, Model, dict[str, int], int] | None = None
    outcomes: list[ParameterOutcome] = []
    capped = False
    with Stopping() as stop:
        while True:
            kind, k, prop = run.next()
            if kind in ("step-error", "state-error"):
                raise spec_error(enc, run, k, kind, lemmas=False)
            if kind == "violation":
                trace, wmodel, values = counterexample(enc, run, k, lemmas=False, engine="bmc")
                if first is None:
                    first = (trace, wmodel, values, k)
                assert trace.violation is not None
                outcomes.append(ParameterOutcome(values, k, trace.violation.property))
                if not (symbolic and sweep):
                    break
                if len(outcomes) >= SWEEP_LIMIT:
                    capped = True
                    break
                solver.add(enc.block_params(values))
                continue
            if kind == "exhausted":
                break
            if lassos is not None:
                if solver.sat(enc.at(enc.live_errors, run.states[k])):
                    raise liveness_error(enc, run, k)
                i = lassos.find(k, solver.sat, lambda: solver.model)
                if i is not None:
                    trace, wmodel, values = lasso(enc, run, k, i)
                    first = (trace, wmodel, values, k)
                    break
            if pending:
                got = run.sometimes(pending)
                for name in got:
                    reached[name] = True
                pending = [n for n in pending if n not in got]
            if reporter is not None:
                reporter(Progress(time.monotonic() - start, kind="symbolic", phase="bmc", depth=k, queries=counter[0]))
            if k >= max_depth:
                stop.reason = "max-depth"
                break
    stopped_by = stop.reason
    elapsed = time.monotonic() - start
    settled = max(run.settled, 0)

    if run.exhausted and not capped:
        rest = f"no violation at any depth (no execution is longer than {run.settled} steps)"
        for name in reached:
            reached[name] = bool(reached[name])
    elif stopped_by == "max-depth":
        rest = f"no violation within {max_depth} steps"
    else:
        rest = f"no violation within {settled} steps (stopped by {stopped_by})"
    answer = ParameterAnswer(list(symbolic), outcomes, rest, capped) if symbolic else None

    if first is not None:
        trace, wmodel, values, k = first
        cov = SymbolicCoverage(0, 0, k, complete=False, stopped_by="violation", seconds=elapsed,
                               method="bmc", queries=counter[0])
        sometimes_out = {n: (True if v else None) for n, v in reached.items()}
        return SymbolicResult(Verdict.VIOLATED, cov, "bmc", trace=trace, sometimes=sometimes_out,
                              symbolic=list(symbolic), witness=values, witness_model=wmodel, parameters=answer)
    if run.exhausted:
        cov = SymbolicCoverage(0, 0, run.settled, complete=True, seconds=elapsed, method="bmc", queries=counter[0])
        return SymbolicResult(Verdict.VERIFIED, cov, "bmc", sometimes=dict(reached), symbolic=list(symbolic),
                              parameters=answer)
    verdict = Verdict.BOUNDED if stopped_by == "max-depth" else Verdict.INCONCLUSIVE
    cov = SymbolicCoverage(0, 0, settled, complete=False, stopped_by=stopped_by, seconds=elapsed,
                           bound_depth=settled if run.settled >= 0 else None, method="bmc", queries=counter[0])
    return SymbolicResult(verdict, cov, "bmc", sometimes=dict(reached), symbolic=list(symbolic), parameters=answer)


def run(
    model: Model,
    *,
    max_states: int | None = None,
    max_depth: int | None = None,
    max_seconds: float | None = None,
    reporter: Reporter | None = None,
    symbolic: Sequence[str] = (),
) -> SymbolicResult:
    """`ownership check --engine bmc`: what ownership.api.check calls.

    `symbolic` holds the CLI's `NAME[=LO..HI]` texts. Without `max_depth` the bound is
    DEFAULT_DEPTH steps. `max_states` belongs to the explicit engine and is refused."""
    if max_states is not None:
        raise UsageError("--max-states limits the explicit engine; bound the bmc engine with --max-depth (steps)")
    params = parse_symbolic(symbolic, model.spec_cls, model.env)
    with interruptible():
        return check(model, max_depth=DEFAULT_DEPTH if max_depth is None else max_depth,
                     max_seconds=max_seconds, reporter=reporter, symbolic=params,
                     liveness=bool(model.liveness_checked()))


def run_proof(
    model: Model,
    *,
    k: int = DEFAULT_K,
    max_seconds: float | None = None,
    reporter: Reporter | None = None,
    symbolic: Sequence[str] = (),
) -> SymbolicResult:
    """`ownership prove`: `prove` with the CLI's `NAME[=LO..HI]` texts for symbolic parameters."""
    params = parse_symbolic(symbolic, model.spec_cls, model.env)
    with interruptible():
        return prove(model, k=k, max_seconds=max_seconds, reporter=reporter, symbolic=params)


def confirm_trace(trace: Trace, model: Model) -> str | None:
    """Replay a trace under the symbolic interpreter: None when every step is a model of the
    z3 transition relation and its last step or state satisfies the z3 condition of its
    violation; otherwise what does not hold. The explicit engine's traces must pass."""
    import z3

    from ..interpret.smt import encode

    enc = encode(model)
    states = [model.parse(step.state) for step in trace.steps]
    by_label = {(b.action.name, tuple(v for _, v in b.shown)): i for i, b in enumerate(model.bindings)}

    def const(state: tuple[int, ...]) -> list[Any]:
        return [z3.BoolVal(bool(v)) if enc.slot_of[i].is_bool else z3.BitVecVal(v, enc.W) for i, v in enumerate(state)]

    def holds(e: Any) -> bool:
        return z3.is_true(z3.simplify(e))

    acts = []
    for j, step in enumerate(trace.steps[1:], start=1):
        b = by_label.get((step.action or "", tuple(step.args.values())))
        if b is None:
            return f"step {j}: {step.label()} is not an action of the spec"
        act = z3.BitVecVal(b, enc.act_bits)
        acts.append(act)
        if not holds(enc.at(enc.trans, const(states[j - 1]), act, const(states[j]))):
            return f"step {j}: {step.label()} does not lead to the recorded state under the symbolic step relation"
    viol = trace.violation
    if viol is None:
        return None
    last = const(states[-1])
    if holds(enc.at(enc.state_bad([viol.property]), last)):
        return None
    if acts and holds(enc.at(enc.step_bad([viol.property]), const(states[-2]), acts[-1])):
        return None
    return f"the symbolic condition of {viol.property} does not hold at step {viol.step}"


__all__ = [
    "DEFAULT_DEPTH", "DEFAULT_K", "SWEEP_LIMIT", "InductionFailure", "ParameterAnswer", "ParameterOutcome",
    "SymbolicCoverage", "SymbolicResult", "SymbolicParam", "check", "confirm_trace", "prove",
    "run", "run_proof",
]
