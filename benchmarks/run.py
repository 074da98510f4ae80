"""The benchmark suite: ownership's engines against SPIN on two models, in one run.

    python benchmarks/run.py                    # runs everything, prints the table, rewrites RESULTS.md
    python benchmarks/run.py --quick            # the default size of each model (a smoke test)
    python benchmarks/run.py --model incident   # one model only

The models: specs/sglang_pd.py with --fix door-retire, and benchmarks/peers/incident.py (the
incident as a small protocol of its own, issue 14) with --fix withdraw-rejected, so that every
search is complete; each has a Promela twin in benchmarks/peers/. For each model at each of its
sizes every tool runs in its own process; the table gives states, states/s, peak memory (the
process's maximum resident set), wall time and CPU time for

  (a) the per-state engine (ownership.engines.per_state), capped at --cap seconds where it
      would take longer (the row then says so and counts what it reached);
  (b) the batch engine (ownership.engines.batch), one process, and for sglang_pd's largest
      size with --workers 2;
  (c) the batch engine with symmetry reduction;
  (e) the native engine (--native: the search compiled to C, ownership.engines.native), timed
      with its compiled model in the cache; the first compilation is timed apart;
  (f) the native engine with symmetry reduction;
  (d) SPIN on the Promela twin: `spin -a`, gcc -O2, then ./pan; exhaustive, no partial-order
      reduction (-DNOREDUCE), safety only.

Then issue 14's targets 2 to 5, each tool in its own process (benchmarks/scale_targets.py
says what each measures and against what): symmetry at 5 requests against the canonicaliser
that tried every ordering, fuzz and the concrete interpreter at 4,096 and 65,536 pages, the
native engine at 64 and 128 decode pages, bmc to depth 12, and the bytes a state at 27.8 M
states (about 5 minutes; --no-scale leaves them out). RESULTS.md opens with a table of every
target, what this run measured, and whether it is met.

SPIN's state count must equal ours without reductions, and the engines' counts each other's
(the run fails loudly otherwise). The ratios against SPIN are computed from this same run. Wall
times include the Python start-up and the spec's loading for ours, and the compilation for SPIN
(also shown apart). The machine is shared: the load average is printed, and CPU time is shown
beside wall time.

Set-up: benchmarks/setup.sh installs SPIN from Debian's `spin` package (run.py calls it when
`spin` is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The first heading in RESULTS.md that this script does not write (kept on a rewrite).
OTHER_SECTIONS = "## The symbolic engine"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Bench:
    """One model of the suite: its spec, its Promela twin, the fixes that make its searches
    complete, its sizes (name, parameters), and how its parameters become SPIN's -D options."""

    name: str
    spec: str                           # as `ownership check` takes it, from the repository root
    pml: Path
    fixes: tuple[str, ...]
    sizes: list[tuple[str, dict]]
    defaults: dict
    defines: Any                        # (parameters with defaults) -> list of "-DNAME=value"

    def spin_defines(self, params: dict) -> list[str]:
        fixes = [f"-D{f.upper().replace('-', '_')}=1" for f in self.fixes]
        return self.defines({**self.defaults, **params}) + fixes


SGLANG_PD = Bench(
    "sglang_pd", "sglang_pd", HERE / "peers" / "sglang_pd.pml", ("door-retire",),
    # the spec's default, a medium size, and one of over 5 M states
    [("default", {}), ("medium", {"requests": 4, "decode_pool": 3}), ("large", {"requests": 4, "decode_pool": 5})],
    {"requests": 2, "context": 3, "prefill_pool": 2, "decode_pool": 4},
    lambda p: [f"-DR={p['requests']}", f"-DC={p['context']}", f"-DPP={p['prefill_pool']}", f"-DDP={p['decode_pool']}"],
)
INCIDENT = Bench(
    "incident", "benchmarks/peers/incident.py", HERE / "peers" / "incident.pml", ("withdraw-rejected",),
    # (P, R, L) = (8, 3, 3), then 4 requests: over 20 M states
    [("default", {}), ("large", {"requests": 4})],
    {"pages": 8, "requests": 3, "longest": 3},
    lambda p: [f"-DP={p['pages']}", f"-DR={p['requests']}", f"-DL={p['longest']}"],
)
BENCHES = {b.name: b for b in (SGLANG_PD, INCIDENT)}


