"""The batch explicit-state engine: level-synchronous breadth-first search over packed frontiers.

The same search as ownership.engines.per_state (which stays the per-state reference), run a
block of a BFS level at a time with the batch interpreter (ownership.interpret.batch):

- states are packed rows (a few uint64 words, `Layout`), kept in one store by state id, in
  the order the per-state engine would discover them; each keeps its parent and the binding
  that produced it, so a violation is traced back to a shortest counterexample;
- deduplication is whole-array work (ownership.engines.visited): a 64-bit hash per row and an
  open-addressing table (hash -> state id) probed for a whole block at once; every equal hash
  is confirmed by comparing the full rows, so a collision can never merge two states (a
  `verified` never rests on a lossy fingerprint). Of several copies of a new state in a block
  the first in discovery order wins, which keeps the store in discovery order without sorting;
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
  store and the table (inserting one block while the workers expand the next ones); the
  expansion of a block, and the workers, are ownership.engines.expand's;
- a counterexample's stored path is replayed concretely by ownership.engines.paths; the
  memory accounting is ownership.engines.memory's.

Engines never print: progress goes to the reporter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import InternalError, UsageError
from ..interpret.batch import MAX_WIDE_POOL_PAGES
from ..interpret.concrete import Concrete
from ..ir.graph import LIMB_BITS, MAX_POOL_PAGES
from ..lang.model import Model
from ..limits import (
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
from . import visited
from .expand import STOP_SECONDS, Block, Expander, Workers
from .memory import PeakMemory, keep_freed_memory, memory_limit
from .paths import actual_run, raise_state_error, raise_step_error
from .visited import FULL_LOAD, Store, Table, row_hash

#: Frontier rows expanded per block: large enough that numpy's per-call cost vanishes, small
#: enough to stay cache-friendly; at most 65536 so that a row fits the 16-bit radix sort.
BLOCK = 1 << 15

#: The fewest rows of a block: near the memory limit blocks shrink to this (NOTE(memory-estimate)).
MIN_BLOCK = 1 << 10


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

    Returns what ownership.engines.per_state.check returns (the same verdict, counts and trace)
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
        from . import per_state

        return per_state.check(model, max_states=max_states, max_depth=max_depth,
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
        #: transitions per binding (the actions' coverage of a complete search)
        self.fired = np.zeros(len(model.bindings), dtype=np.int64)
        self.orbits: list[np.ndarray] = []        # under symmetry: states each representative stands for
        self.reached: dict[str, bool] = {name: False for name in self.bm.sometimes_names}
        self.memory = PeakMemory()
        self.pool: Workers | None = None
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
        self.table.insert(visited.row_hash(init), init, 0)  # (visited's: a test swaps it there)
        self.store.append(init)
        self.orbits.append(self._orbit(stab))
        stopped_by: str | None = None
        bound: int | None = None
        d = 0
        held = contextlib.ExitStack()
        try:
            if self.workers > 1:
                self.held = held.enter_context(deferred())  # NOTE(deferred)
                self.pool = Workers(self.exp, self.workers - 1)
            while True:
                n = self.level_size(d)
                if n == 0:
                    break
                self.checked = 0
                if self.max_depth is not None and d >= self.max_depth:
                    self._finish_level_checks(d)
                    stopped_by, bound = "max-depth", d
                    break
                limit = memory_limit(self.max_memory)
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
        """Stop the workers on every way out of the search (NOTE(stop-workers))."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.stop()

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

        def task(s: int, e: int) -> tuple[int, np.ndarray, bool]:
            return s, self.store.rows(base + s, base + e), not all(self.reached.values())

        if self.pool is not None and self.level_size(d) > self._share(d):
            yield from self.pool.blocks(spans, task, self.held)
        else:
            for s, e in spans:
                yield self.exp.block(*task(s, e))

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
        engine's rule: ownership.engines.per_state). A step of level d that raises a spec error
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
            self.fired += np.bincount(blk.pos % self.B, minlength=self.B)
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
                self.next_rows = MIN_BLOCK
                if self.pool is not None:
                    self.pool.stopping = True
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
            actions=self.model.action_counts(self.fired) if complete else None,
        )

    def _finish(self, stopped_by: str | None, bound: int | None) -> CheckResult:
        depth = len(self.level_start) - 1
        while depth > 0 and self.level_size(depth) == 0:
            depth -= 1
        complete = stopped_by is None
        cov = self._coverage(complete, stopped_by, depth, None if complete else bound)
        return CheckResult.of_search(cov, self.reached)


#: The engine, and the names that moved to visited, memory, expand and paths: still importable
#: from here, where callers and tests found them.
__all__ = ["BLOCK", "FULL_LOAD", "MIN_BLOCK", "STOP_SECONDS", "Block", "Expander", "PeakMemory", "Store", "Table",
           "actual_run", "check", "keep_freed_memory", "raise_state_error", "raise_step_error", "row_hash",
           "supports", "wide_pools"]
