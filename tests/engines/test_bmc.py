"""The symbolic engine (ownership.engines.bmc over ownership.interpret.smt): agreement with the
explicit engine, the z3 step relation against the concrete interpreter, k-induction, symbolic
parameters, honest verdicts, lazy z3, and the `prove` command.

Kept fast for a 2-core CI machine: small depths, small specs (the kernel zoo of tests/specs/, and tests/specs_bmc/ for what only bmc needs), sglang_pd at
one request where a complete run is needed."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ownership.api import model_for
from ownership.engines import bmc, per_state
from ownership.errors import SpecError, UsageError
from ownership.interpret.concrete import Concrete
from ownership.lang.loader import load_spec, shipped_specs
from ownership.lang.model import Model
from ownership.result import Verdict
from ownership.trace import replay

ZOO = (ROOT / "tests") / "specs_bmc"          # what only the symbolic engine needs
KERNEL_ZOO = (ROOT / "tests") / "specs"       # the seeded bugs every engine must catch

#: One seeded bug per property: (spec file, property, length of the shortest counterexample).
#: The kernel's come from the shared zoo of tests/specs (test_kernel_properties.py, test_batch.py).
SEEDED = [
    ("stale_read.py", "stale-read", 2),
    ("read_unowned.py", "read-unowned", 3),
    ("write_unowned.py", "write-unowned", 3),
    ("free_in_flight.py", "free-in-flight", 2),
    ("double_free.py", "double-free", 3),
    ("leak.py", "leak", 2),
    ("prefix_cache.py", "stale-read", 5),
    ("invariant.py", "at-most-one-admitted", 2),
]

FIXES = ["post-forward-retire", "door-retire", "pool-fits-context", "coverage-check"]


def zoo(name: str, **params: int) -> Model:
    where = ZOO if (ZOO / name).exists() else KERNEL_ZOO
    return model_for(str(where / name), params=params)


def steps(result: Any) -> int:
    return len(result.trace.steps) - 1


# --------------------------------------------------------------------------- agreement


def test_bmc_finds_the_incident_as_the_same_shortest_counterexample_as_the_explicit_engine() -> None:
    """On sglang_pd without fixes both engines report stale-read in 6 steps, a cross-request leak."""
    model = model_for("sglang_pd")
    ex = per_state.check(model)
    sy = bmc.check(model, max_depth=8)
    assert ex.verdict is sy.verdict is Verdict.VIOLATED
    assert ex.violation.property == sy.violation.property == "stale-read"
    assert steps(ex) == steps(sy) == 6
    assert "cross-request leak" in sy.violation.message
    assert sy.trace.engine == "bmc"


@pytest.mark.parametrize("spec, prop, length", SEEDED, ids=[s[0] for s in SEEDED])
def test_both_engines_catch_every_seeded_bug_with_the_same_property_and_length(spec: str, prop: str, length: int) -> None:
    """Every member of the zoo is violated under both engines: same property, same shortest length."""
    model = zoo(spec)
    ex = per_state.check(model)
    sy = bmc.check(model, max_depth=length + 2)
    assert ex.verdict is sy.verdict is Verdict.VIOLATED
    assert ex.violation.property == sy.violation.property == prop
    assert steps(ex) == steps(sy) == length


@pytest.mark.parametrize("fix", [None, *FIXES])
def test_both_engines_agree_completely_on_sglang_pd_with_one_request(fix: str | None) -> None:
    """With one request the whole state space is small: bmc exhausts every execution and agrees
    with the explicit engine on the verdict, the longest depth and the sometimes-properties."""
    model = model_for("sglang_pd", params={"requests": 1}, fixes=[fix] if fix else [])
    ex = per_state.check(model)
    sy = bmc.check(model, max_depth=12)
    assert ex.verdict is sy.verdict
    if ex.verdict is Verdict.VIOLATED:
        assert ex.violation.property == sy.violation.property
        assert steps(ex) == steps(sy)
    else:
        assert sy.verdict is Verdict.VERIFIED and sy.coverage.complete
        assert sy.coverage.depth == ex.coverage.depth
        assert sy.sometimes == ex.sometimes


@pytest.mark.parametrize("fix", FIXES)
def test_both_engines_find_no_violation_within_six_steps_of_each_fixed_sglang_pd(fix: str) -> None:
    """At the default parameters each fix leaves no violation within 6 steps, under both engines,
    and the bmc verdict says `bounded`, with the bound, never more."""
    model = model_for("sglang_pd", fixes=[fix])
    ex = per_state.check(model, max_depth=6)
    sy = bmc.check(model, max_depth=6, sometimes=False)
    assert ex.verdict is sy.verdict is Verdict.BOUNDED
    assert sy.coverage.bound_depth == 6 and not sy.coverage.complete
    assert "no violation within 6 steps" in sy.coverage.describe()


@pytest.mark.parametrize("name", sorted(shipped_specs()))
def test_both_engines_agree_on_every_shipped_spec_without_fixes_and_with_all_of_them(name: str) -> None:
    """Every shipped spec, with no fix and with every fix: violated or not within 6 steps, the
    property and the length of the shortest counterexample agree between the engines."""
    cls = load_spec(name)
    for fixes in ([], list(cls._fixes)):
        model = model_for(name, fixes=fixes)
        ex = per_state.check(model, max_depth=6)
        sy = bmc.check(model, max_depth=6, sometimes=False)
        assert (ex.verdict is Verdict.VIOLATED) == (sy.verdict is Verdict.VIOLATED), fixes
        if ex.verdict is Verdict.VIOLATED:
            assert ex.violation.property == sy.violation.property, fixes
            assert steps(ex) == steps(sy), fixes


def test_a_skipped_property_is_skipped_by_both_engines() -> None:
    """--skip double-free: both engines then verify the zoo spec (bmc: no execution is longer
    than 3 steps, so the unrolling to 5 covers them all)."""
    model = model_for(str(KERNEL_ZOO / "double_free.py"), skip=["double-free"])
    assert per_state.check(model).verdict is Verdict.VERIFIED
    assert bmc.check(model, max_depth=5).verdict is Verdict.VERIFIED


def test_each_engines_counterexample_replays_under_the_other_engines_interpreter() -> None:
    """The bmc trace replays concretely (same property, no divergence), and the explicit trace
    satisfies the z3 step relation at every step and the z3 violation condition at its end."""
    for model in (model_for("sglang_pd"), zoo("free_in_flight.py"), zoo("leak.py")):
        ex = per_state.check(model)
        sy = bmc.check(model, max_depth=8)
        again = replay(sy.trace, model)
        assert again.outcome == "violated" and again.diverged_step is None
        assert again.violation is not None and again.violation.property == sy.violation.property
        assert bmc.confirm_trace(ex.trace, model) is None
        assert bmc.confirm_trace(sy.trace, model) is None


def test_the_symbolic_replay_rejects_a_trace_that_a_fix_breaks() -> None:
    """confirm_trace is not vacuous: the incident's trace does not fit the spec with door-retire."""
    trace = per_state.check(model_for("sglang_pd")).trace
    assert bmc.confirm_trace(trace, model_for("sglang_pd", fixes=["door-retire"])) is not None


