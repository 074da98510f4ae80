"""The batch explicit-state engine: level-synchronous breadth-first search over packed frontiers.

The same search as ownership.engines.explicit (which stays the per-state reference), run a
block of a BFS level at a time with the batch interpreter (ownership.interpret.batch):

- states are packed rows (a few uint64 words, `Layout`), kept in one store by state id, in
  the order the per-state engine would discover them; each keeps its parent and the binding
  that produced it, so a violation is traced back to a shortest counterexample;
- deduplication is whole-array work: a 64-bit hash per row and an open-addressing table
  (hash -> state id) probed for a whole block at once; every equal hash is confirmed by
  comparing the full rows, so a collision can never merge two states (a `verified` never rests
  on a lossy fingerprint). Of several copies of a new state in a block the first in discovery
  order wins, which keeps the store in discovery order without sorting;
- the search reproduces the per-state engine: within a level, successors are ordered as that
  engine discovers them (parent order, then binding order) and the first event in that order
  ends the search (a bad write, a transition that violates a kernel property, a state that
  violates an invariant or the leak property, the max-states limit), with the counts that
  engine reports. So the trace is the same trace, rebuilt with build_trace and the concrete
  interpreter's flags for its last step. State properties are evaluated when a state's block
  is expanded (one unpacking per state); before an event is accepted, the states that the
  per-state engine would have checked before it are checked;
- with `symmetry=True` every successor is replaced by its canonical representative under
  request renaming (ownership.engines.symmetry); the coverage then also says how many states
  the representatives stand for, which equals the count without reduction;
- limits: max-states and max-depth give `bounded`; max-seconds, Ctrl-C and memory (max_memory,
  and always the machine's available memory: the engine stops before it would swap) give
  `inconclusive` with the coverage so far;
- `workers=N` runs N processes: N-1 forked workers expand blocks while the parent owns the
  store and the table (inserting one block while the workers expand the next ones).

Engines never print: progress goes to the reporter.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import multiprocessing
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InternalError, SpecError, UsageError
from ..interpret.batch import MAX_WIDE_POOL_PAGES, BatchModel
from ..interpret.concrete import Concrete
from ..ir.graph import LIMB_BITS, MAX_POOL_PAGES
from ..lang.model import Model
from ..limits import (
    TICK,
    Held,
    check_workers,
    deferred,
    memory_checked,
    parse_seconds,
    peak_resident_memory,
)
from ..limits import available_memory as _available
from ..limits import resident_memory as _rss
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace

#: Seconds to wait for the workers to finish their blocks in flight when a search stops
#: (NOTE(stop-workers)); a block takes milliseconds to a few tenths of a second.
STOP_SECONDS = 5.0

#: Frontier rows expanded per block: large enough that numpy's per-call cost vanishes, small
#: enough to stay cache-friendly; at most 65536 so that a row fits the 16-bit radix sort.
BLOCK = 1 << 15

#: The fewest rows of a block: near the memory limit blocks shrink to this (NOTE(memory-estimate)).
MIN_BLOCK = 1 << 10

#: How full the visited table may get where growing it would pass the memory limit
#: (NOTE(fuller-table)): linear probing then takes about 50 probes to add a row, 2.5 at 0.5.
FULL_LOAD = 0.9

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)




def supports(model: Model) -> str | None:
    """Why the batch engine cannot check this model (None when it can). A pool of more than
    62 pages keeps its page sets in several 64-bit limbs (NOTE(wide-pages)), up to
    MAX_WIDE_POOL_PAGES pages."""
    big = [f"{p.name} ({p.size} pages)" for p in model.pools.values() if p.size > MAX_WIDE_POOL_PAGES]
    if big:
        return (f"the batch engine keeps a page set in limbs of {LIMB_BITS} pages, at most"
                f" {MAX_WIDE_POOL_PAGES} pages a pool, and pool {', '.join(big)} has more")
    return None


def wide_pools(model: Model) -> list[str]:
    """The pools of more than 62 pages, whose page sets take several limbs (NOTE(wide-pages))."""
    return [f"{p.name} ({p.size} pages)" for p in model.pools.values() if p.size > MAX_POOL_PAGES]


# --------------------------------------------------------------------------- hashing and the table


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


# --------------------------------------------------------------------------- memory


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the kernel.

    NOTE(first-touch): a search allocates and frees many block-sized temporaries. By default
    glibc serves blocks of 128 KiB and more with fresh mmap()s and unmaps them on free, so every
    block faults its pages in again; on virtual machines a first touch of memory is expensive
    (measured 13-30 us per 4 KiB page on the project's VMs: benchmarks/RESULTS.md). Raising the
    mmap and trim thresholds makes freed temporaries reusable, which cut a 7 M-state run from
    12 s to 8 s there. Process-wide, so the engine never calls it: the `ownership` command does,
    and a library user may (a no-op without glibc)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    libc.mallopt(m_mmap_threshold, 32 << 20)     # the largest value glibc accepts
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_top_pad, 64 << 20)


class PeakMemory:
    """The process's peak resident memory during one search, for Coverage.peak_memory.

    NOTE(peak-memory): sampling the resident set between slices misses what a search holds
    for a moment inside one: a visited table that grows holds the old and the new table
    while it rehashes (at 140 M states of the incident model, 4,900 MB sampled where the
    kernel counted 5,813). The kernel's high-water mark is exact but covers the process's
    whole life; where the search raised it, it is the search's peak. Where it did not (an
    earlier search in the same process went higher), the largest sample is what is known."""

    def __init__(self) -> None:
        self.sampled = _rss()
        self.before = peak_resident_memory()

    def sample(self) -> int:
        """The resident memory now, kept if it is the largest seen."""
        rss = _rss()
        self.sampled = max(self.sampled, rss)
        return rss

    def peak(self) -> int:
        """The search's peak resident memory so far (NOTE(peak-memory))."""
        self.sample()
        high = peak_resident_memory()
        return high if high > self.before else self.sampled


