"""Where --max-memory stops each engine, as a share of the limit (issue 29, item 5: between 0.9
and 1.0 of it; the batch engine stopped at 0.47 of 1G). A figure, so measured here, never
asserted by a test (tests/cli/test_limits.py checks only that each engine stops, exit 3).

    python benchmarks/memory_stop.py [--limits 300M,1G] [--engines batch,native,...]

Each run is the console script, `ownership check sglang_pd --fix door-retire ... --max-memory
LIMIT --json`; its peak resident memory is the kernel's (wait4's ru_maxrss of the command, the
largest of it and its workers, not their sum). Prints a markdown table with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ownership.limits import parse_size

ROOT = Path(__file__).resolve().parent.parent
OWNERSHIP = shutil.which("ownership") or str(Path(sys.executable).with_name("ownership"))
LARGE = ["--param", "requests=5", "--param", "decode_pool=5"]
ENGINES = {
    "batch": LARGE,
    "batch-workers": [*LARGE, "--workers", "2"],
    "batch-symmetry": [*LARGE, "--symmetry"],
    "native": [*LARGE, "--native"],
    "per-state": ["--param", "requests=3", "--param", "decode_pool=1100"],
    "liveness": ["--param", "requests=3", "--param", "decode_pool=6", "--liveness", "eventually-released"],
    # (at 1G the graph of requests=3 fits: four requests, whose safety search fits in 1G and
    # whose graph does not)
    "liveness-4": ["--param", "requests=4", "--param", "decode_pool=6", "--liveness", "eventually-released"],
    "fuzz": ["--engine", "fuzz", "--runs", "1000000", "--steps", "200", "--param", "requests=6",
             "--param", "decode_pool=30", "--seed", "1"],
}


def measure(args: list[str], limit: str) -> tuple[int, str, float, float]:
    """Exit code, what stopped it, peak resident memory / limit, wall seconds."""
    start = time.monotonic()
    child = subprocess.Popen([OWNERSHIP, "check", "sglang_pd", "--fix", "door-retire", *args, "--max-memory", limit,
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    out = child.stdout.read() if child.stdout is not None else b""
    _, status, usage = os.wait4(child.pid, 0)
    doc = json.loads(out or b"{}")
    cov = doc.get("coverage") or {}
    stopped = cov.get("stopped_by") or json.dumps(doc.get("liveness") or doc.get("stopped_by"))
    return (os.waitstatus_to_exitcode(status), str(stopped), usage.ru_maxrss * 1024 / parse_size(limit),
            time.monotonic() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limits", default="300M,1G")
    ap.add_argument("--engines", default=",".join(ENGINES))
    args = ap.parse_args()
    load0 = os.getloadavg()
    print("| engine | --max-memory | exit | stopped by | peak / limit | wall s |")
    print("|---|---|---|---|---|---|")
    for engine in args.engines.split(","):
        for limit in args.limits.split(","):
            code, stopped, ratio, wall = measure(ENGINES[engine], limit)
            print(f"| {engine} | {limit} | {code} | {stopped[:60]} | {ratio:.3f} | {wall:.0f} |", flush=True)
    print(f"\nload average {load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
