"""The vLLM NIXL pull-mode spec: V1 and V5 of docs/bugs.md as shortest counterexamples, and the fixes
that remove them, with their state counts pinned.

A change to the spec or the kernel that moves a count or a shortest length must be looked at.
"""

from __future__ import annotations

from conftest import scenario as replay_run
from conftest import steps, violated

from ownership import Verdict, check, model_for

SPEC = "vllm_nixl_pd"
ALL_REACHED = {
    "a-request-completes": True,
    "a-lease-expires": True,
    "an-expired-block-is-reused": True,
    "an-aborted-request-waits-for-its-read": True,
}


def scenario(actions, **kw):
    """Replay a hand-written run of this file's spec (conftest.scenario)."""
    return replay_run(SPEC, actions, **kw)


# -- V1: abort on decode during a READ -----------------------------------------------------------


def test_without_32255_an_abort_frees_decode_blocks_under_a_landing_read():
    """V1: the client aborts while the READ lands; finish_requests frees the blocks at once."""
    result = check(SPEC)
    v = violated(result, "free-in-flight", 3)
    assert v.pages == [("decode", 0)]
    assert steps(result) == ["prefill_finishes(r=r1)", "decode_reads(r=r1)", "decode_abort(r=r1)"]


def test_past_the_early_free_the_read_lands_in_blocks_decode_gave_up():
    """V1, the late write: skipping free-in-flight (and with V5 out of the way), the READ lands
    in the block decode freed."""
    result = check(SPEC, fixes=["heartbeat-lease", "decline-expired-reads"], params={"slow_reads": 0},
                   skip=["free-in-flight"])
    v = violated(result, "write-unowned", 4)
    assert v.pages == [("decode", 0)]
    assert steps(result)[-2:] == ["decode_abort(r=r1)", "read_completes(r=r1)"]


def test_v1_comes_back_when_0_33_0_loses_the_delayed_free():
    """With everything else that makes 0.33.0 safe below, dropping #32255 brings V1 back."""
    result = check(SPEC, fixes=["heartbeat-lease", "decline-expired-reads"], params={"slow_reads": 0})
    violated(result, "free-in-flight", 3)
    assert steps(result)[-1] == "decode_abort(r=r1)"


def test_the_first_cut_of_32255_holds_the_blocks_for_ever_once_finished_recving_came_first():
    """The race #32255's review found: an abort after finished_recving waits for a
    finished_recving that will never come again, so the blocks leak."""
    result = check(SPEC, fixes=["delay-free-before-review", "heartbeat-lease", "decline-expired-reads"],
                   params={"slow_reads": 0})
    v = violated(result, "leak", 4)
    assert v.pages == [("decode", 0)]
    assert steps(result) == [
        "prefill_finishes(r=r1)",
        "decode_reads(r=r1)",
        "read_completes(r=r1)",
        "decode_abort(r=r1)",
    ]


# -- V5: the lease expires before or during the READ ---------------------------------------------


def test_0_33_0_reads_prefill_blocks_whose_lease_expired_before_decode_arrived():
    """V5 before the READ: decode is congested, so it neither heartbeats nor reads before the
    lease runs out; prefill reaps it and decode then READs blocks nobody owns."""
    result = check(SPEC, version="0.33.0")
    v = violated(result, "read-unowned", 4)
    assert v.pages == [("prefill", 0)]
    assert steps(result) == [
        "prefill_finishes(r=r1)",
        "lease_runs_late(r=r1)",
        "lease_expires(r=r1)",
        "decode_reads(r=r1)",
    ]


def test_heartbeats_do_not_help_a_request_decode_has_not_admitted_yet():
    """#41383's heartbeats start at on_new_request: V5 before the READ stays with heartbeats
    that always arrive."""
    result = check(SPEC, version="0.33.0", params={"lost_heartbeats": 0, "client_aborts": 0})
    violated(result, "read-unowned", 4)


def test_a_block_reused_after_the_lease_expired_is_read_as_another_requests_kv():
    """One step longer than the shortest run: r2's prefill takes the reaped block, and decode
    pulls r2's KV for r1: the aws-do-eks #84 wrong output with HTTP 200."""
    replayed = scenario(
        [("prefill_finishes", {"r": "r1"}), ("lease_runs_late", {"r": "r1"}),
         ("lease_expires", {"r": "r1"}), ("prefill_finishes", {"r": "r2"}),
         ("decode_reads", {"r": "r1"})],
        version="0.33.0",
    )
    assert replayed.outcome == "violated"
    assert replayed.violation.property == "stale-read"
    assert replayed.violation.requests == ["r1", "r2"]
    assert replayed.violation.also == ["read-unowned"]