# --------------------------------------------------------------------------- block expansion


@dataclass
class Block:
    """One expanded block of a level: its states' property checks and their successors in
    discovery order (position = parent row in the level * bindings + binding)."""

    start: int                 # first row of the block in its level
    stop: int
    bad_state: np.ndarray      # bool per row: an invariant or the leak property fails
    state_error: np.ndarray | None  # bool per row: a property raises a spec error (None: none can)
    sometimes: list[np.ndarray]
    pos: np.ndarray            # int64 per successor
    words: np.ndarray          # uint64 (words x successors)
    h: np.ndarray
    stab: np.ndarray | None    # stabiliser sizes under symmetry
    first_flag: int            # position of the first transition flagged by the kernel, or -1
    first_error: int           # position of the first step that raises a spec error, or -1


class Expander:
    """Expands blocks of a level (in the parent process or in a worker)."""

    def __init__(self, model: Model, symmetry: bool) -> None:
        self.bm = BatchModel(model, reachable=True)
        self.k = self.bm.layout.words
        self.B = len(model.bindings)
        self.canon = None
        if symmetry:
            from .symmetry import Canonicaliser

            self.canon = Canonicaliser(model, self.bm.layout)

    def block(self, start: int, P: np.ndarray, sometimes: bool = True) -> Block:
        X = self.bm.layout.unpack(P)
        checks = self.bm.state_properties(X, sometimes=sometimes)
        e = self.bm.expand(P, X)
        del X
        # successors come grouped by binding, rows ascending: a stable sort by row puts them
        # in discovery order (row, then binding); rows < 65536 take numpy's radix sort
        order = np.argsort(e.rows.astype(np.uint16 if P.shape[1] <= 1 << 16 else np.int64), kind="stable")
        pos = (e.rows.take(order) + start) * self.B + e.binding.take(order)
        # (events are rare: reorder their flags only when there is one)
        first_flag = int(pos[np.argmax(e.flagged.take(order))]) if e.flagged.any() else -1
        first_error = int(((e.error_rows + start) * self.B + e.error_binding).min()) if e.error_rows.size else -1
        words = e.words.take(order, axis=1)
        stab = None
        if self.canon is not None:
            words, stab = self.canon.canonicalise(words)
        return Block(start, start + P.shape[1], np.asarray(checks.bad), checks.error, checks.sometimes, pos, words,
                     row_hash(words), stab, first_flag, first_error)

    def count_upto(self, start: int, P: np.ndarray, limit: int) -> int:
        """Enabled transitions of a block at positions <= limit."""
        e = self.bm.expand(P)
        pos = (e.rows + start) * self.B + e.binding
        return int(np.count_nonzero(pos <= limit))


_WORKER: dict[str, Any] = {}  # a worker process's expander, set once by its initializer


def _worker_init(expander: Expander) -> None:
    """A worker's start: its expander, and Ctrl-C left to the parent. A terminal's Ctrl-C
    reaches every process of the foreground group; the parent stops the search and the
    workers (a worker interrupted in a task printed a traceback, and the pool could hang).
    SIGINT is blocked while the pool forks (_Search.run), so none dies of it before this."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER["expander"] = expander


def _worker_block(task: tuple[int, np.ndarray, bool]) -> Block:
    """Expand one block in a worker (see _Search._expanded)."""
    start, P, sometimes = task
    return _WORKER["expander"].block(start, P, sometimes)


# --------------------------------------------------------------------------- the search


def check(
    model: Model,
    *,
    max_states: int | None = None,
    max_depth: int | None = None,
    max_seconds: float | None = None,
    max_memory: int | None = None,
    workers: int = 1,
    symmetry: bool = False,
    reporter: Reporter | None = None,
    report_every: float = 0.5,
    block: int = BLOCK,
) -> CheckResult:
    """Explore the reachable states of `model` breadth first, a block of a level at a time.

    Returns what ownership.engines.explicit.check returns (the same verdict, counts and trace)
    and, with symmetry, counts of representatives and of the states they stand for."""
    why = supports(model)
    if why is not None:
        raise UsageError(why + "; use the per-state engine for larger pools.")
    check_workers(workers)  # 1 ..  a few per CPU (ownership.limits)
    max_seconds = parse_seconds(max_seconds)
    if max_memory is not None and max_memory < 1:
        raise UsageError(f"max_memory={max_memory}: a memory limit is a number of bytes above 0")
    if not 1 <= block <= 1 << 16:
        raise UsageError(f"block {block}: must be 1..65536 rows")
    start_time = time.monotonic()
    exp = Expander(model, symmetry)
    if exp.bm.unsupported is not None:
        # the per-state engine computes with Python's integers: the same search, exactly
        from .. import limits

        # (--max-memory holds without the batch engine when the command's limits are armed)
        if symmetry or workers > 1 or (max_memory is not None and not limits.active()):
            raise UsageError(f"--symmetry, --workers and --max-memory need the batch engine, and"
                             f" {exp.bm.unsupported} 64 bits; check it without them")
        from . import explicit

        return explicit.check(model, max_states=max_states, max_depth=max_depth,
                              max_seconds=max_seconds, reporter=reporter, report_every=report_every)
    if symmetry:
        from .symmetry import require_symmetric

        require_symmetric(model, exp.bm)
    search = _Search(model, exp, max_states=max_states, max_depth=max_depth, max_seconds=max_seconds,
                     max_memory=max_memory, workers=workers, reporter=reporter,
                     report_every=report_every, block=block, start=start_time)
    with memory_checked():  # (NOTE(memory-estimate): it stops itself before the ceiling)
        return search.run()


class _Found(Exception):
    """Raised inside the search when it ends with a result (a violation)."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result