def test_an_assignment_out_of_its_domain_is_a_spec_error_under_both_engines() -> None:
    """The counter assigned before its guard: the concrete interpreter refuses `used := 3`; bmc
    reports the same SpecError (file and line) instead of wrapping the value."""
    model = zoo("spec_error.py")
    with pytest.raises(SpecError) as ex:
        per_state.check(model)
    with pytest.raises(SpecError) as sy:
        bmc.check(model, max_depth=5)
    assert str(ex.value) == str(sy.value)
    assert (sy.value.file, sy.value.line) == (ex.value.file, ex.value.line)
    assert "used := 3" in str(sy.value)
    assert sy.value.steps == ex.value.steps == ["take()", "take()"]


def test_bmc_verifies_when_no_execution_is_longer_than_the_depth_reached() -> None:
    """An unrolling that becomes unsatisfiable covers every execution: verified, complete, and
    the depth is the explicit engine's."""
    model = zoo("param_branch.py")
    sy = bmc.check(model, max_depth=10)
    assert sy.verdict is Verdict.VERIFIED and sy.coverage.complete
    assert sy.coverage.depth == per_state.check(model).coverage.depth == 2


def test_a_cyclic_spec_is_only_bounded_however_deep_bmc_goes() -> None:
    """Executions of the cycle spec never end: bmc says bounded with its bound, not verified."""
    sy = bmc.check(zoo("cycle.py"), max_depth=5)
    assert sy.verdict is Verdict.BOUNDED and sy.coverage.bound_depth == 5


