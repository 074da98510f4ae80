"""One answer in every engine for the cases of issue 11 (tests/specs/semantics/).

Each spec is checked by the per-state engine (the reference: the concrete interpreter), the
batch engine, the batch engine with symmetry (where the spec is symmetric), the partitioned
search (3 partitions), bmc, prove and the fuzz engine. A violation must be the same property at the same depth, a spec error the same
error (message, file and line, and the steps that reach it); never a traceback, never exit 1
for anything but a violation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

from ownership import check, read_itf
from ownership.api import model_for
from ownership.engines import batch, bmc, fuzz, partitioned, per_state
from ownership.errors import SpecError, UsageError
from ownership.interpret.concrete import Concrete
from ownership.interpret.concrete_values import _v
from ownership.result import Verdict

SPECS = ROOT / "tests" / "specs" / "semantics"


def _path(name: str) -> str:
    return str(SPECS / name)


def _outcome(run: Any) -> tuple[Any, ...]:
    """What an engine answered: (violated, property, depth), (error, message, steps), (verdict,)."""
    try:
        result = run()
    except SpecError as e:
        return ("error", str(e), tuple(e.steps))
    if result.verdict is Verdict.VIOLATED:
        return ("violated", result.violation.property, len(result.trace.steps) - 1)
    return (result.verdict.word,)


def _answers(name: str, fixes: tuple[str, ...] = ()) -> dict[str, tuple[Any, ...]]:
    model = model_for(_path(name), fixes=fixes)
    out = {
        "per-state": _outcome(lambda: per_state.check(model)),
        "batch": _outcome(lambda: batch.check(model)),
        # (the search of --ray and --checkpoint, its 3 partitions in this process; tests/distributed/test_ray.py on Ray)
        "partitioned": _outcome(lambda: partitioned.check(model, parts=3)),
        "bmc": _outcome(lambda: bmc.check(model, max_depth=6)),
        "prove": _outcome(lambda: bmc.prove(model, k=4)),
        "fuzz": _outcome(lambda: fuzz.check(model, runs=40, steps=8, profile="ci", database=None)),
    }
    if model.requests > 1:
        try:
            out["symmetry"] = _outcome(lambda: batch.check(model, symmetry=True))
        except UsageError:
            pass
    return out


def _same(answers: dict[str, tuple[Any, ...]], *, exhaustive_only: bool = False) -> tuple[Any, ...]:
    ref = answers["per-state"]
    for engine, got in answers.items():
        if engine == "fuzz" and ref[0] != "error":
            continue  # random runs: compared by test_fuzz_finds_nothing_the_reference_does_not
        if engine == "prove" and ref[0] == "verified":
            assert got[0] in ("verified", "inconclusive"), (engine, got)
            continue
        if engine == "bmc" and ref[0] == "verified":
            assert got[0] in ("verified", "bounded"), (engine, got)
            continue
        assert got == ref, (engine, got, ref)
    return ref


@pytest.mark.parametrize("name, prop, depth", [
    ("read_after_write.py", "stale-read", 2),
    ("double_free_after_write.py", "double-free", 2),
])
def test_a_read_after_a_write_is_the_value_written_in_every_engine(name, prop, depth):
    """The tracer reads back what an action wrote, as the concrete interpreter does."""
    assert _same(_answers(name)) == ("violated", prop, depth)


def test_an_argument_declared_bool_is_a_condition_in_every_engine():
    """`on: bool` reaches the action as True or False (it was 0 or 1, which no condition took)."""
    assert _same(_answers("bool_argument.py")) == ("violated", "never-two", 2)
    model = model_for(_path("bool_argument.py"))
    assert [b.label() for b in model.bindings] == ["arm(on=False)", "arm(on=True)", "fire()"]


@pytest.mark.parametrize("name, where, steps", [
    ("intermediate_write.py", "intermediate_write.py:15: in action bump(): x := 5 is outside its domain 0..3", 0),
    ("division_in_action.py", "division_in_action.py:21: in action divide(): `//` by zero", 2),
    ("division_in_invariant.py", "division_in_invariant.py:18: in invariant ratio: `//` by zero", 2),
    ("page_outside_pool.py", "page_outside_pool.py:18: in action go(r=r1): send(), the destination: page 1 outside pool decode", 0),
    ("key_out_of_range.py", "key_out_of_range.py:14: in action go(r=r1): write(): key 3 is outside 1..2", 2),
])
def test_a_state_dependent_spec_error_is_the_same_error_in_every_engine(name, where, steps):
    """Every engine raises the concrete interpreter's SpecError, with the steps that reach it."""
    kind, message, path = _same(_answers(name))
    assert kind == "error" and where in message and len(path) == steps


