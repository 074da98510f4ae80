"""`ownership monitor`: a log of page events checked against the kernel's properties online
(ownership/bridges/monitor.py, issue 15 item 1).

Each property is caught by a small log at the right line, and the same log with the bug
fixed passes; a violation's trace shows the pages' story with the engine's own request ids
and page numbers; bad lines are exit 2 naming the file and line; memory does not grow with
the log's length (measured by a ratio); the verdict says how many events it covers."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ownership import schemas
from ownership.bridges.monitor import Monitor, parse_event
from ownership.errors import EventLogError
from ownership.trace import read_itf


def _log(tmp_path: Path, events: list[dict], name: str = "events.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def E(kind: str, request: str, pages: list[int] | None = None, node: str = "decode", **extra) -> dict:
    doc = {"event": kind, "node": node, "request": request, **extra}
    if pages is not None:
        doc["pages"] = pages
    return doc


# (the bug, its log, the property, the line of the violation, the fixed log)
CASES = {
    "stale-read": (
        [E("alloc", "r-1", [4]), E("read", "r-1", [4])], "stale-read", 2,
        [E("alloc", "r-1", [4]), E("write", "r-1", [4]), E("read", "r-1", [4])]),
    "cross-request": (
        [E("alloc", "a", [4]), E("write", "a", [4]), E("free", "a", [4]), E("alloc", "b", [4]), E("read", "b", [4])],
        "stale-read", 5,
        [E("alloc", "a", [4]), E("write", "a", [4]), E("free", "a", [4]), E("alloc", "b", [4]), E("write", "b", [4]),
         E("read", "b", [4])]),
    "read-unowned": (
        [E("alloc", "a", [1]), E("write", "a", [1]), E("free", "a", [1]), E("read", "a", [1])], "read-unowned", 4,
        [E("alloc", "a", [1]), E("write", "a", [1]), E("read", "a", [1]), E("free", "a", [1])]),
    "write-unowned": (
        [E("alloc", "a", [2]), E("free", "a", [2]), E("alloc", "b", [2]), E("write", "a", [2])], "write-unowned", 4,
        [E("alloc", "a", [2]), E("write", "a", [2]), E("free", "a", [2]), E("alloc", "b", [2])]),
    "free-in-flight": (
        [E("alloc", "a", [0], node="prefill"), E("write", "a", [0], node="prefill"), E("alloc", "a", [5]),
         E("send", "a", [0], node="prefill", to="decode", to_pages=[5]), E("free", "a", [5])],
        "free-in-flight", 5,
        [E("alloc", "a", [0], node="prefill"), E("write", "a", [0], node="prefill"), E("alloc", "a", [5]),
         E("send", "a", [0], node="prefill", to="decode", to_pages=[5]), E("land", "a"), E("free", "a", [5])]),
    "double-free": (
        [E("alloc", "a", [3]), E("free", "a", [3]), E("free", "a", [3])], "double-free", 3,
        [E("alloc", "a", [3]), E("free", "a", [3])]),
    "leak": (
        [E("alloc", "a", [6, 7]), E("free", "a", [6]), E("finish", "a")], "leak", 3,
        [E("alloc", "a", [6, 7]), E("free", "a", [6, 7]), E("finish", "a")]),
    "alloc-held": (
        [E("alloc", "a", [8]), E("alloc", "b", [8])], "alloc-held", 2,
        [E("alloc", "a", [8]), E("free", "a", [8]), E("alloc", "b", [8])]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_property_is_caught_at_its_line_and_the_fixed_log_passes(case, tmp_path):
    bad, prop, line, fixed = CASES[case]
    run = run_cli("monitor", _log(tmp_path, bad), "--json")
    doc = json.loads(run.out)
    assert run.code == 1 and doc["verdict"] == "violated"
    assert (doc["violation"]["property"], doc["violation"]["line"]) == (prop, line)
    assert doc["coverage"]["events"] == line  # it stopped there
    ok = run_cli("monitor", _log(tmp_path, fixed, "fixed.jsonl"))
    assert ok.code == 0, ok.out
    assert ok.out.startswith(f"verified: every property holds over all {len(fixed)} events")


def test_a_transfer_landing_into_a_page_given_to_another_request_is_write_unowned(tmp_path):
    """free-in-flight skipped: the landing itself then overwrites b's page (Mooncake/NIXL cannot cancel)."""
    events = [E("alloc", "a", [0], node="prefill"), E("write", "a", [0], node="prefill"), E("alloc", "a", [5]),
              E("send", "a", [0], node="prefill", to="decode", to_pages=[5]), E("free", "a", [5]),
              E("alloc", "b", [5]), E("land", "a")]
    run = run_cli("monitor", _log(tmp_path, events), "--skip", "free-in-flight")
    assert run.code == 1
    assert "violated: write-unowned" in run.out
    assert "line 7, land(request=a, node=decode): request a wrote decode page 5, which it does not hold: the KV of b is overwritten." in run.out


