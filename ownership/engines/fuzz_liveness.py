"""Liveness on the fuzz engine's random runs, bounded (NOTE(bounded-liveness)).

`Obligations` evaluates a model's liveness obligations state by state with the semantics of
ownership.engines.liveness, judges a path (its first violation, of safety or liveness) and
turns a failure into the explicit engine's counterexample; `RunObligations` follows one run
step by step; `liveness_texts` words what the runs showed of each property (a bounded answer,
never "holds"), for one check or summed over a swarm's searches.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InternalError
from ..interpret.store import Packed
from ..lang.model import Binding, Model
from ..trace import Trace
from .fuzz_explorer import Explorer, Node, RunFailed, primary


@dataclass
class LiveFailure:
    """A liveness obligation that a run shows failing: which one, the step of its trigger,
    and the step the run loops back to (NOTE(bounded-liveness))."""

    name: str          # the property
    instance: int      # index into Obligations.instances
    trigger: int       # the step at which the obligation began (p held, q did not)
    loop: int | None   # the last step equals this one (== the last step: a dead end); None:
                       # a finite run on which a bounded response came too late


class Obligations:
    """The liveness obligations of a model on fuzz's runs, evaluated state by state with the
    semantics of ownership.engines.liveness (its `instances`, on one state at a time).

    NOTE(bounded-liveness): a random run shows a liveness property failing only where the
    run is itself a behaviour on which it fails: it stops at a dead end (no action enabled)
    with an obligation pending; it comes back to a state with q false all along, around a
    cycle that takes every fair binding it must (weak: enabled in all its states; strong:
    in one); or, for `leads_to(within=N)`, q does not hold in the N steps after p. A run
    that ends with an obligation still pending shows nothing (q may hold one step later):
    "not satisfied within N steps" is bounded, never violated. Every failure reported is
    replayed with liveness.violates first; one that does not violate there is our bug."""

    def __init__(self, model: Model, explorer: Explorer) -> None:
        from . import liveness, reachable

        self.model = model
        self.explorer = explorer
        self.evaluate = liveness.instances
        self.one_state = reachable.Graph.of_states
        self.instances = self.evaluate(model, explorer.interp, self.one_state([model.initial]))
        self.bounds = [model.within.get(inst.name) for inst in self.instances]
        self.eventually = [inst.kind == "eventually" for inst in self.instances]  # p: the initial state only
        self.fair = [(b, binding.action.fair) for b, binding in enumerate(model.bindings) if binding.action.fair]
        names = model.liveness_checked()
        self.pending_runs = dict.fromkeys(names, 0)   # counted runs in which it was pending at some step
        self.ended_pending = dict.fromkeys(names, 0)  # counted runs that ended with it still pending

    def values(self, node: Node) -> tuple[tuple[bool, bool], ...]:
        """(p, q) of every obligation in the state of `node` (computed once per node)."""
        if node.live is None:
            got = self.evaluate(self.model, self.explorer.interp, self.one_state([node.state]))
            if len(got) != len(self.instances):
                raise InternalError("fuzz: the liveness obligations differ from one state to another")
            node.live = tuple((inst.p[0], inst.q[0]) for inst in got)
        return node.live

    def judge(self, path: tuple[int, ...]) -> RunFailed | None:
        """Replay `path` as a run goes: its first violation, of safety or liveness (safety
        first at the same step), cut at the step that shows it; None when there is none, or
        a binding on the way is not enabled."""
        explorer = self.explorer
        run = RunObligations(self)
        node: Node | None = explorer.root
        for i in range(len(path) + 1):
            if i:
                node = explorer.child(path[:i - 1], node, path[i - 1])  # type: ignore[arg-type]
                if node is None:
                    return None
            flags = explorer.flags_at(node)  # type: ignore[arg-type]
            if flags:
                return RunFailed(primary(flags), path[:i], flags)
            got = run.arrive(path[:i], node)  # type: ignore[arg-type]
            if got is not None:
                return RunFailed(got.name, path[:i], got)
        return None

    def trace(self, states: list[tuple[int, ...]], bindings: list[Binding], failure: LiveFailure) -> Trace:
        """The counterexample of `failure` on the run `states`, worded as the explicit engine
        words it; InternalError unless liveness.violates replays it as a violation."""
        from . import liveness

        model = self.model
        inst = self.instances[failure.instance]
        if not liveness.violates(model, states, bindings, failure.loop, inst.name):
            raise InternalError(f"fuzz: the run it found violating {inst.name} ({len(states) - 1} steps, loop"
                                f" {failure.loop}) does not violate it when replayed (liveness.violates)")
        return liveness.lasso_trace(model, inst, states, bindings, failure.loop, failure.trigger, engine="fuzz")

    def ended(self, run: RunObligations, normally: bool) -> None:
        """Count a finished run: the properties pending in it, and those still pending at its end."""
        for name in run.was_pending:
            self.pending_runs[name] += 1
        if normally:
            for name in {self.instances[k].name for k, t in enumerate(run.since) if t is not None}:
                self.ended_pending[name] += 1

    def counts(self) -> dict[str, tuple[str, int, int]]:
        """Per property: its kind, the counted runs in which it was pending, and those that
        ended with it still pending (what `texts` words; a swarm sums them over searches)."""
        kinds = {inst.name: inst.kind for inst in reversed(self.instances)}  # (the first of each name)
        return {name: (kinds.get(name, "leads-to"), pending, self.ended_pending[name])
                for name, pending in self.pending_runs.items()}

    def texts(self, runs: int, steps: int, found: str | None) -> dict[str, str]:
        """What the runs showed of each liveness property, in words (liveness_texts)."""
        return liveness_texts(self.counts(), runs, steps, found)


def liveness_texts(counts: dict[str, tuple[str, int, int]], runs: int, steps: int, found: str | None,
                   *, across: str = "") -> dict[str, str]:
    """What the runs showed of each liveness property, in words: "violated", or how far
    they went without a violation (a bounded answer, never "holds"). `counts`: per property,
    Obligations.counts(); `found`: the property whose violation stopped the search, if any;
    `across`: words after the step bound (a swarm's " across 4 searches")."""
    out = {}
    for name, (kind, pending, ended) in counts.items():
        if name == found:
            out[name] = "violated"
            continue
        text = f"not violated in {runs:,} random run{'' if runs == 1 else 's'} of at most {steps} steps{across}"
        if found:
            out[name] = text + (f", up to the violation of {found} that stopped the search (bounded: fuzz"
                                " cannot show that something never happens)")
            continue
        text += " (bounded: fuzz cannot show that something never happens)"
        if not pending:
            text += ("; its q held from the start of every run" if kind == "eventually"
                     else "; it was never pending (its p never held without its q)")
        else:
            text += (f"; {ended:,} run{'' if ended == 1 else 's'} ended with it pending"
                     f" (of {pending:,} in which it was pending)")
        out[name] = text
    return out


class RunObligations:
    """One run's liveness obligations, followed step by step (NOTE(bounded-liveness)): for
    each, the step since which it is pending (p held there and q has not held since), the
    last step at which its q held, and the steps at which each state was seen."""

    def __init__(self, obligations: Obligations) -> None:
        n = len(obligations.instances)
        self.obligations = obligations
        self.since: list[int | None] = [None] * n
        self.last_q = [-1] * n
        self.nodes: list[Node] = []
        self.seen: dict[Packed, list[int]] = {}
        self.was_pending: set[str] = set()

    def arrive(self, path: tuple[int, ...], node: Node) -> LiveFailure | None:
        """Follow the run into `node`, reached by `path` (step len(path)); the failure the run
        shows there, if any."""
        ob = self.obligations
        u = len(self.nodes)
        self.nodes.append(node)
        since = self.since
        for k, (p, q) in enumerate(ob.values(node)):
            if q:
                self.last_q[k] = u
                since[k] = None
            elif p and since[k] is None and (u == 0 or not ob.eventually[k]):
                since[k] = u
                self.was_pending.add(ob.instances[k].name)
        earlier = self.seen.setdefault(node.packed, [])
        got = self._failure(path, node, u, earlier) if any(t is not None for t in since) else None
        earlier.append(u)
        return got

    def _failure(self, path: tuple[int, ...], node: Node, u: int, earlier: list[int]) -> LiveFailure | None:
        """With some obligation pending at step u: a bounded response too late, a dead end,
        or a fair cycle back to an earlier step with q false around it (in this order)."""
        ob = self.obligations
        since = self.since
        for k, t in enumerate(since):
            bound = ob.bounds[k]
            if t is not None and bound is not None and u - t >= bound:
                return LiveFailure(ob.instances[k].name, k, t, None)  # q false at steps t..t+bound
        explorer = ob.explorer
        if all(explorer.first_enabled(path, node, a) is None for a in range(len(explorer.slices))):
            k = next(k for k, t in enumerate(since) if t is not None)
            return LiveFailure(ob.instances[k].name, k, since[k], u)  # type: ignore[arg-type]
        for i in reversed(earlier):  # the shortest cycle first; a longer one may be fair
            # q must be false from min(trigger, i) to u: since q has not held since the
            # trigger, that is q false since i (fewer obligations qualify as i goes down)
            open_ = [k for k, t in enumerate(since) if t is not None and self.last_q[k] < i]
            if not open_:
                break
            fair: bool | None = None
            for k in open_:
                if ob.bounds[k] is None and fair is None:
                    fair = self._fair(path, i, u)
                if ob.bounds[k] is not None or fair:
                    return LiveFailure(ob.instances[k].name, k, since[k], i)  # type: ignore[arg-type]
        return None

    def _fair(self, path: tuple[int, ...], i: int, u: int) -> bool:
        """Whether the cycle of steps i..u (the state of step u is that of step i) takes every
        fair binding it must: a weakly fair one enabled in all its states, a strongly fair
        one enabled in some."""
        taken = set(path[i:u])
        explorer = self.obligations.explorer
        for b, how in self.obligations.fair:
            if b in taken:
                continue
            enabled = (explorer.child(path[:k], self.nodes[k], b) is not None for k in range(i, u))
            if (all(enabled) if how == "weak" else any(enabled)):
                return False
        return True
