"""The partitioned search in this process, and its checkpoints (issue 16, item 3).

- its partitions (1 and 3, in this process) answer every shipped spec, fix and release as the
  single-process engine (with one partition, the very same counterexample);
- `--checkpoint DIR` then SIGKILL, then `--resume DIR`: the final counts of an uninterrupted run;
- a checkpoint that is not this run's, damaged, hostile (a pickle) or missing is refused with
  exit 2 and one line, never a traceback, never code run from it (issue 29: every file's
  checksum, then every value, NOTE(checked-levels); the two wrong verdicts the issue saw from
  overwritten words; a truncated file, a huge integer, an older format, a stray file; on Ray);
- a checkpoint of every shipped spec resumes (the checks refuse no checkpoint the search wrote);
- a level or checkpoint.json that cannot be written stops the search inconclusive, with the
  coverage reached, and the checkpoint resumes (issue 29);
- the options that cannot go together are refused before the search.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, run_cli
from terminal import OWNERSHIP
from test_ray import same_answer, shipped_cases, shipped_model

from ownership.api import model_for
from ownership.engines import batch, partitioned
from ownership.engines import checkpoint as ckpt
from ownership.engines.cluster import Recipe
from ownership.errors import UsageError
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


@pytest.mark.parametrize("spec, fixes, release, symmetry", [
    (*case, symmetry) for case in shipped_cases(releases=False) for symmetry in (False, True)])
def test_a_checkpoint_of_every_shipped_spec_resumes_past_the_checks_of_its_values(tmp_path, spec, fixes, release,
                                                                                  symmetry):
    """NOTE(checked-levels) refuses no checkpoint that the search wrote: 3 partitions, with and
    without symmetry (orbit sizes), stopped at depth 3, then resumed to the single-process answer."""
    model = shipped_model(spec, fixes, release)
    recipe = Recipe.of(spec, model, symmetry=symmetry)
    where = str(tmp_path / "c")
    try:
        partitioned.check(model, recipe=recipe, parts=3, checkpoint=where, max_depth=3, symmetry=symmetry)
    except UsageError as e:  # (a spec that symmetry does not apply to)
        assert symmetry and "symmetr" in str(e)
        return
    resumed = partitioned.check(model, recipe=recipe, parts=3, resume=where, symmetry=symmetry)
    same_answer(spec, release, fixes, resumed, batch.check(model, symmetry=symmetry))


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


def test_a_folder_with_the_partitions_of_a_run_of_more_workers_is_refused(tmp_path):
    """A checkpoint written there could never be resumed: its folder would hold a partition it
    does not record."""
    where = tmp_path / "c"
    (where / "part-3").mkdir(parents=True)
    _refused(run_cli(*SMALL, "--checkpoint", str(where)), "part-3", "give an empty folder")
    assert not (where / "checkpoint.json").exists()


def test_a_folder_that_holds_a_checkpoint_is_not_overwritten(tmp_path):
    where = _checkpoint(tmp_path)
    _refused(run_cli("check", "sglang_pd", "--fix", "door-retire", "--checkpoint", str(where)),
             "already holds a checkpoint", f"--resume {where}")


def _arrays(level: Path) -> dict[str, np.ndarray]:
    with np.load(level) as z:
        return {k: z[k] for k in z.files}


def _save(level: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(level, "wb") as f:
        np.savez(f, **arrays)


def _resign(where: Path) -> None:
    """Make checkpoint.json's checksums agree with the folder again (as a bug of the writer, or
    a hand, could): what is left to refuse a damage is the check of the values."""
    meta = where / "checkpoint.json"
    doc = json.loads(meta.read_text())
    for name in doc.get("files", {}):
        if (where / name).is_file():
            doc["files"][name] = hashlib.sha256((where / name).read_bytes()).hexdigest()
    doc["checksum"] = ckpt.meta_checksum(doc)
    meta.write_text(json.dumps(doc))


@pytest.mark.parametrize("resign", [False, True])
@pytest.mark.parametrize("damage", ["no-meta", "meta-not-json", "meta-wrong-type", "meta-foreign", "level-missing",
                                    "level-pickle", "level-wrong-words", "level-short-parents", "counts-differ"])
def test_a_damaged_or_hostile_checkpoint_is_refused_without_running_code(tmp_path, damage, resign):
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
        arrays = _arrays(level)
        arrays["words"] = np.zeros((7, arrays["words"].shape[1]), np.uint64)
        _save(level, arrays)
    elif damage == "level-short-parents":
        arrays = _arrays(level)
        arrays["parent_id"] = arrays["parent_id"][:-1]
        _save(level, arrays)
    elif damage == "counts-differ":
        doc["sizes"][2][0] += 1
        meta.write_text(json.dumps(doc))
    if resign and meta.is_file() and damage not in ("meta-not-json", "meta-foreign"):
        _resign(where)
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--resume", str(where))
    _refused(run, f"--resume {where}")
    assert not marker.exists()


#: the issue's size: 6,989 states in 10 levels (the whole run: 65,732 states, depth 21)
SMALL = ["check", "sglang_pd", "--fix", "door-retire", "--param", "requests=3"]


def _small_checkpoint(tmp_path: Path) -> Path:
    where = tmp_path / "c"
    run = run_cli(*SMALL, "--max-depth", "10", "--checkpoint", str(where))
    assert run.code == 0 and "6,989 states" in run.out, (run.code, run.out, run.err)
    return where


def _damage_words(level: Path, how: str) -> None:
    """Overwrite a level's state words, keeping their shape and dtype (issue 29)."""
    arrays = _arrays(level)
    words = arrays["words"]
    if how == "random-words":
        words[:] = np.random.default_rng(29).integers(0, 1 << 63, words.shape, dtype=np.uint64)
    elif how == "repeated-words":  # every state the first of the level before: a state already visited
        words[:] = _arrays(level.with_name(f"level-{int(level.stem.split('-')[1]) - 1}.npz"))["words"][:, :1]
    else:
        words[:] = 0
    _save(level, arrays)


