"""Bounded liveness in the fuzz engine: "not satisfied within N steps" is bounded, never violated.

fuzz.check(liveness=True) follows every liveness obligation on its random runs and reports
a violation only where the run is itself a behaviour on which the property fails: a dead
end with the obligation pending, a fair cycle with q false all around it, a bounded
response that came too late. Each one replays as a violation (liveness.violates, and the
trace through ITF); where the explicit engine says a property holds, fuzz never says it is
violated; otherwise the result says how far the runs went, never that the property holds.
"""

from __future__ import annotations

import random

import pytest
from conftest import spec_path

from ownership import (
    Request,
    Spec,
    action,
    eventually,
    ints,
    invariant,
    leads_to,
    param,
    per_request,
)
from ownership.api import model_for, replay_trace
from ownership.engines import fuzz, liveness
from ownership.errors import InternalError
from ownership.interpret.validate import build_model
from ownership.result import Verdict
from ownership.trace import read_itf, replay, write_itf

CI = {"profile": "ci", "database": None}
RETRY = spec_path("liveness/retry.py")
STRANDED = spec_path("liveness/stranded.py")
SPIN = spec_path("liveness/spin.py")


def fuzzed(model, *, runs: int = 60, steps: int = 20, **kw):
    return fuzz.check(model, runs=runs, steps=steps, liveness=True, **({"seed": 1, "database": None} | kw))


def replays(model, result) -> bool:
    """Whether the reported run, replayed on the model, is a behaviour violating its property."""
    trace = result.trace
    again = replay(trace, model)
    assert again.outcome == "passed"  # no safety violation on the way
    return liveness.violates(model, again.states, again.bindings, trace.loop, trace.violation.property)


def explicit_holds(spec: str, name: str, **kw) -> bool:
    """The explicit engine's answer for one liveness property (the others skipped)."""
    model = model_for(spec, **kw)
    others = [n for n in model.liveness_checked() if n != name]
    model = model_for(spec, skip=others, **kw)
    return liveness.check(model, states_expected=None).found is None


# --------------------------------------------------------------------------- what a run can show


def test_a_run_that_stops_with_the_request_still_in_decode_is_a_dead_end_violation(tmp_path):
    model = model_for(STRANDED, fixes=["no-timeout"])
    result = fuzzed(model)
    assert result.verdict is Verdict.VIOLATED
    v = result.violation
    assert v.property == "every-request-leaves" and v.requests == ["r1"] and v.step == 0
    assert [s.label() for s in result.trace.steps[1:]] == ["prealloc(r=r1)", "retire(r=r1)"]
    assert result.trace.loop == 2  # the last step: the run stops there
    assert "the run stops at step 2, where no action is enabled, and stays there forever" in v.message
    assert replays(model, result)
    out = tmp_path / "dead.json"
    write_itf(result.trace, out)
    again, _ = replay_trace(read_itf(out), spec=STRANDED)
    assert again.outcome == "violated" and again.violation.property == "every-request-leaves"
    # with the timeout the same run is no dead end: it does not violate any more
    fixed, _ = replay_trace(read_itf(out), spec=STRANDED, fixes=[])
    assert fixed.outcome == "passed"


def test_a_response_later_than_its_bound_is_a_finite_counterexample():
    model = model_for(STRANDED, params={"timeout_steps": 0})
    result = fuzzed(model)
    v = result.violation
    assert result.verdict is Verdict.VIOLATED and v.property == "retired-pages-return"
    assert result.trace.loop is None and v.step == 2 and len(result.trace.steps) == 3
    assert "q must hold within 0 steps: q does not hold at steps 2..2" in v.message
    assert replays(model, result)
    # a bound of 1 step is met by the timeout: fuzz does not call it violated
    ok = fuzzed(model_for(STRANDED, params={"timeout_steps": 1}), runs=100)
    assert ok.verdict is Verdict.BOUNDED and "retired-pages-return" in ok.liveness


def test_a_notice_lost_and_resent_forever_is_a_fair_lasso():
    model = model_for(f"{RETRY}:Retry")
    result = fuzzed(model)
    trace = result.trace
    assert result.verdict is Verdict.VIOLATED and trace.violation.property == "a-wait-ends"
    assert [s.label() for s in trace.steps[1:]] == ["start(r=r1)", "lose(r=r1)", "resend(r=r1)"]
    assert trace.loop == 1 and trace.steps[3].state == trace.steps[1].state
    assert "the run then repeats steps 2..3 forever (step 3 is the state of step 1)" in trace.violation.message
    assert "assuming weak fairness of lose, resend" in trace.violation.message
    assert result.liveness == {"a-wait-ends": "violated"}
    assert replays(model, result)


