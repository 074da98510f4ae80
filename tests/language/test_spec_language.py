"""The spec language: values and operations, loading, and the errors a spec author sees."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, spec_path

from ownership import (
    If,
    Max,
    Min,
    Request,
    Spec,
    SpecError,
    UsageError,
    Verdict,
    action,
    count,
    first,
    ints,
    model_for,
    nth,
    page,
    per_request,
    pool,
    without,
)
from ownership.interpret.concrete_values import FALSE, TRUE, CInt, CPages
from ownership.ir.tracer import Term
from ownership.lang.loader import load_spec


def test_concrete_conditions_negate_logically():
    """`~` is logical not on conditions (a bare Python bool would give -2)."""
    assert (~TRUE).v == 0 and (~FALSE).v == 1
    assert ((CInt(3) == 3) & ~(CInt(2) == 3)).v == 1


def test_if_min_max_choose_concretely():
    """If, Min and Max on concrete values pick the right operand."""
    assert If(CInt(1) == 1, 5, 7).v == 5
    assert Min(CInt(4), 2).v == 2
    assert Max(CInt(4), 2).v == 4
    assert Min(CInt(1), 2).v == 1


def test_page_set_helpers_on_bitmasks():
    """first, nth, count, page, without on page sets as bitmasks."""
    m = CPages(0b10110)
    assert first(m, 2).v == 0b00110
    assert first(m, 9).v == 0b10110
    assert nth(m, 2).v == 4
    assert nth(m, 3, default=-1).v == -1
    assert count(m).v == 3
    assert page(CInt(5)).v == 32
    assert page(CInt(-1)).v == 0
    assert page(CInt(70)).v == 1 << 70
    assert without(m, CPages(0b00100)).v == 0b10010


def test_state_values_refuse_python_truthiness():
    """bool(), int indexing and hashing of a state value are spec errors, in every interpreter."""
    for value in (CInt(1), CInt(1) == 1, Term("var", (0,), "int")):
        with pytest.raises(SpecError):
            bool(value)
        with pytest.raises(SpecError):
            hash(value)
        with pytest.raises(SpecError):
            [1, 2][value]


def test_tilde_on_an_integer_is_an_error_that_suggests_without():
    """`~pages` is not a complement: the error points to without()."""
    with pytest.raises(SpecError, match="without"):
        ~CInt(3)


def test_a_spec_loads_by_path_by_shipped_name_and_by_class():
    """`specs/x.py`, `x` and `x.py:Class` all name a spec."""
    assert load_spec("specs/sglang_pd.py").__name__ == "SGLangPD"
    assert load_spec("sglang_pd").__name__ == "SGLangPD"
    assert load_spec("sglang_pd:SGLangPD").__name__ == "SGLangPD"
    with pytest.raises(UsageError, match="defines no spec class"):
        load_spec("sglang_pd:Nope")


@pytest.mark.parametrize(("spec", "line", "words"), [
    ("bad/python_if.py", 11, "Python `if`"),
    ("bad/python_and.py", 11, "Python `if`, `and`"),
    ("bad/unknown_slot.py", 11, "Did you mean 'stage'"),
    ("bad/no_domain.py", 9, "has no domain"),
    ("bad/syntax_error.py", 6, "syntax error"),
    ("bad/raises.py", 7, "ZeroDivisionError"),
    ("bad/index_a_page_set.py", 14, "indexing ([...]) on a state value: a page set has no Python length or members:"
                                    " count(pages) is its number of pages, has(pages, p) tests page p,"
                                    " nth(pages, i) is its i-th lowest page"),
    ("bad/invert_a_fix.py", 14, "`&` on a condition and the integer -1: that integer is what Python's ~ makes of a"
                                " Python bool (~False), computed before ownership sees it; on a parameter or a fix"
                                " write `not x`"),
])
def test_spec_errors_carry_file_line_and_a_fix(spec, line, words):
    """Each spec error names the spec file and line, and says what to do."""
    with pytest.raises(SpecError) as info:
        model_for(spec_path(spec))
    assert info.value.line == line
    assert info.value.file.endswith(spec)
    assert words in str(info.value)


def test_writing_outside_a_slots_domain_is_a_spec_error_naming_the_action():
    """The concrete interpreter refuses an out-of-domain write, naming element and action."""
    from ownership import check

    with pytest.raises(SpecError, match=r"in action bump\(r=r1\): count\[r1\] := 3"):
        check(spec_path("bad/out_of_domain.py"))


def test_unknown_parameters_and_fixes_suggest_close_matches():
    """A typo gets a suggestion and the list of valid names."""
    with pytest.raises(UsageError, match="Did you mean 'decode_pool'"):
        model_for("sglang_pd", params={"decode_pol": 3})
    with pytest.raises(UsageError, match="Did you mean 'door-retire'"):
        model_for("sglang_pd", fixes=["door_retier"])


def test_fixes_are_accepted_with_underscores_too():
    """--fix door_retire means door-retire."""
    assert model_for("sglang_pd", fixes=["door_retire"]).spec.fixes == ("door-retire",)


def test_large_pools_are_validated_at_default_parameters():
    """Loading at thousands of pages stays cheap: tracing happens at the defaults."""
    model = model_for("sglang_pd", params={"decode_pool": 4096})
    assert model.pools["decode"].size == 4096
    assert getattr(model, "_traced", None) is None


@pytest.mark.parametrize("name, line, hint", [
    ("iterate_pages.py", 10, "count(pages) is its number of pages, has(pages, p) tests page p"),
    ("state_index.py", 11, "Write select(values, i) for values[i] with a state index"),
    ("per_page_pool_name.py", 7, "the pool itself, not its name: per_page(kv, ...)"),
    ("unknown_pool.py", 10, "'decod' is not a pool of this spec. Did you mean 'decode'? Pools: decode"),
])
def test_a_newcomers_mistake_gets_the_fix_at_its_line(name, line, hint):
    """len()/iteration of a page set, a state value as an index, per_page given a pool's name,
    an unknown pool: each error names the spec's line and what to write instead (issue 17, 6)."""
    with pytest.raises(SpecError) as e:
        model_for(spec_path(f"bad/{name}"))
    assert e.value.line == line and hint in str(e.value)


