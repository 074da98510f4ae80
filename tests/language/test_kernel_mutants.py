"""Tests that kill the mutants of ownership/kernel.py which change a verdict (issue 11, item 8).

tests/mutation/run.py mutates the kernel (a comparison flipped, a `_flag(...)` removed, a loop
cut to its first pool, ...) and runs the tests; each test here pins, on a small spec of
tests/specs_mutation, a behaviour that a surviving mutant had changed: the verdict, the
property, the step, the state count and the message. Every spec is checked by both the batch
engine (the tracer: what `ownership check` runs) and the per-state engine (the concrete
interpreter), which must agree, so a mutant that changes either interpreter is seen.
docs/testing.md ("Mutation testing") has the numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ownership import SpecError, Verdict, model_for
from ownership.engines import batch, per_state

SPECS = Path("tests") / "specs_mutation"


def judge(spec: str, fixes=(), skip=(), **params):
    """The batch engine's result on a spec of tests/specs_mutation, after checking that the
    per-state engine gives the same verdict, counts and trace."""
    model = model_for(str(SPECS / spec), fixes=fixes, params=params or None, skip=skip)
    ref = per_state.check(model)
    got = batch.check(model)
    assert got.verdict is ref.verdict
    assert (got.coverage.states, got.coverage.transitions) == (ref.coverage.states, ref.coverage.transitions)
    assert got.trace == ref.trace
    return got


def labels(result) -> list[str]:
    return [s.label() for s in result.trace.steps[1:]]


def test_a_write_into_a_page_two_requests_hold_is_write_unowned():
    """A write in a shared pool needs the writer to hold the page alone, not one reference."""
    result = judge("shared_write.py")
    assert result.verdict is Verdict.VIOLATED
    v = result.violation
    assert (v.property, v.step) == ("write-unowned", 3)
    assert labels(result) == ["miss(r=r1)", "hit(r=r2)", "append(r=r1)"]
    assert v.message.startswith("step 3, append(r=r1): request r1 wrote kv page 0 (held by r1, r2),"
                                " which it does not hold alone")
    assert "the KV of r2 is overwritten" in v.message


def test_a_write_into_a_shared_page_held_alone_again_is_verified():
    """Copy-on-write: the writer gives the shared page up and writes its own: 9 states."""
    result = judge("shared_write.py", fixes=["copy-on-write"])
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (9, 18)


def test_a_transfer_into_the_second_pool_is_in_flight():
    """in_flight() looks at every pool and at inbound transfers: the guarded free waits."""
    result = judge("in_flight_second_pool.py")
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (5, 5)


def test_a_transfer_out_of_the_first_pool_is_in_flight():
    """in_flight() looks at the first pool and at outbound transfers: the guarded free waits."""
    result = judge("in_flight_outbound.py")
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (4, 4)


def test_a_transfer_landing_in_a_page_two_requests_hold_is_write_unowned():
    """A landing transfer needs the receiver to hold the page alone, like a write."""
    result = judge("shared_land.py")
    assert result.verdict is Verdict.VIOLATED
    v = result.violation
    assert (v.property, v.step) == ("write-unowned", 3)
    assert labels(result) == ["transfer(r=r1)", "hit(r=r2)", "landed(r=r1)"]
    assert v.message.startswith("step 3, landed(r=r1): request r1 wrote decode page 0 (held by r1, r2),")


def test_a_page_cached_only_after_its_transfer_landed_is_verified():
    result = judge("shared_land.py", fixes=["publish-after-land"])
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (7, 6)


def test_a_shared_page_is_reused_once_the_request_whose_kv_it_holds_has_left():
    """reused() of a shared pool: not while r1 (whose KV it is) still holds the page with r2."""
    result = judge("queries.py")
    assert (result.violation.property, result.violation.step) == ("ref-reuse", 3)
    assert labels(result) == ["first(r=r1)", "join(r=r2)", "leave(r=r1)"]
    assert (result.coverage.states, result.coverage.transitions) == (126, 287)


@pytest.mark.parametrize("p", [0, 1])
def test_a_page_given_back_still_holds_its_kv_when_another_request_takes_it(p):
    """reused(): r2 takes page p holding r1's KV, at step 4 (r0's warm KV does not count),
    for the last page of the pool as for the first."""
    result = judge("queries.py", skip=["ref-reuse"], lowest=p)
    assert (result.violation.property, result.violation.step) == ("no-reuse", 4)
    assert labels(result) == [f"grab(r=r1, p={p})", f"compute(r=r1, p={p})", "drop(r=r1)", f"grab(r=r2, p={p})"]
    state = result.trace.steps[4].state
    assert state["kv.owner"][p] == "r2" and state["kv.content"][p] == "r1"


def test_holds_owned_and_free_pages_agree_in_every_state():
    """Without the reuse invariants (and kv page 1 only): 243 states, where holds, owned and
    free_pages of the shared pool agree, a page never written is not reused, and every guard
    (holds, free_pages, owned) enables exactly its transitions (1,296)."""
    result = judge("queries.py", skip=["ref-reuse", "no-reuse"], lowest=1)
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (243, 1296)


def test_take_of_a_held_shared_page_adds_a_holder():
    """r1 still holds (and reads) the page the allocator handed r2 as well: 5 states."""
    result = judge("shared_take.py")
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (5, 5)
    bug = judge("shared_take.py", fixes=["writer-second"])
    assert (bug.violation.property, bug.violation.step) == ("write-unowned", 2)
    assert "request r2 wrote kv page 0 (held by r1, r2), which it does not hold alone" in bug.violation.message
    assert "the KV of r1 is overwritten" in bug.violation.message


def test_a_free_in_flight_names_the_request_whose_transfer_is_in_flight():
    result = judge("free_under_other.py")
    assert (result.violation.property, result.violation.step) == ("free-in-flight", 3)
    assert labels(result) == ["reserve_r1()", "push_r2()", "release_r1()"]
    assert result.violation.message.startswith(
        "step 3, release_r1(): request r1 freed decode page 0 while a transfer of r2 into or out of it")
    out = judge("free_under_other.py", source=1)  # the transfer reads out of the page freed
    assert (out.violation.property, out.violation.step) == ("free-in-flight", 2)
    assert out.violation.message == ("step 2, release_src_r2(): request r2 freed prefill page 0 while a transfer"
                                     " of r2 into or out of it was still in flight: the write can land after"
                                     " the page is reused.")
    assert out.trace.steps[2].state["prefill.outbound"] == ["r2"]


def test_a_free_by_a_request_that_never_held_a_shared_page_drops_no_reference():
    bug = judge("shared_free_stranger.py")
    assert (bug.violation.property, bug.violation.step) == ("double-free", 2)
    # (issue 31, item 4: in a shared pool, what a real counter does, not "two owners")
    assert bug.violation.message == ("step 2, stranger_frees(): request r2 freed kv page 0 (held by r1):"
                                     " a real reference count takes the reference from another holder (r1),"
                                     " reaches zero early and frees the page while it is still in use.")
    result = judge("shared_free_stranger.py", skip=["double-free"])
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (4, 4)


def test_a_leak_of_the_last_page_of_a_pool_is_found():
    bug = judge("leak_last_page.py")
    assert (bug.violation.property, bug.violation.step) == ("leak", 2)
    assert bug.violation.message.endswith("r1 still owns kv page 1.")
    assert judge("leak_last_page.py", fixes=["free-all"]).verdict is Verdict.VERIFIED


def test_a_free_list_corrupted_by_a_skipped_double_free_hands_out_no_page_outside_the_pool():
    assert judge("lifo_double_free.py").violation.property == "double-free"
    result = judge("lifo_double_free.py", skip=["double-free"])
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (6, 7)


#: the zoo of tests/specs: each property's message names the request, the pool, the page and
#: the other party (the kernel's flag: request, other, pool, page)
ZOO_MESSAGES = {
    "double_free.py": "step 3, terminal_cleanup(r=r1): request r1 freed kv page 0 (already free):"
                      " the page can end up with two owners.",
    "free_in_flight.py": "step 2, abort(r=r1): request r1 freed dst page 0 while a transfer of r1 into or out"
                         " of it was still in flight: the write can land after the page is reused.",
    "read_unowned.py": "step 3, attend(r=r1): request r1 read kv page 0 (free), which it does not own.",
    "stale_read.py": "step 2, attend(r=r1): request r1 read kv page 0 never written for anyone (garbage),"
                     " not for r1: it attends over data never written for it.",
    "write_unowned.py": "step 3, sender_writes(r=r1): request r1 wrote kv page 0 (free), which it does not own:"
                        " it was freed meanwhile (at step 2), and the next owner's KV will be overwritten.",
    "leak.py": "step 2, abort(r=r1): a finished request keeps pages that never return to the pool:"
               " r1 still owns kv page 0.",
}


@pytest.mark.parametrize("spec", sorted(ZOO_MESSAGES))
def test_each_property_names_the_request_pool_page_and_other_party(spec):
    model = model_for(str(Path("tests") / "specs" / spec))
    result = batch.check(model)
    assert result.violation.message == ZOO_MESSAGES[spec]
    assert per_state.check(model).violation.message == ZOO_MESSAGES[spec]


# -- arguments: every operation refuses every bad argument, at the spec's line -----------------

#: case of tests/specs_mutation/bad_arguments.py -> the message (after "in action go(r=r1): ")
BAD_ARGUMENTS = {
    1: "holds(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    2: "owned(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    3: "free_pages(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    4: "reused(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    5: "alloc(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    6: "take(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    7: "share(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    8: "free(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    9: "write(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    10: "read(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    11: "send(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    12: "send(): 'nope' is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    13: 'holds(): 3 is not a request (requests are 1..2)',
    14: 'owned(): 3 is not a request (requests are 1..2)',
    15: 'in_flight(): 3 is not a request (requests are 1..2)',
    16: 'alloc(): 3 is not a request (requests are 1..2)',
    17: 'take(): 3 is not a request (requests are 1..2)',
    18: 'share(): 3 is not a request (requests are 1..2)',
    19: 'free(): 3 is not a request (requests are 1..2)',
    20: 'write(): 3 is not a request (requests are 1..2)',
    21: 'read(): 3 is not a request (requests are 1..2)',
    22: 'send(): 3 is not a request (requests are 1..2)',
    23: 'land(): 0 is not a request (requests are 1..2)',
    24: 'take(): page 2 outside pool kv (pages 0..1)',
    25: 'share(): page 3 outside pool shared (pages 0..1)',
    26: 'free(): pages 2, 3 outside pool kv (pages 0..1)',
    27: 'write(): page 2 outside pool kv (pages 0..1)',
    28: 'read(): page 2 outside pool kv (pages 0..1)',
    29: 'send(), the source: page 2 outside pool kv (pages 0..1)',
    30: 'send(), the destination: page 2 outside pool kv (pages 0..1)',
    32: 'write(): key= is for a pool whose content is keys; declare pool kv with keys=K, or drop key=',
    33: 'write(): pool keyed holds keys (pool(..., keys=2)): say which with key=...',
    34: 'write(): key 3 is outside 1..2, the keys of pool keyed',
    35: 'read(): key 0 is outside 1..2, the keys of pool keyed',
    36: 'read(): key= is for a pool whose content is keys; declare pool kv with keys=K, or drop key=',
    37: 'read(): pool keyed holds keys (pool(..., keys=2)): say which with key=...',
    38: 'share() needs a shared pool; declare kv = pool(..., shared=True)',
    39: 'take() chooses pages itself; pool lifo keeps its own free list (order="lifo"): use alloc(), or declare the pool with order="lowest"',
    40: 'reused() is not defined for pool keyed, whose content is keys, not requests',
    41: "send(): pools keyed and kv hold different kinds of content (2 keys, requests' KV)"
        "; a transfer copies requests' KV between pools of requests, or keys between pools of the same keys",
    42: "send(): pools kv and keyed hold different kinds of content (requests' KV, 2 keys)"
        "; a transfer copies requests' KV between pools of requests, or keys between pools of the same keys",
    43: 'holds(): page 2 is not a page of pool kv (0..1); give a page number known when tracing, or use has(s.owned(pool, r), p)',
    44: "alloc('kv', r, -1): a request cannot take a negative number of pages",
    45: 'free(), the pages: expected a page set, got an integer (1). An integer is not a page set: write page(p) for the set holding page p, 0 for the empty set, and a | b for a union',
    47: 'alloc(), the number of pages: expected an integer, got a page set (a state value). For the number of pages in a set write count(pages)',
    48: 'write(), the request: expected an integer, got a condition (a state value). Write If(c, 1, 0) for a condition counted as a number',
    49: 'write(), the key: expected an integer, got a condition (a state value). Write If(c, 1, 0) for a condition counted as a number',
    54: "free_pages(): ['kv'] is not a pool of this spec. Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    55: 'write(), the request: expected an integer, got a condition (True). Write If(c, 1, 0) for a condition counted as a number',
    56: 'read(), the key: expected an integer, got a condition (True). Write If(c, 1, 0) for a condition counted as a number',
    57: 'alloc(), the number of pages: expected an integer, got a condition (True). Write If(c, 1, 0) for a condition counted as a number',
    58: 'take(), the pages: expected a page set, got a condition (True).',
    59: "alloc(): 'keyd' is not a pool of this spec. Did you mean 'keyed'? Pools: kv, keyed, shared, lifo, big (the name of the attribute declared with pool(...))",
    60: 'holds(): page True is not a page of pool kv (0..1); give a page number known when tracing, or use has(s.owned(pool, r), p)',
    61: 'holds(): page -1 is not a page of pool kv (0..1); give a page number known when tracing, or use has(s.owned(pool, r), p)',
}

_BAD = SPECS / "bad_arguments.py"


def _line_of(case: int) -> int:
    """The line of the spec marked `# case N`."""
    lines = _BAD.read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if re.search(rf"# case {case}\b", text))


def _spec_error(case: int, **params) -> SpecError:
    """The spec error of a case: at load, or (the same from both engines) while searching."""
    try:
        model = model_for(str(_BAD), params={"case": case, **params})
    except SpecError as e:
        return e
    errors = []
    for engine in (per_state.check, batch.check):
        with pytest.raises(SpecError) as got:
            engine(model)
        errors.append(got.value)
    assert str(errors[0]) == str(errors[1]) and errors[0].steps == errors[1].steps
    return errors[1]


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_a_bad_argument_is_a_spec_error_with_the_operations_message(case):
    """At the call's line; at load (no step) when the value is known when tracing, which a
    page set is not (24-30: raised in the first state where `go` is enabled)."""
    err = _spec_error(case)
    assert err.message == "in action go(r=r1): " + BAD_ARGUMENTS[case]
    assert (Path(err.file).resolve(), err.line) == (_BAD.resolve(), _line_of(case))
    assert err.steps == (["pick(v=1)"] if 24 <= case <= 30 else [])


def test_pages_inside_the_pool_are_not_a_spec_error():
    """Case 31 writes pages 0 and 1 of a 2-page pool: no spec error, only the kernel's verdict."""
    result = judge("bad_arguments.py", case=31)
    assert (result.violation.property, result.violation.step) == ("write-unowned", 2)


