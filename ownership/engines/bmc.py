"""The symbolic engine: bounded model checking and k-induction with z3, over the traced spec.

`check` unrolls the transition relation one step at a time in one incremental z3 solver: the
first depth at which a violation is satisfiable gives a shortest counterexample, returned as
the same Trace as the explicit engine's (its states come from the z3 model, its last step and
its flags from re-running the concrete interpreter, which must agree). No violation within the
bound is `bounded` ("no violation within K steps"); an unrolling that becomes unsatisfiable
(no execution is that long) is `verified`; a solver `unknown`, a timeout or Ctrl-C is
`inconclusive`, never a pass.

`prove` adds k-induction: from ANY in-domain state, k steps that keep every property (and the
spec's `@lemma`s) cannot reach a state that breaks one. Success is `verified` for every
depth; failure shows the counterexample to induction, labelled as possibly unreachable.

Symbolic parameters (`SymbolicParam`) are left unknown within a range; a violation names the
value that breaks the spec, and with `sweep` the engine lists every value that does within
the bound (ParameterAnswer). The formulas come from ownership.interpret.smt, which reads the
symbolic tracer's graphs: no action is written a second time.

z3 is imported lazily (ownership.interpret.smt): importing this module does not load it, so
`ownership check` with the explicit engine never pays for it. This module never prints;
progress goes to a reporter.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import limits
from ..errors import InternalError, SpecError
from ..interpret.concrete import Concrete, Flag
from ..kernel import PROPERTIES
from ..lang.model import Binding, Model
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import Trace, build_trace

if TYPE_CHECKING:
    from ..interpret.smt import Encoding, SymbolicParam

#: The default number of induction steps `prove` tries (1, 2, ... up to this).
DEFAULT_K = 20

#: The default bound of `ownership check --engine bmc` without --max-depth, in steps.
DEFAULT_DEPTH = 20

#: With `sweep`, stop listing violating parameter values after this many.
SWEEP_LIMIT = 64


# --------------------------------------------------------------------------- results




@dataclass(frozen=True)
class SymbolicCoverage(Coverage):
    """What a symbolic run covered: executions up to a depth, or every depth by induction.

    `states` and `transitions` stay 0: a symbolic engine does not enumerate states."""

    method: str = "bmc"            # "bmc" | "k-induction"
    k: int | None = None           # the k that proved the properties
    queries: int = 0

    def describe(self) -> str:
        if self.complete and self.method == "k-induction":
            return f"every reachable state at every depth (proved by k-induction with k = {self.k})"
        if self.complete:
            return (f"every execution: none is longer than {self.depth} steps, and every execution of at"
                    f" most {self.depth} steps was checked symbolically")
        if self.stopped_by == "violation":
            return f"every execution of fewer than {self.depth} steps, symbolically, before the violation at step {self.depth}"
        bound = self.bound_depth or 0
        if self.stopped_by == "induction-failed":
            return (f"every execution of at most {bound} steps (no violation within {bound} steps);"
                    f" induction failed for every k up to {self.k}, so longer executions are not covered")
        if self.stopped_by == "max-depth":
            return f"every execution of at most {bound} steps, symbolically: no violation within {bound} steps; longer executions were not checked"
        return f"every execution of at most {bound} steps, symbolically (stopped by {self.stopped_by}; longer executions were not checked)"

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out.update({"method": self.method, "k": self.k, "queries": self.queries})
        return out


@dataclass
class ParameterOutcome:
    """One assignment of the symbolic parameters that violates, and its shortest counterexample."""

    values: dict[str, int]
    depth: int
    property: str


@dataclass
class ParameterAnswer:
    """Which values of the symbolic parameters break the spec, and what holds for the rest."""

    params: list[SymbolicParam]
    violating: list[ParameterOutcome]
    rest: str              # what holds for every other value: "no violation within K steps", ...
    capped: bool = False   # the listing stopped at SWEEP_LIMIT values

    def safe_values(self) -> list[tuple[int, int]] | None:
        """For one parameter: the ranges of values not found violating."""
        if len(self.params) != 1:
            return None
        p = self.params[0]
        bad = {o.values[p.name] for o in self.violating}
        return _ranges([v for v in range(p.lo, p.hi + 1) if v not in bad]) if p.hi - p.lo < 1 << 16 else None

    def describe(self) -> str:
        """The answer in words, e.g. `prefill_pool in 1..2: stale-read in 6 steps; 3..8: no ...`."""
        lines = []
        if len(self.params) == 1:
            name = self.params[0].name
            by_result: dict[tuple[int, str], list[int]] = {}
            for o in self.violating:
                by_result.setdefault((o.depth, o.property), []).append(o.values[name])
            for (depth, prop), values in sorted(by_result.items()):
                lines.append(f"{name} in {_show_ranges(_ranges(sorted(values)))}: {prop} (shortest counterexample: {depth} steps)")
            safe = self.safe_values()
            if safe is None or safe:
                where = _show_ranges(safe) if safe else "every other value"
                lines.append(f"{name} in {where}: {self.rest}")
        else:
            for o in self.violating:
                vals = ", ".join(f"{k}={v}" for k, v in o.values.items())
                lines.append(f"{vals}: {o.property} (shortest counterexample: {o.depth} steps)")
            lines.append(f"every other combination in {', '.join(p.show() for p in self.params)}: {self.rest}")
        if self.capped:
            lines.append(f"(listing stopped after {SWEEP_LIMIT} violating values; more may violate)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "params": {p.name: [p.lo, p.hi] for p in self.params},
            "violating": [{"values": o.values, "depth": o.depth, "property": o.property} for o in self.violating],
            "rest": self.rest,
            "capped": self.capped,
        }


def _ranges(values: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def _show_ranges(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in ranges)


@dataclass
class InductionFailure:
    """A counterexample to induction: k steps that keep every property from a state that may be
    unreachable, into a state that breaks one. Not a bug by itself (docs/engines.md)."""

    k: int
    states: list[tuple[int, ...]]   # k + 1 states (k + 2 when the failure is a step's flag)
    bindings: list[Binding]
    property: str
    message: str
    params: dict[str, int]
    trace: Trace                    # the same run as a Trace; its first state is NOT the initial state
    hint: str

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "property": self.property,
            "message": self.message,
            "params": self.params,
            "possibly_unreachable": True,
            "steps": [{"action": s.action, "args": s.args, "state": _jsonable(s.state)} for s in self.trace.steps],
            "hint": self.hint,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, frozenset | set):
        return sorted(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


@dataclass
class SymbolicResult(CheckResult):
    """A CheckResult of the symbolic engine, with what only it can say."""

    symbolic: list[SymbolicParam] = field(default_factory=list)
    witness: dict[str, int] = field(default_factory=dict)   # the symbolic parameters' values in the trace
    witness_model: Model | None = None                      # the model at those values (the trace's)
    parameters: ParameterAnswer | None = None
    k: int | None = None                                    # prove: the k that proved it
    cti: InductionFailure | None = None                     # prove: why induction failed


# --------------------------------------------------------------------------- the solver


class _Stop(Exception):
    """A query came back unknown, time ran out or the user pressed Ctrl-C: inconclusive."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Solver:
    """One incremental z3 solver with a deadline; `unknown` raises _Stop, never passes."""

    def __init__(self, deadline: float | None, counter: list[int]) -> None:
        import z3

        self.z3 = z3
        self.solver = z3.SolverFor("QF_BV")
        # NOTE(sat-phase): the SAT solver under QF_BV tries false first for every decision.
        # The unrolling's choices are mostly conditions that a step does NOT take (a binding
        # is not the one chosen, a page is not in a set), so this finds the refutations of the
        # deep queries faster: sglang_pd at 3 requests and 6 decode pages, depth 11 in about
        # 0.8 of the CPU time of z3's default phase caching (python benchmarks/bmc.py --orders).
        # A heuristic only: the answers are the same.
        self.solver.set("sat.phase", "always_false")
        self.deadline = deadline
        self.counter = counter
        self.model: Any = None

    def add(self, *constraints: Any) -> None:
        self.solver.add(*constraints)

    def sat(self, *extra: Any) -> bool:
        """Whether the assertions (and `extra`, for this query only) are satisfiable."""
        z3 = self.z3
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise _Stop("max-seconds")
            self.solver.set("timeout", max(1, int(left * 1000)))
        self.counter[0] += 1
        if extra:
            self.solver.push()
            self.solver.add(*extra)
        try:
            r = self.solver.check()
            if r == z3.sat:
                self.model = self.solver.model()
        except z3.Z3Exception:
            if limits.cancelled():  # NOTE(cancel-in-c): Ctrl-C cut the query short
                raise _Stop("interrupt") from None
            raise
        finally:
            if extra:
                self.solver.pop()
        if limits.cancelled():  # (an answer of a cancelled query is no answer)
            raise _Stop("interrupt")
        if r == z3.sat:
            return True
        if r == z3.unsat:
            return False
        reason = self.solver.reason_unknown()
        if self.deadline is not None and time.monotonic() >= self.deadline - 0.01:
            raise _Stop("max-seconds")
        if reason in ("interrupted from keyboard", "canceled"):
            raise _Stop("interrupt")
        raise _Stop(f"solver unknown ({reason})")


