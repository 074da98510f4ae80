"""The per-state search of the explicit engine: every reachable state of a Model, breadth
first, one state at a time through the concrete interpreter.

It runs the specs the batch interpreter does not (pools over 1,024 pages, ownership.engines.
explicit), and it is the reference every faster search is compared to, state for state.

Breadth first, so the first violation found ends a shortest counterexample. States are
tuples of ints kept exactly in a dict (no lossy fingerprints: a `verified` can never come
from a hash collision). Limits on states, depth and time stop the search cleanly with the
coverage reached; so does Ctrl-C. Progress goes to a reporter; this module never prints.
"""

from __future__ import annotations

import time

from ..errors import SpecError
from ..interpret.concrete import Concrete, Flag
from ..lang.model import Model
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import build_trace


def check(
    model: Model,
    *,
    max_states: int | None = None,
    max_depth: int | None = None,
    max_seconds: float | None = None,
    reporter: Reporter | None = None,
    report_every: float = 0.5,
) -> CheckResult:
    """Explore the reachable states of `model` breadth first; stop at the first violation."""
    interp = Concrete(model)
    bindings = model.bindings
    start = time.monotonic()
    states: list[tuple[int, ...]] = [model.initial]
    parent: list[int] = [-1]
    via: list[int] = [-1]
    depth_of: list[int] = [0]
    seen: dict[tuple[int, ...], int] = {model.initial: 0}
    pending = [p.name for p in model.sometimes]
    reached: dict[str, bool | None] = {name: False for name in pending}
    transitions = 0
    fired = [0] * len(bindings)  # transitions per binding (the actions' coverage)
    last_report = start
    stopped_by: str | None = None
    violation: tuple[int, list[Flag]] | None = None  # (state index, flags)
    deepest_done = -1  # every state at depth <= this has been expanded

    def hit_sometimes(idx: int) -> None:
        nonlocal pending
        if pending:
            got = interp.sometimes_hits(states[idx], pending)
            for name in got:
                reached[name] = True
            pending = [n for n in pending if n not in got]

    # NOTE(first-event): the search ends at the shallowest depth where a violation or a spec
    # error happens; at one depth a violation wins. A spec error of depth d + 1 (raised by a
    # step from a state of depth d, or by the properties of a new state) is kept pending while
    # the rest of depth d is expanded; a violation found meanwhile wins, else it is raised.
    failed: tuple[int, SpecError, int] | None = None   # (depth, error, state it was raised from)

    def note(e: SpecError, d: int, at: int) -> None:
        nonlocal failed
        if failed is None:
            failed = (d, e, at)

    try:
        flags0 = interp.state_flags(model.initial)
    except SpecError as e:
        e.steps = []
        raise
    if flags0:
        violation = (0, flags0)
    else:
        hit_sometimes(0)

    head = 0
    try:
        while violation is None and head < len(states):
            idx = head
            d = depth_of[idx]
            if failed is not None and d >= failed[0]:
                break
            head += 1
            if d - 1 > deepest_done:
                deepest_done = d - 1
            if max_depth is not None and d >= max_depth:
                stopped_by = "max-depth"
                break
            state = states[idx]
            for b, binding in enumerate(bindings):
                try:
                    out = interp.step(state, binding)
                except SpecError as e:
                    note(e, d + 1, idx)
                    continue
                if out is None:
                    continue
                transitions += 1
                fired[b] += 1
                nxt = out.state
                if out.flags:
                    violation = (_append(states, parent, via, depth_of, nxt, idx, b, d + 1), out.flags)
                    break
                if nxt in seen:
                    continue
                new = _append(states, parent, via, depth_of, nxt, idx, b, d + 1)
                seen[nxt] = new
                try:
                    flags = interp.state_flags(nxt)
                except SpecError as e:
                    note(e, d + 1, new)
                    continue
                if flags:
                    violation = (new, flags)
                    break
                hit_sometimes(new)
                if max_states is not None and len(seen) >= max_states and violation is None:
                    stopped_by = "max-states"
                    break
            if stopped_by is not None:
                break
            now = time.monotonic()
            if max_seconds is not None and now - start >= max_seconds:
                stopped_by = "max-seconds"
                break
            if reporter is not None and now - last_report >= report_every:
                last_report = now
                reporter(Progress(now - start, states=len(seen), transitions=transitions, depth=d))
    except KeyboardInterrupt:
        stopped_by = "interrupt"

    if violation is None and failed is not None:
        _, error, at = failed
        error.steps = [bindings[via[i]].label() for i in _path(at, parent)[1:]]
        raise error

    elapsed = time.monotonic() - start
    max_d = max(depth_of[: len(seen)] or [0]) if violation is None else depth_of[violation[0]]
    if violation is not None:
        idx, flags = violation
        path = _path(idx, parent)
        trace = build_trace(
            model,
            [states[i] for i in path],
            [bindings[via[i]] for i in path[1:]],
            flags,
            engine="explicit",
        )
        cov = Coverage(len(seen), transitions, max_d, complete=False, stopped_by="violation", seconds=elapsed)
        return CheckResult(Verdict.VIOLATED, cov, "explicit", trace=trace,
                           sometimes={k: (True if v else None) for k, v in reached.items()})
    complete = stopped_by is None
    cov = Coverage(len(seen), transitions, max_d, complete=complete, stopped_by=stopped_by,
                   seconds=elapsed, bound_depth=None if complete else deepest_done + 1,
                   actions=model.action_counts(fired) if complete else None)
    return CheckResult.of_search(cov, reached)


def _append(states: list, parent: list, via: list, depth_of: list,
            state: tuple[int, ...], p: int, b: int, d: int) -> int:
    states.append(state)
    parent.append(p)
    via.append(b)
    depth_of.append(d)
    return len(states) - 1


def _path(idx: int, parent: list[int]) -> list[int]:
    out = []
    while idx != -1:
        out.append(idx)
        idx = parent[idx]
    return out[::-1]
