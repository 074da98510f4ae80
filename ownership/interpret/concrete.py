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
from ..lang import faults, sorts
from ..lang.failure import in_context, spec_failure
from ..lang.location import spec_location
from ..lang.model import Binding, Model, SlotInfo
from ..lang.sorts import BINARY, BOOL, INT, PAGES, TYPE_SORT
from ..lang.state import StateView
from ..lang.values import PYTHON, Ops, RefusesControlFlow, bit_of


def _v(x: Any) -> int:
    """The integer of a concrete value or Python constant."""
    t = type(x)
    if t is CInt or t is CBool or t is CPages:
        return x.v
    return int(x)


def _make(sort: str, v: int) -> Any:
    """A concrete value of a sort."""
    if sort is BOOL:
        return TRUE if v else FALSE
    if sort is PAGES:
        return CPages(v)
    return CInt(v)


def _fault(message: str) -> SpecError:
    file, line = spec_location()
    return SpecError(message, file=file, line=line)


class CVal(RefusesControlFlow):
    """A concrete value: its integer `v` and, from its class, its sort (ownership.lang.sorts).

    Every operator checks the sorts with the one table in ownership.lang.sorts, as the
    symbolic tracer's Term does, so both accept and refuse exactly the same operations."""

    __slots__ = ("v",)
    ops: Ops
    sort: str

    def __init__(self, v: int) -> None:
        self.v = v

    # Defining __eq__ below would otherwise set __hash__ to None (a plain TypeError).
    __hash__ = RefusesControlFlow.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.v})"

    def _op(self, op: str, o: Any, f: Any) -> Any:
        # the hot path of the per-state engine: the sort table looked up inline
        so = TYPE_SORT.get(type(o))
        got = BINARY[op].get((self.sort, so)) if so is not None else None
        if got is None:
            got = sorts.binary(op, self, o)
        v = f(self.v, o.v if isinstance(o, CVal) else int(o))
        if got is BOOL:
            return TRUE if v else FALSE
        return CInt(v) if got is INT else CPages(v)

    def _rop(self, op: str, o: Any, f: Any) -> Any:
        so = TYPE_SORT.get(type(o))
        got = BINARY[op].get((so, self.sort)) if so is not None else None
        if got is None:
            got = sorts.binary(op, o, self)
        v = f(int(o), self.v)
        if got is BOOL:
            return TRUE if v else FALSE
        return CInt(v) if got is INT else CPages(v)

    def __eq__(self, o: Any) -> Any: return self._op("eq", o, int.__eq__)  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return self._op("ne", o, int.__ne__)  # type: ignore[override]
    def __lt__(self, o: Any) -> Any: return self._op("lt", o, int.__lt__)
    def __le__(self, o: Any) -> Any: return self._op("le", o, int.__le__)
    def __gt__(self, o: Any) -> Any: return self._op("gt", o, int.__gt__)
    def __ge__(self, o: Any) -> Any: return self._op("ge", o, int.__ge__)

    def __add__(self, o: Any) -> Any: return self._op("add", o, int.__add__)
    def __radd__(self, o: Any) -> Any: return self._rop("add", o, int.__add__)
    def __sub__(self, o: Any) -> Any: return self._op("sub", o, int.__sub__)
    def __rsub__(self, o: Any) -> Any: return self._rop("sub", o, int.__sub__)
    def __mul__(self, o: Any) -> Any: return self._op("mul", o, int.__mul__)
    def __rmul__(self, o: Any) -> Any: return self._rop("mul", o, int.__mul__)
    def __floordiv__(self, o: Any) -> Any: return self._op("div", o, _floordiv)
    def __rfloordiv__(self, o: Any) -> Any: return self._rop("div", o, _floordiv)
    def __mod__(self, o: Any) -> Any: return self._op("mod", o, _mod)
    def __rmod__(self, o: Any) -> Any: return self._rop("mod", o, _mod)
    def __lshift__(self, o: Any) -> Any: return self._op("shl", o, _shl)
    def __rlshift__(self, o: Any) -> Any: return self._rop("shl", o, _shl)
    def __rshift__(self, o: Any) -> Any: return self._op("shr", o, _shr)
    def __rrshift__(self, o: Any) -> Any: return self._rop("shr", o, _shr)

    def __and__(self, o: Any) -> Any: return self._op("and", o, int.__and__)
    def __rand__(self, o: Any) -> Any: return self._rop("and", o, int.__and__)
    def __or__(self, o: Any) -> Any: return self._op("or", o, int.__or__)
    def __ror__(self, o: Any) -> Any: return self._rop("or", o, int.__or__)
    def __xor__(self, o: Any) -> Any: return self._op("xor", o, int.__xor__)
    def __rxor__(self, o: Any) -> Any: return self._rop("xor", o, int.__xor__)

    def __neg__(self) -> Any:
        if self.sort is not INT:
            raise sorts.refused("neg", self.sort)
        return CInt(-self.v)

    def __invert__(self) -> Any:
        if self.sort is not BOOL:
            raise sorts.refused("not", self.sort)
        return FALSE if self.v else TRUE


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise _fault(faults.division_message("//"))
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise _fault(faults.division_message("%"))
    return a % b


