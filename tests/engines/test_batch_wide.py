"""Wide page sets (NOTE(wide-pages)): pools of more than 62 pages in the batch engine.

A page set of such a pool is K limbs of 63 bits. The batch engine must give exactly what the
per-state engine (Python's integers) gives: verdict, counts, depth, sometimes and trace, and
the same spec error at the same step; the limb lowering of every page-set operation must
equal ownership.lang.values on big integers. Symmetry reduction (batch and native, whose C
canonical form is Canonicaliser's row for row) and the partitioned search (its partitions, a
checkpoint resumed, Ray) give on wide pools what the unreduced single-process search gives
(NOTE(wide-symmetry) in ownership.engines.symmetry).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import check_canonical_on_orbits

from ownership import SpecError, UsageError, model_for
from ownership.engines import batch, partitioned, per_state
from ownership.interpret.batch import (
    BatchModel,
    Layout,
    _compile,
    _Emitter,
)
from ownership.ir.graph import Graph, join_limbs, split_limbs
from ownership.ir.tracer import PAGES, Term
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
    ref = _outcome(lambda: per_state.check(model))
    assert got == ref
    return ref


PAGE_SPECS = [("specs_batch", "stale_read_lifo.py"), ("specs_batch", "read_unowned_table.py"),
              ("specs_batch", "invariant_budget.py"), ("specs", "stale_read.py")]


@pytest.mark.parametrize("pages", [64, 100, *(pytest.param(p, marks=pytest.mark.long) for p in (126, 127, 200))])
@pytest.mark.parametrize("folder, name", PAGE_SPECS, ids=[n for _, n in PAGE_SPECS])
def test_the_batch_engine_equals_the_per_state_engine_on_test_specs_with_wide_pools(folder, name, pages):
    """Each test spec with a `pages` parameter, without and with all its fixes, at 64..200 pages:
    the same verdict, counts, sometimes and trace (or the same spec error at the same step)."""
    path = _spec(folder, name)
    _agree(path, {"pages": pages})
    _agree(path, {"pages": pages}, list(model_for(path).spec_cls._fixes))


@pytest.mark.parametrize("decode_pool", [70, pytest.param(130, marks=pytest.mark.long)])
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


def test_pools_past_the_maximum_are_refused_by_name():
    """supports() refuses a pool over 1,024 pages, naming it (a UsageError, not a traceback);
    --symmetry and the partitioned search take wide pools (below)."""
    huge = model_for(_spec("specs", "stale_read.py"), params={"pages": 1100})
    assert "1100 pages" in batch.supports(huge)
    with pytest.raises(UsageError, match="1100 pages"):
        batch.check(huge)


def test_the_native_engine_equals_the_per_state_engine_on_a_wide_pool():
    """--native runs the same lowered graph: the same result on a 70-page pool."""
    from ownership.engines import native

    for fixes in ([], ["write-first"]):
        model = model_for(_spec("specs", "stale_read.py"), params={"pages": 70}, fixes=fixes)
        assert _outcome(lambda m=model: native.check(m)) == _outcome(lambda m=model: per_state.check(m))


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


# --------------------------------------------------------------------------- symmetry and partitions
# NOTE(wide-symmetry) in ownership/engines/symmetry.py: renaming requests moves a wide page set
# with all of its limbs; the partitioned search stores packed rows as the batch engine does.

LIFO = _spec("specs_batch", "stale_read_lifo.py")

#: (spec, params, fixes): the incident (violated without fixes, verified with door-retire) and
#: the warm LIFO pool spec, at 64 to 130 pages (2 and 3 limbs), 2 and 3 requests
WIDE_SYMMETRIC = [
    ("sglang_pd", {"decode_pool": 64, "requests": 2}, ()),
    ("sglang_pd", {"decode_pool": 70, "requests": 2}, ("door-retire",)),
    ("sglang_pd", {"decode_pool": 130, "requests": 3, "context": 2}, ("door-retire",)),
    (LIFO, {"pages": 64, "requests": 3}, ()),
    (LIFO, {"pages": 127, "requests": 3}, ("wait-for-landing",)),
]


def _ids(cases) -> list[str]:
    return [f"{Path(s).stem}-{'-'.join(f'{k}={v}' for k, v in p.items())}-{'+'.join(f) or 'no-fix'}"
            for s, p, f in cases]


def _first_quick(cases) -> list:
    """The cases as parameters: the first in the default run, the others in the long set
    (tests/README.md: the wide-pool profile)."""
    return [pytest.param(*case, id=name, marks=[] if i == 0 else [pytest.mark.long])
            for i, (case, name) in enumerate(zip(cases, _ids(cases)))]


def _replays(model, result) -> None:
    """A counterexample replays in the concrete interpreter, violating its property."""
    from ownership.trace import replay

    got = replay(result.trace, model)
    assert got.outcome == "violated" and got.violation.property == result.violation.property


def _counts(result) -> tuple:
    c = result.coverage
    return (result.verdict, c.states, c.transitions, c.depth, c.complete, c.stopped_by, c.states_before_symmetry,
            result.sometimes)


@pytest.mark.parametrize("spec, params, fixes", _first_quick(WIDE_SYMMETRIC))
def test_symmetry_on_wide_pools_keeps_the_verdict_and_stands_for_every_state(spec, params, fixes):
    """The reduced search gives the unreduced verdict; a complete run stands for exactly the
    unreduced states; a counterexample has the unreduced length and property and replays. For
    sglang_pd, whose reachable states do not depend on the decode pool's size past its use,
    the same model at 62 pages (one column a page set) gives the very same reduced figures."""
    model = model_for(spec, params=params, fixes=fixes)
    assert batch.wide_pools(model)
    plain = batch.check(model)
    reduced = batch.check(model, symmetry=True)
    assert reduced.verdict is plain.verdict
    assert reduced.coverage.states < plain.coverage.states
    if plain.violation is not None:
        assert reduced.violation.property == plain.violation.property
        assert reduced.violation.step == plain.violation.step
        assert len(reduced.trace.steps) == len(plain.trace.steps)
        _replays(model, reduced)
    else:
        assert reduced.coverage.states_before_symmetry == plain.coverage.states
        assert reduced.sometimes == plain.sometimes
    if spec == "sglang_pd":
        narrow = model_for(spec, params={**params, "decode_pool": 62}, fixes=fixes)
        assert not batch.wide_pools(narrow)
        assert _counts(batch.check(narrow, symmetry=True)) == _counts(reduced)


_UPPER_LIMB = """
from ownership import Request, Spec, action, count, has, invariant, page, param, per_request, pool


