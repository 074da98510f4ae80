"""The concrete interpreter at real pool sizes (issue 14, target 3; docs/adr/0007).

The kernel's operations have a fast path in the concrete interpreter
(ownership/interpret/concrete_kernel.py) beside their generic definition in the spec language
(ownership/kernel.py), and the concrete state is stored in chunks with free-list chains, page
groups and a running hash (ownership/interpret/store.py). The concrete interpreter defines
what a spec means, so the fast path must compute exactly what the generic code computes:
here random sequences of kernel operations over pools of every kind run through both, and
every successor state, flag, returned value and spec error (message, file and line) is
compared, with the store's derived data (hash, groups) checked against the flat state.
Then fuzz's own shortcuts (NOTE(disabled-inherited) in ownership/engines/fuzz_explorer.py) are held
to stepping every binding, and a step at 4,096 pages to the calls of a step at 64.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ownership import Request, Spec, action, model_for, per_request, pool
from ownership.engines import fuzz, per_state
from ownership.errors import SpecError
from ownership.interpret.concrete import (
    Concrete,
    ConcreteState,
    Disabled,
    GenericConcreteState,
    flags_of,
)
from ownership.interpret.concrete_values import CInt, CPages
from ownership.interpret.store import (
    Packed,
    chain_of,
    chain_pop,
    chain_push,
    groups_of,
    list_flat,
    list_hash,
    pages_of,
)
from ownership.lang.model import Model
from ownership.lang.values import PageSet

# -- pools of every kind ------------------------------------------------------------------------

#: pool(...) keywords of each kind of pool (lang/declare.py); "b" is a second pool of the same
#: kind, so that transfers (send, land) stay between pools of one content
KINDS: dict[str, dict[str, Any]] = {
    "lowest": {},
    "warm": {"warm": True},
    "lifo": {"order": "lifo"},
    "warm-lifo": {"order": "lifo", "warm": True},
    "shared": {"shared": True},
    "counted": {"counted": 2},
    "owners": {"owners": ("cache",)},
    "pins": {"pins": True, "owners": ("cache",)},
    "counted-pins": {"counted": 2, "pins": True},
    "keyed": {"keys": 3},
    "keyed-shared": {"keys": 3, "shared": True, "warm": True},
}


def spec_of(kind: str, a_pages: int, b_pages: int, mixed: bool = False) -> type[Spec]:
    """A spec with pools a (of `kind`) and b (the same kind, or with `mixed` a plain pool)."""
    other = {} if mixed else KINDS[kind]

    class Pools(Spec):
        """Two pools and one action (the operations are called on the state directly)."""

        a = pool(a_pages, **KINDS[kind])
        b = pool(b_pages, **other)
        table = per_request(a)

        @action
        def nothing(self, s, r: Request):
            """Never enabled."""
            s.require(s.table[r] != s.table[r])

    Pools.__name__ = Pools.__qualname__ = f"Pools_{kind.replace('-', '_')}"
    return Pools


def model_of(kind: str, a_pages: int, b_pages: int, requests: int, mixed: bool = False) -> Model:
    return Model(spec_of(kind, a_pages, b_pages, mixed)(params={"requests": requests}))


# -- running one operation both ways --------------------------------------------------------------


def outcome(view: Any, op: str, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    """What one kernel call does on `view`: its value (class and integer), Disabled, or the
    error (class, message, file, line); the spec's line is this function's for both."""
    try:
        got = getattr(view, op)(*args, **kw)
    except Disabled:
        return ("disabled",)
    except SpecError as e:
        return ("error", e.message, e.file, e.line)
    if got is None:
        return ("value", None, None)
    return ("value", type(got).__name__, got.v if hasattr(got, "v") else int(got))


def check_store(view: ConcreteState) -> Packed:
    """The fast view's state packed, with its hash and groups checked against its flat tuple."""
    packed = view._packed()
    flat = packed.flat()
    assert hash(packed) == view._layout.hash_flat(flat)
    for name, groups in packed.groups.items():
        info = view.model.by_name[name]
        assert groups == groups_of(flat[info.offset:info.offset + info.length]), name
    assert Packed.of(view._layout, flat) == packed
    return packed


def wrap(v: int | None, concrete: bool) -> Any:
    return CInt(v) if concrete and v is not None else v


