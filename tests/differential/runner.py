"""The runner: checks one generated spec with every engine and compares each answer with the oracle.

`check_spec(spec)` writes the spec to a file, loads it with ownership's own loader, runs the
oracle (tests/differential/oracle.py) and then each engine on a fresh model:

| engine   | call                                             | must answer                                  |
|----------|--------------------------------------------------|----------------------------------------------|
| explicit | ownership.engines.per_state.check                 | the oracle's decision; when verified, its     |
|          |                                                  | state and transition counts and sometimes    |
| batch    | ownership.engines.batch.check                    | the same                                     |
| partitioned | partitioned.check(parts=3), in this process   | the same (the search of --ray, --checkpoint) |
| native   | ownership.engines.native.check (compiled C)      | the same                                     |
| symmetry | batch.check(symmetry=True)                       | the same (states before symmetry), or refuse |
|          |                                                  | the spec as not symmetric (a UsageError)     |
| native-symmetry | native.check(symmetry=True)               | what symmetry answers: refused alike, else    |
|          |                                                  | the same representatives and transitions     |
| bmc      | bmc.check, max_depth = the event's depth, or the | the decision; when nothing happens: verified |
|          | deepest depth + 1 when nothing happens           | iff no execution is longer than the deepest  |
|          |                                                  | depth, else bounded at that depth + 1        |
| prove    | bmc.run_proof, k = that same depth (at least 1)  | the decision when something happens (k is    |
|          |                                                  | deep enough); else verified or inconclusive; |
|          |                                                  | with @lemma, lemmas count as invariants      |
| fuzz     | fuzz.check, a few derandomised runs              | only what the oracle has at some depth, and  |
|          |                                                  | bounded, never claiming more states, runs or |
|          |                                                  | steps than there are                         |

On a spec with liveness properties that the reference finds safe, the explicit engine's
liveness verdicts and measures are compared with the liveness oracle (`liveness_problems`),
bmc's lasso search with both (`lasso_problems`), and fuzz's liveness along random runs with
the oracle (`fuzz_liveness_problems`).

Besides the engines, the reference itself is held to the spec language: on a generated
(well-sorted) spec it may raise only the spec errors the language defines, as SpecErrors
(`reference_problems`), and the loader may refuse a spec only for an error the reference
raises or a seeded one. With STEPS among the engines, single steps from reachable states are
compared too (`step_problems`: tests/differential/steps.py).

"The decision" (oracle.Decision): at the shallowest depth d where a violation or a spec
error happens, a violation gives `violated` with a trace of d steps whose property is among
those violated at d; otherwise a SpecError whose file and line are among the errors at d.

An engine's answer is recorded as an `Answer` (never an exception); Python warnings raised
inside an engine (numpy's "divide by zero") are recorded with it, as the command line would
only print them. A disagreement is a `Problem`; `Report.failure_text` says everything needed
to reproduce it, and `Report.save` writes the spec and that text under the failures directory
(OWNERSHIP_DIFFERENTIAL_DIR, by default <tmp>/ownership-differential).
"""

from __future__ import annotations

import os
import re
import tempfile
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ownership.api import model_for
from ownership.errors import SpecError, UsageError
from ownership.lang.model import Model

from .generator import SEEDED_KINDS, GeneratedSpec
from .oracle import Oracle, Where, explore, where

ENGINES = ("explicit", "batch", "partitioned", "native", "symmetry", "native-symmetry", "bmc", "prove", "fuzz")

#: Besides the engines, check_spec can compare single steps ("steps": step_problems).
STEPS = "steps"

#: Fuzz lightly: a few derandomised runs per spec.
FUZZ_RUNS = 10
FUZZ_STEPS = 8


