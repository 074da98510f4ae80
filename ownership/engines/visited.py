"""The visited set of the packed searches: states as rows of uint64 words, found again by hash.

Shared by the batch engine (ownership.engines.batch) and each partition of the partitioned
search (ownership.engines.partitioned):

- `row_hash`: a well-mixed 64-bit hash of each packed row, computed for a whole block at once;
- `Store`: every visited state's words by state id, in the order the search discovers them;
- `Table`: open addressing from a row's hash to its state id, probed and filled for a whole
  block per call; every equal hash is confirmed by comparing the full rows, so a collision
  can never merge two states (a `verified` never rests on a lossy fingerprint). Of several
  copies of a new row in one call the first wins (NOTE(first-wins)), which keeps the store in
  discovery order without sorting; near the memory limit it fills up rather than grow past
  it (NOTE(fuller-table)).
"""

from __future__ import annotations

import numpy as np

#: How full the visited table may get where growing it would pass the memory limit
#: (NOTE(fuller-table)): linear probing then takes about 50 probes to add a row, 2.5 at 0.5.
FULL_LOAD = 0.9

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def row_hash(words: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each packed row (words x n)."""
    h = words[0].copy()
    for w in words[1:]:
        h ^= h >> np.uint64(31)
        h *= _M1
        h ^= w
    h ^= h >> np.uint64(30)
    h *= _M2
    h ^= h >> np.uint64(27)
    h *= _M3
    h ^= h >> np.uint64(31)
    return h


class Store:
    """Every visited state's packed words by state id: one row of `k` words per state (a
    state's words share a cache line, so confirming a table hit costs one memory access).

    The capacity is reserved up front (`np.empty` only reserves address space: a page costs
    memory when first written), so the store normally never copies itself; it doubles if a
    search outgrows the reservation."""

    def __init__(self, k: int, reserve: int = 1 << 12) -> None:
        self.k = k
        try:
            self.data = np.empty((max(reserve, 1 << 12), k), dtype=np.uint64)
        except MemoryError:  # a system that does not overcommit: grow as needed instead
            self.data = np.empty((1 << 12, k), dtype=np.uint64)
        self.n = 0

    def append(self, words: np.ndarray) -> None:
        m = words.shape[1]
        if self.n + m > self.data.shape[0]:
            cap = max(self.data.shape[0] * 2, self.n + m)
            grown = np.empty((cap, self.k), dtype=np.uint64)
            grown[:self.n] = self.data[:self.n]
            self.data = grown
        self.data[self.n:self.n + m] = words.T
        self.n += m

    def rows(self, start: int, stop: int) -> np.ndarray:
        """The packed words (k x n) of states start..stop-1."""
        return np.ascontiguousarray(self.data[start:stop].T)

    def truncate(self, n: int) -> None:
        self.n = min(self.n, n)


class Table:
    """The visited set: open addressing (linear probing) from row hash to state id, probed and
    filled for a whole block per call. Load stays at most one half, unless growing would pass
    the memory limit (`room`, NOTE(fuller-table)).

    A slot is one int64: 0 when empty (so a new table is `np.zeros`: no pass to fill it), else
    (31 high bits of the row's hash) << 32 | (state id + 1). Equal tags are confirmed by
    comparing the full rows with the store.

    NOTE(first-wins): rows of one call that land on the same free slot are settled with
    `np.minimum.at` on provisional entries that grow with the row's index, so the first row
    wins; copies of a row follow the same probe sequence, so the first copy of a new row is the
    one added, and ids follow the order of the rows (the discovery order of the search)."""

    _EMPTY = 0
    _PROVISIONAL = -(1 << 62)   # row i of the current call is provisionally _PROVISIONAL + i (< 0)
    _ID_MASK = (1 << 32) - 1

    def __init__(self, store: Store, capacity: int = 1 << 16) -> None:
        self.store = store
        self._alloc(capacity)
        self.used = 0
        #: the bytes a new table may take (the search's memory limit less what it holds and
        #: the block needs): None, no limit (NOTE(fuller-table))
        self.room: int | None = None

    def _alloc(self, capacity: int) -> None:
        self.cap = capacity
        self.mask = np.uint64(capacity - 1)
        self.slots = np.zeros(capacity, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes)

    @staticmethod
    def tags(h: np.ndarray) -> np.ndarray:
        return (h >> np.uint64(33)).view(np.int64) << 32

    def next_capacity(self, need: int) -> int:
        """The capacity the table takes to hold `need` entries: its own while they fill at most
        half of it, else 4 times larger while the table stays small next to the store (fewer
        rehashes), else twice.

        NOTE(fuller-table): a new table is allocated beside the old one while the rows are
        rehashed, a step of up to 4 times the table at once. Where that would pass the memory
        limit (`room`) the table grows by the least step that fits, or not at all while the
        rows fill at most FULL_LOAD of it (linear probing stays correct, only slower, at any
        load below 1). The search stopped a whole table's growth, or a level, early: at 0.47
        of --max-memory 1G (issue 29). If nothing fits, it grows anyway (the search's check
        after the block then stops it) rather than fill up."""
        if need * 2 <= self.cap:
            return self.cap
        cap = self.cap
        while need * 2 > cap:
            cap *= 4 if cap < 1 << 25 else 2
        if self.room is None or cap * 8 <= self.room:
            return cap
        least = self.cap
        while need * 2 > least:
            least *= 2
        if least * 8 <= self.room or need > FULL_LOAD * self.cap:
            return least
        return self.cap

    def _grow(self, need: int) -> None:
        cap = self.next_capacity(need)
        if cap == self.cap:
            return
        self._alloc(cap)
        n = self.store.n
        for s in range(0, n, 1 << 16):  # the table holds exactly the stored rows: rehash them
            e = min(s + (1 << 16), n)
            h = row_hash(self.store.rows(s, e))
            self._place(h, self.tags(h) | np.arange(s + 1, e + 1, dtype=np.int64))

    def _place(self, h: np.ndarray, entries: np.ndarray) -> None:
        """Put entries of distinct rows into free slots (no lookup: used when the table grows)."""
        cap_mask = self.cap - 1
        slot = (h & self.mask).view(np.int64)  # (a fresh array: no copy needed)
        pending = np.arange(h.size, dtype=np.int64)
        while pending.size:
            sl = slot.take(pending)
            free = self.slots.take(sl) == self._EMPTY
            cand, cs = pending[free], sl[free]
            np.minimum.at(self.slots, cs, self._PROVISIONAL + cand)
            won = self.slots.take(cs) == self._PROVISIONAL + cand
            self.slots[cs[won]] = entries.take(cand[won])
            keep = np.ones(pending.size, dtype=bool)
            keep[np.flatnonzero(free)[won]] = False
            moved = pending[keep & ~free]
            slot[moved] = (slot.take(moved) + 1) & cap_mask
            pending = pending[keep]

    @staticmethod
    def _same(stored: np.ndarray, words: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Per row: stored[i] (a store row) equals column rows[i] of words. Word by word:
        `np.all(..., axis=1)` over rows of a few words is 3x slower (a reduction per row)."""
        same = stored[:, 0] == words[0].take(rows)
        for w in range(1, words.shape[0]):
            same &= stored[:, w] == words[w].take(rows)
        return same

    @staticmethod
    def _same_rows(words: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per i: columns a[i] and b[i] of words are equal (word by word, as `_same`)."""
        same = words[0].take(a) == words[0].take(b)
        for w in range(1, words.shape[0]):
            same &= words[w].take(a) == words[w].take(b)
        return same

    def insert(self, h: np.ndarray, words: np.ndarray, first_id: int) -> np.ndarray:
        """Add the rows not yet in the table; return the indices of those that are new, in
        order. Among equal new rows the first is the one added (NOTE(first-wins)); the new rows
        get ids first_id, first_id + 1, ... in index order."""
        m = h.size
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        self._grow(self.used + m)
        cap_mask = self.cap - 1
        prov = self._PROVISIONAL
        slot = (h & self.mask).view(np.int64)  # (a fresh array: no copy needed)
        tag = self.tags(h)
        is_new = np.zeros(m, dtype=bool)
        new_slot = np.zeros(m, dtype=np.int64)
        pending = np.arange(m, dtype=np.int64)
        store = self.store.data
        first_round = True
        while pending.size:
            # in the first round every row is pending, in order: skip the gathers by `pending`
            sl = slot if first_round else slot.take(pending)
            e = self.slots.take(sl)
            free = e == self._EMPTY
            settled = np.zeros(pending.size, dtype=bool)
            mytag = tag if first_round else tag.take(pending)
            # existing rows with the same tag: compare with the store
            hit = np.flatnonzero((e > 0) & ((e & ~self._ID_MASK) == mytag))
            if hit.size:
                rows = hit if first_round else pending.take(hit)
                ids = (e.take(hit) & self._ID_MASK) - 1
                settled[hit[self._same(store.take(ids, axis=0), words, rows)]] = True
            if not first_round:
                # rows added earlier in this call: compare with those rows
                mine = np.flatnonzero(e < 0)
                if mine.size:
                    other = e.take(mine) - prov
                    settled[mine[self._same_rows(words, other, pending.take(mine))]] = True
            fi = np.flatnonzero(free)
            if fi.size:
                cand = fi if first_round else pending.take(fi)
                cs = sl.take(fi)
                claim = cand + prov
                np.minimum.at(self.slots, cs, claim)
                won = self.slots.take(cs) == claim
                if won.all():
                    is_new[cand] = True
                    new_slot[cand] = cs
                    settled[fi] = True
                else:
                    wc = cand[won]
                    is_new[wc] = True
                    new_slot[wc] = cs[won]
                    settled[fi[won]] = True
                    # a loser that is a copy of its slot's winner is settled now (most losers
                    # are: a new state reached twice in the block), not after another round
                    lost = np.flatnonzero(~won)
                    winner = self.slots.take(cs.take(lost)) - prov
                    same = self._same_rows(words, winner, cand.take(lost))
                    settled[fi.take(lost)[same]] = True
            # a row at a slot holding another row moves on; a row that lost a free slot stays,
            # and next round meets the winner (its copy: settled; another row: moves on)
            moving = pending[~free & ~settled]
            if moving.size:
                slot[moving] = (slot.take(moving) + 1) & cap_mask
            pending = pending[~settled]
            first_round = False
        new = np.flatnonzero(is_new)
        self.slots[new_slot.take(new)] = tag.take(new) | (first_id + 1 + np.arange(new.size, dtype=np.int64))
        self.used += new.size
        return new