# --------------------------------------------------------------------------- unrolling


def _priority(enc: Encoding, *, lemmas: bool) -> list[tuple[str, bool]]:
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


class _CanonicalOrder:
    """Which orders of steps the unrolling explores: one execution for every set of executions
    that no query can tell apart (NOTE(canonical-order)).

    NOTE(canonical-order): at depth k a query asks about the last step (its flags) and the
    last two states (spec errors from s_{k-1}, the properties of s_k), never about the steps
    and states in between, and every execution of fewer than k steps is known to be clean
    already (no flag, no failing property, no spec error: the depths settled). So of the
    executions whose first k - 1 steps reach the same state and whose last step is the same
    binding, one is enough; for the queries about s_k alone, one of those whose k steps reach
    the same state. Two reductions keep one:

    - Commuting steps (Encoding.commuting, NOTE(footprints): neither writes a slot that the
      other reads or writes): two adjacent ones swapped are an execution again, to the same
      state. Each word of steps can be rearranged so into its lexicographic normal form, by
      binding index (Anisimov and Knuth): no step a comes after a run of steps that all commute
      with it and whose first is a larger binding than a (else a could move in front of them
      and the word would be smaller). The unrolling keeps only prefixes in that form:
      `later[p][a]` says that binding a at step p + 1 would break it. A rearranged prefix is an
      execution of the same length whose states before the last are each reached in fewer
      than k steps, so they and its steps are clean: it satisfies everything the solver holds
      about the earlier depths.
    - Interchangeable requests (ownership.engines.symmetry.equivariance_problem decides it
      from the graphs, as for `--symmetry`): renaming the requests by a permutation π maps an
      execution to an execution of the same length, a flag or a failing property to the same
      property, a spec error to a spec error. The unrolling keeps only prefixes w with
      w <= π(w), lexicographically by binding index, for each π it lists (the lex-leader
      constraint; `same[p][j]` says that w and π_j(w) agree up to step p).

    Together they keep, of all the prefixes that commuting swaps and renamings make of one,
    the least word w*. It satisfies both rules: it is the least of its own rearrangements, and
    π(w*) is one of the words (the commuting relation is cut down until renaming keeps it, so
    a rearrangement renamed is a rearrangement of the renamed word), hence w* <= π(w*). The
    last step comes along renamed by the same π. So a query at depth k is satisfiable exactly
    when it is without the reductions: the same verdict, the same shortest length and the same
    first property at it, and the same states reachable in k steps up to renaming (the
    sometimes-properties, whether the unrolling ends). A counterexample may be another
    shortest one than the explicit engine's. Not used with liveness (a lasso needs the states
    in between); no renamings with symbolic parameters or lemmas, which the symmetry check
    does not cover."""

    def __init__(self, enc: Encoding, *, symmetric: bool) -> None:
        import itertools

        from .symmetry import binding_map

        model = enc.model
        n = len(model.bindings)
        maps: list[list[int]] = []
        if symmetric:
            ident = tuple(range(1, model.requests + 1))
            if model.requests <= 5:
                perms = [p for p in itertools.permutations(ident) if p != ident]
            else:  # (adjacent transpositions: any set of renamings is sound, these are few)
                perms = [ident[:i] + (ident[i + 1], ident[i]) + ident[i + 2:] for i in range(len(ident) - 1)]
            for perm in perms:
                bmap = binding_map(model, perm)
                if bmap is not None:
                    maps.append(bmap)
        commute = {(a, b) for a, others in enumerate(enc.commuting()) for b in others}
        while maps:  # the largest part of the relation that renaming keeps
            kept = {(a, b) for a, b in commute if all((m[a], m[b]) in commute for m in maps)}
            if kept == commute:
                break
            commute = kept
        self.enc = enc
        self.n = n
        #: for each binding a, the larger bindings that commute with it, and all that do
        self.larger = [[b for b in range(a + 1, n) if (a, b) in commute] for a in range(n)]
        self.commuting = [[b for b in range(n) if (a, b) in commute] for a in range(n)]
        #: for each renaming: the bindings it maps to a smaller one, and those it keeps
        self.maps = [([b for b in range(n) if m[b] < b], [b for b in range(n) if m[b] == b]) for m in maps]
        self.later: list[list[Any]] = []
        self.same: list[list[Any]] = []
        self.defs: list[list[Any]] = []

    def __bool__(self) -> bool:
        return any(self.larger) or bool(self.maps)

    def define(self, p: int, act: Any) -> list[Any]:
        """The definitions of `later[p]` and `same[p]` from the binding `act` of step p
        (0-based; the positions are defined in order, and asked again get the same list)."""
        import z3

        if p < len(self.defs):
            return self.defs[p]
        assert p == len(self.defs), "positions are defined in order"
        out: list[Any] = []
        later: list[Any] = []
        for a in range(self.n):
            if not self.commuting[a]:
                later.append(None)
                continue
            here = z3.Or([act == b for b in self.larger[a]] or [z3.BoolVal(False)])
            before = self.later[p - 1][a] if p else None
            if before is not None:
                here = z3.Or(here, z3.And(z3.Or([act == b for b in self.commuting[a]]), before))
            v = z3.Bool(f"later!{p}!{a}")
            out.append(v == here)
            later.append(v)
        same: list[Any] = []
        for i, (_, kept) in enumerate(self.maps):
            v = z3.Bool(f"same!{p}!{i}")
            agree = z3.Or([act == b for b in kept] or [z3.BoolVal(False)])
            out.append(v == (z3.And(self.same[p - 1][i], agree) if p else agree))
            same.append(v)
        self.later.append(later)
        self.same.append(same)
        self.defs.append(out)
        return out

    def restrict(self, p: int, act: Any) -> list[Any]:
        """Step p's binding `act` keeps the prefix canonical (needs `define(p - 1)`)."""
        import z3

        if p == 0:
            return [z3.And([act != b for b in smaller]) for smaller, _ in self.maps if smaller]
        out = [z3.Implies(act == a, z3.Not(v)) for a, v in enumerate(self.later[p - 1]) if v is not None]
        for (smaller, _), agreed in zip(self.maps, self.same[p - 1]):
            if smaller:
                out.append(z3.Implies(agreed, z3.And([act != b for b in smaller])))
        return out