class UpperLimb(Spec):
    requests = param(2, "requests")
    pages = param(70, "pages")
    asymmetric = param(1, "1: r1 takes page 64 and r2 page 65, both in the second limb")

    kv = pool(pages)
    held = per_request(kv)

    @action
    def grab(self, s, r: Request):
        s.require(count(s.held[r]) == 0)
        s.held[r] = page(63 + r) if self.asymmetric else page(64)

    @invariant
    def nobody_holds_page_65(self, s):
        ok = True
        for r in range(1, self.requests + 1):
            ok = ok & ~has(s.held[r], 65)
        return ok
"""


def test_an_asymmetry_in_a_wide_page_sets_upper_limb_is_refused(tmp_path):
    """r1 and r2 write different pages of the second limb (limb 0 is empty for both): the
    check compares every limb of a write, so --symmetry is refused (comparing one column a
    position would call them alike, and the reduced search would miss r2's violation); the
    symmetric variant is reduced and stands for every state."""
    path = tmp_path / "upper_limb.py"
    path.write_text(_UPPER_LIMB)
    model = model_for(str(path))
    assert batch.check(model).verdict.name == "VIOLATED"
    with pytest.raises(UsageError, match=r"not interchangeable: action grab\(r=r1\) does not behave like grab"):
        batch.check(model, symmetry=True)
    from ownership.engines import native

    with pytest.raises(UsageError, match="not interchangeable"):
        native.check(model, symmetry=True)
    alike = model_for(str(path), params={"asymmetric": 0, "requests": 3})
    plain, reduced = batch.check(alike), batch.check(alike, symmetry=True)
    assert reduced.verdict is plain.verdict
    assert reduced.coverage.states_before_symmetry == plain.coverage.states > reduced.coverage.states


def test_bmc_renames_requests_of_wide_pools_only_where_every_limb_allows_it(tmp_path):
    """bmc keeps one renaming of the requests (NOTE(canonical-order)) where the symmetry check
    passes, which now reads every limb of a wide page set: not for r1 and r2 taking different
    pages of the second limb (it finds r2's violation at the explicit engine's depth), and for
    the symmetric variant, whose verdict is the one of every order and every naming."""
    from ownership.engines import bmc, per_state
    from ownership.engines.bmc_order import interchangeable as _interchangeable
    from ownership.interpret.smt import encode

    path = tmp_path / "upper_limb.py"
    path.write_text(_UPPER_LIMB)
    for params, symmetric in (({}, False), ({"asymmetric": 0, "requests": 3}, True)):
        model = model_for(str(path), params=params)
        assert batch.wide_pools(model)
        assert _interchangeable(encode(model, symbolic=()), symbolic=(), lemmas=False) is symmetric
        ref = per_state.check(model)
        for canonical in (True, False):
            got = bmc.check(model, max_depth=4, sometimes=False, canonical=canonical)
            if ref.violation is not None:
                assert (got.violation.property, len(got.trace.steps)) == (ref.violation.property, len(ref.trace.steps))
            else:
                assert got.verdict.word == "verified" and ref.verdict.word == "verified"


def _random_wide_rows(model, rng: random.Random, n: int) -> list[tuple[int, ...]]:
    """Rows of values in each position's domain (page sets with pages in every limb); every
    other row has its requests alike (each copies one of two templates and no page names
    them), so that signatures tie."""
    from ownership.lang.declare import RequestDomain

    def value(s):
        if s.sort == PAGES and s.hi.bit_length() > 63:
            return _random_set(rng, s.hi.bit_length()) & s.hi
        return rng.randint(s.lo, s.hi)

    rows = []
    for k in range(n):
        row = [value(s) for s in model.slots for _ in range(s.length)]
        if k % 2:
            pick = [rng.randrange(2) for _ in range(model.requests)]
            for s in model.slots:
                if s.shape == "request":
                    template = [value(s) for _ in range(2)]
                    for r in range(model.requests):
                        row[s.offset + r] = template[pick[r]]
                elif isinstance(s.domain, RequestDomain):
                    row[s.offset:s.offset + s.length] = [s.lo] * s.length
        rows.append(tuple(row))
    return rows


@pytest.mark.parametrize("spec, params", [("sglang_pd", {"decode_pool": 130, "requests": 3}),
                                          (LIFO, {"pages": 127, "requests": 3})], ids=["sglang_pd-130", "lifo-127"])
def test_the_canonical_form_of_a_wide_row_is_the_same_under_every_renaming(spec, params):
    """Random rows with page sets of 3 limbs, under every renaming of their requests: one
    representative per row, itself a renaming of the row (every limb moved with its request),
    the stabiliser the number of renamings that fix the row, and the reference search over
    every ordering that sorts the signatures (by_every_ordering) agrees."""
    from ownership.engines.symmetry import Canonicaliser, equivariance_problem

    model = model_for(spec, params=params)
    bm = BatchModel(model)
    assert bm.layout.wide and bm.graph.K == 3
    assert equivariance_problem(model, bm) is None
    canon = Canonicaliser(model, bm.layout)
    assert not canon.consecutive   # (the limbs of a per-request wide page set are not R columns in a row)
    rows = _random_wide_rows(model, random.Random(17), 60)
    fixed = check_canonical_on_orbits(model, bm, canon, rows)
    assert sum(f > 1 for f in fixed) > 5


#: the native engine's cases (each compiles a model of 64 pages once; the library is cached)
WIDE_NATIVE = [("sglang_pd", {"decode_pool": 64, "requests": 2}, ()),
               (LIFO, {"pages": 64, "requests": 3}, ("wait-for-landing",))]


@pytest.mark.parametrize("spec, params, fixes", WIDE_NATIVE, ids=_ids(WIDE_NATIVE))
def test_native_symmetry_on_wide_pools_finds_the_batch_engines_representatives(spec, params, fixes):
    """--native --symmetry on a wide pool: the batch engine's reduced states, transitions,
    depth, count before symmetry, sometimes and trace (the unreduced verdict, above)."""
    from ownership.engines import native

    model = model_for(spec, params=params, fixes=fixes)
    ref = batch.check(model, symmetry=True)
    got = native.check(model, symmetry=True)
    assert _counts(got) == _counts(ref) and got.coverage.bound_depth == ref.coverage.bound_depth
    assert got.trace == ref.trace
    plain = batch.check(model)
    assert ref.verdict is plain.verdict
    if plain.violation is None:
        assert ref.coverage.states_before_symmetry == plain.coverage.states
    else:
        _replays(model, got)


@pytest.mark.parametrize("spec, params, fixes", WIDE_NATIVE, ids=_ids(WIDE_NATIVE))
def test_the_c_canonical_form_of_wide_rows_is_the_symmetry_modules_row_for_row(spec, params, fixes):
    """Reachable states, random rows in each position's domain (requests alike in half of
    them) and all their renamings, canonicalised by the C code (_canon_source) and by
    Canonicaliser.canonicalise: the same rows, the same stabilisers."""
    import itertools

    from ownership.engines import native
    from ownership.engines.symmetry import apply_concrete
    from ownership.interpret import native as compiled
    from ownership.interpret.concrete import Concrete

    model = model_for(spec, params=params, fixes=fixes)
    bm = BatchModel(model, reachable=True)   # (the search's model: the same library as above)
    canon = native._canonicaliser(model, bm)
    nm = compiled.NativeModel(bm, canon)
    interp, seen = Concrete(model), [model.initial]
    for state in seen:
        for b in model.bindings:
            try:
                out = interp.step(state, b)
            except SpecError:
                continue
            if out is not None and not out.flags and out.state not in seen and len(seen) < 300:
                seen.append(out.state)
    perms = list(itertools.permutations(range(1, model.requests + 1)))
    rows = _random_wide_rows(model, random.Random(29), 100)
    words = bm.layout.pack_rows(seen + [apply_concrete(model, p, row) for row in rows for p in perms])
    want, want_stab = canon.canonicalise(words)
    got, got_stab = nm.canonicalise(words)
    assert np.array_equal(got, want)
    assert np.array_equal(got_stab, want_stab)
    assert len(set(map(tuple, want.T.tolist()))) < words.shape[1]


#: (spec, params, fixes) of the partitioned search
WIDE_PARTS = [("sglang_pd", {"decode_pool": 70, "requests": 2}, ("door-retire",)),
              ("sglang_pd", {"decode_pool": 64, "requests": 2}, ()),
              (LIFO, {"pages": 64, "requests": 3}, ())]


def _same_as_single(model, got, single) -> None:
    """The partitioned search's answer is the single-process engine's: every count when it
    verifies; the property, the length of the counterexample and its replay when it violates."""
    assert got.verdict is single.verdict
    if single.violation is None:
        assert _counts(got) == _counts(single)
    else:
        assert got.violation.property == single.violation.property
        assert len(got.trace.steps) == len(single.trace.steps)
        _replays(model, got)


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("spec, params, fixes", _first_quick(WIDE_PARTS))
def test_the_partitioned_search_on_wide_pools_answers_as_the_batch_engine(spec, params, fixes, symmetry):
    """Two partitions (the --workers 2 partitions, in this process) and one: the batch engine's
    answer; one partition discovers in the same order, so its counterexample is the same."""
    model = model_for(spec, params=params, fixes=fixes)
    single = batch.check(model, symmetry=symmetry)
    _same_as_single(model, partitioned.check(model, parts=2, symmetry=symmetry), single)
    one = partitioned.check(model, parts=1, symmetry=symmetry)
    _same_as_single(model, one, single)
    assert one.trace == single.trace


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("spec, params, fixes", _first_quick(WIDE_PARTS[:2]))
def test_a_checkpoint_of_a_wide_pool_resumes_to_the_batch_engines_result(spec, params, fixes, symmetry, tmp_path):
    """A checkpointed run stopped at depth 4, resumed: the uninterrupted batch engine's counts,
    or its very counterexample."""
    from ownership.engines.cluster import Recipe

    model = model_for(spec, params=params, fixes=fixes)
    recipe = Recipe.of(spec, model, symmetry=symmetry)
    where = str(tmp_path / "c")
    first = partitioned.check(model, recipe=recipe, checkpoint=where, max_depth=4, symmetry=symmetry)
    assert first.verdict.name == "BOUNDED"
    resumed = partitioned.check(model, recipe=recipe, resume=where, symmetry=symmetry)
    single = batch.check(model, symmetry=symmetry)
    _same_as_single(model, resumed, single)
    assert resumed.trace == single.trace


@pytest.mark.long
def test_symmetry_on_ray_with_two_workers_counts_the_batch_engines_states_on_a_wide_pool(ray_cluster, tmp_path):
    """--ray with 2 workers and --symmetry on a 70-page pool, with a checkpoint resumed on Ray:
    the states, transitions and count before symmetry of the single-process engine."""
    from ownership.engines.cluster import Recipe

    model = model_for("sglang_pd", params={"decode_pool": 70, "requests": 2}, fixes=("door-retire",))
    recipe = Recipe.of("sglang_pd", model, symmetry=True)
    single = batch.check(model, symmetry=True)
    where = str(tmp_path / "c")
    first = partitioned.check(model, recipe=recipe, ray=ray_cluster, parts=2, symmetry=True, checkpoint=where,
                              max_depth=6)
    assert first.verdict.name == "BOUNDED"
    resumed = partitioned.check(model, recipe=recipe, ray=ray_cluster, parts=2, symmetry=True, resume=where)
    _same_as_single(model, resumed, single)


_THREE_LIMBS = """
from ownership import Request, Spec, action, count, has, ints, invariant, page, param, per_request, pool, without


