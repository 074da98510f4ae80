"""Issue 14's targets 2 to 5, each measured in a process of its own, for benchmarks/run.py.

    python benchmarks/scale_targets.py symmetry VARIANT   # VARIANT: native, now, before, native-incident
    python benchmarks/scale_targets.py fuzz PAGES         # fuzz and stepping alone, sglang_pd at PAGES pages
    python benchmarks/scale_targets.py wide PAGES         # the native engine past 62 pages
    python benchmarks/scale_targets.py bmc                # bmc's depth 12

Each prints one JSON line, which run.py reads; run.py times the process (wall, CPU, peak
resident). Target 5 is the CLI itself (MEMORY_ARGS), run by run.py. What each measures, and with what baseline:

- symmetry (target 2): the whole `--symmetry` search of sglang_pd at requests=5, decode_pool=5
  (435.8 M states before symmetry) with the canonicaliser as the issue found it ("before":
  every one of the 120 orderings of the requests tried on every row, signatures of a request's
  own data; benchmarks/symmetry.py), with today's numpy one ("now"), and with the native
  engine's C one; "native-incident" is the incident model at 5 requests (3.19 G states before
  symmetry), native only.
- fuzz (target 3): `--engine fuzz --seed 1` on sglang_pd --fix door-retire, requests=8, at
  PAGES decode pages, steps per second of the whole check; and the concrete interpreter's
  seeded random runs (stepping alone), from benchmarks/fuzz_scale.py.
- wide (target 3): sglang_pd --fix door-retire, requests=4, at PAGES decode pages, with
  --native: compiled once into an empty cache (timed apart), then a second check to
  1,000,000 states, timed whole (tracing the spec, loading the library, the search).
- bmc (target 4): `check --engine bmc` of sglang_pd --fix door-retire at requests=3,
  decode_pool=6, to depth 12; the time each depth took.
- target 5 (run by run.py): `ownership check benchmarks/peers/incident.py --fix withdraw-rejected
  --param requests=4 --param longest=4 --native --max-states 27820208`, the CLI as a user runs
  it; run.py compares the figures it prints with the process's peak resident set.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

#: target 5's command (the incident model stopped at the issue's 27,820,208 states)
MEMORY_ARGS = ["check", "benchmarks/peers/incident.py", "--fix", "withdraw-rejected", "--param", "requests=4",
               "--param", "longest=4", "--native", "--max-states", "27820208"]
#: target 2's instance, and how long "before" and "now" may run
SYMMETRY_PARAMS = {"requests": 5, "decode_pool": 5}
SYMMETRY_CAP = 300.0
#: target 4's instance and depth
BMC_PARAMS = {"requests": 3, "decode_pool": 6}
BMC_DEPTH = 12
#: target 3's fuzz and wide searches
FUZZ_REQUESTS, FUZZ_SECONDS = 8, 10.0
WIDE_REQUESTS, WIDE_STATES = 4, 1_000_000


def symmetry(variant: str) -> dict:
    import symmetry as bench  # benchmarks/symmetry.py

    if variant == "native-incident":
        bench.MODEL[0] = "incident"
        wall, cpu, verdict, reps, before = bench.search(5, 8, SYMMETRY_CAP, "native")
    else:
        wall, cpu, verdict, reps, before = bench.search(SYMMETRY_PARAMS["requests"], SYMMETRY_PARAMS["decode_pool"],
                                                        SYMMETRY_CAP, variant)
    return {"search_seconds": wall, "search_cpu": cpu, "verdict": verdict, "states": reps, "before_symmetry": before}


def fuzz(pages: int) -> dict:
    import fuzz_scale  # benchmarks/fuzz_scale.py

    from ownership.api import model_for

    model = model_for("sglang_pd", params={"decode_pool": pages, "requests": FUZZ_REQUESTS}, fixes=["door-retire"])
    rate, steps, took, verdict = fuzz_scale.fuzz_rate(model, FUZZ_SECONDS)
    walk, one = fuzz_scale.walk_rate(model, 5.0)
    return {"fuzz_rate": rate, "fuzz_steps": steps, "fuzz_seconds": took, "verdict": verdict,
            "walk_rate": walk, "one_step_rate": one}


def wide(pages: int) -> dict:
    cache = tempfile.mkdtemp(prefix="ownership-bench-")  # (an empty cache: the first compilation, measured)
    os.environ["XDG_CACHE_HOME"] = cache
    try:
        from ownership.api import model_for
        from ownership.engines import native

        model = model_for("sglang_pd", params={"decode_pool": pages, "requests": WIDE_REQUESTS}, fixes=["door-retire"])
        t = time.perf_counter()
        native.check(model, max_states=1)  # (compiles the model to C into the empty cache)
        compiled = time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        result = native.check(model, max_states=WIDE_STATES)
        took, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"compile_seconds": compiled, "check_seconds": took, "check_cpu": cpu, "states": result.coverage.states,
            "verdict": result.verdict.word}


def bmc() -> dict:
    from ownership.api import model_for
    from ownership.engines import bmc as engine

    model = model_for("sglang_pd", params=BMC_PARAMS, fixes=["door-retire"])
    marks: list[tuple[int, float]] = []
    result = engine.check(model, max_depth=BMC_DEPTH, sometimes=False, reporter=lambda p: marks.append((p.depth, p.seconds)))
    return {"verdict": result.verdict.word, "depth": result.coverage.bound_depth, "marks": marks,
            "seconds": result.coverage.seconds}


def main() -> None:
    what, *rest = sys.argv[1:]
    out = {"symmetry": lambda: symmetry(rest[0]), "fuzz": lambda: fuzz(int(rest[0])),
           "wide": lambda: wide(int(rest[0])), "bmc": bmc}[what]()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