@pytest.mark.parametrize("name, what", [
    ("invert_python_bool.py", "If(c, a, b): expected a condition, got an integer (-2)"),
    ("invariant_without_return.py", "in invariant small: it returned None instead of a condition"),
    ("finished_without_return.py", "it returned None instead of a condition: did it forget `return`?"),
    ("int_as_pages.py", "free(), the pages: expected a page set, got an integer (1)"),
    ("int_into_page_slot.py", "index[2] := ...: expected a page set, got an integer (1)"),
    ("action_named_like_pool.py", "declares 'prefill' twice"),
    ("sys_exit_in_action.py", "SystemExit(0) in action go(): a spec must not exit the process"),
    ("enum_with_a_gap.py", "the members of IntEnum E (A=0, C=5) are not consecutive integers"),
    ("write_in_invariant.py", "write_in_invariant.py:21: in invariant below-three: x := ...: a property reads the"
                              " state and does not write it"),
])
def test_a_spec_error_at_load_is_refused_by_every_engine_with_its_line(name, what):
    """Refused at load (the tracer runs first), so every engine says the same, at the spec's line."""
    with pytest.raises(SpecError) as e:
        model_for(_path(name))
    assert what in str(e.value) and e.value.file and e.value.file.endswith(name)
    run = run_cli("check", _path(name))
    assert run.code == 2 and run.err.startswith("error: ") and "Traceback" not in run.err


def test_a_measure_that_writes_the_state_is_refused_with_its_line():
    """NOTE(read-only-properties): a measure reads the state, as an invariant does."""
    run = run_cli("check", _path("write_in_measure.py"), "--measure")
    assert run.code == 2 and "Traceback" not in run.err, (run.code, run.err)
    assert "write_in_measure.py:19: in measure how-far: x := ...: a property reads the state" in run.err, run.err


@pytest.mark.parametrize("name, prop", [
    ("all_64_pages.py", "fewer-than-64"),
    ("without_page_63.py", "at-most-one"),
    ("slot_wider_than_64_bits.py", "not-done"),
    ("nth_default_past_int64.py", "small"),
])
def test_values_past_int64_are_the_concrete_interpreters_in_every_engine(name, prop):
    """NOTE(int64-exact): page 63 of a 64-page pool, the complement of page(63), a slot wider
    than int64: every engine violates at step 1, as the concrete interpreter does (the batch
    and native engines crashed, or read page 63's set back as a negative number)."""
    from ownership.engines import native

    model = model_for(_path(name))
    answers = {
        "per-state": _outcome(lambda: per_state.check(model)),
        "default": _outcome(lambda: check(_path(name))),
        "bmc": _outcome(lambda: bmc.check(model, max_depth=3)),
        "prove": _outcome(lambda: bmc.prove(model, k=2)),
        "fuzz": _outcome(lambda: fuzz.check(model, runs=10, steps=3, profile="ci", database=None)),
    }
    assert set(answers.values()) == {("violated", prop, 1)}, answers
    if not batch.wide_pools(model):  # (a value too wide: the per-state search, in Python's integers)
        assert "may not fit a 64-bit integer" in batch.Expander(model, False).bm.unsupported
        assert _outcome(lambda: native.check(model)) == ("violated", prop, 1)
    else:  # (a 64-page pool: page sets in limbs, NOTE(wide-pages), in the partitioned search too)
        for engine in (batch.check, native.check, partitioned.check):
            assert _outcome(lambda e=engine: e(model)) == ("violated", prop, 1)