def test_page_wise_fill_and_where_of_a_per_page_slot_agree_in_every_engine(tmp_path):
    """`s.pinned.fill(pages, True)` and `s.pinned.where(True)` replace a loop over pages; the
    per-state and batch engines count the same states and bmc agrees (issue 17, item 6)."""
    from ownership.engines import batch, bmc, per_state
    from ownership.result import Verdict

    spec = tmp_path / "pagewise.py"
    spec.write_text(
        "from ownership import Request, Spec, action, invariant, per_page, per_request, pool\n"
        "class PageWise(Spec):\n"
        "    requests = 1\n"
        "    kv = pool(3)\n"
        "    pinned = per_page(kv, bool, False)\n"
        "    table = per_request(kv)\n"
        "    @action\n"
        "    def go(self, s, r: Request):\n"
        "        s.require(s.table[r] == 0)\n"
        "        s.table[r] = s.alloc('kv', r, 2)\n"
        "        s.pinned.fill(s.table[r], True)\n"
        "    @invariant\n"
        "    def pinned_are_the_table(self, s):\n"
        "        return s.pinned.where(True) == s.table[1]\n")
    model = model_for(str(spec))
    ref = per_state.check(model)
    assert ref.verdict is Verdict.VERIFIED and ref.coverage.states == 2
    assert batch.check(model).coverage.states == 2
    assert bmc.check(model, max_depth=3).verdict is Verdict.VERIFIED


