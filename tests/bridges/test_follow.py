"""`ownership monitor EVENTS --spec SPEC --adapter FILE.py:NAME`: a log followed on a spec.

The kernel checks the log's pages; the spec, run along the log by the adapter's mapping,
checks the protocol: an action the spec does not allow where the log does it is `diverged`,
a spec invariant that fails is that invariant, the log outgrowing the spec's requests is
inconclusive (never a pass), and any fault of the adapter is bad input at its line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, run_cli, spec_path

from ownership import schemas
from ownership.api import model_for
from ownership.bridges import follow
from ownership.bridges.monitor import parse_event
from ownership.trace import read_itf

EXAMPLE = "examples/monitor/sglang_pd_events.py:to_actions"
COUNTER = spec_path("counter.py")

#: alloc is the request starting, free its finishing (tests/specs/counter.py)
COUNTER_ADAPTER = '''
def to_actions(event):
    if event.kind == "alloc":
        return [("start", {"r": event.request})]
    if event.kind == "free":
        return [("finish", {"r": event.request})]
    return None
'''


def _log(tmp_path: Path, events: list[dict], name: str = "events.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def _adapter(tmp_path: Path, source: str, name: str = "to_actions", file: str = "adapter.py") -> str:
    (tmp_path / file).write_text(source)
    return f"{tmp_path / file}:{name}"


def E(kind: str, request: str, pages: list[int] | None = None, node: str = "decode", **extra) -> dict:
    doc = {"event": kind, "node": node, "request": request, **extra}
    if pages is not None:
        doc["pages"] = pages
    return doc


def _valid(out: str) -> dict:
    doc = json.loads(out)
    validator = jsonschema.Draft202012Validator(schemas.load("monitor"), registry=schemas.registry())
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])
    return doc


def test_a_served_request_follows_the_pd_spec_of_every_release():
    """The example log of one request served in full: the kernel and the spec agree, and
    the verdict says how far the spec followed."""
    for release in ([], ["--release", "0.5.19"], ["--release", "0.5.23"]):
        r = run_cli("monitor", "examples/monitor/served.jsonl", "--spec", "sglang_pd", *release, "--adapter", EXAMPLE)
        assert r.code == 0, r.out + r.err
        assert "verified: every property holds over all 10 events" in r.out
        assert "spec SGLangPD followed the log over 7 steps (1 of its 2 requests)" in r.out


def test_the_incident_log_diverges_from_the_fixed_release_at_the_placeholders_forward(tmp_path):
    """0.5.23 retires a prompt prefill rejects at the door: a log where prefill still
    forwards it diverges there (line 2), before the kernel sees the stale read (line 8)."""
    out = tmp_path / "d.json"
    r = run_cli("monitor", "examples/monitor/incident.jsonl", "--spec", "sglang_pd", "--release", "0.5.23",
                "--adapter", EXAMPLE, "--out", str(out))
    assert r.code == 1, r.out + r.err
    assert r.out.startswith("violated: diverged (spec SGLangPD)")
    assert "line 2, alloc(request=req-7, node=prefill, pages=[1]): the log does prefill_forward(r=r1)" in r.out
    assert "(r1 = 'req-7')" in r.out and "p_stage=RETIRED" in r.out
    trace = read_itf(str(out))
    assert trace.violation.property == "diverged"
    assert [s.label() for s in trace.steps[1:]] == ["arrive(r=r1, n=3)", "decode_prealloc(r=r1)"]
    assert trace.spec == "sglang_pd" and trace.version == "0.5.23"
    shown = run_cli("show", str(out), "--no-pager")
    assert "violated: diverged after step 2" in shown.out
    again = run_cli("replay", str(out))
    assert again.code == 2 and "nothing to replay" in again.err
    assert "--release 0.5.23" in again.err  # it says how to check the log again

    doc = _valid(run_cli("monitor", "examples/monitor/incident.jsonl", "--spec", "sglang_pd", "--release",
                         "0.5.23", "--adapter", EXAMPLE, "--json").out)
    assert doc["violation"]["by"] == "spec" and doc["violation"]["line"] == 2
    assert doc["spec"] == {"spec": "SGLangPD", "steps": 2, "requests": {"req-7": "r1"}, "complete": True,
                           "exhausted_at": None}


def test_the_incident_log_on_the_release_that_has_the_bug_is_the_kernels_stale_read():
    """0.5.19 allows the placeholder's handoff: the spec follows it, and the kernel reports
    the stale read at the decode read (line 8); both find it there, the kernel's is shown."""
    r = run_cli("monitor", "examples/monitor/incident.jsonl", "--spec", "sglang_pd", "--release", "0.5.19",
                "--adapter", EXAMPLE, "--json")
    doc = _valid(r.out)
    assert r.code == 1
    assert doc["violation"]["property"] == "stale-read" and doc["violation"]["by"] == "kernel"
    assert doc["violation"]["line"] == 8 and doc["spec"]["steps"] == 5