def _interchangeable(enc: Encoding, *, symbolic: Sequence[SymbolicParam], lemmas: bool) -> bool:
    """Whether the unrolling may keep one renaming of the requests (NOTE(canonical-order)):
    the symmetry check of `--symmetry` passes, and no symbolic parameter or lemma (which it
    does not check) is in play."""
    model = enc.model
    if symbolic or (lemmas and enc.lemmas) or model.requests < 2:
        return False
    from ..interpret.batch import BatchModel
    from .symmetry import equivariance_problem

    try:  # (the check reads the batch interpreter's graph; a wide page set's every limb: NOTE(wide-symmetry))
        problem = equivariance_problem(model, BatchModel(model))
    except Exception:  # a spec that graph cannot hold is explored under every renaming: still exact
        return False
    return problem is None


class _Unrolling:
    """Executions from the initial state, settled one depth at a time (the BMC base case).

    After `next()` settles depth k, every execution of at most k steps is free of violations
    and of spec errors, and the solver holds s_0..s_k with the transitions between them."""

    def __init__(self, enc: Encoding, solver: _Solver, *, lemmas: bool, reduce: bool = False,
                 symmetric: bool = False) -> None:
        self.enc = enc
        self.solver = solver
        self.lemmas = lemmas
        order = _CanonicalOrder(enc, symmetric=symmetric) if reduce else None
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
        except _Stop:
            return None
        return None

    def next(self) -> tuple[str, int, str | None]:
        """Check the next depth k: ("violation", k, property) with its model in `solver.model`,
        ("step-error", k, None) when a step into k raises a spec error, ("state-error", k, None)
        when a property of s_k does, ("clear", k, None), or ("exhausted", k, None) when no
        execution has k steps.

        NOTE(first-event) in ownership.engines.explicit: at one depth a violation wins over a
        spec error. So the step into k is checked for the kernel's flags, then the state s_k
        for its properties, and only then both for spec errors. A depth found violated stays
        unsettled, so a caller may add constraints (block a parameter value) and ask again."""
        import z3

        enc = self.enc
        k = self.settled + 1
        self._vars(k)
        order = _priority(enc, lemmas=self.lemmas)
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


