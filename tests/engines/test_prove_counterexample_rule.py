"""The one counterexample rule holds for `ownership prove` too (issue 29, item 1;
ownership/confirm.py): a base-case counterexample of k-induction is re-run by the concrete
interpreter before it is reported; one that does not re-run is exit 4 ("internal error"),
never exit 1.

The proof's base case builds its trace from a z3 model through build_trace (in
ownership/engines/bmc_replay.py); here the states it hands over are damaged as
tests/engines/test_counterexample_rule.py damages them (the state after step 1 replaced by the
initial state). The undamaged proof is checked first, so that the
refusal is the rule's doing.
"""

from __future__ import annotations

from conftest import run_cli
from test_counterexample_rule import damage_stored_states, engine_module

from ownership.result import EXIT_INTERNAL


def test_prove_reports_a_base_case_counterexample_only_if_it_re_runs(monkeypatch):
    run = run_cli("prove", "sglang_pd")
    assert run.code == 1 and "violated: stale-read" in run.out, (run.code, run.out, run.err)
    damaged = damage_stored_states(monkeypatch, engine_module("bmc_replay"))
    run = run_cli("prove", "sglang_pd")
    assert damaged, "the proof did not build its trace through build_trace"
    assert run.code == EXIT_INTERNAL, (run.code, run.out, run.err)
    assert "internal error:" in run.err and "not a run of the spec" in run.err
    assert "violated" not in run.out


def test_prove_json_says_internal_error_not_violated(monkeypatch):
    damage_stored_states(monkeypatch, engine_module("bmc_replay"))
    run = run_cli("prove", "sglang_pd", "--json")
    assert run.code == EXIT_INTERNAL and '"violated"' not in run.out, (run.code, run.out)
