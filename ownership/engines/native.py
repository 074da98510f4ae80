"""The native explicit-state engine: the per-state engine's search, compiled to C.

ownership.interpret.native_source writes a model's traced graphs and a breadth-first search as C;
this module compiles it, runs it a slice of states at a time (so that progress is reported,
--max-seconds and --max-memory hold, and Ctrl-C stops it between slices, keeping what it
found), and turns what it stops at into the result the per-state and batch engines return:
the same states, transitions, depth, verdict and trace (NOTE(first-event) of
ownership.engines.per_state: the first violation in discovery order at the shallowest depth,
a spec error of a depth raised only once that depth is done). A counterexample is rebuilt
from the stored parents and replayed by the concrete interpreter, whose flags it reports.

With `symmetry=True` the search stores one representative per renaming of interchangeable
requests, canonicalised in C exactly as ownership.engines.symmetry does it (the same
representatives, counts and traces as the batch engine with symmetry). No worker processes
yet: those runs stay with the batch engine. Engines never print: progress goes to the reporter.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import limits
from ..errors import InternalError, UsageError
from ..interpret.batch import BatchModel
from ..interpret.concrete import Concrete
from ..interpret.native import NativeModel
from ..lang.model import Model
from ..limits import parse_seconds, resident_memory
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace
from .batch import supports
from .memory import PeakMemory, memory_limit
from .paths import actual_run, raise_state_error, raise_step_error

#: Statuses of ownership_run (ownership.interpret.native_search.SEARCH).
SLICE, DONE, STEP_VIOLATES, STATE_VIOLATES, MAX_STATES, MAX_DEPTH, SPEC_ERROR, NO_MEMORY = range(8)

#: Seconds a slice of the search should take: progress, limits and Ctrl-C are seen this often.
SLICE_SECONDS = 0.1


def check(model: Model, *, max_states: int | None = None, max_depth: int | None = None,
          max_seconds: float | None = None, max_memory: int | None = None, symmetry: bool = False,
          reporter: Reporter | None = None, report_every: float = 0.5) -> CheckResult:
    """Explore the reachable states of `model` breadth first in compiled code; returns what
    ownership.engines.per_state.check returns (with symmetry, what the batch engine returns)."""
    why = supports(model)
    if why is not None:
        raise UsageError(why + "; the native engine takes what the batch engine takes")
    max_seconds = parse_seconds(max_seconds)
    if max_memory is not None and max_memory < 1:
        raise UsageError(f"max_memory={max_memory}: a memory limit is a number of bytes above 0")
    start = time.monotonic()
    with limits.phase("translating the spec's actions into one graph"):
        bm = BatchModel(model, reachable=True)
    if bm.unsupported is not None:  # (as the batch engine does: Python's integers, the same search)
        if symmetry:
            raise UsageError(f"--symmetry, --workers and --max-memory need the batch engine, and"
                             f" {bm.unsupported} 64 bits; check it without them")  # (the batch engine's words)
        from . import per_state

        return per_state.check(model, max_states=max_states, max_depth=max_depth, max_seconds=max_seconds,
                              reporter=reporter, report_every=report_every)
    canon = _canonicaliser(model, bm) if symmetry else None
    # (compiling a model of large pools takes minutes, once: the progress line says so, and a
    # limit or Ctrl-C stops the compilers; NOTE(parts) in ownership.interpret.native_source)
    with limits.phase("compiling the model to C (once: the library is cached for the next run)"):
        nm = NativeModel(bm, canon)
    run = _Run(model, bm, nm, start, symmetry)
    # (the C search keeps to the ceiling itself, NOTE(memory) in ownership.interpret.native_search: the
    # command's timer, which stops others at 0.98 of it less two ticks' growth, stopped this one
    # at 0.65 of --max-memory 300M when the store grew in one step; issue 29)
    with limits.memory_checked():
        return run.search(max_states, max_depth, max_seconds, max_memory, reporter, report_every)


#: The share of the memory limit that the process may hold when the C search has grown to
#: its budget (NOTE(memory) in ownership.interpret.native_search): the command's peak is then 0.98 of
#: --max-memory 300M and 1G (benchmarks/memory_stop.py; 0.79 to 0.86 before issue 29).
HELD_SHARE = 0.98

#: Beyond this many requests, requests! does not fit the C search's 64-bit orbit counts.
MAX_SYMMETRIC_REQUESTS = 20


def _canonicaliser(model: Model, bm: BatchModel) -> Any:
    """The symmetry module's canonicaliser for the C search, after its static check (None
    for a single request: nothing to rename)."""
    if model.requests < 2:
        return None
    if model.requests > MAX_SYMMETRIC_REQUESTS:
        raise UsageError(f"--symmetry --native: {model.requests} requests; the native engine reduces at most"
                         f" {MAX_SYMMETRIC_REQUESTS} (requests! must fit 64 bits): leave --native out")
    from .symmetry import Canonicaliser, require_symmetric

    require_symmetric(model, bm)
    return Canonicaliser(model, bm.layout)


class _Run:
    def __init__(self, model: Model, bm: BatchModel, nm: NativeModel, start: float, symmetric: bool) -> None:
        self.model, self.bm, self.nm, self.start = model, bm, nm, start
        self.symmetric = symmetric
        self.lib = nm.lib
        self.S: Any = None
        self.names = list(bm.sometimes_names)
        self.reached = {name: False for name in self.names}
        self.memory = PeakMemory()

    # -- the run ----------------------------------------------------------------------------

    def search(self, max_states: int | None, max_depth: int | None, max_seconds: float | None,
               max_memory: int | None, reporter: Reporter | None, report_every: float) -> CheckResult:
        model, interp = self.model, Concrete(self.model)
        try:
            flags0 = interp.state_flags(model.initial)
        except Exception as e:
            if hasattr(e, "steps"):
                e.steps = []
            raise
        if flags0:
            trace = build_trace(model, [model.initial], [], flags0, engine="explicit")
            return CheckResult(Verdict.VIOLATED, self._coverage(1, 0, 0, False, "violation", None), "explicit",
                               trace=trace, sometimes={k: None for k in self.names})
        for name in interp.sometimes_hits(model.initial, self.names):
            self.reached[name] = True
        pending = sum(1 << k for k, n in enumerate(self.names) if not self.reached[n])
        init = np.ascontiguousarray(self.bm.layout.pack_rows([model.initial])[:, 0])
        # NOTE(memory) of the C search: the store and the table may take what the limit leaves
        # beside what the process holds already; a growth past it stops the search first
        # (HELD_SHARE of the limit: a margin for what the process takes beside the C search;
        # the C search counts its own bytes exactly, NOTE(memory) in ownership.interpret.native_search)
        limit = memory_limit(max_memory)
        budget = -1 if limit is None else max(int(limit * HELD_SHARE) - resident_memory(), 0)
        S = self.lib.ownership_new(init.ctypes.data, pending, -1 if max_states is None else max_states,
                                   -1 if max_depth is None else max_depth, budget)
        if not S:
            raise MemoryError("the native engine could not allocate its first states")
        self.S = S
        try:
            return self._loop(max_seconds, max_memory, reporter, report_every)
        finally:
            self.lib.ownership_free(S)
            self.S = None

    def _loop(self, max_seconds: float | None, max_memory: int | None, reporter: Reporter | None,
              report_every: float) -> CheckResult:
        budget, last_report = 4096, time.monotonic()
        stopped_by: str | None = None
        try:
            while True:
                t0 = time.monotonic()
                rc = self.lib.ownership_run(self.S, budget)
                now = time.monotonic()
                took = now - t0
                budget = int(min(max(budget * (SLICE_SECONDS / took if took > 0 else 2.0), 256), 1 << 22))
                if rc == SLICE:
                    if max_seconds is not None and now - self.start >= max_seconds:
                        stopped_by = "max-seconds"
                        break
                    limit = memory_limit(max_memory)
                    if limit is not None and resident_memory() > limit:
                        stopped_by = "max-memory"
                        break
                    if reporter is not None and now - last_report >= report_every:
                        last_report = now
                        reporter(self._progress(now))
                    continue
                if rc == DONE:
                    break
                if rc == STEP_VIOLATES:
                    return self._step_violation()
                if rc == STATE_VIOLATES:
                    return self._state_violation()
                if rc in (MAX_STATES, MAX_DEPTH):
                    stopped_by = "max-states" if rc == MAX_STATES else "max-depth"
                    break
                if rc == SPEC_ERROR:
                    self._raise_pending()
                if rc == NO_MEMORY:
                    stopped_by = "max-memory"
                    break
                raise InternalError(f"the native search returned status {rc}")
        except KeyboardInterrupt:
            stopped_by = "interrupt"
        if self._get(4) >= 0:  # a pending spec error is raised on every way out (explicit.check)
            self._raise_pending()
        return self._finish(stopped_by)

    # -- what the C search holds ------------------------------------------------------------

    def _get(self, what: int) -> int:
        if self.S is None:  # (C would read through a null pointer)
            raise InternalError(f"the native search was asked for figure {what} before it started")
        return int(self.lib.ownership_get(self.S, what))

    def _words(self, sid: int) -> tuple[int, ...]:
        out = np.zeros(self.bm.layout.words, dtype=np.uint64)
        self.lib.ownership_state(self.S, sid, out.ctypes.data)
        return self.bm.layout.unpack_row(out.reshape(-1, 1), 0)

    def _path(self, sid: int) -> tuple[list[tuple[int, ...]], list[int]]:
        """The stored states and bindings from the initial state to state `sid`."""
        states, via = [], []
        while sid >= 0:
            states.append(self._words(sid))
            parent = int(self.lib.ownership_parent(self.S, sid))
            if parent >= 0:
                b = int(self.lib.ownership_via(self.S, sid))
                if b < 0:
                    raise InternalError(f"the native search cannot find again how state {sid} was reached ({b})")
                via.append(b)
            sid = parent
        return states[::-1], via[::-1]

    def _raise_pending(self) -> None:
        at, b = self._get(5), self._get(6)
        stored, via = self._path(at)
        if b < 0:
            raise_state_error(self.model, self.symmetric, stored, via)
        raise_step_error(self.model, self.symmetric, stored, via, b)

    # -- results ----------------------------------------------------------------------------

    def _sometimes(self) -> None:
        mask = self._get(9) & ((1 << 64) - 1)
        for k, name in enumerate(self.names):
            if mask >> k & 1:
                self.reached[name] = True

    def _violated(self, states: list[tuple[int, ...]], bindings: list[int], flags: Any, depth: int) -> CheckResult:
        self._sometimes()
        model = self.model
        trace = build_trace(model, states, [model.bindings[b] for b in bindings], flags, engine="explicit")
        cov = self._coverage(self._get(0), self._get(1), depth, False, "violation", None)
        return CheckResult(Verdict.VIOLATED, cov, "explicit", trace=trace,
                           sometimes={k: (True if v else None) for k, v in self.reached.items()})

    def _step_violation(self) -> CheckResult:
        parent, b = self._get(7), self._get(8)
        stored, via = self._path(parent)
        states, bindings = actual_run(self.model, self.symmetric, stored, via + [b])
        out = Concrete(self.model).step(states[-2], self.model.bindings[bindings[-1]])
        if out is None or not out.flags:
            raise InternalError("the native and concrete interpreters disagree on a kernel flag")
        return self._violated(states, bindings, out.flags, len(bindings))

    def _state_violation(self) -> CheckResult:
        stored, via = self._path(self._get(7))
        states, bindings = actual_run(self.model, self.symmetric, stored, via)
        flags = Concrete(self.model).state_flags(states[-1])
        if not flags:
            raise InternalError("the native and concrete interpreters disagree on a state property")
        return self._violated(states, bindings, flags, len(bindings))

    def _finish(self, stopped_by: str | None) -> CheckResult:
        self._sometimes()
        complete = stopped_by is None
        bound = None if complete else self._get(3) + 1
        cov = self._coverage(self._get(0), self._get(1), self._get(10), complete, stopped_by, bound)
        return CheckResult.of_search(cov, self.reached)

    def _coverage(self, states: int, transitions: int, depth: int, complete: bool, stopped_by: str | None,
                  bound: int | None) -> Coverage:
        before = None
        running = self.S is not None  # (not yet when the initial state itself violates)
        if self.symmetric:
            before = self._get(12) if self.nm.canon is not None and running else states
        return Coverage(states, transitions, depth, complete=complete, stopped_by=stopped_by,
                        seconds=time.monotonic() - self.start, bound_depth=bound,
                        states_before_symmetry=before, bits_per_state=self.bm.layout.bits, peak_memory=self.memory.peak(),
                        held_memory=self._get(13) if running else None,
                        actions=self.model.action_counts(self._fired()) if complete and running else None)

    def _fired(self) -> Any:
        """Transitions per binding, as the compiled search counted them."""
        out = np.zeros(len(self.model.bindings), dtype=np.int64)
        self.lib.ownership_fired(self.S, out.ctypes.data)
        return out

    def _progress(self, now: float) -> Progress:
        rss = self.memory.sample()
        secs = now - self.start
        n = self._get(0)
        return Progress(secs, states=n, transitions=self._get(1), depth=self._get(10), memory_bytes=rss)


__all__ = ["check"]
