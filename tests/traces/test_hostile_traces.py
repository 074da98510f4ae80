"""Hostile traces (issue 12, items 2, 3, 7 and 8): a trace file is data from anywhere.

Whatever a trace file holds, reading it gives a well-formed Trace or a TraceFormatError, never
another exception; through the CLI, bad input is exit 2 with exactly one `error:` line and no
traceback, and no output file is left behind; nothing from a trace reaches the terminal raw
(no escape sequence, bidi override or other control character); a trace that does not start
from the spec's initial state, or that has no steps yet claims a violation, is refused by
`replay` instead of passing it as "no longer violates".

The corpus is tests/hostile/traces/ (written by tests/hostile/make_traces.py; a file's name
says what is expected of it); traces too deep or too large to store are generated here. The
Hypothesis tests feed the reader arbitrary JSON, bytes and text, and mutations of the
incident trace (so that the deep parts of the reader, the viewers and replay are reached).
"""

from __future__ import annotations

import copy
import errno
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from hostile.make_traces import EVIL, RAW, TRACES, corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ownership.traces.files
import ownership.traces.itf
from ownership.errors import OwnershipError, TraceFormatError, UsageError
from ownership.render.html import render_html
from ownership.render.mermaid import render_mermaid
from ownership.render.viewer import render_show
from ownership.trace import Trace, from_itf, parse_json, read_itf, replay, write_output

INCIDENT = ROOT / "tests" / "golden" / "cli" / "incident.trace.json"
BAD = sorted(TRACES.glob("bad-*.json"))
REPLAY_ONLY = sorted(TRACES.glob("replay-*.json"))
INJECT = sorted(TRACES.glob("inject-*.json"))
SGR = re.compile(r"\x1b\[[0-9;]*m")
#: How an escape sequence of EVIL shows once escaped, in error lines and views.
ESCAPED = "\\x1b]0;pwned\\x07"
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def fuzz(examples: int) -> settings:
    """Hypothesis settings with a bounded number of examples: CI runs on two cores."""
    return settings(FUZZ, max_examples=examples)


def raw_characters(text: str) -> list[str]:
    """The characters of RAW that `text` holds (our own colour codes removed first)."""
    text = SGR.sub("", text)
    return [c for c in RAW if c in text]


def assert_one_error_line(run: Any, *, what: str) -> None:
    assert run.code == 2, f"{what}: exit {run.code}\n{run.out}\n{run.err}"
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{what}: stderr is\n{run.err}"
    assert "Traceback" not in run.out + run.err and "internal error" not in run.err, what
    assert not raw_characters(run.out + run.err), what


def every_command(trace: Path, out: Path) -> list[list[str]]:
    """The commands that read a trace, their output files (if any) under `out`."""
    t = str(trace)
    return [
        ["replay", t],
        ["replay", t, "--spec", "sglang_pd", "--out", str(out / "replayed.json")],
        ["show", t],
        ["show", t, "--color", "always", "--diff"],
        ["show", t, "--mermaid"],
        ["show", t, "--html", str(out / "page.html")],
    ]


# --------------------------------------------------------------------------- the corpus


def test_the_corpus_is_what_make_traces_writes():
    """tests/hostile/traces/ holds exactly the files make_traces.py writes (regenerate it with
    `python tests/hostile/make_traces.py`), one class of hostile input each."""
    expected = corpus()
    stored = {p.name: p.read_bytes() for p in TRACES.glob("*.json")}
    assert stored == expected
    assert len(BAD) >= 40 and len(REPLAY_ONLY) >= 5 and len(INJECT) >= 6


@pytest.mark.parametrize("trace", BAD, ids=[p.stem for p in BAD])
def test_a_bad_trace_is_one_error_line_for_every_command_and_leaves_no_file(trace, tmp_path):
    """replay, show (plain, colour), --mermaid and --html each exit 2 with one `error:` line,
    no traceback; neither --html nor --out leaves a file (or a temporary one) behind."""
    out = tmp_path / "out"
    out.mkdir()
    for args in every_command(trace, out):
        run = run_cli(*args)
        assert_one_error_line(run, what=" ".join(args))
        assert run.out == ""
        assert list(out.iterdir()) == [], f"{' '.join(args)} left {list(out.iterdir())}"


@pytest.mark.parametrize("nesting", ["[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000,
                                     "[" * 101 + "]" * 101],
                         ids=["list-100000-deep", "object-50000-deep", "list-101-deep"])
