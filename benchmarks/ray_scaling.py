"""The partitioned search on Ray: 1 and 2 workers against the single-process engine, in one command.

    python benchmarks/ray_scaling.py [--requests 4] [--decode-pool 5] [--workers 1,2]

The search is `ownership check sglang_pd --fix door-retire` at the given sizes:
1. the single-process batch engine (the baseline, in this process);
2. the partitioned search on a local Ray instance (started once, not timed) with each worker
   count: wall and CPU seconds of this process (the driver), the states, and per BFS level
   the bytes the partitions sent each other (to another partition, and to themselves).

The figures for docs/performance.md's cost model: successors sent per new state, and bytes
per successor (a packed row of k words, its parent's id and its binding).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time
import warnings

from ownership.api import model_for
from ownership.engines import batch, partitioned
from ownership.engines.cluster import Recipe


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--decode-pool", type=int, default=5)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    params = {"requests": args.requests, "decode_pool": args.decode_pool}
    model = model_for("sglang_pd", params=params, fixes=["door-retire"])
    print(f"sglang_pd --fix door-retire --param requests={args.requests} --param decode_pool={args.decode_pool};"
          f" {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    t, c = time.monotonic(), _cpu()
    base = batch.check(model)
    wall, cpu = time.monotonic() - t, _cpu() - c
    print(f"single process: {base.verdict.word}, {base.coverage.states:,} states in {wall:.2f} s wall,"
          f" {cpu:.2f} s CPU")
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        recipe = Recipe.of("sglang_pd", model)
        for n in (int(x) for x in args.workers.split(",")):
            t, c = time.monotonic(), _cpu()
            got = partitioned.check(model, recipe=recipe, ray=ray, parts=n)
            wall_n, cpu_n = time.monotonic() - t, _cpu() - c
            assert (got.verdict, got.coverage.states, got.coverage.transitions) == (
                base.verdict, base.coverage.states, base.coverage.transitions), "the counts differ"
            levels = got.levels  # type: ignore[attr-defined]
            successors = sum(lv.successors for lv in levels)
            sent, local = sum(lv.sent for lv in levels), sum(lv.kept_local for lv in levels)
            per = (sent + local) / max(successors, 1)
            print(f"Ray, {n} worker{'s' if n > 1 else ''}: {got.verdict.word}, {got.coverage.states:,} states in"
                  f" {wall_n:.2f} s wall ({wall_n / wall:.2f}x the single process), driver {cpu_n:.2f} s CPU;"
                  f" {successors / got.coverage.states:.2f} successors sent per state, {per:.1f} bytes each;"
                  f" {sent / 2**20:,.0f} MiB between partitions, {local / 2**20:,.0f} MiB kept;"
                  f" the largest level {max(lv.states for lv in levels):,} states")
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.shutdown()


if __name__ == "__main__":
    main()
