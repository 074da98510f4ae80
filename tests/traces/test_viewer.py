"""Tests of the trace viewer (issue 5): terminal view, HTML page, Mermaid, state graph, CLI.

Golden files: tests/golden/viewer/NAME.cmd holds a command line (`ownership show ...`, run
in that folder), NAME.out its expected output (stdout, then stderr and the exit code).
Regenerate them with OWNERSHIP_UPDATE_GOLDEN=1 and read the diff before committing.
The HTML page is opened in a real browser by tests/traces/test_viewer_browser.py.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import shlex

import click
import pytest
from click.testing import CliRunner
from conftest import ROOT

from ownership.api import check, model_for
from ownership.cli.graph import graph
from ownership.cli.show import show
from ownership.engines.graph import reachable_graph, summary, to_dot
from ownership.errors import UsageError
from ownership.render.html import _SCRIPT, _STYLE, _sha256, embed_json, render_html, view_model
from ownership.render.mermaid import LOOK_ALIKES, mermaid_text, render_mermaid
from ownership.render.states import pools_of
from ownership.render.view_model import build_view, effects, messages_of, page_grid
from ownership.render.viewer import render_show, render_view, to_ansi, to_plain
from ownership.render.why import why_of
from ownership.trace import Step, Trace, from_itf, read_itf, to_itf

GOLDEN = (ROOT / "tests") / "golden" / "viewer"
COMMANDS: dict[str, click.Command] = {"show": show, "graph": graph}
CASES = sorted(GOLDEN.glob("*.cmd"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(args: list[str]) -> tuple[str, str, int]:
    """Run `ownership ARGS` through the command objects; (stdout, stderr, exit code)."""
    assert args[0] == "ownership" and args[1] in COMMANDS, f"not an ownership show/graph command: {args}"
    result = CliRunner().invoke(COMMANDS[args[1]], args[2:], prog_name=f"ownership {args[1]}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.stdout, result.stderr, result.exit_code


def _normalise(text: str) -> str:
    text = text.replace(str(GOLDEN), "<DIR>")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _golden_text(stdout: str, stderr: str, code: int) -> str:
    out = _normalise(stdout)
    if stderr:
        out += "--- stderr ---\n" + _normalise(stderr)
    return out + f"--- exit {code} ---\n"


@pytest.fixture
def incident():
    return read_itf(GOLDEN / "incident.json")


@pytest.fixture
def two_requests():
    return read_itf(GOLDEN / "two_requests.json")


# --------------------------------------------------------------------------- golden files


def test_the_golden_folder_has_cases():
    """The golden test is not vacuous: the folder holds the commands it is meant to hold."""
    assert len(CASES) >= 15, f"expected the golden cases in {GOLDEN}, found {len(CASES)}"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_the_output_of_each_golden_command_is_unchanged(case, monkeypatch):
    """Each command's output (stdout, stderr, exit code) equals the committed golden file."""
    monkeypatch.chdir(GOLDEN)
    args = shlex.split(case.read_text(encoding="utf-8"))
    got = _golden_text(*_run(args))
    out = case.with_suffix(".out")
    if os.environ.get("OWNERSHIP_UPDATE_GOLDEN"):
        out.write_text(got, encoding="utf-8")
    assert out.exists(), f"{out.name} is missing; create it with OWNERSHIP_UPDATE_GOLDEN=1"
    assert got == out.read_text(encoding="utf-8"), f"output of `{' '.join(args)}` differs from {out.name}"


def test_every_golden_output_has_its_command():
    """No stale golden output lies around without the command that produces it."""
    stale = [p.name for p in GOLDEN.glob("*.out") if not p.with_suffix(".cmd").exists()]
    assert not stale


# --------------------------------------------------------------------------- the view model


def test_the_page_grid_marks_the_leaked_pages_at_the_violating_step(incident):
    """At the incident's step 6, decode pages 1 and 2 are r1's, hold r0's KV, and are named."""
    grid = page_grid(incident, 6, "decode")
    assert grid.reader == "r1"
    by_page = {c.page: c for c in grid.cells}
    for p in (1, 2):
        assert (by_page[p].owner, by_page[p].content) == ("r1", "r0")
        assert by_page[p].marks == ("mine", "foreign", "violation")
    assert by_page[0].marks == ("mine",)
    assert by_page[3].marks == ("free",)