# --------------------------------------------------------------------------- the step relation


def _reachable(model: Model, limit: int = 3000) -> list[tuple[int, ...]]:
    interp = Concrete(model)
    seen = {model.initial}
    frontier = [model.initial]
    while frontier and len(seen) < limit:
        nxt = []
        for state in frontier:
            for b in model.bindings:
                try:
                    out = interp.step(state, b)
                except SpecError:
                    continue
                if out is not None and out.state not in seen:
                    seen.add(out.state)
                    nxt.append(out.state)
        frontier = nxt
    return sorted(seen)


@functools.cache
def _case(name: str) -> tuple[Model, Any, list[tuple[int, ...]]]:
    from ownership.interpret.smt import encode

    if name.startswith("sglang_pd"):
        fixes = name.split("+")[1:]
        model = model_for("sglang_pd", fixes=fixes)
    elif name.startswith("shipped:"):
        model = model_for(name.removeprefix("shipped:"))
    else:
        model = zoo(name)
    return model, encode(model), _reachable(model)


CASES = ["sglang_pd", "sglang_pd+door-retire+coverage-check", "free_in_flight.py", "double_free.py",
         "spec_error.py", "leak.py", "invariant.py", "prefix_cache.py", "shipped:vllm_block_pool",
         "shipped:sglang_disagg", "shipped:vllm_nixl_pd", "shipped:vllm_nixl_load_failure"]


@functools.cache
def _solver() -> Any:
    import z3

    return z3.SolverFor("QF_BV")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES), st.booleans(), st.data())
def test_the_z3_step_relation_has_exactly_the_concrete_successor(name: str, anywhere: bool, data: Any) -> None:
    """From a fixed pre-state (reachable, or any in-domain state) and a fixed binding, the z3
    transition has exactly one model, the concrete successor, or none when the action is
    disabled; the z3 flag, error and state-property conditions hold exactly when the concrete
    interpreter raises that flag, that SpecError or that violation."""
    import z3

    model, enc, reachable = _case(name)
    if anywhere:
        state = tuple(data.draw(st.integers(s.lo, s.hi)) for s in enc.slot_of)
    else:
        state = data.draw(st.sampled_from(reachable))
    b = data.draw(st.integers(0, len(model.bindings) - 1))
    binding = model.bindings[b]
    x = [z3.BoolVal(bool(v)) if enc.slot_of[i].is_bool else z3.BitVecVal(v, enc.W) for i, v in enumerate(state)]
    act = z3.BitVecVal(b, enc.act_bits)

    def holds(e: Any) -> bool:
        return z3.is_true(z3.simplify(enc.at(e, x, act)))

    interp = Concrete(model)
    try:
        out = interp.step(state, binding)
        error = False
    except SpecError:
        out, error = None, True
    assert holds(enc.bindings[b].error) == error
    solver = _solver()
    solver.push()
    try:
        solver.add(enc.equals(enc.x, state), enc.act == b, enc.trans)
        if error:
            return
        if out is None:
            assert solver.check() == z3.unsat
            return
        assert solver.check() == z3.sat
        assert enc.decode(solver.model(), enc.y) == out.state
        solver.add(z3.Not(enc.equals(enc.y, out.state)))
        assert solver.check() == z3.unsat
    finally:
        solver.pop()
    raised = {f.prop for f in out.flags}
    for prop in enc.step_props():
        assert holds(enc.step_bad([prop])) == (prop in raised), prop
    state_raised = {f.prop for f in interp.state_flags(state)}
    for prop in [name for name, _ in enc.invariants] + (["leak"] if model.checks_leak else []):
        assert holds(enc.state_bad([prop])) == (prop in state_raised), prop