@dataclass(frozen=True)
class Goal:
    """One of issue 14's targets as this run measured it."""

    target: str                 # its number in the issue
    what: str
    measured: str
    threshold: str
    met: bool

    def line(self) -> str:
        return f"| {self.target} | {self.what} | {self.measured} | {self.threshold} | {'met' if self.met else '**NOT met**'} |"


@dataclass
class Row:
    """One measured run."""

    size: str
    tool: str
    states: int
    seconds: float              # wall time of the whole process (SPIN: compile + run)
    cpu: float                  # user + system time of the process(es)
    peak_mb: float
    verdict: str = ""
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------- child processes


def child(args: argparse.Namespace) -> None:
    """Run one of our engines in this (child) process and print one JSON line."""
    from ownership.api import model_for
    from ownership.engines import batch, native, per_state

    params = json.loads(args.params)
    model = model_for(args.spec, params=params, fixes=tuple(json.loads(args.fixes)))
    cpu, build = time.process_time(), 0.0
    if args.child == "explicit":
        result = per_state.check(model, max_seconds=args.cap)
    elif args.child == "compile":  # (the native engine's first compilation, into a fresh cache)
        from ownership.interpret.batch import BatchModel
        from ownership.interpret.native import NativeModel

        start = time.monotonic()
        NativeModel(BatchModel(model, reachable=True))  # (as the engine builds it)
        print(json.dumps({"compile_seconds": time.monotonic() - start}))
        return
    elif args.child in ("native", "native-symmetry"):
        # The C search's own CPU time: what its slices take, without tracing the spec or loading
        # its library (timed around the engine's loop, in this process)
        loop = native._Run._loop

        def timed(self, *a, **k):  # type: ignore[no-untyped-def]
            t = time.process_time()
            try:
                return loop(self, *a, **k)
            finally:
                searched.append(time.process_time() - t)

        searched: list[float] = []
        native._Run._loop = timed  # type: ignore[method-assign]
        cpu = time.process_time()
        result = native.check(model, symmetry=args.child == "native-symmetry")
        build = (time.process_time() - cpu) - sum(searched)
    else:
        cpu = time.process_time()
        result = batch.check(model, symmetry=args.child == "symmetry", workers=args.workers)
    cpu = time.process_time() - cpu
    cov = result.coverage
    print(json.dumps({
        "verdict": result.verdict.word, "states": cov.states, "transitions": cov.transitions,
        "engine_seconds": cov.seconds, "engine_cpu": cpu, "build_cpu": build, "complete": cov.complete,
        "before_symmetry": getattr(cov, "states_before_symmetry", None),
        "bits": getattr(cov, "bits_per_state", None),
    }))


def measured(cmd: list[str], cwd: Path | None = None) -> tuple[str, float, float, float]:
    """Run a command; (stdout, wall seconds, CPU seconds, peak resident MB) from its rusage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{errors[-2000:]}")
    return text, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def ours(bench: Bench, size: str, params: dict, tool: str, cap: float, workers: int = 1) -> Row:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", tool, "--params", json.dumps(params),
           "--cap", str(cap), "--workers", str(workers), "--spec", bench.spec, "--fixes", json.dumps(list(bench.fixes))]
    out, wall, cpu, peak = measured(cmd, cwd=ROOT)
    data = json.loads(out.strip().splitlines()[-1])
    name = {"explicit": "(a) per-state engine", "batch": "(b) batch engine",
            "symmetry": "(c) batch + symmetry", "native": "(e) native engine (--native)",
            "native-symmetry": "(f) native + symmetry"}[tool]
    if tool == "batch" and workers > 1:
        name = f"(b) batch engine, --workers {workers}"
    note = ""
    if tool == "explicit" and not data["complete"]:
        note = f"capped at {cap:.0f} s: {data['states']:,} states reached, not complete"
    if tool in ("symmetry", "native-symmetry"):
        note = f"{data['states']:,} representatives stand for {data['before_symmetry']:,} states"
    if tool != "explicit" and data["engine_seconds"] > 0:
        note = (note + "; " if note else "") + (
            f"search alone {data['engine_seconds']:.2f} s wall, {data['engine_cpu']:.2f} s CPU"
            f" ({data['states'] / data['engine_cpu']:,.0f} states per CPU-second)")
    row = Row(f"{bench.name} {size}", name, data["states"], wall, cpu, peak, data["verdict"], note, data)
    if tool == "symmetry":
        row.extra["rate_before"] = data["before_symmetry"] / wall
    return row


def compile_seconds(bench: Bench, params: dict, cache: Path) -> float:
    """The native engine's first compilation of the model (a fresh cache folder)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "compile", "--params", json.dumps(params),
           "--spec", bench.spec, "--fixes", json.dumps(list(bench.fixes))]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    with tempfile.TemporaryFile() as out:
        subprocess.run(cmd, cwd=ROOT, stdout=out, env=env, check=True)
        out.seek(0)
        return float(json.loads(out.read().decode().strip().splitlines()[-1])["compile_seconds"])