def test_the_page_grid_marks_transfers_in_flight(incident):
    """At step 4 the write into decode page 0 is in flight and prefill page 0 is being sent."""
    assert "inflight" in page_grid(incident, 4, "decode").cells[0].marks
    assert "outbound" in page_grid(incident, 4, "prefill").cells[0].marks
    assert "inflight" not in page_grid(incident, 5, "decode").cells[0].marks


def test_pages_of_another_request_are_marked_as_such(two_requests):
    """While r1 arrives (step 3), the decode pages r2 holds are marked owned by another request."""
    grid = page_grid(two_requests, 3, "decode")
    assert grid.reader == "r1"
    assert [c.marks[0] for c in grid.cells] == ["other", "other", "free", "free"]


def test_effects_say_what_a_step_did_to_the_pages(incident):
    """Each step's page effects are in the protocol's words."""
    assert effects(incident, 2) == ["r1 takes decode pages 0, 1, 2"]
    assert effects(incident, 5) == ["r1 frees prefill page 0", "r1's KV lands in decode page 0"]
    assert effects(incident, 1) == []


def test_property_status_shows_the_hazard_before_the_violation(incident):
    """stale-read is ok, then a hazard from the reservation on (pages hold r0's KV), then violated."""
    view = build_view(incident)
    stale = [row["stale-read"].status for row in view.status]
    assert stale == ["ok", "ok", "hazard", "hazard", "hazard", "hazard", "violated"]
    assert "decode pages 0, 1, 2 are owned by r1 but hold KV of r0" in view.status[2]["stale-read"].note
    assert all(row["double-free"].status == "ok" for row in view.status)


def test_handoffs_between_actors_become_messages(incident):
    """A message joins consecutive steps of one request taken by different actors."""
    got = [(m.source_step, m.step, m.src, m.dst) for m in messages_of(incident)]
    assert got == [(1, 2, "router", "decode"), (2, 3, "decode", "prefill"),
                   (4, 5, "prefill", "transfer"), (5, 6, "transfer", "decode")]


def test_a_fresh_trace_of_the_explicit_engine_is_shown():
    """The viewer keeps up with the engine: today's shortest counterexample renders, explained."""
    result = check("sglang_pd")
    assert result.trace is not None
    trace = from_itf(json.loads(json.dumps(to_itf(result.trace))))
    text = render_show(trace)
    assert "<-- VIOLATION: stale-read" in text
    assert trace.violation is not None and trace.violation.message in text
    assert "Reproduce: ownership check sglang_pd" in text


def test_plain_output_has_no_escape_codes_and_colour_output_has_the_same_text(incident):
    """Colour only adds escape codes; it never changes the words."""
    lines = render_view(incident, step=6)
    plain, ansi = to_plain(lines), to_ansi(lines)
    assert "\x1b[" not in plain
    assert "\x1b[" in ansi
    assert ANSI.sub("", ansi) == plain


def test_trace_text_is_not_read_as_rich_markup(incident):
    """A value like `[bold]x[/bold]` in a trace shows literally in colour output."""
    incident.steps[1].args["r"] = "[bold]x[/bold]"
    assert "[bold]x[/bold]" in ANSI.sub("", render_show(incident, color=True))


def test_the_show_command_colours_only_when_asked_or_on_a_terminal(monkeypatch):
    """`--color always` colours even into a pipe; the default into a pipe is plain text."""
    monkeypatch.chdir(GOLDEN)
    assert "\x1b[" in _run(["ownership", "show", "incident.json", "--color", "always"])[0]
    assert "\x1b[" not in _run(["ownership", "show", "incident.json"])[0]


# --------------------------------------------------------------------------- HTML (static checks)