@st.composite
def pages_for(draw: Any, model: Model, flat: tuple[int, ...], pool_name: str, who: Any = None) -> Any:
    """A page set for an operation on `pool_name`, mostly pages the state makes interesting
    (those `who` holds, or pins: a second reference, a free under a pin)."""
    info = model.pools.get(pool_name)
    size = info.size if info is not None else 4
    holder = model.by_name.get(f"{pool_name}.holders") or model.by_name.get(f"{pool_name}.owner")
    values = list(flat[holder.offset:holder.offset + holder.length]) if holder is not None else []
    how = draw(st.sampled_from(["mine", "random", "free", "held", "few", "empty", "outside", "inflight", "pinned"]))
    if how in ("mine", "pinned") and info is not None:
        slot = model.by_name.get(f"{pool_name}.pins") if how == "pinned" else holder
        own = list(flat[slot.offset:slot.offset + slot.length]) if slot is not None else []
        if isinstance(who, str) and who in info.owners:
            field = (model.requests + info.owners.index(who)) * info.holders().bits
        elif not isinstance(who, str) and who is not None and 1 <= int(getattr(who, "v", who)) <= model.requests:
            field = (int(getattr(who, "v", who)) - 1) * (info.holders().bits if info.shared else 0)
        else:
            field = -1
        mine = (lambda v: v >> field & ((1 << info.holders().bits) - 1)) if info.shared else \
            (lambda v: v == getattr(who, "v", who))
        mask = sum(1 << p for p, v in enumerate(own) if field >= 0 and mine(v))
    elif how == "free":
        mask = sum(1 << p for p, v in enumerate(values) if v == 0)
        mask &= draw(st.integers(0, (1 << size) - 1))
    elif how == "held":
        mask = sum(1 << p for p, v in enumerate(values) if v != 0)
    elif how == "few":
        mask = sum(1 << p for p in draw(st.lists(st.integers(0, size - 1), max_size=4)))
    elif how == "empty":
        mask = 0
    elif how == "outside":
        mask = (1 << size) | draw(st.integers(0, (1 << size) - 1))
    elif how == "inflight":
        slot = model.by_name.get(f"{pool_name}.inflight")
        mask = sum(1 << p for p, v in enumerate(flat[slot.offset:slot.offset + slot.length]) if v) if slot else 0
    else:
        mask = draw(st.integers(0, (1 << size) - 1))
    form = draw(st.sampled_from(["cpages", "pageset", "zero"] if mask == 0 else ["cpages", "pageset"]))
    return 0 if form == "zero" else CPages(mask) if form == "cpages" else PageSet(mask)


@st.composite
def operation(draw: Any, model: Model, flat: tuple[int, ...]) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """One kernel call: an operation or a query with arguments, mostly valid ones."""
    n = model.requests
    name = draw(st.sampled_from(["a"] * 6 + ["b"] * 3 + ["nope"]))
    concrete = draw(st.booleans())
    # mostly valid arguments (Hypothesis favours the first of a sampled list): "odd" ones are
    # no holder, request or key, or a key where the pool has none
    odd = draw(st.sampled_from(["no"] * 12 + ["cache"] * 3 + ["holder", "request", "key"]))
    who: Any = wrap(draw(st.integers(1, n)), concrete) if odd in ("no", "request", "key") else \
        "cache" if odd == "cache" else draw(st.sampled_from(["stranger", 0, n + 1]))
    r = draw(st.sampled_from([0, n + 1, "cache"])) if odd == "request" else wrap(draw(st.integers(1, n)), concrete)
    info = model.pools.get(name)
    keys = info.keys if info is not None else None
    if keys is None:
        key = wrap(1, concrete) if odd == "key" else None
    else:
        key = wrap(draw(st.sampled_from([keys + 1, 0, None])), concrete) if odd == "key" else \
            wrap(draw(st.integers(1, keys)), concrete)
    pages = draw(pages_for(model, flat, name, who if draw(st.booleans()) else r))
    other = draw(st.sampled_from(["a", "b"]))
    op = draw(st.sampled_from(["alloc"] * 3 + ["free"] * 3 + ["write", "read", "send", "land"] * 2
                              + ["share"] * (3 if info is not None and info.shared else 1)
                              + ["pin", "unpin"] * (2 if info is not None and info.pins else 1)
                              + ["take", "reused", "owned", "free_pages", "holds", "references", "pinned_pages",
                                 "in_flight", "written"]))
    if op == "alloc":
        size = info.size if info is not None else 4
        want = draw(st.integers(-1, min(size, 5)) | st.integers(0, size))
        return op, (name, who, wrap(want, draw(st.booleans()))), {}
    if op in ("free", "take", "share", "pin", "unpin"):
        return op, (name, who, pages), {}
    if op in ("write", "read"):
        return op, (name, r, pages), {} if key is None else {"key": key}
    if op == "send":
        dst = draw(pages_for(model, flat, other))
        return op, (r, name, pages, other, dst), {}
    if op == "land":
        how = draw(st.sampled_from(["all", "all", "pool", "pool", "pages", "pages-no-pool"]))
        if how == "all":
            return op, (r,), {}
        if how == "pool":
            return op, (r, name), {}
        if how == "pages":
            return op, (r, name, pages), {}
        return op, (r,), {"pages": pages}
    if op in ("reused", "free_pages"):
        return op, (name,), {}
    if op in ("owned", "pinned_pages"):
        return op, (name, who), {}
    if op in ("holds", "references"):
        size = info.size if info is not None else 4
        return op, (name, draw(st.integers(0, size)), who), {}
    if op == "in_flight":
        return op, (r,), {}
    return op, (name,), {"r": r} if key is None else {"key": key}


