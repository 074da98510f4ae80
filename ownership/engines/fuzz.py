"""The fuzz engine: a Hypothesis stateful test generated from a Model, for pools too large to explore.

This module is the engine's entry point (`check`, and `Seen`, what a check covered); its parts
live by job, each module importing only those before it:

- ownership/engines/fuzz_explorer.py: the model run along paths of bindings, states
  remembered by path, disabled bindings remembered (`Explorer`, `Node`, `RunFailed`);
- ownership/engines/fuzz_shrink.py: shrinking a failing path (`PathShrinker`);
- ownership/engines/fuzz_liveness.py: liveness obligations followed on the runs
  (`Obligations`, `RunObligations`, `LiveFailure`, `liveness_texts`);
- ownership/engines/fuzz_search.py: the Hypothesis state machine, its settings and seed, and
  running the search (`MachineBase`, `machine_class`, `build_settings`, `run_search`).

The names the rest of the code uses are all importable from here (`__all__`).

A `RuleBasedStateMachine` is built from the spec (users never subclass it). Its rule fires
a burst of steps (NOTE(bursts)) chosen by one draw: a word per step, which picks an enabled
action (as if Hypothesis chose among rules for the enabled actions, with their weights and the
run's swarm flags), its arguments from their finite domains, and the first enabled binding
from there on. After every step the kernel's flags and the state properties (the spec's
invariants, the kernel's leak) are checked, exactly as the explicit engine checks them. Steps
cost what they change: a binding found disabled is known disabled wherever what it read is
unchanged, or has values it was disabled with before (NOTE(disabled-inherited),
NOTE(guard-memo)), and replayed prefixes are looked up (NOTE(memo-by-path)).

A violating run is then shrunk on the level of the model (NOTE(shrink-paths)): steps are
deleted, requests renamed and arguments lowered for as long as the run still violates the
same property, and the result is the same `Trace` as every engine's (engine "fuzz"),
replayable with `ownership replay`.

With `liveness=True` the spec's liveness properties are followed on every run too, bounded
(NOTE(bounded-liveness)): a run is a counterexample only where it is itself a behaviour on
which a property fails (a dead end or a fair cycle with an obligation pending, a bounded
response too late); a run that merely ends with one pending shows nothing.

A pass is never `verified`: the verdict is `bounded` by the runs and steps actually executed,
and the coverage names the actions that never fired. The example database (a directory under
.ownership/ by default) replays known failures first; the "ci" profile is derandomised.
Progress goes to a reporter; this module never prints (Hypothesis's own output is captured).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings

from ..errors import LimitReached, UsageError
from ..lang.model import Binding, Model
from ..progress import Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace
from .fuzz_explorer import ActionSlice, Before, Explorer, Node, RunFailed, action_slices, primary
from .fuzz_liveness import LiveFailure, Obligations, RunObligations, liveness_texts
from .fuzz_search import (
    BURST,
    DEFAULT_DATABASE,
    DEFAULT_RUNS,
    DEFAULT_STEPS,
    PROFILES,
    USE_DEFAULT_DATABASE,
    WORD,
    MachineBase,
    Search,
    TimeUp,
    build_settings,
    bursts,
    choose_seed,
    machine_class,
    model_key,
    run_search,
)
from .fuzz_shrink import PathShrinker

#: What the rest of the code takes from the fuzz engine: its entry point and result (`check`,
#: `Seen`), and the parts that ownership.bridges.testing and the swarm build on, from the modules
#: that hold them.
__all__ = [
    "BURST", "DEFAULT_DATABASE", "DEFAULT_RUNS", "DEFAULT_SHRINK_SECONDS", "DEFAULT_STEPS", "PROFILES",
    "USE_DEFAULT_DATABASE", "WORD", "ActionSlice", "Before", "Explorer", "LiveFailure", "MachineBase", "Node",
    "Obligations", "PathShrinker", "RunFailed", "RunObligations", "Search", "Seen", "TimeUp", "action_slices",
    "build_settings", "bursts", "check", "choose_seed", "liveness_texts", "machine_class", "model_key", "primary",
    "run_search",
]

#: How long shrinking a violation may take before the run found so far is reported as it is.
DEFAULT_SHRINK_SECONDS = 120.0


@dataclass(frozen=True)
class Seen:
    """What one check covered, as sets, so that several checks can be merged (the swarm of
    ownership.engines.swarm): set by `check` as `result.seen`. `states` are the hashes of the
    states reached (a Packed state's hash, ownership.interpret.store: the same in every process)."""

    states: frozenset[int] = frozenset()
    fired: frozenset[str] = frozenset()
    enabled: frozenset[str] = frozenset()
    tried: frozenset[str] = frozenset()  # actions whose enabledness was looked at
    #: per liveness property followed: Obligations.counts() (kind, runs pending, runs ended pending)
    liveness: dict[str, tuple[str, int, int]] = field(default_factory=dict)


def check(
    model: Model,
    *,
    runs: int = DEFAULT_RUNS,
    steps: int = DEFAULT_STEPS,
    seed: int | None = None,
    database: Any = USE_DEFAULT_DATABASE,
    profile: str | settings | None = None,
    max_seconds: float | None = None,
    max_shrink_seconds: float | None = DEFAULT_SHRINK_SECONDS,
    reporter: Reporter | None = None,
    report_every: float = 0.5,
    liveness: bool = False,
    weights: dict[str, int] | None = None,
    generic_kernel: bool = False,
) -> CheckResult:
    """Fuzz `model` with Hypothesis: `runs` runs of at most `steps` steps each.

    `seed` makes the runs reproducible (without one, a seed is chosen and reported in the
    coverage, unless the profile is derandomised). `database`: a directory or Hypothesis
    ExampleDatabase that replays known failures first ("default": .ownership/examples;
    None: off). `profile`: "default", "ci" (derandomised, no database), a registered
    Hypothesis profile name, or a settings object. `max_seconds` stops the search for a
    violation (verdict inconclusive); `max_shrink_seconds` bounds shrinking one.

    `liveness`: also follow the model's liveness properties on every run (NOTE(bounded-
    liveness)): a run that shows one failing (a dead end or a fair cycle with the obligation
    pending, a bounded response too late) is a violation like any other; otherwise
    `result.liveness` says, per property, how far the runs went without one (bounded).

    `weights`: how many times each named action is offered to Hypothesis's choice of the next
    rule (1 when not named; at least 1, so that no enabled action is ruled out): a bias, as
    the searches of a swarm (ownership.engines.swarm) take to differ from one another.

    `generic_kernel`: step with the kernel's generic definition instead of the concrete
    interpreter's fast path (the same runs and result, slower: benchmarks/fuzz_scale.py).

    The result carries `result.seen` (a Seen): the sets behind its coverage, for merging."""
    if runs < 1 or steps < 1:
        raise UsageError(f"runs={runs}, steps={steps}: both must be at least 1")
    known = {decl.name for decl in model.spec_cls._actions.values()}
    for name, w in (weights or {}).items():
        if name not in known or not isinstance(w, int) or w < 1:
            raise UsageError(f"weights: {name}={w!r}: give actions of {model.spec_cls.__name__} a whole number"
                             " of at least 1")
    hsettings = build_settings(runs=runs, steps=steps, database=database, profile=profile)
    exact = seed is not None
    seed = choose_seed(seed, hsettings)
    start = time.monotonic()
    names = [decl.name for decl in model.spec_cls._actions.values()]
    search: Search | None = None
    failure: RunFailed | None = None
    stopped_by = "max-runs"
    try:
        # (at a million pages the initial state's checks alone take seconds: Ctrl-C and the
        # command's limits, ownership.limits, can stop them too)
        explorer = Explorer(model, generic_kernel=generic_kernel)
        search = Search(explorer, start, max_seconds, reporter, report_every, last_report=start)
        search.pending = [p.name for p in model.sometimes]
        if liveness and model.liveness_checked():
            search.obligations = Obligations(model, explorer)
        initial = explorer.root.state_flags or []
        if not initial:
            got = explorer.interp.sometimes_hits(model.initial, search.pending)
            search.reached.update(got)
            search.pending = [n for n in search.pending if n not in got]
        if initial:
            failure = RunFailed(primary(initial), (), initial)
        elif search.obligations is not None and (at_start := search.obligations.judge(())) is not None:
            failure = at_start  # a dead end at the start, or a response due at once
        elif model.bindings:
            failure = run_search(model, search, hsettings, seed, exact=exact, weights=weights)
    except LimitReached as e:
        stopped_by = e.reason
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    if search is not None and search.expired and failure is None:
        stopped_by = "max-seconds"

    def coverage(stop: str | None) -> Coverage:
        """What was tried, and only that: an action is listed as never fired, or never
        enabled, only once its enabledness was looked at in some state."""
        if search is None:
            return Coverage(0, 0, 0, complete=False, stopped_by=stop, seconds=time.monotonic() - start,
                            runs=0, seed=seed)
        never_fired = tuple(n for n in names if n in search.tried and n not in search.fired)
        return Coverage(len(search.seen), search.steps, search.longest, complete=False, stopped_by=stop,
                        seconds=time.monotonic() - start, runs=search.runs, never_fired=never_fired,
                        never_enabled=tuple(n for n in never_fired if n not in search.enabled), seed=seed)

    def seen(result: CheckResult) -> CheckResult:
        """The result with the sets behind its coverage (Seen)."""
        if search is not None:
            result.seen = Seen(frozenset(search.seen), frozenset(search.fired),  # type: ignore[attr-defined]
                               frozenset(search.enabled), frozenset(search.tried),
                               {} if search.obligations is None else search.obligations.counts())
        else:
            result.seen = Seen()  # type: ignore[attr-defined]
        return result

    if search is None:
        return seen(CheckResult(Verdict.INCONCLUSIVE, coverage(stopped_by), "fuzz",
                                sometimes={p.name: None for p in model.sometimes}))
    sometimes: dict[str, bool | None] = {p.name: (True if p.name in search.reached else None) for p in model.sometimes}
    obligations = search.obligations
    live: dict[str, Any] = {}  # CheckResult's liveness and fairness, when liveness was followed
    if obligations is not None:
        from .liveness import fairness_text

        live = {"liveness": obligations.texts(search.runs, steps, None if failure is None else failure.kind),
                "fairness": fairness_text(model)}
    if failure is None:
        verdict = Verdict.BOUNDED if stopped_by == "max-runs" else Verdict.INCONCLUSIVE
        return seen(CheckResult(verdict, coverage(stopped_by), "fuzz", sometimes=sometimes, **live))

    cov = coverage("violation")
    search.phase = "shrink"
    search.tick(force=True)

    def judge_safety(path: tuple[int, ...]) -> RunFailed | None:
        walked = explorer.walk(path)
        if walked is None or not walked[1]:
            return None
        nodes, flags = walked
        return RunFailed(primary(flags), path[:len(nodes) - 1], flags)

    # with liveness followed, a run fails at its first event, of safety or of liveness
    judge = judge_safety if obligations is None else obligations.judge

    # shrinking stops at max_shrink_seconds, and at max_seconds too (the whole check's limit)
    ends = [t for t in (None if max_shrink_seconds is None else time.monotonic() + max_shrink_seconds,
                        None if max_seconds is None else start + max_seconds) if t is not None]
    shrinker = PathShrinker(explorer.slices, judge, deadline=min(ends) if ends else None, on_try=search.tick)
    best = judge(failure.path) or failure
    try:
        best = shrinker.shrink(best)
    except KeyboardInterrupt:  # Ctrl-C or a limit while shrinking: report the shortest run so far
        best = shrinker.best or best
        shrinker.timed_out = True
    walked = explorer.walk(best.path)
    bindings: list[Binding] = [model.bindings[b] for b in best.path]
    if isinstance(best.detail, LiveFailure):
        assert walked is not None and not walked[1] and obligations is not None, "a liveness failure's run is safe"
        trace = obligations.trace([n.state for n in walked[0]], bindings, best.detail)
    else:
        assert walked is not None and walked[1], "a shrunk path still fails"
        nodes, flags = walked
        trace = build_trace(model, [n.state for n in nodes], bindings, flags, engine="fuzz")
    result = CheckResult(Verdict.VIOLATED, cov, "fuzz", trace=trace, sometimes=sometimes, **live)
    result.shrink = {"tries": shrinker.tries, "steps_before": len(failure.path),  # type: ignore[attr-defined]
                     "timed_out": shrinker.timed_out, "seconds": time.monotonic() - start - cov.seconds}
    return seen(result)
