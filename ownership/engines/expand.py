"""Expanding a level of a packed search a block at a time, in this process or in workers.

Shared by the batch engine (ownership.engines.batch) and each partition of the partitioned
search (ownership.engines.partitioned):

- `Expander`: one block of a level's packed rows through the batch interpreter
  (ownership.interpret.batch): its states' property checks, and their successors in the
  discovery order of the per-state engine (parent row, then binding), hashed for the visited
  table and, under symmetry, replaced by their canonical representatives;
- `Block`: what one expansion found;
- `Workers`: forked processes that expand blocks while the parent owns the store and the
  table; stopped on every way out of a search (NOTE(stop-workers)), with Ctrl-C and the limits
  held while they run (NOTE(deferred) in ownership.limits).
"""

from __future__ import annotations

import gc
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..interpret.batch import BatchModel
from ..lang.model import Model
from ..limits import TICK, Held
from . import visited

#: Seconds to wait for the workers to finish their blocks in flight when a search stops
#: (NOTE(stop-workers)); a block takes milliseconds to a few tenths of a second.
STOP_SECONDS = 5.0


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
                     visited.row_hash(words), stab, first_flag, first_error)

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
    SIGINT is blocked while the pool forks (Workers), so none dies of it before this."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER["expander"] = expander


def _worker_block(task: tuple[int, np.ndarray, bool]) -> Block:
    """Expand one block in a worker (see Workers.blocks)."""
    start, P, sometimes = task
    return _WORKER["expander"].block(start, P, sometimes)


class Workers:
    """`count` forked processes, each with a copy of `expander`, that expand the blocks of a
    level for the search in the parent. Create it inside `deferred()` (ownership.limits) and
    `stop` it on every way out of the search."""

    def __init__(self, expander: Expander, count: int) -> None:
        # SIGINT blocked while forking: each worker ignores it before it can arrive
        # (_worker_init); the pool's threads keep it blocked, the main thread handles it
        ctx = multiprocessing.get_context("fork")
        self.stopping = False  # (set by `stop`, or by the search: no more tasks)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.pool: Any = ctx.Pool(count, initializer=_worker_init, initargs=(expander,))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def blocks(self, spans: Iterator[tuple[int, int]], task: Callable[[int, int], tuple[int, np.ndarray, bool]],
               held: Held) -> Iterator[Block]:
        """The blocks of `spans` expanded by the workers, in order; `task(start, stop)` makes a
        block's task (its first row, its packed rows, whether to check the sometimes properties),
        as the workers take them."""
        def tasks() -> Iterator[tuple[int, np.ndarray, bool]]:
            # (run by the pool's feeder thread, as the workers take tasks)
            for s, e in spans:
                if self.stopping:  # NOTE(stop-workers)
                    return
                yield task(s, e)

        # Ctrl-C and the limits are held while the pool runs, and raised here, between two
        # blocks or every TICK while waiting for one (NOTE(deferred))
        results = self.pool.imap(_worker_block, tasks())
        while True:
            held.poll()
            try:
                blk = results.next(timeout=TICK)
            except multiprocessing.TimeoutError:
                continue
            except StopIteration:
                break
            held.poll()
            yield blk

    def stop(self) -> None:
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
