"""The partitioned search in this process, and its checkpoints (issue 16, item 3).

- its partitions (1 and 3, in this process) answer every shipped spec, fix and release as the
  single-process engine (with one partition, the very same counterexample);
- `--checkpoint DIR` then SIGKILL, then `--resume DIR`: the final counts of an uninterrupted run;
- a checkpoint that is not this run's, damaged, hostile (a pickle) or missing is refused with
  exit 2 and one line, never a traceback, never code run from it;
- the options that cannot go together are refused before the search.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, run_cli
from test_interrupt import OWNERSHIP
from test_ray import same_answer, shipped_cases, shipped_model

from ownership.api import model_for
from ownership.engines import batch, partitioned
from ownership.engines.cluster import Recipe
from ownership.result import Verdict

#: 3.4 M states, about 5 s: long enough to be killed half-way.
KILLED = ["check", "sglang_pd", "--fix", "door-retire", "--param", "requests=4", "--param", "decode_pool=4"]


@pytest.mark.parametrize("spec, fixes, release, parts", [
    (*case, parts) for case in shipped_cases(releases=True) for parts in ((1, 3) if case[1:] == ((), None) else (3,))])
def test_the_partitioned_search_answers_every_shipped_spec_as_the_single_process_engine(spec, fixes, release, parts):
    model = shipped_model(spec, fixes, release)
    single = batch.check(model)
    got = partitioned.check(model, parts=parts)
    same_answer(spec, release, fixes, got, single)
    if parts == 1 and single.trace is not None:  # one partition discovers in the same order
        assert got.trace.steps == single.trace.steps


def _recipe(spec: str, **kw):
    model = model_for(spec, **kw)
    return model, Recipe.of(spec, model)


def test_a_checkpointed_run_stopped_at_a_depth_resumes_to_the_same_counterexample(tmp_path):
    model, recipe = _recipe("sglang_pd")
    where = str(tmp_path / "c")
    first = partitioned.check(model, recipe=recipe, checkpoint=where, max_depth=3)
    assert first.verdict is Verdict.BOUNDED
    resumed = partitioned.check(model, recipe=recipe, resume=where)
    single = batch.check(model)
    assert resumed.verdict is Verdict.VIOLATED and resumed.trace.steps == single.trace.steps


def kill_half_way(args: list[str], where: Path, *, levels: int = 12) -> int:
    """Run `ownership ARGS --checkpoint WHERE` in a session of its own and SIGKILL it (its Ray
    too, if it started one) once its checkpoint holds `levels` levels; the levels it held."""
    proc = subprocess.Popen([OWNERSHIP, *args, "--checkpoint", str(where)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    held = 0
    try:
        end = time.monotonic() + 180
        while time.monotonic() < end and proc.poll() is None:
            try:
                held = json.loads((where / "checkpoint.json").read_text())["levels"]
            except (OSError, ValueError, KeyError):
                held = 0
            if held >= levels:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return held


def test_a_killed_run_resumed_from_its_checkpoint_ends_with_the_counts_of_an_uninterrupted_run(tmp_path):
    where = tmp_path / "ckpt"
    assert 12 <= kill_half_way(KILLED, where) < 29
    resumed = run_cli(*KILLED, "--resume", str(where), "--json")
    assert resumed.code == 0, resumed.err
    doc = json.loads(resumed.out)
    assert doc["verdict"] == "verified"
    cov = doc["coverage"]
    # the uninterrupted run's counts: `ownership check` of KILLED without --checkpoint
    assert (cov["states"], cov["transitions"], cov["depth"]) == (3_392_733, 8_198_676, 28)
    assert doc["sometimes"] == {"a-request-completes": True, "a-freed-page-is-reused": True}


def _checkpoint(tmp_path: Path) -> Path:
    where = tmp_path / "c"
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--max-depth", "4", "--checkpoint", str(where))
    assert run.code == 0, run.err
    return where


def _refused(run, *words: str) -> None:
    assert run.code == 2, (run.code, run.out, run.err)
    assert run.err.startswith("error: ") and "Traceback" not in run.err + run.out
    for w in words:
        assert w in run.err, run.err


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    where = _checkpoint(tmp_path)
    _refused(run_cli("check", "sglang_pd", "--resume", str(where)), "written by another run")
    _refused(run_cli("check", "sglang_pd", "--fix", "door-retire", "--param", "requests=3", "--resume", str(where)),
             "written by another run")


def test_a_folder_that_holds_a_checkpoint_is_not_overwritten(tmp_path):
    where = _checkpoint(tmp_path)
    _refused(run_cli("check", "sglang_pd", "--fix", "door-retire", "--checkpoint", str(where)),
             "already holds a checkpoint", f"--resume {where}")


@pytest.mark.parametrize("damage", ["no-meta", "meta-not-json", "meta-wrong-type", "meta-foreign", "level-missing",
                                    "level-pickle", "level-wrong-words", "level-short-parents", "counts-differ"])
def test_a_damaged_or_hostile_checkpoint_is_refused_without_running_code(tmp_path, damage):
    where = _checkpoint(tmp_path)
    meta = where / "checkpoint.json"
    doc = json.loads(meta.read_text())
    level = where / "part-0" / "level-2.npz"
    marker = tmp_path / "ran"
    if damage == "no-meta":
        meta.unlink()
    elif damage == "meta-not-json":
        meta.write_text("{not json")
    elif damage == "meta-wrong-type":
        meta.write_text(json.dumps(doc | {"levels": "5"}))
    elif damage == "meta-foreign":
        meta.write_text(json.dumps(doc | {"format": "something-else"}))
    elif damage == "level-missing":
        level.unlink()
    elif damage == "level-pickle":  # a pickle that would run code if it were loaded with pickle
        level.write_bytes(pickle.dumps(_Hostile(str(marker))))
    elif damage == "level-wrong-words":
        with np.load(level) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["words"] = np.zeros((7, arrays["words"].shape[1]), np.uint64)
        with open(level, "wb") as f:
            np.savez(f, **arrays)
    elif damage == "level-short-parents":
        with np.load(level) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["parent_id"] = arrays["parent_id"][:-1]
        with open(level, "wb") as f:
            np.savez(f, **arrays)
    elif damage == "counts-differ":
        doc["sizes"][2][0] += 1
        meta.write_text(json.dumps(doc))
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--resume", str(where))
    _refused(run, f"--resume {where}")
    assert not marker.exists()


class _Hostile:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@pytest.mark.parametrize("args, words", [
    (("--checkpoint", "X", "--resume", "X"), "not both"),
    (("--checkpoint", "X", "--workers", "2"), "--ray local"),
    (("--engine", "bmc", "--checkpoint", "X"), "explicit engine"),
    (("--engine", "bmc", "--ray", "local"), "bmc runs in one process"),
    (("--searches", "3",), "--engine fuzz --ray"),
    (("--checkpoint", "X", "--max-memory", "1G"), "--max-memory"),
    (("--engine", "fuzz", "--ray", "local", "--workers", "2"), "--searches"),
])
def test_options_that_do_not_go_together_are_refused_before_the_search(tmp_path, args, words):
    args = tuple(str(tmp_path / a) if a == "X" else a for a in args)
    _refused(run_cli("check", "sglang_pd", *args), words)
    assert not (tmp_path / "X").exists()


def test_liveness_and_measures_are_refused_by_a_search_in_parts(tmp_path):
    where = str(tmp_path / "c")
    _refused(run_cli("check", "sglang_disagg", "--checkpoint", where), "liveness", "--skip eventually-released")
    _refused(run_cli("check", "sglang_disagg", "--ray", "local", "--skip", "eventually-released", "--skip",
                     "eventually-landed", "--skip", "every-request-leaves", "--measure"), "--measure")


def test_resume_of_a_folder_without_a_checkpoint_says_so(tmp_path):
    _refused(run_cli("check", "sglang_pd", "--resume", str(tmp_path)), "holds no checkpoint")


def test_a_checkpointed_run_shows_the_states_of_each_worker_in_its_progress():
    seen = []
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    partitioned.check(model, parts=2, reporter=seen.append, report_every=0)
    last = seen[-1]
    assert sum(last.per_worker) == last.states == 65_732 and len(last.per_worker) == 2
    assert "per worker: " in last.describe()



def test_ctrl_c_stops_a_checkpointed_run_at_once_and_it_resumes(tmp_path):
    """In this process Ctrl-C acts at once (nothing holds it); the checkpoint it leaves resumes."""
    from test_interrupt import Terminal, _interrupted

    where = tmp_path / "c"
    term = Terminal(*KILLED, "--checkpoint", str(where))
    term.wait_for(b"states/s")
    text, took = _interrupted(term)
    assert took < 10.0 and "stopped by interrupt" in text
    resumed = run_cli(*KILLED, "--resume", str(where), "--json")
    assert resumed.code == 0 and json.loads(resumed.out)["coverage"]["states"] == 3_392_733