def spin(bench: Bench, size: str, params: dict, expected: int, workdir: Path) -> Row:
    """SPIN on the model's Promela twin; `expected` (our state count) sizes its hash table."""
    out_a, wall_a, cpu_a, _ = measured(["spin", "-a", *bench.spin_defines(params), str(bench.pml)], cwd=workdir)
    out_c, wall_c, cpu_c, _ = measured(["gcc", "-O2", "-w", "-DSAFETY", "-DNOREDUCE", "-DMEMLIM=16384",
                                        "-o", "pan", "pan.c"], cwd=workdir)
    w = max(20, min(30, expected.bit_length() + 1))
    out, wall_r, cpu_r, peak = measured(["./pan", "-m1000000", f"-w{w}"], cwd=workdir)
    stored = re.search(r"(\d+) states, stored", out)
    errors = re.search(r"errors: (\d+)", out)
    trans = re.search(r"(\d+) transitions \(= stored\+matched\)", out)
    if not stored or not errors or int(errors.group(1)) != 0:
        raise RuntimeError(f"SPIN did not complete cleanly:\n{out[-2000:]}")
    compile_s = wall_a + wall_c
    row = Row(f"{bench.name} {size}", "(d) SPIN 6.5 (compile + run)", int(stored.group(1)), compile_s + wall_r,
              cpu_a + cpu_c + cpu_r, peak, "verified",
              f"compile {compile_s:.2f} s wall ({cpu_a + cpu_c:.2f} s CPU), run {wall_r:.2f} s wall ({cpu_r:.2f} s CPU;"
              f" {int(stored.group(1)) / cpu_r:,.0f} states per CPU-second of the run)")
    row.extra = {"compile": compile_s, "run": wall_r, "run_cpu": cpu_r,
                 "transitions": int(trans.group(1)) if trans else None}
    return row