def test_terms_nested_thousands_deep_are_the_concrete_interpreters_in_every_engine():
    """NOTE(no-recursion): a sum of 3,000 terms in every engine, and a page set of a 1,000-page
    pool chained one `|` a page in the searches that take it: violated at step 1, as the
    concrete interpreter says (the batch and native engines passed Python's recursion limit)."""
    from ownership.engines import native

    model = model_for(_path("deep_sum.py"))
    answers = {
        "per-state": _outcome(lambda: per_state.check(model)),
        "default": _outcome(lambda: check(_path("deep_sum.py"))),
        "batch": _outcome(lambda: batch.check(model)),
        "native": _outcome(lambda: native.check(model)),
        "bmc": _outcome(lambda: bmc.check(model, max_depth=3)),
        "prove": _outcome(lambda: bmc.prove(model, k=2)),
        "fuzz": _outcome(lambda: fuzz.check(model, runs=5, steps=3, profile="ci", database=None)),
    }
    assert set(answers.values()) == {("violated", "below-3000", 1)}, answers
    model = model_for(_path("deep_page_set.py"))
    answers = {name: _outcome(lambda e=engine: e(model)) for name, engine in
               [("per-state", per_state.check), ("batch", batch.check), ("native", native.check),
                ("partitioned", partitioned.check)]}
    assert set(answers.values()) == {("violated", "not-all", 1)}, answers


def test_liveness_over_a_64_page_pool_is_judged_on_the_concrete_page_sets():
    """NOTE(int64-exact): the table holds 0 pages, then 64 for ever; `eventually exactly one`
    fails (it held for the default engine), and the measure's most is 64 (it said 1)."""
    got = check(_path("eventually_one_of_64.py"), measure=True)
    assert got.verdict is Verdict.VIOLATED and got.violation.property == "exactly-one"
    assert got.measures["held"].largest == 64


def test_at_one_depth_a_violation_wins_over_a_spec_error_and_the_error_is_reported_alone():
    """NOTE(first-event): the stale-read and the division by zero are both at depth 1."""
    assert _same(_answers("violation_beats_error.py")) == ("violated", "stale-read", 1)
    kind, message, steps = _same(_answers("violation_beats_error.py", fixes=("no-read",)))
    assert kind == "error" and "in action crash(): `//` by zero" in message and steps == ()


def test_an_invariant_of_each_request_names_the_requests_it_fails_for_in_every_engine():
    """`@invariant def bounded(self, s, r)` (issue 13, item 6): one condition per request."""
    assert _same(_answers("per_request_invariant.py")) == ("violated", "bounded", 2)
    assert _same(_answers("per_request_invariant.py", fixes=("tight",))) == ("violated", "bounded", 2)
    for fixes, who in (((), "r2"), (("tight",), "r1")):
        v = batch.check(model_for(_path("per_request_invariant.py"), fixes=fixes)).violation
        assert f"invariant bounded does not hold for {who}: A request takes" in v.message and v.requests == [who]
    proof = bmc.prove(model_for(_path("per_request_invariant.py"), skip=("bounded",)), k=2)
    assert proof.verdict is Verdict.VERIFIED


