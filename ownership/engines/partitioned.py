"""The partitioned breadth-first search: the visited set split by hash over workers (Ray).

`ownership check SPEC --ray ADDRESS`: each of N partitions owns the states whose hash falls in
it (its part of the visited set, its store of packed rows, and each state's parent) and
expands its part of every BFS level with the batch interpreter. The successors are sent to
the partitions that own them, packed as in the batch engine (a row of uint64 words, the
parent's id and the binding: about k * 8 + 6 bytes a state), through Ray's object store; each
partition keeps the new ones. The driver only coordinates: per level, expand everywhere, then
exchange, then count. It holds no state.

The same search as the single-process engine (ownership.engines.batch), level by level:
- the same states (a state is kept by exactly one partition, once), the same transitions, the
  same verdict and a counterexample of the same (shortest) length; the counterexample's path
  is rebuilt from partition to partition and replayed in the concrete semantics. Which one of
  several shortest counterexamples is reported may differ (with one partition it is the same);
- at one depth, the events rank as in the single-process engine (NOTE(first-event) there): a
  state of level d that violates a property (depth d), a spec error of such a state, a step of
  level d that violates a kernel property (depth d + 1), a state of level d + 1 that violates
  one, and last a step that raises a spec error;
- limits stop at level boundaries: `max_depth` and `max_states` give `bounded` (with
  max_states the last level is cut to the limit, and the states kept are checked), Ctrl-C and
  `max_seconds` `inconclusive` with the levels completed so far; a worker lost mid-run
  (a crashed process, a node gone) is `inconclusive` too ("worker-lost"), never verified;
- checkpoints (ownership.engines.checkpoint): with `checkpoint=DIR` every partition writes each
  new level of its states when the level is complete, and `resume=DIR` continues from the last
  complete level, with the final counts of an uninterrupted run; each partition checks the
  levels it reads (NOTE(checked-levels)). A level that cannot be written (a full disk) stops the
  search, `inconclusive` ("checkpoint-failed"), with the coverage reached (issue 29).

The partitions run in this process (`Local`, for one partition: a checkpointed run without
Ray) or as Ray actors (`OnRay`). Engines never print: progress goes to the reporter.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InternalError, OwnershipError, UsageError
from ..interpret.batch import BatchModel
from ..interpret.concrete import Concrete
from ..lang.model import Model
from ..limits import TICK, Held, available_memory, deferred, parse_seconds, resident_memory
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace
from . import checkpoint as ckpt
from .batch import supports
from .cluster import Recipe
from .expand import Expander
from .paths import actual_run, raise_state_error, raise_step_error
from .visited import Store, Table, row_hash

_SPREAD = np.uint64(0xD6E8FEB86659FD93)  # mixes a row's hash into its partition (not the table's bits)


def owner_of(h: np.ndarray, parts: int) -> np.ndarray:
    """The partition that owns each row, by its hash (independent of the table's slot and tag bits)."""
    return ((h * _SPREAD) >> np.uint64(40)) % np.uint64(parts)


# --------------------------------------------------------------------------- what partitions say


@dataclass
class Expanded:
    """What one partition's expansion of a level found."""

    transitions: int = 0
    bad: int | None = None          # first local state id of the level that violates a property
    state_error: int | None = None  # first local state id whose property raises a spec error
    flag: tuple[int, int] | None = None        # (local state id, binding) of a step a kernel property flags
    step_error: tuple[int, int] | None = None  # (local state id, binding) of a step that raises a spec error
    reached: list[bool] = field(default_factory=list)  # per sometimes property
    sent: list[int] = field(default_factory=list)      # bytes sent to each partition
    rss: int = 0


@dataclass
class Checked:
    """What one partition's check of a level's states found (no expansion)."""

    bad: int | None = None
    state_error: int | None = None
    reached: list[bool] = field(default_factory=list)


@dataclass
class Step:
    """One state on a counterexample's path: its unpacked values, and where it came from."""

    state: tuple[int, ...]
    parent_part: int
    parent_id: int
    via: int


# --------------------------------------------------------------------------- a partition


class Partition:
    """One part of the visited set: the states whose hash falls in it, by local id, with each
    one's parent (partition and id there) and the binding that reached it; level by level."""

    def __init__(self, model: Model | Recipe, index: int, parts: int, *, symmetry: bool, block: int,
                 share: int = 1) -> None:
        # (a Ray actor gets the recipe and builds the model itself: a Model is not shipped)
        model = model.build() if isinstance(model, Recipe) else model
        self.model = model
        self.index, self.parts, self.block = index, parts, block
        self.exp = Expander(model, symmetry)
        self.B = self.exp.B
        k = self.exp.k
        avail = available_memory() or (1 << 30)
        self.store = Store(k, avail // max(share, 1) // (k * 8 + 32))
        self.table = Table(self.store)
        self.level_start: list[int] = [0]
        self.parent_part: list[np.ndarray] = []   # per level (level 0's entry: the initial state's)
        self.parent_id: list[np.ndarray] = []
        self.via: list[np.ndarray] = []
        self.orbits: list[np.ndarray] = []
        self._via_type = np.uint16 if self.B <= 1 << 16 else np.uint32

    def ready(self) -> bool:
        """True once built (the driver waits for every Ray actor to be); on Ray, also the
        watchdog's ping (OnRay)."""
        return True

    # -- levels -----------------------------------------------------------------------------------

    def seed(self) -> tuple[int, int]:
        """Level 0: the initial state, if this partition owns it. Returns how many it kept, and
        (under symmetry) how many states they stand for."""
        init = self.exp.bm.layout.pack_rows([self.model.initial])
        stab = None
        if self.exp.canon is not None:
            init, stab = self.exp.canon.canonicalise(init)
        keep = int(int(owner_of(row_hash(init), self.parts)[0]) == self.index)
        self.level_start = [0, 0]
        self.parent_part, self.parent_id, self.via, self.orbits = [], [], [], []
        self._append_level(init[:, :keep], np.full(keep, -1, np.int32), np.zeros(keep, np.uint32),
                           np.zeros(keep, self._via_type), None if stab is None else stab[:keep])
        return keep, self._orbit_of(0)

    def _orbit_of(self, d: int) -> int:
        """How many states level d's representatives stand for (0 without symmetry)."""
        return int(self.orbits[d].sum()) if self.orbits and len(self.orbits) > d else 0

    def _append_level(self, words: np.ndarray, part: np.ndarray, pid: np.ndarray, via: np.ndarray,
                      stab: np.ndarray | None) -> None:
        self.table.insert(row_hash(words), words, self.store.n)
        self.store.append(words)
        self.level_start[-1] = self.store.n
        self.parent_part.append(part.astype(np.int32))
        self.parent_id.append(pid.astype(np.uint32))
        self.via.append(via.astype(self._via_type))
        if self.exp.canon is not None and stab is not None:
            self.orbits.append(self.exp.canon.orbit_sizes(stab))

    def levels(self) -> int:
        return len(self.level_start) - 1

    def size(self, d: int) -> int:
        return self.level_start[d + 1] - self.level_start[d] if d < self.levels() else 0

    def _rows(self, d: int, lo: int, hi: int) -> np.ndarray:
        base = self.level_start[d]
        return self.store.rows(base + lo, base + hi)

    def expand(self, d: int, want_sometimes: bool) -> tuple[Any, ...]:
        """Expand level d: check its states, and sort its successors by the partition that
        owns them: (Expanded, the batch for partition 0, for partition 1, ...), one value per
        Ray return. After a flagged step the rest of the level is only checked."""
        out = Expanded(reached=[False] * len(self.exp.bm.sometimes_names))
        chunks: list[list[tuple[Any, ...]]] = [[] for _ in range(self.parts)]
        n, base = self.size(d), self.level_start[d]
        for s in range(0, n, self.block):
            e = min(s + self.block, n)
            if out.flag is not None:  # (the level ends at depth d + 1: only its states still count)
                checked = self._check(d, s, e, want_sometimes)
                out.bad, out.state_error = checked.bad, out.state_error or checked.state_error
                out.reached = [a or b for a, b in zip(out.reached, checked.reached)]
                if out.bad is not None:
                    break
                continue
            blk = self.exp.block(s, self._rows(d, s, e), want_sometimes)
            if blk.sometimes:
                out.reached = [a or bool(h.any()) for a, h in zip(out.reached, blk.sometimes)]
            if blk.bad_state.any():
                out.bad = base + s + int(np.argmax(blk.bad_state))
                break
            if out.state_error is None and blk.state_error is not None and blk.state_error.any():
                out.state_error = base + s + int(np.argmax(blk.state_error))
            if out.step_error is None and blk.first_error >= 0:
                row, b = divmod(blk.first_error, self.B)
                out.step_error = (base + row, b)
            out.transitions += int(blk.pos.size)
            if blk.first_flag >= 0:
                row, b = divmod(blk.first_flag, self.B)
                out.flag = (base + row, b)
                continue
            rows, vias = np.divmod(blk.pos, self.B)
            dest = owner_of(blk.h, self.parts)
            for p in range(self.parts):
                sel: Any = np.flatnonzero(dest == p) if self.parts > 1 else slice(None)
                chunks[p].append((blk.words[:, sel], (rows[sel] + base).astype(np.uint32),
                                  vias[sel].astype(self._via_type), None if blk.stab is None else blk.stab[sel]))
        batches = [self._pack(c) for c in chunks]
        out.sent = [sum(a.nbytes for a in b if a is not None) for b in batches]
        out.rss = resident_memory()
        return (out, *batches)

    def _pack(self, chunks: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        k = self.exp.k
        if not chunks:
            return (np.zeros((k, 0), np.uint64), np.zeros(0, np.uint32), np.zeros(0, self._via_type), None)
        words = np.concatenate([c[0] for c in chunks], axis=1)
        stab = None if chunks[0][3] is None else np.concatenate([c[3] for c in chunks])
        return (words, np.concatenate([c[1] for c in chunks]), np.concatenate([c[2] for c in chunks]), stab)

    def receive(self, d: int, *batches: tuple[Any, ...]) -> tuple[int, int]:
        """Keep the successors of level d that are new (from partition 0's first, in their
        order): they are this partition's part of level d + 1. Returns how many, and how many
        states they stand for under symmetry."""
        words = np.concatenate([b[0] for b in batches], axis=1)
        part = np.concatenate([np.full(b[0].shape[1], i, np.int32) for i, b in enumerate(batches)])
        pid = np.concatenate([b[1] for b in batches])
        via = np.concatenate([b[2] for b in batches])
        stabs = [b[3] for b in batches if b[3] is not None and b[3].size]
        stab = np.concatenate(stabs) if stabs else np.zeros(0, np.int64)
        self.level_start.append(self.store.n)
        new = self.table.insert(row_hash(words), words, self.store.n) if words.shape[1] else np.zeros(0, np.int64)
        kept = words.take(new, axis=1)
        self.store.append(kept)
        self.level_start[-1] = self.store.n
        self.parent_part.append(part.take(new))
        self.parent_id.append(pid.take(new))
        self.via.append(via.take(new))
        if self.exp.canon is not None and stab is not None:
            self.orbits.append(self.exp.canon.orbit_sizes(stab.take(new)))
        return int(new.size), self._orbit_of(d + 1)

    def cut(self, d: int, keep: int) -> int:
        """Keep only the first `keep` states of level d (the last level: a max-states stop).
        Returns how many states (under symmetry) the representatives cut off stood for."""
        if d != self.levels() - 1:
            raise InternalError("a partition was asked to cut a level that is not its last")
        keep = min(keep, self.size(d))
        before = self._orbit_of(d)
        self.store.truncate(self.level_start[d] + keep)
        self.level_start[-1] = self.store.n
        self.parent_part[d], self.parent_id[d], self.via[d] = (
            self.parent_part[d][:keep], self.parent_id[d][:keep], self.via[d][:keep])
        if self.orbits and len(self.orbits) > d:
            self.orbits[d] = self.orbits[d][:keep]
        self.table = Table(self.store)  # (rebuilt without the states cut off)
        self.table.insert(row_hash(self.store.rows(0, self.store.n)), self.store.rows(0, self.store.n), 0)
        return before - self._orbit_of(d)

    def check_level(self, d: int, want_sometimes: bool) -> Checked:
        """Check the properties of level d's states (no expansion)."""
        return self._check(d, 0, self.size(d), want_sometimes)

    def _check(self, d: int, lo: int, hi: int, want_sometimes: bool) -> Checked:
        out = Checked(reached=[False] * len(self.exp.bm.sometimes_names))
        base = self.level_start[d]
        for s in range(lo, hi, self.block):
            e = min(s + self.block, hi)
            X = self.exp.bm.layout.unpack(self._rows(d, s, e))
            checks = self.exp.bm.state_properties(X, sometimes=want_sometimes)
            bad = np.asarray(checks.bad)
            if out.state_error is None and checks.error is not None:
                out.state_error = base + s + int(np.argmax(checks.error))
            upto = int(np.argmax(bad)) if bad.any() else e - s
            for i, hit in enumerate(checks.sometimes):
                out.reached[i] = out.reached[i] or bool(hit[:upto].any())
            if bad.any():
                out.bad = base + s + upto
                break
        return out

    def step_of(self, sid: int) -> Step:
        """State `sid` (a local id), and its parent."""
        d = int(np.searchsorted(self.level_start, sid, side="right")) - 1
        j = sid - self.level_start[d]
        state = self.exp.bm.layout.unpack_row(self.store.rows(sid, sid + 1), 0)
        return Step(state, int(self.parent_part[d][j]), int(self.parent_id[d][j]), int(self.via[d][j]))

    # -- checkpoints ------------------------------------------------------------------------------

    def save_level(self, where: str, d: int) -> ckpt.Saved:
        """Write level d of this partition's states into the checkpoint folder: its name and
        checksum, or why it could not be written (a full disk: the driver stops, issue 29)."""
        lo, hi = self.level_start[d], self.level_start[d + 1]
        orbit = self.orbits[d] if self.orbits and len(self.orbits) > d else None
        return ckpt.write_level(where, self.index, d, words=self.store.rows(lo, hi), parent_part=self.parent_part[d],
                                parent_id=self.parent_id[d], via=self.via[d], orbit=orbit)

    def load(self, where: str, meta: ckpt.Meta) -> tuple[int, int]:
        """Read levels 0 .. meta.levels-1 from a checkpoint folder (a fresh partition), each
        checked before it is used (NOTE(checked-levels)); returns the states kept, and how many
        they stand for under symmetry."""
        self.level_start = [0]
        self.parent_part, self.parent_id, self.via, self.orbits = [], [], [], []
        packing = ckpt.packing_of(self.exp.bm.layout, self.model)
        largest = None if self.exp.canon is None else int(self.exp.canon.order)
        for d in range(meta.levels):
            lv = ckpt.read_level(where, meta, self.index, d, self.exp.k)
            ckpt.check_level(where, meta, self.index, d, lv, packing=packing, bindings=self.B, largest_orbit=largest)
            self._check_states(where, d, lv.words)
            self.level_start.append(self.store.n)
            if self.table.insert(row_hash(lv.words), lv.words, self.store.n).size != lv.words.shape[1]:
                raise ckpt.damaged(where, ckpt.level_name(self.index, d), "a state is stored twice")
            self.store.append(lv.words)
            self.level_start[-1] = self.store.n
            self.parent_part.append(lv.parent_part)
            self.parent_id.append(lv.parent_id)
            self.via.append(lv.via.astype(self._via_type))
            if lv.orbit is not None:
                self.orbits.append(lv.orbit)
        return self.store.n, sum(int(o.sum()) for o in self.orbits)

    def _check_states(self, where: str, d: int, words: np.ndarray) -> None:
        """A level's states from a checkpoint are this partition's by hash, and level 0 is the
        initial state (NOTE(checked-levels); that each is stored once, load checks)."""
        name = ckpt.level_name(self.index, d)
        if words.shape[1] and np.any(owner_of(row_hash(words), self.parts) != self.index):
            raise ckpt.damaged(where, name, "a state belongs to another partition")
        if d == 0 and words.shape[1]:
            init = self.exp.bm.layout.pack_rows([self.model.initial])
            if self.exp.canon is not None:
                init, _ = self.exp.canon.canonicalise(init)
            if not np.array_equal(words, init):
                raise ckpt.damaged(where, name, "level 0 is not the initial state")


# --------------------------------------------------------------------------- where partitions run


class Local:
    """Partitions in this process (one, for a checkpointed run without Ray)."""

    def __init__(self, model: Model, parts: int, symmetry: bool, block: int) -> None:
        self.parts = [Partition(model, i, parts, symmetry=symmetry, block=block, share=parts) for i in range(parts)]

    def call(self, method: str, *args: Any) -> list[Any]:
        return [getattr(p, method)(*args) for p in self.parts]

    def one(self, i: int, method: str, *args: Any) -> Any:
        return getattr(self.parts[i], method)(*args)

    def expand(self, d: int, want: bool) -> list[Expanded]:
        outs = [p.expand(d, want) for p in self.parts]
        self._batches = [o[1:] for o in outs]
        return [o[0] for o in outs]

    def exchange(self, d: int) -> list[tuple[int, int]]:
        batches, self._batches = self._batches, []
        return [p.receive(d, *[batches[src][i] for src in range(len(self.parts))]) for i, p in enumerate(self.parts)]

    def close(self) -> None:
        self.parts = []


class WorkerLost(Exception):
    """A Ray worker died, became unreachable, or stopped answering mid-search; `stopped_by`
    says which ("worker-lost", or "worker-unresponsive" from the watchdog of OnRay)."""

    def __init__(self, what: str, stopped_by: str = "worker-lost") -> None:
        super().__init__(what)
        self.stopped_by = stopped_by


class TimeUp(Exception):
    """The search's max_seconds passed while the driver waited for the workers."""


#: A partition that answers no ping for this long is taken for frozen (a stopped process, a
#: node cut off that Ray still counts alive): the search stops, inconclusive, stopped by
#: "worker-unresponsive", with the levels completed (issue 29: it waited for good).
UNRESPONSIVE_SECONDS = 30.0

#: How often the driver pings each partition while it waits for them.
PING_EVERY = 1.0


class OnRay:
    """Partitions as Ray actors, named `ownership-<run>-<i>` (so that an operator, or a test,
    can find them); the successors move between them through Ray's object store, never
    through the driver.

    A watchdog: while the driver waits, it pings every partition once a PING_EVERY; a ping
    runs in a concurrency group of its own ("watch"), beside the partition's work, so that a
    busy partition answers and a frozen one does not (after UNRESPONSIVE_SECONDS: WorkerLost,
    "worker-unresponsive"). Only once every partition is built: a partition being built
    answers nothing, and its start is bounded by max_seconds only."""

    def __init__(self, ray: Any, recipe: Recipe, parts: int, symmetry: bool, block: int, held: Any,
                 deadline: float | None = None) -> None:
        self.ray = ray
        self.held = held
        self.deadline = deadline  # (time.monotonic(): max_seconds, also while the workers start)
        self.run = uuid.uuid4().hex[:8]
        from .cluster import cluster_cpus

        # (more partitions than CPUs share them: each asks for its share, so that all start)
        actor = ray.remote(num_cpus=min(1.0, cluster_cpus(ray) / parts), concurrency_groups={"watch": 1})(Partition)
        self.actors = [actor.options(name=f"ownership-{self.run}-{i}").remote(
            recipe, i, parts, symmetry=symmetry, block=block, share=parts) for i in range(parts)]
        self._outs: list[Any] = []
        self.pings: dict[int, tuple[Any, float]] = {}  # the ping in flight of each partition, and when it was sent
        self.heard: list[float] | None = None  # when each partition last answered a ping (None: not watched yet)
        try:
            self.wait([a.ready.remote() for a in self.actors])
        except BaseException:  # (stopped while they start: none is left holding its CPUs)
            self.close()
            raise
        self.heard = [time.monotonic()] * parts

    def wait(self, refs: Sequence[Any]) -> list[Any]:
        """The values of `refs`, waiting TICK at a time so that Ctrl-C and limits act (NOTE(deferred))."""
        ray = self.ray
        pending = list(refs)
        while pending:
            self.held.poll()
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise TimeUp
            self._watch()
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=TICK)
        self.held.poll()
        try:
            return list(ray.get(list(refs)))
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(getattr(e, "cause", None), BaseException) else None
            if isinstance(cause, OwnershipError):
                raise cause from None
            raise InternalError(f"a partition failed: {cause or e}") from None
        except ray.exceptions.RayError as e:  # an actor died, a node was lost, an object was lost
            raise WorkerLost(str(e).splitlines()[0] if str(e) else type(e).__name__) from None

    def _watch(self) -> None:
        """The watchdog (see the class): note the pings answered, raise WorkerLost for one
        unanswered for UNRESPONSIVE_SECONDS, send a ping to each partition due one. A ping
        of a dead actor counts as answered: waiting on its work says it died (WorkerLost)."""
        if self.heard is None:
            return
        now = time.monotonic()
        if self.pings:
            answered, _ = self.ray.wait([ref for ref, _ in self.pings.values()], num_returns=len(self.pings), timeout=0)
            done = set(answered)
            for i, (ref, sent) in list(self.pings.items()):
                if ref in done:
                    del self.pings[i]
                    self.heard[i] = now
                elif now - sent >= UNRESPONSIVE_SECONDS:
                    raise WorkerLost(f"partition {i} answered no ping for {UNRESPONSIVE_SECONDS:g} s",
                                     stopped_by="worker-unresponsive")
        for i, a in enumerate(self.actors):
            if i not in self.pings and now - self.heard[i] >= PING_EVERY:
                self.pings[i] = (a.ready.options(concurrency_group="watch").remote(), now)

    def call(self, method: str, *args: Any) -> list[Any]:
        return self.wait([getattr(a, method).remote(*args) for a in self.actors])

    def one(self, i: int, method: str, *args: Any) -> Any:
        return self.wait([getattr(self.actors[i], method).remote(*args)])[0]

    def expand(self, d: int, want: bool) -> list[Expanded]:
        n = len(self.actors)
        self._outs = [a.expand.options(num_returns=n + 1).remote(d, want) for a in self.actors]
        return self.wait([o[0] for o in self._outs])

    def exchange(self, d: int) -> list[tuple[int, int]]:
        outs, self._outs = self._outs, []
        n = len(self.actors)
        return self.wait([a.receive.remote(d, *[outs[src][1 + i] for src in range(n)])
                          for i, a in enumerate(self.actors)])

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 (an actor already gone is what we wanted)
                pass
        self.actors = []


# --------------------------------------------------------------------------- the driver




@dataclass
class Level:
    """One level's figures, kept for the benchmarks' cost model (bytes exchanged per state)."""

    depth: int
    states: int        # new states of the next level
    successors: int    # transitions expanded at this level
    sent: int          # bytes sent between different partitions
    kept_local: int    # bytes a partition sent to itself


class _Stop(Exception):
    def __init__(self, result: CheckResult) -> None:
        self.result = result


def check(model: Model, *, recipe: Recipe | None = None, ray: Any = None, parts: int = 1,
          max_states: int | None = None, max_depth: int | None = None, max_seconds: float | None = None,
          symmetry: bool = False, checkpoint: str | None = None, resume: str | None = None,
          reporter: Reporter | None = None, report_every: float = 0.5, block: int = 1 << 15) -> CheckResult:
    """Search `model` breadth first over `parts` partitions: Ray actors when `ray` (a connected
    Ray module) is given, with `recipe` to build the model in each; else in this process."""
    why = supports(model)
    if why is not None:
        raise UsageError(why + "; the partitioned search needs the batch engine")
    max_seconds = parse_seconds(max_seconds)
    if parts < 1:
        raise UsageError(f"{parts} workers: a partitioned search needs at least 1")
    if (ray is not None or checkpoint is not None or resume is not None) and recipe is None:
        raise UsageError("a partitioned search on Ray or with a checkpoint needs the recipe of its model"
                         " (ownership.engines.cluster.Recipe.of(spec, model))")
    bm = BatchModel(model, reachable=True)  # (the driver's: names, bits, the checks below; partitions build their own)
    if symmetry:
        from .symmetry import require_symmetric

        require_symmetric(model, bm)
    if bm.unsupported is not None:
        raise UsageError("the partitioned search needs the batch engine, and this spec's values need more than"
                         " 64 bits; check it without --ray and --checkpoint")
    return _Driver(model, bm, recipe, ray, parts, max_states=max_states, max_depth=max_depth, max_seconds=max_seconds,
                   symmetry=symmetry, checkpoint=checkpoint, resume=resume, reporter=reporter,
                   report_every=report_every, block=block).run()


class _Driver:
    """Coordinates one partitioned search; holds counts, never states."""

    def __init__(self, model: Model, bm: BatchModel, recipe: Recipe | None, ray: Any, parts: int, *, max_states: int | None,
                 max_depth: int | None, max_seconds: float | None, symmetry: bool, checkpoint: str | None,
                 resume: str | None, reporter: Reporter | None, report_every: float, block: int) -> None:
        self.model, self.recipe, self.ray, self.parts = model, recipe, ray, parts
        self.max_states, self.max_depth, self.max_seconds = max_states, max_depth, max_seconds
        self.symmetry, self.block = symmetry, block
        self.checkpoint = checkpoint or resume
        self.resume = resume
        self.reporter, self.report_every = reporter, report_every
        self.start = self.last_report = time.monotonic()
        self.names = bm.sometimes_names
        self.bits = bm.layout.bits
        self.layout = ckpt.layout_fingerprint(bm.layout, len(model.bindings))  # (what a checkpoint's words mean)
        self.files: dict[str, str] = {}   # the checkpoint's level files so far, with their checksums
        self.reached = {n: False for n in self.names}
        self.sizes: list[list[int]] = []   # per level, per partition: states
        self.transitions = 0
        self.levels: list[Level] = []
        self.peak = 0
        self.represented = 0   # under symmetry: the states the representatives stand for
        self.where: Any = None

    def _want(self) -> bool:
        return not all(self.reached.values())

    def _note(self, reached: Sequence[bool]) -> None:
        for name, hit in zip(self.names, reached):
            self.reached[name] = self.reached[name] or bool(hit)

    def states(self) -> int:
        return sum(sum(lv) for lv in self.sizes)

    def _report(self, depth: int, force: bool = False) -> None:
        now = time.monotonic()
        if self.reporter is None or (not force and now - self.last_report < self.report_every):
            return
        self.last_report = now
        per = tuple(sum(lv[i] for lv in self.sizes) for i in range(self.parts))
        self.reporter(Progress(now - self.start, kind="partitioned", states=self.states(),
                               transitions=self.transitions, depth=depth, per_worker=per,
                               sent_bytes=sum(lv.sent for lv in self.levels)))

    def run(self) -> CheckResult:
        # On Ray, Ctrl-C and the limits are held while the driver waits inside Ray's client,
        # and raised between two waits (NOTE(deferred)); in this process they act at once.
        with deferred() if self.ray is not None else contextlib.nullcontext(Held()) as held:
            try:
                if self.ray is not None and self.recipe is not None:
                    deadline = None if self.max_seconds is None else self.start + self.max_seconds
                    self.where = OnRay(self.ray, self.recipe, self.parts, self.symmetry, self.block, held, deadline)
                else:
                    self.where = Local(self.model, self.parts, self.symmetry, self.block)
                return self._search()
            except _Stop as stop:
                return stop.result
            except WorkerLost as lost:  # (died, or frozen: "worker-unresponsive")
                return self._finish(lost.stopped_by, self._bound(), note=str(lost))
            except TimeUp:  # (on Ray: the workers are stopped mid-level; the levels done count)
                return self._finish("max-seconds", self._bound())
            except KeyboardInterrupt:  # Ctrl-C, or a command's limit (ownership.limits)
                return self._finish("interrupt", self._bound())
            finally:
                if self.where is not None:
                    self.where.close()

    def _bound(self) -> int | None:
        """The depth up to which every state was checked: the levels expanded so far."""
        done = len(self.sizes) - 2  # (the last level kept is not yet checked)
        return done if done >= 0 else None

    def _search(self) -> CheckResult:
        where = self.where
        d = 0
        if self.resume is not None:
            meta = ckpt.read_meta(self.resume, self._digest(), self.layout, self.parts)
            got = where.call("load", self.resume, meta)
            self.files = dict(meta.files)
            self.sizes = [list(s) for s in meta.sizes]
            self.represented = sum(o for _, o in got)
            if [n for n, _ in got] != [sum(lv[i] for lv in self.sizes) for i in range(self.parts)]:
                raise UsageError(f"--resume {self.resume}: the checkpoint's files do not hold the states its"
                                 " checkpoint.json counts (a partial copy?); start the run again without --resume")
            self.transitions = meta.transitions
            self.reached.update({n: v for n, v in meta.reached.items() if n in self.reached})
            d = meta.levels - 1
        else:
            kept = where.call("seed")
            self.sizes = [[n for n, _ in kept]]
            self.represented = sum(o for _, o in kept)
            if self.checkpoint is not None:
                ckpt.start(self.checkpoint, self._digest(), self.parts)
                self._save(0)
        while sum(self.sizes[d]) > 0:
            if self.max_depth is not None and d >= self.max_depth:
                self._checked(d)
                return self._finish("max-depth", d)
            if self.max_seconds is not None and time.monotonic() - self.start >= self.max_seconds:
                return self._finish("max-seconds", self._bound())
            outs = where.expand(d, self._want())
            self.peak = max(self.peak, sum(o.rss for o in outs))
            self._events(d, outs)
            got = where.exchange(d)
            new = [n for n, _ in got]
            self.represented += sum(o for _, o in got)
            self.transitions += sum(o.transitions for o in outs)
            sent = sum(o.sent[j] for i, o in enumerate(outs) for j in range(self.parts) if i != j)
            local = sum(o.sent[i] for i, o in enumerate(outs))
            self.levels.append(Level(d, sum(new), sum(o.transitions for o in outs), sent, local))
            self.sizes.append(new)
            pending = next(((i, o.step_error) for i, o in enumerate(outs) if o.step_error is not None), None)
            if pending is not None:  # a state of level d + 1 that violates a property comes first
                self._checked(d + 1)
                self._raise_step_error(*pending)
            if self.max_states is not None and self.states() >= self.max_states:
                self._cut(d + 1)
                self._checked(d + 1)
                return self._finish("max-states", d)
            d += 1
            if self.checkpoint is not None:
                self._save(d)
            self._report(d)
        return self._finish(None, None)

    def _digest(self) -> str:
        if self.recipe is None:
            raise InternalError("a checkpointed search without the recipe of its model")
        return self.recipe.digest()

    def _save(self, d: int) -> None:
        """Level d is complete everywhere: every partition writes it, then the driver's
        checkpoint.json says the checkpoint now holds levels 0..d (written last, atomically),
        with each file's checksum. A file that cannot be written (a full disk) stops the
        search with the coverage it reached (issue 29): the checkpoint keeps levels 0..d-1."""
        assert self.checkpoint is not None
        saved: list[ckpt.Saved] = self.where.call("save_level", self.checkpoint, d)
        failed = next((s for s in saved if s.error), None)
        if failed is None:
            self.files.update({s.name: s.sha256 for s in saved})
            try:
                ckpt.write_meta(self.checkpoint, ckpt.Meta(self._digest(), self.parts, d + 1, self.sizes,
                                                           self.transitions, dict(self.reached), self.layout,
                                                           dict(self.files)))
                return
            except OSError as e:
                failed = ckpt.Saved(ckpt.META, error=str(e.strerror or e))
        raise _Stop(self._unsaved(d, failed))

    def _unsaved(self, d: int, failed: ckpt.Saved) -> CheckResult:
        """The result of a search whose level d could not be checkpointed: inconclusive, with
        the coverage reached, and what the checkpoint still holds."""
        result = self._finish("checkpoint-failed", self._bound())
        held = (f"it is complete up to level {d - 1}, and --resume {self.checkpoint} continues from there" if d
                else "it holds no level")
        said = f"the checkpoint could not be written, {failed.name}: {failed.error}; {held}"
        result.note = f"{result.note}; {said}" if result.note else said
        return result

    def _events(self, d: int, outs: list[Expanded]) -> None:
        """After level d's expansion: the events in the single-process engine's order."""
        self._states_failed(d, outs)
        for i, o in enumerate(outs):
            if o.flag is not None:
                self.transitions += sum(x.transitions for x in outs)
                self._stop_at_step(i, *o.flag, d)

    def _checked(self, d: int) -> None:
        """Check level d's states (no expansion); a violation ends the search."""
        self._states_failed(d, self.where.call("check_level", d, self._want()))

    def _states_failed(self, d: int, outs: Sequence[Expanded | Checked]) -> None:
        """What the partitions found in level d's states: a violation ends the search; else
        the first spec error is raised; the sometimes properties reached are noted."""
        for o in outs:
            self._note(o.reached)
        for i, o in enumerate(outs):
            if o.bad is not None:
                self._stop_at_state(i, o.bad, d)
        for i, o in enumerate(outs):
            if o.state_error is not None:
                raise_state_error(self.model, self.symmetry, *self._path(i, o.state_error))

    def _cut(self, d: int) -> None:
        """Cut the last level so that the search keeps exactly max_states states."""
        assert self.max_states is not None
        room = self.max_states - sum(sum(lv) for lv in self.sizes[:d])
        keep = []
        for n in self.sizes[d]:
            keep.append(max(0, min(n, room)))
            room -= keep[-1]
        for i, k in enumerate(keep):
            if k < self.sizes[d][i]:
                self.represented -= self.where.one(i, "cut", d, k)
        self.sizes[d] = keep

    def _path(self, part: int, sid: int) -> tuple[list[tuple[int, ...]], list[int]]:
        """The stored states and bindings from the initial state to state `sid` of partition `part`."""
        states, via = [], []
        while True:
            step = self.where.one(part, "step_of", sid)
            states.append(step.state)
            if step.parent_part < 0:
                break
            via.append(step.via)
            part, sid = step.parent_part, step.parent_id
        return states[::-1], via[::-1]

    def _raise_step_error(self, part: int, at: tuple[int, int]) -> None:
        stored, via = self._path(part, at[0])
        raise_step_error(self.model, self.symmetry, stored, via, at[1])

    def _stop_at_state(self, part: int, sid: int, d: int) -> None:
        stored, via = self._path(part, sid)
        states, bindings = actual_run(self.model, self.symmetry, stored, via)
        flags = Concrete(self.model).state_flags(states[-1])
        if not flags:
            raise InternalError("the batch and concrete interpreters disagree on a state property")
        raise _Stop(self._violation(states, bindings, flags, d))

    def _stop_at_step(self, part: int, sid: int, b: int, d: int) -> None:
        stored, via = self._path(part, sid)
        states, bindings = actual_run(self.model, self.symmetry, stored, via + [b])
        out = Concrete(self.model).step(states[-2], self.model.bindings[bindings[-1]])
        if out is None or not out.flags:
            raise InternalError("the batch and concrete interpreters disagree on a kernel flag")
        raise _Stop(self._violation(states, bindings, out.flags, d + 1))

    def _violation(self, states: list[tuple[int, ...]], bindings: list[int], flags: Any, depth: int) -> CheckResult:
        model = self.model
        trace = build_trace(model, states, [model.bindings[b] for b in bindings], flags, engine="explicit")
        return CheckResult(Verdict.VIOLATED, self._coverage(False, "violation", depth, None), "explicit", trace=trace,
                           sometimes={k: (True if v else None) for k, v in self.reached.items()}, note=self._how())

    def _coverage(self, complete: bool, stopped_by: str | None, depth: int, bound: int | None) -> Coverage:
        before = self.represented if self.symmetry else None
        return Coverage(self.states(), self.transitions, depth, complete=complete, stopped_by=stopped_by,
                        seconds=time.monotonic() - self.start, bound_depth=bound, states_before_symmetry=before,
                        bits_per_state=self.bits, peak_memory=self.peak or None)

    def _finish(self, stopped_by: str | None, bound: int | None, note: str = "") -> CheckResult:
        depth = max(len(self.sizes) - 1, 0)  # (no level yet: stopped while the workers started)
        while depth > 0 and sum(self.sizes[depth]) == 0:
            depth -= 1
        complete = stopped_by is None
        if stopped_by in ("worker-lost", "worker-unresponsive"):
            cov = Coverage(self.states(), self.transitions, depth, complete=False, stopped_by=stopped_by,
                           seconds=time.monotonic() - self.start, bound_depth=bound)
        else:
            cov = self._coverage(complete, stopped_by, depth, None if complete else bound)
        if complete:
            result = CheckResult(Verdict.VERIFIED, cov, "explicit", sometimes=dict(self.reached))
        else:
            verdict = Verdict.BOUNDED if stopped_by in ("max-states", "max-depth") else Verdict.INCONCLUSIVE
            result = CheckResult(verdict, cov, "explicit",
                                 sometimes={k: (True if v else None) for k, v in self.reached.items()})
        # (per level: successors and bytes sent, for the benchmarks' cost model)
        result.levels = self.levels  # type: ignore[attr-defined]
        result.note = self._how(note)
        return result

    def _how(self, lost: str = "") -> str:
        """How the search ran, in words (CheckResult.note)."""
        if self.ray is None and self.parts == 1:
            how = ""
        else:
            where = "Ray workers" if self.ray is not None else "partitions in this process"
            how = f"the visited states in {self.parts} parts, searched by {self.parts} {where}"
        if lost:
            how += ("; " if how else "") + f"a worker was lost ({lost}): the levels it took part in are not counted"
        return how
