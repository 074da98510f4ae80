"""The reachable graph of a model: every state and every transition, breadth first.

Liveness and the measures need the whole graph, edges included, after the safety search has
covered every reachable state (ownership.engines.liveness). One builder, `build`, walks it a
block of states at a time; what computes a block's successors is an expander:

- `PerState`: the concrete interpreter, state by state (any spec; it is the semantics);
- `Packed`: the batch interpreter, a block of packed rows at once (a hundred times faster),
  for the specs it runs.

Both give a block's successors in the per-state engine's discovery order (the state, then the
binding), so the graph is the same, state for state and edge for edge, whichever expander
built it (tests/engines/test_liveness.py compares them). `build` takes the packed expander
where it runs the spec; when a step of the spec raises an error, it builds again with the
concrete interpreter, which raises that error with its message. Nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..interpret.concrete import Concrete
from ..lang.model import Model
from ..progress import Progress, Reporter

#: States expanded at a time: by the packed expander (one call of the batch interpreter), and
#: by the concrete one (between two looks at the limits).
BLOCK = {"packed": 4096, "per-state": 64}


@dataclass
class Graph:
    """The reachable states (0 initial) with their outgoing edges and a BFS tree."""

    states: list[tuple[int, ...]]
    succ: list[list[tuple[int, int]]]  # per state: (binding index, target state)
    parent: list[int]
    via: list[int]
    transitions: int = 0
    depth: list[int] = field(default_factory=list)  # per state: its BFS depth (filled by depths())

    def depths(self) -> list[int]:
        if len(self.depth) != len(self.states):
            self.depth = [0] * len(self.states)
            for i in range(1, len(self.states)):
                self.depth[i] = self.depth[self.parent[i]] + 1
        return self.depth

    @classmethod
    def of_states(cls, states: list[tuple[int, ...]]) -> Graph:
        """The states alone, without edges: to evaluate the obligations in them (`instances`)."""
        n = len(states)
        return cls(list(states), [[] for _ in states], [-1] * n, [-1] * n)

    def path(self, i: int) -> list[int]:
        """The states of the shortest path from the initial state to state i."""
        out = []
        while i != -1:
            out.append(i)
            i = self.parent[i]
        return out[::-1]


class Expander(Protocol):
    """What computes the successors of a block of the graph's states."""

    block: int

    def key(self, state: tuple[int, ...]) -> Any:
        """The visited table's key of a state."""

    def successors(self, states: list[tuple[int, ...]], start: int, stop: int) -> tuple[Sequence[int],
                                                                                          Sequence[int], list[Any]]:
        """The successors of states start..stop, in discovery order: (row in the block,
        binding, key) each."""

    def states_of(self, fresh: list[int]) -> list[tuple[int, ...]]:
        """The states of the successors at these positions of the last `successors`, which the
        table had not seen, in that order."""


class PerState:
    """Successors by the concrete interpreter: the key of a state is the state."""

    def __init__(self, model: Model, block: int | None = None) -> None:
        self.interp, self.bindings = Concrete(model), model.bindings
        self.block = block or BLOCK["per-state"]
        self.keys: list[tuple[int, ...]] = []

    def key(self, state: tuple[int, ...]) -> tuple[int, ...]:
        return state

    def successors(self, states: list[tuple[int, ...]], start: int, stop: int) -> tuple[list[int], list[int],
                                                                                          list[Any]]:
        rows: list[int] = []
        binds: list[int] = []
        self.keys = []
        for row in range(stop - start):
            state = states[start + row]
            for b, binding in enumerate(self.bindings):
                nxt = self.interp.step(state, binding)
                if nxt is not None:
                    rows.append(row)
                    binds.append(b)
                    self.keys.append(nxt.state)
        return rows, binds, list(self.keys)

    def states_of(self, fresh: list[int]) -> list[tuple[int, ...]]:
        return [self.keys[t] for t in fresh]


class Unrunnable(Exception):
    """A step of the spec raises an error in the packed expander: the concrete one says which."""


