"""The fuzz engine: a Hypothesis stateful test generated from a spec.

It finds the incident and shrinks it to the shortest trace, replays, never claims more than
bounded coverage, reports the actions that never fired, and honours seeds, the example
database, the derandomised "ci" profile and time limits. Runs are few and the "ci" profile is
used throughout, so that the whole file takes seconds on a 2-core machine.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest
from hypothesis.database import InMemoryExampleDatabase

from ownership import (
    If,
    Request,
    Spec,
    action,
    fix,
    ints,
    invariant,
    param,
    per_request,
    pool,
    sometimes,
)
from ownership.api import model_for
from ownership.engines import fuzz, per_state
from ownership.errors import UsageError
from ownership.interpret.concrete import Concrete
from ownership.interpret.validate import build_model
from ownership.result import Verdict
from ownership.trace import from_itf, replay, to_itf

CI = {"profile": "ci", "database": None}


class Hoarder(Spec):
    """A request takes a page and keeps it after it finishes (a leak); `give_back` fixes it."""

    pages = param(3, "pages in the pool", minimum=1)
    give_back = fix("the request frees its page when it finishes")
    kv = pool(pages)
    table = per_request(kv)
    done = per_request(bool, False)
    started = per_request(bool, False)

    @action
    def start(self, s, r: Request):
        """Take one page."""
        s.require(~s.started[r])
        s.table[r] = s.alloc("kv", r, 1)
        s.started[r] = True

    @action
    def finish(self, s, r: Request):
        """Finish; free the page only with the fix."""
        s.require(s.started[r] & ~s.done[r])
        if self.give_back:
            s.free("kv", r, s.table[r])
            s.table[r] = 0
        s.done[r] = True

    @action
    def never(self, s, r: Request):
        """Guarded by a condition that no reachable state meets."""
        s.require(s.done[r] & ~s.started[r])

    def finished(self, s, r):
        return s.done[r]

    @sometimes
    def a_request_finishes(self, s):
        """Some request finishes."""
        return s.done[1]


class DoubleFree(Spec):
    """A request frees its page twice."""

    kv = pool(2)
    table = per_request(kv)
    stage = per_request(ints(0, 3), 0)

    @action
    def take(self, s, r: Request):
        """Take one page."""
        s.require(s.stage[r] == 0)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = 1

    @action
    def give(self, s, r: Request):
        """Free the page; the second time it is a double free."""
        s.require((s.stage[r] == 1) | (s.stage[r] == 2))
        s.free("kv", r, s.table[r])
        s.stage[r] = s.stage[r] + 1


class BadStart(Spec):
    """An invariant that the initial state breaks."""

    flag = per_request(bool, False)

    @action
    def touch(self, s, r: Request):
        """Set the flag."""
        s.flag[r] = If(s.flag[r], True, True)

    @invariant
    def flags_are_set(self, s):
        """Every flag is set (false at the start)."""
        return s.flag[1]


class Flip(Spec):
    """Two actions that are always enabled, and one that never is: runs never end early."""

    requests = param(2, "requests")
    on = per_request(bool, False)

    @action
    def flip(self, s, r: Request):
        """Flip the request's bit."""
        s.on[r] = ~s.on[r]

    @action
    def flop(self, s, r: Request):
        """Flip it too."""
        s.on[r] = ~s.on[r]

    @action
    def never(self, s, r: Request):
        """Guarded by a contradiction."""
        s.require(s.on[r] & ~s.on[r])


def test_the_fuzz_engine_finds_the_incident_and_shrinks_it_to_the_shortest_trace():
    """On sglang_pd without fixes the shrunk fuzz trace is a stale-read as short as the explicit
    engine's shortest counterexample, and it is labelled with the fuzz engine."""
    model = model_for("sglang_pd")
    result = fuzz.check(model, runs=50, steps=30, **CI)
    shortest = per_state.check(model)
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == "stale-read"
    assert len(result.trace.steps) == len(shortest.trace.steps)
    assert result.trace.engine == "fuzz"
    assert "cross-request leak" in result.violation.message


def test_a_fuzz_trace_replays_and_round_trips_through_itf():
    """The shrunk trace re-executes to the same violation, also after ITF export and import."""
    model = model_for("sglang_pd")
    result = fuzz.check(model, runs=50, steps=30, **CI)
    again = replay(from_itf(to_itf(result.trace)), model)
    assert again.outcome == "violated"
    assert again.violation.property == result.violation.property
    assert again.violation.step == result.violation.step


def test_a_fixed_spec_is_bounded_by_its_runs_never_verified():
    """With the fix the verdict is bounded, and the coverage counts exactly the runs asked for."""
    model = model_for("sglang_pd", fixes=["door-retire"])
    result = fuzz.check(model, runs=20, steps=20, **CI)
    assert result.verdict is Verdict.BOUNDED
    cov = result.coverage
    assert cov.runs == 20 and not cov.complete and cov.transitions > 0
    assert "20 runs" in cov.describe() and "not every reachable state" in cov.describe()
    assert result.sometimes["a-request-completes"] is True


