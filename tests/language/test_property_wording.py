"""One voice for each property (issue 30, item 3; NOTE(one-voice)): ownership/lang/properties.py
words every built-in property once (when it is violated, its message, the hazard, what it
names), and traces, the monitor, `ownership list` and both viewers only fill it in.

These tests fail when the kernel flags a property that has no words there, when a template
names something NAMES does not explain, or when one of those consumers words a property
itself (a property's name or any of its phrases written in its own code)."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest
from conftest import ROOT, spec_path

import ownership
from ownership import model_for
from ownership.lang import properties
from ownership.lang.properties import MONITOR_ONLY, MONITORED, NAMES, PROPERTIES, Property
from ownership.render.html import view_model
from ownership.trace import read_itf

PACKAGE = Path(ownership.__file__).parent
GOLDEN = (ROOT / "tests") / "golden" / "viewer"

#: The code that flags a property (its first argument): the kernel, its fast concrete path,
#: `s.crash` and the concrete interpreter's leak check.
FLAGGING = ("kernel.py", "interpret/concrete_kernel.py", "lang/state.py", "interpret/concrete.py")
#: The code that shows a property to a user: it must take every word about one from the table.
CONSUMERS = ("trace.py", *(f"traces/{m}.py" for m in ("data", "messages", "json_values", "itf", "files", "replay")),
             "bridges/monitor.py", "cli/monitor.py", "render/text.py", "render/viewer.py",
             "render/view_model.py", "render/why.py", "render/html.py", "render/mermaid.py")

ALL = {**PROPERTIES, **MONITOR_ONLY}


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module's code (f-string pieces too), docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _literals(template: str) -> list[str]:
    """The fixed words of a template, between its fields."""
    return [text for text, _, _, _ in string.Formatter().parse(template) if text]


def _phrases(words: Property) -> list[str]:
    """The phrases that only the table may write: every fixed piece of its templates long
    enough to be words rather than punctuation, its hazard, its note and when it is violated."""
    pieces = [words.when, words.setup]
    for template in (words.message, words.hazard, *words.parts.values()):
        pieces += _literals(template)
    return [p.strip(" .:;,()") for p in pieces if len(p.strip(" .:;,()")) >= 12]


def _flagged(path: Path) -> set[str]:
    """The properties a module flags: the first argument of each `_flag(...)` or `Flag(...)`
    that names one (a string, or a constant's NAME); one passed on in a variable (`prop`,
    an invariant's `inv.name`) is flagged where it was named."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee in ("_flag", "Flag"):
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    out.add(arg.value)
                    continue
                name = arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", "")
                if name.isupper():
                    assert hasattr(properties, name), \
                        f"{path.name}:{node.lineno}: flags {ast.unparse(arg)}, not a name of lang/properties.py"
                    out.add(getattr(properties, name))
    return out


def test_every_property_the_kernel_flags_has_its_words_and_every_entry_is_flagged():
    """The kernel, its concrete fast path, `s.crash` and the leak check flag exactly the
    properties of the table (a new flag without words, or words for no flag, fails)."""
    flagged = set().union(*(_flagged(PACKAGE / f) for f in FLAGGING))
    assert flagged == set(PROPERTIES)


def test_the_monitor_flags_and_lists_exactly_the_table_s_monitored_properties():
    """The monitor's list IS the table's; what it flags is in it, and its own check too."""
    from ownership.bridges import monitor
    from ownership.cli.monitor import monitor as command

    assert monitor.PROPERTIES is MONITORED
    assert _flagged(PACKAGE / "bridges" / "monitor.py") == set(MONITORED)
    skip = next(p for p in command.params if p.name == "skip")
    assert list(skip.type.choices) == list(MONITORED)


@pytest.mark.parametrize("name", list(ALL))
def test_each_property_is_worded_whole_and_names_only_what_names_explains(name):
    """Each entry has its when, message and hazard; its templates use only the fields it
    declares, each explained in NAMES; filled in, a message is one line with no field left."""
    words = ALL[name]
    assert words.name == name and words.when and words.message and words.hazard
    used = set().union(*(_fields(t) for t in (words.message, *words.parts.values())))
    assert used - {"hazard"} <= set(words.names) <= set(NAMES)
    filled = words.say(**{n: f"<{n}>" for n in words.names})
    assert "{" not in filled and "\n" not in filled and filled.endswith(".")


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_no_consumer_words_a_property_itself(consumer):
    """Traces, the monitor, `ownership list` and the viewers hold no property's name or
    phrase of their own: each one they show comes from lang/properties.py."""
    names = set(ALL)
    phrases = {p: n for n, words in ALL.items() for p in _phrases(words)}
    own = []
    for line, text in _strings(PACKAGE / consumer):
        if text in names:
            own.append(f"{consumer}:{line}: the name {text!r}")
        own += [f"{consumer}:{line}: {n}'s words {p!r}" for p, n in phrases.items() if p in text]
    assert own == []


def test_the_list_and_both_viewers_say_what_the_table_says():
    """`ownership list`'s line of a property is its `when`; the HTML viewer's property table
    explains each built-in property by the table's `when` and hazard, and no spec invariant."""
    from ownership.render.text import render_spec, spec_json

    model = model_for("sglang_pd")
    listed = render_spec(model, "sglang_pd")
    assert f"  stale-read  {PROPERTIES['stale-read'].when}" in listed.splitlines()
    assert {p["name"]: p["doc"] for p in spec_json(model)["properties"]}["double-free"] == PROPERTIES["double-free"].when
    data = view_model(read_itf(GOLDEN / "incident.json"))
    assert set(data["about"]) == {p for p in data["properties"] if p in PROPERTIES}
    assert PROPERTIES["stale-read"].hazard in data["about"]["stale-read"]
    assert PROPERTIES["stale-read"].when in data["about"]["stale-read"]


def test_a_property_s_words_reach_the_trace_message():
    """A violation's message is the table's template filled in: a shorter hazard in the
    table is what the trace then says (the trace adds none of its own)."""
    from ownership import check

    result = check(spec_path("double_free.py"))
    assert result.violation.property == "double-free"
    assert result.violation.message.endswith(f": {PROPERTIES['double-free'].hazard}.")


def test_the_monitor_words_a_free_in_flight_as_a_trace_does():
    """Unifying the words changed one monitor message (issue 30): a free in flight now names
    whose transfer is in flight, into or out of the page, as a spec's trace always did."""
    from ownership.bridges.monitor import Monitor, parse_event

    lines = ['{"event": "alloc", "node": "prefill", "request": "a", "pages": [1]}',
             '{"event": "write", "node": "prefill", "request": "a", "pages": [1]}',
             '{"event": "alloc", "node": "decode", "request": "b", "pages": [5]}',
             '{"event": "send", "node": "prefill", "request": "a", "pages": [1], "to": "decode", "to_pages": [5]}',
             '{"event": "free", "node": "decode", "request": "b", "pages": [5]}']
    found = Monitor().run(parse_event(text, no, f"log:{no}") for no, text in enumerate(lines, start=1))
    assert found is not None and found.flags[0].property == "free-in-flight"
    assert found.message == ("line 5, free(request=b, node=decode, pages=[5]): request b freed decode page 5 while a"
                             " transfer of a into or out of it was still in flight: the write can land after the page"
                             " is reused.")


def test_the_readme_s_table_of_properties_is_the_table():
    """The README lists each built-in property with the table's own words, in its order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Built-in properties (the ownership kernel)\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{n}` | {w.when} | {w.hazard} |" for n, w in PROPERTIES.items()]