def test_a_crash_of_the_engine_is_a_step_property_of_every_engine():
    """`s.crash(what, when=...)` (issue 13, item 6): vLLM's KeyError after an abort (#25067)."""
    assert _same(_answers("crash_after_abort.py")) == ("violated", "crash", 3)
    assert _same(_answers("crash_after_abort.py", fixes=("ignore-abort-after-finish",)))[0] == "verified"
    model = model_for(_path("crash_after_abort.py"))
    assert model.can_crash and "crash" in model.checked()
    v = batch.check(model).violation
    assert v.message.startswith("step 3, finished_sending(r=r1): the engine's own code fails: KeyError in"
                                " _update_from_kv_xfer_finished")
    assert batch.check(model_for(_path("crash_after_abort.py"), skip=("crash",))).verdict is Verdict.VERIFIED
    assert "crash" not in model_for(_path("read_after_write.py")).checked()  # (only where a spec can crash)


@pytest.mark.parametrize("call, what", [
    ("s.crash(42)", "what must be a text saying what fails"),
    ('s.crash("  ")', "what must be a text saying what fails"),
    ('s.crash("boom", when=s.x + 1)', "s.crash(..., when=...)"),
])
def test_a_crash_without_a_text_or_a_condition_is_refused_at_its_line(tmp_path, call, what):
    spec = tmp_path / "bad_crash.py"
    spec.write_text("from ownership import Spec, action, ints, state\n\n\nclass BadCrash(Spec):\n    requests = 1\n"
                    "    x = state(ints(0, 1), 0)\n\n    @action\n    def go(self, s):\n        " + call + "\n")
    with pytest.raises(SpecError) as e:
        model_for(str(spec))
    assert what in str(e.value) and e.value.line == 10


def test_several_transfers_of_a_request_land_on_their_own_in_every_engine():
    """`s.land(r, pool)` and `s.land(r, pool, pages)` (issue 13, item 6): the aux buffer lands
    before the KV chunks, and decode reads the warm pool's old KV."""
    assert _same(_answers("partial_landing.py")) == ("violated", "stale-read", 3)
    assert _same(_answers("partial_landing.py", fixes=("wait-for-every-chunk",)))[0] == "verified"


def _run(model, *labels: str):
    """The concrete states of a run given by its steps' labels (`chunk_lands(r=r1, p=0)`)."""
    interp = Concrete(model)
    by_label = {b.label(): b for b in model.bindings}
    states, flags = [model.initial], []
    for label in labels:
        out = interp.step(states[-1], by_label[label])
        assert out is not None, f"{label} is not enabled"
        states.append(out.state)
        flags.append(out.flags)
    return states, flags


def test_a_partial_landing_lands_its_pages_only_and_the_sources_stay_read_until_the_last():
    model = model_for(_path("partial_landing.py"))
    states, flags = _run(model, "send(r=r1)", "chunk_lands(r=r1, p=0)", "aux_lands(r=r1)", "decode_commit(r=r1)")
    stale = [f for f in flags[-1] if f.prop == "stale-read"]
    assert [(f.pool, f.page) for f in stale] == [("d_kv", 1)]  # chunk 0 landed, chunk 1 did not
    view = Concrete(model).view
    # both chunks landed, the aux buffer not yet: prefill's KV pages are still being read
    states, _ = _run(model, "send(r=r1)", "chunk_lands(r=r1, p=0)", "chunk_lands(r=r1, p=1)")
    view.reset(states[-1])
    assert _v(view._positions("p_kv.outbound", 1)) == 0b11 and _v(view.in_flight(1))
    states, _ = _run(model, "send(r=r1)", "chunk_lands(r=r1, p=0)", "chunk_lands(r=r1, p=1)", "aux_lands(r=r1)")
    view.reset(states[-1])
    assert _v(view._positions("p_kv.outbound", 1)) == 0 and not _v(view.in_flight(1))


