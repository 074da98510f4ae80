"""Verdicts, coverage and CheckResult: what every engine returns, and the one table of exit codes.

A result never claims more than was covered: `verified` only when every reachable state was
explored (or a proof holds), `bounded` when a bound stopped the search without a violation,
`inconclusive` when a limit, Ctrl-C or a solver's `unknown` stopped it early.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

#: Exit code for bad input: a usage error, a spec error, an unreadable trace or log.
EXIT_BAD_INPUT = 2

#: Exit code for a bug of ownership itself (engines disagree, an assertion of ours): never 0 or 1,
#: so that neither "verified" nor "violated" can come from one.
EXIT_INTERNAL = 4


class Verdict(enum.Enum):
    """The outcome of a check, with its exit code and what it means."""

    VIOLATED = ("violated", 1, "a property fails; a trace is attached")
    VERIFIED = ("verified", 0, "every reachable state explored, or proved")
    BOUNDED = ("bounded", 0, "no violation within the stated bound")
    INCONCLUSIVE = ("inconclusive", 3, "stopped early: limit, interrupt or solver unknown")

    def __init__(self, word: str, exit_code: int, meaning: str) -> None:
        self.word = word
        self.exit_code = exit_code
        self.meaning = meaning

    def exit_code_for(self, *, strict: bool = False) -> int:
        """The process exit code; under --strict a bounded pass counts as inconclusive (3)."""
        if strict and self is Verdict.BOUNDED:
            return Verdict.INCONCLUSIVE.exit_code
        return self.exit_code


#: The exit codes of every command, for docs and `--help` (one table; docs/cli.md shows it).
EXIT_CODES: dict[int, str] = {
    0: "verified, or bounded without a violation (a replay: the trace no longer violates)",
    1: "violated: a property fails and a trace is attached",
    2: "bad input: usage error, spec error, unreadable trace or configuration",
    3: "inconclusive: stopped by a limit, Ctrl-C or a solver's unknown; bounded under --strict",
    4: "internal error: a bug of ownership itself (engines disagree); please report it",
}


#: Coverage.memory() speaks from this many states on (NOTE(held-memory)).
MEMORY_SHOWN_FROM = 100_000


@dataclass(frozen=True)
class Coverage:
    """What a search actually covered: the only basis for a verdict."""

    states: int
    transitions: int
    depth: int
    complete: bool
    #: "violation", "max-states", "max-seconds", "interrupt", "worker-lost", "worker-unresponsive",
    #: "checkpoint-failed" (a level or checkpoint.json of --checkpoint could not be written: a
    #: full disk, issue 29), ...
    stopped_by: str | None = None
    seconds: float = 0.0
    #: when incomplete: every execution of at most this many steps was checked
    bound_depth: int | None = None
    #: random testing (the fuzz engine): how many runs were executed; None for the others
    runs: int | None = None
    #: random testing: actions that no run fired, and those of them that were never enabled
    never_fired: tuple[str, ...] = ()
    never_enabled: tuple[str, ...] = ()
    #: random testing: the seed that reproduces the runs (None: derandomised, or not random)
    seed: int | None = None
    #: symmetry reduction (the batch engine): how many states the `states` representatives
    #: stand for, i.e. the count without reduction; None when no reduction was applied
    states_before_symmetry: int | None = None
    #: exhaustive search (the batch engine): bits of a packed state, and the peak resident
    #: memory of the search in bytes; None when not measured
    bits_per_state: int | None = None
    peak_memory: int | None = None
    #: exhaustive search (the batch and native engines): the bytes that the search's own
    #: store of states and visited table hold, by the engine's count (NOTE(held-memory));
    #: None when not counted
    held_memory: int | None = None
    #: a complete exhaustive search: the transitions of each action (name, count), in
    #: declaration order, as TLC's coverage; 0: enabled in no reachable state. None where not
    #: counted (an incomplete search, a run resumed from a checkpoint)
    actions: tuple[tuple[str, int], ...] | None = None

    def never_enabled_actions(self) -> list[str]:
        """The actions enabled in no reachable state, where a complete search counted them."""
        return [name for name, n in self.actions or () if n == 0]

    def memory(self) -> str | None:
        """The memory of an exhaustive search in words (its own count and the peak resident
        set), or None when the engine counted none, or the search was too small for it to say
        anything (below MEMORY_SHOWN_FROM states a fixed first table dominates the figure).

        NOTE(held-memory): the count is of what grows with the states: the batch engine's rows
        of its store (k words, a parent, a binding, an orbit size under symmetry) and its
        table's slots; the native engine's words and parent per state and its table's 4-byte
        slots. Neither counts the interpreter, the traced spec or a block's temporaries, which
        the peak resident set (measured beside it) includes. tests/engines/test_native.py and
        tests/cli/test_limits.py hold the count within 1.5x of the resident memory the search adds."""
        if self.held_memory is None or self.states <= 0:
            return None
        if self.states < MEMORY_SHOWN_FROM and self.stopped_by != "max-memory":
            return None
        per = self.held_memory / self.states
        text = (f"Memory: the stored states and the visited table hold {self.held_memory / 2**20:,.0f} MB"
                f" ({per:,.1f} bytes a state)")
        if self.peak_memory:
            text += f"; peak resident {self.peak_memory / 2**20:,.0f} MB"
        if self.stopped_by == "max-memory":
            text += f"; each further million states would take about {per * 1e6 / 2**20:,.0f} MB more"
        return text

    def describe(self) -> str:
        """What was covered, in words, never more than that."""
        if self.runs is not None:
            return self._describe_runs()
        if self.states_before_symmetry is not None:
            if self.complete:
                return (f"all {self.states_before_symmetry:,} reachable states, as {self.states:,} up to"
                        f" symmetry ({self.transitions:,} transitions, depth {self.depth})")
            counts = (f"{self.states:,} states up to symmetry ({self.states_before_symmetry:,} states),"
                      f" {self.transitions:,} transitions")
        elif self.complete:
            return f"all {self.states:,} reachable states ({self.transitions:,} transitions, depth {self.depth})"
        else:
            counts = f"{self.states:,} states, {self.transitions:,} transitions"
        if self.stopped_by == "violation":
            return f"{counts} before the violation"
        within = "" if self.bound_depth is None else f"; every execution of at most {self.bound_depth} steps checked"
        return f"{counts}{within} (stopped by {self.stopped_by}; not every reachable state was explored)"

    def to_json(self) -> dict[str, Any]:
        return {
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "complete": self.complete,
            "stopped_by": self.stopped_by,
            "seconds": round(self.seconds, 3),
            "bound_depth": self.bound_depth,
        } | self._runs_json() | self._search_json() | ({} if self.actions is None else {"actions": dict(self.actions)})

    def _describe_runs(self) -> str:
        """Random testing in words: runs, steps, and the actions that never fired."""
        text = (f"{self.runs:,} run{'' if self.runs == 1 else 's'}, {self.transitions:,} steps (longest run {self.depth}),"
                f" {self.states:,} distinct states")
        enabled_only = [a for a in self.never_fired if a not in self.never_enabled]
        if self.never_enabled:
            text += f"; never enabled: {', '.join(self.never_enabled)}"
        if enabled_only:
            text += f"; enabled but never fired: {', '.join(enabled_only)}"
        if self.stopped_by == "violation":
            return f"{text}, before the violation"
        stop = "" if self.stopped_by in (None, "max-runs") else f"; stopped by {self.stopped_by}"
        return f"{text}{stop} (random runs: not every reachable state was explored)"

    def _search_json(self) -> dict[str, Any]:
        """The batch engine's extra figures, only when it measured them (not the peak memory:
        like a duration it differs from run to run, and JSON output stays comparable)."""
        out: dict[str, Any] = {}
        for key in ("states_before_symmetry", "bits_per_state"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    def _runs_json(self) -> dict[str, Any]:
        if self.runs is None:
            return {}
        return {"runs": self.runs, "never_fired": list(self.never_fired),
                "never_enabled": list(self.never_enabled), "seed": self.seed}


@dataclass
class CheckResult:
    """A verdict, the coverage behind it, and on a violation the shortest trace found."""

    verdict: Verdict
    coverage: Coverage
    engine: str
    trace: Any = None  # ownership.trace.Trace when violated
    sometimes: dict[str, bool | None] = field(default_factory=dict)  # None: not checked to the end
    model: Any = None  # the ownership.lang.model.Model that was checked (set by ownership.api)
    reproduce: str = ""  # the command that re-runs this check (set by ownership.api)
    #: each liveness property checked: "holds on every behaviour", "violated", or why not checked
    liveness: dict[str, str] = field(default_factory=dict)
    fairness: str = ""   # the fairness the liveness verdict assumed, in words
    #: each @measure over every reachable state (ownership.engines.liveness.Measured); empty
    #: where it was not computed (another engine, or a search that did not cover every state)
    measures: dict[str, Any] = field(default_factory=dict)
    measures_note: str = ""  # why --measure measured nothing, where it did not
    #: seconds spent after the search on its reachable graph (liveness, measures), None: none
    graph_seconds: float | None = None
    #: how the search ran beyond one process, and what it lost, in words (a search on Ray:
    #: "2 workers"; "a worker was lost: ..."; a swarm's searches), "" for a one-process search
    note: str = ""

    def took(self) -> str:
        """How long the check took, in words: "in 0.45 s", or with the reachable graph's share
        after the search (liveness, measures) "in 15.08 s (0.33 s the search, 14.75 s liveness
        and measures on its graph)"."""
        search = self.coverage.seconds
        if self.graph_seconds is None:
            return f"in {search:.2f} s"
        return (f"in {search + self.graph_seconds:.2f} s ({search:.2f} s the search, {self.graph_seconds:.2f} s"
                " liveness and measures on its graph)")

    @classmethod
    def of_search(cls, coverage: Coverage, reached: dict[str, bool], engine: str = "explicit") -> CheckResult:
        """The result of an exhaustive search that found no violation: verified when it covered
        every reachable state, else bounded (a limit of states or depth) or inconclusive (time,
        memory, Ctrl-C, a lost worker); a @sometimes not reached is "never" only after a
        complete search (None: not reached before it stopped)."""
        if coverage.complete:
            return cls(Verdict.VERIFIED, coverage, engine, sometimes=dict(reached))
        verdict = Verdict.BOUNDED if coverage.stopped_by in ("max-states", "max-depth") else Verdict.INCONCLUSIVE
        return cls(verdict, coverage, engine, sometimes={k: (True if v else None) for k, v in reached.items()})

    @property
    def violation(self) -> Any:
        return self.trace.violation if self.trace is not None else None
