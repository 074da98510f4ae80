"""The adapter between spec ToyAllocator and the real PageAllocator: one method per action,
and observe(). This is all a team writes to test its allocator against the spec."""

from __future__ import annotations

from toy_allocator import DoubleFree, PageAllocator

from ownership.bridges.testing import Ownership, Refused


class ToyAllocatorAdapter:
    """Drives a PageAllocator the way the spec's client does; the spec's page p is page p+1."""

    checked = False

    def __init__(self, params: dict[str, int]) -> None:
        self.allocator = PageAllocator(params["pages"], checked=self.checked)
        self.table: dict[int, list[int]] = {}   # request -> the real pages it holds
        self.freed: dict[int, list[int]] = {}   # request -> the real pages it gave back last

    # -- one method per action, with the action's arguments ---------------------------------

    def alloc(self, r: int, n: int) -> None:
        pages = self.allocator.alloc(n, owner=r)
        assert pages is not None, "the spec only allocates when enough pages are free"
        self.table[r] = pages
        self.freed.pop(r, None)

    def free(self, r: int) -> None:
        pages = self.table.pop(r)
        self.allocator.free(pages, owner=r)
        self.freed[r] = pages

    def free_twice(self, r: int) -> None:
        try:
            self.allocator.free(self.freed.pop(r), owner=r)
        except DoubleFree as e:
            raise Refused("the allocator refused the double free") from e

    # -- what the implementation says about page ownership ----------------------------------

    def observe(self) -> Ownership:
        return Ownership(
            free=[p - 1 for p in self.allocator.free_pages],
            held={r: [p - 1 for p in pages] for r, pages in self.table.items()},
        )


class CheckedToyAllocatorAdapter(ToyAllocatorAdapter):
    """The same, over an allocator that refuses a double free."""

    checked = True
