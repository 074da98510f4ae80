"""The shipped incident spec: the GLM-5.3 leak as a shortest counterexample, and each fix.

State counts are pinned: a change to the spec or the kernel that moves them must be looked at.
"""

from __future__ import annotations

import itertools

import pytest

from ownership import Verdict, check, replay_trace

FIXES = {
    "door-retire": 903,
    "post-forward-retire": 1_130,
    "pool-fits-context": 1_096,
    "coverage-check": 1_214,
}


def test_the_default_run_finds_the_incident_as_a_shortest_stale_read():
    """Prefill rejects the 3-page prompt, sends its 1-page placeholder with Success; decode
    reads its 3 reserved pages, 2 of which hold an earlier request's KV."""
    result = check("sglang_pd")
    assert result.verdict is Verdict.VIOLATED
    v = result.violation
    assert v.property == "stale-read"
    assert v.step == 6
    assert v.pages == [("decode", 1), ("decode", 2)]
    assert v.requests == ["r0", "r1"]
    steps = [s.label() for s in result.trace.steps[1:]]
    assert steps == [
        "arrive(r=r1, n=3)",
        "decode_prealloc(r=r1)",
        "prefill_forward(r=r1)",
        "prefill_result(r=r1)",
        "transfer_done(r=r1)",
        "decode_commit(r=r1)",
    ]
    first = result.trace.steps[1].state
    assert first["sent"]["r1"] == 1 and first["prompt"]["r1"] == 3  # the one-page placeholder


@pytest.mark.parametrize(("fix", "states"), sorted(FIXES.items()))
def test_each_fix_alone_is_verified_over_every_reachable_state(fix, states):
    """Each fix alone removes the leak; the pinned count is every reachable state."""
    result = check("sglang_pd", fixes=[fix])
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == states
    assert result.coverage.complete


@pytest.mark.parametrize("fix", sorted(FIXES))
def test_each_fix_keeps_the_spec_non_vacuous(fix):
    """With every fix a request still completes and a freed page is reused by another request."""
    result = check("sglang_pd", fixes=[fix])
    assert result.sometimes == {"a-request-completes": True, "a-freed-page-is-reused": True}


def test_every_pair_of_fixes_is_verified():
    """Fixes compose: no pair of them reintroduces a violation."""
    for pair in itertools.combinations(sorted(FIXES), 2):
        assert check("sglang_pd", fixes=list(pair)).verdict is Verdict.VERIFIED, pair


def test_the_leak_needs_prefill_pool_below_the_context_window():
    """With a prefill pool as large as the window, nothing is rejected and nothing leaks."""
    assert check("sglang_pd", params={"prefill_pool": 3}).verdict is Verdict.VERIFIED
    assert check("sglang_pd", params={"prefill_pool": 2}).verdict is Verdict.VIOLATED


def test_replaying_the_incident_still_violates_without_a_fix():
    """The shortest trace replays to the same violation at the same step."""
    result = check("sglang_pd")
    replayed, _ = replay_trace(result.trace)
    assert replayed.outcome == "violated"
    assert replayed.violation.property == "stale-read"
    assert replayed.violation.step == 6


def test_replaying_the_incident_with_door_retire_is_blocked_at_the_prefill_forward():
    """door-retire retires the request at intake, so prefill never forwards it."""
    result = check("sglang_pd")
    replayed, _ = replay_trace(result.trace, fixes=["door-retire"])
    assert replayed.outcome == "blocked"
    assert replayed.blocked_step == 3
    assert replayed.blocked_action == "prefill_forward(r=r1)"


def test_replaying_the_incident_with_the_coverage_check_runs_without_a_violation():
    """#38704's check aborts at commit instead of reading: the run changes at step 6."""
    result = check("sglang_pd")
    replayed, _ = replay_trace(result.trace, fixes=["coverage-check"])
    assert replayed.outcome == "passed"
    assert replayed.diverged_step == 6
    assert replayed.trace.steps[-1].state["d_stage"]["r1"] == "ABORTED"


LIVE = ("eventually-released", "eventually-landed")


@pytest.mark.parametrize("release, skip, states, stranded", [
    ("0.5.19", ("stale-read",), 1_304, (0, 0)),
    ("0.5.20", (), 1_130, (3, 8)),
    ("0.5.21", (), 903, (3, 8)),
    ("0.5.23", (), 903, (3, 8)),
])
def test_liveness_by_release_holds_and_the_stranded_pages_are_a_cost(release, skip, states, stranded):
    """docs/specs/sglang_pd.md, "Liveness by release": --liveness switches the kernel's on."""
    result = check("sglang_pd", version=release, skip=skip, liveness=LIVE, measure=True)
    assert result.verdict is Verdict.VERIFIED and result.coverage.states == states
    assert result.liveness == {n: "holds on every behaviour" for n in LIVE}
    got = result.measures["stranded-decode-pages"]
    assert (got.largest, got.longest) == stranded
    assert "--liveness eventually-released --liveness eventually-landed" in result.reproduce


def test_liveness_is_not_checked_past_the_incident_and_says_why():
    result = check("sglang_pd", liveness=LIVE)
    assert result.verdict is Verdict.VIOLATED and result.violation.property == "stale-read"
    assert set(result.liveness.values()) == {"not checked: the search stopped at a safety violation"}


def test_a_liveness_property_that_is_not_the_kernels_is_refused():
    from ownership.errors import UsageError

    with pytest.raises(UsageError, match="not a liveness property of the kernel"):
        check("sglang_pd", liveness=("eventually-done",))
