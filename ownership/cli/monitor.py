"""`ownership monitor EVENTS`: check a log of page events against the ownership kernel.

EVENTS is a file of JSON lines (ownership/monitor.py says the format), or `-` for standard
input (a live stream: `tail -f events.jsonl | ownership monitor -`). The log is read line by
line in constant memory; the first violation stops the command with exit 1, its message, and
a trace of the pages' story (`--out`, for `ownership show`). Exit 0 says how many events
were checked, and never more; Ctrl-C or a limit stops it with exit 3 and the count so far.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import IO, Any

import click

from .. import limits
from ..errors import UsageError
from ..monitor import DEFAULT_HISTORY, PROPERTIES, Coverage, Finding, Monitor, read_events
from ..result import Verdict
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    check_out,
    echo,
    emit_json,
    limited,
    write_trace,
)


@dataclass
class _Reading:
    """The progress line of a monitor run."""

    coverage: Coverage
    seconds: float

    def describe(self) -> str:
        rate = self.coverage.events / self.seconds if self.seconds else 0.0
        return (f"{self.coverage.events:,} events (line {self.coverage.lines:,}), {self.coverage.pages:,} pages,"
                f" {rate:,.0f} events/s, {self.seconds:.0f} s")


def _open(events: str) -> IO[bytes]:
    if events == "-":
        return sys.stdin.buffer
    try:
        return open(events, "rb")  # noqa: SIM115 (closed by the command)
    except OSError as e:
        raise UsageError(f"cannot read the event log {events}: {e.strerror or e}") from None


def _covered(cov: Coverage) -> str:
    kinds = ", ".join(f"{n:,} {k}" for k, n in sorted(cov.by_kind.items()))
    def n(count: int, word: str) -> str:
        return f"{count:,} {word}{'' if count == 1 else 's'}"

    requests = f"over {cov.requests:,} requests" if cov.requests_capped else n(cov.requests, "request")
    return f"{n(cov.events, 'event')} on {n(cov.lines, 'line')} ({kinds or 'none'}), {n(cov.pages, 'page')}, {requests}"


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("events", metavar="EVENTS")
@click.option("--out", "out", metavar="PATH", help="Write the trace of a violation (its pages' story) as ITF JSON here.")
@click.option("--skip", "skip", multiple=True, metavar="PROPERTY", type=click.Choice(PROPERTIES),
              help="Do not check this property (repeatable).")
@click.option("--history", type=click.IntRange(min=1, max=4096), default=DEFAULT_HISTORY, show_default=True,
              help="Events kept per page for the trace of a violation.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long (exit 3, with the events checked so far).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (exit 3) before the command holds more than SIZE, e.g. 1G.")
def monitor(events: str, out: str | None, skip: tuple[str, ...], history: int, as_json: bool,
            max_seconds: str | None, max_memory: str | None) -> None:
    """Check EVENTS (JSON lines of page events, `-` for stdin) against the kernel's properties.

    Stops at the first violation (exit 1) with its log line; exit 0 when every event of the
    log holds every property. docs/monitor.md says the format and how to record a server."""
    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    check_out(out)
    progress = Progress()
    mon = Monitor(history=history, skip=skip)
    finding: Finding | None = None
    stopped: str | None = None
    start = time.monotonic()
    with limited(seconds, memory, progress, as_json=as_json, spec=None) as guard:
        stream = _open(events)
        try:
            name = "<stdin>" if events == "-" else events
            finding = mon.run(read_events(stream, name),
                              tick=lambda cov: progress(_Reading(cov, time.monotonic() - start)))
        except KeyboardInterrupt:  # Ctrl-C or a limit: what was checked so far
            stopped = guard.tripped or "interrupt"
        finally:
            progress.close()
            if stream is not sys.stdin.buffer:
                stream.close()
    cov = mon.coverage
    if finding is not None:
        finding.trace.reproduce = f"ownership monitor {events}"
        if out:
            write_trace(finding.trace, out)
        code = Verdict.VIOLATED.exit_code
        verdict = "violated"
    elif stopped is not None:
        code = Verdict.INCONCLUSIVE.exit_code
        verdict = "inconclusive"
    elif cov.events == 0:
        raise UsageError(f"{events} holds no events: nothing was checked (one JSON object a line,"
                         ' e.g. {"event": "alloc", "node": "decode", "request": "r1", "pages": [3]})')
    else:
        code = 0
        verdict = "verified"
    if as_json:
        doc: dict[str, Any] = {
            "events": events, "verdict": verdict,
            "coverage": {"events": cov.events, "lines": cov.lines, "pages": cov.pages,
                         "requests": cov.requests, "requests_capped": cov.requests_capped,
                         "by_event": dict(sorted(cov.by_kind.items()))},
            "stopped_by": stopped,
            "violation": None,
            "trace": out if finding is not None and out else None,
            "exit_code": code,
        }
        if finding is not None:
            v = finding.trace.violation
            assert v is not None
            doc["violation"] = {"property": v.property, "line": finding.event.line, "message": finding.message,
                                "requests": v.requests,
                                "pages": [{"pool": pool, "page": finding.trace.page_id(pool, p)} for pool, p in v.pages]}
        emit_json(doc)
    elif finding is not None:
        v = finding.trace.violation
        assert v is not None
        echo(f"violated: {v.property}")
        echo(f"  {finding.message}")
        echo(f"checked: {_covered(cov)}, up to the violation")
        if out:
            echo(f"trace of the pages' story ({len(finding.trace.steps) - 1} events): {out}"
                 f" (ownership show {out})")
    elif stopped is not None:
        echo(f"inconclusive: stopped by {stopped} after {_covered(cov)}; no violation in them, the rest of"
             " the log was not checked")
    else:
        skipped = f" (not checked: {', '.join(skip)})" if skip else ""
        echo(f"verified: every property holds over all {_covered(cov)} of the log{skipped}")
    sys.exit(code)
