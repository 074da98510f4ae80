"""`prove`: k-induction with z3. From ANY in-domain state, k steps that keep every property (and
the spec's `@lemma`s) cannot reach a state that breaks one; with the base case (bmc's unrolling)
to depth k, that proves the properties at every depth. Success is `verified`; failure shows the
counterexample to induction, labelled as possibly unreachable.

A layer of ownership.engines.bmc above the unrolling (bmc_unrolling), the solver (bmc_solver),
the replay of what z3 finds (bmc_replay) and the answers (bmc_answers). Nothing here prints;
progress goes to a reporter. z3 is imported only when a proof runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..interpret.smt_params import SymbolicParam
from ..lang.model import Model
from ..progress import Progress, Reporter
from ..result import Verdict
from .bmc_answers import InductionFailure, SymbolicCoverage, SymbolicResult
from .bmc_order import interchangeable
from .bmc_replay import counterexample, induction_failure, spec_error
from .bmc_solver import Solver, Stopping
from .bmc_unrolling import Unrolling

if TYPE_CHECKING:
    from ..interpret.smt import Encoding

#: The default number of induction steps `prove` tries (1, 2, ... up to this).
DEFAULT_K = 20


class Induction:
    """The induction step, one k at a time: k steps from any in-domain state that keep every
    property (and lemma), into a state that breaks one. States are pairwise distinct."""

    def __init__(self, enc: Encoding, solver: Solver) -> None:
        import z3

        self.enc = enc
        self.solver = solver
        self.bad = z3.Or(enc.any_step_bad(), enc.state_bad(lemmas=True))
        self.states = [enc.fresh_state("t0")]
        self.acts: list[Any] = []
        solver.add(enc.domain(self.states[0]), enc.param_ranges())

    def step(self) -> bool:
        """Extend to k = len(states) and check; True when the induction step holds."""
        import z3

        enc = self.enc
        k = len(self.states)
        prev = self.states[-1]
        self.solver.add(z3.Not(enc.at(self.bad, prev)))
        act = enc.fresh_act(f"t{k - 1}")
        nxt = enc.fresh_state(f"t{k}")
        self.acts.append(act)
        self.states.append(nxt)
        self.solver.add(enc.domain(nxt), enc.at(enc.trans, prev, act, nxt))
        for other in self.states[:-1]:
            self.solver.add(z3.Or([a != b for a, b in zip(other, nxt)]))
        return not self.solver.sat(enc.at(self.bad, nxt))

    def failure(self, k: int) -> InductionFailure:
        """The counterexample to induction in the solver's model, re-run concretely."""
        return induction_failure(self.enc, self, k)


def prove(
    model: Model,
    *,
    k: int = DEFAULT_K,
    max_seconds: float | None = None,
    reporter: Reporter | None = None,
    symbolic: Sequence[SymbolicParam] = (),
) -> SymbolicResult:
    """Prove the kernel properties, the spec's invariants and its lemmas for every depth by
    k-induction, trying k = 1, 2, ... up to `k`.

    Verified: proved (or no execution is longer than the base case reached). Violated: the base
    case found a real counterexample (a Trace). Inconclusive: induction failed up to `k` (the
    last counterexample to induction is attached, possibly unreachable), or the solver said
    unknown, or time ran out."""
    from ..interpret.smt import encode

    if k < 1:
        raise UsageError(f"--k {k}: k-induction needs k >= 1")
    start = time.monotonic()
    deadline = None if max_seconds is None else start + max_seconds
    enc = encode(model, symbolic=symbolic, lemmas=True)
    counter = [0]
    base = Unrolling(enc, Solver(deadline, counter), lemmas=True, reduce=True,
                     symmetric=interchangeable(enc, symbolic=symbolic, lemmas=True))
    step = Induction(enc, Solver(deadline, counter))
    pending = [name for name, _ in enc.sometimes]
    reached: dict[str, bool | None] = {name: None for name in pending}
    cti: InductionFailure | None = None

    def result(verdict: Verdict, cov: SymbolicCoverage, **kw: Any) -> SymbolicResult:
        return SymbolicResult(verdict, cov, "k-induction", sometimes=dict(reached), symbolic=list(symbolic), **kw)

    with Stopping() as stop:
        for i in range(k + 1):
            kind, depth, _ = base.next()
            if kind in ("step-error", "state-error"):
                raise spec_error(enc, base, depth, kind, lemmas=True)
            if kind == "violation":
                trace, wmodel, values = counterexample(enc, base, depth, lemmas=True, engine="k-induction")
                cov = SymbolicCoverage(0, 0, depth, complete=False, stopped_by="violation",
                                       seconds=time.monotonic() - start, method="bmc", queries=counter[0])
                return result(Verdict.VIOLATED, cov, trace=trace, witness=values, witness_model=wmodel)
            if kind == "exhausted":
                for name in reached:
                    reached[name] = bool(reached[name])
                cov = SymbolicCoverage(0, 0, base.settled, complete=True, seconds=time.monotonic() - start,
                                       method="bmc", queries=counter[0])
                return result(Verdict.VERIFIED, cov)
            if pending:
                got = base.sometimes(pending)
                for name in got:
                    reached[name] = True
                pending = [n for n in pending if n not in got]
            if reporter is not None:
                reporter(Progress(time.monotonic() - start, kind="symbolic", phase="base case", depth=depth, queries=counter[0]))
            if i == 0:
                continue
            if step.step():  # base case to depth i and the induction step with k = i
                cov = SymbolicCoverage(0, 0, base.settled, complete=True, seconds=time.monotonic() - start,
                                       method="k-induction", k=i, queries=counter[0])
                return result(Verdict.VERIFIED, cov, k=i)
            cti = step.failure(i)
            if reporter is not None:
                reporter(Progress(time.monotonic() - start, kind="symbolic", phase="induction step", depth=i, queries=counter[0]))
        stop.reason = "induction-failed"
    settled = max(base.settled, 0)
    cov = SymbolicCoverage(0, 0, settled, complete=False, stopped_by=stop.reason, seconds=time.monotonic() - start,
                           bound_depth=settled if base.settled >= 0 else None, method="k-induction",
                           k=k if stop.reason == "induction-failed" else None, queries=counter[0])
    return result(Verdict.INCONCLUSIVE, cov, cti=cti)



__all__ = ["DEFAULT_K", "Induction", "prove"]
