"""The concrete interpreter: runs actions on one state of Python integers.

Used by the explicit engine, by replay, and to explain a violation found by any engine.
Values are small wrappers (CInt, CBool) rather than bare ints so that `~` is logical
negation of a condition and Python control flow on state is refused even here (see
NOTE(no-python-control-flow) in ownership.lang.values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import OwnershipError, SpecError
from ..kernel import KernelOperations
from ..lang import sorts
from ..lang.failure import in_context, spec_failure
from ..lang.model import Binding, Model, SlotInfo
from ..lang.sorts import BOOL, PAGES
from ..lang.state import ArrayView, StateView
from .concrete_kernel import FastKernel
from .concrete_values import CBool, CInt, CPages, CVal, _fault, _v
from .store import (
    CHUNK,
    CHUNK_BITS,
    LOW,
    MODULUS,
    Chain,
    Key,
    Layout,
    Packed,
    chain_of,
    chain_pop,
    chain_push,
    flatten,
    groups_of,
    list_flat,
    list_hash,
    pages_of,
)


class Disabled(Exception):
    """Raised inside an action when a guard fails: the action is not enabled here."""


@dataclass(frozen=True)
class Flag:
    """One kernel or spec property violated on one page (or, for invariants, in a state)."""

    prop: str
    pool: str | None = None
    page: int | None = None
    request: int | None = None
    other: int | None = None
    expected: int | None = None
    text: str | None = None     # what a crash says (s.crash)


class ConcreteStore(StateView):
    """A StateView over a stored state (ownership.interpret.store): reused across actions to
    spare allocations, reset to a flat tuple or a Packed state, and read back as either.

    Every read is logged in `_reads`: a position; for the pages of a page slot that hold one
    value, (slot, value); for a query of a whole page slot or a free list, its name. So is
    every write that changes a value, in `_writes`: its position, and for a page slot its
    name and (slot, value) for the value it left and the one it took. (Its own attributes
    start with `_`, which no slot's name does: they can never hide a slot.) A step is a function
    of what it reads, so fuzz keeps a binding known to be disabled in a state disabled in a
    successor that wrote nothing it read, and a state property's verdict likewise
    (NOTE(disabled-inherited) in ownership/engines/fuzz_explorer.py)."""

    def __init__(self, model: Model) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "_layout", Layout(model))
        object.__setattr__(self, "flags", [])
        object.__setattr__(self, "_made_lists", [])    # the chunks made lists (in _cur.rows)
        object.__setattr__(self, "_lists", [])         # per free list, its Chain
        object.__setattr__(self, "_lists_flat", {})    # per free list read by the generic kernel: its values
        object.__setattr__(self, "_lists_dirty", set())  # ... and those it wrote
        object.__setattr__(self, "_own", set())        # the groups (in _cur.groups) this view may change in place
        object.__setattr__(self, "_slots_written", set())
        object.__setattr__(self, "_reads", [])
        object.__setattr__(self, "_writes", [])
        object.__setattr__(self, "_cur", _Current())
        object.__setattr__(self, "_pools_fast", {})
        #: per state position, the class of its values (CBool, CInt or CPages)
        kinds: list[type[CVal]] = [CInt] * model.width
        for info in model.slots:
            kind = {BOOL: CBool, PAGES: CPages}.get(info.sort, CInt)
            for k in range(info.length):
                kinds[info.offset + k] = kind
        object.__setattr__(self, "_kinds", kinds)

    # -- the stored state ------------------------------------------------------------------------

    def reset(self, state: tuple[int, ...] | Packed) -> None:
        """Start from `state` (a flat tuple or a Packed state): no flags, no reads or writes."""
        cur = self._cur
        if isinstance(state, Packed):
            packed = state
        else:
            if state is not cur.flat or cur.packed_flat is None:  # (the explicit engine: one state, every binding)
                cur.flat, cur.packed_flat = state, Packed.of(self._layout, state)
            packed = cur.packed_flat
        cur.base = packed
        cur.h = packed._hash
        cur.rows = packed.chunks
        self._made_lists.clear()
        self._lists[:] = packed.lists
        self._lists_flat.clear()
        self._lists_dirty.clear()
        cur.groups, cur.groups_own = packed.groups, False
        self._own.clear()
        self._slots_written.clear()
        self._reads.clear()
        self._writes.clear()
        self.flags.clear()

    def _packed(self) -> Packed:
        """The current state as a Packed state (its hash kept when the start's was known)."""
        self._settle_lists()
        cur = self._cur
        rows = cur.rows
        for k in self._made_lists:
            rows[k] = tuple(rows[k])
        self._made_lists.clear()
        chunks = cur.rows = tuple(rows)
        return Packed(self._layout, chunks, tuple(self._lists), dict(cur.groups), cur.h)

    def _flat(self) -> tuple[int, ...]:
        """The current state as a flat tuple."""
        self._settle_lists()
        base = self._cur.base
        if not self._writes and base is not None:
            return base.flat()
        return flatten(self._layout, self._cur.rows, self._lists)

    def _settle_lists(self) -> None:
        """Free lists the generic kernel wrote, back into chains (and into the hash)."""
        for k in sorted(self._lists_dirty):
            info = self._layout.free_lists[k]
            self._set_list(k, chain_of(self._lists_flat[k], info.length))
        self._lists_dirty.clear()
        self._lists_flat.clear()

    def _set_list(self, k: int, chain: Chain | None) -> None:
        old = self._lists[k]
        if chain is old:
            return
        info = self._layout.free_lists[k]
        self._lists[k] = chain
        self._writes.append(info.name)
        h = self._cur.h
        if h is not None:
            layout = self._layout
            change = list_hash(chain, info.length, layout) - list_hash(old, info.length, layout)
            self._cur.h = (h + change * layout.power(info.offset)) % MODULUS

    # -- element access --------------------------------------------------------------------------

    def _get(self, i: int, info: SlotInfo) -> Any:
        self._reads.append(i)
        return self._kinds[i](self._cur.rows[i >> CHUNK_BITS][i & LOW])

    def _store(self, i: int, value: Any, info: SlotInfo) -> None:
        self._put(i, _v(value), info)

    def _put(self, i: int, v: int, info: SlotInfo) -> None:
        """Position i := v, keeping the hash and the slot's groups."""
        cur = self._cur
        old = cur.rows[i >> CHUNK_BITS][i & LOW]
        if old == v:
            return
        self._row(i >> CHUNK_BITS)[i & LOW] = v
        self._writes.append(i)
        if cur.h is not None:
            cur.h = (cur.h + (v - old) * self._layout.power(i)) % MODULUS
        if info.shape == "page":
            name = info.name
            self._writes.extend((name, (name, old), (name, v)))
            self._slots_written.add(name)
            g = self._own_group(name)
            if g is not None:
                bit = 1 << (i - info.offset)
                rest = g[old] ^ bit
                if rest:
                    g[old] = rest
                else:
                    del g[old]
                g[v] = g.get(v, 0) | bit

    def _row(self, k: int) -> list[int]:
        """Chunk k as this view's own list, to write (the chunk table too, at the first write)."""
        cur = self._cur
        rows = cur.rows
        if type(rows) is tuple:
            rows = cur.rows = list(rows)
        row = rows[k]
        if type(row) is not list:
            row = rows[k] = list(row)
            self._made_lists.append(k)
        return row  # type: ignore[no-any-return]

    def _own_groups(self) -> dict[str, dict[int, int]]:
        """The groups of every page slot, this view's own dict to change (not the start's)."""
        cur = self._cur
        if not cur.groups_own:
            cur.groups, cur.groups_own = dict(cur.groups), True
        return cur.groups  # type: ignore[no-any-return]

    def _own_group(self, name: str) -> dict[int, int] | None:
        """The groups of a page slot, to change in place (copied once from the start's), or
        None when they are not known."""
        g = self._cur.groups.get(name)
        if g is not None and name not in self._own:
            g = self._own_groups()[name] = dict(g)
            self._own.add(name)
        return g  # type: ignore[no-any-return]

    def _array(self, name: str) -> Any:
        info = self.model.by_name[name]
        if info.free_list:
            return FreeListView(self, info, self._layout.list_of[name])
        return ArrayView(self, info)

    # -- what the kernel's fast path reads and writes (ownership.interpret.concrete_kernel) -------

    def _value(self, info: SlotInfo, p: int) -> int:
        """Element p of a slot, as an int."""
        i = info.offset + p
        self._reads.append(i)
        return self._cur.rows[i >> CHUNK_BITS][i & LOW]  # type: ignore[no-any-return]

    def _pages_with(self, info: SlotInfo, v: int) -> int:
        """The pages of a page slot whose element is v."""
        self._reads.append((info.name, v))
        return self._known_groups(info).get(v, 0)

    def _group_of(self, info: SlotInfo) -> dict[int, int]:
        """A page slot's groups: each value's page set (not to be changed by the caller)."""
        self._reads.append(info.name)
        return self._known_groups(info)

    def _known_groups(self, info: SlotInfo) -> dict[int, int]:
        name = info.name
        cur = self._cur
        g = cur.groups.get(name)
        if g is None:
            g = groups_of(self._slice(info))
            base = cur.base
            if name not in self._slots_written and base is not None:
                base.groups[name] = g  # (the start's values: a cache its successors inherit)
                if cur.groups_own:
                    cur.groups[name] = g  # (shared with the start: copied before a change)
            else:
                self._own_groups()[name] = g
                self._own.add(name)
        return g  # type: ignore[no-any-return]

    def _slice(self, info: SlotInfo) -> list[int]:
        out: list[int] = []
        i, end = info.offset, info.offset + info.length
        rows = self._cur.rows
        while i < end:
            j = i & LOW
            take = min(CHUNK - j, end - i)
            out.extend(rows[i >> CHUNK_BITS][j:j + take])
            i += take
        return out

    def _fill(self, info: SlotInfo, mask: int, v: int) -> None:
        """Element p := v for every page p in `mask`."""
        g = self._cur.groups.get(info.name)
        if g is not None:
            mask &= ~g.get(v, 0)  # (pages that hold v already: unchanged)
        if mask:
            pages = pages_of(mask)
            self._write_pages(info, pages, [v] * len(pages))

    def _write_pages(self, info: SlotInfo, pages: list[int], values: list[int]) -> None:
        """Element pages[j] := values[j] of a page slot, keeping the hash and the groups."""
        offset, cur = info.offset, self._cur
        moved: dict[int, int] = {}  # old value -> pages that left it
        came: dict[int, int] = {}   # new value -> pages that took it
        for p, v in zip(pages, values):
            i = offset + p
            old = cur.rows[i >> CHUNK_BITS][i & LOW]
            if old == v:
                continue
            self._row(i >> CHUNK_BITS)[i & LOW] = v
            self._writes.append(i)
            if cur.h is not None:
                cur.h = (cur.h + (v - old) * self._layout.power(i)) % MODULUS
            bit = 1 << p
            moved[old] = moved.get(old, 0) | bit
            came[v] = came.get(v, 0) | bit
        if not came:
            return
        name = info.name
        self._writes.append(name)
        self._writes.extend((name, old) for old in moved)
        self._writes.extend((name, v) for v in came)
        self._slots_written.add(name)
        g = self._own_group(name)
        if g is not None:
            for old, m in moved.items():
                rest = g[old] & ~m
                if rest:
                    g[old] = rest
                else:
                    del g[old]
            for v, m in came.items():
                g[v] = g.get(v, 0) | m

    def _list_pop(self, info: SlotInfo, n: int) -> list[int]:
        """The first n entries of a free list, which leave it (fewer if it has fewer)."""
        k = self._list_index(info)
        taken, rest = chain_pop(self._lists[k], n)
        self._set_list(k, rest)
        return taken

    def _list_push(self, info: SlotInfo, pages: list[int]) -> None:
        """`pages` at the head of a free list (its last entries fall off beyond the pool's size)."""
        k = self._list_index(info)
        self._set_list(k, chain_push(self._lists[k], pages, info.length))

    def _list_index(self, info: SlotInfo) -> int:
        self._reads.append(info.name)
        self._settle_lists()
        return self._layout.list_of[info.name]

    def _pages_value(self, mask: int) -> Any:
        """A page set of the language (what the generic kernel returns)."""
        return CPages(mask)

    # -- the page-set helpers of StateView on known values (NOTE(members-loop) in lang/state.py) --

    def _members(self, pages: Any, size: int) -> Any:
        return pages_of(_v(pages) & ((1 << size) - 1))

    def _positions(self, name: str, value: Any) -> Any:
        return CPages(self._pages_with(self.model.by_name[name], _v(value)))

    def _bit_positions(self, name: str, bit: Any) -> Any:
        b = _v(bit)
        out = 0
        for x, mask in self._group_of(self.model.by_name[name]).items():
            if x & b:
                out |= mask
        return CPages(out)

    # -- the rest of what an interpreter supplies ------------------------------------------------

    def _index(self, i: Any) -> int | None:
        return _v(i)

    def require(self, cond: Any) -> None:
        sorts.condition(cond, "s.require(...)")
        if not _v(cond):
            raise Disabled

    def _flag(self, prop: str, cond: Any, *, pool: str | None, page: int | None, request: Any, other: Any,
              expected: Any = None, text: str | None = None) -> None:
        if _v(cond):
            self.flags.append(Flag(prop, pool, page, None if request is None else _v(request),
                                   None if other is None else _v(other),
                                   None if expected is None else _v(expected), text))

    def _check(self, kind: str, bad: Any, message: Any) -> None:
        if _v(bad):
            raise _fault(message())

    def _outside(self, v: Any, lo: int, hi: int | None) -> Any:
        x = _v(v)
        return x < lo or (hi is not None and x > hi)

    def _has_bits(self, v: Any, mask: int) -> Any:
        return _v(v) & mask != 0

    def _int(self, v: Any) -> int:
        return _v(v)


class _Current:
    """The scalars of a ConcreteStore (its attributes are the spec's slots)."""

    __slots__ = ("base", "h", "flat", "packed_flat", "rows", "groups", "groups_own")

    def __init__(self) -> None:
        self.rows: Any = ()            # the chunks: the start's tuple until a write, then a list
        self.groups: dict[str, dict[int, int]] = {}  # per page slot queried: value -> pages
        self.groups_own = False        # groups is this view's own dict (else the start's)
        self.base: Packed | None = None
        self.h: int | None = None
        self.flat: tuple[int, ...] | None = None
        self.packed_flat: Packed | None = None


class FreeListView:
    """A LIFO free list as the generic kernel reads and writes it: its flat values."""

    __slots__ = ("s", "info", "k")

    def __init__(self, s: ConcreteStore, info: SlotInfo, k: int) -> None:
        self.s = s
        self.info = info
        self.k = k

    def _values(self) -> list[int]:
        s = self.s
        s._reads.append(self.info.name)
        got = s._lists_flat.get(self.k)
        if got is None:
            got = s._lists_flat[self.k] = list_flat(s._lists[self.k], self.info.length)
        return got  # type: ignore[no-any-return]

    def __getitem__(self, j: int) -> Any:
        return CInt(self._values()[j])

    def __setitem__(self, j: int, value: Any) -> None:
        values = self._values()
        v = _v(value)
        if values[j] != v:
            values[j] = v
            self.s._lists_dirty.add(self.k)

    def __iter__(self) -> Any:
        return (CInt(v) for v in self._values())

    def __len__(self) -> int:
        return self.info.length


class ConcreteState(FastKernel, KernelOperations, ConcreteStore):
    """The concrete interpreter's state: kernel operations by their fast path
    (ownership.interpret.concrete_kernel, NOTE(one-semantics))."""


class GenericConcreteState(KernelOperations, ConcreteStore):
    """The same, with the kernel's generic definition (ownership.kernel) for every operation."""


@dataclass
class Outcome:
    """The result of one enabled action: the next state and any violations on the way."""

    state: tuple[int, ...]
    flags: list[Flag]


@dataclass(frozen=True)
class Judged:
    """One state property judged in one state: what it read and the flags it gave."""

    reads: frozenset[Key]
    flags: list[Flag]


def flags_of(judged: list[Judged]) -> list[Flag]:
    """The flags of a state's judged properties, in state_flags' order."""
    return [f for j in judged for f in j.flags]


@dataclass
class PackedStep:
    """A step from a Packed state (Concrete.step_packed): the next state and its flags, or
    None when the guard fails; `reads` and `writes` are what the step logged (ConcreteStore)."""

    state: Packed | None
    flags: list[Flag]
    reads: frozenset[Key]
    writes: frozenset[Key]


class Concrete:
    """Runs a Model's actions and properties on concrete states.

    `generic_kernel`: run the kernel's operations by their generic definition
    (ownership.kernel) instead of their fast path (ownership.interpret.concrete_kernel): the
    same meaning, at the cost of the pool's size per page (tests, and the baseline of
    benchmarks/fuzz_scale.py)."""

    def __init__(self, model: Model, *, generic_kernel: bool = False) -> None:
        self.model = model
        self.spec = model.spec
        self.view: ConcreteStore = (GenericConcreteState if generic_kernel else ConcreteState)(model)
        traced = getattr(model, "_traced", None)
        #: evaluate the sometimes properties in state_flags too: only when one can raise a spec
        #: error (unknown before tracing: then always)
        self._sometimes_errors = traced is None or traced.properties.sometimes_can_fail
        self._judges_: list[Any] | None = None

    def _run(self, fn: Any, doing: Any) -> Any:
        """Run spec code; a SpecError says what was being done (`doing`: a text, or a function
        giving it), any other exception of the spec's code becomes a SpecError at its line
        (ownership.lang.failure)."""
        try:
            return fn()
        except Disabled:
            raise
        except SpecError as e:
            raise in_context(e, doing if isinstance(doing, str) else doing()) from None
        except OwnershipError:
            raise
        except KeyboardInterrupt:
            raise
        except (Exception, SystemExit, GeneratorExit) as e:
            raise spec_failure(e, self.model.spec_cls.source_file(),
                               doing if isinstance(doing, str) else doing()) from None

    def _act(self, state: tuple[int, ...] | Packed, binding: Binding) -> bool:
        """Run `binding` from `state` in the view; False when its guard fails."""
        view = self.view
        view.reset(state)
        try:
            self._run(lambda: binding.action.fn(self.spec, view, *binding.args), lambda: f"in action {binding.label()}")
        except Disabled:
            return False
        return True

    def _flags(self) -> list[Flag]:
        skip = self.model.skip
        flags = self.view.flags
        return [f for f in flags if f.prop not in skip] if skip else list(flags)

    def step(self, state: tuple[int, ...], binding: Binding) -> Outcome | None:
        """The successor of `state` under `binding`, or None when its guard fails there.
        Raises SpecError where the concrete semantics makes the step an error."""
        if not self._act(state, binding):
            return None
        return Outcome(self.view._flat(), self._flags())

    def step_packed(self, state: Packed, binding: Binding) -> PackedStep:
        """`step` on a Packed state (see PackedStep)."""
        view = self.view
        if not self._act(state, binding):
            return PackedStep(None, [], frozenset(view._reads), frozenset())
        return PackedStep(view._packed(), self._flags(), frozenset(), frozenset(view._writes))

    def packed(self, state: tuple[int, ...]) -> Packed:
        """A flat state as a Packed state, with its hash and the groups of the kernel's page
        slots, which every state stepped from it inherits (for step_packed)."""
        out = Packed.of(self.view._layout, state).hashed()
        view = self.view
        view.reset(out)
        for info in self.model.slots:
            if info.kernel and info.shape == "page" and not info.free_list:
                view._known_groups(info)
        return out

    def state_flags(self, state: tuple[int, ...] | Packed) -> list[Flag]:
        """Violations of state properties: the spec's invariants and the kernel's leak.

        Every state property (the sometimes ones too) is evaluated, so that one that raises a
        spec error in this state raises it here, in every engine alike."""
        self.view.reset(state)
        out: list[Flag] = []
        for judge in self._judges():
            out.extend(judge())
        return out

    def judge(self, state: Packed, before: list[Judged] | None = None,
              writes: frozenset[Key] = frozenset()) -> list[Judged]:
        """`state_flags` one property at a time, with what each read: a property whose reads
        in a predecessor (`before`, judged there) miss the `writes` of the step from it keeps
        its verdict there (NOTE(disabled-inherited) in ownership/engines/fuzz_explorer.py). The flags
        are those of state_flags, in its order: `flags_of(judge(...))`."""
        view = self.view
        view.reset(state)
        out: list[Judged] = []
        for k, judge in enumerate(self._judges()):
            if before is not None and before[k].reads.isdisjoint(writes):
                out.append(before[k])
                continue
            start = len(view._reads)
            flags = judge()
            out.append(Judged(frozenset(view._reads[start:]), flags))
        if view._writes:  # (a property that writes the state: then nothing is kept)
            return self.judge(state) if before is not None else out
        return out

    def _judges(self) -> list[Any]:
        """The state properties in state_flags' order, each a function giving its flags in
        the view's current state."""
        judges = self._judges_
        if judges is None:
            judges = []
            for inv in self.model.invariants:
                judges.extend(self._invariant(inv, args) for args in self._each(inv))
            for prop in self.model.sometimes if self._sometimes_errors else ():
                judges.append(self._sometimes(prop))
            if self.model.checks_leak:
                judges.extend(self._leak(r) for r in range(1, self.model.requests + 1))
            self._judges_ = judges
        return judges

    def _invariant(self, inv: Any, args: tuple[int, ...]) -> Any:
        view, what = self.view, inv.what(args)

        def judge() -> list[Flag]:
            ok = self._run(lambda: view._property(inv.fn, what, *args), f"in {what}")
            if inv.name not in self.model.skip and not _v(ok):
                return [Flag(inv.name, request=args[0] if args else None)]
            return []
        return judge

    def _sometimes(self, prop: Any) -> Any:
        view, what = self.view, f"sometimes {prop.name}"

        def judge() -> list[Flag]:
            self._run(lambda: view._property(prop.fn, what), f"in {what}")
            return []
        return judge

    def _leak(self, r: int) -> Any:
        from .. import kernel

        view = self.view

        def judge() -> list[Flag]:
            got = self._run(lambda: kernel.leak(view, r), f"in finished(r=r{r})")
            if kernel.LEAK in self.model.skip:
                return []
            return [Flag(kernel.LEAK, pool, p, r, r) for pool, p, cond in got if _v(cond)]
        return judge

    def sometimes_hits(self, state: tuple[int, ...] | Packed, names: list[str]) -> list[str]:
        """Which of the named sometimes-properties hold in `state`."""
        view = self.view
        view.reset(state)
        by_name = {p.name: p for p in self.model.sometimes}
        out = []
        for n in names:
            what = f"sometimes {n}"
            if _v(self._run(lambda n=n, w=what: view._property(by_name[n].fn, w), f"in {what}")):
                out.append(n)
        return out

    def lemma_flags(self, state: tuple[int, ...] | Packed) -> list[Flag]:
        """The spec's lemmas (`@lemma`, used by `prove`) that fail in `state`."""
        view = self.view
        view.reset(state)
        out = []
        for p in self.model.spec_cls._properties.values():
            if p.kind == "lemma":
                for args in self._each(p):
                    what = p.what(args)
                    if not _v(self._run(lambda p=p, w=what, a=args: view._property(p.fn, w, *a), f"in {what}")):
                        out.append(Flag(p.name, request=args[0] if args else None))
        return out

    def _each(self, prop: Any) -> list[tuple[int, ...]]:
        """The arguments of a state property's instances: each request's, or none."""
        return [(r,) for r in range(1, self.model.requests + 1)] if prop.per_request else [()]
