"""The state `s` that actions read and write, common to every interpreter.

`s.stage[r]` reads a slot, `s.stage[r] = v` writes it, `s.require(cond)` guards the action,
and the kernel operations (`s.alloc`, `s.free`, `s.write`, `s.read`, `s.send`, `s.land`, `s.share`, `s.take`,
and the queries `s.owned`, `s.holds`, `s.free_pages`, `s.in_flight`, `s.reused`) act on the shadow page
state of ownership.kernel. An interpreter subclasses StateView and supplies how values are
read, written, guarded and judged (`_get`, `_set`, `_index`, `require`, `_flag`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from .spec import did_you_mean
from .values import If, spec_location

if TYPE_CHECKING:
    from .model import Model, SlotInfo


class StateView:
    """Named access to one state under one interpreter, plus the kernel operations."""

    model: Model

    # -- what an interpreter supplies -------------------------------------------------------

    def _get(self, i: int, info: SlotInfo) -> Any:
        raise NotImplementedError

    def _set(self, i: int, value: Any, info: SlotInfo) -> None:
        raise NotImplementedError

    def _index(self, i: Any) -> int | None:
        """A concrete index as an int, or None if it is symbolic."""
        raise NotImplementedError

    def require(self, cond: Any) -> None:
        """Guard: the action is enabled only where `cond` holds."""
        raise NotImplementedError

    def _flag(self, prop: str, cond: Any, *, pool: str, page: int, request: Any, other: Any,
              expected: Any = None) -> None:
        """Record that kernel property `prop` is violated where `cond` holds; `other` is the
        page's owner or content found, `expected` the content the reader expected."""
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
        """The set (bitmask) of indices of array slot `name` whose element equals `value`."""
        arr = self._array(name)
        out: Any = 0
        for p in range(len(arr)):
            out = out | If(arr[p] == value, 1 << p, 0)
        return out

    def _bit_positions(self, name: str, bit: Any) -> Any:
        """The set (bitmask) of indices of array slot `name` whose element has `bit` set."""
        arr = self._array(name)
        out: Any = 0
        for p in range(len(arr)):
            out = out | If((arr[p] & bit) != 0, 1 << p, 0)
        return out

    # -- slots ---------------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        info = self._info(name)
        if info.shape == "scalar":
            return self._get(info.offset, info)
        return ArrayView(self, info)

    def __setattr__(self, name: str, value: Any) -> None:
        info = self._info(name)
        if info.shape != "scalar":
            file, line = spec_location()
            raise SpecError(f"{name} is an array; assign one element, e.g. s.{name}[r] = ...", file=file, line=line)
        self._set(info.offset, value, info)

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

    # -- kernel operations (ownership.kernel), one definition for every interpreter -----------

    def alloc(self, pool: str, r: Any, n: Any) -> Any:
        from .. import kernel
        return kernel.alloc(self, pool, r, n)

    def free(self, pool: str, r: Any, pages: Any) -> None:
        from .. import kernel
        kernel.free(self, pool, r, pages)

    def write(self, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        from .. import kernel
        kernel.write(self, pool, r, pages, key)

    def read(self, pool: str, r: Any, pages: Any, key: Any = None) -> None:
        from .. import kernel
        kernel.read(self, pool, r, pages, key)

    def take(self, pool: str, r: Any, pages: Any) -> None:
        from .. import kernel
        kernel.take(self, pool, r, pages)

    def share(self, pool: str, r: Any, pages: Any) -> None:
        from .. import kernel
        kernel.share(self, pool, r, pages)

    def holds(self, pool: str, p: int, r: Any) -> Any:
        from .. import kernel
        return kernel.holds(self, pool, p, r)

    def send(self, r: Any, src_pool: str, src_pages: Any, dst_pool: str, dst_pages: Any) -> None:
        from .. import kernel
        kernel.send(self, r, src_pool, src_pages, dst_pool, dst_pages)

    def land(self, r: Any) -> None:
        from .. import kernel
        kernel.land(self, r)

    def owned(self, pool: str, r: Any) -> Any:
        from .. import kernel
        return kernel.owned(self, pool, r)

    def free_pages(self, pool: str) -> Any:
        from .. import kernel
        return kernel.free_pages(self, pool)

    def in_flight(self, r: Any) -> Any:
        from .. import kernel
        return kernel.in_flight(self, r)

    def reused(self, pool: str) -> Any:
        from .. import kernel
        return kernel.reused(self, pool)


class ArrayView:
    """One array slot of a state: index with a request (1..R) or a page (0..P-1)."""

    __slots__ = ("s", "info")

    def __init__(self, s: StateView, info: SlotInfo) -> None:
        self.s = s
        self.info = info

    def _pos(self, i: Any) -> int | None:
        k = self.s._index(i)
        if k is None:
            return None
        k -= self.info.base
        if not 0 <= k < self.info.length:
            file, line = spec_location()
            first = self.info.base
            raise SpecError(
                f"index {k + first} is out of range for {self.info.name} ({first}..{first + self.info.length - 1})",
                file=file, line=line,
            )
        return self.info.offset + k

    def __getitem__(self, i: Any) -> Any:
        pos = self._pos(i)
        if pos is not None:
            return self.s._get(pos, self.info)
        from .values import select
        return select(list(self), i - self.info.base, 0)

    def __setitem__(self, i: Any, value: Any) -> None:
        pos = self._pos(i)
        if pos is not None:
            self.s._set(pos, value, self.info)
            return
        for k in range(self.info.length):
            old = self.s._get(self.info.offset + k, self.info)
            self.s._set(self.info.offset + k, If(i == k + self.info.base, value, old), self.info)

    def __iter__(self) -> Any:
        return (self.s._get(self.info.offset + k, self.info) for k in range(self.info.length))

    def __len__(self) -> int:
        return self.info.length