class Both:
    """A fast and a generic view of one model, and the state both are at."""

    def __init__(self, model: Model) -> None:
        self.fast, self.generic = ConcreteState(model), GenericConcreteState(model)
        self.packed = Packed.of(self.fast._layout, model.initial).hashed()
        self.flat = model.initial

    def call(self, op: str, *args: Any, from_packed: bool = True, **kw: Any) -> tuple[Any, ...]:
        """One kernel call both ways, compared; on success both move to its successor."""
        fast, generic = self.fast, self.generic
        fast.reset(self.packed if from_packed else self.flat)
        generic.reset(self.flat)
        got, want = outcome(fast, op, args, kw), outcome(generic, op, args, kw)
        assert got == want, (op, args, kw)
        assert fast.flags == generic.flags, (op, args, kw)
        if got[0] == "value":  # (else an error or a failed guard: the step is discarded)
            after = generic._flat()
            assert fast._flat() == after, (op, args, kw)
            self.packed = check_store(fast)
            self.flat = after
        return got


def run_both(model: Model, data: Any, steps: int) -> None:
    """`steps` random kernel calls through the fast and the generic path, compared at each."""
    both = Both(model)
    for _ in range(steps):
        op, args, kw = data.draw(operation(model, both.flat), label="operation")
        both.call(op, *args, from_packed=bool(data.draw(st.integers(0, 3), label="from packed")), **kw)


def test_scripted_calls_reach_what_random_ones_rarely_do():
    """Counted references past their bound, a free under a pin, pins dropped twice, keys
    carried by a transfer, a LIFO list that lost track of its pages: both ways alike."""
    counted = Both(model_of("counted-pins", 6, 3, 2))
    got = counted.call("alloc", "a", 1, 2)
    assert got == ("value", "CPages", 0b11)
    counted.call("share", "a", 1, CPages(0b10))
    assert counted.call("share", "a", CInt(1), CPages(0b11))[0] == "error"  # page 1: a third reference
    counted.call("share", "a", 1, CPages(0b01))
    assert "page 0 more than 2 times" in counted.call("share", "a", 1, CPages(0b11))[1]  # the lowest first
    counted.call("pin", "a", 2, CPages(0b01))
    counted.call("pin", "a", 2, CPages(0b01))
    assert counted.call("pin", "a", 2, CPages(0b01))[0] == "error"  # a third pin
    counted.call("free", "a", 1, CPages(0b01))
    counted.call("free", "a", 1, CPages(0b01))  # the last reference under two pins: free-pinned
    assert [f.prop for f in counted.fast.flags] == ["free-pinned"]
    counted.call("unpin", "a", 2, CPages(0b111))  # page 1 and 2 pinned by nobody: count-below-zero
    assert [f.prop for f in counted.fast.flags] == ["count-below-zero"] * 2
    counted.call("free", "a", 2, CPages(0b100))  # nobody holds page 2: count-below-zero
    keyed = Both(model_of("keyed", 5, 4, 2))
    keyed.call("alloc", "a", 1, 3)
    keyed.call("write", "a", 1, CPages(0b111), key=2)
    keyed.call("write", "a", 1, CPages(0b010), key=CInt(3))
    keyed.call("alloc", "b", 2, CInt(4))
    keyed.call("send", CInt(1), "a", CPages(0b110), "b", CPages(0b1101))
    keyed.call("free", "a", 1, CPages(0b100))  # free-in-flight
    keyed.call("land", 1, "b", CPages(0b0001))
    keyed.call("land", 1, "b")  # write-unowned: r2 holds b's pages
    lifo = Both(model_of("warm-lifo", 4, 2, 2))
    lifo.call("alloc", "a", 1, 3)
    lifo.call("free", "a", 1, CPages(0b101))
    lifo.call("free", "a", 1, CPages(0b101))  # double-free: the list holds pages twice
    lifo.call("free", "a", 2, CPages(0b111))  # ... and loses its last entries
    assert lifo.call("alloc", "a", 2, 0) == ("value", "int", 0)  # (a Python 0, as the generic code)
    assert lifo.call("alloc", "a", 2, CInt(0)) == ("value", "CPages", 0)
    lifo.call("alloc", "a", 2, 4)  # (the list hands out fewer pages than the free ones)
    lifo.call("alloc", "a", 1, 1)
    assert lifo.call("alloc", "a", 1, 4) == ("disabled",)


