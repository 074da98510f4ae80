"""The benchmark suite's own models (benchmarks/peers/): they load, find the bug they model,
verify with its fix, and every exhaustive engine counts the same states on them.

Their Promela twins need SPIN, which the suite installs (benchmarks/setup.sh) but CI does
not; benchmarks/run.py checks SPIN's counts equal to ours on every run, and the counts below
are the ones SPIN 6.5.2 gave (benchmarks/RESULTS.md)."""

from __future__ import annotations

import pytest
from conftest import ROOT, run_cli

from ownership import Verdict, model_for
from ownership.engines import batch, native, per_state

INCIDENT = str(ROOT / "benchmarks" / "peers" / "incident.py")


def test_the_incident_model_finds_the_leak_in_four_steps():
    got = batch.check(model_for(INCIDENT))
    assert got.verdict is Verdict.VIOLATED and got.violation.property == "stale-read"
    assert [s.action for s in got.trace.steps[1:]] == ["arrive", "admit", "write", "read"]


def test_with_the_fix_every_engine_verifies_the_same_states():
    model = model_for(INCIDENT, fixes=["withdraw-rejected"])
    ref = batch.check(model)
    assert ref.verdict is Verdict.VERIFIED and ref.coverage.states == 177_175  # = SPIN's
    fast = native.check(model)
    assert (fast.verdict, fast.coverage.states, fast.coverage.transitions) == \
        (Verdict.VERIFIED, 177_175, ref.coverage.transitions)
    sym_b, sym_n = batch.check(model, symmetry=True), native.check(model, symmetry=True)
    assert sym_b.coverage.states == sym_n.coverage.states < 177_175
    assert sym_b.coverage.states_before_symmetry == sym_n.coverage.states_before_symmetry == 177_175


@pytest.mark.parametrize("params", [{"pages": 4, "requests": 2, "longest": 2}, {"pages": 3, "requests": 2, "longest": 3}])
def test_the_per_state_engine_agrees_at_small_sizes(params):
    model = model_for(INCIDENT, params=params, fixes=["withdraw-rejected"])
    a, b = per_state.check(model), batch.check(model)
    assert (a.verdict, a.coverage.states, a.coverage.transitions) == (b.verdict, b.coverage.states, b.coverage.transitions)


def test_the_cli_tells_the_incident_in_the_protocols_words():
    run = run_cli("check", "benchmarks/peers/incident.py")
    assert run.code == 1
    assert "prefill rejects it (one-page placeholder)" in run.out and "decode attends over pages 0, 1, 2" in run.out