def test_actions_that_never_fire_are_named_in_the_coverage():
    """An action whose guard no run meets is reported as never enabled."""
    model = build_model(Hoarder, fixes=["give-back"])
    result = fuzz.check(model, runs=10, steps=10, **CI)
    assert result.verdict is Verdict.BOUNDED
    assert result.coverage.never_enabled == ("never",)
    assert "never enabled: never" in result.coverage.describe()
    assert result.coverage.to_json()["never_fired"] == ["never"]


def test_the_fuzz_engine_catches_a_leak_and_a_double_free():
    """Seeded bugs of two kernel properties are found, each with its own property."""
    leak = fuzz.check(build_model(Hoarder), runs=20, steps=10, **CI)
    assert leak.verdict is Verdict.VIOLATED and leak.violation.property == "leak"
    assert len(leak.trace.steps) == 3  # start, finish
    double = fuzz.check(build_model(DoubleFree), runs=20, steps=10, **CI)
    assert double.violation.property == "double-free"
    assert [s.action for s in double.trace.steps[1:]] == ["take", "give", "give"]


def test_an_initial_state_that_violates_is_reported_without_any_run():
    """A broken initial state is a zero-step trace, not a Hypothesis failure."""
    result = fuzz.check(build_model(BadStart), runs=5, steps=5, **CI)
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == "flags-are-set" and result.violation.step == 0
    assert result.coverage.runs == 0


def test_the_ci_profile_is_derandomised_and_a_seed_repeats_a_search():
    """Two checks with the ci profile, or with the same seed, cover exactly the same steps."""
    model = model_for("sglang_pd", fixes=["door-retire"])
    a = fuzz.check(model, runs=10, steps=15, **CI)
    b = fuzz.check(model, runs=10, steps=15, **CI)
    assert (a.coverage.transitions, a.coverage.states) == (b.coverage.transitions, b.coverage.states)
    assert a.coverage.seed is None
    c = fuzz.check(model, runs=10, steps=15, seed=7, database=None)
    d = fuzz.check(model, runs=10, steps=15, seed=7, database=None)
    assert (c.coverage.transitions, c.coverage.states) == (d.coverage.transitions, d.coverage.states)
    assert c.coverage.seed == 7


def test_the_example_database_replays_a_known_failure_first():
    """A failure saved by one check is the first run of the next one."""
    db = InMemoryExampleDatabase()
    model = build_model(DoubleFree)
    first = fuzz.check(model, runs=50, steps=10, seed=1, database=db)
    assert first.verdict is Verdict.VIOLATED
    second = fuzz.check(model, runs=50, steps=10, seed=2, database=db)
    assert second.verdict is Verdict.VIOLATED
    assert second.coverage.runs == 1


def test_the_default_profile_stays_random_where_hypothesis_loaded_its_ci_profile():
    """Hypothesis loads its own "ci" profile (derandomised, no database) when it sees CI=true;
    our "default" still means a fresh seed and the database there, and "ci" still means ci."""
    from hypothesis import settings

    loaded = settings.default
    settings.load_profile("ci")
    try:
        ours = fuzz.build_settings(runs=5, steps=5, database=InMemoryExampleDatabase(),
                                   profile="default")
        assert ours.derandomize is False and ours.database is not None
        ci = fuzz.build_settings(runs=5, steps=5, database=InMemoryExampleDatabase(), profile="ci")
        assert ci.derandomize is True and ci.database is None
    finally:
        settings.register_profile("_restored", loaded)
        settings.load_profile("_restored")


def test_a_time_limit_ends_the_search_as_inconclusive():
    """When max_seconds passes before the runs are done the verdict is inconclusive, not bounded."""
    model = model_for("sglang_pd", fixes=["door-retire"])
    result = fuzz.check(model, runs=100_000, steps=20, max_seconds=2.0, **CI)  # (a busy 2-core CI machine)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.coverage.stopped_by == "max-seconds"
    assert 0 < result.coverage.runs < 100_000


def test_the_engine_reports_progress_and_prints_nothing(capsys):
    """Progress reaches the reporter; Hypothesis's own output never reaches the terminal."""
    seen = []
    fuzz.check(model_for("sglang_pd"), runs=30, steps=20, reporter=seen.append, report_every=0.0, **CI)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert seen and seen[-1].phase == "shrink" and seen[-1].runs >= 1


def test_an_unknown_profile_is_a_usage_error_naming_the_choices():
    """A misspelt profile says which profiles exist."""
    try:
        fuzz.check(model_for("sglang_pd"), runs=1, steps=1, profile="cj")
    except UsageError as e:
        assert "ci" in str(e) and "'cj'" in str(e)
    else:
        raise AssertionError("expected a UsageError")


# --------------------------------------------------------------------------- bursts (NOTE(bursts))


def _machine(model, **kw):
    """A machine of fuzz's, made outside Hypothesis, at the initial state."""
    explorer = fuzz.Explorer(model)
    search = fuzz.Search(explorer, time.monotonic(), None, None, 1.0)
    return fuzz.machine_class(model, search, **kw)(), explorer