def test_a_spin_ends_under_weak_fairness_but_not_within_a_bound_larger_than_any_run():
    unfair = fuzzed(model_for(f"{SPIN}:Spin"))
    assert unfair.violation.property == "a-spin-ends" and unfair.trace.loop is not None
    weak = model_for(f"{SPIN}:SpinWeak", skip=["a-spin-ends-soon"])
    assert explicit_holds(f"{SPIN}:SpinWeak", "a-spin-ends")
    for seed in range(1, 4):
        assert fuzzed(weak, seed=seed, runs=30).verdict is Verdict.BOUNDED
    # within=1000 needs no fairness: the spin keeps q false for ever, which a run of 20 steps shows
    soon = model_for(f"{SPIN}:SpinWeak", skip=["a-spin-ends"])
    result = fuzzed(soon)
    assert result.violation.property == "a-spin-ends-soon"
    assert result.trace.loop == 1 and len(result.trace.steps) == 4
    assert "q never holds after it: the run repeats steps 2..3 forever" in result.violation.message
    assert replays(soon, result)


def test_weak_fairness_of_done_leaves_the_lost_notice_loop_and_strong_fairness_rules_it_out():
    """test_liveness: RetryWeak violates a-wait-ends, RetryStrong holds; fuzz agrees, and never
    calls RetryStrong violated however many requests and seeds."""
    assert not explicit_holds(f"{RETRY}:RetryWeak", "a-wait-ends")
    weak = fuzzed(model_for(f"{RETRY}:RetryWeak"))
    assert weak.violation.property == "a-wait-ends" and weak.trace.loop == 1
    assert "weak fairness of lose, resend, done" in weak.violation.message
    for requests in (1, 2):
        assert explicit_holds(f"{RETRY}:RetryStrong", "a-wait-ends", params={"requests": requests})
        strong = model_for(f"{RETRY}:RetryStrong", params={"requests": requests})
        for seed in range(1, 4):
            result = fuzzed(strong, seed=seed, runs=30, steps=30)
            assert result.verdict is Verdict.BOUNDED, result.violation


def test_a_cycle_that_postpones_another_requests_fair_step_is_no_counterexample_but_a_longer_one_is():
    """Two requests waiting: r1's notice lost and resent comes back to the same state, but
    lose(r2) is enabled all along and weakly fair, so that short cycle is not a behaviour;
    going round r2's loop too makes it one."""
    model = model_for(f"{RETRY}:Retry", params={"requests": 2})
    explorer = fuzz.Explorer(model)
    obligations = fuzz.Obligations(model, explorer)
    label = {b.label(): k for k, b in enumerate(model.bindings)}
    path = tuple(label[s] for s in ("start(r=r1)", "start(r=r2)", "lose(r=r1)", "resend(r=r1)",
                                    "lose(r=r2)", "resend(r=r2)"))
    assert obligations.judge(path[:4]) is None
    got = obligations.judge(path)
    assert got is not None and got.kind == "a-wait-ends" and len(got.path) == 6
    assert got.detail.loop == 2 and got.detail.trigger == 1
    states = [model.initial]
    for b in path:
        states.append(explorer.interp.step(states[-1], model.bindings[b]).state)
    bindings = [model.bindings[b] for b in path]
    assert liveness.violates(model, states, bindings, 2, "a-wait-ends")
    assert not liveness.violates(model, states[:5], bindings[:4], 2, "a-wait-ends")
    # strongly fair done is enabled on that cycle and never taken: no counterexample at all
    strong = model_for(f"{RETRY}:RetryStrong", params={"requests": 2})
    assert fuzz.Obligations(strong, fuzz.Explorer(strong)).judge(path) is None


def test_the_kernels_eventually_released_fails_on_pages_decode_never_frees():
    model = model_for(STRANDED, fixes=["no-timeout"], skip=["every-request-leaves", "retired-pages-return"])
    result = fuzzed(model)
    v = result.violation
    assert v.property == "eventually-released" and v.pages == [("decode", 0)] and v.step == 1
    assert "decode page 0 is owned at step 1 and never free after" in v.message
    assert result.trace.loop == 2 and replays(model, result)
    # with the timeout every page comes back: bounded, and the text says how far the runs went
    ok = fuzzed(model_for(STRANDED, skip=["every-request-leaves", "retired-pages-return"]), runs=50)
    assert ok.verdict is Verdict.BOUNDED
    assert ok.liveness["eventually-released"].startswith(
        "not violated in 50 random runs of at most 20 steps (bounded: fuzz cannot show that something never happens)")


