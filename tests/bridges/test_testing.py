"""ownership.bridges.testing: check_spec in one line, and the conformance harness on the example allocator.

The example under examples/allocator (spec, real allocator, adapter) is the one docs/testing.md
walks through; these tests keep it working. All checks use the derandomised "ci" profile and
few runs.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from ownership import Request, Spec, action, ints, per_request, pool
from ownership.bridges.testing import (
    ConformanceError,
    Ownership,
    SpecViolated,
    check_conformance,
    check_spec,
    conformance,
)
from ownership.errors import UsageError
from ownership.result import Verdict

EXAMPLE = ROOT / "examples" / "allocator"
SPEC = str(EXAMPLE / "toy_allocator_spec.py")
CI = {"profile": "ci", "runs": 40, "steps": 20}


@pytest.fixture()
def example(monkeypatch):
    """The example's modules (toy_allocator, toy_allocator_adapter), importable by name."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import toy_allocator_adapter

    return toy_allocator_adapter


class Counter(Spec):
    """One request takes pages one at a time and gives them all back."""

    kv = pool(3)
    table = per_request(kv)

    @action
    def take(self, s, r: Request):
        """Take one more page."""
        s.table[r] = s.table[r] | s.alloc("kv", r, 1)

    @action
    def give_back(self, s, r: Request, n: ints(0, 1)):
        """Give every page back (n is only there to have a second argument)."""
        s.require(s.table[r] != 0)
        s.free("kv", r, s.table[r])
        s.table[r] = 0


class GiveTwice(Spec):
    """Gives its pages back and keeps them in its table: the second give is a double free."""

    kv = pool(2)
    table = per_request(kv)

    @action
    def take(self, s, r: Request):
        s.table[r] = s.table[r] | s.alloc("kv", r, 1)

    @action
    def give_back(self, s, r: Request):
        s.require(s.table[r] != 0)
        s.free("kv", r, s.table[r])


def test_check_spec_returns_a_bounded_result_for_a_fixed_spec():
    """A spec without violations passes check_spec and reports bounded coverage, never verified."""
    result = check_spec("sglang_pd", fixes=["door-retire"], **CI, database=None)
    assert result.verdict is Verdict.BOUNDED
    assert result.coverage.runs == 40


def test_check_spec_fails_with_the_rendered_trace():
    """A violation fails the test with the property, the explanation and the numbered steps."""
    with pytest.raises(SpecViolated) as info:
        check_spec("sglang_pd", **CI, database=None)
    text = str(info.value)
    assert "violates stale-read" in text and "cross-request leak" in text
    assert "6  [decode] decode_commit(r=r1)  <-- violation" in text
    assert info.value.result.trace.engine == "fuzz"


def test_check_spec_takes_a_spec_class_and_the_explicit_engine():
    """A Spec class written in a test can be checked exhaustively too."""
    result = check_spec(Counter, engine="explicit")
    assert result.verdict is Verdict.VERIFIED
    with pytest.raises(SpecViolated) as info:  # (its trace names the class by its file)
        check_spec(GiveTwice, engine="explicit")
    trace = info.value.result.trace
    assert trace.violation.property == "double-free"
    assert trace.spec == f"{GiveTwice.source_file()}:GiveTwice"
    assert trace.reproduce == f"ownership check {GiveTwice.source_file()}:GiveTwice"
    assert info.value.result.reproduce == trace.reproduce
    assert run_cli("check", "sglang_pd").code == 1  # (a shipped spec keeps its name: below)
    with pytest.raises(SpecViolated) as shipped:
        check_spec("sglang_pd", engine="explicit")
    assert shipped.value.result.trace.spec == "sglang_pd"
    assert shipped.value.result.trace.reproduce == "ownership check sglang_pd"


def test_the_checked_allocator_conforms_and_refuses_the_double_free(example):
    """Every run matches the model page for page, and runs with a double free end in a refusal."""
    result = check_conformance(SPEC, example.CheckedToyAllocatorAdapter, **CI)
    assert result.ok and result.verdict is Verdict.BOUNDED
    assert result.refusals > 0
    assert result.coverage.never_fired == ()


def test_an_allocator_that_accepts_a_double_free_is_reported_with_a_shrunk_run(example):
    """The unchecked allocator accepts a double free: reported as double-free at step 3 of a
    3-step run, with the model's and the implementation's pools side by side."""
    result = conformance(SPEC, example.ToyAllocatorAdapter, **CI)
    assert result.kind == "double-free"
    assert [s.label() for s in result.trace.steps[1:]] == ["alloc(r=r1, n=1)", "free(r=r1)", "free_twice(r=r1)"]
    assert result.implementation_side["kv"] == "free [0 0 1 2 3]"
    assert result.model_side["kv"] == "free [0 1 2 3]"
    assert "on the implementation's free list twice" in result.report
    with pytest.raises(ConformanceError, match="FAILED: double-free at step 3"):
        check_conformance(SPEC, example.ToyAllocatorAdapter, **CI)


