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
from ..lang.model import Binding, Model, SlotInfo
from ..lang.state import StateView
from ..lang.values import PYTHON, Ops, RefusesControlFlow, spec_location


def _v(x: Any) -> int:
    """The integer of a concrete value or Python constant."""
    t = type(x)
    if t is CInt or t is CBool:
        return x.v
    return int(x)


class CVal(RefusesControlFlow):
    __slots__ = ("v",)
    ops: Ops

    def __init__(self, v: int) -> None:
        self.v = v

    # Defining __eq__ below would otherwise set __hash__ to None (a plain TypeError).
    __hash__ = RefusesControlFlow.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.v})"

    # comparisons give conditions
    def __eq__(self, o: Any) -> CBool:  # type: ignore[override]
        return TRUE if self.v == _v(o) else FALSE

    def __ne__(self, o: Any) -> CBool:  # type: ignore[override]
        return TRUE if self.v != _v(o) else FALSE

    def __lt__(self, o: Any) -> CBool:
        return TRUE if self.v < _v(o) else FALSE

    def __le__(self, o: Any) -> CBool:
        return TRUE if self.v <= _v(o) else FALSE

    def __gt__(self, o: Any) -> CBool:
        return TRUE if self.v > _v(o) else FALSE

    def __ge__(self, o: Any) -> CBool:
        return TRUE if self.v >= _v(o) else FALSE

    # arithmetic gives integers (a condition counts as 0 or 1)
    def __add__(self, o: Any) -> CInt: return CInt(self.v + _v(o))
    def __radd__(self, o: Any) -> CInt: return CInt(_v(o) + self.v)
    def __sub__(self, o: Any) -> CInt: return CInt(self.v - _v(o))
    def __rsub__(self, o: Any) -> CInt: return CInt(_v(o) - self.v)
    def __mul__(self, o: Any) -> CInt: return CInt(self.v * _v(o))
    def __rmul__(self, o: Any) -> CInt: return CInt(_v(o) * self.v)
    def __floordiv__(self, o: Any) -> CInt: return CInt(self.v // _v(o))
    def __rfloordiv__(self, o: Any) -> CInt: return CInt(_v(o) // self.v)
    def __mod__(self, o: Any) -> CInt: return CInt(self.v % _v(o))
    def __neg__(self) -> CInt: return CInt(-self.v)
    def __lshift__(self, o: Any) -> CInt: return CInt(self.v << _v(o))
    def __rlshift__(self, o: Any) -> CInt: return CInt(_v(o) << self.v)
    def __rshift__(self, o: Any) -> CInt: return CInt(self.v >> _v(o))


class CInt(CVal):
    """A concrete integer (a slot value, a page set as a bitmask)."""

    __slots__ = ()

    def __and__(self, o: Any) -> CInt: return CInt(self.v & _v(o))
    def __rand__(self, o: Any) -> CInt: return CInt(_v(o) & self.v)
    def __or__(self, o: Any) -> CInt: return CInt(self.v | _v(o))
    def __ror__(self, o: Any) -> CInt: return CInt(_v(o) | self.v)
    def __xor__(self, o: Any) -> CInt: return CInt(self.v ^ _v(o))
    def __rxor__(self, o: Any) -> CInt: return CInt(_v(o) ^ self.v)

    def __invert__(self) -> CInt:
        file, line = spec_location()
        raise SpecError(
            "`~` negates a condition, and this is an integer or a page set. For the pages of a"
            " not in b write without(a, b); for a number compare it (x == 0).",
            file=file, line=line,
        )


class CBool(CVal):
    """A concrete condition. `&`, `|`, `^`, `~` are logical."""

    __slots__ = ()

    def __and__(self, o: Any) -> Any:
        if type(o) is CInt:
            return CInt(self.v & o.v)
        return TRUE if self.v and _v(o) else FALSE

    __rand__ = __and__

    def __or__(self, o: Any) -> Any:
        if type(o) is CInt:
            return CInt(self.v | o.v)
        return TRUE if self.v or _v(o) else FALSE

    __ror__ = __or__

    def __xor__(self, o: Any) -> CBool:
        return TRUE if bool(self.v) != bool(_v(o)) else FALSE

    __rxor__ = __xor__

    def __invert__(self) -> CBool:
        return FALSE if self.v else TRUE


TRUE = CBool(1)
FALSE = CBool(0)


class ConcreteOps(Ops):
    """The spec language's operations on concrete values."""

    def If(self, c: Any, a: Any, b: Any) -> Any:
        return a if _v(c) else b

    def popcount(self, m: Any) -> Any:
        return CInt(_v(m).bit_count())

    def first(self, m: Any, n: Any) -> Any:
        return CInt(PYTHON.first(_v(m), _v(n)))

    def nth(self, m: Any, j: Any, default: int) -> Any:
        return CInt(PYTHON.nth(_v(m), _v(j), default))

    def bit(self, p: Any) -> Any:
        return CInt(PYTHON.bit(_v(p)))

    def select(self, values: list[Any], idx: Any, default: int) -> Any:
        i = _v(idx)
        return values[i] if 0 <= i < len(values) else CInt(default)

    def complement(self, m: Any) -> Any:
        return CInt(~_v(m))

    def truth(self, c: Any) -> bool | None:
        return bool(_v(c))


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


class ConcreteState(StateView):
    """A StateView over a list of ints; reused across actions to spare allocations."""

    def __init__(self, model: Model) -> None:
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "vals", list(model.initial))
        object.__setattr__(self, "flags", [])
        object.__setattr__(self, "doing", "")  # the action being run, for error messages
        #: per array slot, its indices grouped by value (for _positions); dropped on any write
        object.__setattr__(self, "groups", {})

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
        return CInt(self._group(name).get(_v(value), 0))

    def _bit_positions(self, name: str, bit: Any) -> Any:
        b = _v(bit)
        out = 0
        for x, mask in self._group(name).items():
            if x & b:
                out |= mask
        return CInt(out)

    def _get(self, i: int, info: SlotInfo) -> Any:
        v = self.vals[i]
        return CBool(v) if info.is_bool else CInt(v)

    def _set(self, i: int, value: Any, info: SlotInfo) -> None:
        v = _v(value)
        if not info.lo <= v <= info.hi:
            file, line = spec_location()
            k = i - info.offset
            element = info.name if info.shape == "scalar" else f"{info.name}[{'r' if info.shape == 'request' else ''}{k + info.base}]"
            raise SpecError(
                f"{self.doing}: {element} := {v} is outside its domain {info.lo}..{info.hi}."
                " Widen the slot's domain, or guard the action with s.require(...)",
                file=file, line=line,
            )
        if self.groups:
            self.groups.pop(info.name, None)
        self.vals[i] = v

    def _index(self, i: Any) -> int | None:
        return _v(i)

    def require(self, cond: Any) -> None:
        if not _v(cond):
            raise Disabled

    def _flag(self, prop: str, cond: Any, *, pool: str, page: int, request: Any, other: Any,
              expected: Any = None) -> None:
        if _v(cond):
            self.flags.append(Flag(prop, pool, page, _v(request), _v(other),
                                   None if expected is None else _v(expected)))


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

    def step(self, state: tuple[int, ...], binding: Binding) -> Outcome | None:
        """The successor of `state` under `binding`, or None when its guard fails there."""
        view = self.view
        view.reset(state)
        object.__setattr__(view, "doing", f"in action {binding.label()}")
        try:
            binding.action.fn(self.spec, view, *binding.args)
        except Disabled:
            return None
        except OwnershipError:
            raise
        except Exception as e:  # the spec's own code failed: report it at the spec's line
            from ..lang.loader import spec_failure

            raise spec_failure(e, self.model.spec_cls.source_file(),
                               f"in action {binding.label()}") from None
        skip = self.model.skip
        flags = [f for f in view.flags if f.prop not in skip] if skip else list(view.flags)
        return Outcome(tuple(view.vals), flags)

    def state_flags(self, state: tuple[int, ...]) -> list[Flag]:
        """Violations of state properties: the spec's invariants and the kernel's leak."""
        from .. import kernel

        view = self.view
        view.reset(state)
        out: list[Flag] = []
        skip = self.model.skip
        for inv in self.model.invariants:
            if inv.name not in skip and not _v(inv.fn(self.spec, view)):
                out.append(Flag(inv.name))
        if self.model.checks_leak and kernel.LEAK not in skip:
            for r in range(1, self.model.requests + 1):
                for pool, p, cond in kernel.leak(view, r):
                    if _v(cond):
                        out.append(Flag(kernel.LEAK, pool, p, r, r))
        return out

    def sometimes_hits(self, state: tuple[int, ...], names: list[str]) -> list[str]:
        """Which of the named sometimes-properties hold in `state`."""
        view = self.view
        view.reset(state)
        by_name = {p.name: p for p in self.model.sometimes}
        return [n for n in names if _v(by_name[n].fn(self.spec, view))]