def test_a_spec_invariant_the_pages_cannot_show_fails_at_its_line_and_the_run_replays(tmp_path):
    """Two requests run at once under limit=1: every page event is fine for the kernel; the
    spec's own invariant fails at line 2, and its run replays on the spec."""
    log = _log(tmp_path, [E("alloc", "a", [1]), E("alloc", "b", [2]), E("free", "a", [1]), E("free", "b", [2])])
    adapter = _adapter(tmp_path, COUNTER_ADAPTER)
    out = tmp_path / "t.json"
    r = run_cli("monitor", log, "--spec", COUNTER, "--param", "limit=1", "--adapter", adapter, "--out", str(out))
    assert r.code == 1, r.out + r.err
    assert r.out.startswith("violated: at-most-limit-running (spec Counter)")
    assert "line 2, alloc(request=b, node=decode, pages=[2]), as start(r=r2) (r2 = 'b')" in r.out
    replayed = run_cli("replay", str(out), "--spec", COUNTER)
    assert replayed.code == 1, replayed.out + replayed.err
    # the same log, with a limit of 2: verified, over the 4 steps it took
    ok = run_cli("monitor", log, "--spec", COUNTER, "--adapter", adapter)
    assert ok.code == 0 and "spec Counter followed the log over 4 steps (2 of its 2 requests)" in ok.out


def test_a_log_with_more_requests_than_the_spec_is_inconclusive_and_the_kernel_reads_on(tmp_path):
    """The spec has 2 requests; the third request of the log stops the spec there (exit 3),
    the kernel checks the rest; with requests=3 the whole log is followed."""
    events = [e for r in "abc" for e in (E("alloc", r, [1]), E("free", r, [1]))]
    events.append(E("free", "c", [1]))  # a double free after the spec stopped: the kernel still sees it
    log = _log(tmp_path, events)
    adapter = _adapter(tmp_path, COUNTER_ADAPTER)
    r = run_cli("monitor", log, "--spec", COUNTER, "--adapter", adapter)
    assert r.code == 1 and "double-free" in r.out and "up to line 4" in r.out
    log = _log(tmp_path, events[:-1])
    r = run_cli("monitor", log, "--spec", COUNTER, "--adapter", adapter)
    assert r.code == 3, r.out + r.err
    assert r.out.startswith("inconclusive: line 5 starts request 'c', one more than the 2 requests of spec Counter")
    assert "followed up to line 4, over 4 steps" in r.out
    assert "the kernel checked all 6 events" in r.out
    doc = _valid(run_cli("monitor", log, "--spec", COUNTER, "--adapter", adapter, "--json").out)
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 3
    assert doc["spec"]["complete"] is False and doc["spec"]["exhausted_at"] == 5
    r = run_cli("monitor", log, "--spec", COUNTER, "--param", "requests=3", "--adapter", adapter)
    assert r.code == 0 and "over 6 steps (3 of its 3 requests)" in r.out


