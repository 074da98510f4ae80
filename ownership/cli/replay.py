"""`ownership replay`: re-execute a trace on its spec (or with other fixes) and say whether it
still violates, where a fix blocks it, or where the run diverges. Never loads a file that the
trace names: the spec is a shipped one, or the one the user gives with --spec."""

from __future__ import annotations

import sys

import click

from .. import api, limits
from ..trace import read_itf
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    check_out,
    complete_fix,
    complete_spec,
    echo,
    emit_json,
    limited,
    release_option,
    release_spelling,
    write_trace,
)


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("trace_file", metavar="TRACE", type=click.Path(dir_okay=False))
@click.option("--spec", default=None, help="The spec to replay on (default: the shipped spec the trace names).", shell_complete=complete_spec)
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Replay with these fixes instead of the trace's.", shell_complete=complete_fix)
@release_option("Replay with the fixes of an engine release instead.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
@click.option("--out", "out", metavar="PATH", help="Write the replayed run as ITF JSON here.")
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, loading and tracing the spec included (exit 3, no verdict).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (exit 3, no verdict) before the command holds more than SIZE, e.g. 4G; it always stops before the machine would swap.")
def replay(trace_file: str, spec: str | None, fixes: tuple[str, ...], release: str | None, as_json: bool,
           out: str | None, max_seconds: str | None, max_memory: str | None) -> None:
    """Re-execute TRACE on its spec: exit 1 if it still violates, 0 if a fix blocks it.

    A long replay (a trace at large parameters) shows what it is doing on stderr; Ctrl-C or a
    limit stops it with exit 3."""
    from ..render.text import narrate, render_replay

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    check_out(out)
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec,
                 unexplored="the trace was not replayed to its end: no verdict"):
        try:
            with limits.phase("reading the trace"):
                trace = read_itf(trace_file)
            result, model = api.replay_trace(trace, spec=spec, fixes=list(fixes) if fixes else None, version=release)
        finally:
            progress.close()
    if out and result.trace is not None:
        result.trace.spec = trace.spec
        result.trace.reproduce = release_spelling(result.trace.reproduce)
        write_trace(result.trace, out, narrate(model, result.trace))
    code = 1 if result.outcome == "violated" else 0
    if as_json:
        doc = {
            "trace": trace_file,
            "fixes": list(model.spec.fixes),
            "outcome": result.outcome,
            "steps_run": result.steps_run,
            "violation": result.violation.to_json() if result.violation else None,
            "blocked_step": result.blocked_step,
            "blocked_action": result.blocked_action,
            "diverged_step": result.diverged_step,
            "diverged_vars": list(result.diverged_vars),
            "exit_code": code,
        }
        emit_json(doc)
    else:
        echo(render_replay(result, trace=trace, fixes=model.spec.fixes))
    sys.exit(code)