def test_a_different_free_list_order_diverges_by_page_but_conforms_up_to_renaming(example):
    """An allocator that appends freed pages (FIFO) differs from the LIFO spec page by page, and
    agrees with it once pages are matched at allocation ("renamed")."""

    class FifoAdapter(example.CheckedToyAllocatorAdapter):
        def free(self, r: int) -> None:
            pages = self.table.pop(r)
            for p in pages:
                self.allocator.owner.pop(p)
            self.allocator.free_pages = self.allocator.free_pages + sorted(pages)
            self.freed[r] = pages

    by_page = conformance(SPEC, FifoAdapter, **CI)
    assert by_page.kind == "divergence"
    assert "the model has free pages" in by_page.report
    renamed = conformance(SPEC, FifoAdapter, match="renamed", **CI)
    assert renamed.ok, renamed.report


def test_an_unexpected_error_in_the_implementation_is_reported_with_both_sides(example):
    """An exception that is not a Refused is an implementation error at its step."""

    class Broken(example.CheckedToyAllocatorAdapter):
        def free(self, r: int) -> None:
            raise KeyError("no such request")

    result = conformance(SPEC, Broken, **CI)
    assert result.kind == "error"
    assert "raised KeyError" in result.report and "At step 2, free(r=r1)" in result.report


def test_an_adapter_without_a_method_for_an_action_is_a_usage_error(example):
    """The harness names the missing action method and the spec's actions."""

    class Partial:
        def __init__(self, params):
            pass

        def alloc(self, r, n):
            pass

        def fre(self, r):
            pass

        def observe(self):
            return Ownership(free=[0, 1, 2, 3])

    with pytest.raises(UsageError, match="lacks free, free_twice.*Did you mean 'fre'"):
        conformance(SPEC, Partial, **CI)


def test_the_pytest_plugin_sets_the_profile_and_the_number_of_runs():
    """`-p ownership.bridges.pytest_plugin --ownership-runs N` runs the example's own tests with N runs."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ownership.bridges.pytest_plugin", "-p", "no:cacheprovider",
         "--ownership-profile", "ci", "--ownership-runs", "15", "--ownership-steps", "10",
         str(EXAMPLE), "-v"],
        capture_output=True, text=True, cwd=EXAMPLE, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ownership: profile ci, 15 runs of up to 10 steps" in out.stdout
    assert "2 passed" in out.stdout


# -- failures that reproduce (issue 15, item 4) ------------------------------------------------

FAILING_TEST = '''
from ownership.bridges.testing import check_spec

def test_the_double_free():
    check_spec({spec!r}, runs=200, steps=12)
'''


def _inner_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """A user's pytest run over one failing check_spec test, in its own folder."""
    test = tmp_path / "test_user.py"
    test.write_text(FAILING_TEST.format(spec=str((ROOT / "tests") / "specs" / "double_free.py")))
    env = {k: v for k, v in __import__("os").environ.items() if k != "CI"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(test), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)


def test_a_failing_check_writes_its_trace_and_the_command_that_repeats_it(tmp_path):
    """The failure names the trace file under .ownership/failures/ (which `ownership show`
    reads) and the pytest command with the seed; the command gives the same trace. The
    report starts with the trace, not with check_spec's source (__tracebackhide__); the seed
    is the JUnit property ownership_seed."""
    import re

    from ownership.trace import read_itf

    first = _inner_pytest(tmp_path, "--junitxml", str(tmp_path / "junit.xml"))
    assert first.returncode == 1, first.stdout
    command = re.search(r"Reproduce: (python -m pytest \S+ --ownership-seed (\d+))", first.stdout)
    assert command is not None, first.stdout
    seed = command.group(2)
    trace_path = tmp_path / ".ownership" / "failures" / "test_user.py_test_the_double_free.itf.json"
    assert f"Trace: {trace_path.relative_to(tmp_path)}" in first.stdout
    trace = read_itf(str(trace_path))
    assert trace.violation.property == "double-free"
    assert "def check_spec(" not in first.stdout and "__tracebackhide__" not in first.stdout
    junit = (tmp_path / "junit.xml").read_text()
    assert f'<property name="ownership_seed" value="{seed}"' in junit

    again = _inner_pytest(tmp_path, "--ownership-seed", seed)
    assert again.returncode == 1
    assert [s.label() for s in read_itf(str(trace_path)).steps] == [s.label() for s in trace.steps]

    # the trace names its spec and the command that repeats the run (they were '' and none,
    # and `replay` refused the trace): replay takes it, and the command finds the double free
    spec = str((ROOT / "tests") / "specs" / "double_free.py")
    assert trace.spec == spec
    assert trace.reproduce.startswith(f"ownership check {spec} --engine fuzz --runs 200 --steps 12 --seed "), trace.reproduce
    replayed = run_cli("replay", str(trace_path), "--spec", spec)
    assert replayed.code == 1 and "double-free" in replayed.out, replayed.out + replayed.err
    repeated = run_cli(*shlex.split(trace.reproduce)[1:])
    assert repeated.code == 1 and "violated: double-free" in repeated.out, repeated.out + repeated.err


