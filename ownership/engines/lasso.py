"""Liveness for the bmc engine: lasso-shaped bounded model checking (z3 formulas only).

The behaviours and the fairness are the explicit engine's (ownership.engines.liveness). A
liveness obligation (a property, for one request or one page) fails on a run of k steps
s_0..s_k, the shortest found first, when:

1. a lasso: s_k is an earlier state s_l, the loop s_l..s_k can be run fairly (each weakly fair
   binding enabled in every state of the loop is taken on it; each strongly fair one enabled
   in some state of the loop is taken on it), p holds at some step t, and q is false at every
   step from t on, or from l on if the trigger is in the loop (the loop repeats forever);
2. a dead end: no binding is enabled in s_k (the run stops and stays there), with p at some
   step t and q false from t on;
3. for a bounded response `leads_to(within=N)`: p at step k - N and q false at the N + 1
   steps from there, or a lasso as in 1 without fairness (q false forever is late on any run).

The caller (ownership.engines.bmc.check) asks at each depth k its safety unrolling has
settled (every execution of at most k steps is free of violations and spec errors), so
"enabled" is the guard alone there. `Lassos.find(k)` names the first obligation (in the
explicit engine's order) that fails on a run of k steps, with the solver's model holding it;
bmc decodes it and replays it in the concrete semantics. Nothing here prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lang.model import Model

if TYPE_CHECKING:
    from ..interpret.smt import Encoding


class Lassos:
    """The liveness counterexamples of k steps over one bmc unrolling (`states`, `acts`)."""

    def __init__(self, enc: Encoding, model: Model, states: list[list[Any]], acts: list[Any]) -> None:
        self.enc = enc
        self.states = states
        self.acts = acts
        self.fair = [(b, binding.action.fair) for b, binding in enumerate(model.bindings) if binding.action.fair]
        self.within = [model.within.get(ob.name) for ob in enc.live]
        self._cache: dict[tuple[Any, ...], Any] = {}

    def _at(self, key: tuple[Any, ...], make: Any) -> Any:
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = make()
        return got

    def _p(self, i: int, t: int) -> Any:
        import z3

        ob = self.enc.live[i]
        if ob.kind == "eventually":  # from the initial state only
            return z3.BoolVal(t == 0)
        return self._at(("p", i, t), lambda: self.enc.at(ob.p, self.states[t]))

    def _not_q(self, i: int, u: int) -> Any:
        import z3

        return self._at(("nq", i, u), lambda: z3.Not(self.enc.at(self.enc.live[i].q, self.states[u])))

    def _not_q_from(self, i: int, m: int, k: int) -> Any:
        import z3

        return z3.And([self._not_q(i, u) for u in range(m, k + 1)])

    def _pending(self, i: int, loop: int, k: int) -> Any:
        """Some trigger t, with q false from min(t, loop) to k."""
        import z3

        before = [z3.And(self._p(i, t), self._not_q_from(i, t, k)) for t in range(loop)]
        inside = z3.And(self._not_q_from(i, loop, k), z3.Or([self._p(i, t) for t in range(loop, k + 1)]))
        return z3.Or(*before, inside)

    def _fair(self, loop: int, k: int) -> Any:
        """The loop s_loop..s_k (steps loop..k-1) can be run fairly."""
        import z3

        enc = self.enc
        out = []
        for b, kind in self.fair:
            enabled = [self._at(("en", b, j), lambda b=b, j=j: enc.at(enc.enabled(b), self.states[j]))
                       for j in range(loop, k)]
            taken = z3.Or([self.acts[j] == b for j in range(loop, k)])
            wanted = z3.And(enabled) if kind == "weak" else z3.Or(enabled)
            out.append(z3.Or(z3.Not(wanted), taken))
        return z3.And(out)

    def _dead_end(self, k: int) -> Any:
        return self._at(("dead", k), lambda: self.enc.at(self.enc.dead_end(), self.states[k]))

    def fails(self, i: int, k: int) -> Any:
        """Obligation i fails on the run s_0..s_k (one of the shapes of the module docstring)."""
        import z3

        enc = self.enc
        bound = self.within[i]
        shapes = [z3.And(self._dead_end(k), self._pending(i, k, k))]
        for loop in range(k):
            same = self._at(("same", loop, k), lambda loop=loop: enc.same(self.states[k], self.states[loop]))
            fair = self._fair(loop, k) if bound is None else z3.BoolVal(True)
            shapes.append(z3.And(same, fair, self._pending(i, loop, k)))
        if bound is not None and k - bound >= 0:
            t = k - bound
            shapes.append(z3.And(self._p(i, t), self._not_q_from(i, t, k)))
        return z3.Or(shapes)

    def find(self, k: int, sat: Any, model: Any) -> int | None:
        """The first obligation that fails on a run of k steps (the solver's model then holds
        such a run), or None. `sat(*constraints)`: the solver's check, raising on `unknown`;
        `model()`: the solver's last model."""
        import z3

        if not self.enc.live:
            return None
        each = [self.fails(i, k) for i in range(len(self.enc.live))]
        if not sat(z3.Or(each)):
            return None
        found = model()
        first = next(i for i, cond in enumerate(each) if z3.is_true(found.eval(cond, model_completion=True)))
        for i in range(first):  # an earlier obligation that fails too, on another run
            if sat(each[i]):
                return i
        return first  # (the model is still the disjunction's: the queries before were unsat)


__all__ = ["Lassos"]
