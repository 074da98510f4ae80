"""Fuzz at real pool sizes: steps per second of `--engine fuzz`, and of concrete stepping alone.

    python benchmarks/fuzz_scale.py [--seconds 10] [--sizes 64,1024,4096,65536] [--others 4096] [--out FILE]

Issue 14, target 3: the concrete interpreter and fuzz at 4,096 pages at least 2,000 steps a
second, at 65,536 pages at least 500. Measured on specs/sglang_pd.py --fix door-retire with
requests=8 at each decode_pool size, and on the other shipped specs whose pools scale (at
--others pages; see OTHERS for vllm_block_pool), in one process, each row with its baseline:

- fuzz: `fuzz.check(model, seed=1, database=None, max_seconds=S)` (what `ownership check SPEC
  --engine fuzz --seed 1 --max-seconds S` runs), steps (transitions) per second of the check;
- fuzz, generic kernel: the same runs with the kernel's generic definition
  (`generic_kernel=True`, the concrete interpreter as it was before its fast path, docs/adr/
  0007), where it finishes a run in reasonable time;
- stepping alone: a seeded random walk through the concrete interpreter (runs of 50 steps
  from the initial state; at each state the bindings are tried in a random order until one
  is enabled, and the state's properties are judged, as fuzz does), with both kernels;
- Hypothesis alone: fuzz's machine (one rule, each firing a burst of steps picked by one
  draw, NOTE(bursts) in ownership/engines/fuzz_search.py) whose rule does nothing but count the
  steps of its burst, the same settings: the most steps a second fuzz can run on this
  machine, whatever the model costs; in brackets a machine of one rule per action (the
  spec's arguments, preconditions that hold, rules that do nothing), one step a rule, as
  fuzz ran before its bursts.

The output is markdown (the command, the machine, a table); --out writes it to a file too.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, precondition, rule

from ownership.api import model_for
from ownership.engines import fuzz
from ownership.interpret.concrete import Concrete
from ownership.lang.model import Model

#: the generic kernel is measured up to this pool size (a LIFO alloc is quadratic in it: at
#: 65,536 pages one step takes hours)
GENERIC_UP_TO = 4096

#: shipped specs besides sglang_pd whose pools scale, each in a release and fixes it is verified
#: with (docs/specs/): (spec, version, fixes, params at a pool size). vllm_block_pool is left
#: out (NOT_SCALING): it models vLLM's free queue in its own slots, and its actions and
#: invariant loop over the blocks inside loops over the blocks.
OTHERS: list[tuple[str, str | None, list[str], Any]] = [
    ("sglang_disagg", "0.5.23", ["quiesced-release", "hold-source"], lambda n: {"decode_pool": n, "requests": 4}),
    ("vllm_nixl_pd", "0.33.0", ["decline-expired-reads"],
     lambda n: {"decode_pool": n, "prefill_pool": n, "requests": 4, "slow_reads": 0}),
]

NOT_SCALING = ("vllm_block_pool is not measured: its own code (finish, and the invariant"
               " free_queue_holds_exactly_the_unreferenced_blocks) loops over the blocks inside a loop over"
               " the blocks, with a `select` over the free queue in each: about 0.45 s a finish at 64 blocks,"
               " whatever the kernel costs.")


def fuzz_rate(model: Model, seconds: float, *, generic: bool = False) -> tuple[float, int, float, str]:
    """(steps per second, steps, seconds, verdict) of a seeded fuzz check capped at `seconds`."""
    start = time.perf_counter()
    result = fuzz.check(model, seed=1, database=None, max_seconds=seconds, max_shrink_seconds=0.0,
                        generic_kernel=generic)
    took = time.perf_counter() - start
    steps = result.coverage.transitions
    return steps / took, steps, took, result.verdict.name.lower()


def walk_rate(model: Model, seconds: float, *, generic: bool = False) -> tuple[float, float]:
    """Seeded random runs through the concrete interpreter: (runs' steps per second, each
    step found by trying bindings in a random order and judged as fuzz judges it; enabled
    steps per second of the time spent in them, the interpreter's cost of one step)."""
    interp = Concrete(model, generic_kernel=generic)
    rng = random.Random(1)
    root = interp.packed(model.initial)
    order = list(range(len(model.bindings)))
    steps, inside = 0, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state, judged = root, interp.judge(root)
        for _ in range(fuzz.DEFAULT_STEPS):
            rng.shuffle(order)
            for b in order:
                t = time.perf_counter()
                out = interp.step_packed(state, model.bindings[b])
                if out.state is not None:
                    inside += time.perf_counter() - t
                    break
            else:
                break  # a dead end
            judged = interp.judge(out.state, judged, out.writes)
            state = out.state
            steps += 1
            if out.flags or any(j.flags for j in judged) or time.perf_counter() - start >= seconds:
                break
    return steps / (time.perf_counter() - start), steps / inside if inside else 0.0


def hypothesis_rate(model: Model, seconds: float, *, bursts: bool = True) -> float:
    """Steps per second of Hypothesis alone on a machine shaped like fuzz's for the model
    (`bursts`), or like one rule per action."""
    count = [0]
    namespace: dict[str, Any] = {}
    slices = fuzz.action_slices(model)
    if bursts:
        runs, length = fuzz.bursts(fuzz.DEFAULT_STEPS)
        size = 1 + len(slices) + fuzz.WORD * length

        def burst(self: Any, choices: bytes) -> None:
            for k in range(1 + len(slices), len(choices), fuzz.WORD):
                int.from_bytes(choices[k:k + fuzz.WORD], "little")
                count[0] += 1
        namespace["burst"] = rule(choices=st.binary(min_size=size, max_size=size))(burst)
    else:
        runs = fuzz.DEFAULT_STEPS
        for sl in slices:
            def nothing(self: Any, **_: int) -> None:
                count[0] += 1
            nothing.__name__ = sl.name
            strategies = {f"arg_{k}": st.integers(0, size - 1) for k, size in enumerate(sl.sizes)}
            namespace[f"rule_{sl.name}"] = precondition(lambda self: True)(rule(**strategies)(nothing))
    machine = type("Shape", (RuleBasedStateMachine,), namespace)
    chosen = settings(max_examples=10**6, stateful_step_count=runs, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                      phases=[Phase.generate])
    test = get_state_machine_test(machine, settings=chosen)
    deadline = time.perf_counter() + seconds
    original = machine.__init__

    def init(self: Any) -> None:
        if time.perf_counter() >= deadline:
            raise KeyboardInterrupt
        original(self)
    machine.__init__ = init  # type: ignore[method-assign]
    start = time.perf_counter()
    try:
        test()
    except KeyboardInterrupt:
        pass
    return count[0] / (time.perf_counter() - start)


def row(label: str, pages: int, model: Model, seconds: float, *, generic: bool) -> list[str]:
    rate, steps, took, verdict = fuzz_rate(model, seconds)
    walk, one = walk_rate(model, min(seconds, 5.0))
    cells = [label, f"{pages:,}", f"{model.width:,}", f"{rate:,.0f}", f"{steps:,} in {took:.1f} s ({verdict})",
             f"{walk:,.0f} ({one:,.0f})"]
    if generic:
        g_rate, g_steps, g_took, _ = fuzz_rate(model, seconds, generic=True)
        g_walk, g_one = walk_rate(model, min(seconds, 5.0), generic=True)
        cells += [f"{g_rate:,.1f}", f"{g_walk:,.1f} ({g_one:,.1f})", f"{rate / g_rate:,.0f}x" if g_rate else "-"]
    else:
        cells += ["not run", "not run", "-"]
    cells.append(f"{hypothesis_rate(model, min(seconds, 5.0)):,.0f}"
                 f" ({hypothesis_rate(model, min(seconds, 5.0), bursts=False):,.0f})")
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="time per fuzz check (default 10)")
    ap.add_argument("--sizes", default="64,1024,4096,65536", help="decode_pool sizes of sglang_pd")
    ap.add_argument("--others", type=int, default=4096, help="the pool size of the other specs (0: none)")
    ap.add_argument("--out", default=None, help="also write the markdown here")
    args = ap.parse_args()
    lines = [f"Command: `python benchmarks/fuzz_scale.py {' '.join(sys.argv[1:])}`".rstrip() + ", run "
             + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + ".",
             f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()};"
             f" load average before {' '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
             "| spec | pages | state width | fuzz steps/s | fuzz run | stepping alone steps/s (one step)"
             " | fuzz, generic kernel steps/s | stepping alone, generic kernel | fuzz speed-up | Hypothesis alone steps/s (a rule a step) |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    rows = []
    for pages in (int(x) for x in args.sizes.split(",")):
        model = model_for("sglang_pd", params={"decode_pool": pages, "requests": 8}, fixes=["door-retire"])
        rows.append(row("sglang_pd --fix door-retire, requests=8", pages, model, args.seconds,
                        generic=pages <= GENERIC_UP_TO))
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
    for spec, version, fixes, params in OTHERS if args.others else []:
        pages = args.others
        model = model_for(spec, params=params(pages), fixes=fixes, version=version)
        said = " ".join([f"--version {version}" if version else ""] + [f"--fix {f}" for f in fixes]).strip()
        rows.append(row(f"{spec} {said}, {params(pages)}", pages, model, args.seconds,
                        generic=pages <= GENERIC_UP_TO))
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", f"Load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}. Fuzz steps/s count the"
              " whole check (the model's set-up, the initial state's properties); a check that finds a violation"
              " stops there (its verdict in the run column). Stepping alone: random runs of the concrete"
              " interpreter, each step found by trying bindings in a random order, and in brackets the enabled"
              " steps per second of the time spent in them. The generic kernel is the same runs with the"
              " kernel's generic definition (docs/adr/0007); the speed-up is fuzz's over it, both on this"
              " version's store and fuzz. Hypothesis alone is the most fuzz can do on this machine (in brackets:"
              " with a rule a step, as fuzz ran before its bursts). "
              + NOT_SCALING]
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
