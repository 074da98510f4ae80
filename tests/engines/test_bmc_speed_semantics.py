"""bmc's canonical order of steps (NOTE(canonical-order) in ownership/engines/bmc_order.py) changes
which executions the solver explores, never an answer: with it and without it, bmc gives the
same verdict, the same shortest length and property, the same sometimes-properties, and the
same depth where the unrolling ends, and each counterexample replays in the concrete semantics.
Behaviour only: the speed is measured by benchmarks/bmc.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from ownership.api import model_for
from ownership.engines import bmc, per_state
from ownership.interpret.concrete import Concrete
from ownership.interpret.smt import encode
from ownership.trace import replay

ZOO = (ROOT / "tests") / "specs_bmc"          # what only the symbolic engine needs
KERNEL_ZOO = (ROOT / "tests") / "specs"       # the seeded bugs every engine must catch


def _zoo(name: str) -> str:
    return str(ZOO / name if (ZOO / name).exists() else KERNEL_ZOO / name)


CASES = [
    ("sglang_pd", {}, []),
    ("sglang_pd", {"requests": 3}, []),
    ("sglang_pd", {"requests": 3, "decode_pool": 3}, ["door-retire"]),
    ("sglang_pd", {"requests": 2}, ["post-forward-retire"]),
    ("sglang_pd", {"requests": 1}, ["door-retire"]),
    (_zoo("stale_read.py"), {}, []),
    (_zoo("double_free.py"), {}, []),
    (_zoo("leak.py"), {}, []),
    (_zoo("prefix_cache.py"), {}, []),
    (_zoo("invariant.py"), {}, []),
    (_zoo("free_in_flight.py"), {}, []),
    (_zoo("cycle.py"), {}, []),
]


def _same(spec: str, params: dict[str, int], fixes: list[str], depth: int) -> None:
    model = model_for(spec, params=params, fixes=fixes)
    fast = bmc.check(model, max_depth=depth)
    every = bmc.check(model, max_depth=depth, canonical=False)
    assert fast.verdict is every.verdict
    assert fast.coverage.depth == every.coverage.depth
    assert fast.coverage.complete == every.coverage.complete
    assert fast.sometimes == every.sometimes
    if every.trace is not None:
        assert fast.trace is not None
        assert len(fast.trace.steps) == len(every.trace.steps)
        assert fast.violation.property == every.violation.property
        assert replay(fast.trace, model).outcome == "violated"


@pytest.mark.parametrize("spec, params, fixes", [
    pytest.param(*c, id=f"{Path(c[0]).stem}-{c[1]}-{c[2]}",
                 marks=[pytest.mark.long] if c[1] == {"requests": 3, "decode_pool": 3} else [])
    for c in CASES])
def test_the_canonical_order_gives_every_orders_answer(spec: str, params: dict[str, int], fixes: list[str]) -> None:
    """Shipped and seeded-bug specs, violated or not within the bound: the same answer."""
    _same(spec, params, fixes, depth=9)


def test_the_shortest_counterexample_is_the_explicit_engines_length_with_three_requests() -> None:
    """The incident with three interchangeable requests: the 6-step stale-read, as explicitly."""
    model = model_for("sglang_pd", params={"requests": 3})
    ex = per_state.check(model)
    sy = bmc.check(model, max_depth=8)
    assert ex.violation.property == sy.violation.property == "stale-read"
    assert len(ex.trace.steps) == len(sy.trace.steps) == 7


def test_commuting_bindings_commute_on_reachable_states() -> None:
    """Encoding.commuting, checked concretely: from every reachable state of a small instance,
    two bindings it calls commuting, both taken in either order, reach the same state, and one
    order can be taken exactly when the other can (NOTE(footprints))."""
    model = model_for("sglang_pd", params={"requests": 2, "decode_pool": 3}, fixes=["door-retire"])
    enc = encode(model)
    commuting = enc.commuting()
    assert any(commuting), "requests of sglang_pd have steps that commute"
    interp = Concrete(model)
    states = [model.initial]
    seen = {model.initial}
    for state in states:
        for b in model.bindings:
            out = interp.step(state, b)
            if out is not None and out.state not in seen:
                seen.add(out.state)
                states.append(out.state)

    def run(state: tuple[int, ...], a: int, b: int) -> tuple[int, ...] | None:
        first = interp.step(state, model.bindings[a])
        if first is None:
            return None
        second = interp.step(first.state, model.bindings[b])
        return None if second is None else second.state

    for state in states:
        for a, others in enumerate(commuting):
            for b in others:
                assert b != a and a in commuting[b]
                assert run(state, a, b) == run(state, b, a), (model.bindings[a].label(), model.bindings[b].label())


def test_a_spec_error_is_the_same_with_and_without_the_canonical_order() -> None:
    """A spec error found at some depth: the same error, at the same line, after as many steps."""
    from ownership.errors import SpecError

    model = model_for(_zoo("spec_error.py"))
    got = []
    for canonical in (True, False):
        with pytest.raises(SpecError) as err:
            bmc.check(model, max_depth=8, canonical=canonical)
        got.append((err.value.line, len(err.value.steps or [])))
    assert got[0] == got[1]