def test_embedded_json_cannot_close_its_script_element():
    """`</script>`, `<!--` and `&` never appear raw, and the JSON reads back unchanged."""
    data = {"a": "</script><script>alert(1)</script>", "b": "<!-- & -->", "c": "\u2028\u2029"}
    text = embed_json(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data


def test_the_page_is_self_contained_and_carries_no_trace_markup(tmp_path):
    """The hostile trace's page has our two scripts only, no URL to load, and its data intact."""
    trace = read_itf(GOLDEN / "hostile.json")
    page = render_html(trace)
    assert page.count("<script") == 2
    head, rest = page.split('<script type="application/json" id="trace-data">')
    data, tail = rest.split("</script>", 1)
    markup = head + tail   # everything but the (escaped) trace data
    assert "alert(" not in markup
    targets = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", markup)
    assert all(t.startswith("data:") for t in targets), f"the page names something to load: {targets}"
    assert "@import" not in page and "url(http" not in page
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls   # a namespace name, never fetched
    model = json.loads(data)
    assert model == json.loads(json.dumps(view_model(trace)))
    assert model["steps"][2]["action"] == "<script>alert(1)</script>"


def test_the_page_shows_control_and_bidi_characters_of_a_trace_as_escapes(incident):
    """An escape sequence or a bidi override in a trace reaches the page as visible escapes
    (render.escape.printable), never as characters that would hide or reverse its text."""
    incident.steps[1].args["r"] = "r1\x1b]0;owned\x07\u202eevil"
    page = render_html(incident)
    assert not {"\x1b", "\x07", "\u202e"} & set(page)
    data = json.loads(page.split('id="trace-data">')[1].split("</script>")[0])
    assert data["steps"][1]["label"] == "arrive(r=r1\\x1b]0;owned\\x07\\u202eevil, n=3)"


def test_the_content_security_policy_allows_exactly_the_inline_script_and_style(incident):
    """The CSP forbids every load (default-src 'none') and names the hashes of our code."""
    page = render_html(incident)
    csp = html_lib.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert "default-src 'none'" in csp
    assert f"script-src '{_sha256(_SCRIPT)}'" in csp and f"style-src '{_sha256(_STYLE)}'" in csp
    assert f"<script>{_SCRIPT}</script>" in page and f"<style>{_STYLE}</style>" in page


def test_the_page_opens_at_the_violation_unless_told_otherwise(incident):
    """The page starts at the violating step; --step chooses another; a wrong step is refused."""
    assert view_model(incident)["start"] == 6
    assert view_model(incident, start=2)["start"] == 2
    with pytest.raises(UsageError, match="the trace has steps 0..6"):
        view_model(incident, start=7)


def test_a_foreign_trace_becomes_a_page_of_variables():
    """A trace of another tool has no lanes of ours, no property status, all variables shown."""
    model = view_model(read_itf(GOLDEN / "foreign.json"))
    assert model["foreign"] and model["properties"] == [] and model["violation"] is None
    assert [row[0] for row in model["steps"][0]["beliefs"]] == ["owner", "content", "step_count", "queue", "done"]
    assert model["steps"][1]["label"] == "alloc(r=Some(A))"


def test_the_show_command_writes_one_html_file(tmp_path, monkeypatch):
    """`show --html F` writes the page and says where."""
    monkeypatch.chdir(GOLDEN)
    out = tmp_path / "incident.html"
    stdout, stderr, code = _run(["ownership", "show", "incident.json", "--html", str(out)])
    assert code == 0 and f"HTML page written to {out}" in stdout
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert list(tmp_path.iterdir()) == [out]


# --------------------------------------------------------------------------- Mermaid


def test_mermaid_text_replaces_every_character_mermaid_reads_as_syntax():
    """`;`, `#`, `%`, `<`, `>`, `&`, quotes, newlines, control and bidi characters never reach
    Mermaid (nor the terminal); they show as look-alikes and escapes; the rest stays."""
    raw = "a;b#c%%d<e>f&g\"h\ni`j\\k\x1b\u202e\tl"
    safe = mermaid_text(raw)
    assert not set(LOOK_ALIKES) & set(safe) and not re.search(r"[\x00-\x1f\u202e]", safe)
    assert safe == ("a\uff1bb\uff03c\uff05\uff05d\u2039e\u203af\uff06g\u201dh\uff3cni\u02cbj\uff3ck"
                    "\uff3cx1b\uff3cu202e l")
    plain = "1. arrive(r=r1, n=3): r1 takes decode pages 0, 1, 2 / r1's KV [x] {y} = z!?"
    assert mermaid_text(plain) == plain


def test_a_hostile_trace_gives_a_diagram_without_mermaid_syntax_in_its_text():
    """Markup and separators in a trace's names end up as inert look-alike characters."""
    text = render_mermaid(read_itf(GOLDEN / "hostile.json"))
    for line in text.splitlines()[1:]:
        body = line.split(":", 1)[1] if ":" in line else line
        assert not set(";#%<>&\"`") & set(body), line


def test_the_sequence_diagram_has_one_message_per_step_and_marks_the_violation(incident):
    """Steps become messages between the actors' participants; the violating one is a cross."""
    text = render_mermaid(incident)
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    messages = [ln for ln in lines if re.match(r"    A\d+(->>|-x)A\d+: ", ln)]
    assert len(messages) == len(incident.steps) - 1
    assert messages[-1].startswith("    A2-xA3: 6. decode_commit(r=r1)")


# --------------------------------------------------------------------------- state graph


def test_the_graph_has_as_many_states_as_the_explicit_engine_verifies():
    """With door-retire the graph and the explicit engine agree on the reachable states."""
    result = check("sglang_pd", fixes=["door-retire"])
    sg = reachable_graph(model_for("sglang_pd", fixes=["door-retire"]))
    assert result.verdict.word == "verified"
    assert (sg.states, sg.transitions) == (result.coverage.states, result.coverage.transitions)
    assert sg.trace is None and sg.path == []


def test_the_graph_marks_the_same_shortest_counterexample_as_check():
    """The marked path is the shortest counterexample that `ownership check` prints."""
    model = model_for("sglang_pd", params={"requests": 1})
    sg = reachable_graph(model)
    expected = check("sglang_pd", params={"requests": 1}).trace
    assert sg.trace is not None and expected is not None
    assert [s.label() for s in sg.trace.steps] == [s.label() for s in expected.steps]
    assert sg.trace.violation == expected.violation
    marked = [(x, y) for x, y, d in sg.graph.edges(data=True) if d["path"]]
    assert len(marked) == len(sg.path) - 1 == 6
    assert summary(sg)["violation"] == "stale-read"
    dot = to_dot(sg)
    assert dot.startswith('digraph "SGLangPD" {') and dot.count('color="#c62828", penwidth=2.5') == 6 + 7


def test_a_graph_above_the_limit_is_refused_with_the_way_out():
    """Past --max-nodes the graph is refused, naming the limit and how to shrink it."""
    with pytest.raises(UsageError, match=r"more than 50 states.*--param requests=1.*--max-nodes"):
        reachable_graph(model_for("sglang_pd"), max_nodes=50)


def test_the_graph_command_writes_dot(tmp_path):
    """`graph --dot F` writes a DOT file whose nodes are the reachable states."""
    out = tmp_path / "g.dot"
    stdout, _, code = _run(["ownership", "graph", "sglang_pd", "--param", "requests=1", "--dot", str(out)])
    assert code == 0 and "21 states" in stdout
    assert out.read_text(encoding="utf-8").count(" [label=\"s") == 21


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args", [
    ["show", "missing.json"],
    ["show", "incident.json", "--step", "-1"],
    ["show", "incident.json", "--html", "no/such/dir/x.html"],
    ["graph", "sglang_pd", "--param", "requests"],
    ["graph", "sglang_pd", "--fix", "no-such-fix"],
    ["graph", "sglang_pd", "--max-nodes", "0"],
])
def test_bad_input_is_one_error_line_and_exit_2(args, monkeypatch):
    """Bad input never shows a traceback: one `error: ...` line and exit code 2 (after the
    indented progress lines a slow machine prints once a command has run for a second)."""
    monkeypatch.chdir(GOLDEN)
    stdout, stderr, code = _run(["ownership", *args])
    assert code == 2
    said = [line for line in stderr.splitlines() if not line.startswith("  ")]
    assert said and said[0].startswith("error: ") and "Traceback" not in stderr + stdout


