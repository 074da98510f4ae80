"""Swarm random search on Ray: many independent, diversified fuzz searches, one merged answer.

As SPIN's swarm verification does, a large model is searched by many small, different
searches rather than one big one: each search is a whole `fuzz.check` in a Ray task, with a
seed of its own, a step bound of its own (steps, steps/2, steps/4, steps/8, cycling) and,
for all but the first, a bias of its own toward some actions (`fuzz.check(weights=)`).
Search 0 is exactly `fuzz.check` at the base seed and the full step bound. Every search is
derived from the base seed (`plan`), so the same seed repeats the same swarm; without one, a
seed is chosen and reported in the coverage.

The merged result claims no more than the searches ran: the distinct states are the union of
the states the searches saw (`result.seen`, a fuzz.Seen), runs and steps are summed, the
longest run is the longest of any, an action never fired is one that no search fired. A
violation found by any search is the verdict, with the shortest trace of all (fewest steps;
then the lowest search index). Otherwise the verdict is `bounded` (never `verified`), or
`inconclusive` when a search was stopped by the time limit, a Ray worker was lost, or the
driver was interrupted. `result.swarm` (a Summary) says which searches finished, and why not.

A stopped swarm keeps what its searches ran (issue 29: it reported "0 runs" after 37 s): the
searches stop themselves at the command's deadline (`limits.seconds_left`, taken when the
swarm starts, after Ray's); at Ctrl-C or a limit the driver asks each running search to stop
(Ray's cancel, which interrupts the task: fuzz then returns what it covered) and merges the
results that come back within STOP_SECONDS; only the searches with none are not counted.

Engines never print: progress goes to a reporter, at most every 0.5 s.
"""

from __future__ import annotations

import hashlib
import random
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InternalError, LimitReached, UsageError
from ..limits import deferred, seconds_left
from ..progress import Progress
from ..result import CheckResult, Coverage, Verdict
from . import fuzz
from .cluster import Recipe

#: The step bounds of the searches, as halvings of `steps`: steps, steps/2, steps/4, steps/8.
DEPTHS = 4

#: The weights a biased search gives each action (drawn per action from its bias seed).
WEIGHTS = (1, 2, 4)

#: The driver waits this long past max_seconds for the searches' own (inconclusive) results
#: before it cancels them: a search stops itself at the deadline, after building its model.
GRACE_SECONDS = 5.0

#: How often progress reaches the reporter, at most.
REPORT_EVERY = 0.5

#: How long a stopped swarm waits for its interrupted searches to send what they covered.
STOP_SECONDS = 2.0

#: How often a stopped swarm interrupts again a search that has not answered yet.
ASK_AGAIN = 0.5

#: Test hook: when set, called in the worker with the search's index before the search
#: starts (tests/distributed/test_swarm.py makes a worker die there). It travels with each task, so it
#: must pickle (a lambda does: Ray pickles it by value).
before_search: Callable[[int], None] | None = None


@dataclass(frozen=True)
class Plan:
    """One search of a swarm: its index, seed, step bound, and the seed of its bias (None:
    fuzz's own choice of actions, every action equally likely)."""

    index: int
    seed: int
    steps: int
    bias: int | None



@dataclass(frozen=True)
class Summary:
    """What happened to each search of a swarm: `result.swarm`."""

    plans: tuple[Plan, ...]
    finished: tuple[int, ...]     # searches whose results are merged
    lost: tuple[int, ...] = ()    # their Ray worker died, or the task was cancelled by Ray
    unfinished: tuple[int, ...] = ()  # not done when the swarm stopped (time limit, interrupt), nothing returned
    found_by: int | None = None   # the search whose trace is reported
    note: str = ""                # the above in words
    stopped: tuple[int, ...] = ()  # of `finished`, those stopped before their runs were done (what they ran is merged)