# --------------------------------------------------------------------------- symbolic parameters


def _sym(model: Model, *texts: str) -> Any:
    from ownership.interpret.smt import parse_symbolic

    return parse_symbolic(texts, model.spec_cls, model.env)


def test_the_leak_needs_a_prefill_pool_smaller_than_the_context_window() -> None:
    """With prefill_pool symbolic in 1..8 (context 3), the violating values are exactly 1..2,
    each with the 6-step stale-read; 3..8 have no violation within the bound."""
    model = model_for("sglang_pd")
    result = bmc.check(model, max_depth=7, symbolic=_sym(model, "prefill_pool=1..8"))
    assert result.verdict is Verdict.VIOLATED
    assert result.witness["prefill_pool"] < model.env["context"]
    assert result.trace.params["prefill_pool"] == result.witness["prefill_pool"]
    answer = result.parameters
    assert answer is not None and result.witness_model is not None
    assert sorted(o.values["prefill_pool"] for o in answer.violating) == [1, 2]
    assert {(o.depth, o.property) for o in answer.violating} == {(6, "stale-read")}
    assert answer.safe_values() == [(3, 8)]
    assert "prefill_pool in 3..8: no violation within 7 steps" in answer.describe()
    assert replay(result.trace, result.witness_model).outcome == "violated"


def test_a_prefill_pool_at_least_the_context_window_is_safe_within_the_bound() -> None:
    """prefill_pool symbolic in 3..8 (>= context 3): no violation within the bound."""
    model = model_for("sglang_pd")
    result = bmc.check(model, max_depth=6, symbolic=_sym(model, "prefill_pool=3..8"), sometimes=False)
    assert result.verdict is Verdict.BOUNDED and result.coverage.bound_depth == 6
    assert result.parameters is not None and not result.parameters.violating


def test_prove_shows_a_prefill_pool_at_least_the_context_window_safe_at_every_depth() -> None:
    """With one request (fast), prove over prefill_pool in 3..8 is verified for every depth,
    and over 1..8 it is violated in the base case at a value below the context window."""
    model = model_for("sglang_pd", params={"requests": 1})
    safe = bmc.prove(model, symbolic=_sym(model, "prefill_pool=3..8"))
    assert safe.verdict is Verdict.VERIFIED and safe.coverage.complete
    broken = bmc.prove(model, symbolic=_sym(model, "prefill_pool=1..8"))
    assert broken.verdict is Verdict.VIOLATED and broken.witness["prefill_pool"] < 3


def test_a_parameter_that_sizes_a_pool_cannot_be_symbolic() -> None:
    """`context` sizes the prefill pool: refused with the pool named and the spec's file and line."""
    model = model_for("sglang_pd")
    with pytest.raises(SpecError) as err:
        bmc.check(model, max_depth=2, symbolic=_sym(model, "context=1..5"))
    assert "sizes pool prefill" in str(err.value)
    assert err.value.file and err.value.file.endswith("sglang_pd.py") and err.value.line