def test_a_file_that_is_not_json_is_refused(tmp_path):
    """A file that is not JSON gives the line and column of the problem."""
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    _, stderr, code = _run(["ownership", "show", str(bad)])
    assert code == 2 and "not JSON (line 1, column 2" in stderr


def test_showing_a_trace_never_runs_the_spec_it_names(tmp_path):
    """A trace naming a spec file does not make `show` import it (a trace is only data)."""
    marker = tmp_path / "ran"
    spec = tmp_path / "evil.py"
    spec.write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    doc = json.loads((GOLDEN / "incident.json").read_text(encoding="utf-8"))
    doc["#meta"]["ownership"]["spec"] = str(spec)
    doc["#meta"]["source"] = str(spec)
    trace_file = tmp_path / "t.json"
    trace_file.write_text(json.dumps(doc), encoding="utf-8")
    for extra in ([], ["--mermaid"], ["--html", str(tmp_path / "t.html")]):
        assert _run(["ownership", "show", str(trace_file), *extra])[2] == 0
    assert not marker.exists()


def test_control_characters_in_a_trace_never_reach_the_terminal(incident):
    """An escape sequence hidden in a trace is shown as \\x1b, in plain and in colour output."""
    incident.steps[1].args["r"] = "r1\x1b]0;owned\x07"
    for colour in (False, True):
        text = ANSI.sub("", render_show(incident, color=colour))
        assert "\x1b]" not in text and "\x07" not in text
        assert "r1\\x1b]0;owned\\x07" in text