SIZES = st.sampled_from([1, 2, 3, 5, 8, 63, 64, 65, 70, 300])


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data(), a_pages=SIZES, b_pages=st.sampled_from([1, 3, 9]), requests=st.integers(1, 3))
def test_the_fast_kernel_computes_what_the_generic_kernel_computes(kind, data, a_pages, b_pages, requests):
    """Random kernel calls on pools of every kind (up to 300 pages: several chunks, page sets
    beyond a machine word): the same values, flags, errors and successor states."""
    run_both(model_of(kind, a_pages, b_pages, requests), data, steps=20)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data(), kind=st.sampled_from(["lowest", "keyed", "shared", "lifo"]))
def test_a_transfer_between_pools_of_different_content_is_the_same_error(data, kind):
    """send between a pool of keys and a pool of requests' KV: the same refusal both ways."""
    run_both(model_of(kind, 4, 3, 2, mixed=True), data, steps=10)


@pytest.mark.parametrize("kind", ["lifo", "shared", "keyed"])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_the_fast_kernel_agrees_at_600_pages(kind, data):
    """A pool past the store's thresholds (its groups built with numpy, page sets read by bytes)."""
    run_both(model_of(kind, 600, 3, 2), data, steps=8)


# -- the store on its own ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, derandomize=True)
@given(size=st.integers(1, 40), moves=st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 45), max_size=6)),
                                                max_size=12))
def test_a_free_list_chain_is_the_list_it_stands_for(size, moves):
    """Pops and pushes on a chain against the same moves on a plain list (entries of any
    value, padding with `size`), hashes included."""
    model = model_of("lifo", size, 1, 1)
    layout = ConcreteState(model)._layout
    flat = list(range(size))
    chain = chain_of(flat, size)
    for pop, pages in moves:
        if pop:
            n = len(pages)
            taken, chain = chain_pop(chain, n)
            assert taken == flat[:len(taken)] and all(v == size for v in flat[len(taken):n])
            flat = flat[n:] + [size] * min(n, size)
        else:
            pages = [p % size for p in pages]
            chain = chain_push(chain, pages, size)
            flat = (pages + flat)[:size]
        assert list_flat(chain, size) == flat
        assert list_hash(chain, size, layout) == layout.hash_flat(flat)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(0, 2**700))
def test_the_pages_of_a_mask_are_its_set_bits(mask):
    assert pages_of(mask) == [p for p in range(mask.bit_length()) if mask >> p & 1]


def test_groups_are_each_values_pages_with_and_without_numpy():
    rng = random.Random(4)
    for n in (0, 5, 512, 513, 2000):
        values = [rng.randrange(4) for _ in range(n)]
        want: dict[int, int] = {}
        for p, v in enumerate(values):
            want[v] = want.get(v, 0) | 1 << p
        assert groups_of(values) == want


