"""Shrinking a failing run of the fuzz engine on the level of the model (NOTE(shrink-paths)).

A violating path of bindings is made shorter and simpler by replaying candidates through a
judge (the safety judge of ownership.engines.fuzz, or fuzz_liveness's `Obligations.judge`)
while it keeps failing the same way; replays are cheap (NOTE(memo-by-path) in
ownership/engines/fuzz_explorer.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .fuzz_explorer import ActionSlice, RunFailed, rank, unrank


class PathShrinker:
    """Shrinks a failing path of bindings while it keeps failing the same way.

    NOTE(shrink-paths): Hypothesis shrinks choice sequences, and every candidate costs a whole
    run with its rule selection; at thousands of pages that took minutes. A path is shrunk
    here instead, by replaying candidates through a judge: delete chunks of steps (ddmin),
    delete two steps apart, delete a step while moving an earlier one into its place, rename requests to r1, r2, ...
    in order of appearance, and lower each argument, keeping
    a candidate when it still fails with the same kind (the same property). Prefixes are
    cheap to replay (NOTE(memo-by-path)). The result is locally minimal, not shortest."""

    def __init__(self, slices: list[ActionSlice], judge: Callable[[tuple[int, ...]], RunFailed | None],
                 *, deadline: float | None, on_try: Callable[[], None] | None = None) -> None:
        self.slices = slices
        self.judge = judge
        self.deadline = deadline
        self.on_try = on_try
        self.tries = 0
        self.timed_out = False
        self.best: RunFailed | None = None  # the shortest failure so far (kept if interrupted)
        self.owner = [0] * (slices[-1].hi if slices else 0)
        for a, sl in enumerate(slices):
            self.owner[sl.lo:sl.hi] = [a] * (sl.hi - sl.lo)

    def _late(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    def _try(self, best: RunFailed, path: tuple[int, ...]) -> RunFailed | None:
        self.tries += 1
        if self.on_try is not None:
            self.on_try()
        got = self.judge(path)
        if got is not None and got.kind == best.kind and len(got.path) <= len(best.path):
            self.best = got
            return got
        return None

    def shrink(self, failure: RunFailed) -> RunFailed:
        best = self.best = failure
        while not self._late():
            before = best.path
            best = self._delete_chunks(best)
            best = self._delete_pairs(best)
            best = self._delete_and_move(best)
            best = self._rename_requests(best)
            best = self._lower_arguments(best)
            if best.path == before:
                break
        return best

    #: _delete_and_move tries every pair of steps on paths up to this long (n^2 replays)
    MOVE_PAIRS_UP_TO = 24

    def _delete_pairs(self, best: RunFailed) -> RunFailed:
        """Delete two steps that are not next to each other (a request's alloc and its free,
        with another request's step between them), on paths up to MOVE_PAIRS_UP_TO long."""
        j = len(best.path) - 1
        while j >= 2 and len(best.path) <= self.MOVE_PAIRS_UP_TO and not self._late():
            for i in range(j - 1):
                if self._late():
                    return best
                path = best.path
                got = self._try(best, path[:i] + path[i + 1:j] + path[j + 1:])
                if got is not None:
                    best = got
                    break
            j = min(j, len(best.path)) - 1
        return best

    def _delete_and_move(self, best: RunFailed) -> RunFailed:
        """Delete step j and move an earlier step i into its place: a step that only set up a
        later one (r2 allocating early, then extending into the page r1 freed) becomes that
        later one (r2 allocating the page then). Deleting alone cannot find it: without the
        early step the later one is not enabled."""
        j = len(best.path) - 1
        while j >= 1 and len(best.path) <= self.MOVE_PAIRS_UP_TO and not self._late():
            for i in range(j):
                if self._late():
                    return best
                path = list(best.path)
                moved = path[i]
                del path[j]
                del path[i]
                path.insert(j - 1, moved)
                got = self._try(best, tuple(path))
                if got is not None:
                    best = got
                    break
            j = min(j, len(best.path)) - 1
        return best

    #: chunks of up to this many steps are tried at every position (larger ones at multiples
    #: of their size, halving): a step and the step that undoes it (an alloc and its free)
    #: go together, and halving from 3 would never try 2
    SMALL_CHUNKS = 4

    def _delete_chunks(self, best: RunFailed) -> RunFailed:
        sizes = []
        chunk = max(1, len(best.path) // 2)
        while chunk > self.SMALL_CHUNKS:
            sizes.append(chunk)
            chunk //= 2
        sizes += list(range(min(self.SMALL_CHUNKS, len(best.path)), 0, -1))
        for chunk in sizes:
            step = chunk if chunk > self.SMALL_CHUNKS else 1
            i = len(best.path) - chunk
            while i >= 0 and not self._late():
                path = best.path
                got = self._try(best, path[:i] + path[i + chunk:])
                if got is not None:
                    best = got
                i = min(i, len(best.path) - chunk) if got is not None else i - step
            if self._late():
                break
        return best

    def _rename_requests(self, best: RunFailed) -> RunFailed:
        order: dict[int, int] = {}
        for b in best.path:
            sl = self.slices[self.owner[b]]
            for v, is_req in zip(unrank(sl, b), sl.requests):
                if is_req and v not in order:
                    order[v] = len(order)
        if all(k == v for k, v in order.items()) or self._late():
            return best
        renamed = []
        for b in best.path:
            sl = self.slices[self.owner[b]]
            picks = [order[v] if is_req else v for v, is_req in zip(unrank(sl, b), sl.requests)]
            renamed.append(rank(sl, picks))
        return self._try(best, tuple(renamed)) or best

    def _lower_arguments(self, best: RunFailed) -> RunFailed:
        i = 0
        while i < len(best.path) and not self._late():
            b = best.path[i]
            sl = self.slices[self.owner[b]]
            picks = unrank(sl, b)
            for k in range(len(picks)):
                for lower in range(picks[k]):
                    if self._late():
                        return best
                    cand = list(picks)
                    cand[k] = lower
                    path = best.path[:i] + (rank(sl, cand),) + best.path[i + 1:]
                    got = self._try(best, path)
                    if got is not None:
                        best = got
                        picks = cand
                        break
            i += 1
        return best
