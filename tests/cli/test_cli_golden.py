"""Golden files for the CLI: each tests/golden/cli/*.txt holds a command, its exit code and its
output; the test runs the command and compares, normalised for durations.

To accept new output after a deliberate change: OWNERSHIP_UPDATE_GOLDEN=1 pytest tests/cli/test_cli_golden.py
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden" / "cli"
CASES = sorted(GOLDEN.glob("*.txt"))


def normalise(text: str) -> str:
    """Remove what changes from run to run: durations and rates."""
    text = re.sub(r"in \d+\.\d+ s", "in <T> s", text)
    text = re.sub(r"\d[\d,]* states/s", "<N> states/s", text)
    text = re.sub(r'"seconds": [\d.]+', '"seconds": <T>', text)
    return text


def render(cmd: str) -> str:
    args = shlex.split(cmd)
    assert args[0] == "ownership"
    run = run_cli(*args[1:])
    return f"$ {cmd}\nexit {run.code}\n--- stdout\n{normalise(run.out)}--- stderr\n{normalise(run.err)}"


def test_there_are_golden_cases():
    """The golden suite fails loudly when it has nothing to compare."""
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_cli_output_matches_its_golden_file(case: Path):
    """The command's exit code and output are exactly the recorded ones."""
    expected = case.read_text(encoding="utf-8")
    cmd = expected.splitlines()[0].removeprefix("$ ")
    actual = render(cmd)
    if os.environ.get("OWNERSHIP_UPDATE_GOLDEN"):
        case.write_text(actual, encoding="utf-8")
        return
    assert actual == expected


def write_case(name: str, cmd: str) -> None:
    """Create a golden case (used by hand when adding a command)."""
    (GOLDEN / f"{name}.txt").write_text(render(cmd), encoding="utf-8")
