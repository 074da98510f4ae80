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
from pathlib import Path

import pytest
from conftest import OWNERSHIP, ROOT, TRACE, Run, one_error_line, run_cli

from ownership.api import model_for

#: seconds before a command that should answer at once counts as hung (a generous bound: never a
#: timing figure, only what tells a refusal from a hang on a busy machine)
HANG = 120

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
    # (in a process of its own, so that a regression hangs no longer than HANG seconds; a refusal
    # takes a moment, the allocation it replaces ran until the kernel killed the process)
    try:
        done = subprocess.run([OWNERSHIP, command, "sglang_pd", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ownership {command} sglang_pd {' '.join(args)}` did not end within {HANG} s")
    # (over 18 digits, the option's own rule refuses it first: "a parameter has at most 18 digits
    # (no pool or slot holds more than 134,217,728 values)"; below, the pool or slot it would make)
    line = one_error_line(Run(done.returncode, done.stdout, done.stderr), "more than", "134,217,728", params[0])
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


# --------------------------------------------------------------------------- booleans that are not integers


def _edited_trace(tmp_path, source, edit, name="edited.itf.json"):
    """A copy of the trace `source` with `edit(doc)` applied, as a file."""
    doc = json.loads(Path(source).read_text(encoding="utf-8"))
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_trace_argument_true_where_the_action_takes_an_integer_is_refused(tmp_path):
    """`"n": true` in a step's arguments was read as n=1 (Python's True == 1): the step matched
    arrive(r=r1, n=1) and the replay went on with it. A boolean is not an integer: exit 2,
    naming the argument, the value and what is expected."""
    def edit(doc):
        doc["states"][1]["mbt::nondetPicks"]["n"] = True
    trace = _edited_trace(tmp_path, TRACE, edit)
    one_error_line(run_cli("replay", str(trace)), "step 1: argument n of action arrive is true", "an integer (1..3) is expected")


#: A spec whose actions take an integer, a boolean and a set of pages, and whose invariant
#: fails after one of each: bump(k=1), set_flag(on=True), look(pages=...).
KINDS_SPEC = '''
from ownership import Spec, action, invariant, ints, param, pool, state


class Kinds(Spec):
    requests = param(1, "requests")
    kv = pool(2)

    n = state(ints(0, 2), 0)
    flag = state(bool, False)
    seen = state(ints(0, 1), 0)

    @action
    def bump(self, s, k: ints(1, 2)):
        s.require(s.n == 0)
        s.n = k

    @action
    def set_flag(self, s, on: bool):
        s.require(s.n != 0)
        s.flag = on == 1

    @action
    def look(self, s, pages: kv):
        s.require(s.flag)
        s.seen = 1

    @invariant
    def not_seen(self, s):
        """Nothing is looked at."""
        return s.seen == 0
'''


@pytest.fixture
def kinds_trace(tmp_path):
    """The Kinds spec and its counterexample: bump(k=1), set_flag(on=True), look(pages=...)."""
    spec = tmp_path / "kinds.py"
    spec.write_text(KINDS_SPEC, encoding="utf-8")
    trace = tmp_path / "kinds.itf.json"
    run = run_cli("check", str(spec), "--out", str(trace))
    assert run.code == 1, run.err
    picks = [s["mbt::nondetPicks"] for s in json.loads(trace.read_text(encoding="utf-8"))["states"]]
    assert picks[1:] == [{"k": {"#bigint": "1"}}, {"on": True}, {"pages": {"#set": []}}]
    return spec, trace


@pytest.mark.parametrize("step,name,value,parts", [
    (1, "k", True, ("argument k of action bump is true, a boolean", "an integer (1..2) is expected")),
    (2, "on", {"#bigint": "1"}, ("argument on of action set_flag is the integer 1", "true or false is expected")),
    (2, "on", 1, ("argument on of action set_flag is the integer 1", "true or false is expected")),
    (3, "pages", {"#set": [True]}, ("argument pages of action look is a set holding a boolean",
                                    "a set of page numbers (integers 0..1) is expected")),
], ids=["true for an integer", "1 for a boolean", "a JSON 1 for a boolean", "true in a set of pages"])
def test_a_boolean_and_an_integer_are_never_taken_for_each_other_in_a_trace(tmp_path, kinds_trace, step, name, value, parts):
    """Each argument kind: a boolean where the action takes an integer or pages, and an integer
    where it takes a boolean (1 == True matched the binding on=True): refused, naming both."""
    spec, source = kinds_trace

    def edit(doc):
        doc["states"][step]["mbt::nondetPicks"][name] = value
    trace = _edited_trace(tmp_path, source, edit)
    one_error_line(run_cli("replay", str(trace), "--spec", str(spec)), f"step {step}: ", *parts)


def test_a_binding_is_never_named_by_a_boolean_for_an_integer_or_the_other_way(kinds_trace):
    """Model.binding_of, which replay and `ownership follow` (an adapter's Python values) look
    bindings up with: True == 1 in Python, so bump(k=True) found bump(k=1)."""
    spec, _ = kinds_trace
    model = model_for(str(spec))
    assert model.binding_of("bump", (1,)).label() == "bump(k=1)"
    assert model.binding_of("bump", (True,)) is None
    assert model.binding_of("set_flag", (True,)).label() == "set_flag(on=True)"
    assert model.binding_of("set_flag", (1,)) is None and model.binding_of("set_flag", (0,)) is None


def test_a_step_of_no_binding_with_a_huge_argument_is_named_shortened(tmp_path, kinds_trace):
    """The label of a step that names no binding was printed whole: 900 digits."""
    spec, source = kinds_trace

    def edit(doc):
        doc["states"][1]["mbt::nondetPicks"]["k"] = {"#bigint": "7" * 900}
    trace = _edited_trace(tmp_path, source, edit)
    run = run_cli("replay", str(trace), "--spec", str(spec))
    one_error_line(run, "step 1: action ", "characters, shortened)", "is not an action of spec")
    assert len(run.err) < 400, run.err


def test_an_argument_the_spec_declares_boolean_still_replays(kinds_trace):
    spec, trace = kinds_trace
    run = run_cli("replay", str(trace), "--spec", str(spec))
    assert run.code == 1 and "still violated" in run.out and "differs" not in run.out, (run.code, run.out, run.err)


def test_a_boolean_in_a_state_where_the_spec_has_an_integer_is_not_that_integer(tmp_path, kinds_trace):
    """A free list holding `true` was read as page 1; a later state recording `"n": true`
    where the run has n = 1 was not a difference."""
    def free_list(doc):
        doc["states"][0]["decode.free_list"][1] = True
    trace = _edited_trace(tmp_path, TRACE, free_list)
    one_error_line(run_cli("replay", str(trace)), "decode.free_list", "expected a list of page numbers (integers)")

    spec, source = kinds_trace

    def later(doc):
        doc["states"][1]["n"] = True
    trace = _edited_trace(tmp_path, source, later, "later.itf.json")
    run = run_cli("replay", str(trace), "--spec", str(spec))
    assert run.code == 1 and "the run differs from the recording from step 1 on (n)" in run.out, (run.code, run.out)


# --------------------------------------------------------------------------- a key named twice in a log


CONFIG_DATA = ROOT / "tests" / "data" / "config_check"


@pytest.mark.parametrize("engine,prefill,decode,old,new,key", [
    ("sglang", "sglang-0.5.23-prefill-incident.log", "sglang-0.5.23-decode-incident.log",
     "'page_size': 64", "'page_size': 16, 'page_size': 64", "'page_size'"),
    ("sglang", "sglang-0.5.23-prefill-incident.log", "sglang-0.5.23-decode-incident.log",
     "server_args={'model_path'", "server_args=ServerArgs(page_size=16, page_size=64) {'model_path'", "'page_size'"),
    ("vllm", "vllm-0.33.0-prefill.log", "vllm-0.33.0-decode.log",
     "'block_size': 64", "'block_size': 16, 'block_size': 64", "'block_size'"),
], ids=["sglang dict", "sglang ServerArgs(...)", "vllm non-default args"])
def test_a_log_whose_arguments_name_a_key_twice_is_refused_with_the_key_and_line(tmp_path, engine, prefill, decode,
                                                                                 old, new, key):
    """`server_args={'page_size': 16, 'page_size': 64}` was read as 64, silently (the last one,
    as a Python dict keeps it). A real repr never names a key twice, so neither value can be
    believed: exit 2, naming the file, the line and the key."""
    text = (CONFIG_DATA / decode).read_text(encoding="utf-8")
    assert text.count(old) == 1
    log = tmp_path / decode
    log.write_text(text.replace(old, new), encoding="utf-8")
    no = text[:text.index(old)].count("\n") + 1
    run = run_cli("config-check", "--engine", engine, "--prefill-log", str(CONFIG_DATA / prefill), "--decode-log", str(log))
    one_error_line(run, f"{log}:{no}: in the ", f"the key {key} is named twice")


def test_a_json_dump_of_server_arguments_naming_a_key_twice_is_refused_with_the_key(tmp_path):
    """A JSON dump with `"page_size": 16, ... "page_size": 64` was read as 64 (json.loads keeps
    the last): exit 2, naming the file and the key, as for a log's repr."""
    text = (CONFIG_DATA / "sglang-0.5.23-decode-server-info.json").read_text(encoding="utf-8")
    assert text.count('"page_size": 64') == 1
    dump = tmp_path / "decode.json"
    dump.write_text(text.replace('"page_size": 64', '"page_size": 16, "page_size": 64'), encoding="utf-8")
    run = run_cli("config-check", "--prefill-log", str(CONFIG_DATA / "sglang-0.5.23-prefill-incident.log"),
                  "--decode-args", str(dump))
    one_error_line(run, f"{dump}: ", 'the key "page_size" appears twice in one object')


# --------------------------------------------------------------------------- long values in messages


def test_a_value_cut_short_in_a_message_says_so_and_how_long_it_was():
    """Messages cut long values at a fixed number of characters, mid-word and silently."""
    from ownership.errors import shorten

    assert shorten("12345") == "12345"
    assert shorten("7" * 5000) == "7" * 20 + "...(5,000 digits)"
    words = "a word " * 30
    cut = shorten(words, 40)
    assert cut.endswith(f"... ({len(words):,} characters, shortened)")
    assert cut.split("...")[0] in ("a word " * 6).rstrip()  # (cut after a whole word)


#: An event line; PAGE is replaced by what its one page id is.
ALLOC = '{"event": "alloc", "node": "decode", "request": "r1", "pages": [PAGE]}'


@pytest.mark.parametrize("line,parts", [
    (ALLOC.replace("PAGE", "1" * 5000),
     ("an integer of over 4,300 digits is not read", "a page id is an integer from 0 to 2**48 - 1")),
    (ALLOC.replace("PAGE", "1" * 1000), ("got " + "1" * 20 + "...(1,000 digits)",)),
    (ALLOC.replace("PAGE", json.dumps("word " * 1000)), ('got "word word', "... (5,002 characters, shortened)")),
    (ALLOC.replace("PAGE", "3").replace('"node"', json.dumps("k" * 5000) + ": 1, " + json.dumps("k" * 5000) + ': 2, "node"'),
     ("... (5,002 characters, shortened) appears twice",)),
], ids=["5,000 digits", "1,000 digits", "a long string", "a long key twice"])
def test_a_huge_value_in_an_event_is_named_shortened_with_its_length(tmp_path, line, parts):
    """A page id of 5,000 digits was "not JSON (Exceeds the limit (4300 digits) for integer
    string conversion: value has 5000 di)"; other long values were cut at 60 characters
    without a word. Now the cut says so, and how long the value was."""
    events = tmp_path / "events.jsonl"
    events.write_text(line + "\n", encoding="utf-8")
    text = one_error_line(run_cli("monitor", str(events)), f"{events}:1: ", *parts)
    assert len(text) < 400


def test_a_long_key_named_twice_in_a_trace_is_shortened_with_its_length(tmp_path):
    key = "k" * 5000
    trace = tmp_path / "twice.itf.json"
    trace.write_text(f'{{"{key}": 1, "{key}": 2}}', encoding="utf-8")
    one_error_line(run_cli("show", str(trace)), "(5,002 characters, shortened) appears twice")


# --------------------------------------------------------------------------- config-check names --release


CONFIG_NUMBERS = ("--context-length", "1048576", "--prefill-pool-tokens", "681280", "--decode-pool-tokens", "2097152",
                  "--page-size", "64")


def test_config_check_names_the_release_option_the_user_passes():
    """`--release latest` was refused as "--version 'latest'", the report said the release came
    from "(--version)", and a gap without a release said "pass --version": an option that
    config-check --help does not list (it is the hidden old spelling)."""
    one_error_line(run_cli("config-check", *CONFIG_NUMBERS, "--release", "latest"), "--release 'latest'")
    run = run_cli("config-check", *CONFIG_NUMBERS, "--release", "0.5.19")
    assert run.code == 1 and "engine sglang 0.5.19 (--release)" in run.out, run.out
    run = run_cli("config-check", *CONFIG_NUMBERS)
    assert run.code == 1 and "pass --release" in run.out, run.out
    assert "--version" not in run_cli("config-check", *CONFIG_NUMBERS, "--release", "0.5.19", "--json").out


# --------------------------------------------------------------------------- hints that fit


DIVIDES = '''
from ownership import Spec, action, invariant, ints, param, state


class Divides(Spec):
    requests = param(1, "requests")
    n = state(ints(0, 2), 0)

    @action
    def grow(self, s):
        s.n = {action}

    @invariant
    def ratio(self, s):
        return {invariant}
'''


@pytest.mark.parametrize("engine", ["explicit", "bmc", "fuzz"])
def test_a_property_that_divides_by_zero_is_not_told_to_use_s_require(tmp_path, engine):
    """`s.n // s.n` in an invariant was told "Guard the action with s.require(divisor != 0)":
    a property has no s.require. Its hint guards the division in the property's expression."""
    spec = tmp_path / "divides.py"
    spec.write_text(DIVIDES.format(action="1", invariant="s.n // s.n == 1"), encoding="utf-8")
    line = one_error_line(run_cli("check", str(spec), "--engine", engine), "in invariant ratio: `//` by zero",
                          "Guard the division in the property's own expression")
    assert "s.require(divisor" not in line


def test_an_action_that_divides_by_zero_is_still_told_to_use_s_require(tmp_path):
    spec = tmp_path / "divides.py"
    spec.write_text(DIVIDES.format(action="2 // s.n", invariant="s.n >= 0"), encoding="utf-8")
    one_error_line(run_cli("check", str(spec)), "in action grow(): `//` by zero",
                   "Guard the action with s.require(divisor != 0)")
