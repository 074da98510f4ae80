"""Edges of the command line found by an audit: what an outside tester tries.

The rules (docs/cli.md): bad input is one `error:` line and exit 2, never a traceback; exit 1
only ever means "violated"; exit 4 only a bug of ownership; nothing is imported from the
working directory. Each test below pins one edge where a rule did not hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import OWNERSHIP, ROOT, TRACE, one_error_line, run_cli

REPORT_FAILED = "cannot write the report to standard output"


# --------------------------------------------------------------------------- standard output


#: commands whose report is written to a standard output that fails: a violation (which would
#: exit 1), a verified check (0), JSON, a listing, a trace view, and click's own --help/--version
REPORTS = [
    ("check", "sglang_pd"),
    ("check", "sglang_pd", "--json"),
    ("check", "sglang_pd", "--fix", "door-retire"),
    ("list",),
    ("show", TRACE),
    ("--help",),
    ("--version",),
    ("check", "--help"),
]


@pytest.mark.parametrize("command", REPORTS, ids=[" ".join(c[:3]).replace(TRACE, "TRACE") for c in REPORTS])
def test_a_report_written_to_a_full_disk_is_bad_input_not_a_verdict_nor_a_bug(command):
    """`ownership ... > /dev/full` exited 4 ("a bug of ownership"), 1 (a traceback, as if a
    property were violated) or 1 from click; the report that cannot be written is exit 2 and
    one `error:` line on stderr, whatever the command found."""
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        if full.name == os.devnull:
            pytest.skip("no /dev/full on this system")
        run = subprocess.run([OWNERSHIP, *command], stdout=full, stderr=subprocess.PIPE, text=True,
                             timeout=60, cwd=ROOT)
    assert run.returncode == 2, (run.returncode, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {REPORT_FAILED}"), run.stderr


@pytest.mark.parametrize("command", [("check", "sglang_pd", "--json"), ("--help",), ("list", "sglang_pd")],
                         ids=["check --json", "--help", "list"])
def test_a_reader_that_closes_the_pipe_early_never_gets_exit_1(command):
    """`ownership check sglang_pd --json | true` exited 1 through click's broken-pipe handler
    (or 4): the reader did not get the report, and no verdict can be claimed for it: exit 2."""
    with subprocess.Popen([OWNERSHIP, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) as p:
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()  # the reader goes away before the report is written
        err = p.stderr.read().decode()
        code = p.wait(timeout=60)
    assert code == 2, err
    assert "Traceback" not in err and REPORT_FAILED in err


# --------------------------------------------------------------------------- output files


EMPTY_OUT = [
    (("check", "sglang_pd", "--out", ""), "--out"),
    (("replay", TRACE, "--out", ""), "--out"),
    (("monitor", str(ROOT / "examples" / "monitor" / "incident.jsonl"), "--out", ""), "--out"),
    (("show", TRACE, "--html", ""), "--html"),
    (("graph", "sglang_pd", "--dot", ""), "--dot"),
]


@pytest.mark.parametrize("command,option", EMPTY_OUT, ids=[c[0][0] for c in EMPTY_OUT])
def test_an_empty_output_file_name_is_refused_instead_of_writing_nothing(command, option):
    """`--out ''` ran the check and silently wrote no file (show --html '' printed the terminal
    view instead): an empty name is bad input, refused before the run."""
    one_error_line(run_cli(*command), f"{option} ''", "empty file name")


@pytest.mark.parametrize("command,option", [(("show", TRACE, "--html"), "--html"), (("graph", "sglang_pd", "--dot"), "--dot")],
                         ids=["show --html", "graph --dot"])
def test_an_output_file_in_a_missing_folder_is_refused_by_show_and_graph_too(tmp_path, command, option):
    """check, replay and monitor refused --out into a missing folder before the run; graph
    built the whole graph first, and both said only "No such file or directory"."""
    target = tmp_path / "no" / "such" / "file.out"
    one_error_line(run_cli(*command, str(target)), "does not exist", option)
    assert not target.parent.exists()


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize("params", [("decode_pool=100000000000",), ("requests=99999999999999999999999",),
                                    ("context=1000000000000",)])
@pytest.mark.parametrize("command", ["check", "list"])
def test_a_parameter_too_large_to_lay_out_is_refused_at_once(command, params):
    """`--param decode_pool=100000000000` hung in one allocation (past Ctrl-C and
    --max-seconds) until the kernel killed it; `requests=10**23` was "a spec error" of the
    shipped spec. A pool, slot or argument larger than any state could hold is bad input,
    naming the pool or slot and the parameters, before anything of that size is built."""
    args = [a for p in params for a in ("--param", p)]
    start = time.monotonic()
    line = one_error_line(run_cli(command, "sglang_pd", *args), "more than the 134,217,728", params[0])
    assert time.monotonic() - start < 10
    assert "sglang_pd.py" not in line  # not blamed on the spec


def test_a_trace_with_parameters_too_large_is_refused_by_replay(tmp_path):
    """A trace is data from anywhere: its parameters go through the same refusal."""
    doc = json.loads(Path(TRACE).read_text(encoding="utf-8"))
    doc["#meta"]["ownership"]["params"]["decode_pool"] = 10**11
    trace = tmp_path / "huge.itf.json"
    trace.write_text(json.dumps(doc), encoding="utf-8")
    one_error_line(run_cli("replay", str(trace)), "pool decode has 100,000,000,000 pages")


def test_a_large_pool_within_the_limit_still_runs():
    """The limit refuses only what cannot be laid out: the fuzz engine's large pools run."""
    run = run_cli("check", "sglang_pd", "--engine", "fuzz", "--fix", "door-retire", "--runs", "1",
                  "--steps", "3", "--param", "decode_pool=100000")
    assert run.code == 0, run.err


