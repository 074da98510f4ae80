"""Differential testing: one spec has one meaning, whichever engine checks it (issue 11, item 4).

Random well-sorted specs (tests/differential/generator.py) are checked by every engine and
compared with a plain breadth-first search over the concrete interpreter, the reference
(tests/differential/oracle.py): the verdict is decided at the shallowest depth where a
violation or a spec error happens, a violation winning at equal depth. Single steps are
compared too: the z3 encoding and the batch interpreter against the concrete one.

Two profiles, chosen by the environment variable OWNERSHIP_DIFFERENTIAL:
- `ci` (the default): 100 specs for the whole comparison and 30 for each lighter test (fuzz,
  seeded errors, single steps), derandomised (the same specs on every machine), under a
  minute on two cores;
- `long`: thousands of random specs (OWNERSHIP_DIFFERENTIAL_SPECS, default 3000, and a third
  of that for the lighter tests), a fresh seed each run (pytest prints it on a failure;
  --hypothesis-seed repeats it).

A disagreement fails with the spec's path (written under OWNERSHIP_DIFFERENTIAL_DIR, by default
<tmp>/ownership-differential), the command that reproduces it and every engine's answer;
Hypothesis shrinks the spec first, and reports each engine's disagreement separately. The
summary line at the end of the module counts the specs by verdict and how often symmetry
was refused. tests/differential/findings/ holds one spec per root cause found so far.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from differential.generator import GeneratedSpec, specs
from differential.hunt import FINDINGS
from differential.runner import (
    ENGINES,
    STEPS,
    Report,
    check_spec,
    finding,
    load,
    unraised_seeded,
    work_dir,
)
from differential.steps import batch_steps, in_domain, reachable, z3_step
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ownership.errors import SpecError

PROFILE = os.environ.get("OWNERSHIP_DIFFERENTIAL", "ci")
if PROFILE not in ("ci", "long"):
    raise pytest.UsageError(f"OWNERSHIP_DIFFERENTIAL={PROFILE!r}: use ci or long")
LONG = PROFILE == "long"

#: Specs per test: the whole comparison, and the lighter tests (fuzz, single steps).
SPECS = int(os.environ.get("OWNERSHIP_DIFFERENTIAL_SPECS", 3000)) if LONG else 100
LIGHT = max(SPECS // 3, 1) if LONG else 30

SEARCH_ENGINES = tuple(e for e in ENGINES if e != "fuzz")


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=not LONG,
        database=None,
        # fuzz is a Hypothesis search of its own; generated specs vary in size
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.nested_given,
                               HealthCheck.filter_too_much],
    )


STATS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def summary(request: pytest.FixtureRequest) -> Any:
    """Print how many specs each verdict had, how often symmetry refused one, and how the
    liveness properties were decided."""
    yield
    if not STATS:
        return
    parts = [f"{STATS[k]} {k.removeprefix('decision: ')}" for k in sorted(STATS) if k.startswith("decision: ")]
    text = (f"differential ({PROFILE}): {STATS['specs']} specs compared ({', '.join(parts)}); symmetry refused"
            f" {STATS['symmetry refused']}; loader refused {STATS['loader refused']}; too large"
            f" {STATS['too large']}; disagreeing {STATS['disagreeing']}; specs in {work_dir()}")
    live = [f"{STATS[k]} {k.removeprefix('liveness: ')}" for k in sorted(STATS) if k.startswith("liveness: ")]
    if live:
        text += f"; liveness properties compared with the oracle: {', '.join(live)}"
    if STATS["measures compared"]:
        text += f"; measures compared: {STATS['measures compared']}"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(text)
        return
    with capture.global_and_fixture_disabled():
        reporter.ensure_newline()
        reporter.write_line(text)


class Disagreement(AssertionError):
    """Engines disagree with the reference on a generated spec."""


_BY_ENGINE: dict[str, type[Disagreement]] = {}


def disagreement(engine: str) -> type[Disagreement]:
    """One exception class per engine, so that Hypothesis shrinks and reports each on its own."""
    if engine not in _BY_ENGINE:
        name = "".join(w.capitalize() for w in engine.split("-")) + "Disagrees"
        _BY_ENGINE[engine] = type(name, (Disagreement,), {"__doc__": f"{engine} disagrees with the reference."})
    return _BY_ENGINE[engine]


def _record(report: Report) -> None:
    STATS["specs"] += 1
    if report.skipped:
        STATS["too large"] += 1
        event("too large")
        return
    if report.load_error is not None:
        STATS["loader refused"] += 1
    verdict = report.oracle.decision().verdict if report.oracle else "?"
    STATS[f"decision: {verdict}"] += 1
    event(f"reference: {verdict}")
    if report.symmetry_refused:
        STATS["symmetry refused"] += 1
        event("symmetry refused")
    STATS["measures compared"] += report.measured
    for verdict in report.liveness.values():
        word = {True: "violated", False: "holds", None: "too large for the oracle"}[verdict]
        STATS[f"liveness: {word}"] += 1
    if report.problems:
        STATS["disagreeing"] += 1


def _fail(report: Report) -> None:
    if report.problems:
        raise disagreement(report.problems[0].engine)(report.failure_text(report.save()))


@_settings(SPECS)
@given(specs())
def test_every_engine_gives_the_references_verdict_on_a_generated_spec(spec: GeneratedSpec) -> None:
    """On every generated spec the per-state engine, the batch engine, batch with symmetry (or
    its refusal), bmc to the reference's depth and prove give the reference's decision: the same
    verdict; for a violation, a trace of the shallowest length whose property is violated at
    that length; for a spec error, a SpecError at a file and line the reference raises there;
    when verified, the reference's state and transition counts (before symmetry, with it), the
    same sometimes-properties, and for bmc `verified` exactly when no execution is longer."""
    report = check_spec(spec, SEARCH_ENGINES)
    _record(report)
    _fail(report)


@_settings(LIGHT)
@given(specs())
def test_the_fuzz_engine_reports_only_what_the_reference_finds_and_never_claims_more(spec: GeneratedSpec) -> None:
    """A few derandomised fuzz runs per generated spec: a reported violation is of a property
    the reference violates at some depth, no shorter than there; a spec error is one the
    reference raises at some depth; and a pass is `bounded` and incomplete, never verified."""
    report = check_spec(spec, ("fuzz",))
    _fail(report)


@_settings(LIGHT)
@given(specs(errors=True))
def test_the_reference_raises_a_spec_error_at_every_seeded_error_it_runs(spec: GeneratedSpec) -> None:
    """Specs of the error family seed errors that must stop the reference whenever it runs
    their line (a page outside its pool given to a kernel operation, a key outside 1..K, a
    value outside its slot's domain): each such line that runs raises a SpecError there."""
    report = check_spec(spec, ())
    unraised = unraised_seeded(report)
    if unraised:
        saved = report.save()
        raise disagreement("reference")(
            f"the reference runs seeded spec errors without raising one: {saved}\n  "
            + "\n  ".join(unraised))


def _model(spec: GeneratedSpec) -> Any:
    """The loaded model, or None when the loader refuses the spec (the search test says why)."""
    try:
        return load(spec, spec.write(work_dir()))
    except SpecError:
        return None


def _states(model: Any, data: st.DataObject, n: int) -> list[tuple[int, ...]]:
    """n states: reachable ones and any in-domain ones."""
    found = reachable(model)
    out = []
    for _ in range(n):
        if data.draw(st.booleans(), label="anywhere"):
            out.append(in_domain(model, lambda lo, hi: data.draw(st.integers(lo, hi))))
        else:
            out.append(data.draw(st.sampled_from(found), label="reachable state"))
    return out


@_settings(LIGHT)
@given(specs(), st.data())
def test_the_z3_step_of_a_generated_spec_is_exactly_the_concrete_step(spec: GeneratedSpec, data: st.DataObject) -> None:
    """From reachable and arbitrary in-domain states, for drawn bindings, the z3 transition of a
    generated spec has exactly the concrete successor (none when disabled), and its error
    condition, kernel flags and state properties hold exactly when the concrete interpreter
    raises that SpecError, flags that property or finds that state violating."""
    import z3

    from ownership.interpret.smt import encode

    model = _model(spec)
    if model is None:
        return
    enc = encode(model)
    solver = z3.SolverFor("QF_BV")
    problems = []
    for state in _states(model, data, 4):
        b = data.draw(st.integers(0, len(model.bindings) - 1), label="binding")
        problems += z3_step(model, enc, solver, state, b)
    if problems:
        path = spec.write(work_dir())
        raise disagreement("z3-step")(f"{path} {spec.options()}\n  " + "\n  ".join(problems[:10]))


@_settings(LIGHT)
@given(specs(), st.data())
def test_the_batch_step_of_a_generated_spec_is_exactly_the_concrete_step(spec: GeneratedSpec, data: st.DataObject) -> None:
    """From reachable and arbitrary in-domain states, the batch interpreter's successors of a
    generated spec, binding by binding, are the concrete ones: the same enabled bindings and
    successors, a flag exactly where the concrete step is flagged, a bad write exactly where
    the concrete step raises a SpecError, and the same violating states."""
    model = _model(spec)
    if model is None:
        return
    problems = batch_steps(model, _states(model, data, 4))
    if problems:
        path = spec.write(work_dir())
        raise disagreement("batch-step")(f"{path} {spec.options()}\n  " + "\n  ".join(problems[:10]))


@pytest.mark.parametrize("path", sorted(FINDINGS.glob("*.py")), ids=lambda p: p.stem)
def test_every_finding_gets_the_references_answer_from_every_engine(path: Any) -> None:
    """Each spec of tests/differential/findings/ (one per root cause of a disagreement found so
    far, its comment says what each engine answered) now gets the reference's decision from
    every engine and from single steps, and the reference raises its seeded errors."""
    report = check_spec(finding(path), (*ENGINES, STEPS), path=path)
    unraised = unraised_seeded(report)
    if report.problems or unraised:
        raise disagreement(report.problems[0].engine if report.problems else "reference")(
            report.failure_text() + "".join(f"\n  reference: {t}" for t in unraised))


@_settings(LIGHT)
@given(specs(errors=False, liveness=True))
def test_liveness_and_measures_agree_with_the_oracle_on_generated_specs(spec: GeneratedSpec) -> None:
    """Specs that all have a liveness property: where the reference finds every state safe,
    the explicit engine's liveness verdicts and measures equal the liveness oracle's (every
    set of states tried), and each lasso it reports replays as a fair violating behaviour."""
    report = check_spec(spec, ())
    for verdict in report.liveness.values():
        event({True: "liveness violated", False: "liveness holds", None: "liveness: too large"}[verdict])
    _record(report)
    _fail(report)


#: Words of a generated spec's source, and the feature each shows.
FEATURE_WORDS = (
    ("shared=True", "shared"), ("keys=", "keyed"), ('order="lifo"', "lifo"), ("fix(", "fix"), ("s.send(", "send"),
    (".fill(", "fill"), (".where(", "where"), ("fair=True", "weakly fair"), ('fair="strong"', "strongly fair"),
    ("@leads_to", "leads-to"), ("@eventually", "eventually"), ("liveness = (", "kernel liveness"),
    ("(within=", "bounded response"), ("@measure", "measure"), ("limit2 = param(", "derived parameter"),
    ("s.written(", "written"), ("(self, s, r):\n        return", "invariant of each request"), ("s.crash(", "crash"),
    ('s.land(r, "', "partial landing"), (")  # keys", "keyed send"),
    ('", key=', "written of a key"), ("counted=", "counted"), ("owners=", "owners"), ("pins=True", "pins"),
    ("s.pin(", "pin"), ("s.unpin(", "unpin"), ("s.references(", "references"), ("s.pinned_pages(", "pinned pages"),
    ("\", 'cache', ", "an owner as a holder"), (", b: bool)", "a bool argument"),
)


def test_the_generator_writes_specs_of_every_verdict_and_feature() -> None:
    """The generator is not vacuous: among 100 derandomised specs there are verified and violated
    ones; among those and 150 of the liveness family (generated only: cheap) and 40 of the error family, specs with
    every feature of FEATURE_WORDS (shared, keyed and lifo pools, fixes, transfers and partial
    landings, page-wise fill and where, derived parameters, s.written, crashes, invariants of
    each request, fair actions, liveness properties of each kind), seeded errors, and some
    in which the reference raises a spec error."""
    seen: Counter[str] = Counter()

    def features(spec: GeneratedSpec) -> None:
        for word, feature in FEATURE_WORDS:
            if word in spec.source:
                seen[feature] += 1
        if spec.seeded:
            seen["seeded"] += 1

    @settings(max_examples=100, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(specs())
    def look(spec: GeneratedSpec) -> None:
        report = check_spec(spec, ())
        if report.oracle is not None and not report.skipped:
            seen[report.oracle.decision().verdict] += 1
        features(spec)

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(specs(errors=False, liveness=True))
    def look_at_liveness(spec: GeneratedSpec) -> None:  # (every one has a liveness property)
        features(spec)

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(specs(errors=True))
    def look_for_errors(spec: GeneratedSpec) -> None:
        report = check_spec(spec, ())
        if report.oracle is not None and report.oracle.ever_raised():
            seen["raises"] += 1
        features(spec)

    look()
    look_at_liveness()
    look_for_errors()
    for what in ("verified", "violated", "raises", "seeded", *(feature for _, feature in FEATURE_WORDS)):
        assert seen[what] > 0, (what, seen)
