"""The end-to-end SGLang disaggregation spec, release by release: C1, C3 and C4 of docs/bugs.md as
shortest counterexamples, and the fixes that remove them, with their state counts pinned.

A change to the spec or the kernel that moves a count or a shortest length must be looked at.
"""

from __future__ import annotations

import pytest
from conftest import scenario as replay_run
from conftest import steps, violated

from ownership import Verdict, check, model_for, replay_trace

SPEC = "sglang_disagg"
#: The incident alone: prefill's capacity (1 page) below the context window (2 pages), and
#: neither client aborts nor Mooncake timeouts, so that C3 and C4 cannot come first.
INCIDENT = {"prefill_pool": 1, "client_aborts": 0, "transfer_timeouts": 0}
#: The proposed fixes for C4 (#38961, LightLLM #1406): no release on the timeout, and prefill
#: keeps its source pages, and its drain ACK, until a timed-out batch has settled.
PROPOSED = ["quiesced-release", "hold-source"]
ALL_REACHED = {
    "a-request-completes": True,
    "a-freed-page-is-reused": True,
    "a-prompt-is-sent-in-two-chunks": True,
    "an-abort-ack-arrives": True,
    "a-timed-out-write-is-still-in-flight": True,
}


def scenario(actions, **kw):
    """Replay a hand-written run of this file's spec (conftest.scenario)."""
    return replay_run(SPEC, actions, **kw)


# -- C1: the incident ---------------------------------------------------------------------------


def test_0_5_19_shows_the_incident_as_a_stale_read_of_an_earlier_requests_page():
    """C1: prefill rejects the 2-page prompt and sends its 1-page placeholder with Success;
    decode commits and reads both reserved pages, the second still holding earlier KV (r0)."""
    result = check(SPEC, version="0.5.19", params=INCIDENT)
    v = violated(result, "stale-read", 5)
    assert v.pages == [("decode", 1)]
    assert v.requests == ["r0", "r1"]
    assert steps(result) == [
        "arrive(r=r1, n=2)",
        "prefill_forward(r=r1)",
        "send_chunk(r=r1)",
        "chunk_completes(r=r1)",
        "decode_commit(r=r1)",
    ]
    assert result.trace.steps[1].state["sent"]["r1"] == 1  # the placeholder
    assert result.trace.steps[1].state["prompt"]["r1"] == 2


def test_0_5_20_no_longer_leaks_the_incident():
    """#36988 retires the placeholder after the forward: no violation in any reachable state."""
    result = check(SPEC, version="0.5.20", params=INCIDENT)
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 168


def test_0_5_20_holds_a_retired_requests_decode_pages_until_the_waiting_timeout(tmp_path):
    """sender.abort() is local only: prefill retires the request while decode still holds its
    reserved pages; only the 300 s waiting timeout (decode_on_failure) gives them back."""
    probe = tmp_path / "retired_hold.py"
    probe.write_text(
        "import sys\n"
        "from ownership import invariant\n"
        "from ownership.lang.loader import load_spec\n"
        "Base = load_spec('sglang_disagg')\n"
        "P, D = sys.modules[Base.__module__].P, sys.modules[Base.__module__].D\n"
        "class RetiredHold(Base):\n"
        "    @invariant\n"
        "    def no_decode_pages_for_a_retired_request(self, s):\n"
        "        held = False\n"
        "        for r in range(1, self.requests + 1):\n"
        "            held = held | ((s.p_stage[r] == P.RETIRED) & (s.d_stage[r] == D.WAITING))\n"
        "        return ~held\n"
    )
    result = check(str(probe), version="0.5.20", params=INCIDENT)
    violated(result, "no-decode-pages-for-a-retired-request", 2)
    assert steps(result) == ["arrive(r=r1, n=2)", "prefill_forward(r=r1)"]
    released = scenario(
        [("arrive", {"r": "r1", "n": 2}), ("prefill_forward", {"r": "r1"}),
         ("decode_on_failure", {"r": "r1"})],
        version="0.5.20", params=INCIDENT,
    )
    assert released.outcome == "passed"
    assert released.trace.steps[-1].state["decode.owner"] == ["free", "free"]