# --------------------------------------------------------------------------- spec files


def test_a_spec_too_deeply_nested_to_compile_is_a_spec_error_not_a_bug(tmp_path):
    """Python's compiler raises RecursionError on `x = 1+1+...+1`: that was "internal error:
    a bug of ownership" (exit 4); it is the spec's, with its file (exit 2)."""
    spec = tmp_path / "deep.py"
    spec.write_text("x = " + "1+" * 100_000 + "1\n", encoding="utf-8")
    for command in ("check", "list"):
        one_error_line(run_cli(command, str(spec)), f"{spec}:", "nested too deeply")


def test_python_m_ownership_imports_nothing_from_the_working_directory(tmp_path):
    """`python -m ownership` puts the working directory first on sys.path: a `packaging.py`
    or `click.py` there was imported (and broke the command). The command drops that entry,
    as the console script never has it."""
    marker = tmp_path / "imported"
    for name in ("packaging", "click", "z3", "networkx"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name} ')\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "ownership", "list", "sglang_pd"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert not marker.exists(), marker.read_text()


# --------------------------------------------------------------------------- options that did nothing


def test_match_without_an_adapter_is_refused():
    """`replay TRACE --match renamed` ignored --match (it compares an implementation's pages,
    which only --adapter drives)."""
    one_error_line(run_cli("replay", TRACE, "--match", "renamed"), "--match renamed", "--adapter")


def test_an_empty_fuzz_profile_is_refused():
    """`--profile ''` ran the default profile and wrote `--profile ''` into the reproduce command."""
    one_error_line(run_cli("check", "sglang_pd", "--engine", "fuzz", "--profile", ""), "--profile ''")


# --------------------------------------------------------------------------- files the user gives


def test_a_checkpoint_nested_too_deeply_to_read_is_bad_input(tmp_path):
    """--resume of a folder whose checkpoint.json is `[[[[...` 100,000 deep exited 4 (a
    RecursionError in json); it is not a checkpoint: exit 2, one line."""
    (tmp_path / "checkpoint.json").write_text("[" * 100_000 + "]" * 100_000)
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--resume", str(tmp_path))
    one_error_line(run, "is not a checkpoint", "without --resume")


def test_an_adapter_whose_constructor_raises_is_bad_input_naming_the_adapter(tmp_path):
    """replay --adapter with an adapter that cannot be made for the spec's parameters (its
    constructor raises KeyError) exited 4, "a bug of ownership"; it is the user's adapter:
    exit 2, naming the adapter, the parameters and the exception."""
    adapter = tmp_path / "broken_adapter.py"
    adapter.write_text("class Broken:\n    def __init__(self, params):\n        self.pages = params['pages']\n")
    run = run_cli("replay", TRACE, "--adapter", f"{adapter}:Broken")
    assert run.code == 2 and "Traceback" not in run.out + run.err, (run.code, run.err)
    error = run.err.strip().splitlines()[-1]  # (after the progress line of the replay)
    assert error.startswith("error: adapter Broken could not be made for spec") and "KeyError: 'pages'" in error


def test_ctrl_c_while_the_command_line_is_parsed_is_not_exit_1(monkeypatch):
    """Ctrl-C while click parses the command line made click say "Aborted!" and exit 1, the
    code of a violation; it is an interruption like any other: exit 3."""
    import click

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Command, "parse_args", interrupted)
    run = run_cli("check", "sglang_pd")
    assert run.code == 3 and run.err.strip() == "interrupted", (run.code, run.err)


# --------------------------------------------------------------------------- duplicated keys


@pytest.mark.parametrize("command", ["show", "replay"])
def test_a_trace_naming_a_key_twice_is_refused_with_the_key(tmp_path, command):
    """json.loads keeps the last of two equal keys: a trace with "decode_pool": 4 then 6 was
    read as 6, silently. Now bad input naming the key."""
    text = Path(TRACE).read_text()
    doc = json.loads(text)
    assert "#meta" in doc
    twice = text.replace('"#meta": {', '"#meta": {"format": "twice", ', 1).replace('"#meta": {', '"#meta": {"format": "ITF", ', 1)
    assert twice.count('"format"') >= 2
    path = tmp_path / "twice.itf.json"
    path.write_text(twice)
    run = run_cli(command, str(path))
    one_error_line(run, '"format" appears twice', str(path))


def test_an_event_naming_a_key_twice_is_refused_with_the_key_and_line(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text('{"event": "alloc", "node": "decode", "request": "r1", "pages": [3]}\n'
                      '{"event": "free", "node": "decode", "request": "r1", "pages": [3], "pages": [4]}\n')
    run = run_cli("monitor", str(events))
    one_error_line(run, f"{events}:2", '"pages" appears twice')


@pytest.mark.parametrize("value", ["\u0663", "\uff18", "--4", "1e3"])
def test_a_parameter_in_other_digits_than_0_to_9_is_refused(value):
    """int() reads other scripts' digits ("\u0663" is 3): a parameter is written in 0-9."""
    run = run_cli("check", "sglang_pd", "--param", f"decode_pool={value}")
    one_error_line(run, "is not an integer", "0-9")