def test_the_trace_of_a_violation_is_the_pages_story_with_the_engines_ids(tmp_path):
    """The injected early free of the incident's class: page 9 freed while req-a still reads it."""
    events = [E("alloc", "req-a", [7, 9]), E("write", "req-a", [7, 9]), E("alloc", "req-b", [3]),
              E("free", "req-a", [9]), E("alloc", "req-b", [9]), E("write", "req-b", [9]),
              E("read", "req-a", [7, 9])]
    out = tmp_path / "t.json"
    run = run_cli("monitor", _log(tmp_path, events), "--out", str(out))
    assert run.code == 1
    assert run.out.splitlines()[:2] == [
        "violated: read-unowned",
        "  line 7, read(request=req-a, node=decode, pages=[7, 9]): request req-a read decode page 9, which it does"
        " not hold (req-b does).",
    ]
    trace = read_itf(str(out))
    assert trace.engine == "monitor" and trace.page_ids == {"decode": [9]}
    # the story of page 9 only: the events of line 3 (page 3) are not in it
    assert [(s.action, s.args.get("line")) for s in trace.steps[1:]] == [
        ("alloc", 1), ("write", 2), ("free", 4), ("alloc", 5), ("write", 6), ("read", 7)]
    assert trace.steps[-1].state["decode.owner"] == ["req-b"]
    assert trace.steps[-1].state["decode.content"] == ["req-b"]
    shown = run_cli("show", str(out), "--no-pager")
    assert shown.code == 0
    assert "req-a frees decode page 9" in shown.out and "req-b takes decode page 9" in shown.out
    assert "decode.owner[page 9]: req-a -> free" in shown.out
    assert "page 0" not in shown.out
    html = run_cli("show", str(out), "--html", str(tmp_path / "t.html"))
    assert html.code == 0 and "req-b" in (tmp_path / "t.html").read_text()


def test_a_story_longer_than_the_history_starts_where_every_page_is_known(tmp_path):
    """Page 1 is touched 40 times before the violation: the trace keeps the last --history
    events of its story, and its first state is the page as it was then."""
    events = [E("alloc", "a", [1])]
    for _ in range(20):
        events += [E("write", "a", [1]), E("read", "a", [1])]
    events += [E("free", "a", [1]), E("read", "a", [1])]
    out = tmp_path / "t.json"
    assert run_cli("monitor", _log(tmp_path, events), "--out", str(out), "--history", "4").code == 1
    trace = read_itf(str(out))
    assert [s.action for s in trace.steps[1:]] == ["write", "read", "free", "read"]
    assert trace.steps[0].state["decode.owner"] == ["a"] and trace.steps[0].state["decode.content"] == ["a"]


def test_json_output_validates_against_its_schema(tmp_path):
    bad, _, _, fixed = CASES["double-free"]
    validator = jsonschema.Draft202012Validator(schemas.load("monitor"), registry=schemas.registry())
    for events, code in ((bad, 1), (fixed, 0)):
        run = run_cli("monitor", _log(tmp_path, events), "--json")
        assert run.code == code
        doc = json.loads(run.out)
        assert not list(validator.iter_errors(doc))
        assert doc["exit_code"] == code and next(iter(doc)) == "schema_version"