def test_declining_expired_reads_leaves_a_read_that_outlives_the_safety_margin():
    """V5 during the READ: the READ starts with the lease live, the heartbeats are lost, and
    prefill reaps the lease while NIXL still reads the blocks."""
    result = check(SPEC, version="0.33.0", fixes=["decline-expired-reads"])
    v = violated(result, "free-in-flight", 4)
    assert v.pages == [("prefill", 0)]
    assert steps(result) == [
        "prefill_finishes(r=r1)",
        "decode_reads(r=r1)",
        "lease_runs_late(r=r1)",
        "lease_expires(r=r1)",
    ]


def test_an_abort_stops_the_heartbeats_of_a_read_still_in_flight():
    """request_finished calls _stop_heartbeat for the aborted request while #32255 keeps its
    READ going: even with heartbeats that always arrive, a slow READ outlives the lease."""
    result = check(SPEC, version="0.33.0", fixes=["decline-expired-reads"], params={"lost_heartbeats": 0})
    violated(result, "free-in-flight", 5)
    assert steps(result)[2:] == ["decode_abort(r=r1)", "lease_runs_late(r=r1)", "lease_expires(r=r1)"]


def test_heartbeats_that_always_arrive_keep_a_waiting_read_safe_without_aborts():
    """0.33.0 plus declining expired reads, no lost heartbeats and no aborts: no violation."""
    result = check(SPEC, version="0.33.0", fixes=["decline-expired-reads"],
                   params={"lost_heartbeats": 0, "client_aborts": 0})
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 295


def test_0_33_0_with_declined_expired_reads_is_verified_when_reads_fit_the_safety_margin():
    """The delayed free (#32255), heartbeats (#41383) and declining expired reads (#47021, for
    prefill leases), with READs shorter than the margin: no violation in any reachable state,
    with every fault on, and the spec is not vacuous."""
    result = check(SPEC, version="0.33.0", fixes=["decline-expired-reads"], params={"slow_reads": 0})
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 1_521
    assert result.sometimes == ALL_REACHED


def test_versions_name_only_the_release_read_from_source():
    """0.33.0 is the one release whose source was read: it has #32255 and #41383."""
    assert model_for(SPEC, version="0.33.0").spec.fixes == ("delay-free-aborted-loads", "heartbeat-lease")


# -- liveness: blocks come back, READs land --------------------------------------------------------

SAFETY = ["stale-read", "read-unowned", "write-unowned", "free-in-flight", "double-free", "leak"]
LIVE = ["eventually-released", "eventually-landed"]


def test_blocks_come_back_and_reads_land_in_the_safe_runs_and_past_the_safety_violations():
    """Under weak fairness of the protocol's steps (the lease's clock and reaper included)."""
    safe = check(SPEC, version="0.33.0", fixes=["decline-expired-reads"], params={"slow_reads": 0})
    assert safe.verdict is Verdict.VERIFIED and safe.coverage.states == 1_521
    assert safe.liveness == dict.fromkeys(LIVE, "holds on every behaviour")
    assert "weak fairness of prefill_finishes, lease_runs_late, lease_expires" in safe.fairness
    past = check(SPEC, version="0.33.0", skip=SAFETY)
    assert past.verdict is Verdict.VERIFIED and past.coverage.states == 8_607
    assert past.liveness == dict.fromkeys(LIVE, "holds on every behaviour")


def test_the_first_cut_of_32255_holds_an_aborted_requests_block_for_ever_in_both_engines():
    """The race the review found: an abort after finished_recving arrived delays the free of
    decode's block until a finished_recving that never comes: a dead end, 8 steps, the same
    in the explicit engine and in bmc."""
    fixes = ["delay-free-before-review", "heartbeat-lease", "decline-expired-reads"]
    for engine in ("explicit", "bmc"):
        r = check(SPEC, fixes=fixes, params={"slow_reads": 0}, skip=SAFETY, engine=engine)
        assert r.verdict is Verdict.VIOLATED and r.violation.property == "eventually-released", engine
        assert len(r.trace.steps) - 1 == 8 and r.trace.loop == 8, engine
        assert r.violation.pages == [("decode", 0)] and "decode_abort" in [st.action for st in r.trace.steps], engine
