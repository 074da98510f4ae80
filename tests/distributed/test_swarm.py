"""Swarm random search on Ray (ownership.engines.swarm): many diversified fuzz searches, merged.

The merged result is what the searches ran and no more: its distinct states are the union of
theirs (checked against the same searches run here with fuzz.check), a pass is bounded and
never verified, a violation is the shortest trace of any search and replays, the same seed
repeats the swarm, and a lost worker, the time limit or Ctrl-C make it inconclusive (a
stopped swarm counting what its searches ran). A spec error in a worker reaches the driver as
the same SpecError. Runs are few and small, on the session's local 2-CPU Ray
(tests/conftest.py), so that the file takes seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import spec_path

from ownership import limits
from ownership.api import model_for, replay_trace
from ownership.engines import fuzz, liveness, swarm
from ownership.engines.cluster import Recipe
from ownership.errors import SpecError, UsageError
from ownership.progress import Progress
from ownership.result import Verdict
from ownership.trace import replay

DOUBLE_FREE = spec_path("double_free.py")
COUNTER = spec_path("counter.py")
SPIN = spec_path("liveness/spin.py")
RETRY = spec_path("liveness/retry.py")


def recipe_of(spec: str, **kw) -> tuple[Recipe, object]:
    model = model_for(spec, **kw)
    return Recipe.of(spec, model), model


def in_process(model, seed: int, searches: int, runs: int, steps: int, **kw) -> list:
    """The swarm's searches run here, one after the other, with fuzz.check."""
    names = [decl.name for decl in model.spec_cls._actions.values()]
    return [fuzz.check(model, runs=runs, steps=p.steps, seed=p.seed, database=None,
                       weights=swarm.weights_for(names, p.bias), **kw)
            for p in swarm.plan(seed, searches, steps)]


def test_the_searches_differ_in_seed_step_bound_and_bias():
    """Search 0 is fuzz's own search; the others have derived seeds, biases and halved bounds."""
    plans = swarm.plan(5, 6, 40)
    assert [p.steps for p in plans] == [40, 20, 10, 5, 40, 20]
    assert (plans[0].seed, plans[0].bias) == (5, None)
    assert all(p.bias is not None for p in plans[1:])
    assert len({p.seed for p in plans}) == 6
    assert [p.steps for p in swarm.plan(5, 3, 1)] == [1, 1, 1]
    assert swarm.plan(5, 6, 40) == plans
    assert set(swarm.weights_for(["a", "b"], 7).values()) <= set(swarm.WEIGHTS)


def test_fuzz_weights_bias_the_choice_of_actions_and_are_checked():
    """fuzz.check(weights=) changes which runs are drawn, not what a run means."""
    model = model_for(COUNTER, params={"requests": 3, "limit": 3})
    plain = fuzz.check(model, runs=10, steps=6, seed=1, database=None)
    same = fuzz.check(model, runs=10, steps=6, seed=1, database=None, weights={"start": 1, "finish": 1})
    assert (plain.coverage.transitions, plain.seen) == (same.coverage.transitions, same.seen)  # weight 1: no bias
    biased = fuzz.check(model, runs=10, steps=6, seed=1, database=None, weights={"finish": 4})
    assert biased.verdict is Verdict.BOUNDED and biased.coverage.runs == 10
    assert plain.seen.states and len(plain.seen.states) == plain.coverage.states
    with pytest.raises(UsageError, match="nope"):
        fuzz.check(model, runs=1, steps=1, weights={"nope": 2})
    with pytest.raises(UsageError, match="start=0"):
        fuzz.check(model, runs=1, steps=1, weights={"start": 0})


def test_a_violation_is_the_shortest_trace_of_all_searches_and_replays(ray_cluster):
    """Every search that violates is a candidate; the fewest steps win, then the lowest index."""
    recipe, model = recipe_of(DOUBLE_FREE, params={"requests": 2})
    result = swarm.check(recipe, ray_cluster, searches=4, runs=20, steps=8, seed=11, max_seconds=None)
    assert result.verdict is Verdict.VIOLATED and result.violation.property == "double-free"
    here = in_process(model, 11, 4, 20, 8)
    lengths = sorted((len(r.trace.steps) - 1, i) for i, r in enumerate(here) if r.verdict is Verdict.VIOLATED)
    assert result.swarm.found_by == lengths[0][1]
    assert len(result.trace.steps) - 1 == lengths[0][0]
    assert [s.label() for s in result.trace.steps] == [s.label() for s in here[lengths[0][1]].trace.steps]
    assert result.coverage.stopped_by == "violation" and result.coverage.seed == 11
    again, _ = replay_trace(result.trace, spec=DOUBLE_FREE)
    assert again.outcome == "violated" and again.violation.property == "double-free"


