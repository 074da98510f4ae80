"""The one table of operations (ownership/ir/ops.py) against the tracer and every backend (issue 30, item 1).

- tracing tests/specs/semantics/every_operation.py gives every operation of the table, and
  neither the traced terms (z3's input) nor the batch graph (numpy's and C's) holds one that the
  table does not list;
- the table's meaning of each operation is the concrete interpreter's, errors included;
- each interval rule holds every value the operation takes on arguments in its intervals (a
  rule too narrow would be unsound in z3, numpy and C at once: NOTE(one-interval));
- from every combination of that spec's integers and page sets, each binding's step is the
  concrete one in the batch interpreter and in z3, and the searches of every engine reach the
  same states.
"""

from __future__ import annotations

import operator
import shutil
from typing import Any

import pytest
from conftest import ROOT
from differential.steps import batch_steps, z3_step
from hypothesis import given, settings
from hypothesis import strategies as st

from ownership.api import model_for
from ownership.engines import batch, bmc, partitioned
from ownership.errors import SpecError
from ownership.interpret.batch import BatchModel
from ownership.interpret.concrete_values import FALSE, TRUE, CInt, CPages
from ownership.ir import ops
from ownership.ir.tracer import Term, postorder, trace_model
from ownership.lang.values import PYTHON, bit_of
from ownership.result import Verdict

SPEC = str(ROOT / "tests" / "specs" / "semantics" / "every_operation.py")

#: What the graphs hold besides operations: a state variable and a constant.
LEAVES = {"var", "const"}