def test_the_example_database_replays_a_failure_first(tmp_path):
    """A failure found with a seed chosen at random is saved: the next check, with another
    seed, fails on its first run (hypothesis.seed would have switched the database off)."""
    from ownership import model_for
    from ownership.engines import fuzz

    model = model_for("sglang_pd")
    db = tmp_path / "examples"
    first = fuzz.check(model, runs=300, steps=30, database=db)
    assert first.verdict is Verdict.VIOLATED and first.coverage.runs > 1
    again = fuzz.check(model, runs=300, steps=30, database=db)
    assert again.verdict is Verdict.VIOLATED and again.coverage.runs == 1
    assert again.coverage.seed != first.coverage.seed
    # a seed the caller gives repeats the search run for run, without the database
    a = fuzz.check(model, runs=300, steps=30, seed=first.coverage.seed, database=db)
    assert a.coverage.runs == first.coverage.runs


def test_pytest_hypothesis_seed_is_the_seed_of_every_check(monkeypatch):
    import hypothesis.core

    from ownership import model_for
    from ownership.engines import fuzz

    monkeypatch.setattr(hypothesis.core, "global_force_seed", 4242)
    got = fuzz.check(model_for("sglang_pd"), runs=5, steps=5, database=None)
    assert got.coverage.seed == 4242


def test_a_conformance_bug_shrinks_to_its_minimal_run_for_at_least_18_of_20_seeds(example):
    """A mutated free that keeps the last page of a two-page request back diverges after
    alloc(n=2), free: 2 steps. Over 20 seeds (random runs, no database) the reported run is
    those 2 steps in at least 18 (measured: 20, and 19 before the pair moves of the shrinker;
    the real SGLang allocator with the same mutation: 20 of 20 at its minimal 3 steps)."""
    from toy_allocator_adapter import CheckedToyAllocatorAdapter

    class KeepsLastPage(CheckedToyAllocatorAdapter):
        def free(self, r: int) -> None:
            pages = self.table.pop(r)
            self.allocator.free(pages[:-1] if len(pages) > 1 else pages, owner=r)
            self.freed[r] = pages

    lengths = [len(conformance(SPEC, KeepsLastPage, seed=seed, database=None).trace.steps) - 1 for seed in range(20)]
    assert sum(n == 2 for n in lengths) >= 18, lengths


def test_replay_reruns_a_conformance_trace_on_the_real_code_through_its_adapter(tmp_path, example):
    """The trace of a failing conformance run, replayed with --adapter: the unchecked allocator
    still fails (double-free at step 3, exit 1); the checked one refuses the step (exit 0)."""
    import json

    import jsonschema
    from conftest import run_cli
    from toy_allocator_adapter import ToyAllocatorAdapter

    from ownership import schemas
    from ownership.trace import to_itf

    result = conformance(SPEC, ToyAllocatorAdapter, **CI)
    assert result.kind == "double-free"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(to_itf(result.trace)))
    adapter = str(EXAMPLE / "toy_allocator_adapter.py")
    still = run_cli("replay", str(path), "--spec", SPEC, "--adapter", f"{adapter}:ToyAllocatorAdapter")
    assert still.code == 1, still.out + still.err
    assert still.out.startswith("still fails: double-free at step 3")
    fixed = run_cli("replay", str(path), "--spec", SPEC, "--adapter", f"{adapter}:CheckedToyAllocatorAdapter", "--json")
    doc = json.loads(fixed.out)
    assert fixed.code == 0 and doc["outcome"] == "refused" and doc["step"] == 3
    validator = jsonschema.Draft202012Validator(schemas.load("replay"), registry=schemas.registry())
    assert not list(validator.iter_errors(doc))
    bad = run_cli("replay", str(path), "--spec", SPEC, "--adapter", f"{adapter}:NoSuchAdapter")
    assert bad.code == 2 and "defines no NoSuchAdapter" in bad.err