def test_a_trace_nested_deeper_than_the_limit_is_one_error_line(nesting, tmp_path):
    """Nesting past the parser's recursion limit, or past MAX_DEPTH (100 levels), is refused
    as too deeply nested, by every command, before anything recurses into it."""
    trace = tmp_path / "deep.json"
    trace.write_text('{"vars": ["x"], "states": [{"x": ' + nesting + "}]}", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    for args in every_command(trace, out):
        run = run_cli(*args)
        assert_one_error_line(run, what=" ".join(args))
        assert "nested more than 100 deep" in run.err
        assert list(out.iterdir()) == []


def test_a_trace_nested_to_the_limit_is_read():
    """100 levels of nesting in all (the document itself counts as one) is still a trace."""
    value: Any = []
    for _ in range(100 - 4):  # the document, states, a state, the variable's list
        value = [value]
    doc = {"vars": ["x"], "states": [{"x": value}]}
    assert isinstance(from_itf(json.loads(json.dumps(doc))), Trace)
    doc["states"][0]["x"] = [value]
    with pytest.raises(TraceFormatError, match="nested more than 100 deep"):
        from_itf(doc)
    integer: Any = {"#bigint": "1"}  # an integer of ITF is a level too
    for _ in range(100 - 4):
        integer = [integer]
    assert isinstance(from_itf({"vars": ["x"], "states": [{"x": integer}]}), Trace)
    with pytest.raises(TraceFormatError, match="nested more than 100 deep"):
        from_itf({"vars": ["x"], "states": [{"x": [integer]}]})


def test_a_trace_file_over_the_size_limit_is_refused_unread(monkeypatch):
    """A file over MAX_TRACE_BYTES (256 MB; 1 KB here) is refused with the limit, by every
    command that reads a trace."""
    monkeypatch.setattr(ownership.traces.itf, "MAX_TRACE_BYTES", 1024)
    for args in (["replay", str(INCIDENT)], ["show", str(INCIDENT)], ["show", str(INCIDENT), "--mermaid"]):
        run = run_cli(*args)
        assert_one_error_line(run, what=" ".join(args))
        assert "a trace file of over 0 MB is not read" in run.err
    assert ownership.traces.itf.MAX_TRACE_BYTES == 1024
    monkeypatch.undo()
    assert ownership.traces.itf.MAX_TRACE_BYTES == 256 * 2**20


def test_the_reader_names_the_field_that_is_wrong():
    """An error says what is wrong and where, as a JSON path into the file."""
    cases = {
        "bad-meta-actors-object": "#meta.ownership.actors: expected a list of actor names (or null),"
                                  " one per state, got an object",
        "bad-meta-params-not-integers": "#meta.ownership.params.requests: expected an integer, got the string '2'",
        "bad-argument-list": "states[1].mbt::nondetPicks.r: an action's argument is an integer, a string,"
                             " a boolean, a set or a tuple; got a list",
        "bad-lone-surrogate": "states[1].x: a string holding a lone surrogate ('\\ud800')",
        "bad-bigint-nan-string": "states[1].x.#bigint: expected an integer written in decimal digits",
        "bad-integer-5000-digits": "an integer of 5,000 digits (at most 1,000 are read)",
        "bad-bigint-infinity": "Infinity is not a JSON value",
        "bad-violation-step-beyond-the-trace": "#meta.ownership.violation.step: 6 is not a state of the trace"
                                               " (it has states 0..0)",
        "bad-map-key-a-list": "states[1].x.#map[0][0]: a map key cannot be a list or a record",
    }
    for name, message in cases.items():
        with pytest.raises(TraceFormatError) as e:
            read_itf(TRACES / f"{name}.json")
        assert str(e.value) == f"{TRACES / name}.json: {message}" or message in str(e.value), (name, str(e.value))


# --------------------------------------------------------------------------- replay


@pytest.mark.parametrize("trace", REPLAY_ONLY, ids=[p.stem for p in REPLAY_ONLY])
def test_a_trace_that_cannot_be_replayed_is_bad_input_for_replay_only(trace, tmp_path):
    """`show` renders the trace (exit 0); `replay` refuses it with one `error:` line (exit 2)
    and writes no --out file; it never says "no longer violates"."""
    out = tmp_path / "replayed.json"
    run = run_cli("replay", str(trace), "--out", str(out))
    assert_one_error_line(run, what=trace.name)
    assert "no longer violates" not in run.out and not out.exists()
    for extra in ([], ["--mermaid"], ["--html", str(tmp_path / "page.html")]):
        assert run_cli("show", str(trace), *extra).code == 0


def test_a_forged_or_cut_trace_is_refused_saying_why():
    """A forged initial state names the variable that differs; a trace cut down to its
    initial state (its violation moved to step 0) has nothing to replay."""
    expected = {
        "replay-forged-initial-state": "does not start from the initial state of spec SGLangPD at requests=2"
                                       " context=3 prefill_pool=2 decode_pool=4: 'decode.content' differs",
        "replay-forged-initial-free-list": "'decode.free_list' differs",
        "replay-cut-to-the-initial-state": "records a violation of 'stale-read' but has no steps after its"
                                           " initial state: nothing to replay",
        "replay-action-the-spec-lacks": "step 3: action 'teleport(r=r1)' is not an action of spec SGLangPD",
    }
    for name, message in expected.items():
        run = run_cli("replay", str(TRACES / f"{name}.json"))
        assert run.code == 2 and message in run.err, (name, run.err)


def test_a_trace_without_steps_that_claims_no_violation_replays():
    """The initial state alone, claiming nothing, is a (trivial) replay: passed, 0 steps."""
    from ownership import model_for

    doc = json.loads(INCIDENT.read_text(encoding="utf-8"))
    doc["states"] = doc["states"][:1]
    meta = doc["#meta"]["ownership"]
    meta["actors"], meta["violation"] = [None], None
    result = replay(from_itf(doc), model_for("sglang_pd"))
    assert (result.outcome, result.steps_run) == ("passed", 0)


def test_the_real_trace_still_replays_as_violated():
    """The guards refuse nothing that ownership writes: the incident trace still violates."""
    run = run_cli("replay", str(INCIDENT))
    assert run.code == 1 and run.out.startswith("still violated"), run.out + run.err


# --------------------------------------------------------------------------- terminal injection


@pytest.mark.parametrize("trace", INJECT, ids=[p.stem for p in INJECT])
def test_no_string_of_a_hostile_trace_reaches_the_terminal_raw(trace, tmp_path):
    """Escape sequences, bidi overrides, zero-width and control characters in any string of
    a trace (actions, arguments, variables, pools, actors, spec, fixes, parameters, the
    violation) are shown escaped by every command, errors included, and rich markup in them
    is shown as text; the HTML page holds none of them raw either."""
    page = tmp_path / "page.html"
    commands = [["replay", str(trace)], ["show", str(trace)], ["show", str(trace), "--color", "always"],
                ["show", str(trace), "--diff"], ["show", str(trace), "--step", "1"],
                ["show", str(trace), "--mermaid"], ["show", str(trace), "--html", str(page)]]
    for args in commands:
        run = run_cli(*args)
        what = " ".join(args)
        assert run.code in (0, 1, 2), what
        assert "Traceback" not in run.out + run.err and "internal error" not in run.err, what
        assert not raw_characters(run.out + run.err), f"{what}: {raw_characters(run.out + run.err)}"
        assert len(run.err.splitlines()) <= 1, what
        refused_for_its_strings = args[0] == "replay" and run.code == 2 and trace.stem != "inject-foreign-trace"
        if refused_for_its_strings or args == ["show", str(trace)]:
            assert ESCAPED in run.out + run.err, what   # shown, escaped
    html = page.read_text(encoding="utf-8")
    assert not raw_characters(html) and "pwned" in html


def test_rich_markup_in_a_trace_is_shown_as_text():
    """A trace's "[bold red]x[/]" is printed as those characters, in plain and colour output."""
    for colour in ([], ["--color", "always"]):
        run = run_cli("show", str(TRACES / "inject-action-name.json"), *colour)
        assert run.code == 0 and "[bold red]x[/] [link=http://example.invalid]y[/link]" in SGR.sub("", run.out)


def test_a_hostile_string_is_one_line_in_every_view():
    """A newline in a trace string cannot forge a line of output: it shows as \\n."""
    run = run_cli("show", str(TRACES / "inject-action-name.json"))
    assert not any(line.startswith("verified") for line in run.out.splitlines())
    assert "\\nverified" in run.out
    mermaid = run_cli("show", str(TRACES / "inject-action-name.json"), "--mermaid").out
    assert all(line.startswith(("sequenceDiagram", "    ")) for line in mermaid.splitlines())


def test_a_hostile_narrative_and_why_reach_neither_the_terminal_nor_the_page_raw(tmp_path):
    """The narrative of each step (`#meta.narrative`) and a belief that the why highlights
    (d_stage[r1], changed by the violating step) are trace data like any other: the terminal
    and the page show them escaped, on one line each."""
    doc = json.loads(INCIDENT.read_text(encoding="utf-8"))
    for state in doc["states"]:
        state.setdefault("#meta", {})["narrative"] = EVIL
    doc["states"][-1]["d_stage"]["#map"][0][1] = EVIL
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(doc), encoding="utf-8")
    page = tmp_path / "page.html"
    for args in (["show", str(trace)], ["show", str(trace), "--color", "always"], ["show", str(trace), "--html", str(page)]):
        run = run_cli(*args)
        assert run.code == 0, " ".join(args)
        assert not raw_characters(run.out + run.err), f"{' '.join(args)}: {raw_characters(run.out + run.err)}"
    text = run_cli("show", str(trace)).out
    assert text.count(ESCAPED) >= 2 and "d_stage[r1] = " in text
    assert not any(line.startswith("verified") for line in text.splitlines())
    html = page.read_text(encoding="utf-8")
    assert not raw_characters(html) and "pwned" in html
    data = json.loads(html.split('id="trace-data">', 1)[1].split("</script>", 1)[0])
    assert ESCAPED in data["steps"][1]["narrative"]
    assert any(ESCAPED in b[0] for b in data["why"]["beliefs"])


