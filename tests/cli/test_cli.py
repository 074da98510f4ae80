"""The CLI beyond its golden output: trace files, exit codes, --strict, and no tracebacks."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run_cli, spec_path

from ownership import read_itf


def test_check_writes_a_trace_that_replay_reads(tmp_path):
    """--out writes ITF JSON; replay of it still violates (exit 1)."""
    out = tmp_path / "incident.itf.json"
    run = run_cli("check", "specs/sglang_pd.py", "--out", str(out))
    assert run.code == 1
    assert f"Trace written to {out}" in run.out
    trace = read_itf(out)
    assert trace.violation.property == "stale-read"
    assert trace.spec == "sglang_pd"
    assert run_cli("replay", str(out)).code == 1
    assert run_cli("replay", str(out), "--fix", "door-retire").code == 0


def test_json_output_has_the_documented_fields(tmp_path):
    """--json prints one object with spec, params, fixes, engine, verdict, coverage, violation, trace."""
    out = tmp_path / "t.json"
    run = run_cli("check", "sglang_pd", "--json", "--out", str(out))
    doc = json.loads(run.out)
    for key in ("spec", "params", "fixes", "engine", "verdict", "coverage", "violation", "trace"):
        assert key in doc
    assert doc["verdict"] == "violated"
    assert doc["violation"]["property"] == "stale-read"
    assert doc["violation"]["step"] == 6
    assert doc["trace"] == str(out)
    assert doc["coverage"]["complete"] is False


def test_a_verified_run_exits_0_and_says_every_reachable_state():
    """The issue's wording: verified, all N reachable states, the parameters."""
    run = run_cli("check", "specs/sglang_pd.py", "--fix", "door-retire")
    assert run.code == 0
    assert "verified: no violation in all 903 reachable states" in run.out
    assert "parameters requests=2 context=3 prefill_pool=2 decode_pool=4" in run.out


def test_strict_turns_a_bounded_pass_into_exit_3():
    """A bounded pass exits 0, or 3 under --strict."""
    args = ("check", "sglang_pd", "--fix", "door-retire", "--max-states", "50")
    assert run_cli(*args).code == 0
    assert run_cli(*args, "--strict").code == 3


def test_strict_fails_a_spec_whose_sometimes_property_is_never_reached():
    """Vacuity is a warning, and a failure under --strict."""
    assert run_cli("check", spec_path("counter.py")).code == 0
    assert run_cli("check", spec_path("counter.py"), "--strict").code == 3


def test_a_time_limit_gives_inconclusive_and_exit_3():
    """--max-seconds stops the search; the verdict is inconclusive, never verified."""
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--param", "requests=3",
                  "--max-seconds", "0.05", "--json")
    doc = json.loads(run.out)
    assert run.code == 3
    assert doc["verdict"] == "inconclusive"
    assert doc["coverage"]["stopped_by"] == "max-seconds"


BAD_INPUT = [
    ("check", "no/such/spec.py"),
    ("check", spec_path("bad/python_if.py")),
    ("check", spec_path("bad/python_and.py")),
    ("check", spec_path("bad/syntax_error.py")),
    ("check", spec_path("bad/unknown_slot.py")),
    ("check", spec_path("bad/no_domain.py")),
    ("check", spec_path("bad/out_of_domain.py")),
    ("check", spec_path("bad/raises.py")),
    ("check", "sglang_pd", "--fix", "nope"),
    ("check", "sglang_pd", "--param", "nope=1"),
    ("check", "sglang_pd", "--param", "decode_pool"),
    ("check", "sglang_pd", "--param", "decode_pool=-1"),
    ("replay", "no/such/trace.json"),
    ("replay", "README.md"),
    ("list", "no_such_spec"),
]