def test_the_coverage_check_alone_removes_the_incident_from_0_5_19():
    """#38704 (proposed): decode compares the pages sent with the pages reserved and aborts."""
    result = check(SPEC, version="0.5.19", fixes=["coverage-check"], params=INCIDENT)
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 183


# -- C3: the early free, and the late write -----------------------------------------------------


def test_0_5_19_frees_decode_pages_under_an_inflight_write_when_the_client_aborts():
    """C3, the early free: decode releases at once on the abort, the chunk's write in flight."""
    result = check(SPEC, version="0.5.19")
    v = violated(result, "free-in-flight", 4)
    assert v.pages == [("decode", 0)]
    assert steps(result)[-1] == "decode_abort(r=r1)"


def test_past_the_early_free_0_5_19_writes_into_the_page_decode_gave_up():
    """C3, the late write: skipping free-in-flight, the write in flight at the abort lands in
    the page decode freed (the next owner's KV is overwritten)."""
    result = check(SPEC, version="0.5.19", skip=["free-in-flight"])
    v = violated(result, "write-unowned", 5)
    assert v.pages == [("decode", 0)]
    assert steps(result)[-2:] == ["decode_abort(r=r1)", "chunk_completes(r=r1)"]


def test_0_5_20_still_frees_decode_pages_under_an_inflight_write():
    """Deferred release is off until 0.5.21: C3 is unchanged in 0.5.20."""
    violated(check(SPEC, version="0.5.20"), "free-in-flight", 4)


def test_0_5_19_lets_a_chunk_sent_after_the_abort_land_in_pages_decode_gave_up():
    """C3, the late write: the client aborts before prefill forwards; prefill has not seen the
    ABORT yet, sends the chunk to its copy of decode's page list, and the write lands."""
    result = check(SPEC, version="0.5.19", params={"client_aborts": 1, "transfer_timeouts": 0})
    v = violated(result, "write-unowned", 5)
    assert v.pages == [("decode", 0)]
    assert steps(result) == [
        "arrive(r=r1, n=1)",
        "decode_abort(r=r1)",
        "prefill_forward(r=r1)",
        "send_chunk(r=r1)",
        "chunk_completes(r=r1)",
    ]


def test_the_late_write_of_c3_overwrites_the_kv_of_the_request_that_reused_the_page():
    """One step longer than the shortest run: r2 takes the page r1 gave up (LIFO reuse), and
    r1's write lands in it: the #32564 corruption."""
    replayed = scenario(
        [("arrive", {"r": "r1", "n": 1}), ("decode_abort", {"r": "r1"}),
         ("arrive", {"r": "r2", "n": 1}), ("prefill_forward", {"r": "r1"}),
         ("send_chunk", {"r": "r1"}), ("chunk_completes", {"r": "r1"})],
        version="0.5.19",
    )
    assert replayed.outcome == "violated"
    assert replayed.violation.property == "write-unowned"
    assert replayed.violation.requests == ["r1", "r2"]
    assert "owned by r2" in replayed.violation.message


def test_0_5_19_releases_at_once_when_prefill_reports_a_timed_out_write_that_still_lands():
    """Mooncake semantics: batch_transfer_sync timed out but the write goes on; 0.5.19 believes
    "a prefill-initiated failure has already stopped writing" and frees decode's page."""
    result = check(SPEC, version="0.5.19", params={"client_aborts": 0})
    violated(result, "free-in-flight", 5)
    assert steps(result)[-2:] == ["worker_timeout(r=r1)", "decode_on_failure(r=r1)"]


