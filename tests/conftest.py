"""Shared helpers for the tests: paths, running the CLI in-process, loading test specs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ownership.cli import cli

ROOT = Path(__file__).resolve().parent.parent
TEST_SPECS = ROOT / "tests" / "specs"
#: the installed command, for tests that run it as a process
OWNERSHIP = shutil.which("ownership") or str(Path(sys.executable).with_name("ownership"))
#: the incident's counterexample, a trace kept with the CLI's golden files
TRACE = str(ROOT / "tests" / "golden" / "cli" / "incident.trace.json")


@dataclass
class Run:
    """The outcome of one CLI invocation."""

    code: int
    out: str
    err: str


def run_cli(*args: str) -> Run:
    """Run `ownership ARGS...` in-process from the repository root."""
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(cwd)
    return Run(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def cli_run():
    return run_cli


def spec_path(name: str) -> str:
    """The path of a test spec, relative to the repository root (as a user would type it)."""
    return str((TEST_SPECS / name).relative_to(ROOT))


def steps(result) -> list[str]:
    """The action labels of a result's trace, after the initial state."""
    return [s.label() for s in result.trace.steps[1:]]


def violated(result, prop: str, length: int):
    """The result is a violation of `prop` whose shortest counterexample has `length` steps."""
    from ownership import Verdict

    assert result.verdict is Verdict.VIOLATED
    v = result.trace.violation
    assert (v.property, v.step, len(result.trace.steps) - 1) == (prop, length, length)
    return v


def scenario(spec: str, actions, **kw):
    """Replay a hand-written run [(action, arguments), ...] of a shipped spec; return the replay."""
    from ownership import Trace, model_for, replay_trace
    from ownership.trace import Step

    model = model_for(spec, **kw)
    run = [Step(None, {}, model.show(model.initial))]
    run += [Step(name, args, {}) for name, args in actions]
    trace = Trace(steps=run, spec=spec, params=dict(model.env), fixes=list(model.spec.fixes))
    replayed, _ = replay_trace(trace)
    return replayed


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray instance of 2 CPUs, shared by the tests of the Ray searches (started once:
    about 5 s). Ray is in the test extra, so a missing Ray fails these tests, never skips them."""
    from ownership.engines import cluster

    with cluster.connected("local", cpus=2) as ray:
        yield ray
    while _REVIVED:  # (an instance started again by ray_left_idle: stopped with the session)
        with contextlib.suppress(Exception):
            _REVIVED.pop().__exit__(None, None, None)


#: How long a Ray test's searches may take to give their CPUs back after the test.
RAY_IDLE_SECONDS = 60.0


@pytest.fixture(autouse=True)
def ray_left_idle(request):
    """After each test that used the shared Ray instance: every CPU of it is free again within
    RAY_IDLE_SECONDS, or the test fails, naming what it left running, and its leftovers are
    stopped (a search left running holds a CPU for good, and every later Ray test waits for
    it: the session hung, issue 29). Before such a test, a shared instance whose node has
    died (its raylet, marked dead by Ray on a machine loaded for long) is started again, with
    a warning: every later Ray test waited on it."""
    if "ray_cluster" in request.fixturenames:
        _revive(request.getfixturevalue("ray_cluster"))
    yield
    if "ray_cluster" not in request.fixturenames:
        return
    ray = request.getfixturevalue("ray_cluster")
    total = ray.cluster_resources().get("CPU", 0)
    end = time.monotonic() + RAY_IDLE_SECONDS
    while ray.available_resources().get("CPU", 0) < total and time.monotonic() < end:
        time.sleep(0.2)
    free = ray.available_resources().get("CPU", 0)
    if free >= total:
        return
    left = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith("ownership-")]
    for actor in left:
        with contextlib.suppress(Exception):
            ray.kill(ray.get_actor(actor))
    busy = _ray_task_processes()
    for pid, _ in busy:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if not left and not busy:
        # (nothing of ours runs: Ray's own count of free CPUs lags on a loaded machine, e.g.
        # after a worker died; the next test's search waits for the CPU, START_SECONDS at most)
        warnings.warn(f"Ray counts {total - free:g} of {total:g} CPUs busy {RAY_IDLE_SECONDS:g} s after the test,"
                      " with no search of ours running", stacklevel=2)
        return
    pytest.fail(f"the test left {total - free:g} of the shared Ray instance's {total:g} CPUs busy after"
                f" {RAY_IDLE_SECONDS:g} s: actors {left}, tasks {[name for _, name in busy]} (now stopped)")


_REVIVED: list[Any] = []  # the shared Ray instances started again (their context managers)


def _revive(ray: Any) -> None:
    """Start the shared Ray instance again if its node is dead (see ray_left_idle)."""
    try:
        alive = any(node.get("Alive") for node in ray.nodes())
    except Exception:  # (a driver that lost its instance may fail to answer at all)
        alive = False
    if alive:
        return
    from ownership.engines import cluster

    warnings.warn("the shared Ray instance's node had died (a raylet marked dead): started again", stacklevel=2)
    with contextlib.suppress(Exception):
        ray.shutdown()
    again = cluster.connected("local", cpus=2)
    again.__enter__()
    _REVIVED.append(again)


#: The names of the Ray worker processes of our searches: the swarm's `search` task and the
#: partitioned search's `Partition` actors (`ray::Partition.expand`, `ray::ownership-RUN-I:...`). Never Ray's
#: own processes (`ray::DashboardAgent`, `ray::RuntimeEnvAgent`, ...): killing those killed the
#: raylet, and every later Ray test waited on a dead instance (a CI hang under load).
OUR_RAY_PROCESSES = ("ray::search", "ray::Partition", "ray::ownership-")


def _ray_task_processes() -> list[tuple[int, str]]:
    """The Ray worker processes of this machine running one of our searches (OUR_RAY_PROCESSES):
    their pid and name."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if name.startswith(OUR_RAY_PROCESSES):
            found.append((int(entry.name), name))
    return found


