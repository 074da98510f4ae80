"""The fuzz engine's Hypothesis search: the state machine whose runs are bursts of the model's steps.

`machine_class` builds a `RuleBasedStateMachine` from a model (users never subclass it): one
rule, each a burst of steps picked by one draw (NOTE(bursts)), the run's swarm flags drawn
with its first burst (NOTE(swarm-flags)); after every step the kernel's flags and the state
properties are checked (and, when asked, the liveness obligations: ownership.engines.
fuzz_liveness). `Search` is what one check shares between its runs (the explorer of
ownership.engines.fuzz_explorer, counters, coverage); `build_settings` makes its Hypothesis
settings from a profile (NOTE(ci-profile)), `choose_seed` its seed, and `run_search` runs it
to the first failing run (NOTE(seed-database)). Hypothesis's own output is captured.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import InvalidArgument
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, rule

from ..errors import SpecError, UsageError
from ..lang.model import Model
from ..progress import Progress, Reporter
from .fuzz_explorer import Explorer, Node, RunFailed, primary, rank, unrank
from .fuzz_liveness import Obligations, RunObligations

#: Runs (Hypothesis examples) and steps per run when the caller does not say.
DEFAULT_RUNS = 200
DEFAULT_STEPS = 50

#: Steps of the model one Hypothesis rule fires at most, and the bytes of its draw each step
#: takes (a 64-bit word): NOTE(bursts).
BURST = 16
WORD = 8

#: Where the example database lives unless told otherwise (relative to the working directory).
DEFAULT_DATABASE = Path(".ownership") / "examples"

#: Settings profiles by name. "default": a fresh random seed per check (reported, so a run can
#: be repeated with `seed=`) and the example database. "ci": derandomised (the same runs on
#: every machine for the same model), no database. Both start from Hypothesis's own "default"
#: profile, not from the one loaded: Hypothesis loads its "ci" profile (derandomised, no
#: database) by itself when it sees a CI variable such as CI=true, and "default" would then
#: silently mean "ci" (NOTE(ci-profile)).
PROFILES: dict[str, dict[str, Any]] = {
    "default": {"derandomize": False},
    "ci": {"derandomize": True},
}

#: How a caller asks for the default database (None switches the database off).
USE_DEFAULT_DATABASE = "default"


class TimeUp(KeyboardInterrupt):
    """Raised inside a run when max_seconds has passed: it ends the Hypothesis search at once.

    A KeyboardInterrupt, because that is the one exception Hypothesis lets through without
    recording the cut-short run (any other would be taken for a failure, or recorded and then
    refused as flaky data generation: the clock is external state)."""


@dataclass
class Search:
    """What one check shares between its Hypothesis runs: the explorer, counters, coverage."""

    explorer: Explorer
    start: float
    max_seconds: float | None
    reporter: Reporter | None
    report_every: float
    runs: int = 0
    steps: int = 0
    longest: int = 0
    seen: set[int] = field(default_factory=set)
    fired: set[str] = field(default_factory=set)
    enabled: set[str] = field(default_factory=set)
    tried: set[str] = field(default_factory=set)  # actions whose enabledness was looked at
    pending: list[str] = field(default_factory=list)
    reached: set[str] = field(default_factory=set)
    found: bool = False
    expired: bool = False
    obligations: Obligations | None = None  # liveness followed on the runs (None: not asked, or none)
    last_report: float = 0.0
    phase: str = "search"

    def out_of_time(self) -> bool:
        """True once max_seconds has passed while no failure is known."""
        if self.found or self.max_seconds is None:
            return False
        if time.monotonic() - self.start >= self.max_seconds:
            self.expired = True
        return self.expired

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.reporter is not None and (force or now - self.last_report >= self.report_every):
            self.last_report = now
            self.reporter(Progress(now - self.start, states=len(self.seen), transitions=self.steps,
                                   depth=self.longest, runs=self.runs, phase=self.phase))


class MachineBase(RuleBasedStateMachine):
    """One run of the model: the path so far and the node it reached.

    NOTE(bursts): Hypothesis's own machinery costs about 0.25 ms a rule (choosing a rule, its
    preconditions, the swarm flags, the draws), as much as a step of the model, and its filter
    over preconditions threw most runs away (NOTE(swarm-flags)). So the machine has one rule,
    `burst`, without a precondition, and a rule is a burst of up to `burst_steps` steps
    (bursts(), at most BURST) picked by its one draw: the run's swarm flags (read at its first
    burst), then a word of WORD bytes per step, a list of integers as bytes (one draw, uniform,
    where a list of integers would be a draw per element). Each word picks an action among the
    enabled ones with the probability Hypothesis's choice of a rule gave it (its weight, among
    the enabled actions the swarm flags leave on), then the binding as before (its arguments
    uniform, then the first enabled binding from there on): `choose`. A run is still a function
    of Hypothesis's draws (replayed from the example database, derandomised by the "ci"
    profile), and `steps` still counts steps of the model: stateful_step_count is the number of
    bursts, and a run stops at `max_steps`, at a dead end (no action enabled: the rest of the
    run does nothing, so a finished protocol ends its run quietly), or where Hypothesis stops
    it (between bursts; its own first rule, the first burst, always runs). Bursts of 16: at
    4,096 pages (CPU time, a shared machine) one step a rule ran about 5,000 steps a second,
    bursts of 8 to 25 about 7,000 to 9,000, one burst a run about 6,500 (Hypothesis's
    mutations, which copy spans of a run, then share fewer prefixes: fewer steps are replays,
    more states are new). Subclasses judge each step (`judge_step`); this one
    fails on any violated property; a subclass's `fire` may decline a step (the path does not
    grow), which ends the burst."""

    search: Search
    #: model steps per run at most, and per burst (set by machine_class)
    max_steps: int = DEFAULT_STEPS
    burst_steps: int = DEFAULT_STEPS
    #: each action's weight (machine_class's `weights`, 1 when not named)
    weights: tuple[int, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        search = self.search
        if search.out_of_time():
            raise TimeUp
        # After a failure Hypothesis only replays it (no shrink phase): not counted again.
        self.counted = not search.found
        self.explorer = search.explorer
        self.path: tuple[int, ...] = ()
        self.node = self.explorer.root
        #: the actions in the order `choose` tries them, each group with its weights: the
        #: swarm flags' on actions, then the off ones (NOTE(swarm-flags)); all on until drawn
        self.order: list[tuple[list[int], list[int]]] = [(list(range(len(self.weights))), list(self.weights))]
        self.swarmed = False
        #: the liveness obligations followed on this run (NOTE(bounded-liveness)), if asked
        self.liveness = RunObligations(search.obligations) if search.obligations is not None else None
        if self.liveness is not None:
            got = self.liveness.arrive((), self.node)
            if got is not None:  # (check() judges the initial state before any run)
                self.fail(RunFailed(got.name, (), got))

    def _enabled(self, a: int) -> bool:
        name = self.explorer.slices[a].name
        b = self.explorer.first_enabled(self.path, self.node, a)
        self.search.tried.add(name)
        if b is not None:
            self.search.enabled.add(name)
        return b is not None

    def _steps(self) -> list[str]:
        """The labels of this run's steps so far."""
        return [self.explorer.model.bindings[b].label() for b in self.path]

    def set_swarm(self, flags: bytes) -> None:
        """The run's swarm flags, from the first 1 + len(actions) bytes of its first burst.

        NOTE(swarm-flags): Hypothesis switches rules off per run (swarm testing: FeatureFlags,
        each rule off with a probability drawn for the run, at least one on), and a run in
        which every enabled action is off was thrown away as invalid (at 8 requests of
        sglang_pd, 339 of the 641 runs Hypothesis started, cut short there after about 13
        steps: their steps counted, the runs not). Here each action is off
        when its byte is below a threshold drawn for the run (the first byte mod 255: off
        with probability up to 254/256, none off when the bytes are 0, Hypothesis's simplest
        draw), and off actions are only put last: `choose` picks among them when no on action
        is enabled, so every run goes on as long as the model can, and is counted."""
        threshold = flags[0] % 255
        on = [a for a in range(len(self.weights)) if flags[1 + a] >= threshold]
        off = [a for a in range(len(self.weights)) if flags[1 + a] < threshold]
        self.order = [(group, [self.weights[a] for a in group]) for group in (on, off) if group]

    def run_burst(self, choices: bytes) -> None:
        """Fire up to burst_steps steps, one WORD of `choices` each after the swarm flags
        (NOTE(bursts)); the flags are read at the run's first burst only (NOTE(swarm-flags))."""
        flags = 1 + len(self.weights)
        if not self.swarmed:
            self.swarmed = True
            self.set_swarm(choices[:flags])
        try:
            for k in range(flags, len(choices), WORD):
                if len(self.path) >= self.max_steps:
                    return
                picked = self.choose(int.from_bytes(choices[k:k + WORD], "little"))
                if picked is None:
                    return  # a dead end: nothing can fire
                before = len(self.path)
                a, b = picked
                self.fire(a, unrank(self.explorer.slices[a], b))
                if len(self.path) == before:
                    return  # the subclass declined the step
        except SpecError as e:
            e.steps = e.steps or self._steps()
            raise

    def choose(self, x: int) -> tuple[int, int] | None:
        """The step the word x picks in the current state: (action, binding), or None at a
        dead end.

        x is read as digits of mixed radix: a digit below the total weight of the actions
        left picks one (an action of weight k has k of its values); a digit below its number
        of bindings picks where its scan for an enabled binding starts. An action without one
        is dropped and the next digits pick again among the others, so an enabled action is
        picked with probability its weight over the enabled ones' total, as drawing among
        the enabled actions alone gives (NOTE(bursts)); the swarm's off actions are tried
        only when no on action is enabled. 64 bits are digits enough for the dozens of tries
        of a large spec; once used up, the digits are 0 (the first action left)."""
        explorer = self.explorer
        slices = explorer.slices
        node = self.node
        first = node.first
        search = self.search
        for actions, weights in self.order:
            actions, weights = list(actions), list(weights)
            total = sum(weights)
            while actions:
                r = x % total
                x //= total
                k = 0
                while r >= weights[k]:
                    r -= weights[k]
                    k += 1
                a = actions[k]
                sl = slices[a]
                n = sl.hi - sl.lo
                start = sl.lo + x % n
                x //= n
                if a in first and first[a] is None:
                    b = None  # known disabled here
                else:
                    b = explorer.scan(self.path, node, a, start)
                    search.tried.add(sl.name)
                    if b is None:
                        first[a] = None
                    else:
                        search.enabled.add(sl.name)
                        if start == sl.lo:
                            first[a] = b
                if b is not None:
                    return a, b
                total -= weights[k]
                del actions[k], weights[k]
        return None

    def fire(self, a: int, picks: list[int]) -> None:
        """Fire action a from the binding `picks` on. A SpecError of the spec's code ends the
        check (Hypothesis replays it and lets it through), carrying the run's steps so far."""
        try:
            self._fire(a, picks)
        except SpecError as e:
            e.steps = e.steps or self._steps()
            raise

    def _fire(self, a: int, picks: list[int]) -> None:
        search = self.search
        if search.out_of_time():
            raise TimeUp
        sl = self.explorer.slices[a]
        b = self.explorer.scan(self.path, self.node, a, rank(sl, picks))
        if b is None:
            return  # a deadlock: nothing can fire
        child = self.explorer.child(self.path, self.node, b)
        assert child is not None
        self.path = self.path + (b,)
        self.node = child
        if self.counted:
            search.steps += 1
            search.fired.add(sl.name)
            search.longest = max(search.longest, len(self.path))
            search.seen.add(hash(child.packed))
        self.judge_step(b, child)
        if self.liveness is not None:
            got = self.liveness.arrive(self.path, child)
            if got is not None:
                self.fail(RunFailed(got.name, self.path, got))
        if search.pending:
            hits = self.explorer.interp.sometimes_hits(child.packed, search.pending)
            if hits:
                search.reached.update(hits)
                search.pending = [n for n in search.pending if n not in hits]
        self._note_enabled()
        search.tick()

    def judge_step(self, b: int, child: Node) -> None:
        """Fail the run if arriving at `child` violates a property."""
        flags = self.explorer.flags_at(child)
        if flags:
            self.fail(RunFailed(primary(flags), self.path, flags))

    def fail(self, failure: RunFailed) -> None:
        self.search.found = True
        raise failure

    def _note_enabled(self) -> None:
        """Look at the actions not yet seen enabled, so that the coverage can say which never were."""
        search = self.search
        if len(search.enabled) < len(self.explorer.slices):
            for a in range(len(self.explorer.slices)):
                if self.explorer.slices[a].name not in search.enabled:
                    self._enabled(a)

    def teardown(self) -> None:
        """Count the run, unless Hypothesis discarded it as invalid (a rejected draw)."""
        ending = sys.exc_info()[1]  # the exception ending the run, if any
        if self.counted and (ending is None or isinstance(ending, RunFailed)):
            self.search.runs += 1
            if self.liveness is not None:
                self.liveness.obligations.ended(self.liveness, normally=ending is None)