def _shl(a: int, b: int) -> int:
    if b < 0:
        raise _fault(faults.shift_message(b))
    return a << b


def _shr(a: int, b: int) -> int:
    if b < 0:
        raise _fault(faults.shift_message(b))
    return a >> b


class CInt(CVal):
    """A concrete integer."""

    __slots__ = ()
    sort = INT


class CBool(CVal):
    """A concrete condition (0 or 1). `&`, `|`, `^`, `~` are logical."""

    __slots__ = ()
    sort = BOOL


class CPages(CVal):
    """A concrete page set: a bitmask of page numbers. `&` `|` `^` are intersection, union and
    symmetric difference; `==` and `!=` compare sets (0 is the empty set)."""

    __slots__ = ()
    sort = PAGES


TRUE = CBool(1)
FALSE = CBool(0)


class ConcreteOps(Ops):
    """The spec language's operations on concrete values."""

    def If(self, c: Any, a: Any, b: Any, sort: str) -> Any:
        # a value of the language even when the branch chosen is a Python constant: the
        # tracer's ite is one too, so that ~(If(c, 1, 2) == 2) is logical in both
        return _make(sort, _v(a if _v(c) else b))

    def popcount(self, m: Any) -> Any:
        return CInt(_v(m).bit_count())

    def first(self, m: Any, n: Any) -> Any:
        return CPages(_v(PYTHON.first(_v(m), _v(n))))

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return CInt(PYTHON.nth(_v(m), _v(j), default))

    def bit(self, p: Any) -> Any:
        return CPages(bit_of(_v(p)))

    def select(self, values: list[Any], idx: Any, default: Any, sort: str) -> Any:
        i = _v(idx)
        return _make(sort, _v(values[i] if 0 <= i < len(values) else default))

    def complement(self, m: Any) -> Any:
        return CPages(~_v(m))


CONCRETE = ConcreteOps()
CVal.ops = CONCRETE


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