class Packed:
    """Successors by the batch interpreter, a block of packed rows at once: the key of a state
    is its packed words' bytes. The packed states are kept in blocks, in state order."""

    def __init__(self, bm: Any, block: int | None = None) -> None:
        self.bm, self.layout = bm, bm.layout
        self.block = block or BLOCK["packed"]
        self.packed: list[np.ndarray] = []
        self.words = np.zeros((0, 0), dtype=np.uint64)

    @classmethod
    def of(cls, model: Model, block: int | None = None) -> Packed | None:
        """The packed expander of `model`, or None when the batch interpreter cannot run it."""
        from ..interpret.batch import BatchModel
        from ..ir.graph import MAX_POOL_PAGES

        if any(info.size > MAX_POOL_PAGES for info in model.pools.values()):
            return None
        bm = BatchModel(model, reachable=True)
        return None if bm.unsupported is not None else cls(bm, block)

    def key(self, state: tuple[int, ...]) -> bytes:
        first = self.layout.pack_rows([state])
        self.packed.append(first)
        return first[:, 0].tobytes()

    def successors(self, states: list[tuple[int, ...]], start: int, stop: int) -> tuple[list[int], list[int],
                                                                                          list[Any]]:
        e = self.bm.expand(_columns(self.packed, start, stop))
        if e.error_rows.size:
            raise Unrunnable
        order = np.argsort(e.rows, kind="stable")  # (row, then binding: the concrete order)
        self.words = np.ascontiguousarray(e.words.take(order, axis=1).T)
        keys = [w.tobytes() for w in self.words]
        return e.rows.take(order).tolist(), e.binding.take(order).tolist(), keys

    def states_of(self, fresh: list[int]) -> list[tuple[int, ...]]:
        new = np.ascontiguousarray(self.words[fresh].T)
        self.packed.append(new)
        return [tuple(r) for r in self.layout.unpack(new).T.tolist()]


class Budget:
    """The limits and the progress reports of a graph build."""

    def __init__(self, max_states: int | None, max_seconds: float | None, reporter: Reporter | None,
                 report_every: float) -> None:
        self.max_states, self.max_seconds = max_states, max_seconds
        self.reporter, self.report_every = reporter, report_every
        self.start = self.last = time.monotonic()

    def stop(self, states: int, transitions: int, depth: int) -> str | None:
        """The limit the build has reached, if any (and a progress report when one is due)."""
        if self.max_states is not None and states > self.max_states:
            return "max-states"
        now = time.monotonic()
        if self.max_seconds is not None and now - self.start >= self.max_seconds:
            return "max-seconds"
        if self.reporter is not None and now - self.last >= self.report_every:
            self.last = now
            self.reporter(Progress(now - self.start, states=states, transitions=transitions, depth=depth))
        return None


def build(model: Model, *, max_states: int | None, max_seconds: float | None, reporter: Reporter | None,
          report_every: float = 0.5, expander: Expander | None = None) -> tuple[Graph, str | None]:
    """Every reachable state and transition of `model`, breadth first; (graph, what stopped
    the build or None). `expander`: the packed one where it runs the spec, else per state."""
    if expander is None:
        packed = Packed.of(model)
        if packed is not None:
            try:
                return build(model, max_states=max_states, max_seconds=max_seconds, reporter=reporter,
                             report_every=report_every, expander=packed)
            except Unrunnable:
                pass  # (the concrete interpreter raises the spec's error, with its message)
        expander = PerState(model)
    budget = Budget(max_states, max_seconds, reporter, report_every)
    states = [model.initial]
    index = {expander.key(model.initial): 0}
    succ: list[list[tuple[int, int]]] = []
    parent, via, depth = [-1], [-1], [0]
    transitions = 0
    head = 0
    stopped: str | None = None
    try:
        while head < len(states):
            stop = min(len(states), head + expander.block)
            rows, binds, keys = expander.successors(states, head, stop)
            out: list[list[tuple[int, int]]] = [[] for _ in range(stop - head)]
            fresh = []
            for t, (row, b, key) in enumerate(zip(rows, binds, keys)):
                j = index.get(key)
                here = head + row
                if j is None:
                    j = index[key] = len(states)
                    states.append(None)  # type: ignore[arg-type]  (filled below, a block at a time)
                    fresh.append(t)
                    parent.append(here)
                    via.append(b)
                    depth.append(depth[here] + 1)
                out[row].append((b, j))
            transitions += len(rows)
            if fresh:
                states[len(states) - len(fresh):] = expander.states_of(fresh)
            succ.extend(out)
            head = stop
            stopped = budget.stop(len(states), transitions, depth[head - 1])
            if stopped is not None:
                break
    except KeyboardInterrupt:  # Ctrl-C, or a command's limit (ownership.limits; api names it)
        stopped = "interrupt"
    return Graph(states, succ, parent, via, transitions, depth), stopped


def _columns(blocks: list[np.ndarray], start: int, stop: int) -> np.ndarray:
    """Columns start..stop of the concatenation of packed blocks."""
    out, at = [], 0
    for b in blocks:
        n = b.shape[1]
        if at + n > start and at < stop:
            out.append(b[:, max(start - at, 0):min(stop - at, n)])
        at += n
        if at >= stop:
            break
    return np.ascontiguousarray(np.concatenate(out, axis=1)) if len(out) > 1 else np.ascontiguousarray(out[0])
