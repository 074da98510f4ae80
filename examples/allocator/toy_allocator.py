"""The "real code" of the example: a small free-list page allocator, as a team might write one.

Each allocation is made for an owner (a request id). With `checked=True` the allocator refuses
to free a page that the caller does not hold (already free, or handed to someone else since):
a double free. Without it, such a free is accepted silently, the page goes back on the free
list while another request still uses it, and the next allocation hands it out twice.
"""

from __future__ import annotations


class DoubleFree(RuntimeError):
    """Raised by a checked allocator when a page is freed by someone who does not hold it."""


class PageAllocator:
    """Pages 1..num_pages (page 0 is reserved for padding); freed pages are reused first."""

    def __init__(self, num_pages: int, *, checked: bool = False) -> None:
        self.free_pages: list[int] = list(range(1, num_pages + 1))
        self.owner: dict[int, object] = {}
        self.checked = checked

    def alloc(self, n: int, owner: object) -> list[int] | None:
        """n pages from the head of the free list for `owner`, or None when fewer are free."""
        if n > len(self.free_pages):
            return None
        out, self.free_pages = self.free_pages[:n], self.free_pages[n:]
        for p in out:
            self.owner[p] = owner
        return out

    def free(self, pages: list[int], owner: object) -> None:
        """Put pages back at the head of the free list, in ascending order."""
        if self.checked:
            wrong = [p for p in pages if self.owner.get(p) != owner]
            if wrong:
                raise DoubleFree(f"pages {wrong} are not held by {owner!r}")
        for p in pages:
            self.owner.pop(p, None)
        self.free_pages = sorted(pages) + self.free_pages