def test_deferred_release_in_0_5_21_removes_both_c3_runs():
    """Replayed on 0.5.21, the two 0.5.19 counterexamples of C3 run to the end without a
    violation: decode holds the pages (HELD) instead of freeing them."""
    for params in ({}, {"client_aborts": 1, "transfer_timeouts": 0}):
        found = check(SPEC, version="0.5.19", params=params)
        replayed, _ = replay_trace(found.trace, version="0.5.21")
        assert replayed.outcome == "passed", params
        assert replayed.trace.steps[-1].state["d_stage"]["r1"] == "HELD"


# -- C4: the release timeout, and prefill's source pages ----------------------------------------


@pytest.mark.parametrize("version", ["0.5.21", "0.5.22", "0.5.23"])
def test_the_release_timeout_frees_pages_under_an_inflight_write_from_0_5_21_to_0_5_23(version):
    """C4: decode holds the pages after the abort, then "releasing anyway" at the timeout while
    the chunk's write is still in flight."""
    result = check(SPEC, version=version)
    v = violated(result, "free-in-flight", 5)
    assert v.pages == [("decode", 0)]
    assert steps(result)[-2:] == ["decode_abort(r=r1)", "decode_release_timeout(r=r1)"]


def test_past_the_timeout_release_0_5_23_writes_into_the_page_decode_gave_up():
    """C4, the late write: skipping free-in-flight, the write outlives the release timeout and
    lands in the released page."""
    result = check(SPEC, version="0.5.23", skip=["free-in-flight"])
    violated(result, "write-unowned", 6)
    assert steps(result)[-2:] == ["decode_release_timeout(r=r1)", "chunk_completes(r=r1)"]


def test_the_release_timeout_can_also_fire_before_a_write_prefill_still_sends():
    """C4 when the ABORT is slow: decode times out and frees, prefill (not yet told) posts the
    chunk into the page list it kept; the timeout frees under it."""
    result = check(SPEC, version="0.5.21", params={"client_aborts": 1, "transfer_timeouts": 0})
    violated(result, "free-in-flight", 5)
    assert steps(result) == [
        "arrive(r=r1, n=1)",
        "decode_abort(r=r1)",
        "prefill_forward(r=r1)",
        "send_chunk(r=r1)",
        "decode_release_timeout(r=r1)",
    ]


def test_0_5_21_acks_the_drain_of_a_timed_out_send_and_0_5_22_poisons_that_ack():
    """After batch_transfer_sync timed out, 0.5.21's worker counts the room drained and ACKs
    decode's ABORT while the write still runs; 0.5.22's _poison_unsettled_send withholds the
    ACK (decode then falls back to the timeout, test above)."""
    run = [("arrive", {"r": "r1", "n": 1}), ("prefill_forward", {"r": "r1"}),
           ("send_chunk", {"r": "r1"}), ("worker_timeout", {"r": "r1"}),
           ("decode_on_failure", {"r": "r1"}), ("prefill_on_abort", {"r": "r1"}),
           ("decode_release_on_ack", {"r": "r1"})]
    early = scenario(run, version="0.5.21")
    assert early.outcome == "violated"
    assert (early.violation.property, early.violation.step) == ("free-in-flight", 7)
    poisoned = scenario(run, version="0.5.22")
    assert poisoned.outcome == "blocked"
    assert poisoned.blocked_action == "decode_release_on_ack(r=r1)"


def test_the_coverage_check_on_top_of_0_5_23_leaves_c4():
    """#38704 is a fix on top for C1; the release timeout is untouched."""
    violated(check(SPEC, version="0.5.23", fixes=["coverage-check"]), "free-in-flight", 5)


def test_prefill_frees_its_source_pages_on_a_local_failure_while_the_batch_still_reads_them():
    """C4 (d): with decode's timeout gone, prefill's release on Failed comes next: the timed-out
    batch is still reading the source page."""
    result = check(SPEC, version="0.5.23", fixes=["quiesced-release"])
    v = violated(result, "free-in-flight", 5)
    assert v.pages == [("prefill", 0)]
    assert steps(result)[-2:] == ["worker_timeout(r=r1)", "prefill_release_failed(r=r1)"]


