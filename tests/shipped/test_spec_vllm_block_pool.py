"""specs/vllm_block_pool.py: vLLM's prefix-caching block pool and the stale hash index (V9)."""

from __future__ import annotations

from ownership import Verdict, check

INDEX = "hash-index-points-at-blocks-with-that-hash"


def test_an_evicted_block_left_in_the_hash_index_is_found_at_the_eviction():
    """V9 (#4764): r2's allocation evicts r1's cached prefix block, and the index still names it."""
    result = check("vllm_block_pool")
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == INDEX
    assert result.violation.step == 3
    assert [s.label() for s in result.trace.steps[1:]] == [
        "schedule(r=r1, c=1)", "finish(r=r1)", "schedule(r=r2, c=2)"]
    assert result.trace.steps[3].state["evicted"] is True


def test_the_stale_index_entry_leaks_another_requests_kv_into_a_prefix_hit():
    """Past the index invariant, the kernel sees the harm: r3's hit reads r2's own block (k4)."""
    result = check("vllm_block_pool", skip=[INDEX])
    v = result.violation
    assert v.property == "stale-read"
    assert v.step == 6
    assert "holding KV of key k4, not for key k1 (what r3 expects): a cross-request leak" in v.message
    assert result.trace.steps[5].label() == "schedule(r=r3, c=1)"


def test_dropping_the_hash_on_eviction_is_verified_and_not_vacuous():
    """With #4764's fix every reachable state is safe; a hit, an eviction and completion happen."""
    result = check("vllm_block_pool", fixes=["evict-drops-hash"])
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 157
    assert result.sometimes == {"a-prefix-hit": True, "an-eviction": True, "every-request-completes": True}


def test_the_fix_holds_with_a_third_block():
    """blocks=3 lets two requests run at once: still verified (445 states)."""
    result = check("vllm_block_pool", fixes=["evict-drops-hash"], params={"blocks": 3})
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 445


def test_liveness_holds_once_the_index_forgets_evicted_blocks():
    """docs/specs/vllm_block_pool.md, "Liveness" (the kernel's, switched on with --liveness)."""
    live = ("eventually-released", "eventually-landed")
    fixed = check("vllm_block_pool", fixes=["evict-drops-hash"], liveness=live)
    assert fixed.verdict is Verdict.VERIFIED and fixed.coverage.states == 157
    assert fixed.liveness == {n: "holds on every behaviour" for n in live}
    bounded = check("vllm_block_pool", fixes=["evict-drops-hash"], liveness=live, engine="bmc")
    assert set(bounded.liveness.values()) == {"holds on every behaviour (none has more than 6 steps before it stops)"}
    broken = check("vllm_block_pool", liveness=live)
    assert broken.verdict is Verdict.VIOLATED and broken.violation.property == INDEX
    assert set(broken.liveness.values()) == {"not checked: the search stopped at a safety violation"}