@pytest.mark.parametrize("args", BAD_INPUT, ids=[" ".join(a) for a in BAD_INPUT])
def test_bad_input_exits_2_with_one_clear_message_and_no_traceback(args):
    """Every kind of bad input: exit 2, one `error:` line on stderr (for a spec error raised
    in a state, then the steps that reach it), no traceback."""
    run = run_cli(*args)
    assert run.code == 2
    assert "Traceback" not in run.out + run.err
    assert run.err.startswith("error: ") or "Error:" in run.err
    lines = run.err.strip().split("\n")
    if "Usage:" not in run.err and len(lines) > 1:
        assert lines[1].startswith("reached from the initial state in ")
        assert all(line.startswith("  ") for line in lines[2:]) and len(lines) - 2 == int(lines[1].split()[6])


def test_spec_errors_name_the_file_and_line():
    """A Python `if` on state is reported at the spec's own line."""
    run = run_cli("check", spec_path("bad/python_if.py"))
    assert run.err.startswith("error: tests/specs/bad/python_if.py:11: ")


@pytest.mark.parametrize("bad", [
    "{}",
    '{"states": []}',
    '{"states": [{}], "vars": "x"}',
    '{"vars": ["x"], "states": [{"y": 1}]}',
    '{"vars": ["x"], "states": [{"x": 1.5}]}',
    '{"vars": ["x"], "states": [{"x": {"#bigint": "ten"}}]}',
])
def test_malformed_trace_files_exit_2(tmp_path, bad):
    """A trace that is JSON but not a usable ITF trace is bad input, not a crash."""
    path = tmp_path / "bad.itf.json"
    path.write_text(bad)
    run = run_cli("replay", str(path), "--spec", "sglang_pd")
    assert run.code == 2
    assert run.err.startswith("error: ")


def test_replay_of_a_trace_naming_a_non_shipped_spec_needs_spec(tmp_path):
    """A trace file never chooses which code runs: a path in it is not loaded."""
    out = tmp_path / "t.json"
    run_cli("check", spec_path("leak.py"), "--out", str(out))
    run = run_cli("replay", str(out))
    assert run.code == 2
    assert "--spec" in run.err
    assert run_cli("replay", str(out), "--spec", spec_path("leak.py")).code == 1


def test_the_main_readme_command_runs_from_the_repository_root():
    """README's first command checks the shipped incident spec by path."""
    readme = (ROOT / "README.md").read_text()
    assert "ownership check specs/sglang_pd.py" in readme


def test_the_progress_line_appears_only_after_a_second(capsys):
    """Runs over a second print a progress line on stderr; shorter ones print nothing."""
    from ownership.cli.common import Progress as ProgressLine
    from ownership.progress import Progress

    progress = ProgressLine()
    progress(Progress(0.5, states=10, transitions=20, depth=1))
    assert capsys.readouterr().err == ""
    progress(Progress(2.0, states=5_000, transitions=9_000, depth=7))
    err = capsys.readouterr().err
    assert "5,000 states" in err and "depth 7" in err and "states/s" in err


def test_an_internal_error_exits_4_with_one_line_and_the_traceback_only_under_debug(monkeypatch):
    """A bug of ownership (here: an assertion inside check) is never exit 0 or 1: exit 4, one
    `internal error:` line naming the command to report; `--debug` adds the traceback."""
    from ownership import api

    def broken(*args, **kwargs):
        raise AssertionError("the batch and concrete interpreters disagree")

    monkeypatch.setattr(api, "check", broken)
    run = run_cli("check", "sglang_pd")
    assert run.code == 4
    assert run.err.startswith("internal error: this is a bug of ownership") and run.err.count("\n") == 1
    assert "AssertionError: the batch and concrete interpreters disagree" in run.err
    assert "ownership check sglang_pd" in run.err and "Traceback" not in run.err
    debug = run_cli("--debug", "check", "sglang_pd")
    assert debug.code == 4 and "Traceback" in debug.err


