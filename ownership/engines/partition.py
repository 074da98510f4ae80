"""One partition of the partitioned search (ownership.engines.partitioned): a part of the visited set.

A `Partition` owns the states whose hash falls in it (`owner_of`): its store of packed rows, its
part of the visited table, and each state's parent (partition and id there) and binding, level
by level. It expands its part of a level with the batch interpreter and sends each successor
to the partition that owns it, keeps the new ones it receives, checks its states' properties,
and writes and reads its levels of a checkpoint (NOTE(checked-levels)). It runs in the
driver's process (`Local`) or as a Ray actor (`OnRay`, built from a Recipe); what it says back
is `Expanded`, `Checked` and `Step`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InternalError
from ..lang.model import Model
from ..limits import available_memory, resident_memory
from . import checkpoint as ckpt
from .cluster import Recipe
from .expand import Expander
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
    fired: Any = None  # transitions per binding (numpy int64), of the blocks expanded


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
            fired = np.bincount(blk.pos % self.B, minlength=self.B)
            out.fired = fired if out.fired is None else out.fired + fired
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