def test_a_parameter_used_in_python_control_flow_cannot_be_symbolic() -> None:
    """param_branch.py branches on `limit` with `if`: refused, naming the file and the line."""
    model = zoo("param_branch.py")
    with pytest.raises(SpecError) as err:
        bmc.check(model, max_depth=2, symbolic=_sym(model, "limit=1..3"))
    source = (ZOO / "param_branch.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, start=1) if "if self.limit" in text)
    assert (err.value.file or "").endswith("param_branch.py") and err.value.line == line
    assert "limit cannot be symbolic" in str(err.value)


def test_a_symbolic_parameter_outside_the_spec_is_a_usage_error() -> None:
    """An unknown name or an empty range is bad input (exit 2), with a close match suggested."""
    model = model_for("sglang_pd")
    with pytest.raises(UsageError, match="prefill_pool"):
        _sym(model, "prefill_pol=1..3")
    with pytest.raises(UsageError, match="empty"):
        _sym(model, "prefill_pool=5..3")


def test_tracing_with_a_symbolic_parameter_leaves_the_cached_trace_alone() -> None:
    """The parametric trace is a fresh TracedModel; the model's cached one still has ints."""
    from ownership.interpret.smt import trace_parametric
    from ownership.ir.tracer import trace_model

    model = model_for("sglang_pd")
    before = trace_model(model)
    clone, traced, by_index = trace_parametric(model, _sym(model, "prefill_pool=1..8"))
    assert traced is not before and trace_model(model) is before
    assert model.spec.prefill_pool == 2 and clone.spec is not model.spec  # type: ignore[attr-defined]
    assert list(by_index) == [model.width]


# --------------------------------------------------------------------------- prove


def test_a_lemma_makes_one_induction_step_enough() -> None:
    """The cycle spec runs forever; with its lemma, 1-induction proves every property."""
    result = bmc.prove(zoo("cycle.py", with_lemma=1), k=3)
    assert result.verdict is Verdict.VERIFIED and result.k == 1
    assert "proved by k-induction with k = 1" in result.coverage.describe()


def test_a_failed_induction_shows_a_possibly_unreachable_counterexample_and_a_hint() -> None:
    """Without the lemma, induction fails up to k: inconclusive (never verified), with the
    counterexample to induction (k + 1 states or more), its property and the hint."""
    result = bmc.prove(zoo("cycle.py"), k=2)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.coverage.stopped_by == "induction-failed" and result.coverage.bound_depth == 2
    cti = result.cti
    assert cti is not None and cti.k == 2 and len(cti.states) >= 3
    assert cti.property and cti.message and "lemma" in cti.hint
    assert cti.trace.steps[0].state != model_for(str(ZOO / "cycle.py")).show(zoo("cycle.py").initial)


def test_a_false_lemma_is_reported_violated_by_prove_and_ignored_by_check() -> None:
    """A lemma that fails in a reachable state is a base-case violation of prove; check (both
    engines) does not treat lemmas as properties of the protocol."""
    model = zoo("cycle.py", with_lemma=2)
    result = bmc.prove(model, k=3)
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == "tables-match-the-kernel" and steps(result) == 1
    assert bmc.check(model, max_depth=3).verdict is Verdict.BOUNDED
    assert per_state.check(model).verdict is Verdict.VERIFIED


def test_prove_reports_a_real_bug_from_the_base_case() -> None:
    """A seeded bug fails the base case: violated, with the shortest trace."""
    result = bmc.prove(zoo("double_free.py"), k=4)
    assert result.verdict is Verdict.VIOLATED and result.violation.property == "double-free"
    assert steps(result) == 3


# --------------------------------------------------------------------------- honest verdicts


def test_a_solver_unknown_is_inconclusive_never_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """When z3 answers unknown, check and prove say inconclusive (exit 3), with the reason."""
    import z3

    monkeypatch.setattr(z3.Solver, "check", lambda self, *a: z3.unknown)
    monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: "incomplete quantifiers")
    model = zoo("param_branch.py")
    for result in (bmc.check(model, max_depth=5), bmc.prove(model, k=2)):
        assert result.verdict is Verdict.INCONCLUSIVE
        assert result.verdict.exit_code == 3
        assert "unknown" in (result.coverage.stopped_by or "")