DERIVED = '''from ownership import Request, Spec, action, ints, invariant, param, per_request


class Derived(Spec):
    context = param(3, "the context window, in pages", minimum=1)
    capacity = param(context - 1, "prefill's capacity: one page below the context window", minimum={minimum})
    twice = param((capacity + 1) * 2, "computed from a derived one")
    n = per_request(ints(0, context))

    @action
    def go(self, s, r: Request, k: ints(1, context)):
        s.require(s.n[r] == 0)
        s.n[r] = k

    @invariant
    def fits(self, s):
        return s.n[1] <= self.capacity
'''


def test_a_derived_parameter_follows_the_parameters_it_is_computed_from_unless_it_is_given(tmp_path):
    from ownership import check, model_for

    path = tmp_path / "derived.py"
    path.write_text(DERIVED.format(minimum=0))
    m = model_for(str(path))
    assert (m.env["capacity"], m.env["twice"]) == (2, 6)
    assert model_for(str(path), params={"context": 5}).env == {"requests": 2, "context": 5, "capacity": 4, "twice": 10}
    assert model_for(str(path), params={"capacity": 7}).env["twice"] == 16  # given: the ones after it follow
    r = check(str(path))
    assert r.verdict.word == "violated" and r.violation.property == "fits"
    assert "capacity" not in r.reproduce  # at its derived default
    assert check(str(path), params={"capacity": 3}).verdict.word == "verified"
    listed = run_cli("list", str(path))
    assert "capacity = context - 1 (= 2)  prefill's capacity" in listed.out
    assert "twice = (capacity + 1) * 2 (= 6)" in listed.out
    doc = json.loads(run_cli("list", str(path), "--param", "context=4", "--json").out)
    capacity = next(p for p in doc["params"] if p["name"] == "capacity")
    assert capacity == {"name": "capacity", "default": 3, "value": 3, "minimum": 0, "derived": "context - 1",
                        "help": "prefill's capacity: one page below the context window"}


def test_a_derived_parameter_below_its_minimum_a_forward_reference_and_a_symbolic_source_are_refused(tmp_path):
    path = tmp_path / "derived.py"
    path.write_text(DERIVED.format(minimum=1))
    low = run_cli("check", str(path), "--param", "context=1")
    assert low.code == 2 and "parameter capacity = context - 1 is 0 at context=1, below its minimum 1" in low.err
    assert "--param capacity=N" in low.err
    symbolic = run_cli("check", str(path), "--engine", "bmc", "--symbolic", "context=1..4")
    assert symbolic.code == 2 and "parameter capacity is derived from it" in symbolic.err
    ahead = tmp_path / "ahead.py"
    ahead.write_text("from ownership import Spec, param\n\n\nclass Ahead(Spec):\n"
                     "    a = param(1, 'a')\n    b = param(a + 1, 'b')\n\n\nclass Later(Ahead):\n"
                     "    c = param(3, 'c')\n    a = param(c + 1, 'a, from c: declared after it')\n")
    r = run_cli("list", f"{ahead}:Later")
    assert r.code == 2 and "is computed from c, which is not a parameter declared before it" in r.err


