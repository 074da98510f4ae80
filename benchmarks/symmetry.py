"""Symmetry canonicalisation: the sorted orderings against every ordering, in one process.

    python benchmarks/symmetry.py [--requests 5] [--decode-pool 5] [--cap 120]
    python benchmarks/symmetry.py --model incident [--requests 5] [--cap 120]

The search is `ownership check sglang_pd --fix door-retire --symmetry` at the given sizes, or
with --model incident `ownership check benchmarks/peers/incident.py --fix withdraw-rejected
--symmetry` (8 pages, prompts of up to 3 pages; --decode-pool sets its pages).

Three canonicalisers, in one process:
- "now": `Canonicaliser.canonicalise` (NOTE(sorted-orderings), NOTE(complete-signature));
- "every ordering": the reference `by_every_ordering` (every ordering of the requests tested
  on every row) with today's signatures;
- "before": the same with the signatures the engine used before (a request's own data only,
  without where it appears), i.e. the canonicaliser as it was.

1. Blocks: a sample of the search's own canonicalise calls, canonicalised again by each, one
   block after another, three times (now and every ordering must give the same rows).
2. Whole search: the check with each (stopped at --cap seconds), and with the native engine
   (`--native --symmetry`: the canonical form of "now" in C, NOTE(sorted-orderings)): wall and
   CPU time, representatives, the states they stand for, and representatives per second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ownership.api import model_for
from ownership.engines import batch, native
from ownership.engines.symmetry import Canonicaliser

#: which model (--model): its spec, its fix, and the parameter that --decode-pool sets
MODELS = {
    "sglang_pd": ("sglang_pd", "door-retire", "decode_pool"),
    "incident": ("benchmarks/peers/incident.py", "withdraw-rejected", "pages"),
}
MODEL = ["sglang_pd"]


def _model(requests: int, decode_pool: int):  # type: ignore[no-untyped-def]
    spec, fix, pool = MODELS[MODEL[0]]
    return model_for(spec, params={"requests": requests, pool: decode_pool}, fixes=[fix])


def blocks(requests: int, decode_pool: int, every: int = 4, cap: float = 30.0) -> tuple[dict[str, float], int]:
    """(seconds of each canonicaliser, rows) over a sample of the search's blocks."""
    sample: list[np.ndarray] = []
    seen = [0]
    original = Canonicaliser.canonicalise

    def recording(self: Canonicaliser, words: np.ndarray, X: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        seen[0] += 1
        if seen[0] % every == 0 and words.shape[1] > 1:
            sample.append(words.copy())
        return original(self, words, X)

    Canonicaliser.canonicalise = recording  # type: ignore[method-assign]
    try:
        model = _model(requests, decode_pool)
        batch.check(model, symmetry=True, max_seconds=cap)
    finally:
        Canonicaliser.canonicalise = original  # type: ignore[method-assign]
    from ownership.interpret.batch import BatchModel

    canon = Canonicaliser(model, BatchModel(model, reachable=True).layout)  # (the search's own packing)
    took = dict.fromkeys(VARIANTS, 0.0)
    for _ in range(3):
        for words in sample:
            got = {}
            for name in VARIANTS:
                t = time.perf_counter()
                got[name] = CANONICALISE[name](canon, words)
                took[name] += time.perf_counter() - t
            a, b = got["now"], got["every ordering"]
            assert (a[0] == b[0]).all() and (a[1] == b[1]).all(), "the canonicaliser and the reference disagree"
    return took, sum(w.shape[1] for w in sample)


def _every(self: Canonicaliser, words: np.ndarray, X: np.ndarray | None = None, *, before: bool = False):  # type: ignore[no-untyped-def]
    if self.requests < 2 or words.shape[1] == 0:
        return words, np.ones(words.shape[1], dtype=np.int64)
    X = self.layout.unpack(words) if X is None else X
    appear = self.appear
    if before:
        self.appear = []  # the signature of before: a request's own data only
    try:
        sig = self.signatures(X)
    finally:
        self.appear = appear
    return self.by_every_ordering(X, sig)


CANONICALISE = {
    "now": Canonicaliser.canonicalise,
    "every ordering": _every,
    "before": lambda self, words, X=None: _every(self, words, X, before=True),
}
VARIANTS = tuple(CANONICALISE)


def search(requests: int, decode_pool: int, cap: float, variant: str) -> tuple[float, float, str, int, int]:
    """(wall seconds, CPU seconds, verdict, representatives, states they stand for) of one
    symmetry search; variant "native" is `--native --symmetry` (its C compiled beforehand)."""
    original = Canonicaliser.canonicalise
    model = _model(requests, decode_pool)
    if variant == "native":
        native.check(model, symmetry=True, max_states=1)   # (compiles, or finds the cache)
    else:
        Canonicaliser.canonicalise = CANONICALISE[variant]  # type: ignore[method-assign]
    try:
        t, c = time.perf_counter(), time.process_time()
        if variant == "native":
            r = native.check(model, symmetry=True, max_seconds=cap)
        else:
            r = batch.check(model, symmetry=True, max_seconds=cap)
        took, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        Canonicaliser.canonicalise = original  # type: ignore[method-assign]
    return took, cpu, r.verdict.word, r.coverage.states, r.coverage.states_before_symmetry or 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--decode-pool", type=int, help="decode pages (default: 5 for sglang_pd, 8 for incident)")
    ap.add_argument("--model", choices=sorted(MODELS), default="sglang_pd")
    ap.add_argument("--cap", type=float, default=120.0, help="seconds for each whole search (default 120)")
    args = ap.parse_args()
    MODEL[0] = args.model
    if args.decode_pool is None:
        args.decode_pool = 8 if args.model == "incident" else 5
    took, rows = blocks(args.requests, args.decode_pool)
    print(f"blocks ({rows:,} rows, 3 times): " + ", ".join(f"{n} {t:.2f} s" for n, t in took.items())
          + f"; before / now: {took['before'] / took['now']:.1f}x")
    wall, capped = {}, set()
    for variant in ("native", *VARIANTS):
        seconds, cpu, verdict, reps, before = search(args.requests, args.decode_pool, args.cap, variant)
        wall[variant] = seconds
        if verdict == "inconclusive":
            capped.add(variant)  # (stopped at --cap: its ratio to native is a lower bound)
        print(f"search, {variant}: {verdict} in {seconds:.1f} s wall, {cpu:.1f} s CPU: {reps:,} representatives"
              f" ({before:,} states), {reps / seconds:,.0f} representatives/s")
    print("whole search, wall: " + ", ".join(f"{v} / native {'at least ' if v in capped else ''}"
                                              f"{wall[v] / wall['native']:.1f}x" for v in VARIANTS))


if __name__ == "__main__":
    main()