def test_a_safe_spec_is_bounded_and_its_states_are_the_union_of_its_searches(ray_cluster):
    """The merged distinct states are exactly the union of the searches' (never a sum), at
    least as many as any one search saw; runs and steps add up; never verified."""
    params = {"requests": 4, "limit": 4}
    recipe, model = recipe_of(COUNTER, params=params)
    result = swarm.check(recipe, ray_cluster, searches=4, runs=4, steps=6, seed=3, max_seconds=None)
    assert result.verdict is Verdict.BOUNDED
    cov = result.coverage
    here = in_process(model, 3, 4, 4, 6)
    union = frozenset().union(*(r.seen.states for r in here))
    assert result.seen.states == union and cov.states == len(union)
    assert all(cov.states >= r.coverage.states for r in here)
    assert cov.states > max(r.coverage.states for r in here)  # the searches differ
    assert cov.runs == 16 == sum(r.coverage.runs for r in here)
    assert cov.transitions == sum(r.coverage.transitions for r in here)
    assert cov.depth == max(r.coverage.depth for r in here) <= 6
    assert not cov.complete and cov.stopped_by == "max-runs"
    assert "16 runs" in cov.describe() and "not every reachable state was explored" in cov.describe()
    assert result.sometimes == {n: (True if any(r.sometimes[n] for r in here) else None) for n in here[0].sometimes}
    assert result.sometimes["never"] is None
    assert result.swarm.finished == (0, 1, 2, 3) and "4 of 4 searches finished" in result.swarm.note


def test_the_same_seed_repeats_the_swarm_and_a_chosen_seed_is_reported(ray_cluster):
    """Without a seed one is chosen and reported; giving it back repeats the merged result."""
    recipe, _ = recipe_of(COUNTER, params={"requests": 3, "limit": 3})
    first = swarm.check(recipe, ray_cluster, searches=3, runs=5, steps=6, seed=None, max_seconds=None)
    assert isinstance(first.coverage.seed, int)
    again = swarm.check(recipe, ray_cluster, searches=3, runs=5, steps=6, seed=first.coverage.seed,
                        max_seconds=None)

    def key(r):
        cov = r.coverage
        return (r.verdict, cov.states, cov.transitions, cov.runs, cov.depth, cov.never_fired, cov.seed, r.seen)

    assert key(first) == key(again)


def test_liveness_is_merged_over_the_searches_never_claimed_to_hold(ray_cluster):
    """A liveness violation is reported as such and replays as one; where none is found, the
    text counts the runs of every search and stays bounded."""
    recipe, model = recipe_of(f"{SPIN}:Spin")
    found = swarm.check(recipe, ray_cluster, searches=2, runs=30, steps=12, seed=1, max_seconds=None, liveness=True)
    assert found.verdict is Verdict.VIOLATED
    prop = found.violation.property
    assert found.liveness[prop] == "violated"
    again = replay(found.trace, model)
    assert liveness.violates(model, again.states, again.bindings, found.trace.loop, prop)
    recipe, _ = recipe_of(f"{RETRY}:RetryStrong")
    bounded = swarm.check(recipe, ray_cluster, searches=2, runs=10, steps=8, seed=1, max_seconds=None, liveness=True)
    assert bounded.verdict is Verdict.BOUNDED and bounded.liveness
    for text in bounded.liveness.values():
        assert text.startswith(f"not violated in {bounded.coverage.runs} random runs of at most 8 steps across 2 searches")
        assert "holds" not in text


def test_a_lost_worker_makes_the_swarm_inconclusive(ray_cluster, monkeypatch):
    """A search whose worker dies is not counted, and the swarm cannot pass."""
    monkeypatch.setattr(swarm, "before_search", lambda i: os._exit(1) if i == 1 else None)
    recipe, _ = recipe_of(COUNTER)
    result = swarm.check(recipe, ray_cluster, searches=3, runs=3, steps=4, seed=2, max_seconds=None)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.coverage.stopped_by == "worker-lost"
    assert result.swarm.lost == (1,) and result.swarm.finished == (0, 2)
    assert result.coverage.runs == 6
    assert "search 1 lost its Ray worker" in result.swarm.note


def test_a_spec_error_in_a_worker_reaches_the_driver_as_a_spec_error(ray_cluster):
    """The SpecError raised in a search comes back as itself, message, file and line included."""
    spec = spec_path("bad/out_of_domain.py")
    recipe, model = recipe_of(spec)
    with pytest.raises(SpecError) as there:
        swarm.check(recipe, ray_cluster, searches=2, runs=5, steps=5, seed=1, max_seconds=None)
    with pytest.raises(SpecError) as here:
        fuzz.check(model, runs=5, steps=5, seed=1, database=None)
    assert type(there.value) is SpecError
    assert (there.value.message, there.value.line) == (here.value.message, here.value.line)