ADAPTER_FAULTS = {
    "raises": ("def to_actions(event):\n    return 1 // 0\n", "ZeroDivisionError"),
    "a string": ("def to_actions(event):\n    return 'start'\n", "returned str"),
    "not pairs": ("def to_actions(event):\n    return [('start',)]\n", "an action is a pair"),
    "unknown action": ("def to_actions(event):\n    return [('begin', {'r': 1})]\n",
                       "'begin' is not an action of spec Counter (its actions: start, finish)"),
    "wrong arguments": ("def to_actions(event):\n    return [('start', {'req': 1})]\n",
                        "action start takes the arguments (r), got (req)"),
    "a request that is not an id": ("def to_actions(event):\n    return [('start', {'r': [1]})]\n",
                                    "a request is the engine's id"),
    "too many": ("def to_actions(event):\n    while True:\n        yield ('start', {'r': 1})\n",
                 "more than 64 actions for one event"),
    "fails midway": ("def to_actions(event):\n    yield ('start', {'r': 1})\n    raise KeyError('x')\n", "KeyError"),
    "not callable": ("to_actions = 3\n", "is not callable"),
    "sys.exit(0)": ("import sys\ndef to_actions(event):\n    sys.exit(0)\n", "SystemExit: 0"),
    "sys.exit(1)": ("import sys\ndef to_actions(event):\n    sys.exit(1)\n", "SystemExit: 1"),
    "sys.exit at import": ("import sys\nsys.exit(0)\ndef to_actions(event):\n    return None\n", "SystemExit: 0"),
    "GeneratorExit": ("def to_actions(event):\n    raise GeneratorExit\n", "GeneratorExit"),
    "BaseException": ("def to_actions(event):\n    raise BaseException('base')\n", "BaseException: base"),
    "a value that cannot be hashed": (
        "class H:\n    def __hash__(self):\n        raise ValueError('no hash')\n"
        "def to_actions(event):\n    return [('start', {'r': H()})]\n", "a request is the engine's id"),
    "an argument name that cannot be shown": (
        "class K:\n    def __hash__(self):\n        return 1\n    def __str__(self):\n        raise RuntimeError('str boom')\n"
        "def to_actions(event):\n    return [('start', {K(): 1})]\n", "str boom"),
    "a class that cannot be made": ("class to_actions:\n    def __init__(self, x):\n        pass\n",
                                    "making an instance of to_actions failed"),
}


@pytest.mark.parametrize("case", sorted(ADAPTER_FAULTS))
def test_a_fault_of_the_adapter_is_one_error_line_with_the_log_line(case, tmp_path):
    source, words = ADAPTER_FAULTS[case]
    log = _log(tmp_path, [E("alloc", "a", [1])])
    r = run_cli("monitor", log, "--spec", COUNTER, "--adapter", _adapter(tmp_path, source))
    assert r.code == 2, r.out + r.err
    assert r.err.startswith("error: ") and words in r.err
    assert "Traceback" not in r.err and r.err.count("\n") == 1
    if "import" not in case and "class" not in case and "callable" not in case:
        assert "at line 1" in r.err  # the log's line


def test_an_argument_outside_its_domain_is_bad_input_naming_the_action(tmp_path):
    source = "def to_actions(event):\n    return [('arrive', {'r': event.request, 'n': 9})]\n"
    log = _log(tmp_path, [E("alloc", "a", [1])])
    r = run_cli("monitor", log, "--spec", "sglang_pd", "--adapter", _adapter(tmp_path, source))
    assert r.code == 2 and "arrive(r='r1', n=9) is not an action of spec SGLangPD" in r.err


