"""The state `s` that actions read and write, common to every interpreter.

`s.stage[r]` reads a slot, `s.stage[r] = v` writes it, `s.require(cond)` guards the action,
and the kernel operations (`s.alloc`, `s.free`, `s.write`, `s.read`, `s.send`, `s.land`, `s.share`, `s.take`,
and the queries `s.owned`, `s.holds`, `s.free_pages`, `s.in_flight`, `s.reused`) act on the shadow page
state of ownership.kernel: they come from ownership.kernel.KernelOperations, which every
interpreter's state class adds (the language never imports the kernel). An interpreter subclasses StateView and supplies how values are
read, stored, guarded and judged (`_get`, `_store`, `_index`, `require`, `_flag`), and how a
state-dependent spec error is handled (`_check`: the concrete interpreter raises it, the
tracer records its condition; ownership.lang.faults).

Every write is checked here, once for every interpreter: the value's sort against the slot's
(ownership.lang.sorts), and its range against the slot's domain at every write, not only the
last one of an action (a state-dependent error: `_check("domain", ...)`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from . import faults, properties, sorts
from .declare import did_you_mean
from .location import spec_location
from .properties import OPERATIONS
from .sorts import BOOL, INT, PAGES, TYPE_SORT
from .values import If, page

if TYPE_CHECKING:
    from .model import Model, SlotInfo


class StateView:
    """Named access to one state under one interpreter, plus the kernel operations."""

    model: Model
    #: the property being evaluated ("invariant small"), or None in an action: a property
    #: reads the state and never writes it (`_set` refuses)
    _reading: str | None = None

    # -- what an interpreter supplies -------------------------------------------------------

    def _get(self, i: int, info: SlotInfo) -> Any:
        raise NotImplementedError

    def _store(self, i: int, value: Any, info: SlotInfo) -> None:
        """Store an already checked value at state position i."""
        raise NotImplementedError

    def _index(self, i: Any) -> int | None:
        """A concrete index as an int, or None if it is symbolic."""
        raise NotImplementedError

    def require(self, cond: Any) -> None:
        """Guard: the action is enabled only where `cond` holds."""
        raise NotImplementedError

    def _flag(self, prop: str, cond: Any, *, pool: str | None, page: int | None, request: Any, other: Any,
              expected: Any = None, text: str | None = None) -> None:
        """Record that kernel property `prop` is violated where `cond` holds; `other` is the
        page's owner or content found, `expected` the content the reader expected, `text`
        what a crash says (`crash`)."""
        raise NotImplementedError

    def crash(self, what: str, when: Any = True) -> None:
        """The engine's own code fails at this step, where `when` holds: an exception or an
        assertion of the real engine (`s.crash("KeyError in finished_sending")`). It violates
        the built-in property `crash`: the process dies, and every request on it. `what` is a
        fixed text, shown in the violation."""
        if not isinstance(what, str) or not what.strip():
            file, line = spec_location()
            raise SpecError(f"s.crash(what, when=...): what must be a text saying what fails, e.g."
                            f" s.crash(\"KeyError in finished_sending\"); got {what!r}", file=file, line=line)
        sorts.condition(when, "s.crash(..., when=...)")
        from .properties import CRASH

        self._flag(CRASH, when, pool=None, page=None, request=None, other=None, text=" ".join(what.split()))

    def _check(self, kind: str, bad: Any, message: Callable[[], str]) -> None:
        """A state-dependent spec error of `kind` (ownership.lang.faults) where `bad` holds:
        the concrete interpreter raises SpecError(message()), the tracer records `bad`."""
        raise NotImplementedError

    def _outside(self, v: Any, lo: int, hi: int | None) -> Any:
        """The condition `v < lo or v > hi` (no upper bound when hi is None) on the integer (or
        bitmask) representation of v."""
        raise NotImplementedError

    def _has_bits(self, v: Any, mask: int) -> Any:
        """The condition `v & mask != 0` on the bitmask representation of v."""
        raise NotImplementedError

    def _int(self, v: Any) -> int:
        """The integer of a value (the concrete interpreter only: for error messages)."""
        raise NotImplementedError

    # -- page-set helpers an interpreter may speed up (same values, fewer steps) ----------------

    def _members(self, pages: Any, size: int) -> Any:
        """The pages a kernel loop over `pages` must visit: every page of the pool here (a
        symbolic set has no known members); an interpreter whose sets are known visits theirs.

        NOTE(members-loop): a kernel loop written `for p in s._members(pages, size)` must do
        nothing for a page outside `pages` (its flags are conditioned on has(pages, p) and
        its writes keep the old value there), so that visiting fewer pages changes nothing."""
        return range(size)

    def _positions(self, name: str, value: Any) -> Any:
        """The page set of indices of array slot `name` whose element equals `value`."""
        arr = self._array(name)
        out: Any = 0
        for p in range(len(arr)):
            out = out | If(arr[p] == value, page(p), 0)
        return out

    def _bit_positions(self, name: str, bit: Any) -> Any:
        """The page set of indices of array slot `name` whose element has `bit` set."""
        arr = self._array(name)
        out: Any = 0
        for p in range(len(arr)):
            out = out | If((arr[p] & bit) != 0, page(p), 0)
        return out

    # -- slots ---------------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name == "kernel" and "kernel" not in self.model.by_name:  # NOTE(kernel-namespace)
            return KernelNamespace(self)
        info = self._info(name)
        if info.shape == "scalar":
            return self._get(info.offset, info)
        view = ArrayView(self, info)
        # an array slot's view holds no value: kept, Python finds it without this method next time
        object.__setattr__(self, name, view)
        return view

    def __setattr__(self, name: str, value: Any) -> None:
        info = self._info(name)
        if info.shape != "scalar":
            file, line = spec_location()
            raise SpecError(f"{name} is an array; assign one element, e.g. s.{name}[r] = ...", file=file, line=line)
        self._set(info.offset, value, info)

    def _set(self, i: int, value: Any, info: SlotInfo) -> None:
        """Write state position i: the sort and the domain are checked at every write of the
        spec (the kernel's own writes are in their domains by construction). A property
        writes nothing (NOTE(read-only-properties))."""
        if self._reading is not None:
            # NOTE(read-only-properties): a property is a condition on the state, as in TLA+ or
            # Quint. A write in one would be read back by the property itself (`s.x = 0; return
            # s.x < 3` held in every state) and, in an interpreter that evaluates the properties
            # of a state on one view, by the properties after it: refused, at load (the tracer
            # evaluates every property once), with the spec's line.
            file, line = spec_location()
            raise SpecError(f"{info.element(i - info.offset)} := ...: a property reads the state and does not"
                            " write it; compute the value in a local variable instead", file=file, line=line)
        if not info.kernel:
            if TYPE_SORT.get(type(value)) is not info.sort:
                sorts.expect(value, info.sort, f"{info.element(i - info.offset)} := ...")
            if info.sort is not BOOL:
                bad = self._outside(value, info.lo, info.hi)
                if bad is not False:
                    self._check("domain", bad,
                                lambda: faults.domain_message(info.element(i - info.offset), self._int(value),
                                                              info.lo, info.hi))
        self._store(i, value, info)

    def _array(self, name: str) -> ArrayView:
        """Any array slot by its full name, kernel slots included (for ownership.kernel)."""
        return ArrayView(self, self.model.by_name[name])

    def _info(self, name: str) -> SlotInfo:
        info = self.model.by_name.get(name)
        if info is None or info.kernel:
            file, line = spec_location()
            spec_slots = [s.name for s in self.model.slots if not s.kernel]
            raise SpecError(
                f"the state has no slot {name!r}." + did_you_mean(name, spec_slots)
                + f" Slots: {', '.join(spec_slots) or '(none)'}",
                file=file, line=line,
            )
        return info

    def _property(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        """The condition a property (an invariant, a sometimes, a lemma, `finished`) returns."""
        got = self._read_only(what, lambda: fn(self.model.spec, self, *args))
        code = getattr(fn, "__code__", None)
        file = code.co_filename if code else None
        line = code.co_firstlineno if code else None
        if got is None:
            raise SpecError("it returned None instead of a condition: did it forget `return`?",
                            file=file, line=line)
        try:
            sorts.condition(got, what)
        except SpecError as e:  # the value it returned is wrong: the property's own line says so
            raise SpecError(e.message, file=file or e.file, line=line if file else e.line) from None
        return got

    def _read_only(self, what: str, run: Callable[[], Any]) -> Any:
        """run(), in which the state may be read and not written (NOTE(read-only-properties))."""
        outer = self._reading
        object.__setattr__(self, "_reading", what)
        try:
            return run()
        finally:
            object.__setattr__(self, "_reading", outer)

    def _liveness(self, prop: Any, what: str, args: tuple[Any, ...]) -> tuple[Any, Any]:
        """The (p, q) conditions of a liveness property (`@eventually`: p is True; the engines
        take it in the initial state only)."""
        if prop.kind == "eventually":
            return True, self._property(prop.fn, what, *args)
        got = self._read_only(what, lambda: prop.fn(self.model.spec, self, *args))
        code = prop.fn.__code__
        if not (isinstance(got, tuple) and len(got) == 2):
            raise SpecError(f"leads_to property {prop.name} must return a pair (p, q): whenever p holds, q holds"
                            f" then or later; it returned {type(got).__name__}",
                            file=code.co_filename, line=code.co_firstlineno)
        for part, name in ((got[0], "p"), (got[1], "q")):
            try:
                sorts.condition(part, f"{what}, its {name}")
            except SpecError as e:  # the value it returned is wrong: the property's own line says so
                raise SpecError(e.message, file=code.co_filename, line=code.co_firstlineno) from None
        return got


class ArrayView:
    """One array slot of a state: index with a request (1..R) or a page (0..P-1)."""

    __slots__ = ("s", "info")

    def __init__(self, s: StateView, info: SlotInfo) -> None:
        self.s = s
        self.info = info

    def _pos(self, i: Any) -> int | None:
        """The state position of element i, or None when i is a symbolic index. An index out of
        range is a spec error: at once when it is known (a Python int or a concrete value)."""
        info = self.info
        if not info.kernel and TYPE_SORT.get(type(i)) is not INT:
            sorts.expect(i, INT, f"the index of {info.name}")
        k = self.s._index(i)
        if k is None:
            return None
        k -= info.base
        if not 0 <= k < info.length:
            file, line = spec_location()
            raise SpecError(faults.index_message(k + info.base, info.name, info.base, info.base + info.length - 1),
                            file=file, line=line)
        return info.offset + k

    def _symbolic_index(self, i: Any) -> None:
        """A state-dependent index: out of range is a spec error where it happens."""
        info = self.info
        lo, hi = info.base, info.base + info.length - 1
        self.s._check("index", self.s._outside(i, lo, hi),
                      lambda: faults.index_message(self.s._int(i), info.name, lo, hi))

    def __getitem__(self, i: Any) -> Any:
        pos = self._pos(i)
        if pos is not None:
            return self.s._get(pos, self.info)
        from .values import ops_of

        self._symbolic_index(i)
        values = list(self)
        return ops_of(i).select(values, i - self.info.base, self.info.lo, self.info.sort)

    def __setitem__(self, i: Any, value: Any) -> None:
        pos = self._pos(i)
        if pos is not None:
            self.s._set(pos, value, self.info)
            return
        self._symbolic_index(i)
        info = self.info
        for k in range(info.length):
            old = self.s._get(info.offset + k, info)
            self.s._set(info.offset + k, If(i == k + info.base, value, old), info)

    # -- page-wise operations of a per-page slot (no loop over pages in the spec) --------------

    def _per_page(self, what: str) -> None:
        if self.info.shape != "page":
            file, line = spec_location()
            raise SpecError(f"s.{self.info.name}.{what}: page-wise operations are for per_page slots"
                            " (indexed by the pages of a pool)", file=file, line=line)

    def fill(self, pages: Any, value: Any) -> None:
        """Element p := value for every page p in `pages`; the other elements keep theirs."""
        self._per_page("fill(pages, value)")
        sorts.expect(pages, PAGES, f"s.{self.info.name}.fill(pages, value), the pages")
        from .values import has

        for p in range(self.info.length):
            self[p] = If(has(pages, p), value, self[p])

    def where(self, value: Any) -> Any:
        """The page set of the pages whose element equals `value`."""
        self._per_page("where(value)")
        sorts.expect(value, self.info.sort, f"s.{self.info.name}.where(value)")
        return self.s._positions(self.info.name, value)

    def __iter__(self) -> Any:
        return (self.s._get(self.info.offset + k, self.info) for k in range(self.info.length))

    def __len__(self) -> int:
        return self.info.length


__all__ = ["ArrayView", "StateView"]


class KernelNamespace:
    """`s.kernel`: the kernel's operations in a name space of their own (`s.kernel.alloc(...)`,
    `s.kernel.pin(...)`), whatever the spec's slots are named.

    NOTE(kernel-namespace): a slot may not take the name of an operation the state `s` had
    when this rule began (ownership.lang.properties.OPERATIONS, frozen: a slot `pin` or
    `written` is refused with its line). A kernel operation added later is reached as
    `s.kernel.<name>` only, never as `s.<name>`, so no later operation can take a name a
    spec's slot already has (issue 31, item 7). A slot named `kernel` keeps its name: in that
    spec `s.kernel` is the slot, and the operations are reached as `s.<name>`."""

    __slots__ = ("_state",)

    def __init__(self, state: StateView) -> None:
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name: str) -> Any:
        if name in OPERATIONS:
            return getattr(self._state, name)
        if name in properties.KERNEL_ONLY:  # (a method of ownership.kernel.KernelOperations named _kernel_<name>)
            return getattr(self._state, f"_kernel_{name}")
        file, line = spec_location()
        every = (*OPERATIONS, *properties.KERNEL_ONLY)
        raise SpecError(f"s.kernel.{name}: the kernel has no operation {name!r}." + did_you_mean(name, every)
                        + f" Its operations: {', '.join(every)}", file=file, line=line)

    def __setattr__(self, name: str, value: Any) -> None:
        file, line = spec_location()
        raise SpecError(f"s.kernel.{name} = ...: the kernel's operations are called, not assigned; a slot is"
                        f" written as s.{name} = ...", file=file, line=line)
