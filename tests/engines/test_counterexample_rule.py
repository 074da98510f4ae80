"""The one counterexample rule (issue 29, item 1; ownership/confirm.py): before any engine's
violation is reported, the concrete interpreter re-runs the whole trace from the initial state;
a trace that does not re-run is an internal error (exit 4), never a verdict.

Each engine builds its trace from states it stored itself (packed rows, partitions, checkpoint
files, compiled code, a z3 model, a shrunk random run). Here the states an engine hands to
`build_trace` are damaged as a damaged store would damage them (the state after step 1 is
replaced by the initial state, the last step and its flags left as they were), and every engine
must then refuse to report the violation. Each case first checks that the undamaged engine
reports it, so that the refusal is the rule's doing.
"""

from __future__ import annotations

import pytest
from conftest import run_cli, spec_path

from ownership import api
from ownership.confirm import confirm
from ownership.errors import InternalError
from ownership.result import EXIT_INTERNAL, Verdict

STRANDED = spec_path("liveness/stranded.py")


def damage_stored_states(monkeypatch, module) -> list[int]:
    """Make `module`'s build_trace see the state after step 1 replaced by the initial state,
    as a damaged store of states would give it; returns a list that counts the damaged traces."""
    real = module.build_trace
    damaged: list[int] = []

    def build_trace(model, states, bindings, flags, **kw):
        if len(states) > 2:
            states = [states[0], states[0], *states[2:]]
            damaged.append(len(states))
        return real(model, states, bindings, flags, **kw)

    monkeypatch.setattr(module, "build_trace", build_trace)
    return damaged


def engine_module(name: str):
    import importlib

    return importlib.import_module(f"ownership.engines.{name}")


#: (case, the engine module that builds the trace, api.check's arguments)
CASES = [
    ("batch", "batch", dict(spec="sglang_pd")),
    ("batch, 2 workers", "batch", dict(spec="sglang_pd", workers=2)),
    ("batch, symmetry", "batch", dict(spec="sglang_pd", params={"requests": 3}, symmetry=True)),
    ("native", "native", dict(spec="sglang_pd", native=True)),
    ("bmc", "bmc_replay", dict(spec="sglang_pd", engine="bmc")),
    ("fuzz", "fuzz", dict(spec="sglang_pd", engine="fuzz", seed=1)),
    ("per-state explicit (a pool past 1,024 pages)", "per_state",
     dict(spec="sglang_pd", params={"decode_pool": 1100})),
]


@pytest.mark.parametrize("case, module, kwargs", CASES, ids=[c[0] for c in CASES])
def test_an_engine_whose_trace_does_not_re_run_gives_no_verdict(monkeypatch, case, module, kwargs):
    """Undamaged, the engine reports the incident's stale-read; with its stored states damaged,
    api.check raises InternalError (exit 4) instead of reporting a violation."""
    kwargs = dict(kwargs)
    spec = kwargs.pop("spec")
    assert api.check(spec, **kwargs).verdict is Verdict.VIOLATED
    damaged = damage_stored_states(monkeypatch, engine_module(module))
    with pytest.raises(InternalError, match="not a run of the spec"):
        api.check(spec, **kwargs)
    assert damaged, f"{case}: the engine did not build its trace through build_trace"


def test_a_resumed_checkpoint_whose_trace_does_not_re_run_gives_no_verdict(monkeypatch, tmp_path):
    """A search resumed from its checkpoint rebuilds the counterexample from the stored levels:
    damaged, it is an internal error, not a verdict."""
    where = str(tmp_path / "ck")
    first = api.check("sglang_pd", checkpoint=where, max_depth=3)
    assert first.verdict is Verdict.BOUNDED
    damaged = damage_stored_states(monkeypatch, engine_module("partitioned"))
    with pytest.raises(InternalError, match="not a run of the spec"):
        api.check("sglang_pd", resume=where)
    assert damaged


@pytest.mark.parametrize("module, engine", [("liveness", "explicit"), ("liveness", "bmc")])
def test_a_lasso_that_does_not_re_run_gives_no_verdict(monkeypatch, module, engine):
    """A liveness counterexample (a lasso of the explicit engine's reachable graph, or of
    bmc's unrolling, both built by liveness.lasso_trace) damaged the same way is an internal
    error too."""
    kwargs = dict(fixes=["no-timeout"], engine=engine)
    assert api.check(STRANDED, **kwargs).trace.violation.property == "every-request-leaves"
    damage_stored_states(monkeypatch, engine_module(module))
    with pytest.raises(InternalError, match="not a run of the spec"):
        api.check(STRANDED, **kwargs)


def test_a_partitioned_search_on_ray_is_held_to_the_rule(monkeypatch, ray_cluster):
    """The Ray driver rebuilds a counterexample from partition to partition: damaged, the
    rule refuses it (partitioned.check is what api.check runs for --ray)."""
    from ownership.engines import partitioned
    from ownership.engines.cluster import Recipe

    model = api.model_for("sglang_pd")
    recipe = Recipe.of("sglang_pd", model, symmetry=False)
    damage_stored_states(monkeypatch, partitioned)
    result = partitioned.check(model, recipe=recipe, ray=ray_cluster, parts=2)
    result.model = model
    assert result.verdict is Verdict.VIOLATED
    with pytest.raises(InternalError, match="not a run of the spec"):
        confirm(result)


def test_the_command_line_says_internal_error_and_exits_4(monkeypatch):
    """Through the CLI the refusal is one `internal error:` line and exit 4, never 1."""
    damage_stored_states(monkeypatch, engine_module("batch"))
    run = run_cli("check", "sglang_pd")
    assert run.code == EXIT_INTERNAL, (run.code, run.out, run.err)
    assert "internal error:" in run.err and "not a run of the spec" in run.err
    assert "violated" not in run.out


def test_a_trace_cut_short_or_with_another_explanation_is_refused():
    """The rule compares the property, its step and its explanation, not only the outcome."""
    result = api.check("sglang_pd")
    trace = result.trace
    trace.violation.step -= 1
    with pytest.raises(InternalError, match="at step 6, not at step 5"):
        confirm(result)
    trace.violation.step += 1
    trace.violation.message = "something else"
    with pytest.raises(InternalError, match="another explanation"):
        confirm(result)
    trace.violation.property = "double-free"
    with pytest.raises(InternalError, match="found stale-read, not double-free"):
        confirm(result)