# -- fuzz's shortcuts ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, kw", [
    ("sglang_pd", {"params": {"decode_pool": 70, "requests": 3}, "fixes": ["door-retire"]}),
    ("vllm_block_pool", {}),
    ("vllm_nixl_pd", {}),
    ("vllm_nixl_load_failure", {"fixes": ["defer-failure-until-all-stopped"]}),
    ("sglang_disagg", {}),
])
def test_fuzz_knows_exactly_which_bindings_are_disabled_and_what_each_state_violates(spec, kw):
    """On random walks: the bindings a node knows to be disabled (inherited from its
    predecessor, NOTE(disabled-inherited)) are disabled, the state properties judged with what
    the predecessor's kept are state_flags', and every node's state is the one Concrete.step
    reaches from the initial state along its path."""
    model = model_for(spec, **kw)
    explorer = fuzz.Explorer(model)
    plain = Concrete(model, generic_kernel=True)
    rng = random.Random(spec)
    for _ in range(12):
        path: tuple[int, ...] = ()
        node, state = explorer.root, model.initial
        for _ in range(25):
            enabled = []
            for b, binding in enumerate(model.bindings):
                want = plain.step(state, binding)
                got = explorer.child(path, node, b)
                assert (got is None) == (want is None), binding.label()
                if got is not None:
                    assert want is not None
                    assert got.state == want.state and got.flags == want.flags
                    enabled.append((b, got, want.state))
            assert set(node.known_disabled()) == set(range(len(model.bindings))) - {e[0] for e in enabled}
            if not enabled:
                break
            b, node, state = rng.choice(enabled)
            path += (b,)
            flags = explorer.flags_at(node)
            if node.flags:  # (a step that violates: its flags, no state properties)
                break
            assert node.judged is not None and flags_of(node.judged) == flags
            assert flags == plain.state_flags(state)
            if flags:
                break


@pytest.mark.parametrize("spec, kw", [
    ("sglang_pd", {"params": {"decode_pool": 100, "requests": 4}}),
    ("sglang_pd", {"params": {"decode_pool": 70, "requests": 3}, "fixes": ["door-retire"]}),
    ("vllm_block_pool", {}),
])
def test_fuzz_with_the_generic_kernel_finds_the_same_runs(spec, kw):
    """The same seed, with the fast path and with the generic kernel: the same result."""
    model = model_for(spec, **kw)
    a = fuzz.check(model, runs=15, steps=30, seed=11, database=None)
    b = fuzz.check(model_for(spec, **kw), runs=15, steps=30, seed=11, database=None, generic_kernel=True)
    assert a.verdict is b.verdict and a.trace == b.trace
    assert (a.coverage.states, a.coverage.transitions, a.coverage.runs) == \
        (b.coverage.states, b.coverage.transitions, b.coverage.runs)
    assert a.seen == b.seen


def test_the_explicit_engine_counts_the_same_with_either_kernel():
    """The per-state engine on the incident spec with a LIFO decode pool of 8 pages."""
    model = model_for("sglang_pd", params={"decode_pool": 8}, fixes=["door-retire"])
    fast = per_state.check(model)
    generic_states = _explicit_generic(model)
    assert (fast.coverage.states, fast.coverage.transitions) == generic_states


def _explicit_generic(model: Model) -> tuple[int, int]:
    """States and transitions of a BFS with the generic kernel (no limits, no violation)."""
    interp = Concrete(model, generic_kernel=True)
    seen = {model.initial}
    queue = [model.initial]
    transitions = 0
    while queue:
        state = queue.pop()
        for binding in model.bindings:
            out = interp.step(state, binding)
            if out is None:
                continue
            transitions += 1
            if out.state not in seen:
                seen.add(out.state)
                queue.append(out.state)
    return len(seen), transitions


def calls_made(fn: Any) -> tuple[int, Any]:
    """How many Python and C function calls `fn()` makes, and what it returns."""
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        calls[0] += 1

    sys.setprofile(count)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return calls[0], out


def test_a_fuzz_step_at_4096_pages_makes_as_many_calls_as_at_64():
    """The cost of a step does not grow with the pool: the same runs at 4,096 pages make at most
    twice the Python and C function calls a step that they make at 64 (a loop over the pool's
    pages would make 64 times as many). Calls, not seconds: a count does not change when the
    machine is busy (issue 29; the time a step takes is measured by benchmarks/fuzz_scale.py)."""
    per_step = []
    for pages in (64, 4096):
        model = model_for("sglang_pd", params={"decode_pool": pages, "requests": 8}, fixes=["door-retire"])
        fuzz.check(model, runs=2, steps=20, seed=1, database=None)  # (first-use work out of the count)
        calls, result = calls_made(lambda m=model: fuzz.check(m, runs=10, steps=50, seed=1, database=None))
        assert result.coverage.transitions > 100
        per_step.append(calls / result.coverage.transitions)
    assert per_step[1] <= 2 * per_step[0], per_step