# --------------------------------------------------------------------------- what a pass says


def test_a_property_no_run_violates_is_bounded_and_never_said_to_hold():
    result = fuzzed(model_for(f"{RETRY}:RetryStrong"), runs=50, steps=20)
    assert result.verdict is Verdict.BOUNDED and result.trace is None
    text = result.liveness["a-wait-ends"]
    assert text.startswith("not violated in 50 random runs of at most 20 steps (bounded: fuzz cannot show that"
                           " something never happens); ")
    ended = int(text.split("; ")[1].split(" run")[0])
    assert 0 < ended < 50 and text.endswith(" ended with it pending (of 50 in which it was pending)")
    assert "holds" not in text and "verified" not in text
    assert "strong fairness of done" in result.fairness


def test_a_property_whose_p_never_holds_says_so():
    model = model_for(STRANDED, skip=["every-request-leaves", "eventually-released"])
    never = fuzz.check(model, runs=20, steps=1, liveness=True, **CI)  # one step: prealloc, never a retire
    assert never.liveness["retired-pages-return"].endswith("; it was never pending (its p never held without its q)")


def test_without_liveness_asked_or_declared_nothing_changes():
    model = model_for(f"{RETRY}:Retry")
    off = fuzz.check(model, runs=30, steps=20, **CI)
    assert off.verdict is Verdict.BOUNDED and off.liveness == {} and off.fairness == ""
    # a spec without liveness: the same runs, step for step, with liveness asked or not
    pd = model_for("sglang_pd", fixes=["post-forward-retire"])
    a = fuzz.check(pd, runs=20, steps=20, **CI)
    b = fuzz.check(pd, runs=20, steps=20, liveness=True, **CI)
    assert b.liveness == {} and (a.verdict, a.coverage.transitions, a.coverage.states, a.coverage.runs) == \
        (b.verdict, b.coverage.transitions, b.coverage.states, b.coverage.runs)


class EndsBroken(Spec):
    """A request starts and stops; stopping breaks an invariant and leaves nothing enabled,
    with the request never done: at that step a safety and a liveness violation."""

    requests = param(1, "requests")
    stage = per_request(ints(0, 3), 0)

    @action
    def start(self, s, r: Request):
        """Start."""
        s.require(s.stage[r] == 0)
        s.stage[r] = 1

    @action
    def stop(self, s, r: Request):
        """Stop, in a state the invariant forbids."""
        s.require(s.stage[r] == 1)
        s.stage[r] = 2

    @invariant
    def never_stopped(self, s):
        """The request never stops."""
        return s.stage[1] != 2

    @eventually
    def done(self, s, r):
        """The request is done (it never is)."""
        return s.stage[r] == 3


class LateThenBroken(EndsBroken):
    """Starting must be answered at once (within=0): a liveness violation at step 1, before
    the invariant breaks at step 2."""

    @leads_to(within=0)
    def answered_at_once(self, s, r):
        """A started request is stopped at once."""
        return s.stage[r] == 1, s.stage[r] == 2


def test_at_the_same_step_a_safety_violation_wins_and_an_earlier_liveness_violation_comes_first():
    same = fuzzed(build_model(EndsBroken))
    assert same.violation.property == "never-stopped" and same.trace.loop is None
    assert same.liveness["done"].startswith("not violated in ") and "violation of never-stopped" in same.liveness["done"]
    first = fuzzed(build_model(LateThenBroken, skip=["done"]))
    assert first.violation.property == "answered-at-once" and first.violation.step == 1
    assert len(first.trace.steps) == 2 and first.trace.loop is None


class NothingToDo(Spec):
    """No action: the initial state is a dead end, where the request is never done."""

    requests = param(1, "requests")
    stage = per_request(ints(0, 2), 0)

    @eventually
    def done(self, s, r):
        """The request is done."""
        return s.stage[r] == 2


def test_a_dead_end_at_the_start_is_a_counterexample_of_no_steps():
    model = build_model(NothingToDo)
    result = fuzzed(model)
    assert result.violation.property == "done" and result.trace.loop == 0 and len(result.trace.steps) == 1
    assert replays(model, result)


def test_a_reported_run_that_does_not_replay_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(liveness, "violates", lambda *a: False)
    with pytest.raises(InternalError, match="does not violate it when replayed"):
        fuzzed(model_for(f"{RETRY}:Retry"))