def failures_dir() -> Path:
    """Where disagreeing specs are written (OWNERSHIP_DIFFERENTIAL_DIR, or a temp directory)."""
    env = os.environ.get("OWNERSHIP_DIFFERENTIAL_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / "ownership-differential"


_WORK: list[Path] = []


def work_dir() -> Path:
    """A directory of this process for the specs under test (each file named by its content)."""
    if not _WORK:
        _WORK.append(Path(tempfile.mkdtemp(prefix="ownership-differential-")))
    return _WORK[0]


# --------------------------------------------------------------------------- answers


@dataclass
class Answer:
    """What one engine said about one spec."""

    engine: str
    outcome: str                  # violated | verified | bounded | inconclusive | spec-error | refused | crash
    prop: str | None = None
    also: tuple[str, ...] = ()
    length: int | None = None
    states: int | None = None
    transitions: int | None = None
    before_symmetry: int | None = None
    bound: int | None = None
    complete: bool = False
    depth: int | None = None      # the coverage's depth (fuzz: the longest run)
    runs: int | None = None       # fuzz: the runs executed
    actions: dict[str, int] | None = None  # a complete exhaustive search: transitions per action
    where: Where | None = None
    message: str = ""
    sometimes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    call: str = ""                # how the engine was called

    def describe(self) -> str:
        head = f"{self.engine:9} {self.outcome}"
        if self.outcome == "violated":
            head += f" {self.prop} in {self.length} steps" + (f" (also {', '.join(self.also)})" if self.also else "")
        elif self.outcome == "spec-error":
            head += f" at {os.path.basename(self.where[0] or '?') if self.where else '?'}:{self.where[1] if self.where else '?'}"
        elif self.outcome in ("verified", "bounded", "inconclusive"):
            counts = []
            if self.states:
                counts.append(f"{self.states} states")
            if self.transitions:
                counts.append(f"{self.transitions} transitions")
            if self.before_symmetry is not None:
                counts.append(f"{self.before_symmetry} before symmetry")
            if self.bound is not None:
                counts.append(f"bound {self.bound}")
            head += f" ({', '.join(counts)})" if counts else ""
        if self.message and self.outcome in ("spec-error", "refused", "crash", "inconclusive"):
            message = self.message
            if self.where and self.where[0]:   # the location is shown already
                message = re.sub(rf"^\S*{re.escape(os.path.basename(self.where[0]))}:\d+: ", "", message)
            head += f": {_one_line(message, 200)}"
        if self.warnings:
            head += f" [warnings: {'; '.join(sorted(set(self.warnings)))}]"
        return head + (f"   <- {self.call}" if self.call else "")


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _from_result(engine: str, result: Any) -> Answer:
    cov = result.coverage
    a = Answer(engine, result.verdict.word, states=cov.states, transitions=cov.transitions,
               before_symmetry=cov.states_before_symmetry, bound=cov.bound_depth, complete=cov.complete,
               depth=cov.depth, runs=cov.runs, sometimes=dict(result.sometimes or {}),
               actions=None if cov.actions is None else {n: c for n, c in cov.actions if c})
    if result.trace is not None and result.trace.violation is not None:
        v = result.trace.violation
        a.prop, a.also, a.length = v.property, tuple(v.also), len(result.trace.steps) - 1
    if result.verdict.word == "inconclusive":
        a.message = f"stopped by {cov.stopped_by}"
    return a


def run_engine(engine: str, call: str, fn: Callable[[], Any]) -> Answer:
    """Run one engine; every outcome, an exception included, becomes an Answer."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            answer = _from_result(engine, fn())
        except SpecError as e:
            answer = Answer(engine, "spec-error", where=where(e), message=str(e))
        except UsageError as e:
            answer = Answer(engine, "refused", message=str(e))
        except Exception as e:  # an engine's own failure is an answer too (a bug of ownership)
            frames = [f for f in traceback.extract_tb(e.__traceback__) if "ownership" in f.filename]
            at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
            answer = Answer(engine, "crash", message=f"{type(e).__name__}: {e}{at}")
    answer.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    answer.call = call
    return answer


# --------------------------------------------------------------------------- the comparison


@dataclass
class Problem:
    """One disagreement between an engine and the oracle."""

    engine: str
    text: str

    def __str__(self) -> str:
        return f"{self.engine}: {self.text}"


def _decided(a: Answer, oracle: Oracle, *, counts: bool, states_field: str = "states") -> list[str]:
    """The exhaustive engines' rule: the oracle's decision, and its counts when verified."""
    d = oracle.decision()
    out = []
    if d.verdict == "violated":
        if a.outcome != "violated":
            out.append(f"answered {a.outcome}, the reference finds {d.describe()}")
        else:
            if a.length != d.depth:
                out.append(f"counterexample of {a.length} steps, the shortest is {d.depth}")
            if a.prop not in d.allowed:
                out.append(f"reports {a.prop}, violated at depth {d.depth}: {', '.join(sorted(d.allowed))}")
    elif d.verdict == "spec-error":
        if a.outcome != "spec-error":
            out.append(f"answered {a.outcome}, the reference finds {d.describe()}")
        elif a.where not in d.allowed:
            out.append(f"spec error at {a.where}, the reference raises at depth {d.depth}: {d.describe()}")
    else:
        if a.outcome != "verified":
            out.append(f"answered {a.outcome}, the reference verifies every reachable state")
        elif counts:
            got = getattr(a, states_field)
            if got != oracle.states:
                out.append(f"{got} states, the reference reaches {oracle.states}")
            if states_field == "states" and a.transitions != oracle.transitions:
                out.append(f"{a.transitions} transitions, the reference has {oracle.transitions}")
            if states_field == "states" and a.actions is not None and a.actions != oracle.actions:
                out.append(f"transitions per action {a.actions}, the reference has {oracle.actions}")
            if a.sometimes != oracle.sometimes:
                out.append(f"sometimes {a.sometimes}, the reference finds {oracle.sometimes}")
    return out


def compare(oracle: Oracle, answers: dict[str, Answer], proof: Oracle | None = None) -> list[Problem]:
    """Every disagreement between the engines' answers and the oracle (see the module docstring);
    `proof` is the oracle for prove when the spec has lemmas."""
    problems: list[Problem] = []

    def add(engine: str, texts: list[str]) -> None:
        problems.extend(Problem(engine, t) for t in texts)

    d = oracle.decision()
    for engine in ("explicit", "batch", "partitioned", "native"):
        if engine in answers:
            add(engine, _decided(answers[engine], oracle, counts=True))
    if "symmetry" in answers and answers["symmetry"].outcome != "refused":
        add("symmetry", _decided(answers["symmetry"], oracle, counts=True, states_field="before_symmetry"))
    if "native-symmetry" in answers:
        add("native-symmetry", _as_symmetry(answers["native-symmetry"], answers.get("symmetry"), oracle))
    if "bmc" in answers:
        a = answers["bmc"]
        if d.verdict != "verified":
            add("bmc", _decided(a, oracle, counts=False))
        else:
            add("bmc", _bmc_pass(a, oracle))
    if "prove" in answers:
        a = answers["prove"]
        pd = (proof or oracle).decision()
        if pd.verdict != "verified":
            add("prove", _decided(a, proof or oracle, counts=False))
        elif a.outcome not in ("verified", "inconclusive"):
            add("prove", [f"answered {a.outcome}, the reference verifies every reachable state"])
    if "fuzz" in answers:
        add("fuzz", _fuzz(answers["fuzz"], oracle))
    return problems


def _as_symmetry(a: Answer, ref: Answer | None, oracle: Oracle) -> list[str]:
    """The native search under symmetry: refused where the batch one refuses, else the oracle's
    decision and the batch search's representatives."""
    if ref is not None and (a.outcome == "refused") != (ref.outcome == "refused"):
        return [f"answered {a.outcome}, the batch engine with symmetry {ref.outcome}"]
    if a.outcome == "refused":
        return []
    out = _decided(a, oracle, counts=True, states_field="before_symmetry")
    if ref is not None and (a.states, a.transitions) != (ref.states, ref.transitions):
        out.append(f"{a.states} representatives and {a.transitions} transitions, the batch engine with symmetry"
                   f" {ref.states} and {ref.transitions}")
    return out


def _bmc_pass(a: Answer, oracle: Oracle) -> list[str]:
    """bmc to the deepest depth + 1 on a spec where nothing happens."""
    exhausted = oracle.longest == oracle.deepest
    want = "verified" if exhausted else "bounded"
    out = []
    if a.outcome != want:
        why = ("no execution is longer than" if exhausted else "some execution is longer than")
        out.append(f"answered {a.outcome}, want {want}: {why} {oracle.deepest} steps"
                   f" (longest: {'unbounded' if oracle.longest is None else oracle.longest})")
    elif want == "bounded" and a.bound != oracle.deepest + 1:
        out.append(f"bounded at {a.bound}, asked for {oracle.deepest + 1}")
    if a.outcome in ("verified", "bounded"):
        got = {n: a.sometimes.get(n) is True for n in oracle.sometimes}
        if got != oracle.sometimes:
            out.append(f"sometimes {a.sometimes}, the reference finds {oracle.sometimes}")
    return out


def _fuzz(a: Answer, oracle: Oracle) -> list[str]:
    """Random runs may miss anything, but may report only what the oracle has at some depth."""
    if a.outcome == "violated":
        ever = oracle.ever_violated()
        if a.prop not in ever:
            return [f"reports {a.prop}, which the reference never finds (it finds {sorted(ever) or 'nothing'})"]
        if a.length is not None and a.length < ever[a.prop]:
            return [f"reports {a.prop} in {a.length} steps, the shortest is {ever[a.prop]}"]
        return []
    if a.outcome == "spec-error":
        ever = oracle.ever_raised()
        if a.where not in ever:
            return [f"spec error at {a.where}, which the reference never raises"]
        return []
    if a.outcome != "bounded" or a.complete:
        return [f"answered {a.outcome}{' (complete)' if a.complete else ''}; random runs can only be bounded"]
    out = []
    if a.states is not None and a.states > oracle.states:
        out.append(f"claims {a.states} distinct states, the spec has {oracle.states}")
    if a.runs is not None and a.runs > FUZZ_RUNS:
        out.append(f"claims {a.runs} runs, {FUZZ_RUNS} were asked for")
    if a.depth is not None and a.depth > FUZZ_STEPS:
        out.append(f"claims a run of {a.depth} steps, runs have at most {FUZZ_STEPS}")
    return out


# --------------------------------------------------------------------------- one spec


@dataclass
class Report:
    """Everything about one generated spec: where it is, the oracle, the answers, the problems."""

    spec: GeneratedSpec
    path: Path
    oracle: Oracle | None = None
    answers: dict[str, Answer] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    load_error: SpecError | None = None
    skipped: str | None = None       # why the spec was not compared (too large)
    proof: Oracle | None = None      # with @lemma properties: the oracle that counts them (prove)
    #: the liveness oracle's verdict per property (None: too large for it), when compared
    liveness: dict[str, bool | None] = field(default_factory=dict)
    measured: int = 0                # @measure values compared with the oracle's

    @property
    def symmetry_refused(self) -> bool:
        a = self.answers.get("symmetry")
        return a is not None and a.outcome == "refused"

    def failure_text(self, saved: Path | None = None) -> str:
        path = saved or self.path
        lines = [f"engines disagree on a generated spec: {path}",
                 f"  reproduce: ownership check {path} {self.spec.options()}".rstrip()]
        if self.oracle is not None:
            lines.append(f"  reference (BFS over the concrete interpreter): {self.oracle.describe()}")
        if self.oracle is not None and self.oracle.raw:
            raw = "; ".join(f"{Path(w[0] or '?').name}:{w[1]}: {_one_line(x, 120)}" for w, x in self.oracle.raw.items())
            lines.append(f"  the reference raises exceptions that are not SpecErrors: {raw}")
        if self.load_error is not None:
            lines.append(f"  the loader refuses it: {_one_line(str(self.load_error))}")
        for a in self.answers.values():
            lines.append(f"  {a.describe()}")
        lines.append("  disagreements:")
        lines += [f"    {p}" for p in self.problems]
        return "\n".join(lines)

    def save(self) -> Path:
        """Write the spec and what every engine answered under failures_dir(); the spec's path."""
        saved = self.spec.write(failures_dir())
        saved.with_suffix(".txt").write_text(self.failure_text(saved) + "\n")
        return saved


def load(spec: GeneratedSpec, path: Path) -> Model:
    return model_for(str(path), params=spec.params, fixes=spec.fixes)


def reference_model(spec: GeneratedSpec, path: Path) -> Model:
    """The model without the loader's symbolic validation (for a spec the loader refuses)."""
    from ownership.lang.loader import load_spec

    cls = load_spec(str(path))
    return Model(cls(params=spec.params, fixes=spec.fixes))


def run_engines(spec: GeneratedSpec, path: Path, oracle: Oracle, engines: tuple[str, ...] = ENGINES,
                proof: Oracle | None = None) -> dict[str, Answer]:
    """Every engine's answer, each on a freshly loaded model (one engine cannot spoil another).
    `proof`: the oracle with the spec's lemmas as invariants, for prove (default: `oracle`)."""
    from ownership.engines import batch, bmc, fuzz, native, partitioned, per_state

    d = oracle.first
    depth = d if d is not None else oracle.deepest + 1
    pd = (proof or oracle).first
    k = max(pd if pd is not None else (proof or oracle).deepest + 1, 1)
    calls: dict[str, tuple[str, Callable[[Model], Any]]] = {
        "explicit": ("per_state.check(model)", lambda m: per_state.check(m)),
        "batch": ("batch.check(model)", lambda m: batch.check(m)),
        "partitioned": ("partitioned.check(model, parts=3)", lambda m: partitioned.check(m, parts=3)),
        "native": ("native.check(model)", lambda m: native.check(m)),
        "symmetry": ("batch.check(model, symmetry=True)", lambda m: batch.check(m, symmetry=True)),
        "native-symmetry": ("native.check(model, symmetry=True)", lambda m: native.check(m, symmetry=True)),
        "bmc": (f"bmc.check(model, max_depth={depth})", lambda m: bmc.check(m, max_depth=depth)),
        "prove": (f"bmc.run_proof(model, k={k})", lambda m: bmc.run_proof(m, k=k)),
        "fuzz": (f"fuzz.check(model, runs={FUZZ_RUNS}, steps={FUZZ_STEPS}, profile='ci')",
                 lambda m: fuzz.check(m, runs=FUZZ_RUNS, steps=FUZZ_STEPS, profile="ci", database=None)),
    }
    out = {}
    for engine in engines:
        call, fn = calls[engine]
        out[engine] = run_engine(engine, call, lambda fn=fn: fn(load(spec, path)))
    return out


def check_spec(spec: GeneratedSpec, engines: tuple[str, ...] = ENGINES, *, max_states: int | None = None,
               path: Path | None = None) -> Report:
    """Load `spec` (from `path` if it is there already), explore it with the oracle, run the
    engines (and with STEPS in `engines`, compare single steps) and compare (module docstring)."""
    from .oracle import MAX_STATES

    path = path or spec.write(work_dir())
    report = Report(spec, path)
    try:
        load(spec, path)
    except SpecError as e:
        report.load_error = e
    model = reference_model(spec, path) if report.load_error is not None else load(spec, path)
    report.oracle = explore(model, max_states=max_states or MAX_STATES, watch=set(spec.seeded))
    if report.oracle.truncated:
        report.skipped = f"more than {max_states or MAX_STATES} states"
        return report
    report.problems += reference_problems(report.oracle)
    if report.load_error is not None:
        ever = report.oracle.ever_raised()
        if NOT_SPEC_ERRORS.search(str(report.load_error)):
            report.problems.append(Problem("loader", f"fails on a well-sorted spec: {_one_line(str(report.load_error))}"))
        elif where(report.load_error) not in ever and report.load_error.line not in spec.seeded:
            report.problems.append(Problem("loader", (
                f"refuses the spec ({_one_line(str(report.load_error))}), which the reference runs:"
                f" {report.oracle.decision().describe()}")))
        return report
    if any(p.kind == "lemma" for p in model.spec_cls._properties.values()):
        report.proof = explore(model, max_states=max_states or MAX_STATES, lemmas=True)
    report.answers = run_engines(spec, path, report.oracle, tuple(e for e in engines if e in ENGINES), report.proof)
    report.problems += compare(report.oracle, report.answers, report.proof)
    if (model.liveness_checked() or model.measures) and report.oracle.decision().verdict == "verified":
        report.problems += liveness_problems(load(spec, path), report)
    if "steps" in engines:
        report.problems += step_problems(load(spec, path))
    return report


def liveness_problems(model: Model, report: Report) -> list[Problem]:
    """The explicit engine's liveness verdict against the oracle's (oracle.liveness): the
    property it finds violated must be one the oracle finds violated, and where it finds
    none, the oracle must find none; its lasso must replay as a violation."""
    from ownership.engines import liveness as engine

    from .oracle import liveness as reference
    from .oracle import measures as reference_measures

    assert report.oracle is not None
    truth = reference(model, report.oracle)
    report.liveness = truth
    try:
        outcome = engine.check(model, states_expected=report.oracle.states)
    except Exception as e:  # noqa: BLE001 (any failure of the engine is a disagreement)
        return [Problem("liveness", f"raises {_one_line(f'{type(e).__name__}: {e}')}")]
    if outcome.stopped is not None:
        return [Problem("liveness", f"stopped by {outcome.stopped} without a limit")]
    out = []
    got = outcome.measures or {}
    for name, (largest, stretch) in reference_measures(model, report.oracle).items():
        report.measured += 1
        mine = got.get(name)
        if mine is None or (mine.largest, mine.longest) != (largest, stretch):
            out.append(Problem("measure", f"{name}: the engine measures"
                                          f" {None if mine is None else (mine.largest, mine.longest)}, the reference"
                                          f" (largest, longest stretch above 0) {(largest, stretch)}"))
    found = outcome.found
    fresh = lambda: model_for(str(report.path), params=report.spec.params, fixes=report.spec.fixes)  # noqa: E731
    out += lasso_problems(fresh, report, found)
    out += fuzz_liveness_problems(fresh, report)
    decided = {n: v for n, v in truth.items() if v is not None}
    if found is None:
        wrong = sorted(n for n, v in decided.items() if v)
        return out + ([Problem("liveness", f"finds every liveness property holds; the reference finds"
                                           f" {', '.join(wrong)} violated")] if wrong else [])
    trace = found.trace
    name = trace.violation.property
    if decided.get(name) is False:
        out.append(Problem("liveness", f"finds {name} violated; the reference finds it holds on every fair behaviour"))
    earlier = [n for n in truth if n != name and decided.get(n)]
    order = list(truth)
    if any(order.index(n) < order.index(name) for n in earlier):
        out.append(Problem("liveness", f"reports {name} before {earlier[0]}, which comes first and fails too"))
    if not _replays(model, trace):
        out.append(Problem("liveness", f"its lasso for {name} does not replay as a fair violating behaviour"))
    return out


def _replays(model: Model, trace: Any) -> bool:
    """Whether a liveness counterexample's trace replays as one (liveness.violates)."""
    from ownership.engines import liveness as engine

    states = [model.parse(step.state) for step in trace.steps]
    bindings = [model.binding_of(step.action, tuple(step.args.values())) for step in trace.steps[1:]]
    return engine.violates(model, states, bindings, trace.loop, trace.violation.property)


def fuzz_liveness_problems(model_of: Callable[[], Model], report: Report) -> list[Problem]:
    """fuzz's liveness along random runs, on a spec the reference finds safe: a property it
    finds violated the oracle finds violated, its counterexample replays, and it never says
    that a property holds."""
    from ownership.engines import fuzz

    model = model_of()
    try:
        got = fuzz.check(model, runs=FUZZ_RUNS, steps=FUZZ_STEPS, profile="ci", database=None, liveness=True)
    except Exception as e:  # noqa: BLE001 (any failure of the engine is a disagreement)
        return [Problem("fuzz-liveness", f"raises {_one_line(f'{type(e).__name__}: {e}')}")]
    out = [Problem("fuzz-liveness", f"says {name} {how!r}") for name, how in got.liveness.items()
           if how.startswith("holds")]
    if got.trace is None:
        return out
    name = got.trace.violation.property
    if name not in report.liveness:
        out.append(Problem("fuzz-liveness", f"finds {name} violated on a spec the reference finds safe"))
    elif report.liveness[name] is False:
        out.append(Problem("fuzz-liveness", f"finds {name} violated; the reference finds it holds on every fair behaviour"))
    elif not _replays(model, got.trace):
        out.append(Problem("fuzz-liveness", f"its counterexample for {name} does not replay as a violating behaviour"))
    return out


#: bmc's lasso search goes this many steps deep at most where the explicit engine finds none
LASSO_DEPTH = 6


def lasso_problems(model_of: Callable[[], Model], report: Report, explicit: Any) -> list[Problem]:
    """bmc's lasso search (ownership.engines.lasso) against the liveness oracle and the
    explicit engine, on a spec the reference finds safe: what bmc finds violated the oracle
    finds violated, and its counterexample replays; it is never longer than the explicit
    engine's (one of length L is a witness for bmc at depth L), and with that depth bmc finds
    one; where every property holds, bmc finds none."""
    from ownership.engines import bmc

    assert report.oracle is not None
    depth = len(explicit.trace.steps) - 1 if explicit is not None else min(report.oracle.deepest + 2, LASSO_DEPTH)
    model = model_of()
    try:
        got = bmc.check(model, max_depth=depth, liveness=True, sometimes=False)
    except Exception as e:  # noqa: BLE001 (any failure of the engine is a disagreement)
        return [Problem("bmc-liveness", f"raises {_one_line(f'{type(e).__name__}: {e}')}")]
    if got.trace is None:
        if explicit is not None:
            return [Problem("bmc-liveness", f"finds no counterexample within {depth} steps; the explicit engine's"
                                            f" lasso for {explicit.trace.violation.property} has {depth} steps")]
        return []
    name = got.trace.violation.property
    out = []
    if name not in report.liveness:
        out.append(Problem("bmc-liveness", f"finds {name} violated on a spec the reference finds safe"))
    elif report.liveness[name] is False:
        out.append(Problem("bmc-liveness", f"finds {name} violated; the reference finds it holds on every fair behaviour"))
    if not _replays(model, got.trace):
        out.append(Problem("bmc-liveness", f"its lasso for {name} does not replay as a violating behaviour"))
    if explicit is not None and len(got.trace.steps) > len(explicit.trace.steps):
        out.append(Problem("bmc-liveness", f"its counterexample has {len(got.trace.steps) - 1} steps, the explicit"
                                           f" engine's {len(explicit.trace.steps) - 1}"))
    return out


def step_problems(model: Model, limit: int = 40) -> list[Problem]:
    """Single steps from up to `limit` reachable states: the batch interpreter's and z3's
    against the concrete interpreter's (tests/differential/steps.py)."""
    import z3

    from ownership.interpret.smt import encode

    from .steps import batch_steps, reachable, z3_step

    states = reachable(model, limit)
    out = [Problem("batch-step", t) for t in batch_steps(model, states)[:5]]
    try:
        enc = encode(model)
    except SpecError as e:
        return out + [Problem("z3-step", f"cannot encode the spec: {_one_line(str(e))}")]
    solver = z3.SolverFor("QF_BV")
    texts: list[str] = []
    for state in states[:10]:
        for b in range(len(model.bindings)):
            texts += z3_step(model, enc, solver, state, b)
    return out + [Problem("z3-step", t) for t in dict.fromkeys(texts).keys()][:5]


#: Python exceptions that a well-sorted spec never causes: when the reference raises one (wrapped
#: in a SpecError or not), the reference itself fails on the spec.
NOT_SPEC_ERRORS = re.compile(r"\b(TypeError|AttributeError|KeyError|NameError|ValueError|AssertionError|"
                             r"IndexError|RecursionError|OverflowError)\b")


def reference_problems(oracle: Oracle) -> list[Problem]:
    """The reference's own failures on a generated (well-sorted) spec: an exception that is not
    a SpecError, or a SpecError for an error that the spec language does not define."""
    out = []
    for at, exc in sorted(oracle.raw.items(), key=str):
        out.append(Problem("reference", f"raises {_one_line(exc, 160)} at {Path(at[0] or '?').name}:{at[1]},"
                                        " not a SpecError"))
    for at, message in sorted(oracle.messages.items(), key=str):
        if at not in oracle.raw and NOT_SPEC_ERRORS.search(message):
            out.append(Problem("reference", f"fails on a well-sorted spec: {_one_line(message, 200)}"))
    return out


def finding(path: Path) -> GeneratedSpec:
    """A spec of tests/differential/findings/ as a GeneratedSpec. Its comment lines
    `# params: requests=1 ...` and `# fixes: fix-a ...` say how to check it; a line ending in
    `# seeded: KIND` (generator.SEEDED_KINDS) must raise a spec error whenever the reference
    runs it."""
    source = path.read_text()
    params: dict[str, int] = {}
    fixes: list[str] = []
    seeded: dict[int, str] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        if line.startswith("# params:"):
            params = {k: int(v) for k, v in (w.split("=") for w in line.split(":", 1)[1].split())}
        elif line.startswith("# fixes:"):
            fixes = line.split(":", 1)[1].split()
        elif "# seeded: " in line and not line.lstrip().startswith("#"):
            seeded[number] = line.rsplit("# seeded: ", 1)[1].strip()
    return GeneratedSpec(source, params, fixes, seeded, errors=bool(seeded))


def answers_text(report: Report) -> list[str]:
    """What the reference and every engine answer, one line each (for a finding's comment)."""
    lines = []
    if report.oracle is not None:
        lines.append(f"{'reference':10}{report.oracle.describe()}")
    if report.load_error is not None:
        lines.append(f"{'loader':10}refuses it: {_one_line(str(report.load_error).split(': ', 1)[-1], 200)}")
    lines += [a.describe().split("   <- ")[0] for a in report.answers.values()]
    for engine in ("reference", "batch-step", "z3-step"):
        lines += [f"  {p}" for p in report.problems if p.engine == engine][:2]
    lines += [f"  reference: {t}" for t in unraised_seeded(report)]
    return [re.sub(r"/\S*/", "", line) for line in lines]


def unraised_seeded(report: Report) -> list[str]:
    """Seeded errors the reference ran without raising a SpecError on their line."""
    if report.oracle is None:
        return []
    return [f"line {line} ({SEEDED_KINDS[report.spec.seeded[line]]}): ran in {step} without a spec error"
            for line, step in sorted(report.oracle.unraised.items())]


__all__ = ["ENGINES", "Answer", "Problem", "Report", "check_spec", "compare", "failures_dir",
           "finding", "reference_problems", "run_engine", "unraised_seeded"]
