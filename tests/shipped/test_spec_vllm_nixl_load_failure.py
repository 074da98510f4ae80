"""specs/vllm_nixl_load_failure.py: V10 of docs/bugs.md (vllm-project/vllm#56104), a failed NIXL READ
handle reported while its sibling still writes into the same decode blocks, as shortest
counterexamples in 0.29.0, and the fix of 0.30.0 verified, with its state counts pinned.

A change to the spec or the kernel that moves a count or a shortest length must be looked at.
"""

from __future__ import annotations

from conftest import steps, violated

from ownership import Verdict, check

SPEC = "vllm_nixl_load_failure"
FAILS = ["prefill_finishes(r=r1)", "decode_reads(r=r1)", "read_fails(r=r1, rank=0)", "update_from_output(r=r1)"]
ALL_REACHED = {
    "a-request-completes": True,
    "a-failed-load-ends-its-request": True,
    "a-sibling-read-lands-after-a-failure": True,
}


def test_0_29_0_frees_the_blocks_of_a_failed_load_while_the_sibling_read_is_in_flight():
    """V10: rank 0's READ fails, get_finished reports the request at once, and the scheduler
    (kv_load_failure_policy=fail) frees its block; rank 1's READ into it is still in flight."""
    for release in ({}, {"version": "0.29.0"}):
        result = check(SPEC, **release)
        v = violated(result, "free-in-flight", 4)
        assert v.pages == [("decode_rank1", 0)]
        assert steps(result) == FAILS


def test_with_recompute_the_rollback_frees_the_blocks_under_the_sibling_read():
    """kv_load_failure_policy=recompute: every block is invalid, so _update_waiting_for_remote_kv
    finds no valid token and frees the blocks, one step later."""
    result = check(SPEC, params={"recompute": 1})
    v = violated(result, "free-in-flight", 5)
    assert v.pages == [("decode_rank1", 0)]
    assert steps(result) == FAILS + ["decode_rolls_back(r=r1)"]


def test_past_the_early_free_the_sibling_read_lands_in_a_block_decode_gave_up():
    """The late write of the READ that NIXL cannot cancel: write-unowned at its landing."""
    result = check(SPEC, skip=["free-in-flight"])
    v = violated(result, "write-unowned", 5)
    assert v.pages == [("decode_rank1", 0)]
    assert steps(result) == FAILS + ["read_lands(r=r1, rank=1)"]


def test_past_the_late_write_the_second_report_fails_the_workers_assert():
    """When the sibling ends, get_finished reports the request again and `assert meta is not
    None` fails: the engine's crash (#54518's report), in both policies."""
    for recompute in (0, 1):
        result = check(SPEC, params={"recompute": recompute}, skip=["free-in-flight", "write-unowned"])
        v = violated(result, "crash", 6)
        assert "assert meta is not None" in v.message
        assert steps(result)[-2:] == ["read_lands(r=r1, rank=1)", "update_from_output(r=r1)"]


def test_0_30_0_reports_the_failure_once_no_handle_is_outstanding():
    """#56104: verified under both policies, every sometimes reached."""
    result = check(SPEC, version="0.30.0")
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 12125
    assert result.sometimes == ALL_REACHED
    recompute = check(SPEC, version="0.30.0", params={"recompute": 1})
    assert recompute.verdict is Verdict.VERIFIED
    assert recompute.coverage.states == 18745
    assert recompute.sometimes == ALL_REACHED


def test_bmc_and_fuzz_agree_with_the_explicit_engine():
    """The same shortest counterexample by bmc, and fuzz (seed 1) shrinks to it; bmc finds no violation
    in 0.30.0 (one request, for time: every execution ends within its bound)."""
    bmc = check(SPEC, engine="bmc")
    violated(bmc, "free-in-flight", 4)
    assert steps(bmc) == FAILS
    fuzzed = check(SPEC, engine="fuzz", seed=1, database=None)
    violated(fuzzed, "free-in-flight", 4)
    fixed = check(SPEC, version="0.30.0", engine="bmc", params={"requests": 1})
    assert fixed.verdict is Verdict.VERIFIED
    assert check(SPEC, version="0.30.0", engine="fuzz", seed=1, database=None).verdict is Verdict.BOUNDED