def test_the_committed_screenshot_of_the_page_is_small():
    """docs/viewer.png exists and stays under 150 KB (it is regenerated, not hand-edited)."""
    png = ROOT / "docs" / "viewer.png"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000


def _shared_pool_trace() -> Trace:
    """A prefix cache: a shared, keyed pool whose pages several requests hold at once."""
    def state(holders: list[set[str]], content: list[str], inflight: list[str]) -> dict:
        return {"stage": {"r1": "x", "r2": "y"}, "cache.holders": [frozenset(h) for h in holders],
                "cache.content": content, "cache.inflight": inflight, "cache.outbound": ["none"] * 3}
    steps = [
        Step(None, {}, state([set(), set(), set()], ["k0", "k0", "k0"], ["none"] * 3)),
        Step("fill", {"r": "r1"}, state([{"r1"}, set(), set()], ["k1", "k0", "k0"], ["none"] * 3), "prefill"),
        Step("hit", {"r": "r2"}, state([{"r1", "r2"}, {"r2"}, set()], ["k1", "none", "k0"], ["none", "r2", "none"]), "decode"),
        Step("evict", {"r": "r1"}, state([{"r2"}, {"r2"}, set()], ["k1", "none", "k0"], ["none", "r2", "none"]), "decode"),
    ]
    return Trace(steps=steps, spec_class="PrefixCache", engine="explicit")


def test_a_shared_keyed_pool_shows_its_holders_and_leaves_keys_unjudged():
    """Holders of a shared page are joined by +, a key is not taken for a request's KV."""
    trace = _shared_pool_trace()
    assert pools_of(trace) == ["cache"]
    cells = page_grid(trace, 2, "cache").cells
    assert [c.owner for c in cells] == ["r1+r2", "r2", "free"]
    assert cells[0].marks == ("mine",)                        # r2 holds it; k1 is a key, not judged
    assert cells[1].marks == ("mine", "unwritten", "inflight")
    assert effects(trace, 2) == ["r2 shares cache page 0", "r2 takes cache page 1",
                                 "cache page 1 cleared", "r2's KV in flight into cache page 1"]
    assert effects(trace, 3) == ["r1 releases cache page 0 (still held)"]
    text = render_show(trace)
    assert "r1+r2" in text and "cache pages (request in view: r2)" in text
    assert view_model(trace)["steps"][2]["pools"][0]["cells"][0]["owner"] == "r1+r2"
    assert render_mermaid(trace).count("->>") == 3


def test_a_large_pool_shows_only_the_pages_worth_reading(incident):
    """In a pool of thousands of pages, free pages unchanged at the step are counted, not drawn."""
    for step in incident.steps:
        for kind in ("owner", "content", "inflight", "outbound"):
            column = step.state[f"decode.{kind}"]
            step.state[f"decode.{kind}"] = column + [column[-1]] * (4096 - len(column))
        step.state["decode.free_list"] = step.state["decode.free_list"] + list(range(4, 4096))
    grid = page_grid(incident, 6, "decode", compact=True)
    assert [c.page for c in grid.cells] == [0, 1, 2] and grid.hidden == 4093
    assert len(page_grid(incident, 6, "decode").cells) == 4096
    text = render_show(incident, step=6)
    assert "... and 4,093 more pages, free and unchanged at this step" in text
    assert "free list [3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 ...] (4,093 pages)" in text
    assert max(len(line) for line in render_show(incident).splitlines()) < 600


# --------------------------------------------------------------------------- summary first, why, pager (issue 17)


