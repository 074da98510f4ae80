"""bmc's base case: executions from the initial state, unrolled in one incremental solver and
settled one depth at a time, with the queries each depth asks (a step's flags, a state's
properties, spec errors, whether the unrolling ends, the sometimes-properties).

A layer of ownership.engines.bmc over the encoding (ownership.interpret.smt), the solver
(bmc_solver) and the canonical order of steps (bmc_order, NOTE(canonical-order)); `check` and
`prove` drive it and decode what it finds (bmc_replay). z3 is imported only when a depth is
checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..kernel import PROPERTIES
from .bmc_order import CanonicalOrder
from .bmc_solver import Solver, Stop

if TYPE_CHECKING:
    from ..interpret.smt import Encoding


def priority(enc: Encoding, *, lemmas: bool) -> list[tuple[str, bool]]:
    """Properties in the order a report names them: (name, is a step property)."""
    step_props = set(enc.step_props())
    out: list[tuple[str, bool]] = []
    for p in PROPERTIES:
        if p in step_props:
            out.append((p, True))
        elif p == "leak":
            out.append((p, False))
    out += [(p, True) for p in step_props if p not in PROPERTIES]
    out += [(name, False) for name, _ in enc.invariants]
    if lemmas:
        out += [(name, False) for name, _ in enc.lemmas]
    return out


class Unrolling:
    """Executions from the initial state, settled one depth at a time (the BMC base case).

    After `next()` settles depth k, every execution of at most k steps is free of violations
    and of spec errors, and the solver holds s_0..s_k with the transitions between them."""

    def __init__(self, enc: Encoding, solver: Solver, *, lemmas: bool, reduce: bool = False,
                 symmetric: bool = False) -> None:
        self.enc = enc
        self.solver = solver
        self.lemmas = lemmas
        order = CanonicalOrder(enc, symmetric=symmetric) if reduce else None
        #: NOTE(canonical-order): the orders of steps explored, or None for every order
        self.order = order if order else None
        self.states: list[list[Any]] = [enc.fresh_state("0")]
        self.acts: list[Any] = []
        self.settled = -1           # every execution of at most this many steps is clean
        self.exhausted = False      # no execution of `settled + 1` steps exists
        solver.add(enc.equals(self.states[0], enc.model.initial), enc.param_ranges())

    def _vars(self, k: int) -> None:
        while len(self.states) <= k:
            j = len(self.states)
            self.acts.append(self.enc.fresh_act(str(j - 1)))
            self.states.append(self.enc.fresh_state(str(j)))

    def _refine(self, props: list[str], query: Any) -> str | None:
        """The first property (in report order) that can be violated: its model stays in the solver.

        The violation itself is already established (its model is in the solver): if time runs
        out while choosing which property to show, the report keeps that first model."""
        try:
            for prop in props:
                if self.solver.sat(query(prop)):
                    return prop
        except Stop:
            return None
        return None

    def next(self) -> tuple[str, int, str | None]:
        """Check the next depth k: ("violation", k, property) with its model in `solver.model`,
        ("step-error", k, None) when a step into k raises a spec error, ("state-error", k, None)
        when a property of s_k does, ("clear", k, None), or ("exhausted", k, None) when no
        execution has k steps.

        NOTE(first-event) in ownership.engines.per_state: at one depth a violation wins over a
        spec error. So the step into k is checked for the kernel's flags, then the state s_k
        for its properties, and only then both for spec errors. A depth found violated stays
        unsettled, so a caller may add constraints (block a parameter value) and ask again."""
        import z3

        enc = self.enc
        k = self.settled + 1
        self._vars(k)
        order = priority(enc, lemmas=self.lemmas)
        state_props = [p for p, is_step in order if not is_step]
        post = self.states[k]
        # nothing is asserted until depth k is clean: each query adds what it needs for itself
        step: list[Any] = []      # the step into k: enabled and raising no spec error
        pre_error: Any = None
        if k >= 1:
            pre, act = self.states[k - 1], self.acts[k - 1]
            step_bad = enc.at(enc.step_violation(), pre, act)
            if self.solver.sat(step_bad):
                step_props = [p for p, is_step in order if is_step]
                prop = self._refine(step_props, lambda p: enc.at(enc.step_violation([p]), pre, act))
                return "violation", k, prop
            step = [z3.Not(step_bad), enc.at(enc.trans, pre, act, post)]
            pre_error = enc.at(enc.any_step_error(), pre)
        # the queries about s_k alone may take the last step in canonical order too: the step
        # into k flags nowhere (asked just above), and a reordering keeps s_k
        last: list[Any] = []
        if k >= 1 and self.order is not None:
            last = self.order.define(k - 1, self.acts[k - 1]) + self.order.restrict(k - 1, self.acts[k - 1])
        state_bad = enc.at(enc.state_violation(lemmas=self.lemmas), post)
        if self.solver.sat(*step, *last, state_bad):
            prop = self._refine(state_props, lambda p: z3.And(*step, *last, enc.at(enc.state_violation([p], lemmas=self.lemmas), post)))
            return "violation", k, prop
        if pre_error is not None and self.solver.sat(pre_error):
            return "step-error", k, None
        state_error = enc.at(enc.state_error(lemmas=self.lemmas), post)
        if self.solver.sat(*step, state_error):
            return "state-error", k, None
        self.solver.add(*step, z3.Not(state_bad), z3.Not(state_error))
        if pre_error is not None:
            self.solver.add(z3.Not(pre_error))
        if k >= 1 and not self.solver.sat():
            self.settled = k - 1
            self.exhausted = True
            return "exhausted", k, None
        if last:  # the step into k is now in every later prefix
            self.solver.add(*last)
        self.settled = k
        return "clear", k, None

    def sometimes(self, pending: list[str]) -> list[str]:
        """Which pending sometimes-properties hold in some state at the settled depth."""
        enc = self.enc
        state = self.states[self.settled]
        got = []
        for name in pending:
            if self.solver.sat(enc.at(enc.holds(name), state)):
                got.append(name)
        return got


__all__ = ["Unrolling", "priority"]