# --------------------------------------------------------------------------- output files


def _write_commands(target: str) -> list[list[str]]:
    return [
        ["show", str(INCIDENT), "--html", target],
        ["replay", str(INCIDENT), "--out", target],
        ["check", "sglang_pd", "--out", target],
        ["graph", "sglang_pd", "--param", "requests=1", "--dot", target],
    ]


def test_an_output_file_in_a_missing_folder_is_one_error_line(tmp_path):
    """--html, --out and --dot into a folder that does not exist: exit 2, one `error:` line."""
    for args in _write_commands(str(tmp_path / "no" / "such" / "folder" / "f")):
        run = run_cli(*args)
        assert run.code == 2 and run.err.startswith("error: cannot write the "), " ".join(args) + run.err
        assert len(run.err.splitlines()) == 1 and "Traceback" not in run.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_output_to_a_full_disk_is_one_error_line():
    """Writing to /dev/full (every write fails with ENOSPC): exit 2, one `error:` line."""
    for args in _write_commands("/dev/full"):
        run = run_cli(*args)
        assert run.code == 2 and "No space left on device" in run.err, " ".join(args) + run.err
        assert len(run.err.splitlines()) == 1 and "Traceback" not in run.err


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    """A file is written whole or not at all: when the final rename fails (a full disk, say),
    the previous file is intact and no temporary file is left in the folder."""
    target = tmp_path / "page.html"
    target.write_text("old", encoding="utf-8")

    def full(*_: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ownership.traces.files.os, "replace", full)
    with pytest.raises(UsageError, match="cannot write the HTML page to .*: No space left on device"):
        write_output(target, "new", "HTML page")
    assert target.read_text(encoding="utf-8") == "old" and list(tmp_path.iterdir()) == [target]
    monkeypatch.undo()
    write_output(target, "new", "HTML page")
    assert target.read_text(encoding="utf-8") == "new" and list(tmp_path.iterdir()) == [target]
    assert (target.stat().st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- Hypothesis

#: Text of every kind: surrogates (json.dumps writes them as \ud800), controls, bidi.
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12) | st.sampled_from(
    [EVIL, "\ud800", "#bigint", "#set", "#map", "#tup", "mbt::actionTaken", "init", "r1", "free", "none"])