def test_allocating_no_page_is_not_a_spec_error():
    """Case 62: alloc(pool, r, 0) takes nothing and is always enabled."""
    result = judge("bad_arguments.py", case=62)
    assert result.verdict is Verdict.VERIFIED
    assert (result.coverage.states, result.coverage.transitions) == (2, 3)


def test_a_page_number_from_the_state_is_refused_by_holds():
    err = _spec_error(46)
    assert "is not a page of pool kv (0..1); give a page number known when tracing" in err.message
    assert err.line == _line_of(46)


#: (case, lo, hi) -> the message, or the verdict and state count when the stored value is valid
STATE_VALUES = [
    (50, 1, 2, (Verdict.VERIFIED, 3)),
    (50, 0, 0, "owned(): 0 is not a request (requests are 1..2)"),
    (50, 3, 3, "owned(): 3 is not a request (requests are 1..2)"),
    (51, -1, 1, (Verdict.VERIFIED, 8)),
    (51, 2, 2, "take(): page 2 outside pool kv (pages 0..1)"),
    (51, 3, 3, "take(): page 3 outside pool kv (pages 0..1)"),
    (52, 1, 2, (Verdict.VERIFIED, 11)),
    (52, 0, 0, "write(): key 0 is outside 1..2, the keys of pool keyed"),
    (52, 3, 3, "write(): key 3 is outside 1..2, the keys of pool keyed"),
    (53, 0, 2, (Verdict.VERIFIED, 12)),
    (53, -1, -1, "alloc('kv', r, -1): a request cannot take a negative number of pages"),
]


@pytest.mark.parametrize(("case", "lo", "hi", "expected"), STATE_VALUES)
def test_a_bad_argument_from_the_state_is_a_spec_error_where_it_is_stored(case, lo, hi, expected):
    """The check is made in the state: a value inside the bounds passes, one outside is the
    operation's spec error, one step after `pick` stored it."""
    if isinstance(expected, str):
        err = _spec_error(case, lo=lo, hi=hi)
        assert err.message == "in action go(r=r1): " + expected
        assert err.steps == [f"pick(v={lo})"]
        assert err.line == _line_of(case)
    else:
        result = judge("bad_arguments.py", case=case, lo=lo, hi=hi)
        assert (result.verdict, result.coverage.states) == expected
