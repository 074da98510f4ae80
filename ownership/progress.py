"""What a running search reports, one class for every engine (issue 30, item 2).

An engine calls its reporter with a `Progress` now and then (about twice a second); the
command prints `describe()` on stderr (ownership.cli.common.Progress), a library user reads
the fields. One class, where there were six (the per-state, batch, fuzz, partitioned, swarm
and symbolic engines each had theirs, and the command's guard a seventh): `kind` says which
fields a report fills.

- "search": an explicit search or fuzz: states, transitions, depth (the batch and native
  engines add memory_bytes and, under symmetry, states_before_symmetry; fuzz runs and phase,
  "search" then "shrink"; the liveness search its graph's states);
- "partitioned": the search of --ray and --checkpoint: also the states each worker keeps;
- "swarm": fuzz as a swarm: searches and how many are done, runs, distinct states;
- "symbolic": bmc and prove: phase ("bmc", "base case", "induction step"), depth done, queries;
- "phase": the command outside an engine (ownership.limits: loading, tracing, compiling).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """A snapshot of a running search (the fields its `kind` fills; the others keep their
    defaults)."""

    seconds: float
    kind: str = "search"
    states: int = 0
    transitions: int = 0
    depth: int = 0
    memory_bytes: int = 0
    states_before_symmetry: int | None = None
    runs: int = 0
    phase: str = ""
    queries: int = 0
    per_worker: tuple[int, ...] = ()
    sent_bytes: int = 0
    searches: int = 0
    done: int = 0

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def describe(self) -> str:
        """The report as one line, for a progress line on stderr."""
        if self.kind == "phase":
            return f"{self.phase}: {self.seconds:.0f} s"
        if self.kind == "symbolic":
            return f"{self.phase}: depth {self.depth} done, {self.queries} solver queries, {self.seconds:.0f} s"
        if self.kind == "swarm":
            return (f"{self.done}/{self.searches} searches done, {self.runs:,} runs, {self.states:,} distinct states,"
                    f" {self.seconds:.0f} s")
        line = (f"{self.states:,} states, {self.transitions:,} transitions, depth {self.depth},"
                f" {self.states_per_second:,.0f} states/s")
        if self.kind == "partitioned":
            workers = ", ".join(f"{n:,}" for n in self.per_worker)
            return f"{line}, {self.seconds:.0f} s; per worker: {workers}"
        memory = f", {self.memory_bytes / 2**20:,.0f} MB" if self.memory_bytes else ""
        return f"{line}{memory}, {self.seconds:.0f} s"


#: What an engine calls with its progress (never required: None reports nothing).
Reporter = Callable[[Progress], None]

__all__ = ["Progress", "Reporter"]