def test_the_summary_and_the_violating_step_come_before_the_steps(incident):
    """The terminal view opens with the violation, its why, the timeline and the violating
    step; every step follows, the violating one pointing back up."""
    text = render_show(incident)
    order = [text.index(marker) for marker in (
        "violated: stale-read at step 6", "Why (step 6, request r1)", "Timeline (6 steps)",
        "The violating step, 6:", "Every step:", "Step 0  initial state")]
    assert order == sorted(order)
    assert text.count("Step 6  [decode] decode_commit(r=r1)") == 2
    assert "decode_commit(r=r1)  <-- VIOLATION: stale-read  (above)" in text


def test_the_why_sets_the_belief_that_differs_against_the_truth(incident):
    """At the incident's violation, sent[r1] = 1 (the pages holding r1's KV) is set against
    prompt[r1] = 3 (the pages r1 owns and decode reads), and the truth names pages 1, 2 as r0's KV."""
    why = why_of(incident)
    assert why is not None and (why.step, why.request) == (6, "r1")
    assert why.truth == ["decode: r1 owns pages 0, 1, 2; its KV is in page 0 only; pages 1, 2 hold KV of r0"]
    highlighted = {b.name: b.reasons for b in why.beliefs if b.reasons}
    assert highlighted["prompt[r1]"] == ["= the 3 decode pages r1 owns"]
    assert highlighted["sent[r1]"] == ["= the 1 decode page holding r1's KV"]
    assert highlighted["d_table[r1]"] == ["holds pages 1, 2 of the violation"]
    assert highlighted["d_stage[r1]"] == ["changed by step 6 (was WAITING)"]
    assert why.differs == "sent[r1] = 1 against prompt[r1] = 3: r1's KV fills 1 of the 3 decode pages it owns"


def test_the_why_is_highlighted_in_colour(incident):
    """In colour the differing beliefs stand out (bold), the others are dimmed."""
    text = render_show(incident, color=True)
    line = next(x for x in text.splitlines() if "differs" in x)
    assert "\x1b[1;31m" in line and "sent[r1] = 1 against prompt[r1] = 3" in ANSI.sub("", line)


def test_a_trace_without_a_violation_has_no_why(incident):
    """No violation, nothing to explain: the view says so and shows the steps in order."""
    incident.violation = None
    assert why_of(incident) is None
    text = render_show(incident)
    assert "no violation recorded in this trace" in text and "Why" not in text
    assert "Every step:" not in text and text.index("Timeline") < text.index("Step 0  initial state")


def test_narratives_written_by_check_show_in_the_timeline_and_the_step_heads(tmp_path, monkeypatch):
    """`check --out` stores each step's narrative in the trace; `show` prints it."""
    from conftest import run_cli

    out = tmp_path / "t.itf.json"
    assert run_cli("check", "sglang_pd", "--out", str(out)).code == 1
    text = _run(["ownership", "show", str(out)])[0]
    assert "1  router    arrive(r=r1, n=3)      prefill rejects 3 pages; its placeholder is 1 page" in text
    assert "Step 2  [decode] decode_prealloc(r=r1)  decode reserves pages {0, 1, 2}" in text


def test_a_hostile_narrative_is_escaped_like_every_text_of_a_trace(tmp_path):
    """A narrative in a trace file is data: its control characters and newlines are shown as escapes."""
    doc = json.loads((GOLDEN / "incident.json").read_text(encoding="utf-8"))
    for st in doc["states"]:
        st["#meta"]["narrative"] = "evil\x1b]0;owned\x07\nforged line"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for colour in ("never", "always"):
        text = ANSI.sub("", _run(["ownership", "show", str(path), "--color", colour])[0])
        assert "\x1b]" not in text and "\x07" not in text
        assert "evil\\x1b]0;owned\\x07\\nforged line" in text
        assert not any(line.startswith("forged line") for line in text.splitlines())