def test_a_word_picks_an_enabled_action_with_its_weight_and_the_swarm_flags_come_first():
    """choose() over every word below a multiple of its radices: an enabled action exactly in
    proportion to its weight, a disabled one never; the actions the swarm flags switch off
    only when none of the others is enabled."""
    machine, explorer = _machine(build_model(Flip), weights={"flip": 3}, steps=40)
    assert (machine.max_steps, machine.burst_steps, machine.weights) == (40, 14, (3, 1, 1))
    picked = Counter(explorer.slices[machine.choose(x)[0]].name for x in range(5 * 2 * 1000))
    assert picked == {"flip": 7500, "flop": 2500}
    machine.set_swarm(bytes([200, 0, 255, 255]))  # flip off, flop and never on
    assert Counter(explorer.slices[machine.choose(x)[0]].name for x in range(1000)) == {"flop": 1000}
    machine.set_swarm(bytes([200, 255, 0, 0]))  # only flip on
    assert Counter(explorer.slices[machine.choose(x)[0]].name for x in range(1000)) == {"flip": 1000}
    machine.set_swarm(bytes([200, 0, 0, 255]))  # only never on: it is not enabled, so the others
    got = Counter(explorer.slices[machine.choose(x)[0]].name for x in range(4000))
    assert set(got) == {"flip", "flop"} and got["flip"] == 3 * got["flop"]


def test_steps_count_steps_of_the_model_whatever_the_bursts():
    """A run that never ends early has exactly `steps` steps, below, at and above a burst."""
    model = build_model(Flip)
    for steps in (1, fuzz.BURST, fuzz.BURST + 1, 3 * fuzz.BURST + 5):
        result = fuzz.check(model, runs=6, steps=steps, **CI)
        cov = result.coverage
        assert result.verdict is Verdict.BOUNDED and cov.runs == 6 and cov.depth == steps
        assert cov.transitions <= 6 * steps + steps  # (and Hypothesis's cut-short runs at most)
        assert cov.never_enabled == ("never",)
        count, length = fuzz.bursts(steps)
        assert count * length >= steps > (count - 1) * length and length <= fuzz.BURST


def test_weights_change_the_runs_drawn():
    """The same seed with a weight: other choices, so other runs (weights reach the machine)."""
    model = model_for("sglang_pd", fixes=["door-retire"])
    plain = fuzz.check(model, runs=10, steps=15, seed=3, database=None)
    biased = fuzz.check(model, runs=10, steps=15, seed=3, database=None, weights={"decode_timeout": 6})
    assert plain.verdict is biased.verdict is Verdict.BOUNDED
    assert plain.seen.states != biased.seen.states


@pytest.mark.parametrize("spec, kw", [
    ("sglang_pd", {"params": {"decode_pool": 70, "requests": 3}, "fixes": ["door-retire"]}),
    ("sglang_pd", {}),
    ("vllm_block_pool", {}),
    ("vllm_nixl_pd", {}),
    ("vllm_nixl_load_failure", {"fixes": ["defer-failure-until-all-stopped"]}),
])
def test_the_guard_memo_says_disabled_exactly_where_the_step_is_disabled(spec, kw):
    """NOTE(guard-memo): along random walks, every binding the explorer calls disabled (by the
    memo, by inheritance or by stepping it) is disabled in the concrete semantics, and every
    other one steps to the same state; and the memo spares steps that an explorer without it
    (inheritance alone) takes."""
    model = model_for(spec, **kw)
    plain = Concrete(model)
    explorers = [fuzz.Explorer(model), fuzz.Explorer(model)]
    explorers[1].GUARD_KEYS = -1  # (no reads fit: no memo)
    stepped = [0, 0]
    for k, explorer in enumerate(explorers):
        def counting(state, binding, _k=k, _step=explorer.interp.step_packed):
            stepped[_k] += 1
            return _step(state, binding)
        explorer.interp.step_packed = counting  # type: ignore[method-assign]
    rng = random.Random(spec)
    for _ in range(15):
        path: tuple[int, ...] = ()
        nodes, state = [e.root for e in explorers], model.initial
        for _ in range(20):
            enabled = []
            for b in rng.sample(range(len(model.bindings)), len(model.bindings)):
                want = plain.step(state, model.bindings[b])
                got = [e.child(path, n, b) for e, n in zip(explorers, nodes)]
                for g in got:
                    assert (g is None) == (want is None), model.bindings[b].label()
                    assert g is None or (g.state, g.flags) == (want.state, want.flags)
                if want is not None:
                    enabled.append((b, got, want.state))
            if not enabled:
                break
            b, nodes, state = rng.choice(enabled)
            path += (b,)
            if explorers[0].flags_at(nodes[0]):
                break
    remembered = [sum(len(seen) for memo in e.guards.values() for _, seen in memo.values()) for e in explorers]
    assert remembered[0] > 0 and remembered[1] == 0
    assert stepped[0] < stepped[1], stepped