@pytest.mark.parametrize("resign", [False, True])
@pytest.mark.parametrize("how, why", [("random-words", "a value that its packing cannot"),
                                      ("repeated-words", "a state is stored twice"),
                                      ("zeroed-words", "a state is stored twice")])
def test_overwritten_state_words_are_refused_never_a_verdict(tmp_path, how, why, resign):
    """Issue 29: the last level's words overwritten (right shape and dtype) resumed to a
    violation of a verified spec (random words: a leak; zeroed: a double-free, with an
    impossible trace) or to "verified" over a tenth of the states (repeated words: every
    successor already visited); now exit 2 naming the file, by its checksum, and, with the
    checksums made to agree, by the check of the values (NOTE(checked-levels))."""
    where = _small_checkpoint(tmp_path)
    level = where / "part-0" / "level-10.npz"
    _damage_words(level, how)
    if resign:
        _resign(where)
    run = run_cli(*SMALL, "--resume", str(where))
    _refused(run, f"{level} is damaged", why if resign else "its checksum is not the one checkpoint.json records")
    assert "verified" not in run.out and "violated" not in run.out


@pytest.mark.parametrize("damage, words", [
    ("parent-out-of-range", "parent is not a state of level 4"),
    ("binding-out-of-range", "reached by binding"),
    ("not-the-initial-state", "level 0 is not the initial state"),
    ("bits-outside-the-packing", "a value that its packing cannot"),
    ("orbit-without-symmetry", "orbit sizes without symmetry"),
])
def test_a_level_whose_checksums_agree_but_whose_values_cannot_be_is_refused(tmp_path, damage, words):
    where = _small_checkpoint(tmp_path)
    level = where / "part-0" / ("level-0.npz" if damage == "not-the-initial-state" else "level-5.npz")
    arrays = _arrays(level)
    if damage == "parent-out-of-range":
        arrays["parent_id"][-1] = 10 ** 6
    elif damage == "binding-out-of-range":
        arrays["via"][0] = np.iinfo(arrays["via"].dtype).max
    elif damage == "not-the-initial-state":
        arrays["words"][:, 0] ^= np.uint64(1)
    elif damage == "bits-outside-the-packing":
        arrays["words"][-1, 0] |= np.uint64(1 << 63)
    else:
        arrays["orbit"] = np.ones(arrays["words"].shape[1], np.int64)
    _save(level, arrays)
    _resign(where)
    _refused(run_cli(*SMALL, "--resume", str(where)), f"{level} is damaged", words)


def test_a_truncated_level_file_is_bad_input_not_an_internal_error(tmp_path):
    """Issue 29: a truncated .npz was exit 4 (BadZipFile)."""
    where = _small_checkpoint(tmp_path)
    level = where / "part-0" / "level-7.npz"
    level.write_bytes(level.read_bytes()[:1000])
    _refused(run_cli(*SMALL, "--resume", str(where)), f"{level} is damaged")


def test_an_integer_of_over_4300_digits_in_checkpoint_json_is_bad_input_said_short(tmp_path):
    """Issue 29: Python's limit on the digits of an integer made it exit 4."""
    where = _small_checkpoint(tmp_path)
    meta = where / "checkpoint.json"
    meta.write_text(meta.read_text().replace('"transitions": ', '"transitions": ' + "7" * 5000 + ", \"x\": "))
    run = run_cli(*SMALL, "--resume", str(where))
    _refused(run, "more than 4,300 digits")
    assert "7" * 100 not in run.err