BAD_LINES = {
    "not json": "{oops",
    "not an object": "[1, 2]",
    "unknown event": '{"event": "evict", "node": "d", "request": "a", "pages": [1]}',
    "no pages": '{"event": "alloc", "node": "d", "request": "a"}',
    "bool page": '{"event": "alloc", "node": "d", "request": "a", "pages": [true]}',
    "negative page": '{"event": "alloc", "node": "d", "request": "a", "pages": [-1]}',
    "huge page": '{"event": "alloc", "node": "d", "request": "a", "pages": [' + "9" * 5000 + "]}",
    "page twice": '{"event": "alloc", "node": "d", "request": "a", "pages": [1, 1]}',
    "no node": '{"event": "alloc", "request": "a", "pages": [1]}',
    "list request": '{"event": "alloc", "node": "d", "request": ["a"], "pages": [1]}',
    "send without to_pages": '{"event": "send", "node": "p", "request": "a", "pages": [1], "to": "d"}',
    "send lengths": '{"event": "send", "node": "p", "request": "a", "pages": [1], "to": "d", "to_pages": [1, 2]}',
    "nan time": '{"event": "alloc", "node": "d", "request": "a", "pages": [1], "t": NaN}',
    "deep": "[" * 100_000 + "]" * 100_000,
    "escape in name": '{"event": "alloc", "node": "\\u001b]0;pwned\\u0007", "request": "a", "pages": "x"}',
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_line_is_one_error_line_with_its_file_and_line(case, tmp_path):
    path = tmp_path / "log.jsonl"
    good = json.dumps(E("alloc", "a", [0]))
    path.write_text(good + "\n\n" + BAD_LINES[case] + "\n")
    run = run_cli("monitor", str(path))
    assert run.code == 2, run.out
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:3: "), lines
    assert "Traceback" not in run.err and "\x1b" not in run.err


def test_bytes_that_are_not_utf8_and_a_line_over_the_bound_are_refused(tmp_path, monkeypatch):
    import ownership.bridges.monitor as monitor

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"event": "alloc", "node": "\xff", "request": "a", "pages": [0]}\n')
    run = run_cli("monitor", str(path))
    assert run.code == 2 and "not UTF-8" in run.err
    monkeypatch.setattr(monitor, "MAX_LINE_BYTES", 100)
    path.write_text(json.dumps(E("alloc", "a", list(range(100)))) + "\n")
    run = run_cli("monitor", str(path))
    assert run.code == 2 and f"{path}:1: a line over 100 bytes" in run.err


def test_an_empty_log_checks_nothing_and_is_not_a_pass(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    run = run_cli("monitor", str(path))
    assert run.code == 2 and "holds no events: nothing was checked" in run.err
    assert run_cli("monitor", str(tmp_path / "missing.jsonl")).code == 2


def test_standard_input_is_a_log_too():
    """`-` reads a live stream (the real console script, reading a pipe)."""
    bad, _, _, _ = CASES["double-free"]
    text = "".join(json.dumps(e) + "\n" for e in bad)
    run = subprocess.run([sys.executable, "-m", "ownership", "monitor", "-"], input=text, capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 1 and "violated: double-free" in run.stdout
    assert "line 3, free(request=a, node=decode, pages=[3])" in run.stdout


def _clean_log(n: int) -> list:
    """n events of 50 requests cycling over 400 pages, every property holding."""
    events = []
    line = 0
    while len(events) < n:
        for r in range(50):
            pages = (8 * r, 8 * r + 1)
            for kind in ("alloc", "write", "read", "free"):
                line += 1
                events.append(parse_event(json.dumps(E(kind, f"req-{r}", list(pages))), line, "log"))
    return events[:n]


def test_memory_does_not_grow_with_the_length_of_the_log():
    """The same 400 pages and 50 requests over 4,000 and over 40,000 events: the monitor's
    peak memory differs by less than 1.5x (the events themselves are streamed, not kept)."""
    def peak(n: int) -> int:
        events = _clean_log(n)
        tracemalloc.start()
        mon = Monitor()
        assert mon.run(iter(events)) is None and mon.coverage.events == n
        got = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return got

    small, large = peak(4_000), peak(40_000)
    assert large < 1.5 * small, (small, large)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                        st.sampled_from(["event", "node", "request", "pages", "to", "to_pages", "t", "x"]) | st.text(max_size=4),
                        kids, max_size=6), max_leaves=20))
def test_any_json_line_is_an_event_or_an_event_log_error(doc):
    try:
        ev = parse_event(json.dumps(doc), 1, "log:1")
    except EventLogError as e:
        assert str(e).startswith("log:1: ")
        return
    if ev is not None:
        Monitor().feed(ev)  # and the monitor takes any event that parses


