"""ITF traces: what we write reads back identically, foreign traces are read, nothing executes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ownership import TraceFormatError, check, read_itf, write_itf
from ownership.trace import Step, Trace, Violation, from_itf, to_itf

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
scalars = st.one_of(st.integers(-(2**70), 2**70), st.booleans(), names)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.frozensets(st.integers(0, 63), max_size=6),
        st.dictionaries(names, inner, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def traces(draw):
    variables = draw(st.lists(names.filter(lambda n: n and not n.startswith("mbt::")), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(1, 4))
    steps = []
    for i in range(n):
        state = {v: draw(values) for v in variables}
        if i == 0:
            steps.append(Step(None, {}, state))
        else:
            args = draw(st.dictionaries(names.filter(bool), scalars, max_size=2))
            steps.append(Step(draw(names.filter(lambda a: a not in ("", "init"))), args, state, draw(st.sampled_from([None, "decode"]))))
    violation = draw(st.one_of(st.none(), st.builds(
        Violation, property=names, step=st.integers(0, n - 1), message=names,
        requests=st.lists(names, max_size=2), pages=st.lists(st.tuples(names, st.integers(0, 9)), max_size=2))))
    return Trace(steps=steps, violation=violation, spec=draw(names), spec_class=draw(names),
                 params=draw(st.dictionaries(names, st.integers(0, 99), max_size=3)),
                 fixes=draw(st.lists(names, max_size=2)), engine="explicit", reproduce=draw(names),
                 properties=draw(st.lists(names, max_size=3)))


@settings(max_examples=150, deadline=None)
@given(traces())
def test_an_itf_round_trip_gives_back_the_same_trace(trace):
    """to_itf -> JSON text -> from_itf is the identity on traces."""
    back = from_itf(json.loads(json.dumps(to_itf(trace))))
    assert back == trace


def test_integers_are_written_as_bigint_and_page_sets_as_set(tmp_path):
    """The ITF typed values: {"#bigint": ...}, {"#set": [...]}, {"#map": [...]}."""
    path = tmp_path / "t.itf.json"
    write_itf(check("sglang_pd").trace, path)
    doc = json.loads(path.read_text())
    state = doc["states"][2]
    assert state["mbt::actionTaken"] == "decode_prealloc"
    assert state["mbt::nondetPicks"] == {"r": "r1"}
    assert state["d_table"] == {"#map": [["r1", {"#set": [{"#bigint": "0"}, {"#bigint": "1"}, {"#bigint": "2"}]}],
                                         ["r2", {"#set": []}]]}
    assert state["prompt"]["#map"][0] == ["r1", {"#bigint": "3"}]
    assert doc["#meta"]["format"] == "ITF"
    assert doc["#meta"]["ownership"]["violation"]["property"] == "stale-read"
    assert doc["vars"][:2] == ["mbt::actionTaken", "mbt::nondetPicks"]


def test_a_checked_trace_round_trips_through_a_file(tmp_path):
    """A real counterexample reads back equal to what was written."""
    trace = check("sglang_pd").trace
    path = tmp_path / "t.itf.json"
    write_itf(trace, path)
    assert read_itf(path) == trace


def test_a_foreign_itf_trace_is_read_as_plain_variables(tmp_path):
    """An Apalache/Quint trace without our annotations loads, marked foreign."""
    doc = {
        "#meta": {"format": "ITF", "source": "spec.qnt"},
        "vars": ["x", "s"],
        "states": [
            {"#meta": {"index": 0}, "x": {"#bigint": "1"}, "s": {"#set": ["a"]}},
            {"#meta": {"index": 1}, "x": 2, "s": {"#tup": [1, "b"]}},
        ],
    }
    path = tmp_path / "foreign.itf.json"
    path.write_text(json.dumps(doc))
    trace = read_itf(path)
    assert trace.foreign
    assert trace.steps[0].state == {"x": 1, "s": frozenset({"a"})}
    assert trace.steps[1].state["s"] == (1, "b")


def test_loading_a_trace_never_executes_code(tmp_path):
    """A trace full of code-looking strings is only data."""
    evil = "__import__('os').system('touch PWNED')"
    doc = {"vars": [evil], "states": [{evil: evil, "mbt::actionTaken": evil}]}
    path = tmp_path / "evil.itf.json"
    path.write_text(json.dumps(doc))
    trace = read_itf(path)
    assert trace.steps[0].state == {evil: evil}
    assert not (tmp_path / "PWNED").exists()


def test_replay_rejects_a_foreign_trace_with_a_clear_error():
    """A trace without our annotations has no actions to replay."""
    from ownership import model_for
    from ownership.trace import replay

    trace = from_itf({"vars": ["x"], "states": [{"x": 1}]})
    with pytest.raises(TraceFormatError, match="not written by ownership"):
        replay(trace, model_for("sglang_pd"))


def test_a_foreign_trace_with_records_variants_and_sets_of_records_is_read():
    """The strict reader still reads what Quint writes: records, variants, sets of records."""
    doc = {
        "vars": ["q", "m"],
        "states": [
            {"q": {"#set": [{"id": {"#bigint": "1"}}, {"id": {"#bigint": "2"}}]}, "m": {"tag": "None", "value": {"#tup": []}}},
            {"q": {"#set": []}, "m": {"tag": "Some", "value": {"#bigint": "-3"}}, "mbt::actionTaken": "step",
             "mbt::nondetPicks": {"x": {"tag": "Some", "value": {"#bigint": "1"}}}},
        ],
    }
    trace = from_itf(json.loads(json.dumps(doc)))
    assert trace.foreign and trace.steps[0].state["q"] == ({"id": 1}, {"id": 2})
    assert trace.steps[1].state["m"] == {"tag": "Some", "value": -3}
    assert trace.steps[1].args == {"x": {"tag": "Some", "value": 1}}


def test_a_trace_that_ownership_writes_passes_every_check_of_the_reader(tmp_path):
    """The reader's type checks refuse nothing that write_itf writes, however the engine."""
    for engine in ("explicit", "bmc"):
        trace = check("sglang_pd", engine=engine).trace
        path = tmp_path / f"{engine}.itf.json"
        write_itf(trace, path)
        assert read_itf(path) == trace