def one_error_line(run, *parts: str) -> str:
    """The run is bad input: exit 2, no traceback, one `error:` line holding every part."""
    assert run.code == 2, (run.code, run.out, run.err)
    assert "Traceback" not in run.out + run.err
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def check_canonical_on_orbits(model, bm, canon, rows) -> list[int]:
    """Every row under every renaming of its requests, canonicalised: the representative and
    stabiliser are the reference search's over every ordering that sorts the signatures
    (by_every_ordering), one representative per row's renamings, the stabiliser the number of
    renamings that fix the row. Returns that number per row (tests/engines/test_symmetry.py,
    tests/engines/test_batch_wide.py)."""
    import itertools

    from ownership.engines.symmetry import apply_concrete

    perms = list(itertools.permutations(range(1, model.requests + 1)))
    fixed = [sum(apply_concrete(model, p, row) == row for p in perms) for row in rows]
    variants = [apply_concrete(model, p, row) for row in rows for p in perms]
    words = bm.layout.pack_rows(variants)
    got, stab = canon.canonicalise(words)
    X = bm.layout.unpack(words)
    ref, ref_stab = canon.by_every_ordering(X, canon.signatures(X))
    assert (got == ref).all() and (stab == ref_stab).all()
    n = len(perms)
    for i, row in enumerate(rows):
        block = got[:, i * n:(i + 1) * n]
        assert (block == block[:, :1]).all(), row
        assert (stab[i * n:(i + 1) * n] == fixed[i]).all(), (row, fixed[i])
        assert bm.layout.unpack_row(block, 0) in {apply_concrete(model, p, row) for p in perms}, row
    return fixed


def sigint_default() -> None:
    """In a child, before it runs its program: SIGINT at its default disposition. A test
    suite started with SIGINT ignored (a background job of a non-interactive shell, some CI
    runners) passes that on to every child, which then never sees a Ctrl-C (issue 29)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(args: list[str], **kw) -> subprocess.Popen:
    """Start a child that Ctrl-C reaches whatever the suite's own SIGINT disposition
    (`sigint_default`), in a session of its own: SIGINT sent to its process group reaches it
    and its workers, as a terminal's Ctrl-C does, and nothing else of the suite's."""
    return subprocess.Popen(args, preexec_fn=sigint_default, start_new_session=True, **kw)


#: What two exhaustive searches of one model must both report (same_search).
SEARCH_FIELDS = ("states", "transitions", "depth", "complete", "stopped_by", "bound_depth", "states_before_symmetry")


def same_search(ref, got) -> None:
    """Two explicit searches of one model (per-state, batch, native, partitioned) answered
    alike: verdict, every count of SEARCH_FIELDS, the sometimes properties and the trace."""
    assert got.verdict is ref.verdict, (got.verdict, ref.verdict)
    for field in SEARCH_FIELDS:
        assert getattr(got.coverage, field) == getattr(ref.coverage, field), field
    assert got.sometimes == ref.sometimes
    assert got.trace == ref.trace