def test_a_trace_cut_short_with_its_violation_step_edited_is_bad_input(tmp_path):
    """A recorded violation that its own spec and fixes do not reproduce is not a counterexample:
    exit 2 (with or without --fix), never "no longer violates" (issue 12, item 7)."""
    import json

    doc = json.loads((ROOT / "tests" / "golden" / "cli" / "incident.trace.json").read_text())
    doc["states"] = doc["states"][:4]
    meta = doc["#meta"]["ownership"]
    meta["violation"]["step"] = 3
    meta["actors"] = meta["actors"][:4]
    cut = tmp_path / "cut.itf.json"
    cut.write_text(json.dumps(doc))
    for extra in ((), ("--fix", "door-retire")):
        run = run_cli("replay", str(cut), *extra)
        assert run.code == 2, run.out + run.err
        assert run.err.startswith("error: the trace does not violate stale-read") and run.err.count("\n") == 1
    whole = run_cli("replay", str(ROOT / "tests" / "golden" / "cli" / "incident.trace.json"), "--fix", "door-retire")
    assert whole.code == 0


def test_each_command_is_a_module_that_imports_only_the_shared_one():
    """ownership/cli/: one module per command; a command imports common.py and nothing else of
    the package (never the group in __init__.py, never another command), and common.py none."""
    import ast
    from pathlib import Path

    import ownership.cli

    folder = Path(ownership.cli.__file__).parent
    commands = {p.stem for p in folder.glob("*.py")} - {"__init__", "common"}
    assert commands == {"check", "replay", "listing", "prove", "show", "graph", "config_check", "monitor", "matrix", "new"}
    assert {c.name for c in ownership.cli.cli.commands.values()} == {
        "check", "replay", "list", "prove", "show", "graph", "config-check", "monitor", "matrix", "new"}
    for path in folder.glob("*.py"):
        if path.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                inside = (node.level == 1) or (node.module or "").startswith("ownership.cli")
                if inside:
                    assert path.stem != "common", (path.name, node.module)
                    assert node.module in ("common", "ownership.cli.common"), (path.name, node.module)


def _complete(line: str, tmp_path=None) -> list[str]:
    """What the shell gets for the last word of `line` (bash's protocol, as click's script asks)."""
    import os
    import subprocess
    import sys

    words = line.split(" ")
    env = {**os.environ, "_OWNERSHIP_COMPLETE": "bash_complete", "COMP_WORDS": line,
           "COMP_CWORD": str(len(words) - 1)}
    out = subprocess.run([sys.executable, "-m", "ownership"], env=env, capture_output=True, text=True,
                         cwd=tmp_path or ROOT, check=True).stdout
    return [item.split(",", 1)[1] for item in out.splitlines()]


def test_the_shell_completes_spec_fix_parameter_property_and_release_names():
    """docs/cli.md, "Shell completion": the names come from the spec typed so far, also while an
    option's value is being completed (where click leaves the spec out of its parsed values)."""
    assert {"sglang_pd", "sglang_disagg"} <= set(_complete("ownership check sg"))
    assert _complete("ownership check sglang_pd --fix d") == ["door-retire"]
    assert _complete("ownership check --engine bmc sglang_pd --fix po") == ["post-forward-retire", "pool-fits-context"]
    assert "decode_pool=" in _complete("ownership prove sglang_pd --param ")
    assert _complete("ownership check sglang_pd --param decode_pool=") == ["decode_pool=4"]
    assert "leak" in _complete("ownership check sglang_pd --skip ")
    assert "0.5.21" in _complete("ownership check sglang_pd --release 0.5")


def test_completing_a_replay_reads_the_trace_as_data_and_loads_no_file(tmp_path):
    """The fixes offered for a trace are those of the shipped spec it names; a spec file of
    that name in the working directory is never run."""
    marker = tmp_path / "ran"
    (tmp_path / "sglang_pd").write_text(f"open({str(marker)!r}, 'w')\n")
    trace = tmp_path / "t.json"
    trace.write_text('{"#meta": {"ownership": {"spec": "sglang_pd"}}, "vars": [], "states": []}')
    assert "door-retire" in _complete(f"ownership replay {trace} --fix ", tmp_path)
    assert not marker.exists()
