"""How fast `ownership monitor` checks a page-event log, against reading the log alone.

    python benchmarks/monitor.py [--events 400000] [--pages 1000] [--requests 100]

Writes a clean log (each request allocates two pages, writes, reads and frees them, over and
over) to a temporary file, then in this one process times (a) the baseline: reading the file
line by line and parsing each line with json.loads, nothing else, and (b) the monitor: the
same file through ownership.bridges.monitor.read_events and Monitor.feed, every property checked.
Prints events per second of each, the ratio (b)/(a) of their times, and the peak memory the
monitor's state took (tracemalloc), so that an optimisation shows as a ratio on any machine.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc

from ownership.bridges.monitor import Monitor, read_events


def write_log(path: str, events: int, pages: int, requests: int) -> None:
    per = max(1, pages // requests)
    with open(path, "w", encoding="utf-8") as f:
        n = 0
        while n < events:
            for r in range(requests):
                own = [r * per + k for k in range(min(2, per))]
                for kind in ("alloc", "write", "read", "free"):
                    f.write(json.dumps({"event": kind, "node": "decode", "request": f"req-{r}", "pages": own}) + "\n")
                    n += 1
                    if n >= events:
                        return


def baseline(path: str) -> int:
    count = 0
    with open(path, "rb") as f:
        for raw in f:
            json.loads(raw)
            count += 1
    return count


def monitored(path: str) -> int:
    mon = Monitor()
    with open(path, "rb") as f:
        assert mon.run(read_events(f, path)) is None
    return mon.coverage.events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=400_000)
    ap.add_argument("--pages", type=int, default=1_000)
    ap.add_argument("--requests", type=int, default=100)
    a = ap.parse_args()
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    try:
        write_log(path, a.events, a.pages, a.requests)
        t0 = time.perf_counter()
        n0 = baseline(path)
        t1 = time.perf_counter()
        tracemalloc.start()
        n1 = monitored(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        t2 = time.perf_counter()
        t1b = time.perf_counter()
        n2 = monitored(path)  # again without tracemalloc, for the time
        t2b = time.perf_counter()
        assert n0 == n1 == n2 == a.events
        base, mon = t1 - t0, t2b - t1b
        print(f"log: {a.events:,} events, {a.pages:,} pages, {a.requests:,} requests ({os.path.getsize(path) / 2**20:.1f} MB)")
        print(f"(a) json.loads of every line:  {base:6.2f} s  {a.events / base:>10,.0f} events/s")
        print(f"(b) ownership monitor:         {mon:6.2f} s  {a.events / mon:>10,.0f} events/s")
        print(f"ratio (b)/(a): {mon / base:.2f}x the time of parsing alone; monitor state peak {peak / 2**20:.1f} MB"
              f" (traced run {t2 - t1:.2f} s)")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
