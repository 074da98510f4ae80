"""The explicit engine: pinned state counts, limits, interruption, and what a pass claims."""

from __future__ import annotations

import pytest
from conftest import spec_path

from ownership import Verdict, model_for
from ownership.engines import per_state


@pytest.mark.parametrize(("requests", "states"), [(1, 3), (2, 9), (3, 27)])
def test_independent_requests_give_three_to_the_requests_states(requests, states):
    """Counter: each request is NEW, RUNNING or DONE, independently: 3^R states."""
    result = per_state.check(model_for(spec_path("counter.py"), params={"requests": requests, "limit": 3}))
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == states
    assert result.coverage.depth == 2 * requests


def test_a_state_limit_gives_a_bounded_verdict_with_the_depth_fully_checked():
    """--max-states: bounded, and it says up to which depth every execution was checked."""
    result = per_state.check(model_for("sglang_pd", fixes=["door-retire"]), max_states=100)
    assert result.verdict is Verdict.BOUNDED
    assert not result.coverage.complete
    assert result.coverage.stopped_by == "max-states"
    assert 0 < result.coverage.bound_depth < 14
    assert "not every reachable state" in result.coverage.describe()


def test_a_depth_limit_checks_exactly_that_many_steps():
    """--max-depth K: every execution of at most K steps, nothing claimed beyond."""
    result = per_state.check(model_for("sglang_pd"), max_depth=5)
    assert result.verdict is Verdict.BOUNDED
    assert result.coverage.bound_depth == 5
    deeper = per_state.check(model_for("sglang_pd"), max_depth=6)
    assert deeper.verdict is Verdict.VIOLATED


def test_ctrl_c_stops_cleanly_with_an_inconclusive_verdict_and_the_coverage_so_far():
    """A KeyboardInterrupt during the search keeps what was found and claims no pass."""
    def interrupt(progress):
        raise KeyboardInterrupt

    result = per_state.check(model_for("sglang_pd", fixes=["door-retire"]), reporter=interrupt, report_every=0)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.coverage.stopped_by == "interrupt"
    assert result.coverage.states > 0


def test_progress_reaches_the_reporter_and_the_engine_prints_nothing(capsys):
    """Engines never print: progress goes to the reporter."""
    seen = []
    per_state.check(model_for("sglang_pd", fixes=["door-retire"]), reporter=seen.append, report_every=0)
    assert seen and seen[-1].states > 0
    assert capsys.readouterr() == ("", "")


def test_an_invariant_broken_by_the_first_step_gives_a_one_step_trace():
    """limit=0: the initial state (nothing running) holds; the first start breaks it."""
    result = per_state.check(model_for(spec_path("counter.py"), params={"limit": 0}))
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == "at-most-limit-running"
    assert result.violation.step == 1
    assert len(result.trace.steps) == 2


def test_a_verified_result_reports_unreached_sometimes_properties_as_false():
    """A complete search that never reached a sometimes property says so (vacuity)."""
    result = per_state.check(model_for(spec_path("counter.py")))
    assert result.sometimes == {"all-done": True, "never": False}
