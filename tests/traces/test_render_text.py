"""Text rendering: large pools stay readable, and a counterexample is told a line per step
in the protocol's words (the spec's describe hook, else the action's docstring)."""

from __future__ import annotations

import pytest
from conftest import ROOT, run_cli, spec_path

from ownership import check, model_for
from ownership.engines.graph import reachable_graph
from ownership.errors import SpecError
from ownership.lang.loader import load_spec, shipped_specs
from ownership.render.text import Pages, first_sentence, narrate, render_trace, show_value
from ownership.trace import Step, Trace


def test_a_long_list_is_shown_as_runs():
    """Runs of equal values and ascending page numbers are compressed; short lists are not."""
    assert show_value(["r1", "r1"] + ["r0"] * 4094) == "[r1×2 r0×4094]"
    assert show_value(list(range(3, 4096))) == "[3..4095]"
    assert show_value([0, 5, 6] + list(range(10, 30))) == "[0 5 6 10..29]"
    assert show_value([1, 2, 3]) == "[1 2 3]"


def test_many_requests_show_only_those_that_differ():
    """A per-request slot of 64 requests shows the common value and the exceptions."""
    value = {f"r{i}": "NEW" for i in range(1, 65)}
    value["r7"] = "QUEUED"
    assert show_value(value) == "all=NEW except r7=QUEUED"


# --------------------------------------------------------------------------- narratives (issue 17)


INCIDENT = [
    "prefill pool: 3 pages (context), admits up to 2 (prefill_pool); decode pool: 4 pages of old KV (r0)",
    "prefill rejects 3 pages; its placeholder is 1 page",
    "decode reserves pages {0, 1, 2}",
    "prefill computes 1 page",
    "... and sends it into decode page 0",
    '"Success": the KV lands in decode page 0',
    "decode attends over pages 0, 1, 2",
]


def test_the_incident_reads_in_the_protocols_words():
    """sglang_pd's shortest counterexample is told as the incident happened: a rejected
    prompt's 1-page placeholder, 3 reserved pages, 1 sent, "Success", a read of all 3."""
    result = check("sglang_pd")
    assert narrate(result.model, result.trace) == INCIDENT


def test_check_prints_the_narrative_and_the_changes_only_with_full():
    """Without --full a step is one line; with --full its state changes follow it."""
    plain = run_cli("check", "sglang_pd").out
    full = run_cli("check", "sglang_pd", "--full").out
    assert "1  [router] arrive(r=r1, n=3)       prefill rejects 3 pages; its placeholder is 1 page\n2  " in plain
    assert "sent[r1]: 0 -> 1" not in plain and "sent[r1]: 0 -> 1" in full
    assert "6  [decode] decode_commit(r=r1)     decode attends over pages 0, 1, 2  <-- violation" in plain
    assert "prefill rejects 3 pages; its placeholder is 1 page" in full


def test_a_spec_that_tells_nothing_shows_the_changes_of_each_step():
    """A spec with no describe hook and no action docstrings: the changes say what happened."""
    out = run_cli("check", spec_path("counter.py"), "--param", "limit=1").out
    assert "stage[r1]: NEW -> RUNNING" in out


def test_an_action_docstring_gives_the_line_of_a_spec_without_a_hook():
    """The first sentence of the docstring, on one line."""
    assert first_sentence("Prefill computes the prompt. Then it\n sends it.") == "Prefill computes the prompt."
    assert first_sentence("One line\nover two.\n\nMore.") == "One line over two."


def _configs(cls):
    """No fix, each release, each fix alone."""
    yield {}
    for release in cls.releases:
        yield {"version": release}
    for name in cls._fixes:
        yield {"fixes": [name]}


SMALL = {"sglang_pd": {"requests": 1}, "sglang_disagg": {"requests": 1}, "vllm_block_pool": {"requests": 2},
         "vllm_nixl_pd": {"requests": 1}, "vllm_nixl_load_failure": {"requests": 1}}


@pytest.mark.parametrize("name", sorted(shipped_specs()))
def test_every_transition_of_a_shipped_spec_has_a_narrative(name):
    """Each shipped spec tells every step it can take (every edge of its reachable state graph
    at small parameters, under each release and each fix) in one line of its own words."""
    assert name in SMALL, f"give {name} small parameters here"
    cls = load_spec(name)
    for config in _configs(cls):
        model = model_for(name, params=SMALL[name], **config)
        g = reachable_graph(model).graph
        for u, v, data in g.edges(data=True):
            binding = model.bindings[data["binding"]]
            trace = Trace([Step(None, {}, model.show(g.nodes[u]["state"])),
                           Step(binding.action.name, dict(binding.shown), model.show(g.nodes[v]["state"]),
                                binding.action.actor)])
            told = narrate(model, trace)
            assert all(isinstance(x, str) and x and "\n" not in x for x in told), (config, data["label"], told)
            docs = {d.name: d.doc for d in cls._actions.values()}
            assert told[1] != first_sentence(docs[binding.action.name]), (config, data["label"])


def test_a_describe_hook_that_raises_is_a_spec_error_at_its_line(tmp_path):
    """A bug in a narrative is the spec's: exit 2, file and line, never a traceback."""
    text = (ROOT / spec_path("counter.py")).read_text(encoding="utf-8")
    broken = tmp_path / "broken.py"
    broken.write_text(text + "\n    def describe(self, s, step):\n        return 1 // 0\n", encoding="utf-8")
    run = run_cli("check", str(broken), "--param", "limit=1")
    assert run.code == 2 and run.out == ""
    assert run.err.startswith(f"error: {broken}:") and "ZeroDivisionError in describe() at step 0" in run.err
    with pytest.raises(SpecError, match="describe"):
        result = check(str(broken), params={"limit": 1})
        narrate(result.model, result.trace)


def test_pages_read_as_sets_and_as_words():
    """A page set in a narrative: {0, 1, 2}, or 'pages 0, 1, 2', 'page 3', 'no page'."""
    assert str(Pages({2, 0, 1})) == "{0, 1, 2}" and f"{Pages({2, 0, 1})}" == "{0, 1, 2}"
    assert Pages({2, 0, 1}).listed == "pages 0, 1, 2"
    assert Pages({3}).listed == "page 3" and Pages().listed == "no page"


def test_a_narrative_column_lines_up_and_the_violation_ends_its_line():
    """Labels are padded to one column; the marker follows the narrative."""
    result = check("sglang_pd")
    lines = render_trace(result.trace, narrative=narrate(result.model, result.trace), diffs=False).splitlines()
    starts = {line.index(story) for line, story in zip(lines, INCIDENT)}
    assert len(starts) == 1 and lines[-1].endswith("<-- violation")