def _traced_ops(obj: Any, out: set[str], seen: set[int]) -> None:
    """Every operation name in the traced terms under obj (a TracedModel and what it holds)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Term):
        out.update(t.op for t in postorder([obj]))
    elif isinstance(obj, (list, tuple, set)):
        for x in obj:
            _traced_ops(x, out, seen)
    elif isinstance(obj, dict):
        for x in obj.values():
            _traced_ops(x, out, seen)
    elif hasattr(obj, "__dict__"):
        for x in vars(obj).values():
            _traced_ops(x, out, seen)


@pytest.fixture(scope="module")
def model() -> Any:
    return model_for(SPEC)


def test_tracing_the_spec_of_every_operation_gives_exactly_the_tables_operations(model: Any) -> None:
    traced: set[str] = set()
    _traced_ops(trace_model(model), traced, set())
    assert traced - LEAVES == set(ops.OPERATIONS), (
        f"the tracer made {sorted(traced - LEAVES - set(ops.OPERATIONS))} outside the table; the spec lacks"
        f" {sorted(set(ops.OPERATIONS) - traced)}")
    graph = {n.op for n in BatchModel(model).graph.nodes}
    assert graph - LEAVES <= set(ops.OPERATIONS), sorted(graph - LEAVES - set(ops.OPERATIONS))
    # (the batch graph lowers `not` and `select`; what it keeps, numpy and C compute)
    assert len(graph - LEAVES) >= len(ops.OPERATIONS) - 2


def test_every_operation_of_the_table_says_its_sorts_and_arity() -> None:
    for name, op in ops.OPERATIONS.items():
        assert op.name == name and "->" in op.sorts, name
        assert op.arity is None or op.arity >= 1, name


# -- meanings ---------------------------------------------------------------------------------

_INT_OPS = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "div": operator.floordiv, "mod": operator.mod, "shl": operator.lshift, "shr": operator.rshift,
}
_PAGE_OPS = {"bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor}
_BOOL_OPS = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}

small = st.integers(-(1 << 70), 1 << 70)
counts = st.integers(-3, 80)
masks = st.integers(0, (1 << 70) - 1)


def _concrete(f: Any) -> tuple[str, Any]:
    """("value", the plain value) or ("error", the kind of error raised)."""
    try:
        got = f()
    except (SpecError, ZeroDivisionError, ValueError) as e:
        return "error", type(e).__name__
    return "value", got.v if hasattr(got, "v") else got


def _table(op: str, values: list[Any], extra: tuple[Any, ...] = ()) -> tuple[str, Any]:
    try:
        return "value", int(ops.meaning(op, values, extra))
    except (ZeroDivisionError, ValueError) as e:
        return "error", type(e).__name__


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_INT_OPS)), small, st.one_of(small, counts))
def test_the_tables_meaning_of_an_integer_operation_is_the_concrete_interpreters(op: str, a: int, b: int) -> None:
    if op in ("shl",) and b > 200:
        b = b % 200  # (a shift by 2**70 is not a value anyone can write down)
    mine = _table(op, [a, b])
    theirs = _concrete(lambda: _INT_OPS[op](CInt(a), CInt(b)))
    if theirs[0] == "error":
        assert mine[0] == "error", (op, a, b, mine)  # (the concrete one raises a SpecError, the table Python's)
    else:
        assert mine == ("value", int(theirs[1])), (op, a, b)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_PAGE_OPS)), masks, masks)
def test_the_tables_meaning_of_a_page_set_operation_is_the_concrete_interpreters(op: str, a: int, b: int) -> None:
    assert _table(op, [a, b]) == ("value", _PAGE_OPS[op](CPages(a), CPages(b)).v)


@given(st.sampled_from(sorted(_BOOL_OPS)), st.booleans(), st.booleans())
def test_the_tables_meaning_of_a_logical_operation_is_the_concrete_interpreters(op: str, a: bool, b: bool) -> None:
    c = _BOOL_OPS[op](TRUE if a else FALSE, TRUE if b else FALSE)
    assert _table(op, [a, b]) == ("value", c.v)
    assert _table("not", [a]) == ("value", (~(TRUE if a else FALSE)).v)


@settings(max_examples=200, deadline=None)
@given(masks, st.integers(-3, 80), st.integers(-5, 5), small, st.booleans())
def test_the_tables_meaning_of_the_other_operations_is_the_concrete_interpreters(
        m: int, n: int, default: int, a: int, c: bool) -> None:
    assert _table("neg", [a]) == ("value", (-CInt(a)).v)
    assert _table("popcount", [m]) == ("value", PYTHON.popcount(m))
    assert _table("first", [m, n]) == ("value", int(PYTHON.first(m, n)))
    assert _table("nth", [m, n], (default,)) == ("value", PYTHON.nth(m, n, default))
    assert _table("bit", [n]) == ("value", bit_of(n))
    assert _table("ite", [c, m, a]) == ("value", m if c else a)
    assert _table("select", [m, a, n], (default,)) == ("value", [m, a][n] if 0 <= n < 2 else default)
    assert _table("compl", [m]) == ("value", ~m)


#: The operations test_the_tables_meaning_of_the_other_operations_... covers.
_OTHER_OPS = {"not", "neg", "popcount", "first", "nth", "bit", "ite", "select", "compl"}


def test_every_operation_has_its_meaning_tested():
    """A new row of the table gets a meaning test above (docs/CHANGING.md)."""
    tested = set(_INT_OPS) | set(_PAGE_OPS) | set(_BOOL_OPS) | _OTHER_OPS
    assert set(ops.OPERATIONS) == tested, sorted(set(ops.OPERATIONS) ^ tested)


# -- intervals --------------------------------------------------------------------------------


@st.composite
def _interval(draw: Any, values: Any) -> tuple[int, int]:
    a, b = draw(values), draw(values)
    return min(a, b), max(a, b)


def _inside(draw: Any, iv: tuple[int, int]) -> int:
    lo, hi = iv
    return draw(st.one_of(st.just(lo), st.just(hi), st.integers(lo, hi)))


def _values(bits: int) -> Any:
    """Integers small (where an operation's corner cases are) or of up to `bits` bits."""
    return st.one_of(st.integers(-20, 20), st.integers(-(1 << bits), 1 << bits))


_SAMPLES = {
    # op: (how to draw each argument's interval, how many)
    "bit": (st.integers(-4, 70), 1),
    "popcount": (_values(70), 1),
    "compl": (_values(70), 1),
    "neg": (_values(70), 1),
    "first": (_values(40), 2),
    "nth": (_values(40), 2),
    "shl": (_values(40), 2),
    "shr": (_values(40), 2),
    "ite": (_values(40), 3),
    "select": (_values(40), 3),
}

INTERVAL_OPS = sorted(set(ops.OPERATIONS) - {"and", "or", "xor", "not", "eq", "ne", "lt", "le", "gt", "ge"})


@pytest.mark.parametrize("op", INTERVAL_OPS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_interval_rule_holds_every_value_the_operation_takes(op: str, data: st.DataObject) -> None:
    """Arguments drawn inside drawn intervals (their ends often): the value lies in the rule's
    interval, unless the operation is a spec error there (the rule bounds the rest only)."""
    values, n = _SAMPLES.get(op, (_values(70), 2))
    ivs = [data.draw(_interval(values)) for _ in range(n)]
    if op in ("shl", "shr", "first", "nth"):
        ivs[1] = data.draw(_interval(st.integers(-3, 90)))
    if op == "ite":
        ivs[0] = (0, 1)
    if op == "select":
        ivs[-1] = data.draw(_interval(st.integers(-1, 3)))
    extra = (data.draw(st.integers(-5, 5)),) if ops.OPERATIONS[op].constants else ()
    rule = ops.interval(op, ivs, extra)
    args = [_inside(data.draw, iv) for iv in ivs]
    kind, got = _table(op, args, extra)
    if kind == "error":
        return
    assert rule[0] <= got <= rule[1], f"{op}{tuple(args)}{extra} = {got}, outside {rule} from {ivs}"


@given(st.sampled_from(["and", "or", "xor", "not", "eq", "ne", "lt", "le", "gt", "ge"]))
def test_a_condition_is_the_interval_0_to_1(op: str) -> None:
    assert ops.interval(op, [(-5, 5), (-5, 5)]) == ops.BOOL_INTERVAL


def test_an_interval_past_the_widest_value_is_too_wide_for_every_backend() -> None:
    assert ops.interval("shl", [(1, 1), (0, ops.MAX_BITS + 1)]) == ops.TOO_WIDE
    assert ops.interval("mul", [(1 << 3000, 1 << 3000), (1 << 3000, 1 << 3000)]) == ops.TOO_WIDE
    assert ops.interval("shl", [(0, 0), (0, 1 << 40)]) == (0, 0)  # (0 shifted is 0, whatever the count)


# -- the backends on every operation ------------------------------------------------------------


def _everywhere(model: Any) -> list[tuple[int, ...]]:
    """Every combination of x, y and the page set m, the result slots at their first values."""
    base = list(model.initial)
    out = []
    names = [s.name for s in model.slots]
    pos = {name: sum(s.length for s in model.slots[:i]) for i, name in enumerate(names)}
    for x in range(-2, 3):
        for y in range(-2, 3):
            for m in range(8):
                s = base.copy()
                s[pos["x"]], s[pos["y"]], s[pos["m"]] = x, y, m
                out.append(tuple(s))
    return out


def test_the_batch_step_of_every_operation_is_the_concrete_step_everywhere(model: Any) -> None:
    problems = batch_steps(model, _everywhere(model))
    assert not problems, "\n".join(problems[:10])


def test_the_z3_step_of_every_operation_is_the_concrete_step_everywhere(model: Any) -> None:
    import z3

    from ownership.interpret.smt import encode

    enc = encode(model)
    solver = z3.SolverFor("QF_BV")
    problems: list[str] = []
    states = _everywhere(model)
    for b in range(len(model.bindings)):
        for state in states[b % 8::8]:  # (every x and y for each binding; the page sets in turn)
            problems += z3_step(model, enc, solver, state, b)
    assert not problems, "\n".join(problems[:10])


def test_every_engine_reaches_the_same_states_through_every_operation(model: Any) -> None:
    """The batch engine's states, transitions and depth are those of the partitioned search and
    of the native engine (the per-state engine's verdict: tests/language/test_semantics.py)."""
    reference = batch.check(model)
    assert reference.verdict is Verdict.VERIFIED and reference.coverage.complete
    answers = {"partitioned": partitioned.check(model, parts=3)}
    if shutil.which("cc") or shutil.which("gcc"):
        from ownership.engines import native

        answers["native"] = native.check(model)
    counts = (reference.coverage.states, reference.coverage.transitions, reference.coverage.depth)
    for name, got in answers.items():
        assert got.verdict is Verdict.VERIFIED, name
        assert (got.coverage.states, got.coverage.transitions, got.coverage.depth) == counts, name
    bounded = bmc.check(model, max_depth=3)
    assert bounded.verdict is Verdict.BOUNDED and bounded.coverage.bound_depth == 3