def test_the_proposed_fixes_on_0_5_23_are_verified_over_every_reachable_state():
    """No release on the timeout and source pages held until the batch settles: no violation in
    any reachable state at the default parameters, and the spec is not vacuous."""
    result = check(SPEC, version="0.5.23", fixes=PROPOSED)
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 7_213
    assert result.sometimes == ALL_REACHED


def test_the_proposed_fixes_on_0_5_23_are_verified_in_the_incident_configuration():
    """With prefill's capacity below the window and every fault on, 0.5.23 plus the proposed
    fixes is safe too (the door retires the long prompt; no 2-chunk prompt is admitted)."""
    result = check(SPEC, version="0.5.23", fixes=PROPOSED, params={"prefill_pool": 1})
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 6_220
    assert result.sometimes["a-prompt-is-sent-in-two-chunks"] is False


def test_versions_turn_on_the_fixes_of_the_release_table():
    """--version selects the fixes each release had (docs/protocols/sglang-pd.md)."""
    expected = {
        "0.5.19": (),
        "0.5.20": ("post-forward-retire",),
        "0.5.21": ("post-forward-retire", "door-retire", "deferred-release", "defer-all-failures"),
        "0.5.22": ("post-forward-retire", "door-retire", "deferred-release", "defer-all-failures",
                   "poison-unsettled"),
        "0.5.23": ("post-forward-retire", "door-retire", "deferred-release", "defer-all-failures",
                   "poison-unsettled"),
    }
    for version, fixes in expected.items():
        assert model_for(SPEC, version=version).spec.fixes == fixes, version


# -- liveness: pages come back, transfers land, requests leave; what the waiting costs ---------------

#: The safety properties, skipped to see past C1, C3 and C4 to liveness and the costs.
SAFETY = ["stale-read", "read-unowned", "write-unowned", "free-in-flight", "double-free", "leak"]
LIVE = ["every-request-leaves", "eventually-released", "eventually-landed"]


@pytest.mark.parametrize(("release", "fixes", "prefill_pool", "states", "held", "stretch"), [
    ("0.5.19", [], 1, 14_943, 0, 0),        # C1: decode reads at once instead of waiting
    ("0.5.20", [], 1, 8_463, 2, 7),         # #36988: retired silently, decode waits for its timeout
    ("0.5.21", [], 1, 16_139, 2, 16),       # + deferred release: held for the ACK or the release timeout
    ("0.5.23", [], 2, 22_317, 2, 17),
    ("0.5.23", PROPOSED, 2, 7_213, 2, 18),  # released on the drain ACK only
])
def test_liveness_holds_under_weak_fairness_in_every_release_and_the_wait_is_measured(
        release, fixes, prefill_pool, states, held, stretch):
    """Every page comes back, every transfer lands and every request leaves both nodes, on
    every behaviour in which the protocol's steps (the timeouts included) eventually run; the
    cost is the decode pages held for requests nobody serves (held-decode-pages)."""
    r = check(SPEC, version=release, fixes=fixes, params={"prefill_pool": prefill_pool}, skip=SAFETY, measure=True)
    assert r.verdict is Verdict.VERIFIED and r.coverage.states == states
    assert r.liveness == dict.fromkeys(LIVE, "holds on every behaviour")
    assert "weak fairness of prefill_forward" in r.fairness and "decode_release_timeout" in r.fairness
    m = r.measures["held-decode-pages"]
    assert (m.largest, m.longest) == (held, stretch)


def test_without_skipping_safety_liveness_waits_for_the_safety_violation_and_says_so():
    r = check(SPEC, version="0.5.23")
    assert r.verdict is Verdict.VIOLATED and r.violation.property == "free-in-flight"
    assert r.liveness == dict.fromkeys(LIVE, "not checked: the search stopped at a safety violation")
