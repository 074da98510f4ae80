"""README.md keeps exactly two set-up-and-run commands at the top, and .ci/run runs the second."""

from __future__ import annotations

from conftest import ROOT


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