class _Search:
    """One batch search: the store, the table, per-level bookkeeping, and the main loop."""

    def __init__(self, model: Model, exp: Expander, *, max_states: int | None, max_depth: int | None,
                 max_seconds: float | None, max_memory: int | None, workers: int,
                 reporter: Reporter | None, report_every: float, block: int, start: float) -> None:
        self.model = model
        self.exp = exp
        self.bm = exp.bm
        self.B = exp.B
        self.max_states = max_states
        self.max_depth = max_depth
        self.max_seconds = max_seconds
        self.max_memory = max_memory
        self.workers = workers
        self.reporter = reporter
        self.report_every = report_every
        self.block = block
        self.start = start
        self.last_report = start
        self.store = Store(exp.k, self._reserve(exp.k))
        self.table = Table(self.store)
        self.level_start: list[int] = []          # state id of each level's first state
        self.parent: list[list[np.ndarray]] = []  # per level, per block of appends: parent rows
        self.via: list[list[np.ndarray]] = []     # per level: bindings
        self.blocks: list[list[tuple[int, int, int]]] = []  # per level: (start, stop, transitions)
        self.transitions = 0
        self.orbits: list[np.ndarray] = []        # under symmetry: states each representative stands for
        self.reached: dict[str, bool] = {name: False for name in self.bm.sometimes_names}
        self.memory = PeakMemory()
        self.pool: Any = None
        self.held = Held()  # (while the pool runs: deferred())
        self.checked = 0        # states of the current level whose properties were checked
        self.next_rows = block  # rows of the next block (fewer near the memory limit: _next_block_fits)
        self.scale = 1.0        # how much more than estimated blocks took (`_learn`: NOTE(memory-estimate))
        self.expected = 0       # the estimate of the next block's own needs, unscaled
        self.started: tuple[int, int, int, int] | None = None  # before the block: `_learn`'s baseline
        #: the discovery position of the first step of the current level that raises a spec
        #: error, while the rest of the level is searched for a violation (NOTE(first-event))
        self.pending: int | None = None

    # -- bookkeeping ----------------------------------------------------------------------------

    def _reserve(self, k: int) -> int:
        """States to reserve address space for: as many as the memory limit (max_memory, or the
        memory available) can hold at the least a state costs (its row, parent and binding,
        and two table slots), so that the store never copies itself before the memory guard
        stops the search; at most max_states."""
        avail = _available() or (1 << 30)
        if self.max_memory is not None:
            avail = min(avail, self.max_memory)
        cap = max(1 << 12, avail // (self._state_bytes(k) + 8))  # (a table slot each, at the fullest)
        return min(cap, self.max_states + 1) if self.max_states is not None else cap

    def _state_bytes(self, k: int) -> int:
        """What the search keeps per state, besides the table: its row of k words in the store,
        its parent (uint32) and binding (uint16 or uint32), its orbit size under symmetry."""
        return k * 8 + 4 + (2 if self.B <= 1 << 16 else 4) + (8 if self.exp.canon is not None else 0)

    def _elapsed(self) -> float:
        return time.monotonic() - self.start

    def _report(self, depth: int) -> None:
        now = time.monotonic()
        if self.reporter is None or now - self.last_report < self.report_every:
            return
        self.last_report = now
        rss = self.memory.sample()
        secs = now - self.start
        self.reporter(Progress(secs, states=self.store.n, transitions=self.transitions, depth=depth,
                               memory_bytes=rss, states_before_symmetry=self._represented()))

    def _memory_limit(self) -> int | None:
        """The resident memory the search may reach: max_memory, and never more than what it
        holds plus 90% of what the machine still has available (no swapping)."""
        limits = []
        if self.max_memory is not None:
            limits.append(self.max_memory)
        avail = _available()
        if avail is not None:
            # never push the machine into swap: what we hold plus 90% of what is still free
            limits.append(_rss() + int(avail * 0.9))
        return min(limits) if limits else None

    def _rates(self, d: int, done: int) -> tuple[float, float]:
        """New states and successors per row expanded: in level d so far (its first `done`
        rows), or at its start as in level d - 1."""
        if done:
            new = self.store.n - self.level_start[d + 1]
            return new / done, sum(c for _, _, c in self.blocks[d]) / done
        if d == 0:
            return float(self.B), float(self.B)
        before = max(self.level_size(d - 1), 1)
        return self.level_size(d) / before, sum(c for _, _, c in self.blocks[d - 1]) / before

    def _next_block_fits(self, d: int, done: int, limit: int) -> bool:
        """Whether a next block of level d (its rows from `done` on) keeps the resident memory
        under `limit`: a whole block, else a smaller one down to MIN_BLOCK rows, which the
        search then takes (`next_rows`)."""
        rows = min(self._share(d), self.level_size(d) - done)
        least = rows <= MIN_BLOCK
        while not self._block_fits(d, done, rows, limit, fill=least):
            if least:
                return False
            rows = max(rows // 2, MIN_BLOCK)
            least = rows <= MIN_BLOCK
        self.next_rows = rows
        self._start_block()
        return True

    def _start_block(self) -> None:
        """Before a block the memory check let through: what `_learn` measures it against."""
        self.started = (_rss(), peak_resident_memory(), self.table.cap, self.expected)

    def _learn(self) -> None:
        """After a block: where it raised the process's peak resident memory, the peak says
        what it took beyond the memory it began with; more than expected (its new states and
        temporaries: _block_fits) scales the estimate of the blocks after it
        (NOTE(memory-estimate)). A table that grew in the block is not the block's own."""
        if self.started is None:
            return
        rss, high, cap, expected = self.started
        self.started = None
        peak = peak_resident_memory()
        if peak <= max(high, rss) or expected < 1 << 20:  # (the peak says nothing, or too little)
            return
        took = peak - rss - (self.table.cap * 8 if self.table.cap != cap else 0)
        self.scale = max(self.scale, took / expected)

    def _block_fits(self, d: int, done: int, rows: int, limit: int, *, fill: bool) -> bool:
        """Whether expanding and adding `rows` rows of level d (from `done` on) keeps the
        resident memory under `limit`; sets the table's room for that block. Unless `fill`,
        a block that leaves no room for the table to grow when it must does not fit: a smaller
        block lets it grow, where filling it would stop the search sooner (NOTE(fuller-table)).

        NOTE(memory-estimate): the guard looks one block ahead, not one level: a level is up
        to twice the last, and stopping before a whole level (with its table growth) stopped
        searches at 0.47 of --max-memory 1G (issue 29); a block is 32,768 rows. The estimate
        is honest, not padded (one 3x too high stopped searches at a third of the limit). It
        adds: per new state (as many per row as so far), _state_bytes; the block's
        temporaries, measured with tracemalloc at about 6 bytes per slot of a state and 14 per
        binding for each row; with workers, the expanded blocks the parent holds before
        inserting them (a row's successors: k words, a hash, a position and a parent, 8 bytes
        each); the store's copy if it must grow; and the table's new slots (8 bytes each,
        beside the old ones while it rehashes) if it grows, by as much as the room left
        allows (NOTE(fuller-table)). A block's own needs vary about that: a quarter more is
        counted, so that near the limit it shrinks before its peak could pass it (a whole
        block past it was 2.4% over --max-memory 300M). Where a block's measured peak says its
        own needs are larger (symmetry's renamings of a block: 300 MB where 40 MB were
        estimated, 1.17 of --max-memory 500M), later blocks are scaled by as much (`_learn`).
        A block that adds more still is caught by the check after it."""
        k = self.exp.k
        new_per_row, successors = self._rates(d, done)
        new = int(rows * new_per_row)
        own = new * self._state_bytes(k) + rows * (self.bm.layout.columns * 6 + self.B * 14)
        self.expected = own  # (what _learn compares the block's measured peak with)
        own = int(own * self.scale)
        need = own + own // 4  # (a block's peak varies about this: a quarter more, then blocks shrink first)
        if self.workers > 1:
            need += int((self.workers - 1) * rows * successors * (k * 8 + 24))
        if self.store.n + new > self.store.data.shape[0]:
            need += (self.store.n + new) * k * 8
        rss = _rss()
        budget = limit - limit // 100  # (a percent to spare: what no estimate sees)
        self.table.room = budget - rss - need
        # (a block's successors vary about the mean: twice it, so that the insert does not grow
        # a table the check let fill: NOTE(fuller-table))
        wanted = self.table.used + 2 * int(rows * successors)
        cap = self.table.next_capacity(wanted)
        if cap > self.table.cap:
            need += cap * 8
        elif wanted * 2 > cap and not fill:
            return False
        return rss + need <= budget

    def level_size(self, d: int) -> int:
        if d >= len(self.level_start):
            return 0
        end = self.store.n if d == len(self.level_start) - 1 else self.level_start[d + 1]
        return end - self.level_start[d]

    def _parents(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.parent[d]) > 1:
            self.parent[d] = [np.concatenate(self.parent[d])]
            self.via[d] = [np.concatenate(self.via[d])]
        return self.parent[d][0], self.via[d][0]

    def _pos_of(self, d: int, j: int) -> int:
        """The discovery position (in level d-1) of state j of level d."""
        parent, via = self._parents(d)
        return int(parent[j]) * self.B + int(via[j])

    def _note_sometimes(self, some: list[np.ndarray], upto: int) -> None:
        # (an empty list: the block was checked without them, all being reached already)
        for name, hit in zip(self.bm.sometimes_names, some):
            if not self.reached[name] and hit[:upto].any():
                self.reached[name] = True

    def _check_states(self, d: int, lo: int, hi: int) -> tuple[int | None, int | None]:
        """Check the properties of states lo..hi-1 of level d: the first that violates one (its
        row) and the first where one raises a spec error, each or None. It stops at the first
        violation; sometimes properties reached before it are noted."""
        base = self.level_start[d]
        error: int | None = None
        size = min(self.block, self.next_rows)  # (near the memory limit, as small as its blocks)
        for s in range(lo, hi, size):
            e = min(s + size, hi)
            X = self.bm.layout.unpack(self.store.rows(base + s, base + e))
            checks = self.bm.state_properties(X)
            bad = np.asarray(checks.bad)
            if error is None and checks.error is not None:
                error = s + int(np.argmax(checks.error))
            if bad.any():
                j = int(np.argmax(bad))
                self._note_sometimes(checks.sometimes, j)
                return s + j, error
            self._note_sometimes(checks.sometimes, e - s)
        return None, error

    def _transitions_upto(self, d: int, pos: int) -> int:
        """Transitions of levels before d, plus those of level d at positions <= pos."""
        row = pos // self.B
        total = sum(c for lvl in self.blocks[:d] for _, _, c in lvl)
        for s, e, c in self.blocks[d]:
            if e <= row:
                total += c
            elif s <= row:
                base = self.level_start[d]
                return total + self.exp.count_upto(s, self.store.rows(base + s, base + e), pos)
        raise AssertionError("position outside the level's blocks")

    # -- the main loop ----------------------------------------------------------------------------

    def run(self) -> CheckResult:
        model = self.model
        init = self.bm.layout.pack_rows([model.initial])
        stab = None
        if self.exp.canon is not None:
            init, stab = self.exp.canon.canonicalise(init)
        self.level_start.append(0)
        self.parent.append([np.array([-1], dtype=np.int64)])
        self.via.append([np.array([-1], dtype=np.int64)])
        self.table.insert(row_hash(init), init, 0)
        self.store.append(init)
        self.orbits.append(self._orbit(stab))
        stopped_by: str | None = None
        bound: int | None = None
        d = 0
        held = contextlib.ExitStack()
        try:
            if self.workers > 1:
                self.held = held.enter_context(deferred())  # NOTE(deferred)
                # SIGINT blocked while forking: each worker ignores it before it can arrive
                # (_worker_init); the pool's threads keep it blocked, the main thread handles it
                ctx = multiprocessing.get_context("fork")
                self.stopping = False  # (set by _stop_workers: no more tasks)
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                try:
                    self.pool = ctx.Pool(self.workers - 1, initializer=_worker_init, initargs=(self.exp,))
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            while True:
                n = self.level_size(d)
                if n == 0:
                    break
                self.checked = 0
                if self.max_depth is not None and d >= self.max_depth:
                    self._finish_level_checks(d)
                    stopped_by, bound = "max-depth", d
                    break
                limit = self._memory_limit()
                self.table.room, self.next_rows = None, self.block
                if limit is not None and not self._next_block_fits(d, 0, limit):
                    self.next_rows = MIN_BLOCK  # (the checks left, in small blocks: no room for more)
                    self._finish_level_checks(d)
                    stopped_by, bound = "max-memory", d
                    break
                self.level_start.append(self.store.n)
                self.parent.append([])
                self.via.append([])
                self.blocks.append([])
                stop = self._level(d, limit)
                if stop is not None:
                    if stop != "max-states":  # (max-states checked them before stopping)
                        self._before_event(d)
                    stopped_by, bound = stop, d
                    break
                self.transitions = sum(c for lvl in self.blocks for _, _, c in lvl)
                d += 1
                self._report(d)
        except _Found as found:
            return found.result
        except KeyboardInterrupt:  # Ctrl-C, or a command's limit (ownership.limits; api names it)
            stopped_by = "interrupt"
            # the current level's states may not all have been checked
            bound = d if self.checked >= self.level_size(d) else (d - 1 if d else None)
        finally:
            self._stop_workers()
            held.close()
        if stopped_by is not None and stopped_by != "max-states":
            self.transitions = sum(c for lvl in self.blocks for _, _, c in lvl)
        return self._finish(stopped_by, bound)

    def _stop_workers(self) -> None:
        """Stop the workers on every way out of the search (a result, an error, Ctrl-C, a
        limit) and wait for them: no process outlives the search.

        NOTE(stop-workers): not Pool.terminate(): it stops the pool's result thread while a
        worker may be writing a block into the result pipe, holding the pipe's lock, and then
        waits for that lock: a hang (one Ctrl-C in six, measured). Instead the task feeder
        stops (`stopping`), the blocks in flight (a few: one per worker and the pipe's) finish
        and the pool's thread reads them, and the workers exit (close, join). Ctrl-C and the
        limits' timer wait meanwhile (a second Ctrl-C acts after), so that neither can leave a
        half-stopped pool; terminate() remains for a pool that does not stop in STOP_SECONDS,
        and SIGKILL for one that terminate() does not stop either. Ctrl-C and the limits' stops
        are held while the pool runs (NOTE(deferred)): one raised inside the pool's locks left a
        lock held, and the pool then never stopped (a hang in CI, on a loaded 2-core machine)."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        self.stopping = True
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGALRM})
        try:
            pool.close()
            joining = threading.Thread(target=pool.join, name="ownership-stop-workers", daemon=True)
            joining.start()
            joining.join(STOP_SECONDS)
            if joining.is_alive():  # (terminate() can hang too: in a thread, then SIGKILL)
                killing = threading.Thread(target=pool.terminate, name="ownership-stop-workers", daemon=True)
                killing.start()
                killing.join(STOP_SECONDS)
                if killing.is_alive():
                    for worker in multiprocessing.active_children():
                        worker.kill()
                        worker.join(STOP_SECONDS)
            # the pool's pipes are closed by their __del__: collect them while SIGINT is
            # blocked, or a second Ctrl-C there prints "Exception ignored ... KeyboardInterrupt"
            del pool, joining
            gc.collect()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def _finish_level_checks(self, d: int) -> None:
        """Check the properties of the rest of level d (a stop at level d claims them)."""
        viol, error = self._check_states(d, self.checked, self.level_size(d))
        self.checked = self.level_size(d)
        if viol is not None:
            raise _Found(self._state_violation(d, viol))
        if error is not None:
            self._state_error(d, error)

    def _share(self, d: int) -> int:
        """The rows of a block of level d: `block`, with workers fewer, a few blocks each."""
        n, size = self.level_size(d), self.block
        if self.workers > 1 and n > 2048:
            size = min(size, max(1024, -(-n // (self.workers * 4))))
        return size

    def _blocks_of(self, d: int) -> Iterator[tuple[int, int]]:
        """Level d's blocks, of `_share` rows, or fewer where the memory check before one
        chose fewer (`next_rows`: NOTE(memory-estimate)); made as they are taken (with
        workers by the pool's feeder, a few blocks ahead of the check)."""
        n, size, s = self.level_size(d), self._share(d), 0
        while s < n:
            e = min(s + min(size, self.next_rows), n)
            yield s, e
            s = e

    def _expanded(self, d: int, spans: Iterator[tuple[int, int]]) -> Iterator[Block]:
        base = self.level_start[d]
        if self.pool is not None and self.level_size(d) > self._share(d):
            def tasks() -> Iterator[tuple[int, np.ndarray, bool]]:
                # (run by the pool's feeder thread, as the workers take tasks)
                for s, e in spans:
                    if self.stopping:  # NOTE(stop-workers)
                        return
                    yield s, self.store.rows(base + s, base + e), not all(self.reached.values())

            # Ctrl-C and the limits are held while the pool runs, and raised here, between two
            # blocks or every TICK while waiting for one (NOTE(deferred))
            results = self.pool.imap(_worker_block, tasks())
            while True:
                self.held.poll()
                try:
                    blk = results.next(timeout=TICK)
                except multiprocessing.TimeoutError:
                    continue
                except StopIteration:
                    break
                self.held.poll()
                yield blk
        else:
            for s, e in spans:
                yield self.exp.block(s, self.store.rows(base + s, base + e), not all(self.reached.values()))

    def _orbit(self, stab: np.ndarray | None) -> np.ndarray:
        if stab is None or self.exp.canon is None:
            return np.zeros(0, dtype=np.int64)
        return self.exp.canon.orbit_sizes(stab)

    def _represented(self) -> int | None:
        """Under symmetry: how many states the stored representatives stand for."""
        if self.exp.canon is None:
            return None
        total, left = 0, self.store.n
        for o in self.orbits:
            total += int(o[:left].sum())
            left -= min(left, o.size)
        return total

    def _level(self, d: int, limit: int | None) -> str | None:
        """Expand level d block by block; returns the limit that stopped it, or None.

        NOTE(first-event): the search ends at the shallowest depth where a violation or a spec
        error happens, and at one depth a violation wins over a spec error (the per-state
        engine's rule: ownership.engines.explicit). A step of level d that raises a spec error
        (depth d + 1) is therefore kept pending while the rest of the level is expanded; a
        violation of depth d + 1 found meanwhile wins, else the first error in discovery order
        is raised at the end of the level."""
        self.pending = None
        for blk in self._expanded(d, self._blocks_of(d)):
            # 1. the block's own states (level d): checked before any of their transitions
            if blk.bad_state.any():
                j = int(np.argmax(blk.bad_state))
                self._note_sometimes(blk.sometimes, j)
                raise _Found(self._state_violation(d, blk.start + j))
            if blk.state_error is not None and blk.state_error.any():
                j = int(np.argmax(blk.state_error))
                viol, _ = self._check_states(d, blk.stop, self.level_size(d))
                if viol is not None:
                    raise _Found(self._state_violation(d, viol))
                self._state_error(d, blk.start + j)
            self._note_sometimes(blk.sometimes, blk.stop - blk.start)
            self.checked = blk.stop
            # 2. its transitions, up to the first flagged one
            cut = blk.first_flag if blk.first_flag >= 0 else None
            if blk.first_error >= 0 and self.pending is None:
                self.pending = blk.first_error
            keep = blk.pos.size if cut is None else int(np.searchsorted(blk.pos, cut))
            before = self.store.n
            new = self.table.insert(blk.h[:keep], blk.words[:, :keep], before)
            new_words = blk.words.take(new, axis=1)
            self.store.append(new_words)
            parent, via = np.divmod(blk.pos.take(new), self.B)
            # narrow types (a row of a level is a state id < 2**32): a third of the memory, and
            # fresh memory is slow to touch on VMs (NOTE(first-touch))
            self.parent[d + 1].append(parent.astype(np.uint32))
            self.via[d + 1].append(via.astype(np.uint16 if self.B <= 1 << 16 else np.uint32))
            if blk.stab is not None:
                self.orbits.append(self._orbit(blk.stab.take(new)))
            self.blocks[d].append((blk.start, blk.stop, int(blk.pos.size)))
            if self.max_states is not None and self.store.n >= self.max_states and self.store.n > before:
                last = max(self.max_states - before, 1) - 1   # the new state that reaches the limit
                self.store.truncate(before + last + 1)
                self._trim_level(d + 1)
                self._before_event(d)
                self._settle(d, int(blk.pos[new[last]]))
                self.transitions = self._transitions_upto(d, int(blk.pos[new[last]]))
                return "max-states"
            if cut is not None:
                self._trim_level(d + 1)
                self._before_event(d)
                row, b = divmod(cut, self.B)
                raise _Found(self._transition_violation(d, row, b))
            if self.max_seconds is not None and self._elapsed() >= self.max_seconds:
                self._before_event(d)
                self._settle(d)
                return "max-seconds"
            self._learn()
            rss = self.memory.sample()
            more = blk.stop < self.level_size(d)  # (the next level's first block: checked at its start)
            if limit is not None and (rss > limit or (more and not self._next_block_fits(d, blk.stop, limit))):
                # the checks left in small blocks, and no more blocks for the workers (the parent
                # received theirs meanwhile: 1.15 of --max-memory 800M): no room for more
                self.next_rows, self.stopping = MIN_BLOCK, True
                self._before_event(d)
                self._settle(d)
                return "max-memory"
            self.transitions = sum(c for lvl in self.blocks for _, _, c in lvl)
            self._report(d)
        if self.pending is not None:
            self._settle(d)
        return None

    def _settle(self, d: int, upto: int | None = None) -> None:
        """Before level d's search ends (expanded, or stopped by a limit after discovery
        position `upto`), with a spec error possibly found: a violation among the states of
        level d + 1 discovered so far wins (NOTE(first-event)); else the first error in
        discovery order, a step's (`pending`) or a new state's property's, is raised."""
        if self.pending is None and not self.bm.state_can_fail:
            return
        self._trim_level(d + 1)
        viol, error = self._check_states(d + 1, 0, self.level_size(d + 1))
        if viol is not None:
            raise _Found(self._state_violation(d + 1, viol))
        step = self.pending if self.pending is not None and (upto is None or self.pending <= upto) else None
        if error is not None and (step is None or self._pos_of(d + 1, error) < step):
            self._state_error(d + 1, error)
        if step is not None:
            self._transition_error(d, *divmod(step, self.B))

    def _trim_level(self, d: int) -> None:
        """Cut level d's parent records to the states the store holds."""
        n = self.level_size(d)
        parent, via = self._parents(d) if self.parent[d] else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.parent[d], self.via[d] = [parent[:n]], [via[:n]]

    def _before_event(self, d: int) -> None:
        """Before an event while expanding level d: the per-state engine has checked every state
        of level d, and every state of level d+1 discovered so far (it checks a state when it
        discovers it). A failure among them comes first: a violation of either, or a spec
        error of level d (shallower than the event; NOTE(first-event))."""
        viol, error = self._check_states(d, self.checked, self.level_size(d))
        self.checked = self.level_size(d)
        if viol is not None:
            raise _Found(self._state_violation(d, viol))
        if error is not None:
            self._state_error(d, error)
        viol, _ = self._check_states(d + 1, 0, self.level_size(d + 1))
        if viol is not None:
            raise _Found(self._state_violation(d + 1, viol))

    # -- results ------------------------------------------------------------------------------------

    def _state_at(self, d: int, j: int) -> tuple[int, ...]:
        sid = self.level_start[d] + j
        return self.bm.layout.unpack_row(self.store.rows(sid, sid + 1), 0)

    def _path(self, d: int, j: int) -> tuple[list[tuple[int, ...]], list[int]]:
        """States (as stored: representatives under symmetry) and bindings from the initial
        state to state j of level d."""
        states, via = [], []
        while d >= 0:
            states.append(self._state_at(d, j))
            if d > 0:
                parent, bindings = self._parents(d)
                via.append(int(bindings[j]))
                j = int(parent[j])
            d -= 1
        return states[::-1], via[::-1]

    def _actual(self, stored: list[tuple[int, ...]], steps: list[int]) -> tuple[list[tuple[int, ...]], list[int]]:
        return actual_run(self.model, self.exp.canon is not None, stored, steps)

    def _state_error(self, d: int, j: int) -> None:
        raise_state_error(self.model, self.exp.canon is not None, *self._path(d, j))

    def _transition_error(self, d: int, row: int, b: int) -> None:
        raise_step_error(self.model, self.exp.canon is not None, *self._path(d, row), b)

    def _result(self, states: list[tuple[int, ...]], bindings: list[int], flags: Any, depth: int) -> CheckResult:
        model = self.model
        trace = build_trace(model, states, [model.bindings[b] for b in bindings], flags, engine="explicit")
        cov = self._coverage(False, "violation", depth, None)
        return CheckResult(Verdict.VIOLATED, cov, "explicit", trace=trace,
                           sometimes={k: (True if v else None) for k, v in self.reached.items()})

    def _state_violation(self, d: int, j: int) -> CheckResult:
        """State j of level d violates an invariant or the leak property."""
        self.store.truncate(self.level_start[d] + j + 1)
        for lvl in range(d + 1, len(self.level_start)):
            self.level_start[lvl] = self.store.n
        self.transitions = 0 if d == 0 else self._transitions_upto(d - 1, self._pos_of(d, j))
        stored, via = self._path(d, j)
        states, bindings = self._actual(stored, via)
        flags = Concrete(self.model).state_flags(states[-1])
        if not flags:
            raise InternalError("the batch and concrete interpreters disagree on a state property")
        return self._result(states, bindings, flags, d)

    def _transition_violation(self, d: int, row: int, b: int) -> CheckResult:
        """The transition from state `row` of level d by binding b violates a kernel property."""
        self.transitions = self._transitions_upto(d, row * self.B + b)
        stored, via = self._path(d, row)
        states, bindings = self._actual(stored, via + [b])
        out = Concrete(self.model).step(states[-2], self.model.bindings[bindings[-1]])
        if out is None or not out.flags:
            raise InternalError("the batch and concrete interpreters disagree on a kernel flag")
        return self._result(states, bindings, out.flags, d + 1)

    def _coverage(self, complete: bool, stopped_by: str | None, depth: int, bound: int | None) -> Coverage:
        sym = self.exp.canon is not None
        return Coverage(
            self.store.n, self.transitions, depth, complete=complete, stopped_by=stopped_by,
            seconds=self._elapsed(), bound_depth=bound,
            states_before_symmetry=self._represented() if sym else None,
            bits_per_state=self.bm.layout.bits, peak_memory=self.memory.peak(),
            held_memory=self.store.n * self._state_bytes(self.exp.k) + self.table.nbytes,
        )

    def _finish(self, stopped_by: str | None, bound: int | None) -> CheckResult:
        depth = len(self.level_start) - 1
        while depth > 0 and self.level_size(depth) == 0:
            depth -= 1
        complete = stopped_by is None
        cov = self._coverage(complete, stopped_by, depth, None if complete else bound)
        if complete:
            return CheckResult(Verdict.VERIFIED, cov, "explicit", sometimes=dict(self.reached))
        verdict = Verdict.BOUNDED if stopped_by in ("max-states", "max-depth") else Verdict.INCONCLUSIVE
        return CheckResult(verdict, cov, "explicit",
                           sometimes={k: (True if v else None) for k, v in self.reached.items()})


# --------------------------------------------------------------------------- paths to results
# (shared with the partitioned search, ownership.engines.partitioned)


def actual_run(model: Model, symmetric: bool, stored: list[tuple[int, ...]],
               steps: list[int]) -> tuple[list[tuple[int, ...]], list[int]]:
    """The real run behind a path of stored states and bindings (steps may be one longer
    than the path: its last step leaves the stored states). Under symmetry each binding is
    renamed so that it applies to the real predecessor. A step that raises a SpecError
    raises it with the steps before it (only the last step of a path may)."""
    interp = Concrete(model)
    perms = list(itertools.permutations(range(1, model.requests + 1)))
    maps = {}
    if symmetric:
        from .symmetry import apply_concrete, binding_map

        maps = {p: binding_map(model, p) for p in perms}
    actual = [model.initial]
    bindings: list[int] = []
    for i, b in enumerate(steps):
        real = b
        if symmetric:
            perm = next(p for p in perms if apply_concrete(model, p, stored[i]) == actual[-1])
            real = maps[perm][b]  # type: ignore[index]
        elif i + 1 < len(stored):
            actual.append(stored[i + 1])
            bindings.append(real)
            continue
        try:
            out = interp.step(actual[-1], model.bindings[real])
        except SpecError as e:
            if i + 1 != len(steps):
                raise InternalError(f"step {i + 1} of a stored path raises a spec error: {e}") from None
            e.steps = [model.bindings[x].label() for x in bindings]
            raise
        if out is None:
            raise InternalError("a step of the batch engine's path is disabled concretely"
                                " (the batch and concrete interpreters, or the symmetry check, disagree)")
        actual.append(out.state)
        bindings.append(real)
    return actual, bindings


def raise_state_error(model: Model, symmetric: bool, stored: list[tuple[int, ...]], via: list[int]) -> None:
    """The last state of a stored path makes a property raise a spec error: raise it
    concretely, with the steps that reach the state."""
    states, bindings = actual_run(model, symmetric, stored, via)
    try:
        Concrete(model).state_flags(states[-1])
    except SpecError as e:
        e.steps = [model.bindings[b].label() for b in bindings]
        raise
    raise InternalError("the batch interpreter found a spec error in a state property that the concrete"
                        " interpreter does not raise")


def raise_step_error(model: Model, symmetric: bool, stored: list[tuple[int, ...]], via: list[int], b: int) -> None:
    """The step by binding b from the last state of a stored path raises a spec error: raise
    it concretely, with the steps that reach its state."""
    actual_run(model, symmetric, stored, via + [b])
    raise InternalError("the batch interpreter found a spec error in a step that the concrete"
                        " interpreter does not raise")