json_scalars = st.none() | st.booleans() | st.integers() | st.integers(-(10**1100), 10**1100) | \
    st.floats(allow_nan=True, allow_infinity=True) | any_text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4)
    | st.builds(lambda k, v: {k: v}, st.sampled_from(["#bigint", "#set", "#tup", "#map", "#unserializable"]), inner),
    max_leaves=16,
)


def read_text_or_refuse(text: str) -> Trace | None:
    """The reader's answer for a JSON text: a Trace, or None for a TraceFormatError."""
    try:
        trace = from_itf(parse_json(text, "fuzzed"), "fuzzed")
    except TraceFormatError:
        return None
    assert isinstance(trace, Trace) and trace.steps
    return trace


@fuzz(200)
@given(json_values)
def test_any_json_document_is_a_trace_or_a_trace_format_error(doc):
    """Arbitrary JSON (NaN, Infinity, huge integers, lone surrogates included), as text and as
    a Python value, reads as a Trace or raises TraceFormatError, nothing else."""
    read_text_or_refuse(json.dumps(doc, allow_nan=True))
    try:
        from_itf(doc)
    except TraceFormatError:
        pass


itf_states = st.lists(st.dictionaries(any_text | st.sampled_from(["x", "mbt::actionTaken", "mbt::nondetPicks"]),
                                      json_values, max_size=4) | json_values, min_size=0, max_size=3)
