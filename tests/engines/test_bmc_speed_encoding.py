"""bmc's cheaper encoding of values (NOTE(narrow-values), NOTE(narrow-counts) and
NOTE(unary-counts) in ownership/interpret/smt_terms.py) means what the concrete interpreter means,
at the edges: LIFO pools of 6, 62, 63 and 64 pages (a page set of 63 and 64 bits), empty sets,
`first` and `nth` with counts below 0 and past the set, `nth`'s default, `page` of a negative
number and of the pool's last page, `select` past its list, counts compared with constants on
both sides. From any in-domain state and any binding, the z3 step relation has exactly the
concrete successor as its only model (none when the action is disabled), and raises a spec
error exactly when the concrete interpreter does; and bmc and the explicit engine agree on
the small pool. Behaviour only: the speed is measured by benchmarks/bmc.py."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ownership.api import model_for
from ownership.engines import bmc, per_state
from ownership.errors import SpecError
from ownership.interpret.concrete import Concrete
from ownership.interpret.smt import encode

SPEC = '''
from ownership import (Request, Spec, action, count, first, has, ints, invariant, nth, page,
                       param, per_request, pool, select, state)


class PageOps(Spec):
    requests = param(2, "requests")
    kv = pool({pages}, order="lifo")
    table = per_request(kv, 0)
    got = state(kv, 0)
    low = state(ints(-1, {pages}), -1)
    far = state(ints(-1, {far}), -1)
    many = state(ints(0, {pages}), 0)
    pick = state(ints(-3, {wide}), 0)
    tests = state(ints(0, 63), 0)

    @action
    def take(self, s, r: Request, n: ints(0, 3)):
        s.require(s.table[r] == 0)
        s.table[r] = s.alloc("kv", r, n)

    @action
    def give(self, s, r: Request):
        s.require(s.table[r] != 0)
        s.free("kv", r, s.table[r])
        s.table[r] = 0

    @action
    def probe(self, s, r: Request, j: ints(-2, {past})):
        t = s.table[r]
        k = count(t)
        s.got = first(t, j) | (page(j) & t)
        s.low = nth(t, j)
        s.far = nth(t, 2, {far})
        s.many = k
        s.pick = select([k - 1, 2 - k, k + j, j - k], j - k, -3)
        s.tests = ((k > 1) + 2 * (2 < k) + 4 * (k == 0) + 8 * (1 != k) + 16 * (k <= j)
                   + 32 * has(t, j))

    @action
    def top(self, s, r: Request):
        s.require(has(s.table[r], {last}))
        s.low = nth(s.table[r], count(s.table[r]) - 1)

    @invariant
    def fine(self, s):
        """Never violated: the step relation is what is tested here."""
        return s.many >= 0
'''

SIZES = (6, 62, 63, 64)


@functools.cache
def _case(pages: int, tmp: str) -> tuple[Any, Any]:
    path = Path(tmp) / f"page_ops_{pages}.py"
    path.write_text(SPEC.format(pages=pages, far=pages + 5, past=pages + 1, last=pages - 1, wide=2 * pages + 1))
    model = model_for(str(path))
    return model, encode(model)


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: Any) -> str:
    return str(tmp_path_factory.mktemp("speed_encoding"))


def _page_set(data: Any, pages: int) -> int:
    """An in-domain page set, biased to the edges: empty, full, the last page, a few pages."""
    full = (1 << pages) - 1
    return data.draw(st.one_of(st.sampled_from([0, full, 1 << (pages - 1), full ^ 1, 1, 0b101 << (pages - 3)]),
                               st.integers(0, full)))


_EDGES = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


#: The sizes of the default run: each of 62, 63 and 64 pages takes about 20 s to encode, so
#: the default run takes the smallest; the long set takes all.
QUICK_SIZES = (6,)


@settings(max_examples=30, **_EDGES)
@given(st.sampled_from(QUICK_SIZES), st.data())
def test_the_step_relation_is_the_concrete_step_at_the_edges(spec_dir: str, pages: int, data: Any) -> None:
    """Any in-domain state, any binding: exactly the concrete successor, or no successor when
    the action is disabled or raises a spec error (and the error condition says which). 30
    draws at the smallest size here; 200 at every size in the long set (tests/README.md)."""
    _step_is_concrete(spec_dir, pages, data)


@pytest.mark.long
@settings(max_examples=200, **_EDGES)
@given(st.sampled_from(SIZES), st.data())
def test_the_step_relation_is_the_concrete_step_at_the_edges_200_draws(spec_dir: str, pages: int, data: Any) -> None:
    _step_is_concrete(spec_dir, pages, data)


def _step_is_concrete(spec_dir: str, pages: int, data: Any) -> None:
    import z3

    model, enc = _case(pages, spec_dir)
    state = []
    for s in enc.slot_of:
        if s.name in ("table", "got"):
            state.append(_page_set(data, pages))
        else:
            state.append(data.draw(st.integers(s.lo, s.hi)))
    state_t = tuple(state)
    b = data.draw(st.integers(0, len(model.bindings) - 1))
    binding = model.bindings[b]
    x = [z3.BoolVal(bool(v)) if enc.slot_of[i].is_bool else z3.BitVecVal(v, enc.W) for i, v in enumerate(state_t)]
    interp = Concrete(model)
    try:
        out = interp.step(state_t, binding)
        error = False
    except SpecError:
        out, error = None, True
    assert z3.is_true(z3.simplify(enc.at(enc.bindings[b].error, x))) == error
    solver = z3.SolverFor("QF_BV")
    solver.add(enc.equals(enc.x, state_t), enc.act == b, enc.trans)
    if error or out is None:
        assert solver.check() == z3.unsat
        return
    assert solver.check() == z3.sat
    assert enc.decode(solver.model(), enc.y) == out.state
    solver.add(z3.Not(enc.equals(enc.y, out.state)))
    assert solver.check() == z3.unsat


@pytest.mark.parametrize("pages", [p if p in QUICK_SIZES else pytest.param(p, marks=pytest.mark.long) for p in SIZES])
def test_the_unary_counts_are_used_where_they_apply(spec_dir: str, pages: int) -> None:
    """The encoding takes the unary path for the sets of these specs (a test of the test: the
    edges above go through NOTE(unary-counts), not around it)."""
    _, enc = _case(pages, spec_dir)
    assert enc._unary, "no page set got unary counts"


def test_bmc_and_the_explicit_engine_agree_on_a_small_lifo_pool(spec_dir: str) -> None:
    """The whole search on the 6-page pool, to 3 steps: no violation in either engine (the
    explicit engine's bounded search, and every execution bmc unrolls)."""
    model, _ = _case(6, spec_dir)
    ex = per_state.check(model, max_depth=3)
    sy = bmc.check(model, max_depth=3)
    assert ex.trace is None and sy.trace is None
    assert sy.verdict.word == "bounded" and sy.coverage.bound_depth == 3