def test_a_prefix_cache_shares_pages_by_key_and_a_stale_index_is_a_stale_read(tmp_path):
    """Shared pages (share: a prefix-cache hit) with keyed content: holders may read the
    block by its key; a block evicted and rewritten for another prefix, then shared through a
    stale index and read for the old key, is stale-read (vLLM #4764, docs/bugs.md V9)."""
    ok = [E("alloc", "a", [3]), E("write", "a", [3], key="p1"), E("share", "b", [3]),
          E("read", "b", [3], key="p1"), E("free", "a", [3]), E("read", "b", [3], key="p1"), E("free", "b", [3])]
    run = run_cli("monitor", _log(tmp_path, ok))
    assert run.code == 0, run.out
    stale = [E("alloc", "a", [3]), E("write", "a", [3], key="p1"), E("free", "a", [3]),
             E("alloc", "c", [3]), E("write", "c", [3], key="p2"), E("free", "c", [3]),
             E("share", "d", [3]), E("read", "d", [3], key="p1")]
    run = run_cli("monitor", _log(tmp_path, stale, "stale.jsonl"))
    assert run.code == 1
    assert ("line 8, read(request=d, node=decode, pages=[3], key=p1): request d read decode page 3,"
            " holding KV of key p2, not its own: a cross-request leak.") in run.out


def test_a_write_into_a_shared_page_is_write_unowned_and_a_holder_may_free_its_reference(tmp_path):
    events = [E("alloc", "a", [1]), E("write", "a", [1], key="p1"), E("share", "b", [1]),
              E("free", "a", [1]), E("share", "a", [1]), E("write", "b", [1])]
    run = run_cli("monitor", _log(tmp_path, events), "--json", "--out", str(tmp_path / "t.json"))
    doc = json.loads(run.out)
    assert (doc["violation"]["property"], doc["violation"]["line"]) == ("write-unowned", 6)
    assert sorted(doc["violation"]["requests"]) == ["a", "b"]
    trace = read_itf(str(tmp_path / "t.json"))
    assert trace.steps[-1].state["decode.owner"] == [frozenset({"a", "b"})]
    assert run_cli("show", str(tmp_path / "t.json"), "--no-pager").code == 0


def test_only_a_write_or_a_read_names_a_key(tmp_path):
    run = run_cli("monitor", _log(tmp_path, [E("alloc", "a", [1], key="p1")]))
    assert run.code == 2 and "only a write or a read names a \"key\"" in run.err


def test_a_log_of_ever_new_requests_stops_counting_them_and_says_so(tmp_path, monkeypatch):
    import ownership.bridges.monitor as monitor

    monkeypatch.setattr(monitor, "MAX_COUNTED_REQUESTS", 3)
    events = []
    for r in range(5):
        events += [E("alloc", f"q{r}", [r]), E("free", f"q{r}", [r])]
    run = run_cli("monitor", _log(tmp_path, events))
    assert run.code == 0 and "5 pages, over 3 requests" in run.out
    doc = json.loads(run_cli("monitor", _log(tmp_path, events), "--json").out)
    assert doc["coverage"]["requests"] == 3 and doc["coverage"]["requests_capped"] is True


def test_a_free_that_leaves_another_holder_is_not_a_free_in_flight(tmp_path):
    """NOTE(last-reference), issue 31: a page that another holder keeps is not freed, so
    dropping one reference while a transfer reads it is safe; the last one is free-in-flight."""
    events = [E("alloc", "a", [0]), E("write", "a", [0]), E("share", "b", [0]), E("alloc", "a", [5], node="decode"),
              E("send", "a", [0], to="decode", to_pages=[5]), E("free", "a", [0])]
    ok = run_cli("monitor", _log(tmp_path, events))
    assert ok.code == 0, ok.out
    run = run_cli("monitor", _log(tmp_path, [*events, E("free", "b", [0])], "last.jsonl"), "--json")
    doc = json.loads(run.out)
    assert run.code == 1 and (doc["violation"]["property"], doc["violation"]["line"]) == ("free-in-flight", 7)


def test_the_docs_show_what_the_example_log_gives():
    """docs/monitor.md's example is the output of examples/monitor/incident.jsonl (it showed
    another log's: issue 33)."""
    import re

    page = (ROOT / "docs" / "monitor.md").read_text(encoding="utf-8")
    shown = re.search(r"    \$ ownership monitor examples/monitor/incident.jsonl\n((?:    .+\n)+)", page)
    assert shown is not None
    run = run_cli("monitor", str(ROOT / "examples" / "monitor" / "incident.jsonl"))
    assert run.code == 1
    assert [line[4:] for line in shown.group(1).splitlines()] == run.out.strip().splitlines()