class Toggle(Spec):
    """A request asks and is answered, over and over: every question is answered, though the
    run comes back to the state of a question again and again."""

    requests = param(1, "requests")
    stage = per_request(ints(0, 2), 0)  # 0 idle, 1 asked, 2 passed on (a dead end)

    @action
    def ask(self, s, r: Request):
        """Ask."""
        s.require(s.stage[r] == 0)
        s.stage[r] = 1

    @action
    def answer(self, s, r: Request):
        """Answer."""
        s.require(s.stage[r] == 1)
        s.stage[r] = 0

    @leads_to
    def answered(self, s, r):
        """A question is answered."""
        return s.stage[r] == 1, s.stage[r] == 0


class AskOnce(Toggle):
    """Asked once, then passed on for good: the request was asked at some point."""

    @action
    def pass_on(self, s, r: Request):
        """Stop: nothing is enabled afterwards."""
        s.require(s.stage[r] == 1)
        s.stage[r] = 2

    @eventually
    def asked(self, s, r):
        """The request is asked at some point (it is, at step 1 of any run that goes on)."""
        return s.stage[r] == 1


@pytest.mark.parametrize("cls, skip", [(Toggle, ()), (AskOnce, ("answered",))])
def test_a_cycle_on_which_q_holds_and_an_eventually_that_held_once_are_no_counterexamples(cls, skip):
    model = build_model(cls, skip=skip)
    assert liveness.check(model, states_expected=None).found is None
    for seed in range(1, 4):
        result = fuzzed(model, seed=seed, runs=20)
        assert result.verdict is Verdict.BOUNDED, result.violation
        assert all(t.startswith("not violated in 20 random runs") for t in result.liveness.values())


# --------------------------------------------------------------------------- against the explicit engine

CASES = [
    (f"{RETRY}:Retry", {"params": {"requests": 2}}),
    (f"{RETRY}:RetryWeak", {"params": {"requests": 2}}),
    (f"{RETRY}:RetryStrong", {"params": {"requests": 2}}),
    (f"{SPIN}:Spin", {"params": {"requests": 2}}),
    (f"{SPIN}:SpinWeak", {"params": {"requests": 2}}),
    (STRANDED, {}),
    (STRANDED, {"fixes": ["no-timeout"]}),
    (STRANDED, {"params": {"timeout_steps": 0}}),
    (STRANDED, {"params": {"requests": 2, "timeout_steps": 2}}),
]


IDS = [f"{spec.rsplit('/', 1)[-1]}-{kw}" for spec, kw in CASES]
SEEDS = random.Random(20240611).sample(range(2**32), 3)  # a few seeds, the same on every machine


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_whatever_fuzz_reports_violated_the_explicit_engine_finds_violated(case, seed):
    spec, kw = case
    result = fuzzed(model_for(spec, **kw), runs=15, steps=15, seed=seed)
    if result.verdict is not Verdict.VIOLATED:
        assert result.verdict is Verdict.BOUNDED and all(t.startswith("not violated") for t in result.liveness.values())
        return
    name = result.violation.property
    assert result.liveness[name] == "violated"
    assert not explicit_holds(spec, name, **kw)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_failure_a_random_walk_shows_is_a_behaviour_that_violates(case):
    """The step-by-step detector against liveness.violates, on 150 random walks per spec:
    whatever run it stops at replays as a violation, and where the explicit engine says a
    property holds it never stops."""
    spec, kw = case
    model = model_for(spec, **kw)
    holds = {n for n in model.liveness_checked() if explicit_holds(spec, n, **kw)}
    explorer = fuzz.Explorer(model)
    obligations = fuzz.Obligations(model, explorer)
    rng = random.Random(spec + repr(kw))
    found = 0
    for _ in range(150):
        path: tuple[int, ...] = ()
        got = obligations.judge(path)
        while got is None and len(path) < 25:
            node = explorer.walk(path)[0][-1]
            enabled = [b for b in range(len(model.bindings)) if explorer.child(path, node, b) is not None]
            if not enabled:
                break  # a dead end with nothing pending: the run is over
            path += (rng.choice(enabled),)
            got = obligations.judge(path)
        if got is None:
            continue
        found += 1
        assert isinstance(got.detail, fuzz.LiveFailure) and got.kind not in holds
        nodes, flags = explorer.walk(got.path)
        assert not flags and len(nodes) == len(got.path) + 1
        states = [n.state for n in nodes]
        assert liveness.violates(model, states, [model.bindings[b] for b in got.path], got.detail.loop, got.kind)
    assert found > 0 or holds == set(model.liveness_checked())
