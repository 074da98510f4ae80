"""Shared pools (several holders per page: a prefix-cache hit) and keyed content (a page holds
a prefix's KV, readable by every request with that prefix)."""

from __future__ import annotations

import pytest
from conftest import spec_path

from ownership import (
    Request,
    Spec,
    SpecError,
    Verdict,
    action,
    check,
    ints,
    model_for,
    page,
    per_request,
    pool,
)
from ownership.interpret.concrete import Concrete
from ownership.trace import build_trace


def test_an_index_that_outlives_an_eviction_leaks_another_prefixs_kv():
    """vLLM #4764 (V9): the stale index entry hands r3 a page now holding r2's prefix."""
    result = check(spec_path("prefix_cache.py"))
    assert result.verdict is Verdict.VIOLATED
    v = result.violation
    assert v.property == "stale-read"
    assert v.step == 5
    assert "holding KV of key k2, not for key k1 (what r3 expects)" in v.message
    holders = result.trace.steps[4].state["kv.holders"][0]
    assert holders == frozenset({"r2", "r3"})


def test_dropping_the_evicted_block_from_the_index_is_verified():
    """With the fix every reachable state is safe (25 states)."""
    result = check(spec_path("prefix_cache.py"), fixes=["drop-on-evict"])
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.states == 25


def _run(spec: str, labels: list[str]):
    model = model_for(spec_path(spec))
    run = Concrete(model)
    by_label = {b.label(): b for b in model.bindings}
    states, bindings, flags = [model.initial], [], []
    for label in labels:
        out = run.step(states[-1], by_label[label])
        assert out is not None, label
        states.append(out.state)
        bindings.append(by_label[label])
        flags = out.flags
    return build_trace(model, states, bindings, flags, engine="test")


def test_a_page_that_another_request_still_holds_is_not_allocated():
    """After r3's hit the only page is held, so r2's miss waits instead of evicting it."""
    trace = _run("prefix_cache.py", ["miss(r=r1)", "finish(r=r1)", "hit(r=r3)"])
    assert trace.violation is None
    model = model_for(spec_path("prefix_cache.py"))
    state = model.parse(trace.steps[-1].state)
    miss_r2 = next(b for b in model.bindings if b.label() == "miss(r=r2)")
    assert Concrete(model).step(state, miss_r2) is None


def test_a_request_that_never_held_a_shared_page_cannot_free_it():
    """Freeing a page of a shared pool that r does not hold is a double-free naming the holders."""
    trace = _run("prefix_cache.py", ["miss(r=r1)"])
    model = model_for(spec_path("prefix_cache.py"))
    view = Concrete(model).view
    view.reset(model.parse(trace.steps[-1].state))
    view.free("kv", 2, page(0))
    assert [(f.prop, f.other) for f in view.flags] == [("double-free", 0b1)]


class _NotShared(Spec):
    requests = 1
    kv = pool(1)
    table = per_request(kv)

    @action
    def hit(self, s, r: Request):
        s.share("kv", r, 1)


def test_share_on_a_pool_that_is_not_shared_is_a_spec_error():
    """share() names the pool and how to declare it shared."""
    from ownership.interpret.validate import build_model

    with pytest.raises(SpecError, match="shared=True"):
        build_model(_NotShared)


def test_a_shared_pool_cannot_use_the_lifo_free_list():
    """A shared pool's free order belongs in the spec's own state: the kernel refuses lifo."""
    with pytest.raises(SpecError, match="shared pool"):
        pool(2, shared=True, order="lifo")


class _DropsAnothersReference(Spec):
    """r2 frees the page that r1 and the cache hold: a reference it never had."""

    requests = 2
    gpu = pool(2, shared=True, counted=2, owners=("cache",))
    stage = per_request(ints(0, 2), 0)

    @action
    def hit(self, s, r: Request):
        s.require(s.stage[r] == 0)
        if r == 1:
            s.share("gpu", "cache", s.alloc("gpu", r, 1))
        s.stage[r] = 1

    @action
    def drop(self, s, r: Request):
        s.require(s.stage[r] == 1)
        s.free("gpu", r, s.owned("gpu", 1))
        s.stage[r] = 2


def test_a_reference_dropped_by_a_non_holder_says_whose_reference_a_real_count_loses():
    """Issue 31, item 4: in a shared pool, a double-free takes another holder's reference in a
    real counter (not "two owners")."""
    from ownership.engines import per_state
    from ownership.interpret.validate import build_model

    result = per_state.check(build_model(_DropsAnothersReference))
    assert result.violation.property == "double-free"
    assert result.violation.message.endswith(
        "request r2 freed gpu page 0 (held by r1, cache): a real reference count takes the reference from another"
        " holder (cache, r1), reaches zero early and frees the page while it is still in use.")
    assert "two owners" not in result.violation.message
