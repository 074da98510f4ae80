"""No code from the working directory (issue 12, item 1): a bare name is a shipped spec only,
a trace never makes ownership load a file.

Every command runs as the real `ownership` console script, in a folder that holds a hostile
file for every name a command might resolve (each shipped spec as `NAME`, `NAME.py`, `NAME:x`,
`NAME:Class`, `specs/NAME.py`, the package's own names, a folder that a `NAME:../evil.py`
reference would reach). Executed, a hostile file writes a marker file; no command may leave one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from ownership.cli import cli
from ownership.lang.loader import load_spec, shipped_specs

OWNERSHIP = shutil.which("ownership") or str(Path(sys.executable).with_name("ownership"))

HOSTILE = """\
import pathlib
pathlib.Path({marker!r}).write_text("executed")
raise SystemExit(0)
"""


def _plant(folder: Path) -> list[str]:
    """Hostile files for every name; returns the names planted."""
    names = []
    classes = {name: load_spec(name).__name__ for name in shipped_specs()}
    stems = [*classes, "ownership", "hypothesis", "numpy", "click", "z3"]
    for stem in stems:
        for name in (stem, f"{stem}.py", f"{stem}:x", f"{stem}:{classes.get(stem, 'Spec')}"):
            names.append(name)
    (folder / "specs").mkdir()
    (folder / "sglang_pd:..").mkdir()
    for name in names:
        (folder / name).write_text(HOSTILE.format(marker=str(folder / f"MARKER {name}")), encoding="utf-8")
    for stem in classes:
        (folder / "specs" / f"{stem}.py").write_text(HOSTILE.format(marker=str(folder / f"MARKER specs/{stem}")))
    (folder / "sglang_pd:.." / "evil.py").write_text(HOSTILE.format(marker=str(folder / "MARKER evil")))
    (folder / "sitecustomize.py").write_text(HOSTILE.format(marker=str(folder / "MARKER sitecustomize")))
    return names


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    return subprocess.run([OWNERSHIP, *args], cwd=folder, capture_output=True, text=True, timeout=120, env=env)


def _forged(folder: Path, trace: dict, spec: str) -> str:
    doc = json.loads(json.dumps(trace))
    doc["#meta"]["ownership"]["spec"] = spec
    path = folder / f"forged-{len(list(folder.glob('forged-*')))}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path.name


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """The hostile folder, with a trace of the shipped sglang_pd written there by `check --out`."""
    folder = tmp_path_factory.mktemp("hostile")
    _plant(folder)
    made = _run(folder, "check", "sglang_pd", "--out", "t.itf.json")
    assert made.returncode == 1, made.stderr
    return folder


def _trace(folder: Path) -> dict:
    return json.loads((folder / "t.itf.json").read_text(encoding="utf-8"))


def test_no_command_runs_a_file_of_the_working_directory(hostile):
    """Every command that resolves a spec, with shipped names, class names and traces that
    name them, in the hostile folder: each does its job (or refuses a bad reference with exit
    2), none runs a hostile file. (The engines share one loader: ownership.api.model_for.)"""
    trace = _trace(hostile)
    assert trace["#meta"]["ownership"]["spec"] == "sglang_pd"
    incident = ["--context-length", "1048576", "--prefill-pool-tokens", "681280",
                "--decode-pool-tokens", "2097152", "--page-size", "64", "--version", "0.5.19"]
    commands: list[tuple[tuple[str, ...], set[int]]] = [
        (("list",), {0}),
        (("list", "sglang_pd"), {0}),
        (("check", "sglang_pd:x"), {2}),
        (("check", "vllm_nixl_pd", "--max-states", "5"), {0}),
        (("graph", "sglang_pd", "--param", "requests=1"), {0}),
        (("prove", "sglang_pd", "--fix", "door-retire", "--k", "1"), {0, 3}),
        (("config-check", *incident, "--spec", "--max-states", "2000"), {1, 3}),
        (("replay", "t.itf.json"), {1}),
        (("show", "t.itf.json"), {0}),
    ]
    for spec in ("sglang_pd:x", "./sglang_pd", "specs/sglang_pd.py", str(hostile / "sglang_pd")):
        commands.append((("replay", _forged(hostile, trace, spec)), {2}))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda c: _run(hostile, *c[0]), commands))
    for (args, codes), run in zip(commands, runs):
        assert run.returncode in codes, f"ownership {' '.join(args)}: exit {run.returncode}\n{run.stderr}"
        assert "Traceback" not in run.stderr, run.stderr
    markers = sorted(p.name for p in hostile.iterdir() if p.name.startswith("MARKER"))
    assert markers == [], f"a command ran a file of the working directory: {markers}"


def test_a_trace_names_a_shipped_spec_or_nothing(hostile):
    """A trace naming a file, or a shipped spec with a path after the colon, is refused with
    one error line saying how to name the spec (--spec PATH)."""
    run = _run(hostile, "replay", _forged(hostile, _trace(hostile), "sglang_pd:../evil.py"))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--spec PATH" in lines[0]
    assert not list(hostile.glob("MARKER*"))


def test_a_path_typed_by_the_user_is_a_path(tmp_path, monkeypatch):
    """The rule's other half: `./NAME`, `NAME.py` and `NAME.py:Class` typed on the command line
    are files (the user chose them), and a class is picked after the colon; the bare NAME is
    still the shipped spec."""
    spec = ((ROOT / "tests") / "specs" / "counter.py").read_text(encoding="utf-8")
    (tmp_path / "sglang_pd.py").write_text(spec, encoding="utf-8")
    (tmp_path / "sglang_pd").write_text(spec, encoding="utf-8")
    cls = load_spec(str(tmp_path / "sglang_pd.py")).__name__
    monkeypatch.chdir(tmp_path)
    for ref in ("sglang_pd.py", "./sglang_pd", f"sglang_pd.py:{cls}", f"./sglang_pd.py:{cls}"):
        run = CliRunner().invoke(cli, ["list", ref])
        assert run.exit_code == 0 and cls in run.stdout, (ref, run.output)
    run = CliRunner().invoke(cli, ["list", "sglang_pd"])
    assert run.exit_code == 0 and "SGLangPD" in run.stdout and cls not in run.stdout
