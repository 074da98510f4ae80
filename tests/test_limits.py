"""Limits hold for the whole command (issue 12, item 4), tested by behaviour: the command
stops, exits 3, and says what stopped it and what was covered; times are only bounded
generously ("well under 30 s for a 1 s limit").

- --max-seconds and --max-memory cover loading, tracing and building the model, not only the
  search (requests=500 traced for minutes; bmc and prove at decode_pool=100000 ended in a
  MemoryError traceback; fuzz at a million pages ran 12 s for 0 runs under --max-seconds 1);
- replay has the same limits, and a progress line while it traces;
- a fuzz run claims only what it tried (it said "never enabled" of actions never looked at);
- the batch engine's memory estimate is honest: within 1.5x of the measured resident memory
  (it stopped at a third of --max-memory);
- ownership.limits itself: the guard, its phases and the engine's grace.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from ownership import limits
from ownership.errors import LimitReached

OWNERSHIP = shutil.which("ownership") or str(Path(sys.executable).with_name("ownership"))
TRACE = ROOT / "tests" / "golden" / "cli" / "incident.trace.json"

#: A generous bound on how long a command stopped by a limit of a second or two may take.
GENEROUS = 30.0


def ownership(*args: str, cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess, float]:
    """Run the real console script; the process and its wall time."""
    start = time.monotonic()
    run = subprocess.run([OWNERSHIP, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    return run, time.monotonic() - start


def stopped(run: subprocess.CompletedProcess, seconds: float, limit: str, phase: str | None = None) -> str:
    """Exit 3, no traceback, an `inconclusive: stopped by LIMIT` line (while PHASE), in time."""
    assert run.returncode == 3, (run.returncode, run.stdout, run.stderr)
    assert "Traceback" not in run.stdout + run.stderr
    assert seconds < GENEROUS
    lines = [line for line in run.stdout.splitlines() if line.startswith("inconclusive: ")]
    assert len(lines) == 1, run.stdout
    assert f"stopped by {limit}" in lines[0], lines[0]
    if phase is not None:
        assert f"while {phase}" in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- before the search


def test_max_seconds_covers_tracing_the_spec():
    """requests=500: tracing every action binding takes minutes; a 1.5 s limit stops it there,
    with a progress line meanwhile (stderr); --json makes the stop one JSON object."""
    run, took = ownership("check", "sglang_pd", "--param", "requests=500", "--max-seconds", "1.5")
    line = stopped(run, took, "max-seconds", "tracing the spec's actions")
    assert line.endswith("nothing was explored")
    assert "tracing the spec's actions: 1 s" in run.stderr  # the progress line outside the engine
    run, took = ownership("check", "sglang_pd", "--param", "requests=500", "--max-seconds", "1", "--json")
    assert run.returncode == 3 and took < GENEROUS
    doc = json.loads(run.stdout)
    assert doc["verdict"] == "inconclusive" and doc["stopped_by"] == "max-seconds"
    assert doc["while"] == "tracing the spec's actions" and doc["coverage"] is None and doc["exit_code"] == 3


BALLAST = '''"""A spec whose loading takes memory: 20 MB at a time, to 2 GB."""

from ownership import Request, Spec, action, per_request

ballast = []
for _ in range(100):
    ballast.append(b"x" * (20 << 20))


class Heavy(Spec):
    done = per_request(bool, False)

    @action
    def finish(self, s, r: Request):
        s.done[r] = True
'''


@pytest.mark.parametrize("command", ["check", "prove"])
def test_max_memory_covers_loading_the_spec(tmp_path, command):
    """A spec that takes 2 GB while it loads stops at --max-memory 200M, in the loading phase."""
    spec = tmp_path / "heavy.py"
    spec.write_text(BALLAST, encoding="utf-8")
    run, took = ownership(command, str(spec), "--max-memory", "200M")
    stopped(run, took, "max-memory", "loading the spec")


@pytest.mark.parametrize("command", [("check", "--engine", "bmc"), ("prove",)], ids=["bmc", "prove"])
def test_bmc_and_prove_at_a_huge_pool_stop_at_the_limit(command):
    """decode_pool=100000 built and encoded a model until MemoryError (34-60 s, a traceback)."""
    run, took = ownership(command[0], "sglang_pd", *command[1:], "--param", "decode_pool=100000",
                          "--max-seconds", "1")
    line = stopped(run, took, "max-seconds")
    assert line.endswith("nothing was explored")


def test_fuzz_at_a_million_pages_stops_and_claims_only_what_it_tried():
    """It ran 12 s for 0 runs under --max-seconds 1, then said "never enabled" of every action."""
    run, took = ownership("check", "sglang_pd", "--engine", "fuzz", "--param", "decode_pool=1000000",
                          "--max-seconds", "1")
    stopped(run, took, "max-seconds")
    assert "never enabled" not in run.stdout and "never fired" not in run.stdout


def test_fuzz_coverage_names_only_actions_it_looked_at():
    """A search cut off before its first run names no action as never enabled."""
    from ownership import model_for
    from ownership.engines import fuzz

    result = fuzz.check(model_for("sglang_pd"), runs=5, steps=5, max_seconds=1e-9, profile="ci")
    cov = result.coverage
    assert cov.stopped_by == "max-seconds" and cov.runs == 0
    assert cov.never_enabled == () and cov.never_fired == ()
    full = fuzz.check(model_for("sglang_pd"), runs=3, steps=10, profile="ci").coverage
    assert set(full.never_enabled) <= set(full.never_fired)


def test_replay_has_the_whole_command_limits(tmp_path):
    """A trace whose parameters say requests=500 replayed for minutes; --max-seconds stops it."""
    doc = json.loads(TRACE.read_text(encoding="utf-8"))
    doc["#meta"]["ownership"]["params"]["requests"] = 500
    big = tmp_path / "big.itf.json"
    big.write_text(json.dumps(doc), encoding="utf-8")
    run, took = ownership("replay", str(big), "--max-seconds", "1.5")
    line = stopped(run, took, "max-seconds", "tracing the spec's actions")
    assert line.endswith("no verdict")
    assert "tracing the spec's actions: 1 s" in run.stderr


def test_replay_within_its_limits_replays():
    run, _ = ownership("replay", str(TRACE), "--max-seconds", "60", "--max-memory", "4G")
    assert run.returncode == 1


# --------------------------------------------------------------------------- the search itself


def test_the_engine_gets_what_is_left_of_the_limit_and_reports_its_coverage():
    """Past loading and tracing, the engine stops itself with its coverage (states explored)."""
    run, took = ownership("check", "sglang_pd", "--param", "requests=4", "--param", "decode_pool=5",
                          "--fix", "door-retire", "--max-seconds", "2", "--json")
    doc = json.loads(run.stdout)
    assert run.returncode == 3 and took < GENEROUS
    assert doc["verdict"] == "inconclusive" and doc["coverage"]["stopped_by"] == "max-seconds"
    assert doc["coverage"]["states"] > 0 and doc["coverage"]["seconds"] < 2.5


PROBE = '''
import json
import sys

from ownership.api import model_for
from ownership.engines import batch

batch.keep_freed_memory()  # as the `ownership` command does
params, limit = json.loads(sys.argv[1]), json.loads(sys.argv[2])
model = model_for("sglang_pd", params=params, fixes=["door-retire"])
samples = []
levels = []
expand = batch._Search._level


def measured(self, d, memory_limit):
    n = self.level_size(d)
    growth = n / self.level_size(d - 1) if d else float(self.B)  # as _Search.run computes it
    before = batch._rss()
    estimate = self._estimate(n, growth)
    samples.clear()
    try:
        return expand(self, d, memory_limit)
    finally:
        levels.append({"frontier": n, "before": before, "estimate": estimate,
                       "peak": max([batch._rss(), *samples])})


batch._Search._level = measured
result = batch.check(model, max_memory=limit, reporter=lambda p: samples.append(p.memory_bytes), report_every=0)
print(json.dumps({"levels": levels, "stopped_by": result.coverage.stopped_by, "peak": result.coverage.peak_memory}))
'''

MEDIUM = {"requests": 4, "decode_pool": 3}  # 892,665 states, about 125 MB resident


@pytest.fixture(scope="module")
def unlimited() -> dict:
    """The probe of the whole medium search, without a memory limit."""
    return _probe(None)


def _probe(limit: int | None) -> dict:
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(MEDIUM), json.dumps(limit)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_batch_memory_estimate_is_within_1_5x_of_the_resident_memory(unlimited):
    """Before each level the guard compares resident memory + the estimate with the limit: that
    sum is what the level's measured peak resident memory is compared with, level by level.
    (Measured on this search: 1.09x to 1.38x; the former estimate was 3.5x to 7x, and stopped a
    search under --max-memory 1G at 354 MB.) A ratio under 1 would let a level overshoot; over
    1.5 stops searches early."""
    levels = [lvl for lvl in unlimited["levels"] if lvl["frontier"] >= 5000]
    assert len(levels) >= 10
    ratios = [(lvl["before"] + lvl["estimate"]) / lvl["peak"] for lvl in levels]
    assert all(1 / 1.5 <= r <= 1.5 for r in ratios), [round(r, 2) for r in ratios]


def test_the_batch_search_stops_under_its_memory_limit(unlimited):
    """Half the memory the whole search needs: it stops (max-memory), below the limit."""
    full = unlimited
    base = full["levels"][0]["before"]
    limit = base + (full["peak"] - base) // 2
    got = _probe(limit)
    assert got["stopped_by"] == "max-memory"
    assert got["peak"] <= limit * 1.05  # (at most a block's worth past it)


# --------------------------------------------------------------------------- the mechanism


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_an_armed_deadline_interrupts_the_main_thread_in_its_phase():
    guard = None
    with pytest.raises(LimitReached) as got:
        with limits.armed(max_seconds=0.3) as guard:
            with limits.phase("tracing the spec's actions"):
                _busy(10.0)
    assert got.value.reason == "max-seconds"
    assert guard is not None and (guard.tripped, guard.stopped_in) == ("max-seconds", "tracing the spec's actions")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)


def test_the_timer_is_gone_after_the_block():
    with limits.armed(max_seconds=60):
        assert limits.seconds_left(None) is not None and limits.seconds_left(None) <= 60
        assert limits.seconds_left(5.0) <= 5.0
    assert limits.seconds_left(5.0) == 5.0 and limits.tripped() is None
    _busy(0.3)  # no tick comes after the block


def test_an_engine_gets_a_grace_past_the_deadline_and_the_ceiling():
    """Inside an engine phase the guard waits: the engine's own check stops it with coverage."""
    guard = limits.Guard(1.0, 1 << 40, None)
    guard.deadline = time.monotonic() - 0.5
    assert guard.crossed() == "max-seconds"
    guard.in_engine = True
    assert guard.crossed() is None
    guard.deadline = time.monotonic() - 2.0
    assert guard.crossed() == "max-seconds"
    tight = limits.Guard(None, limits.resident_memory() // 2, None)
    assert tight.crossed() == "max-memory"
    assert limits.Guard(None, None, None).memory_reason == "memory"


def test_a_limit_crossed_while_the_answer_is_reported_does_not_replace_it():
    """NOTE(settle): once the engine has its answer, the command's time limit no longer
    stops it (the report of the answer used to be replaced by "nothing was explored")."""
    from ownership import api, limits

    with limits.armed(max_seconds=60) as guard:
        result = api.check("sglang_pd", fixes=["door-retire"])
        guard.deadline = time.monotonic() - 1.0  # the deadline passes while the answer is reported
        time.sleep(0.5)  # reporting, outside any engine: the ticks come (and before, one raised)
    assert result.coverage.states == 903 and result.verdict.word == "verified"
    assert guard.tripped is None


def test_inside_deferred_a_stop_waits_for_the_poll_and_is_raised_there():
    """NOTE(deferred): Ctrl-C and a crossed limit, held where the batch search waits inside
    multiprocessing (raised there, they could leave a pool's lock held: a hang)."""
    import os

    before = signal.getsignal(signal.SIGINT)
    with limits.deferred() as held:
        os.kill(os.getpid(), signal.SIGINT)
        _busy(0.05)  # the handler has run: nothing was raised
        with pytest.raises(KeyboardInterrupt):
            held.poll()
        held.poll()  # (once)
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(LimitReached) as got:
        with limits.armed(max_seconds=0.2) as guard:
            with limits.deferred() as held:
                _busy(0.5)
                assert guard.tripped == "max-seconds"
                held.poll()
            raise AssertionError("poll() did not raise the limit held")
    assert got.value.reason == "max-seconds"
    with pytest.raises(KeyboardInterrupt):  # after the block, Ctrl-C raises again at once
        os.kill(os.getpid(), signal.SIGINT)
        _busy(1.0)