def bursts(steps: int) -> tuple[int, int]:
    """(bursts per run, steps per burst) for runs of at most `steps` steps (NOTE(bursts)):
    as few bursts of at most BURST as cover them, of equal length."""
    count = -(-steps // BURST)
    return count, -(-steps // count)


def machine_class(model: Model, search: Search, base: type[MachineBase] = MachineBase, *,
                  weights: dict[str, int] | None = None, steps: int = DEFAULT_STEPS) -> type[MachineBase]:
    """A RuleBasedStateMachine for runs of `model` of at most `steps` steps, derived from
    `base`: one rule, each firing a burst of steps picked by one draw, the run's swarm flags
    drawn with its first burst (NOTE(bursts), NOTE(swarm-flags)). `weights`: an action of weight k is picked as if offered k times."""
    slices = search.explorer.slices
    _, length = bursts(steps)
    namespace: dict[str, Any] = {
        "search": search, "__module__": __name__, "max_steps": steps, "burst_steps": length,
        "weights": tuple((weights or {}).get(sl.name, 1) for sl in slices),
    }

    def burst(self: MachineBase, choices: bytes) -> None:
        self.run_burst(choices)

    burst.__qualname__ = f"{model.spec_cls.__name__}Machine.burst"
    burst.__doc__ = f"up to {length} steps of the model (NOTE(bursts))"
    size = 1 + len(slices) + WORD * length  # the swarm flags, then a word per step
    namespace["burst"] = rule(choices=st.binary(min_size=size, max_size=size))(burst)
    return type(f"{model.spec_cls.__name__}Machine", (base,), namespace)


def model_key(model: Model, salt: str = "") -> bytes:
    """A stable key naming this model (spec class and file, parameters, fixes) for Hypothesis:
    its example database key and, when derandomised, the source of its fixed seed."""
    text = repr((salt, model.spec_cls.__qualname__, Path(model.spec_cls.source_file()).name,
                 sorted(model.env.items()), list(model.spec.fixes)))
    return hashlib.sha256(text.encode()).digest()


def build_settings(*, runs: int, steps: int, database: Any, profile: str | settings | None) -> settings:
    """Hypothesis settings for a check: the profile, then runs, steps and the database."""
    if isinstance(profile, settings):
        base = profile
    else:
        name = profile or "default"
        if name in PROFILES:
            base = settings(settings.get_profile("default"), **PROFILES[name])
        else:
            try:
                base = settings.get_profile(name)
            except InvalidArgument:
                known = ", ".join(PROFILES)
                raise UsageError(
                    f"unknown fuzz profile {name!r}: use one of {known}, or the name of a profile"
                    " registered with hypothesis.settings.register_profile"
                ) from None
    db: ExampleDatabase | None
    if base.derandomize:
        db = None
    elif database == USE_DEFAULT_DATABASE:
        db = DirectoryBasedExampleDatabase(str(DEFAULT_DATABASE))
    elif database is None or isinstance(database, ExampleDatabase):
        db = database
    elif isinstance(database, str | Path):
        db = DirectoryBasedExampleDatabase(str(database))
    else:
        raise UsageError(f"database={database!r}: give a directory, an ExampleDatabase, or None")
    return settings(
        base,
        max_examples=runs,
        stateful_step_count=steps,
        database=db,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        # Shrinking is done on paths (NOTE(shrink-paths)); the explain phase only annotates
        # Hypothesis's own report, which is never shown.
        phases=[p for p in base.phases if p not in (Phase.shrink, Phase.explain)],
    )


def run_search(model: Model, search: Search, hsettings: settings, seed: int | None,
               base: type[MachineBase] = MachineBase, salt: str = "", *, exact: bool = False,
               weights: dict[str, int] | None = None) -> RunFailed | None:
    """Run the Hypothesis search; the first failing run, or None. Ctrl-C propagates.

    `exact`: the caller gave the seed, to repeat a search run for run, so the example database
    stays out (hypothesis.seed switches it off). A seed chosen here only to be reported keeps
    the database: a failure found once replays first on the next run (NOTE(seed-database))."""
    steps = hsettings.stateful_step_count
    machine = machine_class(model, search, base, weights=weights, steps=steps)
    # (a rule is a burst of steps: NOTE(bursts))
    test = get_state_machine_test(machine, settings=settings(hsettings, stateful_step_count=bursts(steps)[0]))
    key = model_key(model, salt)
    test._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key  # type: ignore[attr-defined]
    if seed is not None and exact:
        test = hypothesis_seed(seed)(test)
    elif seed is not None:
        # NOTE(seed-database): hypothesis.seed(n) also sets database=None, so the example
        # database never saw a failure of ours (every run has a seed, to be reported); the
        # seed alone is what it sets besides that (hypothesis/core.py, seed.accept).
        test._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    try:
        with with_reporter(lambda _text: None):
            test()
    except RunFailed as e:
        return e
    except TimeUp:
        pass
    return None


def choose_seed(seed: int | None, hsettings: settings) -> int | None:
    """The seed to run with: the one given, else pytest's --hypothesis-seed, none when
    derandomised, else a fresh one to report."""
    if seed is None:
        import hypothesis.core

        forced = getattr(hypothesis.core, "global_force_seed", None)  # pytest --hypothesis-seed
        if forced is not None:
            return int(forced) if isinstance(forced, int) or str(forced).isdigit() else \
                int.from_bytes(hashlib.sha256(str(forced).encode()).digest()[:4], "big")
    if seed is None and not hsettings.derandomize:
        return random.SystemRandom().randrange(2**32)
    return seed