def test_a_time_limit_is_inconclusive_with_progress_and_nothing_printed(ray_cluster, capsys):
    """max_seconds bounds the whole swarm: each search stops itself, the swarm is inconclusive;
    progress reaches the reporter and nothing is printed."""
    recipe, _ = recipe_of(COUNTER, params={"requests": 3, "limit": 3})
    seen = []
    # (both workers warm first: on a loaded machine a cold one can spend the whole limit importing)
    swarm.check(recipe, ray_cluster, searches=2, runs=1, steps=6, seed=1, max_seconds=None)
    # (100,000 runs take minutes: stopping at the limit is what ends it; no time is asserted, issue 29)
    result = swarm.check(recipe, ray_cluster, searches=2, runs=100_000, steps=6, seed=1, max_seconds=4.0,
                         reporter=seen.append)
    assert result.verdict is Verdict.INCONCLUSIVE and result.coverage.stopped_by == "max-seconds"
    assert 0 < result.coverage.runs < 200_000, result.swarm.note
    assert seen and all(isinstance(p, Progress) and p.kind == "swarm" for p in seen) and "searches done" in seen[-1].describe()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_ctrl_c_interrupts_the_running_searches_and_counts_what_they_ran(ray_cluster, monkeypatch, tmp_path):
    """An interrupt in the driver (here from the reporter, 3 s after both searches began:
    past building their model, into their runs) interrupts the running searches; each returns
    what it covered, which is merged, inconclusive. Issue 29: they were cancelled and the
    swarm reported "0 runs"."""
    monkeypatch.setattr(swarm, "STOP_SECONDS", 60.0)  # (a loaded machine may take long to answer)
    began = str(tmp_path)
    monkeypatch.setattr(swarm, "before_search", lambda i: Path(began, str(i)).touch())
    recipe, _ = recipe_of(COUNTER, params={"requests": 3, "limit": 3})
    both: list[float] = []

    def interrupt(_progress):
        if not both and len(list(tmp_path.iterdir())) == 2:
            both.append(time.monotonic())
        if both and time.monotonic() - both[0] >= 3.0:
            raise KeyboardInterrupt

    result = swarm.check(recipe, ray_cluster, searches=2, runs=10_000_000, steps=6, seed=1, max_seconds=None,
                         reporter=interrupt)
    cov = result.coverage
    assert result.verdict is Verdict.INCONCLUSIVE and cov.stopped_by == "interrupt"
    assert result.swarm.finished == (0, 1) and result.swarm.stopped == (0, 1), result.swarm.note
    assert result.swarm.unfinished == () and cov.runs > 0 and cov.states > 0
    assert result.swarm.note.endswith(f"searches 0, 1 stopped at the interrupt after {cov.runs:,} runs between them:"
                                      " counted"), result.swarm.note
    assert "0 of 2 searches finished" in result.swarm.note


@pytest.mark.long
def test_under_a_commands_time_limit_the_searches_stop_at_its_deadline_and_count(ray_cluster, monkeypatch):
    """Under the command's limits (ownership.limits, armed as `ownership check` arms them),
    the searches stop at the command's deadline, not at the later one of the swarm's
    max_seconds, taken before Ray started (2 s here): the command's limit does not stop the
    driver first, and what the searches ran counts. Issue 29: "0 runs" after 37 s of search."""
    monkeypatch.setattr(swarm, "STOP_SECONDS", 60.0)  # (a loaded machine may take long to answer)
    recipe, _ = recipe_of(COUNTER, params={"requests": 3, "limit": 3})
    with limits.armed(max_seconds=10), limits.phase("searching", engine=True):
        time.sleep(2)  # (as Ray's start takes, after the command computed the time left)
        result = swarm.check(recipe, ray_cluster, searches=2, runs=10_000_000, steps=6, seed=1, max_seconds=10)
    cov = result.coverage
    assert result.verdict is Verdict.INCONCLUSIVE and cov.stopped_by == "max-seconds"
    assert result.swarm.finished == (0, 1) and result.swarm.stopped == (0, 1), result.swarm.note
    assert cov.runs > 0 and "stopped at the time limit" in result.swarm.note, result.swarm.note


def test_an_error_in_the_driver_leaves_no_search_running(ray_cluster):
    """Any way out of the driver other than a stop (here the reporter's own error) cancels the
    searches still running: none is left holding a CPU of the cluster, where every later Ray
    search would wait for it (a test session hung that way, issue 29)."""
    recipe, _ = recipe_of(COUNTER, params={"requests": 3, "limit": 3})
    total = ray_cluster.cluster_resources()["CPU"]

    def fail(progress):
        if progress.done == 0 and ray_cluster.available_resources().get("CPU", 0) < total:
            raise RuntimeError("the reporter's own error")

    with pytest.raises(RuntimeError, match="the reporter's own error"):
        swarm.check(recipe, ray_cluster, searches=2, runs=10_000_000, steps=6, seed=1, max_seconds=None, reporter=fail)
    end = time.monotonic() + 60
    while ray_cluster.available_resources().get("CPU", 0) < total and time.monotonic() < end:
        time.sleep(0.2)
    assert ray_cluster.available_resources().get("CPU", 0) == total