def test_an_edited_checkpoint_json_is_refused_by_its_checksum(tmp_path):
    """A count changed by hand (or a bit flipped) in checkpoint.json would be a wrong count."""
    where = _small_checkpoint(tmp_path)
    meta = where / "checkpoint.json"
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps(doc | {"transitions": doc["transitions"] - 1000}))
    _refused(run_cli(*SMALL, "--resume", str(where)), "checkpoint.json is damaged", "checksum")


def test_a_checkpoint_of_an_older_format_or_another_packing_is_refused(tmp_path):
    where = _small_checkpoint(tmp_path)
    meta = where / "checkpoint.json"
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps(doc | {"layout": "0" * 64}))
    _resign(where)
    _refused(run_cli(*SMALL, "--resume", str(where)), "packed another way")
    old = {k: v for k, v in doc.items() if k not in ("checksum", "layout", "files")} | {"version": 2}
    meta.write_text(json.dumps(old))  # (what version 2 wrote: no checksums, no packing)
    _refused(run_cli(*SMALL, "--resume", str(where)), "older ownership", "format version 2")


@pytest.mark.parametrize("extra", ["part-1/level-0.npz", "part-0/level-3.npz.orig"])
def test_a_file_the_checkpoint_does_not_record_is_refused(tmp_path, extra):
    """A second partition's folder in a one-partition checkpoint, a stray file beside the levels
    (a mix of two checkpoints); a level past the complete ones is a killed run's leftover."""
    where = _small_checkpoint(tmp_path)
    (where / extra).parent.mkdir(exist_ok=True)
    shutil.copy(where / "part-0" / "level-0.npz", where / extra)
    shutil.copy(where / "part-0" / "level-9.npz", where / "part-0" / "level-11.npz")
    _refused(run_cli(*SMALL, "--resume", str(where)), "is not part of the checkpoint", extra.split("/")[0])
    (where / extra).unlink()
    if extra.startswith("part-1"):
        (where / "part-1").rmdir()
    resumed = run_cli(*SMALL, "--resume", str(where))
    assert resumed.code == 0 and "65,732 reachable states" in resumed.out, resumed.err


def test_a_state_of_another_partition_is_refused(tmp_path):
    """Partitions own states by hash: a state in the wrong one would be searched twice."""
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    where = tmp_path / "c"
    assert partitioned.check(model, recipe=recipe, parts=2, checkpoint=str(where), max_depth=6).coverage.states
    a, b = where / "part-0" / "level-5.npz", where / "part-1" / "level-5.npz"
    one, two = _arrays(a), _arrays(b)
    one["words"][:, 0] = two["words"][:, 0]
    _save(a, one)
    _resign(where)
    with pytest.raises(UsageError, match="a state belongs to another partition"):
        partitioned.check(model, recipe=recipe, parts=2, resume=str(where))


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
    """Ctrl-C stops a checkpointed run (exit 3, no traceback: terminal.interrupted, which waits
    generously for a hang and asserts no time, issue 29 item 7); the checkpoint it leaves
    resumes."""
    from terminal import Terminal, interrupted

    where = tmp_path / "c"
    term = Terminal(*KILLED, "--checkpoint", str(where))
    term.wait_for(b"states/s")
    text, _ = interrupted(term)
    assert "stopped by interrupt" in text
    resumed = run_cli(*KILLED, "--resume", str(where), "--json")
    assert resumed.code == 0 and json.loads(resumed.out)["coverage"]["states"] == 3_392_733


# --------------------------------------------------------------------------- a checkpoint that cannot be written