# --------------------------------------------------------------------------- concrete checks


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


def _counterexample(enc: Encoding, run: _Unrolling, k: int, *, lemmas: bool,
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


def _spec_error(enc: Encoding, run: _Unrolling, k: int, kind: str, *, lemmas: bool) -> SpecError:
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


def _lasso(enc: Encoding, run: _Unrolling, k: int, i: int) -> tuple[Trace, Model, dict[str, int]]:
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


def _liveness_error(enc: Encoding, run: _Unrolling, k: int) -> SpecError:
    """The spec error a liveness property raises in the state z3 found at depth k, raised by
    the concrete interpreter there, with the steps that lead to it."""
    from . import liveness

    model, _, states, bindings = _extract(enc, run.solver.model, run.states, run.acts, k)
    _run(model, states, bindings)
    try:
        liveness.instances(model, Concrete(model), liveness.Graph.of_states(states[-1:]))
    except SpecError as e:
        e.steps = [b.label() for b in bindings]
        return e
    raise _disagree(f"a liveness property raises a spec error at depth {k} symbolically, not concretely")


# --------------------------------------------------------------------------- check


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
    from ..errors import UsageError
    from ..interpret.smt import encode
    from .lasso import Lassos

    if liveness and symbolic:
        raise UsageError("liveness with --symbolic parameters is not supported: give the parameters values"
                         " (--param), or leave the liveness properties out with --skip")
    start = time.monotonic()
    deadline = None if max_seconds is None else start + max_seconds
    enc = encode(model, symbolic=symbolic)
    counter = [0]
    solver = _Solver(deadline, counter)
    live = bool(liveness and enc.live)  # a lasso needs every order of steps (NOTE(canonical-order))
    reduce = canonical and not live
    run = _Unrolling(enc, solver, lemmas=False, reduce=reduce,
                     symmetric=reduce and _interchangeable(enc, symbolic=symbolic, lemmas=False))
    lassos = Lassos(enc, model, run.states, run.acts) if live else None
    pending = [name for name, _ in enc.sometimes] if sometimes else []
    reached: dict[str, bool | None] = {name: None for name, _ in enc.sometimes}
    first: tuple[Trace, Model, dict[str, int], int] | None = None
    outcomes: list[ParameterOutcome] = []
    stopped_by: str | None = None
    capped = False
    try:
        while True:
            kind, k, prop = run.next()
            if kind in ("step-error", "state-error"):
                raise _spec_error(enc, run, k, kind, lemmas=False)
            if kind == "violation":
                trace, wmodel, values = _counterexample(enc, run, k, lemmas=False, engine="bmc")
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
                    raise _liveness_error(enc, run, k)
                i = lassos.find(k, solver.sat, lambda: solver.model)
                if i is not None:
                    trace, wmodel, values = _lasso(enc, run, k, i)
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
                stopped_by = "max-depth"
                break
    except _Stop as stop:
        stopped_by = stop.reason
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    except Exception as e:
        if not _cut_short(e):
            raise
        stopped_by = "interrupt"
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


# --------------------------------------------------------------------------- prove


_HINT = (
    "The first state of this run may be unreachable from the initial state: induction with k = {k}"
    " cannot rule it out, so this is not (yet) a bug. Either add a lemma (a @lemma method,"
    " from ownership import lemma) that is false in that state and true in every"
    " reachable one, or raise --k: with loop-free runs, k-induction succeeds once k exceeds the"
    " longest loop-free execution."
)


class _Induction:
    """The induction step, one k at a time: k steps from any in-domain state that keep every
    property (and lemma), into a state that breaks one. States are pairwise distinct."""

    def __init__(self, enc: Encoding, solver: _Solver) -> None:
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
        from ..interpret.smt import SPEC_ERROR

        enc = self.enc
        model, values, states, bindings = _extract(enc, self.solver.model, self.states, self.acts, k)
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
        from ..errors import UsageError

        raise UsageError(f"--k {k}: k-induction needs k >= 1")
    start = time.monotonic()
    deadline = None if max_seconds is None else start + max_seconds
    enc = encode(model, symbolic=symbolic, lemmas=True)
    counter = [0]
    base = _Unrolling(enc, _Solver(deadline, counter), lemmas=True, reduce=True,
                      symmetric=_interchangeable(enc, symbolic=symbolic, lemmas=True))
    step = _Induction(enc, _Solver(deadline, counter))
    pending = [name for name, _ in enc.sometimes]
    reached: dict[str, bool | None] = {name: None for name in pending}
    cti: InductionFailure | None = None
    stopped_by: str | None = None

    def result(verdict: Verdict, cov: SymbolicCoverage, **kw: Any) -> SymbolicResult:
        return SymbolicResult(verdict, cov, "k-induction", sometimes=dict(reached), symbolic=list(symbolic), **kw)

    try:
        for i in range(k + 1):
            kind, depth, _ = base.next()
            if kind in ("step-error", "state-error"):
                raise _spec_error(enc, base, depth, kind, lemmas=True)
            if kind == "violation":
                trace, wmodel, values = _counterexample(enc, base, depth, lemmas=True, engine="k-induction")
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
        stopped_by = "induction-failed"
    except _Stop as stop:
        stopped_by = stop.reason
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    except Exception as e:
        if not _cut_short(e):
            raise
        stopped_by = "interrupt"
    settled = max(base.settled, 0)
    cov = SymbolicCoverage(0, 0, settled, complete=False, stopped_by=stopped_by, seconds=time.monotonic() - start,
                           bound_depth=settled if base.settled >= 0 else None, method="k-induction",
                           k=k if stopped_by == "induction-failed" else None, queries=counter[0])
    return result(Verdict.INCONCLUSIVE, cov, cti=cti)


# --------------------------------------------------------------------------- entry points


def _cut_short(e: Exception) -> bool:
    """Whether `e` is z3's answer to a call that Ctrl-C cancelled (NOTE(cancel-in-c)): an
    interrupted simplifier can leave a formula the solver then refuses ("not supported, apply
    simplifier"), a model can be missing. An interrupt, not a bug of ownership."""
    return type(e).__name__ == "Z3Exception" and limits.cancelled()



@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C reaches Python in every z3 call, and stops a long one at once (NOTE(cancel-in-c)
    in ownership/limits.py): z3's own SIGINT handler is off inside (it took the signal, and
    code that reads an unknown answer as "maybe", as the footprints do, went on), and z3's
    interrupt is called from another thread instead."""
    import z3

    z3.set_param("ctrl_c", False)
    try:
        with limits.cancelled_at_interrupt(z3.main_ctx().interrupt):
            yield
    finally:
        z3.set_param("ctrl_c", True)



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
    from ..errors import UsageError
    from ..interpret.smt import parse_symbolic

    if max_states is not None:
        raise UsageError("--max-states limits the explicit engine; bound the bmc engine with --max-depth (steps)")
    params = parse_symbolic(symbolic, model.spec_cls, model.env)
    with _interruptible():
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
    from ..interpret.smt import parse_symbolic

    params = parse_symbolic(symbolic, model.spec_cls, model.env)
    with _interruptible():
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
    "DEFAULT_DEPTH", "DEFAULT_K", "InductionFailure", "ParameterAnswer", "ParameterOutcome",
    "SymbolicCoverage", "SymbolicResult", "check", "confirm_trace", "prove",
    "run", "run_proof",
]