def test_running_out_of_time_is_inconclusive() -> None:
    """A deadline that has passed stops the run: inconclusive, not bounded."""
    result = bmc.check(model_for("sglang_pd", fixes=["door-retire"]), max_depth=20, max_seconds=1e-6)
    assert result.verdict is Verdict.INCONCLUSIVE and result.coverage.stopped_by == "max-seconds"


def test_engines_never_print_and_report_progress_through_the_reporter(capsys: pytest.CaptureFixture[str]) -> None:
    """bmc.check and bmc.prove write nothing; each finished depth reaches the reporter."""
    seen: list[Any] = []
    bmc.check(zoo("cycle.py"), max_depth=3, reporter=seen.append)
    bmc.prove(zoo("cycle.py"), k=2, reporter=seen.append)
    assert capsys.readouterr() == ("", "")
    assert [p.depth for p in seen[:4]] == [0, 1, 2, 3]
    assert all(p.seconds >= 0 and p.queries > 0 for p in seen)


def test_the_api_entry_point_refuses_a_state_limit_and_parses_symbolic_ranges() -> None:
    """bmc.run is what `ownership check --engine bmc` calls: --max-states is refused, ranges parsed."""
    model = model_for("sglang_pd")
    with pytest.raises(UsageError, match="max-states"):
        bmc.run(model, max_states=10)
    result = bmc.run(model, max_depth=6, symbolic=["prefill_pool=3..4"])
    assert result.verdict is Verdict.BOUNDED and [p.name for p in result.symbolic] == ["prefill_pool"]


# --------------------------------------------------------------------------- z3 stays lazy


def test_checking_with_the_explicit_engine_never_imports_z3() -> None:
    """`ownership check` (explicit) runs without loading z3, and importing the symbolic engine
    and the prove command does not load it either."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from ownership.cli import cli\n"
        "r = CliRunner().invoke(cli, ['check', 'sglang_pd', '--fix', 'door-retire'])\n"
        "assert r.exit_code == 0, r.output\n"
        "import ownership.cli.prove, ownership.engines.bmc\n"
        "print('z3' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- the prove command


def _prove(*args: str) -> Any:
    from ownership.cli import OwnershipGroup
    from ownership.cli.prove import prove

    group = OwnershipGroup(commands={"prove": prove})
    return CliRunner().invoke(group, ["prove", *args])


def test_prove_exits_0_when_proved_1_on_a_bug_3_when_induction_fails_and_2_on_bad_input() -> None:
    """The exit codes of `ownership prove` come from the one table in ownership.result."""
    proved = _prove(str(ZOO / "cycle.py"), "--param", "with_lemma=1")
    assert proved.exit_code == 0 and "proved by k-induction with k = 1" in proved.output
    bug = _prove(str(KERNEL_ZOO / "double_free.py"), "--k", "4")
    assert bug.exit_code == 1 and "violated: double-free" in bug.output
    failed = _prove(str(ZOO / "cycle.py"), "--k", "2")
    assert failed.exit_code == 3 and "POSSIBLY UNREACHABLE" in failed.output and "Hint:" in failed.output
    assert "arbitrary state (possibly unreachable)" in failed.output
    bad = _prove("sglang_pd", "--symbolic", "context=1..4")
    assert bad.exit_code == 2 and "sizes pool prefill" in bad.output
    assert _prove("sglang_pd", "--fix", "no-such-fix").exit_code == 2


def test_prove_prints_one_json_object_with_the_counterexample_to_induction() -> None:
    """--json: verdict, coverage, and the counterexample to induction labelled possibly unreachable."""
    out = _prove(str(ZOO / "cycle.py"), "--k", "1", "--json")
    doc = json.loads(out.output)
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 3 == out.exit_code
    assert doc["counterexample_to_induction"]["possibly_unreachable"] is True
    assert doc["coverage"]["method"] == "k-induction"
    assert "--k 1" in doc["reproduce"]