def test_a_transfer_between_keyed_pools_copies_the_keys_in_order_in_every_engine():
    """send() between keyed pools (issue 13, item 6): decode's blocks receive prefill's keys."""
    assert _same(_answers("keyed_transfer.py")) == ("violated", "stale-read", 3)
    assert _same(_answers("keyed_transfer.py", fixes=("wait-for-the-read",)))[0] == "verified"
    model = model_for(_path("keyed_transfer.py"), fixes=("wait-for-the-read",))
    states, _ = _run(model, "prefill_forward(r=r1)", "decode_pull(r=r1)")
    view = Concrete(model).view
    view.reset(states[-1])
    assert [_v(k) for k in view._array("decode.incoming")] == [1, 2]  # in flight: not landed yet
    assert [_v(k) for k in view._array("decode.content")] == [0, 0]
    states, _ = _run(model, "prefill_forward(r=r1)", "decode_pull(r=r1)", "read_lands(r=r1)")
    view.reset(states[-1])
    assert [_v(k) for k in view._array("decode.content")] == [1, 2]
    assert [_v(k) for k in view._array("decode.incoming")] == [0, 0]


def test_a_page_the_cache_holds_and_a_request_pins_is_not_evicted_in_any_engine():
    """Owners that are not requests and pins (issue 13, item 6): SGLang's radix tree holds the
    page (owner "cache"), r2 pins it (inc_lock_ref); evicting it under the pin is free-pinned."""
    assert _same(_answers("evict_pinned.py")) == ("violated", "free-pinned", 3)
    assert _same(_answers("evict_pinned.py", fixes=("evict-only-unlocked",)))[0] == "verified"
    v = batch.check(model_for(_path("evict_pinned.py"))).violation
    assert v.message == ("step 3, evict(): owner cache dropped the last reference to kv page 0 (pinned by r2):"
                         " the page is free and can be handed out again while a holder still has it pinned.")
    assert v.requests == ["r2"]  # (who pins it; the cache is not a request)


def test_a_reference_dropped_once_more_than_taken_goes_below_zero_in_every_engine():
    """Counted holders (issue 13, item 6): the request holds its page twice (its own reference
    and the transfer's); released at the grammar error and again at the terminal state (#30937)."""
    assert _same(_answers("release_twice_counted.py")) == ("violated", "count-below-zero", 3)
    assert _same(_answers("release_twice_counted.py", fixes=("release-at-terminal-state",)))[0] == "verified"
    model = model_for(_path("release_twice_counted.py"), fixes=("release-at-terminal-state",))
    states, flags = _run(model, "forward_and_send(r=r1)")
    view = Concrete(model).view
    view.reset(states[-1])
    assert _v(view.references("prefill", 0, 1)) == 2 and model.show(states[-1])["prefill.holders"] == [("r1", "r1")]
    states, _ = _run(model, "forward_and_send(r=r1)", "grammar_error(r=r1)", "transfer_terminal(r=r1)")
    view.reset(states[-1])
    assert _v(view.references("prefill", 0, 1)) == 0 and _v(view.free_pages("prefill")) == 1


@pytest.mark.parametrize("spec, fix, holders", [
    ("release_twice_counted.py", "release-at-terminal-state", {"#tup": ["r1", "r1"]}),
    ("evict_pinned.py", "evict-only-unlocked", {"#set": ["cache"]}),
])
def test_counted_holders_owners_and_pins_round_trip_through_itf_show_and_replay(tmp_path, spec, fix, holders):
    """The holders of a counted pool are a tuple in ITF, an owner is named, a pin is marked."""
    out = tmp_path / "t.itf.json"
    run = run_cli("check", _path(spec), "--out", str(out))
    assert run.code == 1
    doc = json.loads(out.read_text())
    pool = next(k.removesuffix(".holders") for k in doc["states"][0] if k.endswith(".holders"))
    assert any(holders in s[f"{pool}.holders"] for s in doc["states"])  # (a page's holders, in some state)
    trace = read_itf(str(out))
    assert trace == check(_path(spec)).trace
    again = run_cli("replay", str(out), "--spec", _path(spec))
    assert again.code == 1 and "still violated" in again.out
    fixed = run_cli("replay", str(out), "--spec", _path(spec), "--fix", fix)
    assert fixed.code == 0 and "no longer violates" in fixed.out
    html = tmp_path / "t.html"
    assert run_cli("show", str(out), "--html", str(html)).code == 0 and html.stat().st_size > 0
    shown = run_cli("show", str(out), "--no-pager")
    assert ("p pinned" in shown.out) == ("pins" in spec or "pinned" in spec)


