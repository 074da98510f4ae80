"""`ownership replay`: re-execute a trace on its spec (or with other fixes) and say whether it
still violates, where a fix blocks it, or where the run diverges. Never loads a file that the
trace names: the spec is a shipped one, or the one the user gives with --spec."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import api, limits
from ..errors import UsageError
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
@click.option("--adapter", metavar="FILE.py:CLASS", help="Re-run the trace on the real code behind this conformance adapter, checked beside the model at every step.")
@click.option("--match", type=click.Choice(["pages", "renamed", "counts"]), default="pages", show_default=True,
              help="With --adapter: how the implementation's pages are compared with the model's.")
def replay(trace_file: str, spec: str | None, fixes: tuple[str, ...], release: str | None, as_json: bool,
           out: str | None, max_seconds: str | None, max_memory: str | None, adapter: str | None,
           match: str) -> None:
    """Re-execute TRACE on its spec: exit 1 if it still violates, 0 if a fix blocks it.

    With --adapter, re-run the trace's steps on the real implementation (a conformance
    trace): exit 1 if it still fails, 0 if it conforms now. A long replay shows what it is
    doing on stderr; Ctrl-C or a limit stops it with exit 3."""
    from ..render.text import narrate, render_replay

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    if adapter is None and match != "pages":
        raise UsageError(f"--match {match} says how an implementation's pages are compared with the model's:"
                         " it goes with --adapter FILE.py:CLASS; add the adapter, or leave --match out")
    check_out(out)
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec,
                 unexplored="the trace was not replayed to its end: no verdict"):
        try:
            with limits.phase("reading the trace"):
                trace = read_itf(trace_file)
            if adapter is not None:
                got = _on_the_implementation(trace, spec, fixes, adapter, match)
            else:
                result, model = api.replay_trace(trace, spec=spec, fixes=list(fixes) if fixes else None,
                                                 version=release)
        finally:
            progress.close()
    if adapter is not None:
        _report_implementation(got, trace_file, adapter, as_json)
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


def _on_the_implementation(trace: Any, spec: str | None, fixes: tuple[str, ...], adapter: str, match: str) -> Any:
    """`replay --adapter`: the trace's steps driven on the real code beside the model."""
    from ..bridges.testing import replay_conformance

    spec = api.spec_of_trace(trace, spec)
    cls = api.load_adapter(adapter)
    with limits.phase(f"driving the implementation along the trace's {len(trace.steps) - 1:,} steps"):
        return replay_conformance(trace, spec, cls, fixes=list(fixes) if fixes else None, match=match)


def _report_implementation(got: Any, trace_file: str, adapter: str, as_json: bool) -> None:
    """What `replay --adapter` found, and its exit code."""
    if got.outcome == "blocked":
        raise UsageError(f"{got.message}: the trace was not made on this spec with these fixes")
    code = 1 if got.outcome == "failed" else 0
    if as_json:
        emit_json({"trace": trace_file, "adapter": adapter, "outcome": got.outcome, "steps_run": got.steps_run,
                   "kind": got.kind, "step": got.step, "message": got.message,
                   "model_side": got.model_side, "implementation_side": got.implementation_side, "exit_code": code})
    else:
        if got.outcome == "conforms":
            echo(f"conforms: the implementation behind {adapter} ran all {got.steps_run} steps of the trace"
                 " beside the model without a divergence or a violated property")
        elif got.outcome == "refused":
            echo(f"refused: {got.message} (a step that violates a property, refused: the bug is fixed)")
        else:
            echo(f"still fails: {got.kind} at step {got.step}")
            echo(f"  {got.message}")
            for pool in sorted(set(got.model_side) | set(got.implementation_side)):
                echo(f"  model           {pool}: {got.model_side.get(pool, '(not observed)')}")
                echo(f"  implementation  {pool}: {got.implementation_side.get(pool, '(not observed)')}")
    sys.exit(code)