def _tty(monkeypatch, lines: int) -> list[str]:
    """Make `show` believe it writes to a terminal of `lines` lines; return what it paged."""
    import os as os_

    import ownership.cli.show as cli_show

    paged: list[str] = []
    monkeypatch.setattr(cli_show.sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(cli_show.shutil, "get_terminal_size", lambda fallback=None: os_.terminal_size((120, lines)))
    monkeypatch.setattr(cli_show.click, "echo_via_pager", lambda text, color=None: paged.append(text))
    return paged


def test_show_pages_a_view_longer_than_the_terminal(monkeypatch):
    """On a terminal, a view longer than the screen goes through the pager, in colour."""
    import ownership.cli.show as cli_show

    monkeypatch.chdir(GOLDEN)

    def invoke(*args):
        paged = _tty(monkeypatch, 40)
        cli_show.show.main(list(args), standalone_mode=False)
        return paged

    paged = invoke("incident.json")
    assert len(paged) == 1 and "Why (step 6, request r1)" in ANSI.sub("", paged[0])
    assert invoke("incident.json", "--no-pager") == []


def test_the_pager_is_told_to_show_colours_not_print_their_codes(tmp_path):
    """On a real terminal (a pty), `show` pages a long view in colour: the pager must get -R
    in LESS, or `less` prints `ESC[1m` as text (it did: click adds -R only when it is not told
    whether to colour). The pager here records what it was given; the user's own LESS stays."""
    import pty
    import subprocess
    import sys
    import time

    pager = tmp_path / "pager"
    pager.write_text('#!/bin/sh\nprintf "%s" "$LESS" > "$0.less"\ncat > "$0.text"\n')
    pager.chmod(0o755)
    env = {**os.environ, "PAGER": str(pager), "LESS": "-X", "LINES": "20", "COLUMNS": "100", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen([sys.executable, "-m", "ownership", "show", "incident.json"], cwd=GOLDEN, env=env,
                                 stdin=follower, stdout=follower, stderr=follower)
        os.close(follower)
        follower = -1
        deadline = time.monotonic() + 300
        while child.poll() is None and time.monotonic() < deadline:
            try:
                os.read(leader, 65536)  # (keep the pty drained)
            except OSError:
                time.sleep(0.05)
        assert child.wait(timeout=30) == 0
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    given = (tmp_path / "pager.less").read_text()
    assert given.split() == ["-X", "-R"], given
    paged = (tmp_path / "pager.text").read_text()
    assert "\x1b[" in paged and "Why (step 6, request r1)" in ANSI.sub("", paged)


def test_show_does_not_page_a_view_that_fits_the_screen(monkeypatch):
    """A view shorter than the terminal is printed, not paged."""
    import ownership.cli.show as cli_show

    monkeypatch.chdir(GOLDEN)
    paged = _tty(monkeypatch, 10_000)
    cli_show.show.main(["incident.json"], standalone_mode=False)
    assert paged == []


def test_show_never_pages_when_stdout_is_not_a_terminal(monkeypatch):
    """Into a pipe (CliRunner's output is one), the view is printed whole, whatever its length."""
    import ownership.cli.show as cli_show

    paged: list[str] = []
    monkeypatch.setattr(cli_show.click, "echo_via_pager", lambda text, color=None: paged.append(text))
    monkeypatch.chdir(GOLDEN)
    out, _, code = _run(["ownership", "show", "incident.json"])
    assert code == 0 and paged == [] and "Every step:" in out


# --------------------------------------------------------------------------- one story in both viewers (issue 33, item 5)


def _checked(tmp_path, spec: str, *options: str) -> tuple[Trace, list[str | None] | None, str]:
    """The counterexample `ownership check SPEC --out` writes: (trace, its narratives, its file)."""
    from conftest import run_cli

    from ownership.cli.show import narratives

    out = tmp_path / "t.itf.json"
    assert run_cli("check", spec, *options, "--out", str(out)).code == 1
    trace = read_itf(out)
    return trace, narratives(str(out), len(trace.steps)), str(out)


def test_the_page_tells_each_steps_narrative_and_the_terminals_why(tmp_path):
    """The page's data holds each step's narrative (the trace's #meta.narrative, as the terminal
    shows it) and the why of the violation in the terminal's own words, computed once."""
    trace, told, path = _checked(tmp_path, "sglang_pd")
    data = view_model(trace, narrative=told)
    assert data["steps"][2]["narrative"] == "decode reserves pages {0, 1, 2}"
    assert data["steps"][0]["narrative"].startswith("prefill pool: 3 pages (context)")
    assert view_model(trace)["steps"][2]["narrative"] is None   # (none given, none shown)
    why = data["why"]
    assert why["heading"] == "Why (step 6, request r1): the spec's beliefs against the kernel's truth about the pages"
    assert why["truth"] == ["decode: r1 owns pages 0, 1, 2; its KV is in page 0 only; pages 1, 2 hold KV of r0"]
    assert ["sent[r1] = 1", "= the 1 decode page holding r1's KV"] in why["beliefs"]
    assert why["differs"] == "sent[r1] = 1 against prompt[r1] = 3: r1's KV fills 1 of the 3 decode pages it owns"
    terminal = _run(["ownership", "show", path])[0]
    for line in [why["heading"], *why["truth"], why["differs"], data["steps"][2]["narrative"]]:
        assert line in terminal
    page = tmp_path / "p.html"
    assert _run(["ownership", "show", path, "--html", str(page)])[2] == 0
    assert "decode reserves pages {0, 1, 2}" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(("spec", "options", "note"), [
    ("tests/specs/liveness/spin.py:Spin", (), "step 3 is the state of step 1: steps 2..3 repeat forever"),
    ("tests/specs/liveness/stranded.py", ("--fix", "no-timeout"),
     "the run stops at step 2 (no action enabled there, says the trace) and stays there forever"),
])
def test_a_lasso_is_shown_whole_with_its_loop_marked(tmp_path, spec, options, note):
    """A liveness counterexample is a lasso: no step of it is greyed out as "after the
    violation" (each was checked), the violated property stays unmet to the end, and both
    viewers say which steps repeat forever, in the same words."""
    trace, _, path = _checked(tmp_path, str(ROOT / spec), *options)
    assert trace.loop is not None and trace.violation is not None
    v = trace.violation
    data = view_model(trace)
    assert data["loop_note"] == note and data["loop"] == trace.loop
    statuses = [s["status"] for s in data["steps"]]
    assert all(st[0] != "after" for row in statuses for st in row.values())
    assert all(row[v.property][0] == "unmet" for row in statuses[v.step + 1:])
    assert statuses[v.step][v.property][0] == "violated"
    assert f"... {note}" in _run(["ownership", "show", path])[0]


def test_a_finite_counterexample_still_greys_the_steps_after_its_violation(incident):
    """Without a loop, the engine stopped at the violation: a later step is "after" (not checked)."""
    incident.violation.step = 4
    data = view_model(incident)
    assert data["loop_note"] is None and data["loop"] is None
    assert {st[0] for st in data["steps"][5]["status"].values()} == {"after"}


STORE_INVARIANT = '''

    @invariant
    def released_only_once_stored(self, s, r):
        """A test's property, made to fail where the store alone holds the request's page."""
        return (s.stage[r] != RELEASED) | (s.landed[r] == 1)
'''


def test_a_page_held_by_a_cache_is_no_stale_read_hazard(tmp_path):
    """The kernel's stale-read is a read by a request of a page not holding its KV: a counted
    pool's page that only the store job (an owner, not a request) still holds, with r1's KV,
    is no hazard; a page a request holds without its KV is one (ownership/kernel.py `_read`)."""
    source = (ROOT / "tests" / "specs" / "semantics" / "transfer_holds_its_reference.py").read_text(encoding="utf-8")
    spec = tmp_path / "store.py"
    spec.write_text(source.replace("from ownership import ", "from ownership import invariant, ")
                    .replace("\n    def finished(", STORE_INVARIANT + "\n    def finished("), encoding="utf-8")
    trace, _, _ = _checked(tmp_path, str(spec), "--fix", "store-holds-reference")
    i = len(trace.steps) - 1   # compute, start_store (the store shares the page), finish (r1 drops it)
    assert [st.action for st in trace.steps] == [None, "compute", "start_store", "finish"]
    cell = page_grid(trace, i, "gpu").cells[0]
    assert cell.holders == ("store",) and cell.content == "r1"
    assert "foreign" not in cell.marks and "unwritten" not in cell.marks
    note = build_view(trace).status[i]["stale-read"].note
    assert "gpu" not in note   # (the cpu page, r1's and in flight, is unwritten: that hazard stays)
    assert note.startswith("cpu page 0 owned by r1 is never written")
    # the same page, held by a request instead of the store, is the kernel's hazard
    trace.steps[i].state["gpu.holders"] = list(trace.steps[i].state["gpu.holders"])
    trace.steps[i].state["gpu.holders"][0] = frozenset({"r2"})
    assert "foreign" in page_grid(trace, i, "gpu").cells[0].marks
    assert "gpu page 0 is owned by r2 but holds KV of r1" in build_view(trace).status[i]["stale-read"].note