def _small_run(*extra: str, limit: int | None = None) -> tuple[int, dict, str]:
    """`ownership check SMALL --json EXTRA` in a process of its own; with `limit`, files past
    `limit` bytes cannot be written (RLIMIT_FSIZE, SIGXFSZ ignored: the write fails with EFBIG,
    a real OSError, as on a full disk)."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = subprocess.run([OWNERSHIP, *SMALL, "--json", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         preexec_fn=small_files if limit is not None else None)
    return run.returncode, json.loads(run.stdout) if run.stdout else {}, run.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_full_disk_keeps_the_coverage_reached_and_the_checkpoint_resumes(tmp_path):
    """Issue 29: a level that cannot be written (here: past the process's file size limit)
    ended with exit 2 and no coverage; now inconclusive (exit 3), with the states reached,
    saying up to which level the checkpoint is complete, and the checkpoint resumes."""
    where = tmp_path / "c"
    code, doc, err = _small_run("--checkpoint", str(where), limit=40_000)
    assert code == 3, (code, doc, err)
    cov = doc["coverage"]
    held = json.loads((where / "checkpoint.json").read_text())["levels"]
    assert doc["verdict"] == "inconclusive" and cov["stopped_by"] == "checkpoint-failed" and not cov["complete"]
    assert 2 <= held < 21 and cov["bound_depth"] == held - 1 and cov["states"] >= held
    assert f"level-{held}.npz" in doc["note"] and f"complete up to level {held - 1}" in doc["note"]
    code, doc, err = _small_run("--resume", str(where))
    assert code == 0, err
    cov = doc["coverage"]
    assert (doc["verdict"], cov["states"], cov["transitions"], cov["depth"]) == ("verified", 65_732, 132_330, 21)


def test_checkpoint_json_that_cannot_be_written_stops_the_search_with_its_coverage(tmp_path, monkeypatch):
    """The disk fills while checkpoint.json is written: the previous one stays, whole."""
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    writes, metas = ckpt.whole_file, []

    def full_at_level_5(target: Path):
        """The 6th checkpoint.json (levels 0..5) meets a full disk."""
        if target.name == "checkpoint.json":
            metas.append(target)
            if len(metas) == 6:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return writes(target)

    monkeypatch.setattr(ckpt, "whole_file", full_at_level_5)
    where = tmp_path / "c"
    got = partitioned.check(model, recipe=recipe, checkpoint=str(where))
    monkeypatch.undo()
    cov = got.coverage
    assert got.verdict is Verdict.INCONCLUSIVE and cov.stopped_by == "checkpoint-failed" and cov.bound_depth == 4
    assert "checkpoint.json: No space left on device" in got.note and "complete up to level 4" in got.note
    assert json.loads((where / "checkpoint.json").read_text())["levels"] == 5
    resumed = partitioned.check(model, recipe=recipe, resume=str(where))
    assert (resumed.verdict, resumed.coverage.states, resumed.coverage.transitions) == (
        Verdict.VERIFIED, 65_732, 132_330)


# --------------------------------------------------------------------------- on Ray: the workers read the checkpoint


def _on_ray(ray, model, recipe, **kw):
    return partitioned.check(model, recipe=recipe, ray=ray, parts=2, **kw)


@pytest.mark.parametrize("how", ["zeroed-words", "random-words-resigned", "truncated"])
def test_a_damaged_checkpoint_read_by_ray_workers_is_refused(ray_cluster, tmp_path, how):
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    where = tmp_path / "c"
    assert _on_ray(ray_cluster, model, recipe, checkpoint=str(where), max_depth=10).verdict is Verdict.BOUNDED
    level = where / "part-1" / "level-10.npz"
    if how == "truncated":
        level.write_bytes(level.read_bytes()[:1000])
    else:
        _damage_words(level, how.removesuffix("-resigned"))
    if how.endswith("-resigned"):
        _resign(where)
    with pytest.raises(UsageError, match=f"{level} is damaged"):
        _on_ray(ray_cluster, model, recipe, resume=str(where))


def test_a_level_a_ray_worker_cannot_write_stops_the_search_with_its_coverage(ray_cluster, tmp_path):
    """A folder where a worker's level file goes: its write fails (IsADirectoryError)."""
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    where = tmp_path / "c"
    (where / "part-1" / "level-6.npz").mkdir(parents=True)
    got = _on_ray(ray_cluster, model, recipe, checkpoint=str(where))
    cov = got.coverage
    assert got.verdict is Verdict.INCONCLUSIVE and cov.stopped_by == "checkpoint-failed" and cov.bound_depth == 5
    assert "part-1/level-6.npz" in got.note and "complete up to level 5" in got.note
    (where / "part-1" / "level-6.npz").rmdir()
    resumed = _on_ray(ray_cluster, model, recipe, resume=str(where))
    assert (resumed.verdict, resumed.coverage.states, resumed.coverage.transitions) == (
        Verdict.VERIFIED, 65_732, 132_330)


def test_zeroed_words_resumed_with_ray_local_are_bad_input_not_a_double_free(ray_cluster, tmp_path):
    """The issue's case through the CLI: `--resume DIR --ray local` of a checkpoint whose last
    level was zeroed; its workers refuse it (exit 2 naming the file)."""
    model, recipe = _recipe("sglang_pd", fixes=["door-retire"], params={"requests": 3})
    where = tmp_path / "c"
    assert _on_ray(ray_cluster, model, recipe, checkpoint=str(where), max_depth=10).verdict is Verdict.BOUNDED
    level = where / "part-0" / "level-10.npz"
    _damage_words(level, "zeroed-words")
    run = subprocess.run([OWNERSHIP, *SMALL, "--ray", "local", "--workers", "2", "--resume", str(where)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, start_new_session=True)
    assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
    assert f"{level} is damaged" in run.stderr and "Traceback" not in run.stderr + run.stdout