class ThreeLimbs(Spec):
    requests = param(3, "requests")
    pages = param(130, "pages")

    kv = pool(pages)
    held = per_request(kv)
    stage = per_request(ints(0, 2), 0)

    @action
    def grab(self, s, r: Request):
        s.require(s.stage[r] == 0)
        s.held[r] = page(64) | page(128)
        s.stage[r] = 1

    @action
    def swap(self, s, r: Request):
        s.require(s.stage[r] == 1)
        s.held[r] = without(s.held[r], page(128)) | page(2)
        s.stage[r] = 2

    @action
    def drop(self, s, r: Request):
        s.require(s.stage[r] == 2)
        s.held[r] = 0
        s.stage[r] = 0

    @invariant
    def page_128_and_page_2_never_together(self, s):
        ok = True
        for r in range(1, self.requests + 1):
            ok = ok & (count(s.held[r]) <= 2) & ~(has(s.held[r], 128) & has(s.held[r], 2))
        return ok
"""


def test_three_limbs_a_request_under_symmetry_native_and_batch_and_the_c_canonical_form(tmp_path):
    """A small spec of a 130-page pool (3 limbs, so a limb's columns are two apart), 3
    requests whose page sets hold pages in each limb: the reduced search stands for every
    state, the native engine finds the batch engine's representatives, and the C canonical
    form is Canonicaliser's on random rows (requests alike in half of them) and all their
    renamings."""
    import itertools

    from ownership.engines import native
    from ownership.engines.symmetry import apply_concrete
    from ownership.interpret import native as compiled

    path = tmp_path / "three_limbs.py"
    path.write_text(_THREE_LIMBS)
    model = model_for(str(path))
    bm = BatchModel(model, reachable=True)
    assert bm.graph.K == 3
    canon = native._canonicaliser(model, bm)
    assert not canon.complete and not canon.consecutive and set(np.diff(canon.groups, axis=1).ravel()) == {1, 2}
    plain, reduced = batch.check(model), batch.check(model, symmetry=True)
    assert plain.verdict.name == reduced.verdict.name == "VERIFIED"
    assert reduced.coverage.states_before_symmetry == plain.coverage.states == 27 > reduced.coverage.states == 10
    got = native.check(model, symmetry=True)
    assert _counts(got) == _counts(reduced)
    nm = compiled.NativeModel(bm, canon)
    perms = list(itertools.permutations(range(1, 4)))
    rows = _random_wide_rows(model, random.Random(31), 200)
    words = bm.layout.pack_rows([apply_concrete(model, p, row) for row in rows for p in perms])
    want, want_stab = canon.canonicalise(words)
    got_words, got_stab = nm.canonicalise(words)
    assert np.array_equal(got_words, want) and np.array_equal(got_stab, want_stab)
    assert (want_stab > 1).sum() > 50
