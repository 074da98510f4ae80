"""Shared helpers for the tests: paths, running the CLI in-process, loading test specs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ownership.cli import cli

ROOT = Path(__file__).resolve().parent.parent
TEST_SPECS = ROOT / "tests" / "specs"


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