# --------------------------------------------------------------------------- the suite


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores (nproc), {cpu}, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def spin_version() -> str:
    try:
        return subprocess.run(["spin", "-V"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "not installed"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def incident() -> list[str]:
    """The incident's first counterexample: the whole `ownership check specs/sglang_pd.py`
    process, as the CLI runs it, and the batch engine in a fresh process."""
    lines = []
    exe = shutil.which("ownership")
    if exe:
        _, wall, cpu, peak = measured([exe, "check", "specs/sglang_pd.py"], cwd=ROOT)
        lines.append(f"| `ownership check specs/sglang_pd.py` (the CLI as installed) | {wall:.2f} | {cpu:.2f} | {peak:.0f} |")
    code = ("from ownership.api import model_for; from ownership.engines import batch;"
            " r = batch.check(model_for('specs/sglang_pd.py')); assert r.violation.property == 'stale-read'")
    _, wall, cpu, peak = measured([sys.executable, "-c", code], cwd=ROOT)
    lines.append(f"| a fresh `python` process: load the spec, batch engine, counterexample | {wall:.2f} | {cpu:.2f} | {peak:.0f} |")
    return lines


def scaled(what: str, *args: str) -> tuple[dict, float, float, float]:
    """One of benchmarks/scale_targets.py's measurements in its own process: (its JSON, wall, CPU, peak MB)."""
    print(f"== issue 14: {what} {' '.join(args)}", file=sys.stderr)
    out, wall, cpu, peak = measured([sys.executable, str(HERE / "scale_targets.py"), what, *args], cwd=ROOT)
    return json.loads(out.strip().splitlines()[-1]), wall, cpu, peak


def scale(goals: list[Goal]) -> list[str]:
    """Issue 14's targets 2 to 5 (benchmarks/scale_targets.py), each tool in its own process:
    the lines of their section of RESULTS.md; appends their goals."""
    import scale_targets as st  # benchmarks/scale_targets.py

    lines = ["### Target 2: symmetry without the R! orderings",
             "",
             f"sglang_pd `--fix door-retire --symmetry`, {st.SYMMETRY_PARAMS}: the whole search with each"
             " canonicaliser (benchmarks/symmetry.py), each in its own process (search: the check's own time;"
             " process: the whole process, Python's start-up, the spec's loading and the compilation included).",
             "",
             "| canonicaliser | verdict | representatives | states they stand for | search wall s | search CPU s"
             " | process wall s | process CPU s | peak MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    sym = {}
    names = {"before": "before: every ordering of the requests on every row, a request's own data (numpy)",
             "now": "now: the argsort of each row's signatures (numpy)",
             "native": "now, in C (`--native --symmetry`)",
             "native-incident": "incident model, 8 pages, 5 requests, in C (`--native --symmetry`)"}
    for variant in ("before", "now", "native", "native-incident"):
        data, wall, cpu, peak = scaled("symmetry", variant)
        sym[variant] = data
        lines.append(f"| {names[variant]} | {data['verdict']} | {data['states']:,} | {data['before_symmetry']:,}"
                     f" | {data['search_seconds']:.2f} | {data['search_cpu']:.2f} | {wall:.2f} | {cpu:.2f} | {peak:,.0f} |")
    before, now, nat = sym["before"], sym["now"], sym["native"]
    if not (before["states"] == now["states"] == nat["states"]
            and before["before_symmetry"] == now["before_symmetry"] == nat["before_symmetry"]):
        raise SystemExit(f"the canonicalisers disagree: {sym}")
    complete = all(sym[v]["verdict"] == "verified" for v in sym)
    capped = "" if before["verdict"] == "verified" else "at least "
    goals.append(Goal("2", "symmetry at 5 requests: the search with the canonicaliser as it was over today's"
                      " (`--native --symmetry`), wall", f"{capped}{before['search_seconds'] / nat['search_seconds']:.1f}x"
                      f" ({before['search_seconds']:.1f} s / {nat['search_seconds']:.1f} s; numpy now:"
                      f" {before['search_seconds'] / now['search_seconds']:.1f}x)", "at least 5x",
                      complete and before["search_seconds"] >= 5 * nat["search_seconds"]))
    for v in ("native", "native-incident"):
        goals.append(Goal("2", f"a complete verdict on {sym[v]['before_symmetry']:,} states before symmetry"
                          f" ({'sglang_pd' if v == 'native' else 'incident'}), wall of the search",
                          f"{sym[v]['search_seconds']:.1f} s ({sym[v]['verdict']})", "over 400 M states, under 60 s",
                          sym[v]["verdict"] == "verified" and sym[v]["before_symmetry"] >= 400e6
                          and sym[v]["search_seconds"] < 60))

    lines += ["", "### Target 3: real pool sizes", "",
              f"Fuzz: `ownership check sglang_pd --fix door-retire --param requests={st.FUZZ_REQUESTS} --param"
              f" decode_pool=PAGES --engine fuzz --seed 1 --max-seconds {st.FUZZ_SECONDS:g}` as a library call"
              " (benchmarks/fuzz_scale.py), steps per second of the whole check; stepping alone: seeded random"
              " runs through the concrete interpreter, and in brackets the enabled steps per second of the time"
              " spent in them.",
              "",
              "| decode pages | fuzz steps/s | fuzz run | stepping alone steps/s (one step) | process wall s | process CPU s | peak MB |",
              "|---:|---:|---|---:|---:|---:|---:|"]
    for pages, floor in ((4096, 2000), (65536, 500)):
        data, wall, cpu, peak = scaled("fuzz", str(pages))
        lines.append(f"| {pages:,} | {data['fuzz_rate']:,.0f} | {data['fuzz_steps']:,} in {data['fuzz_seconds']:.1f} s"
                     f" ({data['verdict']}) | {data['walk_rate']:,.0f} ({data['one_step_rate']:,.0f}) | {wall:.2f}"
                     f" | {cpu:.2f} | {peak:,.0f} |")
        rate = min(data["fuzz_rate"], data["walk_rate"])
        goals.append(Goal("3", f"fuzz and the concrete interpreter at {pages:,} pages, steps a second",
                          f"fuzz {data['fuzz_rate']:,.0f}, stepping {data['walk_rate']:,.0f}", f"at least {floor:,}",
                          rate >= floor))
    lines += ["",
              f"Exhaustive search past 64 pages: sglang_pd `--fix door-retire --param requests={st.WIDE_REQUESTS}"
              f" --param decode_pool=PAGES --native --max-states {st.WIDE_STATES}`; compiled once into an empty"
              " cache (timed apart), then the check timed whole (tracing the spec, loading the library, the search).",
              "",
              "| decode pages | compile (once) s | states | check wall s | check CPU s | states/s (wall) | peak MB |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for pages in (64, 128):
        data, wall, cpu, peak = scaled("wide", str(pages))
        rate = data["states"] / data["check_seconds"]
        lines.append(f"| {pages} | {data['compile_seconds']:.1f} | {data['states']:,} ({data['verdict']}) |"
                     f" {data['check_seconds']:.2f} | {data['check_cpu']:.2f} | {rate:,.0f} | {peak:,.0f} |")
        goals.append(Goal("3", f"exhaustive search (`--native`) at {pages} decode pages ({-(-pages // 63)} limbs a page"
                          " set), states a second of the whole check", f"{rate:,.0f}", "at least 100,000",
                          rate >= 100_000 and data["states"] == st.WIDE_STATES))

    data, wall, cpu, peak = scaled("bmc")
    marks = dict((d, s) for d, s in data["marks"])
    at = marks.get(st.BMC_DEPTH)
    lines += ["", "### Target 4: bmc", "",
              f"`ownership check sglang_pd --fix door-retire --param requests={st.BMC_PARAMS['requests']} --param"
              f" decode_pool={st.BMC_PARAMS['decode_pool']} --engine bmc --max-depth {st.BMC_DEPTH}`"
              f" as a library call: {data['verdict']} to depth {data['depth']}; seconds from the start to each"
              " depth settled: " + ", ".join(f"{d}: {s:.1f}" for d, s in data["marks"][-5:])
              + f"; the process {wall:.1f} s wall, {cpu:.1f} s CPU, {peak:,.0f} MB."]
    goals.append(Goal("4", f"bmc to depth {st.BMC_DEPTH}, sglang_pd at {st.BMC_PARAMS}",
                      f"{at:.1f} s" if at is not None else "not reached", "under 20 s", at is not None and at < 20))

    out, wall, cpu, peak = measured([sys.executable, "-m", "ownership", *st.MEMORY_ARGS], cwd=ROOT)
    held = re.search(r"hold (\d+) MB \(([\d.]+) bytes a state\); peak resident (\d+) MB", out)
    states = re.search(r"covered ([\d,]+) states", out)
    if not held or not states:
        raise SystemExit(f"the memory run printed no memory line:\n{out[-2000:]}")
    n = int(states.group(1).replace(",", ""))
    estimate, printed_peak = int(held.group(1)), int(held.group(3))
    lines += ["", "### Target 5: memory", "",
              f"`ownership {' '.join(st.MEMORY_ARGS)}` (the incident model stopped at the issue's 27.8 M"
              f" states), in its own process: {n:,} states in {wall:.1f} s wall, {cpu:.1f} s CPU. The CLI printed"
              f" \"{held.group(0)}\"; the process's peak resident set (its rusage) was {peak:,.0f} MB,"
              f" {peak * 2**20 / n:.1f} bytes a state with the interpreter and the spec included."]
    goals.append(Goal("5", f"bytes a stored state at {n:,} states, the process's peak resident set over the states",
                      f"{peak * 2**20 / n:.1f}", "at most 40", peak * 2**20 / n <= 40 and n >= 27_820_208))
    ratio = estimate / peak
    goals.append(Goal("5", "the memory the CLI prints (what the stored states and the visited table hold) over the"
                      " real peak resident set", f"{ratio:.2f}x ({estimate:,} MB / {peak:,.0f} MB; the CLI's peak:"
                      f" {printed_peak:,} MB)", "within 1.5x", 1 / 1.5 <= ratio <= 1.5))
    return lines


def reported(rows: list[Row], *loads: str) -> bool:
    """Target 6, as far as a run can tell: every row has its CPU beside its wall time, the load
    average was read, SPIN's rows have their compile and run apart, and docs/performance.md
    still says which figures are per CPU-second and which per wall-second."""
    guide = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    return (all(r.cpu > 0 and r.seconds > 0 for r in rows) and all("?" not in x for x in loads)
            and all({"compile", "run", "run_cpu"} <= r.extra.keys() for r in rows if r.tool.startswith("(d)"))
            and "**per CPU-second**" in guide and "**per wall-second**" in guide)


def table(rows: list[Row]) -> list[str]:
    out = ["| size | tool | states | wall s | states/s | CPU s | peak MB | note |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r.size} | {r.tool} | {r.states:,} | {r.seconds:.2f} | {r.rate:,.0f} | {r.cpu:.2f} |"
                   f" {r.peak_mb:,.0f} | {r.note} |")
    return out


def measure(bench: Bench, size: str, params: dict, cap: float, tmp: Path,
            ratios: list[str], targets: list[str], goals: list[Goal]) -> list[Row]:
    """Every tool on one model at one size; appends its ratios (and, at the largest size, its
    targets) and returns its rows. Fails loudly when two tools count different states."""
    print(f"== {bench.name} {size} {params or '(defaults)'}", file=sys.stderr)
    a = ours(bench, size, params, "explicit", cap)
    b = ours(bench, size, params, "batch", cap)
    rows = [a, b]
    largest = size == bench.sizes[-1][0]
    if largest and bench is SGLANG_PD:
        rows.append(ours(bench, size, params, "batch", cap, workers=2))
    c = ours(bench, size, params, "symmetry", cap)
    first = compile_seconds(bench, params, tmp / f"cache-{bench.name}-{size}")
    ours(bench, size, params, "native", cap)  # (warms the cache of this machine)
    e = ours(bench, size, params, "native", cap)
    e.note += f"; first compilation {first:.2f} s"
    ours(bench, size, params, "native-symmetry", cap)  # (warms the cache)
    f = ours(bench, size, params, "native-symmetry", cap)
    d = spin(bench, size, params, b.states, tmp)
    rows += [c, e, f, d]
    for r in rows:
        print(f"   {r.tool}: {r.states:,} states, {r.seconds:.2f} s", file=sys.stderr)
    where = f"{bench.name} {size}"
    if d.states != b.states:
        raise SystemExit(f"state counts differ at {where}: SPIN {d.states:,}, ours {b.states:,}")
    if e.states != b.states or e.extra["transitions"] != b.extra["transitions"]:
        raise SystemExit(f"the native engine counts {e.states:,} states at {where}, the batch engine {b.states:,}")
    if c.extra.get("before_symmetry") != b.states:
        raise SystemExit(f"symmetry stands for {c.extra.get('before_symmetry')}, not {b.states} at {where}")
    if (f.states, f.extra["before_symmetry"]) != (c.states, b.states):
        raise SystemExit(f"native symmetry: {f.states:,} representatives, the batch engine's {c.states:,} at {where}")
    spin_run_rate = d.states / d.extra["run"]
    spin_cpu_rate = d.states / d.extra["run_cpu"]
    search_cpu = e.extra["engine_cpu"] - e.extra["build_cpu"]
    native_cpu_rate = e.states / search_cpu if search_cpu >= 0.1 else float("nan")  # (too short to tell)
    ratios.append(
        f"| {where} | {b.states:,} (= SPIN) | {b.rate / spin_run_rate:.2f}x | {d.seconds / b.seconds:.2f}x |"
        f" {d.seconds / c.seconds:.2f}x | {a.rate / spin_run_rate:.3f}x | {native_cpu_rate / spin_cpu_rate:.2f}x"
        f" | {(e.states / e.extra['engine_cpu']) / spin_cpu_rate:.2f}x | {(e.states / e.cpu) / spin_cpu_rate:.2f}x"
        f" | {c.seconds / f.seconds:.2f}x |")
    if not largest:
        return rows
    if bench is SGLANG_PD:
        search = b.extra["engine_seconds"]
        targets.append(f"- batch engine without symmetry, one process, at the largest size: {b.rate:,.0f} states/s"
                       f" wall for the whole process, {b.states / search:,.0f} for the search alone,"
                       f" {b.states / b.cpu:,.0f} per CPU-second of the process: target 1,000,000 states/s"
                       f" {'met' if b.rate >= 1e6 else 'met for the search alone, not for the whole process' if b.states / search >= 1e6 else 'NOT met'}.")
        targets.append(f"- with symmetry, complete verdict at the largest size in {c.seconds:.2f} s wall against SPIN's"
                       f" compile + run {d.seconds:.2f} s: target {'met' if c.seconds < d.seconds else 'NOT met'}.")
        w2 = next(r for r in rows if "--workers 2" in r.tool)
        targets.append(f"- workers: 1 process {b.seconds:.2f} s, 2 workers {w2.seconds:.2f} s"
                       f" ({b.seconds / w2.seconds:.2f}x).")
    check_rate = e.states / e.extra["engine_cpu"]
    goals.append(Goal("1", f"native search over SPIN's run, states per CPU-second ({bench.name}, {b.states:,} states,"
                      " counts equal)", f"{native_cpu_rate / spin_cpu_rate:.2f}x", "at least 3x",
                      native_cpu_rate >= 3 * spin_cpu_rate))
    targets.append(f"- issue 14, target 1 ({bench.name}, {b.states:,} states): the native engine's search"
                   f" {native_cpu_rate:,.0f} states per CPU-second, SPIN's run {spin_cpu_rate:,.0f}:"
                   f" {native_cpu_rate / spin_cpu_rate:.2f}x (target 3x"
                   f" {'met' if native_cpu_rate >= 3 * spin_cpu_rate else 'NOT met'}); the whole check,"
                   f" tracing the spec included, {check_rate / spin_cpu_rate:.2f}x; the whole process,"
                   f" Python's start-up and the spec's loading included, {(e.states / e.cpu) / spin_cpu_rate:.2f}x.")
    targets.append(f"- memory ({bench.name}, {e.states:,} states): the native engine's peak resident set {e.peak_mb:,.0f} MB,"
                   f" {e.peak_mb * 2**20 / e.states:.1f} bytes a state with the interpreter and the spec included;"
                   f" SPIN's {d.peak_mb:,.0f} MB, {d.peak_mb * 2**20 / d.states:.1f} bytes a state.")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--spec", default=SGLANG_PD.spec, help=argparse.SUPPRESS)
    ap.add_argument("--fixes", default=json.dumps(list(SGLANG_PD.fixes)), help=argparse.SUPPRESS)
    ap.add_argument("--cap", type=float, default=60.0, help="time cap of the per-state engine, seconds (default 60)")
    ap.add_argument("--quick", action="store_true", help="the default size of each model only")
    ap.add_argument("--model", choices=sorted(BENCHES), action="append",
                    help="measure this model only (repeatable; default: all)")
    ap.add_argument("--no-write", action="store_true", help="print the table, leave RESULTS.md alone")
    ap.add_argument("--no-scale", action="store_true",
                    help="leave out issue 14's targets 2 to 5 (symmetry, pool sizes, bmc, memory: about 5 minutes)")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if shutil.which("spin") is None:
        subprocess.run(["bash", str(HERE / "setup.sh")], check=True)
    benches = [BENCHES[n] for n in args.model] if args.model else list(BENCHES.values())
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    rows: list[Row] = []
    ratios: list[str] = []
    targets: list[str] = []
    goals: list[Goal] = []
    with tempfile.TemporaryDirectory(prefix="ownership-bench-") as tmp:
        for bench in benches:
            for size, params in bench.sizes[:1] if args.quick else bench.sizes:
                rows += measure(bench, size, params, args.cap, Path(tmp), ratios, targets, goals)
        inc = incident()
    scales = [] if args.quick or args.model or args.no_scale else scale(goals)
    wall_inc = float(inc[-1].split("|")[2])
    targets.append(f"- the incident's first counterexample, whole process: {wall_inc:.2f} s with the batch engine:"
                   f" target (< 1 s) {'met' if wall_inc < 1 else 'NOT met'}.")
    command = "python benchmarks/run.py" + "".join(f" --model {b.name}" for b in benches if args.model) \
        + (" --no-scale" if args.no_scale else "") + (" --quick" if args.quick else "") \
        + (f" --cap {args.cap:g}" if args.cap != 60.0 else "")
    load_after = load()
    goals.append(Goal("6", "this file: CPU seconds beside wall seconds, the load average, SPIN's compile and run"
                      " apart, the command; docs/performance.md says which figure is per CPU-second",
                      f"load average before {load_before}, after {load_after}", "-", reported(rows, load_before, load_after)))
    whole = sorted(goals, key=lambda g: g.target)
    summary = [f"Issue 14's targets as this run measured them ({sum(g.met for g in whole)} of {len(whole)} met;"
               f" targets {', '.join(sorted({g.target for g in whole}))} measured):", "",
               "| target | what | measured | threshold | |", "|---|---|---|---|---|", *(g.line() for g in whole)]
    lines = [
        "# Benchmark results",
        "",
        f"Command: `{command}` (after `bash benchmarks/setup.sh`), run {started}.",
        f"Machine: {machine()}; SPIN: {spin_version()}; load average before {load_before}, after {load_after}.",
        "",
        *summary,
        "",
        "Models (complete searches, so each with the fix that makes it verify):",
        "",
        *(f"- {b.name}: {b.spec} (Promela: benchmarks/peers/{b.pml.name}) with --fix {' --fix '.join(b.fixes)};"
          " sizes:" + ";".join(f" {n} = {p or 'defaults'}" for n, p in b.sizes) + f" (defaults {b.defaults})."
          for b in benches),
        "",
        *table(rows),
        "",
        "Ratios from this run (SPIN's rate is its run alone; wall ratios are SPIN compile + run over ours):",
        "",
        "| size | states | batch states/s over SPIN's | SPIN wall / batch wall | SPIN wall / batch+symmetry wall | per-state engine rate over SPIN's | native search states per CPU-s over SPIN run's | native check (tracing included) per CPU-s over SPIN run's | native whole process per CPU-s over SPIN run's | batch+symmetry wall / native+symmetry wall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *ratios,
        "",
        "The incident's first counterexample (`ownership check specs/sglang_pd.py`, no fix):",
        "",
        "| process | wall s | CPU s | peak MB |",
        "|---|---:|---:|---:|",
        *inc,
        "",
        "Targets (issues 7 and 14):",
        "",
        *targets,
        "",
        *(["## Issue 14's targets 2 to 5 (benchmarks/scale_targets.py)", "", *scales, ""] if scales else []),
        "Notes: every tool runs in its own process; peak MB is that process's maximum resident set"
        " (for --workers 2, the parent's). SPIN counts one more transition than ours (its count includes"
        " the step into the initial state); its state count is checked equal to ours. The machine is a"
        " shared 2-core VM: other jobs' load shows in wall times (compare CPU s), and a first touch of"
        " fresh memory is expensive there (docs/performance.md).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write and not args.quick:
        # Keep the sections that other benchmarks write (benchmarks/bmc.py's, under its heading).
        path = HERE / "RESULTS.md"
        old = path.read_text() if path.exists() else ""
        keep = old[old.index(OTHER_SECTIONS):] if OTHER_SECTIONS in old else ""
        path.write_text(text + ("\n" + keep if keep else ""))


if __name__ == "__main__":
    main()