def test_a_class_adapter_keeps_its_state_and_reads_the_lines_other_fields(tmp_path):
    """One instance serves the whole log; an event's extra scalar fields reach it."""
    source = '''
class Adapter:
    def __init__(self):
        self.started = set()

    def __call__(self, event):
        if event.get("what") == "start" and event.request not in self.started:
            self.started.add(event.request)
            return [("start", {"r": event.request})]
        if event.get("what") == "finish":
            return [("finish", {"r": event.request})]
        return []
'''
    log = _log(tmp_path, [E("alloc", "a", [1], what="start"), E("write", "a", [1], what="start"),
                          E("free", "a", [1], what="finish")])
    r = run_cli("monitor", log, "--spec", COUNTER, "--adapter", _adapter(tmp_path, source, "Adapter"))
    assert r.code == 0, r.out + r.err
    assert "over 2 steps" in r.out


@pytest.mark.parametrize("args, words", [
    (("--spec", "sglang_pd"), "--spec and --adapter go together"),
    (("--adapter", "x.py:f"), "--spec and --adapter go together"),
    (("--fix", "door-retire"), "--fix, --release and --param set up the spec of --spec"),
    (("--spec", "sglang_pd", "--adapter", "missing.py:f"), "no file missing.py"),
    (("--spec", "sglang_pd", "--adapter", "nocolon"), "give FILE.py:NAME, the event adapter"),
    (("--spec", "sglang_pd", "--adapter", f"{EXAMPLE.split(':')[0]}:nothing"), "defines no nothing"),
    (("--spec", "sglang_pd", "--adapter", EXAMPLE, "--fix", "nope"), "nope"),
])
def test_the_spec_options_are_checked_before_the_log_is_read(args, words):
    r = run_cli("monitor", "examples/monitor/served.jsonl", *args)
    assert r.code == 2, r.out + r.err
    assert words in r.err and "Traceback" not in r.err


def test_the_follower_keeps_a_bounded_run_and_says_where_its_trace_starts(monkeypatch):
    """Memory stays bounded on a long log: the trace of a finding holds the last
    FOLLOW_HISTORY steps, and says the run did not start at the initial state then."""
    monkeypatch.setattr(follow, "FOLLOW_HISTORY", 3)
    model = model_for(COUNTER, params={"requests": 6, "limit": 5})

    def adapter(ev):
        return [("start" if ev.kind == "alloc" else "finish", {"r": ev.request})]

    f = follow.Follower(model, adapter)
    lines = [json.dumps(E("alloc", r, [1])) for r in "abcdef"]
    for i, text in enumerate(lines, start=1):
        found = f.feed(parse_event(text, i, f"log:{i}"))
    assert isinstance(found, follow.SpecFinding) and found.property == "at-most-limit-running"
    assert len(found.trace.steps) == 4 and not f.started_at_initial
    assert found.trace.steps[0].state["stage"]["r1"] == "RUNNING"  # it starts mid-run


def test_the_events_other_fields_are_passed_on_when_they_are_scalars():
    ev = parse_event(json.dumps({"event": "alloc", "node": "d", "request": "a", "pages": [1], "n": 3,
                                 "why": "x", "ok": True, "nested": {"a": 1}, "huge": 10 ** 30}), 1, "log:1")
    assert ev.get("n") == 3 and ev.get("why") == "x" and ev.get("ok") is True
    assert ev.get("nested") is None and ev.get("huge") is None and ev.get("missing", 7) == 7


def test_the_example_adapter_is_documented_where_users_look():
    text = (ROOT / "docs" / "monitor.md").read_text()
    assert EXAMPLE in text and "--spec" in text


def test_what_the_adapter_prints_goes_to_stderr_so_that_json_stays_one_object(tmp_path):
    source = "print('loading')\ndef to_actions(event):\n    print('mapping', event.line)\n    return None\n"
    log = _log(tmp_path, [E("alloc", "a", [1]), E("free", "a", [1])])
    r = run_cli("monitor", log, "--spec", COUNTER, "--adapter", _adapter(tmp_path, source), "--json")
    assert r.code == 0, r.out + r.err
    doc = _valid(r.out)
    assert doc["verdict"] == "verified" and "mapping" not in r.out and "loading" not in r.out