def _spec(tmp_path, body: str, pool_decl: str = 'kv = pool(2, counted=1, owners=("cache",), pins=True)'):
    spec = tmp_path / "holders.py"
    spec.write_text("from ownership import Request, Spec, action, page, pool\n\n\nclass Holders(Spec):\n"
                    f"    requests = 1\n    {pool_decl}\n\n    @action\n    def go(self, s, r: Request):\n"
                    + "".join(f"        {line}\n" for line in body.splitlines()))
    return str(spec)


@pytest.mark.parametrize("pool_decl, body, what", [
    ('kv = pool(2, counted=1)', 's.alloc("kv", r, 1)\ns.share("kv", r, page(0))',
     'share(): request r1 would hold pool kv page 0 more than 1 time, the most that pool kv counts'),
    ('kv = pool(2, counted=2, pins=True)', 's.pin("kv", r, page(1))\ns.pin("kv", r, page(1))\ns.pin("kv", r, page(1))',
     'pin(): request r1 would hold pool kv page 1 more than 2 times'),
])
def test_more_references_than_a_pool_counts_is_a_spec_error_at_its_line(tmp_path, pool_decl, body, what):
    model = model_for(_spec(tmp_path, body, pool_decl))
    with pytest.raises(SpecError) as e:
        batch.check(model)
    assert what in str(e.value) and e.value.line == 10 + len(body.splitlines()) - 1


@pytest.mark.parametrize("pool_decl, body, what", [
    ('kv = pool(2)', 's.free("kv", "cache", page(0))', "'cache' is not an owner of pool kv; it has none besides requests"),
    ('kv = pool(2, owners=("cache",))', 's.free("kv", "cahce", page(0))', "'cahce' is not an owner of pool kv; its owners"
     " besides requests are cache. Did you mean 'cache'?"),
    ('kv = pool(2, owners=("cache",))', 's.write("kv", "cache", page(0))', "write(): 'cache' is not a request"),
    ('kv = pool(2, owners=("cache",))', 's.pin("kv", r, page(0))', "pin(): pool kv keeps no pins; declare it with"
     " pool(..., pins=True)"),
    ('kv = pool(2, owners=("r2",))', 'pass', "'r2' is not an owner's name"),
    ('kv = pool(2, owners=("cache", "cache"))', 'pass', "an owner is named twice"),
    ('kv = pool(2, counted=0)', 'pass', "counted is how many references one holder may have on a page"),
    ('kv = pool(2, counted=2, order="lifo")', 'pass', "a shared pool hands out its lowest free pages"),
])
def test_a_holder_a_pool_does_not_have_is_refused_at_its_line(tmp_path, pool_decl, body, what):
    with pytest.raises(SpecError) as e:
        batch.check(model_for(_spec(tmp_path, body, pool_decl)))
    assert what in str(e.value), str(e.value)
    assert e.value.line is not None


def test_a_partial_landing_without_its_pool_is_refused_at_its_line(tmp_path):
    spec = tmp_path / "bad_land.py"
    spec.write_text("from ownership import Request, Spec, action, page, pool\n\n\nclass BadLand(Spec):\n"
                    "    requests = 1\n    kv = pool(1)\n\n    @action\n    def go(self, s, r: Request):\n"
                    "        s.land(r, pages=page(0))\n")
    with pytest.raises(SpecError) as e:
        model_for(str(spec))
    assert "a partial landing names its pool" in str(e.value) and e.value.line == 10


def test_an_error_only_one_request_can_raise_is_not_a_symmetry():
    """The symmetry check compares the errors each binding can raise (issue 11, 7)."""
    model = model_for(_path("error_only_for_r1.py"))
    with pytest.raises(UsageError, match="not interchangeable"):
        batch.check(model, symmetry=True)
    assert _same(_answers("error_only_for_r1.py"))[0] == "error"


