"""`ownership monitor EVENTS`: check a log of page events against the ownership kernel.

EVENTS is a file of JSON lines (ownership/bridges/monitor.py says the format), or `-` for standard
input (a live stream: `tail -f events.jsonl | ownership monitor -`). The log is read line by
line in constant memory; the first violation stops the command with exit 1, its message, and
a trace of the pages' story (`--out`, for `ownership show`). Exit 0 says how many events
were checked, and never more; Ctrl-C or a limit stops it with exit 3 and the count so far.
With `--spec SPEC --adapter FILE.py:NAME` the spec is run along the log too (ownership.bridges.follow).
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

import click

from .. import api, limits
from ..bridges import follow
from ..bridges.monitor import DEFAULT_HISTORY, PROPERTIES, Coverage, Finding, Monitor, read_events
from ..errors import UsageError
from ..lang.properties import MONITOR_ONLY
from ..result import Verdict
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    check_out,
    complete_fix,
    complete_param,
    complete_spec,
    echo,
    emit_json,
    limited,
    parse_params,
    release_option,
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
@click.option("--spec", default=None, metavar="SPEC", shell_complete=complete_spec,
              help="Also run this spec along the log (with --adapter): its invariants, and every action allowed where the log does it.")
@click.option("--adapter", default=None, metavar="FILE.py:NAME",
              help="The function (or class) mapping each event to the spec's actions (docs/monitor.md).")
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="With --spec: turn a fix on (repeatable).", shell_complete=complete_fix)
@release_option("With --spec: the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", shell_complete=complete_param,
              help="With --spec: set a parameter (repeatable); `requests` bounds the requests the log may start.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long (exit 3, with the events checked so far).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (exit 3) before the command holds more than SIZE, e.g. 1G.")
def monitor(events: str, out: str | None, skip: tuple[str, ...], history: int, spec: str | None,
            adapter: str | None, fixes: tuple[str, ...], release: str | None, params: tuple[str, ...],
            as_json: bool, max_seconds: str | None, max_memory: str | None) -> None:
    """Check EVENTS (JSON lines of page events, `-` for stdin) against the kernel's properties.

    Stops at the first violation (exit 1) with its log line; exit 0 when every event of the
    log holds every property. With --spec and --adapter, the spec is run along the log as
    well. docs/monitor.md says the format and how to record a server."""
    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    if (spec is None) != (adapter is None):
        raise UsageError("--spec and --adapter go together: the adapter maps the log's events to the spec's actions"
                         " (docs/monitor.md, \"Checking a log against a spec\")")
    if spec is None and (fixes or release or params):
        raise UsageError("--fix, --release and --param set up the spec of --spec; give --spec SPEC --adapter FILE.py:NAME")
    check_out(out)
    progress = Progress()
    mon = Monitor(history=history, skip=skip)
    finding: Finding | follow.SpecFinding | None = None
    exhausted: follow.Exhausted | None = None
    follower: follow.Follower | None = None
    stopped: str | None = None
    start = time.monotonic()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec) as guard:
        if spec is not None and adapter is not None:
            model = api.model_for(spec, params=parse_params(params), fixes=fixes, version=release,
                                  skip=[p for p in skip if p not in MONITOR_ONLY])
            follower = follow.Follower(model, follow.make_adapter(api.load_adapter(adapter, what="event adapter"), adapter),
                                       ref=adapter)
        stream = _open(events)
        try:
            name = "<stdin>" if events == "-" else events
            events_in = read_events(stream, name)
            def tick(cov: Coverage) -> None:
                progress(_Reading(cov, time.monotonic() - start))
            if follower is None:
                finding = mon.run(events_in, tick=tick)
            else:
                finding, exhausted = follow.run(events_in, mon, follower, tick=tick)
        except KeyboardInterrupt:  # Ctrl-C or a limit: what was checked so far
            stopped = guard.tripped or "interrupt"
        finally:
            limits.settle()  # NOTE(settle) in ownership/limits.py: the answer is in
            progress.close()
            if stream is not sys.stdin.buffer:
                stream.close()
    cov = mon.coverage
    if finding is not None:
        finding.trace.reproduce = _reproduce(events, spec, adapter, fixes, release, params)
        if isinstance(finding, follow.SpecFinding) and spec is not None:
            finding.trace.spec = api.spec_ref(spec)
            finding.trace.version = release
        if out:
            write_trace(finding.trace, out)
        code = Verdict.VIOLATED.exit_code
        verdict = "violated"
    elif stopped is not None or exhausted is not None:
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
            "spec": None if follower is None else {
                "spec": follower.model.spec_cls.__name__, "steps": follower.steps, "requests": dict(follower.requests),
                "complete": exhausted is None and stopped is None,
                "exhausted_at": None if exhausted is None else exhausted.event.line},
            "exit_code": code,
        }
        if finding is not None:
            v = finding.trace.violation
            assert v is not None
            doc["violation"] = {"property": v.property, "line": finding.event.line, "message": finding.message,
                                "by": "spec" if isinstance(finding, follow.SpecFinding) else "kernel",
                                "requests": v.requests,
                                "pages": [{"pool": pool, "page": finding.trace.page_id(pool, p)} for pool, p in v.pages]}
        emit_json(doc)
    elif finding is not None:
        v = finding.trace.violation
        assert v is not None
        by_spec = isinstance(finding, follow.SpecFinding)
        echo(f"violated: {v.property}" + (f" (spec {follower.model.spec_cls.__name__})" if by_spec and follower else ""))
        echo(f"  {finding.message}")
        echo(f"checked: {_covered(cov)}, up to the violation{_followed(follower, exhausted)}")
        if out:
            story = (f"the spec's run ({len(finding.trace.steps) - 1} steps)" if by_spec
                     else f"the pages' story ({len(finding.trace.steps) - 1} events)")
            echo(f"trace of {story}: {out} (ownership show {out})")
    elif stopped is not None:
        echo(f"inconclusive: stopped by {stopped} after {_covered(cov)}; no violation in them, the rest of"
             f" the log was not checked{_followed(follower, exhausted)}")
    elif exhausted is not None:
        assert follower is not None
        echo(f"inconclusive: line {exhausted.event.line} starts request {exhausted.request!r}, one more than the"
             f" {exhausted.requests} requests of spec {follower.model.spec_cls.__name__}: the spec was followed"
             f" up to line {exhausted.event.line - 1}, over {follower.steps:,} steps (give --param requests=N for more);"
             f" the kernel checked all {_covered(cov)} of the log and found no violation")
    else:
        skipped = f" (not checked: {', '.join(skip)})" if skip else ""
        echo(f"verified: every property holds over all {_covered(cov)} of the log{skipped}{_followed(follower, None)}")
    sys.exit(code)


def _followed(follower: follow.Follower | None, exhausted: follow.Exhausted | None) -> str:
    """What the spec covered, for the verdict line (nothing without --spec)."""
    if follower is None:
        return ""
    name = follower.model.spec_cls.__name__
    upto = f", up to line {exhausted.event.line - 1}" if exhausted is not None else ""
    return (f"; spec {name} followed the log over {follower.steps:,} steps{upto}"
            f" ({len(follower.requests):,} of its {follower.model.requests} requests)")


def _reproduce(events: str, spec: str | None, adapter: str | None, fixes: tuple[str, ...], release: str | None,
               params: tuple[str, ...]) -> str:
    words = ["ownership", "monitor", events]
    if spec is not None and adapter is not None:
        words += ["--spec", spec, "--adapter", adapter]
        words += [w for f in fixes for w in ("--fix", f)]
        words += ["--release", release] if release else []
        words += [w for p in params for w in ("--param", p)]
    return " ".join(shlex.quote(w) for w in words)
