"""Benchmarks of the symbolic engine (issue 3), measured against the explicit engine in the same run.

    python benchmarks/bmc.py [--seconds 60] [--repeat 3]
    python benchmarks/bmc.py --orders [--seconds 60] [--repeat 2]

`--orders` (issue 14) measures only bmc's canonical order of steps (NOTE(canonical-order) in
ownership/engines/bmc_order.py) against every order, in one process, alternating, on
`sglang_pd --fix door-retire --param requests=3 --param decode_pool=6`: the depth each
reaches in `--seconds`, with wall and CPU seconds per depth.

1. Depth reached in `--seconds` by `check --engine bmc` on the fixed sglang_pd (door-retire) at
   its default parameters, and on a larger instance whose unrolling does not end that soon.
2. Time to the shortest counterexample of the incident (sglang_pd, no fixes): bmc vs explicit,
   best of `--repeat`, with the ratio.
3. `prove` on the fixed spec, and the parametric question (prefill_pool symbolic).

Prints a Markdown table; benchmarks/RESULTS.md (section "The symbolic engine") records a run. Not a test: timings depend
on the machine (speed is measured in benchmarks/, not in timed tests).
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

from ownership.api import model_for
from ownership.engines import bmc, per_state


def depth_in(seconds: float, *, params: dict[str, int] | None = None, fixes: tuple[str, ...] = ("door-retire",),
             canonical: bool = True) -> tuple[Any, list[tuple[int, float]]]:
    """Run bmc for at most `seconds`: the result and (depth, seconds) for each finished depth."""
    model = model_for("sglang_pd", params=params or {}, fixes=list(fixes))
    marks: list[tuple[int, float]] = []
    result = bmc.check(model, max_depth=1000, max_seconds=seconds, sometimes=False, canonical=canonical,
                       reporter=lambda p: marks.append((p.depth, p.seconds)))
    return result, marks


def orders(seconds: float, repeat: int) -> None:
    """Canonical order against every order of steps, alternating, wall and CPU per depth."""
    params = {"requests": 3, "decode_pool": 6}
    print("| order of steps | run | depth reached | depth: wall s / CPU s |")
    print("|---|---|---|---|")
    for run in range(1, repeat + 1):
        for canonical in (False, True):
            model = model_for("sglang_pd", params=params, fixes=["door-retire"])
            cpu0 = time.process_time()
            marks: list[tuple[int, float, float]] = []
            result = bmc.check(model, max_depth=1000, max_seconds=seconds, sometimes=False, canonical=canonical,
                               reporter=lambda p, marks=marks, cpu0=cpu0: marks.append(
                                   (p.depth, p.seconds, time.process_time() - cpu0)))
            steps = ", ".join(f"{d}: {w:.1f}/{c:.1f}" for d, w, c in marks[-5:])
            label = "canonical (NOTE(canonical-order))" if canonical else "every order (canonical=False)"
            print(f"| {label} | {run} | {result.coverage.bound_depth} | {steps} |", flush=True)


def best_of(repeat: int, run: Any) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget of the depth benchmark")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of the time-to-counterexample benchmark")
    ap.add_argument("--orders", action="store_true", help="only canonical order against every order of steps (issue 14)")
    args = ap.parse_args()

    import z3

    print(f"python {platform.python_version()}, z3 {z3.get_version_string()}, {platform.machine()}, {platform.system()}")
    print()
    if args.orders:
        orders(args.seconds, args.repeat)
        return
    print("| benchmark | result | time |")
    print("|---|---|---|")

    for label, params in (("sglang_pd --fix door-retire (defaults)", None),
                          ("sglang_pd --fix door-retire --param requests=3 --param decode_pool=6", {"requests": 3, "decode_pool": 6})):
        result, marks = depth_in(args.seconds, params=params)
        what = {
            "verified": f"verified: unrolling ends, every execution <= {result.coverage.depth} steps checked",
            "bounded": f"bounded at depth {result.coverage.bound_depth}",
            "inconclusive": f"depth {result.coverage.bound_depth} reached ({result.coverage.stopped_by})",
            "violated": "violated",
        }[result.verdict.word]
        steps = ", ".join(f"{d}: {s:.1f}" for d, s in marks[-4:])
        print(f"| bmc depth in {args.seconds:.0f} s, {label} | {what} (last depths, s: {steps}) | {result.coverage.seconds:.1f} s |")

    big = model_for("sglang_pd", params={"requests": 3, "decode_pool": 6}, fixes=["door-retire"])
    t_big, ex_big = best_of(1, lambda: per_state.check(big))
    print(f"| same larger instance, explicit check | {ex_big.verdict.word}, {ex_big.coverage.states:,} states, depth {ex_big.coverage.depth} | {t_big:.1f} s |")

    incident = model_for("sglang_pd")
    t_ex, ex = best_of(args.repeat, lambda: per_state.check(incident))
    t_sy, sy = best_of(args.repeat, lambda: bmc.check(incident, max_depth=20, sometimes=False))
    assert len(ex.trace.steps) == len(sy.trace.steps) == 7
    print(f"| incident, shortest counterexample (6 steps, stale-read): explicit | {ex.coverage.states} states | {t_ex:.3f} s |")
    print(f"| incident, shortest counterexample (6 steps, stale-read): bmc | {sy.coverage.queries} solver queries | {t_sy:.3f} s ({t_sy / t_ex:.0f}x explicit) |")

    fixed = model_for("sglang_pd", fixes=["door-retire"])
    t_ex, ex = best_of(1, lambda: per_state.check(fixed))
    print(f"| fixed spec, explicit check | {ex.verdict.word}, {ex.coverage.states} states, depth {ex.coverage.depth} | {t_ex:.2f} s |")
    t_pr, pr = best_of(1, lambda: bmc.prove(fixed))
    how = f"k = {pr.k}" if pr.k else f"no execution longer than {pr.coverage.depth} steps"
    print(f"| fixed spec, prove | {pr.verdict.word} ({how}) | {t_pr:.1f} s |")

    for text in ("prefill_pool=1..8", "prefill_pool=3..8"):
        t_sw, sw = best_of(1, lambda text=text: bmc.run(incident, max_depth=20, symbolic=[text]))
        answer = sw.parameters.describe().replace("\n", "; ") if sw.parameters else ""
        print(f"| check --engine bmc --symbolic {text} | {sw.verdict.word}: {answer} | {t_sw:.1f} s |")
    t_ps, ps = best_of(1, lambda: bmc.run_proof(incident, symbolic=["prefill_pool=3..8"]))
    print(f"| prove --symbolic prefill_pool=3..8 | {ps.verdict.word} | {t_ps:.1f} s |")


if __name__ == "__main__":
    main()