def derive(seed: int, index: int, what: str) -> int:
    """A 32-bit number derived from the base seed, a search's index and a purpose."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{index}/{what}".encode()).digest()[:4], "big")


def plan(seed: int, searches: int, steps: int) -> list[Plan]:
    """The searches of a swarm: search 0 is fuzz's own search (the base seed, every action
    equally likely, the full step bound); the others have derived seeds and biases, and step
    bounds halving down to steps/8 (at least 1), cycling."""
    return [Plan(i, seed if i == 0 else derive(seed, i, "seed"), max(1, steps >> (i % DEPTHS)),
                 None if i == 0 else derive(seed, i, "bias")) for i in range(searches)]


def weights_for(actions: list[str] | tuple[str, ...], bias: int | None) -> dict[str, int] | None:
    """The weight of each action in a search of this bias (None: no bias)."""
    if bias is None:
        return None
    rng = random.Random(bias)
    return {name: rng.choice(WEIGHTS) for name in actions}


def search(recipe: Recipe, p: Plan, runs: int, deadline: float | None, liveness: bool,
           hook: Callable[[int], None] | None) -> tuple[CheckResult, tuple[str, ...]] | None:
    """One search, in a Ray worker: its result and the model's actions in declaration order;
    None when the deadline (wall-clock time, time.time()) passed before it started."""
    if hook is not None:
        hook(p.index)
    if deadline is not None and time.time() >= deadline:
        return None
    model = recipe.build()
    names = tuple(decl.name for decl in model.spec_cls._actions.values())
    left = None if deadline is None else max(0.0, deadline - time.time())
    result = fuzz.check(model, runs=runs, steps=p.steps, seed=p.seed, database=None, max_seconds=left,
                        liveness=liveness, weights=weights_for(names, p.bias))
    return result, names


def check(recipe: Recipe, ray: Any, *, searches: int, runs: int, steps: int, seed: int | None,
          max_seconds: float | None, reporter: Callable[[Progress], None] | None = None,
          liveness: bool = False) -> CheckResult:
    """Run `searches` fuzz searches of `runs` runs each on the Ray cluster `ray` is connected
    to, and merge them (see the module's docstring). `max_seconds` bounds the whole swarm:
    each search gets the time left when it starts (of the command's, if that is shorter). A
    SpecError or UsageError of a search is raised here as it was raised there. Ctrl-C or a
    command's limit stops the searches not yet done and returns what every search covered,
    the stopped ones included, as inconclusive."""
    if searches < 1 or runs < 1 or steps < 1:
        raise UsageError(f"searches={searches}, runs={runs}, steps={steps}: each must be at least 1")
    start = time.monotonic()
    max_seconds = seconds_left(max_seconds)  # (the command's deadline: Ray took some of it to start)
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    plans = plan(seed, searches, steps)
    deadline = None if max_seconds is None else time.time() + max_seconds
    give_up = None if max_seconds is None else start + max_seconds + GRACE_SECONDS
    out = _Outcomes(ray)
    stopped: str | None = None  # the driver's reason to stop: interrupt, a command's limit, max-seconds
    last_report = start
    # Ctrl-C and the limits are held while the driver waits inside Ray, raised by poll() (NOTE(deferred))
    with warnings.catch_warnings(), deferred() as held:
        warnings.simplefilter("ignore")  # (Ray's own deprecation and resource warnings)
        task = ray.remote(num_cpus=1, max_retries=0)(search)  # a lost worker is reported, not re-run
        try:
            for p in plans:
                out.refs[task.remote(recipe, p, runs, deadline, liveness, before_search)] = p.index
            while out.running():
                held.poll()
                if give_up is not None and time.monotonic() >= give_up:
                    stopped = "max-seconds"
                    break
                ready, _ = ray.wait(out.running(), num_returns=len(out.running()), timeout=0.1)
                for ref in ready:
                    out.take(ref)
                now = time.monotonic()
                if reporter is not None and now - last_report >= REPORT_EVERY:
                    last_report = now
                    reporter(out.progress(searches, now - start))
        except KeyboardInterrupt as e:  # Ctrl-C, or a command's limit (ownership.limits)
            stopped = e.reason if isinstance(e, LimitReached) else "interrupt"
        except BaseException:
            # (any other way out, a search's error or a reporter's: no search is left running
            # on the cluster, where it would hold a CPU for good)
            _cancel(ray, out.running())
            raise
        if stopped is not None:
            out.stop()
    # (every search without an outcome: still running, queued, or never submitted)
    unfinished = tuple(i for i in range(searches) if i not in out.got and i not in out.late and i not in out.lost)
    return merge(plans, out.got, seed=seed, seconds=time.monotonic() - start, stopped=stopped,
                 lost=tuple(sorted(out.lost)), late=tuple(sorted(out.late)), unfinished=unfinished)


class _Outcomes:
    """What the driver knows of a swarm's searches, by index: their results, those that did
    not start in time, those lost with their worker; and the tasks still running."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.refs: dict[Any, int] = {}   # every task submitted, and its search
        self.got: dict[int, tuple[CheckResult, tuple[str, ...]]] = {}
        self.late: list[int] = []
        self.lost: list[int] = []
        self.ended: set[int] = set()  # the searches whose task ended, with an outcome above or none
        self.states: set[int] = set()

    def running(self) -> list[Any]:
        """The tasks not ended yet (running, or queued)."""
        return [ref for ref, i in self.refs.items() if i not in self.ended]

    def take(self, ref: Any, *, stopping: bool = False) -> None:
        """The outcome of a finished task. A search that raised is raised here as it was
        raised there (a SpecError, a UsageError), unless the swarm is stopping: then only
        results count (the interrupt may have reached the search before its fuzz.check)."""
        ray, i = self.ray, self.refs[ref]
        self.ended.add(i)
        try:
            value = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return  # (cancelled before it ran: unfinished)
        except ray.exceptions.RayTaskError as e:  # the search raised
            if stopping:
                return
            _cancel(ray, self.running())
            cause = getattr(e, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise InternalError(f"swarm: search {i} failed: {e}") from None
        except ray.exceptions.RayError:  # the worker died, its node was lost
            if not stopping:
                self.lost.append(i)
            return
        if value is None:
            self.late.append(i)
        else:
            self.got[i] = value
            self.states |= _seen(value[0]).states

    def stop(self) -> None:
        """Ask every running search to stop (an interrupt in its task: fuzz.check returns what
        it covered), take the results that come back within STOP_SECONDS, cancel the rest.
        The interrupt is sent again every ASK_AGAIN seconds to a search that has not answered:
        one can be lost inside the search (4 of 12 searches in a trial, inside Hypothesis; 1 to 3
        sends always sufficed)."""
        end = time.monotonic() + STOP_SECONDS
        while (pending := self.running()) and time.monotonic() < end:
            _cancel(self.ray, pending, force=False)
            ready, _ = self.ray.wait(pending, num_returns=len(pending),
                                     timeout=max(0.0, min(ASK_AGAIN, end - time.monotonic())))
            for ref in ready:
                self.take(ref, stopping=True)
        _cancel(self.ray, self.running())

    def progress(self, searches: int, seconds: float) -> Progress:
        results = [r for r, _ in self.got.values()]
        return Progress(seconds, kind="swarm", searches=searches, done=len(self.got) + len(self.late) + len(self.lost),
                        states=len(self.states), transitions=sum(r.coverage.transitions for r in results),
                        depth=max((r.coverage.depth for r in results), default=0),
                        runs=sum(r.coverage.runs or 0 for r in results))


def _cancel(ray: Any, refs: list[Any], *, force: bool = True) -> None:
    """Cancel the tasks: `force` kills their workers, else an interrupt is raised in them."""
    for ref in refs:
        try:
            ray.cancel(ref, force=force)
        except Exception:  # (already finished, or its worker already gone)
            pass


def merge(plans: list[Plan], got: dict[int, tuple[CheckResult, tuple[str, ...]]], *, seed: int, seconds: float,
          stopped: str | None, lost: tuple[int, ...], late: tuple[int, ...],
          unfinished: tuple[int, ...]) -> CheckResult:
    """One result from the searches' results `got` (by index), claiming only what they covered."""
    order = sorted(got)
    results = [got[i][0] for i in order]
    names = got[order[0]][1] if order else ()
    sets = [_seen(r) for r in results]
    seen = fuzz.Seen(frozenset().union(*(s.states for s in sets)), frozenset().union(*(s.fired for s in sets)),
                     frozenset().union(*(s.enabled for s in sets)), frozenset().union(*(s.tried for s in sets)),
                     _live_counts(sets))
    violations = sorted((len(r.trace.steps) - 1, i) for i, r in zip(order, results) if r.verdict is Verdict.VIOLATED)
    stops = {r.coverage.stopped_by or "max-runs" for r in results} - {"max-runs", "violation"}
    if violations:
        stop = "violation"  # a trace is a trace: it replays whatever stopped the other searches
    elif stopped is not None:
        stop = stopped
    elif lost:
        stop = "worker-lost"
    elif late or stops:
        stop = sorted(stops)[0] if stops else "max-seconds"
    else:
        stop = "max-runs"
    never_fired = tuple(n for n in names if n in seen.tried and n not in seen.fired)
    cov = Coverage(len(seen.states), sum(r.coverage.transitions for r in results),
                   max((r.coverage.depth for r in results), default=0), complete=False, stopped_by=stop,
                   seconds=seconds, runs=sum(r.coverage.runs or 0 for r in results), never_fired=never_fired,
                   never_enabled=tuple(n for n in never_fired if n not in seen.enabled), seed=seed)
    sometimes: dict[str, bool | None] = {}
    for r in results:
        for name, hit in r.sometimes.items():
            sometimes[name] = True if (hit or sometimes.get(name)) else None
    found_by = violations[0][1] if violations else None
    best = got[found_by][0] if found_by is not None else None
    if violations:
        verdict = Verdict.VIOLATED
    else:
        verdict = Verdict.BOUNDED if stop == "max-runs" else Verdict.INCONCLUSIVE
    result = CheckResult(verdict, cov, "fuzz", trace=None if best is None else best.trace, sometimes=sometimes,
                         fairness=next((r.fairness for r in results if r.fairness), ""))
    if seen.liveness:
        result.liveness = _live_texts(plans, order, results, seen, best)
    if best is not None and hasattr(best, "shrink"):
        result.shrink = best.shrink  # type: ignore[attr-defined]
    result.seen = seen  # type: ignore[attr-defined]
    cut = tuple(i for i, r in zip(order, results) if r.coverage.stopped_by not in (None, "max-runs", "violation"))
    result.swarm = Summary(tuple(plans), tuple(order), lost, unfinished, found_by,  # type: ignore[attr-defined]
                           _note(plans, got, lost, late, unfinished, stopped, violations, cut), stopped=cut)
    return result


def _seen(result: CheckResult) -> fuzz.Seen:
    """The sets behind a fuzz result's coverage (set by fuzz.check)."""
    return result.seen  # type: ignore[attr-defined,no-any-return]


def _live_counts(sets: list[fuzz.Seen]) -> dict[str, tuple[str, int, int]]:
    """The liveness counts of the searches, summed per property."""
    out: dict[str, tuple[str, int, int]] = {}
    for s in sets:
        for name, (kind, pending, ended) in s.liveness.items():
            _, p, e = out.get(name, (kind, 0, 0))
            out[name] = (kind, p + pending, e + ended)
    return out


def _live_texts(plans: list[Plan], order: list[int], results: list[CheckResult], seen: fuzz.Seen,
                best: CheckResult | None) -> dict[str, str]:
    """Each liveness property over all the searches: "violated" for the trace's property,
    "violated in search i" for one that another search violated, else how far the runs went."""
    runs = sum(r.coverage.runs or 0 for r in results)
    k = len(results)
    texts = fuzz.liveness_texts(seen.liveness, runs, max(plans[i].steps for i in order), None,
                                across=f" across {k} search{'' if k == 1 else 'es'}")
    shown = best.trace.violation.property if best is not None else None
    for i, r in zip(order, results):
        prop = r.trace.violation.property if r.verdict is Verdict.VIOLATED else None
        if prop in texts and prop != shown and not texts[prop].startswith("violated"):
            texts[prop] = f"violated in search {i} of the swarm (the trace shown is the shortest, of {shown})"
    if shown in texts:
        texts[shown] = "violated"
    if best is not None:
        for name, text in texts.items():
            if not text.startswith("violated"):
                texts[name] = text + "; the searches that found a violation stopped there"
    return texts


def _note(plans: list[Plan], got: dict[int, tuple[CheckResult, tuple[str, ...]]], lost: tuple[int, ...],
          late: tuple[int, ...], unfinished: tuple[int, ...], stopped: str | None, violations: list[tuple[int, int]],
          cut: tuple[int, ...]) -> str:
    """What the swarm did, in words: the searches that finished, those stopped before their
    runs were done (what they ran is counted), and those that count for nothing."""
    n = len(plans)
    bounds = ", ".join(str(b) for b in sorted({p.steps for p in plans}, reverse=True))
    parts = [f"{len(got) - len(cut)} of {n} searches finished (seed {plans[0].seed}; step bounds {bounds};"
             f" {sum(p.bias is not None for p in plans)} biased toward some actions)"]

    def which(ix: tuple[int, ...]) -> str:
        return f"search{'' if len(ix) == 1 else 'es'} {', '.join(map(str, ix))}"

    def why(reason: str | None) -> str:
        return {"interrupt": "the interrupt", "max-seconds": "the time limit"}.get(reason or "", reason or "")

    if cut:
        ran = sum(got[i][0].coverage.runs or 0 for i in cut)
        reason = stopped or got[cut[0]][0].coverage.stopped_by
        parts.append(f"{which(cut)} stopped at {why(reason)} after {ran:,} run{'' if ran == 1 else 's'}"
                     f"{' between them' if len(cut) > 1 else ''}: counted")

    if lost:
        parts.append(f"{which(lost)} lost {'its' if len(lost) == 1 else 'their'} Ray worker: not counted, so the"
                     " result cannot pass")
    if late:
        parts.append(f"{which(late)} did not start before the time limit")
    if unfinished:
        parts.append(f"{which(unfinished)} cancelled at {why(stopped)} before {'it' if len(unfinished) == 1 else 'they'}"
                     " returned anything: not counted")
    if violations:
        steps, i = violations[0]
        p = plans[i]
        parts.append(f"{len(violations)} found a violation; the trace shown is the shortest of theirs ({steps} steps),"
                     f" of search {i}"
                     f" (seed {p.seed}, runs of at most {p.steps} steps"
                     f"{'' if p.bias is None else f', bias {p.bias}'})")
    return "; ".join(parts)