#: Cases whose z3 runs take minutes (a 1,000-bit page set): in the long set (tests/README.md).
_SLOW_IN_Z3 = {"deep_page_set.py"}


def _command_cases() -> list[Any]:
    out = []
    for name in sorted(p.name for p in SPECS.glob("*.py")):
        for args in (("check",), ("check", "--engine", "bmc"), ("check", "--engine", "fuzz", "--runs", "20"),
                     ("prove",)):
            slow = name in _SLOW_IN_Z3 and (args == ("prove",) or "bmc" in args)
            out.append(pytest.param(args, name, marks=[pytest.mark.long] if slow else []))
    return out


@pytest.mark.parametrize("args, name", _command_cases())
def test_no_command_answers_a_semantics_case_with_a_traceback_or_a_wrong_exit_code(args, name):
    """Exit 1 only with a violation, 2 only with an error message, never a traceback or 4. On a
    slow machine a run of over 2 s prints progress lines (indented) on stderr before it."""
    run = run_cli(*args, _path(name))
    assert "Traceback" not in run.out + run.err
    assert run.code in (0, 1, 2, 3), run.err
    if run.code == 1:
        assert "violated" in run.out
    if run.code == 2:
        lines = run.err.splitlines()
        first = next(i for i, line in enumerate(lines) if not line.startswith("  "))
        assert lines[first].startswith("error: "), run.err


def test_fuzz_finds_nothing_the_reference_does_not():
    """On the violated cases, fuzz reports the reference's property (or finds nothing)."""
    for name in ("read_after_write.py", "double_free_after_write.py"):
        answers = _answers(name)
        got = answers["fuzz"]
        assert got[0] in ("violated", "bounded") and (got[0] == "bounded" or got[1] == answers["per-state"][1])


def test_every_semantics_case_is_tested():
    """Each spec in tests/specs/semantics is named by a test above (no silent case)."""
    text = Path(__file__).read_text()
    for p in SPECS.glob("*.py"):
        assert f'"{p.name}"' in text, p.name


@pytest.mark.long
def test_every_operation_of_the_table_gets_one_answer_from_every_engine():
    """tests/specs/semantics/every_operation.py (issue 30): one action per operation of
    ownership/ir/ops.py; tests/language/test_operations.py compares its steps state by state."""
    assert _same(_answers("every_operation.py")) == ("verified",)


def test_a_transfer_that_holds_its_own_reference_keeps_its_pages_in_every_engine():
    """NOTE(last-reference), issue 31: in a shared pool a page is freed when its last reference
    goes. A request that drops its reference while the store job that holds its own still
    reads the page frees nothing: verified. Without the store's reference the request's free
    is the last one, free-in-flight, in every engine."""
    assert _same(_answers("transfer_holds_its_reference.py")) == ("violated", "free-in-flight", 3)
    assert _same(_answers("transfer_holds_its_reference.py", fixes=("store-holds-reference",)))[0] == "verified"


def test_the_kernels_operations_spelled_s_kernel_answer_alike_in_every_engine():
    """NOTE(kernel-namespace), issue 31 item 7: `s.kernel.alloc(...)` is `s.alloc(...)`."""
    assert _same(_answers("kernel_namespace.py")) == ("violated", "free-in-flight", 3)
    assert _same(_answers("kernel_namespace.py", fixes=("store-holds-reference",)))[0] == "verified"


def test_a_failed_transfer_leaves_its_destination_unwritten_in_every_engine():
    """s.kernel.fail (issue 31, item 1): a read after the failure is stale-read; the fix that
    treats the failure as an error verifies."""
    assert _same(_answers("failed_transfer.py")) == ("violated", "stale-read", 4)
    assert _same(_answers("failed_transfer.py", fixes=("failure-is-an-error",)))[0] == "verified"
