"""Wide page sets (NOTE(wide-pages)): pools of more than 62 pages in the batch engine.

A page set of such a pool is K limbs of 63 bits. The batch engine must give exactly what the
per-state engine (Python's integers) gives: verdict, counts, depth, sometimes and trace, and
the same spec error at the same step; the limb lowering of every page-set operation must
equal ownership.lang.values on big integers; what does not take wide pools yet refuses them
by name.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from ownership import SpecError, UsageError, model_for
from ownership.engines import batch, explicit, partitioned
from ownership.interpret.batch import (
    BatchModel,
    Graph,
    Layout,
    _compile,
    _Emitter,
    join_limbs,
    split_limbs,
)
from ownership.interpret.symbolic import PAGES, Term
from ownership.lang.values import PYTHON


def _spec(folder: str, name: str) -> str:
    return str(Path("tests") / folder / name)


def _outcome(fn):
    try:
        r = fn()
    except SpecError as e:
        return ("error", str(e), e.steps)
    c = r.coverage
    return (r.verdict, c.states, c.transitions, c.depth, c.bound_depth, c.stopped_by, r.sometimes, r.trace)


def _agree(path: str, params: dict, fixes=()) -> tuple:
    """The batch engine runs the model itself (no hand-over) and gives the per-state result."""
    model = model_for(path, params=params, fixes=fixes)
    assert batch.supports(model) is None
    assert BatchModel(model, reachable=True).unsupported is None
    got = _outcome(lambda: batch.check(model))
    ref = _outcome(lambda: explicit.check(model))
    assert got == ref
    return ref


PAGE_SPECS = [("specs_batch", "stale_read_lifo.py"), ("specs_batch", "read_unowned_table.py"),
              ("specs_batch", "invariant_budget.py"), ("specs", "stale_read.py")]


@pytest.mark.parametrize("pages", [64, 100, 126, 127, 200])
@pytest.mark.parametrize("folder, name", PAGE_SPECS, ids=[n for _, n in PAGE_SPECS])
def test_the_batch_engine_equals_the_per_state_engine_on_test_specs_with_wide_pools(folder, name, pages):
    """Each test spec with a `pages` parameter, without and with all its fixes, at 64..200 pages:
    the same verdict, counts, sometimes and trace (or the same spec error at the same step)."""
    path = _spec(folder, name)
    _agree(path, {"pages": pages})
    _agree(path, {"pages": pages}, list(model_for(path).spec_cls._fixes))


@pytest.mark.parametrize("decode_pool", [70, 130])
def test_the_shipped_incident_spec_with_a_wide_decode_pool_is_violated_and_fixed_as_per_state(decode_pool):
    """sglang_pd with a lowest-order decode pool of 70 and 130 pages: the incident's
    violation without fixes, a verification with door-retire, as the per-state engine finds."""
    ref = _agree("sglang_pd", {"decode_pool": decode_pool, "requests": 1})
    assert ref[0].name == "VIOLATED"
    ref = _agree("sglang_pd", {"decode_pool": decode_pool, "requests": 2}, ["door-retire"])
    assert ref[0].name == "VERIFIED"


@pytest.mark.parametrize("pages", [64, 127])
def test_a_lifo_pool_and_a_lowest_pool_past_63_pages_agree(pages):
    """stale_read_lifo has a warm LIFO pool (dst) and a lowest-order pool (src), both wide."""
    path = _spec("specs_batch", "stale_read_lifo.py")
    model = model_for(path, params={"pages": pages})
    assert {p.order for p in model.pools.values()} == {"lifo", "lowest"}
    _agree(path, {"pages": pages, "requests": 1}, ["wait-for-landing"])


@pytest.mark.parametrize("params", [{}, {"pages": 130, "requests": 2}, {"pages": 200}])
def test_first_nth_count_has_without_and_page_past_page_63_agree(params):
    """wide_pages.py takes pages 0..65, frees 60, takes more, reads its highest page; its
    invariant reads a page set past page 63 (violated without the fix, verified with it)."""
    path = _spec("specs_batch", "wide_pages.py")
    bug = _agree(path, params)
    assert bug[0].name == "VIOLATED" and bug[7].violation.property == "nothing-past-page-65"
    if "requests" not in params:
        assert _agree(path, params, ["small-second-grab"])[0].name == "VERIFIED"


def test_a_write_outside_the_domain_of_a_wide_page_set_is_the_concrete_spec_error():
    """With spill=1, `overflow` writes page 73 into a set of a 72-page pool: the same
    SpecError (message, steps) as the per-state engine, at the same step."""
    ref = _agree(_spec("specs_batch", "wide_pages.py"), {"spill": 1}, ["small-second-grab"])
    assert ref[0] == "error" and "outside its domain" in ref[1] and ref[2] == ["grab(r=r1)", "give_back(r=r1)",
                                                                                 "grow(r=r1)"]


def test_models_whose_pools_fit_62_pages_keep_one_column_a_position():
    """Nothing changes below 63 pages: K = 1 and the layout is the one of before."""
    model = model_for("sglang_pd")
    bm = BatchModel(model)
    assert bm.graph.K == 1 and bm.layout.columns == model.width and not bm.layout.wide
    assert (bm.layout.bits, bm.layout.words) == (104, 2)


def test_packed_rows_of_wide_states_unpack_to_the_same_python_integers():
    """Layout.pack_rows splits a wide page set into limbs; unpack_row joins them back."""
    model = model_for(_spec("specs_batch", "wide_pages.py"), params={"pages": 200})
    layout = Layout(model)
    rng = random.Random(3)
    states = []
    for _ in range(20):
        st = list(model.initial)
        for s in model.slots:
            for k in range(s.length):
                st[s.offset + k] = rng.randint(s.lo, s.hi)
        states.append(tuple(st))
    P = layout.pack_rows(states)
    assert [layout.unpack_row(P, j) for j in range(len(states))] == states


def test_pools_past_the_maximum_and_engines_without_wide_pools_refuse_by_name():
    """supports() refuses a pool over 1,024 pages; --symmetry and the partitioned search
    refuse a pool over 62 pages, naming it (a UsageError, not a traceback)."""
    huge = model_for(_spec("specs", "stale_read.py"), params={"pages": 1100})
    assert "1100 pages" in batch.supports(huge)
    with pytest.raises(UsageError, match="1100 pages"):
        batch.check(huge)
    wide = model_for(_spec("specs_batch", "stale_read_lifo.py"), params={"pages": 70})
    with pytest.raises(UsageError, match=r"--symmetry .*70 pages"):
        batch.check(wide, symmetry=True)
    with pytest.raises(UsageError, match=r"partitioned search .*70 pages"):
        partitioned.check(wide)


def test_the_native_engine_equals_the_per_state_engine_on_a_wide_pool():
    """--native runs the same lowered graph: the same result on a 70-page pool."""
    from ownership.engines import native

    for fixes in ([], ["write-first"]):
        model = model_for(_spec("specs", "stale_read.py"), params={"pages": 70}, fixes=fixes)
        assert _outcome(lambda m=model: native.check(m)) == _outcome(lambda m=model: explicit.check(m))


# --------------------------------------------------------------------------- the limb lowering


def _random_set(rng: random.Random, bits: int) -> int:
    kind = rng.randrange(4)
    if kind == 0:
        return 0
    if kind == 1:
        return (1 << bits) - 1
    if kind == 2:
        return sum(1 << p for p in rng.sample(range(bits), rng.randint(1, 4)))
    return rng.getrandbits(bits)


def _lowered_values(bits: int, build, cases: list[tuple[int, int, int]]) -> list:
    """Evaluate the lowering of `build(a, b, j)` (Terms over two page-set variables and an
    integer variable) with numpy on each case (a, b, j)."""
    model = model_for(_spec("specs_batch", "wide_pages.py"), params={"pages": bits, "requests": 2})
    held = model.by_name["held"]
    top = model.by_name["top"]
    a, b, j = (Term("var", (held.offset,), PAGES), Term("var", (held.offset + 1,), PAGES),
               Term("var", (top.offset,), "int"))
    g = Graph(model)
    t = build(a, b, j)
    em = _Emitter(g, gathered=False)
    if t.sort == PAGES:
        refs = [em.ref(n, as_int=True) for n in g.limbs(t)]
        out = "[" + ", ".join(f"np.broadcast_to({r}, (N,))" for r in refs) + "]"
    else:
        out = f"np.broadcast_to({em.ref(g.term(t), as_int=True)}, (N,))"
    assert g.too_wide is None, g.too_wide
    fn = _compile("def f(X):\n    N = X.shape[1]\n" + "\n".join(em.lines) + f"\n    return {out}\n", "f", em.tables)
    layout = Layout(model)
    rows = []
    for x, y, k in cases:
        st = list(model.initial)
        st[held.offset], st[held.offset + 1], st[top.offset] = x, y, k
        rows.append(layout.split(tuple(st)))
    X = np.array(rows, dtype=np.int64).T.copy()
    got = fn(X)
    if t.sort == PAGES:
        return [join_limbs([int(limb[i]) for limb in got]) for i in range(len(cases))]
    return [int(v) for v in got]


OPS = {
    "eq": (lambda a, b, j: a == b, lambda x, y, k: x == y),
    "ne": (lambda a, b, j: a != b, lambda x, y, k: x != y),
    "popcount": (lambda a, b, j: PYTHON_COUNT(a), lambda x, y, k: x.bit_count()),
    "nth": (lambda a, b, j: NTH(a, j), lambda x, y, k: PYTHON.nth(x, k, -1)),
    "first": (lambda a, b, j: FIRST(a, j), lambda x, y, k: int(PYTHON.first(x, k))),
    "bit": (lambda a, b, j: PAGE(j), lambda x, y, k: 1 << k if k >= 0 else 0),
    "has": (lambda a, b, j: HAS(a, j), lambda x, y, k: k >= 0 and bool(x >> k & 1)),
    "and": (lambda a, b, j: a & b, lambda x, y, k: x & y),
    "or": (lambda a, b, j: a | b, lambda x, y, k: x | y),
    "xor": (lambda a, b, j: a ^ b, lambda x, y, k: x ^ y),
    "without": (lambda a, b, j: WITHOUT(a, b), lambda x, y, k: x & ~y),
    "compl-eq": (lambda a, b, j: WITHOUT(a, b) == WITHOUT(b, a), lambda x, y, k: x & ~y == y & ~x),
}

from ownership.lang.values import count as PYTHON_COUNT  # noqa: E402
from ownership.lang.values import first as FIRST  # noqa: E402
from ownership.lang.values import has as HAS  # noqa: E402
from ownership.lang.values import nth as NTH  # noqa: E402
from ownership.lang.values import page as PAGE  # noqa: E402
from ownership.lang.values import without as WITHOUT  # noqa: E402


@pytest.mark.parametrize("bits", [64, 127, 200])
@pytest.mark.parametrize("op", sorted(OPS))
def test_the_limb_lowering_of_each_page_set_operation_equals_python_on_random_big_sets(op, bits):
    """Every operation of the language on page sets, lowered over limbs and run by numpy,
    equals ownership.lang.values on Python's integers (j also past the pool and negative)."""
    build, want = OPS[op]
    rng = random.Random(bits * 31 + len(op))
    top = 71 if bits > 71 else bits - 1   # (the `top` slot's domain: -1..71)
    cases = [(_random_set(rng, bits), _random_set(rng, bits), rng.randint(-1, top)) for _ in range(300)]
    cases += [(x, x, 0) for x, _, _ in cases[:20]]
    got = _lowered_values(bits, build, cases)
    assert got == [int(want(x, y, k)) for x, y, k in cases]


def test_split_and_join_of_limbs_are_exact_for_negative_integers():
    """The top limb carries the sign: split/join round-trips any integer, ~m included."""
    rng = random.Random(5)
    for _ in range(200):
        v = rng.getrandbits(200) * rng.choice([1, -1])
        for n in (2, 3, 4):
            if -(1 << (63 * n - 1)) <= v < 1 << (63 * n - 1):
                assert join_limbs(split_limbs(v, n)) == v
                assert join_limbs(split_limbs(~v, n)) == ~v