itf_documents = st.fixed_dictionaries({
    "vars": st.lists(st.sampled_from(["x", "y", "mbt::actionTaken"]) | any_text, max_size=3) | json_values,
    "states": itf_states,
}, optional={"#meta": st.fixed_dictionaries({}, optional={"ownership": st.dictionaries(
    st.sampled_from(["spec", "params", "fixes", "actors", "violation", "release", "properties", "version"]),
    json_values, max_size=5) | json_values}) | json_values})


@fuzz(150)
@given(itf_documents)
def test_any_itf_shaped_document_is_a_trace_or_a_trace_format_error(doc):
    """Documents with the keys of a trace (vars, states, #meta.ownership) and arbitrary
    values under them reach the reader's checks of states and annotations: a Trace or a
    TraceFormatError, nothing else."""
    read_text_or_refuse(json.dumps(doc, allow_nan=True))


@fuzz(150)
@given(st.binary(max_size=64) | st.text(max_size=64).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_file_content_is_a_trace_or_a_trace_format_error(content):
    """Any bytes in a trace file (not UTF-8, not JSON, empty) read as a Trace or raise
    TraceFormatError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.json"
        path.write_bytes(content)
        try:
            read_itf(path)
        except TraceFormatError:
            pass


_INCIDENT_DOC = json.loads(INCIDENT.read_text(encoding="utf-8"))


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """The path of every value inside the document, containers included."""
    out = [path]
    if isinstance(value, dict):
        for k, x in value.items():
            out += _paths(x, (*path, k))
    elif isinstance(value, list):
        for i, x in enumerate(value):
            out += _paths(x, (*path, i))
    return out


_INCIDENT_PATHS = _paths(_INCIDENT_DOC)[1:]


@st.composite
def mutated_incident(draw) -> dict[str, Any]:
    """The incident trace with one to three of its values replaced, deleted, duplicated or
    wrapped, anywhere: in states, arguments and #meta alike."""
    doc = copy.deepcopy(_INCIDENT_DOC)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_INCIDENT_PATHS))
        parent: Any = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            old = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed it
        how = draw(st.sampled_from(["replace", "replace", "text", "delete", "wrap", "duplicate"]))
        if how == "replace":
            parent[path[-1]] = draw(json_values)
        elif how == "text":
            parent[path[-1]] = draw(any_text)
        elif how == "delete":
            del parent[path[-1]]
        elif how == "wrap":
            parent[path[-1]] = draw(st.sampled_from([[old], {"#set": [old]}, {"#tup": [old]}, {"#bigint": old}]))
        elif isinstance(parent, list):
            parent.insert(path[-1], copy.deepcopy(old))
    return doc


_MODEL: list[Any] = []


def _sglang_pd() -> Any:
    if not _MODEL:
        from ownership import model_for

        _MODEL.append(model_for("sglang_pd"))
    return _MODEL[0]


@fuzz(120)
@given(mutated_incident())
def test_a_mutated_real_trace_is_refused_or_shown_and_replayed_cleanly(doc):
    """A mutation of a real trace reads as a TraceFormatError, or as a Trace that the
    terminal view, the HTML page and the Mermaid diagram render with no raw control
    character, and that replay answers with a result or an OwnershipError (bad input)."""
    trace = read_text_or_refuse(json.dumps(doc, allow_nan=True))
    if trace is None:
        return
    for text in (render_show(trace), render_show(trace, color=True), render_mermaid(trace)):
        assert not raw_characters(text)
    render_html(trace).encode("utf-8")
    try:
        replay(trace, _sglang_pd())
    except OwnershipError:
        pass
