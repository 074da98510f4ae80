"""README.md keeps exactly two set-up-and-run commands at the top, and .ci/run runs the second;
its sample outputs are the real outputs of their commands."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import ROOT, run_cli


def _top_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    top = text.split("\n---\n", 1)[0]
    return [line.strip() for line in top.splitlines() if line.startswith("    ")]


def test_the_readme_has_exactly_two_commands_at_the_top():
    """One checks the shipped incident spec, one runs the tests."""
    commands = _top_commands()
    assert len(commands) == 2
    assert commands[0].endswith("ownership check specs/sglang_pd.py")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run contains the README's test command as one line."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert _top_commands()[1] in [line.strip() for line in ci]


def _samples() -> list[tuple[str, str]]:
    """Each `$ ownership ...` block of the README: (the command, the output shown under it).

    A block is the indented lines after the `$` line, blank lines inside it included."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("    $ ownership "):
            continue
        body = []
        for later in lines[i + 1:]:
            if later.strip() and not later.startswith("    "):
                break
            body.append(later[4:])
        out.append((line[6:], "\n".join(body).strip("\n")))
    return out


def _durations(text: str) -> str:
    return re.sub(r"in \d+\.\d+ s\b", "in <T> s", text)


def test_the_readme_shows_samples_of_the_main_command():
    """The README's promise of what `ownership check` prints is made by real samples: the
    incident's counterexample and a fix's verified pass."""
    commands = [cmd for cmd, _ in _samples()]
    assert "ownership check specs/sglang_pd.py" in commands
    assert "ownership check specs/sglang_pd.py --fix door-retire" in commands


@pytest.mark.parametrize("command,shown", _samples(), ids=[cmd for cmd, _ in _samples()])
def test_each_sample_in_the_readme_is_the_real_output_of_its_command(command, shown):
    """What the README shows under `$ ownership ...` is exactly what the command prints,
    durations aside (`in 0.19 s`)."""
    args = shlex.split(command)
    run = run_cli(*args[1:])
    assert _durations(run.out.rstrip("\n")) == _durations("\n".join(line.rstrip() for line in shown.splitlines()))