class ConcreteState(KernelOperations, StateView):
    """A StateView over a list of ints; reused across actions to spare allocations."""

    def __init__(self, model: Model) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "vals", list(model.initial))
        object.__setattr__(self, "flags", [])
        #: per array slot, its indices grouped by value (for _positions); dropped on any write
        object.__setattr__(self, "groups", {})
        #: per state position, the class of its values (CBool, CInt or CPages)
        kinds = [CInt] * model.width
        for info in model.slots:
            kind = {BOOL: CBool, PAGES: CPages}.get(info.sort, CInt)
            for k in range(info.length):
                kinds[info.offset + k] = kind
        object.__setattr__(self, "kinds", kinds)

    def reset(self, state: tuple[int, ...]) -> None:
        self.vals[:] = state
        self.flags.clear()
        self.groups.clear()

    # The page-set helpers of StateView on known values (NOTE(members-loop) in lang/state.py).

    def _members(self, pages: Any, size: int) -> Any:
        m = _v(pages) & ((1 << size) - 1)
        out = []
        while m:
            low = m & -m
            out.append(low.bit_length() - 1)
            m ^= low
        return out

    def _group(self, name: str) -> dict[int, int]:
        groups = self.groups.get(name)
        if groups is None:
            info = self.model.by_name[name]
            groups = {}
            for p, x in enumerate(self.vals[info.offset:info.offset + info.length]):
                groups[x] = groups.get(x, 0) | (1 << p)
            self.groups[name] = groups
        return groups

    def _positions(self, name: str, value: Any) -> Any:
        return CPages(self._group(name).get(_v(value), 0))

    def _bit_positions(self, name: str, bit: Any) -> Any:
        b = _v(bit)
        out = 0
        for x, mask in self._group(name).items():
            if x & b:
                out |= mask
        return CPages(out)

    def _get(self, i: int, info: SlotInfo) -> Any:
        return self.kinds[i](self.vals[i])

    def _store(self, i: int, value: Any, info: SlotInfo) -> None:
        if self.groups:
            self.groups.pop(info.name, None)
        self.vals[i] = _v(value)

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


@dataclass
class Outcome:
    """The result of one enabled action: the next state and any violations on the way."""

    state: tuple[int, ...]
    flags: list[Flag]


class Concrete:
    """Runs a Model's actions and properties on concrete states."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.spec = model.spec
        self.view = ConcreteState(model)
        traced = getattr(model, "_traced", None)
        #: evaluate the sometimes properties in state_flags too: only when one can raise a spec
        #: error (unknown before tracing: then always)
        self._sometimes_errors = traced is None or traced.properties.sometimes_can_fail

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

    def step(self, state: tuple[int, ...], binding: Binding) -> Outcome | None:
        """The successor of `state` under `binding`, or None when its guard fails there.
        Raises SpecError where the concrete semantics makes the step an error."""
        view = self.view
        view.reset(state)
        try:
            self._run(lambda: binding.action.fn(self.spec, view, *binding.args), lambda: f"in action {binding.label()}")
        except Disabled:
            return None
        skip = self.model.skip
        flags = [f for f in view.flags if f.prop not in skip] if skip else list(view.flags)
        return Outcome(tuple(view.vals), flags)

    def state_flags(self, state: tuple[int, ...]) -> list[Flag]:
        """Violations of state properties: the spec's invariants and the kernel's leak.

        Every state property (the sometimes ones too) is evaluated, so that one that raises a
        spec error in this state raises it here, in every engine alike."""
        from .. import kernel

        view = self.view
        view.reset(state)
        out: list[Flag] = []
        skip = self.model.skip
        for inv in self.model.invariants:
            for args in self._each(inv):
                what = inv.what(args)
                ok = self._run(lambda i=inv, w=what, a=args: view._property(i.fn, w, *a), f"in {what}")
                if inv.name not in skip and not _v(ok):
                    out.append(Flag(inv.name, request=args[0] if args else None))
        for prop in self.model.sometimes if self._sometimes_errors else ():
            what = f"sometimes {prop.name}"
            self._run(lambda p=prop, w=what: view._property(p.fn, w), f"in {what}")
        if self.model.checks_leak:
            for r in range(1, self.model.requests + 1):
                got = self._run(lambda r=r: kernel.leak(view, r), f"in finished(r=r{r})")
                if kernel.LEAK in skip:
                    continue
                for pool, p, cond in got:
                    if _v(cond):
                        out.append(Flag(kernel.LEAK, pool, p, r, r))
        return out

    def sometimes_hits(self, state: tuple[int, ...], names: list[str]) -> list[str]:
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

    def lemma_flags(self, state: tuple[int, ...]) -> list[Flag]:
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