def test_written_reads_the_kernels_content_the_same_in_every_engine(tmp_path):
    """s.written(pool, r): the pages holding r's KV; an invariant over it fails in the same
    step in the explicit, bmc and fuzz engines, and a keyed pool refuses it."""
    from ownership import check

    path = tmp_path / "written.py"
    path.write_text(
        "from ownership import Request, Spec, action, invariant, param, per_request, pool, without\n\n\n"
        "class W(Spec):\n    kv = pool(3, warm=True)\n    table = per_request(kv)\n\n"
        "    @action\n    def take(self, s, r: Request):\n        s.require(s.table[r] == 0)\n"
        "        s.table[r] = s.alloc('kv', r, 1)\n\n"
        "    @action\n    def fill(self, s, r: Request):\n        s.require(s.table[r] != 0)\n"
        "        s.write('kv', r, s.table[r])\n\n"
        "    @invariant\n    def mine(self, s):\n        return without(s.owned('kv', 1), s.written('kv', 1)) == 0\n")
    for engine in ("explicit", "bmc", "fuzz"):
        r = check(str(path), engine=engine, **({"runs": 20, "seed": 1} if engine == "fuzz" else {}))
        assert r.verdict.word == "violated" and r.violation.property == "mine" and r.violation.step == 1, engine
    keyed = tmp_path / "keyed.py"
    keyed.write_text(path.read_text().replace("pool(3, warm=True)", "pool(3, keys=2)").replace(
        "s.write('kv', r, s.table[r])", "s.write('kv', r, s.table[r], key=1)"))
    err = run_cli("check", str(keyed))
    assert err.code == 2 and "written(): pool kv holds keys, not requests' KV: ask for the pages of a key with" \
        " s.written('kv', key=k)" in err.err
    # in a keyed pool, the pages of a key: here key 1, in the pages r1 owns once written
    by_key = tmp_path / "by_key.py"
    by_key.write_text(keyed.read_text().replace("s.written('kv', 1)", "s.written('kv', key=1)"))
    for engine in ("explicit", "bmc"):
        r = check(str(by_key), engine=engine)
        assert r.verdict.word == "violated" and r.violation.property == "mine" and r.violation.step == 1, engine


# NOTE(kernel-namespace), issue 31 item 7: the names a slot may not take are frozen; the
# kernel's operations are also reached as s.kernel.<name>, and a later one only that way.

#: What the state `s` meant when the rule began: a new public name of the state or a new entry
#: of OPERATIONS fails this test. Add a later kernel operation to KERNEL_ONLY instead.
FROZEN_STATE_NAMES = {
    "alloc", "crash", "flags", "free", "free_pages", "holds", "in_flight", "land", "model", "owned", "pin",
    "pinned_pages", "read", "references", "require", "reused", "send", "share", "take", "traced", "unpin", "vals",
    "write", "written"}


def test_the_names_a_slot_may_not_take_are_frozen():
    from ownership.lang.spec import _state_names

    assert {n for n in _state_names() if not n.startswith("_")} == FROZEN_STATE_NAMES


class _Later(Spec):
    """A slot named like a kernel operation added after the names were frozen."""

    requests = 1
    kv = pool(1)
    later = per_request(ints(0, 1), 0)

    @action
    def go(self, s, r: Request):
        s.require(s.later[r] == 0)
        s.later[r] = s.kernel.later("kv")


def test_a_kernel_operation_added_later_leaves_a_slot_of_its_name_working(monkeypatch):
    """A later operation is reached as s.kernel.<name> only: the slot keeps s.<name>."""
    from ownership.engines import per_state
    from ownership.interpret.validate import build_model
    from ownership.kernel import KernelOperations
    from ownership.lang import properties

    monkeypatch.setattr(properties, "KERNEL_ONLY", ("later",))
    monkeypatch.setattr(KernelOperations, "_kernel_later", lambda s, pool: If(count(s.free_pages(pool)) > 0, 1, 0),
                        raising=False)
    result = per_state.check(build_model(_Later))
    assert result.verdict is Verdict.VERIFIED and result.coverage.states == 2


class _SlotNamedKernel(Spec):
    requests = 1
    kv = pool(1)
    kernel = per_request(ints(0, 1), 0)

    @action
    def go(self, s, r: Request):
        s.require(s.kernel[r] == 0)
        s.free("kv", r, s.alloc("kv", r, 1))
        s.kernel[r] = 1


def test_a_slot_named_kernel_keeps_its_name_and_a_wrong_operation_is_named():
    from ownership.engines import per_state
    from ownership.interpret.validate import build_model

    assert per_state.check(build_model(_SlotNamedKernel)).verdict is Verdict.VERIFIED

    class Typo(Spec):
        requests = 1
        kv = pool(1)

        @action
        def go(self, s, r: Request):
            s.kernel.aloc("kv", r, 1)

    with pytest.raises(SpecError, match=r"s.kernel.aloc: the kernel has no operation 'aloc'. Did you mean 'alloc'"):
        build_model(Typo)
