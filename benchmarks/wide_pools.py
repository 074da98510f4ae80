"""Wide pools (NOTE(wide-pages)): the batch engine against the per-state engine, in one process.

    python benchmarks/wide_pools.py [--pools 64,128,256] [--requests 4] [--cap 60] [--states 400000]

The search is `ownership check sglang_pd --fix door-retire --param decode_pool=P --param
requests=R` at each decode pool P (64 pages and more: page sets of 2 to 5 limbs of 63 bits).
Each engine runs in this process: the numpy batch engine and the native engine (--native) up
to --states states (max_states; the size reached is printed), the per-state engine up to --cap
seconds (max_seconds). The batch engine's time includes compiling the model to numpy code
(printed apart). The native engine compiles the model to C once, into a cache (an empty one
here: the compile column is a first run's), then checks it: its states per second are of that
second check as a whole (tracing the spec, loading the library, the search). Prints a markdown
table with the command, the machine and the load average.
"""

from __future__ import annotations

import argparse
import atexit
import os
import platform
import shutil
import sys
import tempfile
import time

from ownership import model_for
from ownership.engines import batch, native, per_state
from ownership.interpret.batch import BatchModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pools", default="64,128,256")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--cap", type=float, default=60.0, help="seconds for the per-state engine")
    ap.add_argument("--states", type=int, default=400_000, help="states for the batch engine")
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="ownership-bench-")  # (an empty cache: the native compile, measured)
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    os.environ["XDG_CACHE_HOME"] = cache
    load0 = os.getloadavg()
    rows = []
    for pool in (int(p) for p in args.pools.split(",")):
        model = model_for("sglang_pd", params={"decode_pool": pool, "requests": args.requests}, fixes=["door-retire"])
        t = time.perf_counter()
        bm = BatchModel(model, reachable=True)
        compile_s = time.perf_counter() - t
        assert bm.unsupported is None, bm.unsupported
        t = time.perf_counter()
        got = batch.check(model, max_states=args.states)
        b_s = time.perf_counter() - t
        t = time.perf_counter()
        native.check(model, max_states=1)  # (compiles the model to C into the empty cache)
        n_compile = time.perf_counter() - t
        t = time.perf_counter()
        n_got = native.check(model, max_states=args.states)
        n_s = time.perf_counter() - t
        assert n_got.coverage.states == got.coverage.states, (n_got.coverage, got.coverage)
        t = time.perf_counter()
        ref = per_state.check(model, max_seconds=args.cap)
        e_s = time.perf_counter() - t
        b_rate, e_rate, n_rate = got.coverage.states / b_s, ref.coverage.states / e_s, n_got.coverage.states / n_s
        rows.append(f"| {pool} | {bm.graph.K} | {bm.layout.words} | {got.coverage.states:,} ({got.verdict.name.lower()})"
                    f" | {b_s:.1f} s (compile {compile_s:.1f} s) | {b_rate:,.0f} | {n_compile:.0f} s | {n_s:.1f} s"
                    f" | {n_rate:,.0f} | {ref.coverage.states:,}"
                    f" ({ref.coverage.stopped_by or ref.verdict.name.lower()}) | {e_s:.1f} s | {e_rate:,.0f}"
                    f" | {b_rate / e_rate:.1f}x | {n_rate / e_rate:.1f}x |")
        print(rows[-1], file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    print(f"`python benchmarks/wide_pools.py --pools {args.pools} --requests {args.requests} --cap {args.cap:g}"
          f" --states {args.states}`\n")
    print(f"Machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.processor() or platform.machine()},"
          f" Python {platform.python_version()}; load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f},"
          f" after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}\n")
    print("| decode_pool | limbs | words | states | batch time | batch states/s | native: compile (once)"
          " | native: check | native states/s | per-state states | per-state time | per-state states/s"
          " | batch speed-up | native speed-up |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
