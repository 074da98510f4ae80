"""The `ownership` command line: click commands that call the library and print its renderings.

No logic lives here beyond parsing options, calling ownership.api, and choosing the exit
code from the one table in ownership.result. Every OwnershipError becomes one line on stderr
and exit code 2, never a traceback (under --json: one error object on stdout, cli_common).
`python -m ownership` runs the same `main` (ownership/__main__.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import click

from . import api, limits
from .cli_common import (
    OwnershipGroup,
    Progress,
    complete_fix,
    complete_param,
    complete_property,
    complete_spec,
    complete_symbolic,
    echo,
    emit_json,
    limited,
    parse_params,
    release_option,
    release_spelling,
)
from .errors import UsageError
from .result import EXIT_CODES, Verdict
from .trace import read_itf, to_itf, write_output

EXIT_TABLE = "\b\nExit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


@click.group(cls=OwnershipGroup, epilog=EXIT_TABLE)
@click.version_option(package_name="ownership", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show the traceback of an internal error (a bug of ownership).")
def cli(debug: bool) -> None:
    """Model checker for KV-cache page ownership in disaggregated LLM inference."""


def _check_out(out: str | None) -> None:
    """Refuse an --out whose folder does not exist before the run, not after it."""
    if out is None:
        return
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write the trace to {out}: the folder {folder} does not exist;"
                         " create it first, or give --out a path in an existing folder")
    if os.path.isdir(out):
        raise UsageError(f"cannot write the trace to {out}: it is a folder; give --out the name of a file")


def _write_trace(trace: Any, out: str, narrative: list[str | None] | None = None) -> None:
    """Write the trace as ITF JSON, each state's narrative in its `#meta` (for `ownership show`)."""
    doc = to_itf(trace)
    for state, text in zip(doc["states"], narrative or []):
        if text:
            state["#meta"]["narrative"] = text
    try:
        # whole or not at all (trace.write_output); a UsageError if it fails
        write_output(out, json.dumps(doc, indent=1) + "\n", "trace")
    except OSError as e:
        raise UsageError(f"cannot write the trace to {out}: {e.strerror or e}") from None


@cli.command(epilog=EXIT_TABLE)
@click.argument("spec", shell_complete=complete_spec)
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Turn a fix on (repeatable).", shell_complete=complete_fix)
@release_option("Turn on the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).", shell_complete=complete_param)
@click.option("--skip", "skip", multiple=True, metavar="PROPERTY", help="Do not check this property (repeatable), to see past it.", shell_complete=complete_property)
@click.option("--engine", default="explicit", show_default=True, type=click.Choice(api.ENGINES), help="Search engine.")
@click.option("--out", "out", metavar="PATH", help="Write the counterexample as ITF JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
@click.option("--strict", is_flag=True, help="Exit 3 for a bounded pass or an unreached sometimes property.")
@click.option("--full", is_flag=True, help="Under each step of the counterexample, what it changed (the initial state whole).")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop after this many distinct states (verdict: bounded).")
@click.option("--max-depth", "--depth", "max_depth", type=click.IntRange(min=0), help="Explore executions of at most this many steps (verdict: bounded). bmc: the unrolling bound (default 20).")
@click.option("--symbolic", "symbolic", multiple=True, metavar="NAME[=LO..HI]", help="bmc: leave an integer parameter unknown within a range (repeatable).", shell_complete=complete_symbolic)
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, loading and tracing the spec included (verdict: inconclusive).")
@click.option("--symmetry/--no-symmetry", default=False, show_default=True, help="Store one state per renaming of interchangeable requests; the coverage says how many states they stand for.")
@click.option("--workers", type=int, default=1, show_default=True, help=f"Processes for an exhaustive search: the parent keeps the visited states, the others expand (at most {limits.WORKERS_PER_CPU} per CPU).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (inconclusive) before the command holds more than SIZE, e.g. 4G or 512M; it always stops before the machine would swap.")
@click.option("--runs", type=click.IntRange(min=1), help="fuzz: runs to try (default 200).")
@click.option("--steps", type=click.IntRange(min=1), help="fuzz: steps per run at most (default 50).")
@click.option("--seed", type=int, help="fuzz: the seed, to repeat a search.")
@click.option("--profile", metavar="NAME", help="fuzz: default, ci (derandomised) or a registered Hypothesis profile.")
def check(spec: str, fixes: tuple[str, ...], release: str | None, params: tuple[str, ...], skip: tuple[str, ...],
          engine: str, out: str | None,
          as_json: bool, strict: bool, full: bool, max_states: int | None, max_depth: int | None,
          symbolic: tuple[str, ...], max_seconds: str | None, symmetry: bool, workers: int,
          max_memory: str | None, runs: int | None, steps: int | None, seed: int | None,
          profile: str | None) -> None:
    """Check SPEC (a .py file or a shipped spec name) and print the verdict.

    A violation comes with a counterexample (a shortest one with the explicit and bmc
    engines); a pass says what was covered, and never more."""
    from .engines.batch import keep_freed_memory
    from .render.text import narrate, render_check

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    limits.check_workers(workers)
    _check_out(out)
    keep_freed_memory()  # NOTE(first-touch) in engines/batch.py: process-wide, so only here
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec):
        try:
            result = api.check(spec, params=parse_params(params), fixes=fixes, version=release, skip=skip, engine=engine,
                               max_states=max_states, max_depth=max_depth, max_seconds=seconds,
                               reporter=progress, symbolic=symbolic, runs=runs, steps=steps, seed=seed,
                               profile=profile, symmetry=symmetry, workers=workers,
                               max_memory=memory if engine == "explicit" else None)
        finally:
            progress.close()
    result.reproduce = release_spelling(result.reproduce)
    narrative = None
    if result.trace is not None:
        result.trace.reproduce = release_spelling(result.trace.reproduce)
        narrative = narrate(result.model, result.trace)  # a SpecError (exit 2) if the spec's describe() fails
    if out and result.trace is not None:
        _write_trace(result.trace, out, narrative)
    trace_path = out if (out and result.trace is not None) else None
    unreached = [n for n, got in result.sometimes.items() if got is False]
    code = result.verdict.exit_code_for(strict=strict)
    if strict and unreached and code == 0:
        code = Verdict.INCONCLUSIVE.exit_code
    if as_json:
        model = result.model
        doc = {
            "spec": spec,
            "spec_class": model.spec_cls.__name__,
            "params": model.env,
            "fixes": list(model.spec.fixes),
            "release": model.spec.release,
            "version": model.spec.release,  # the old name of "release", until schema_version 2
            "engine": result.engine,
            "verdict": result.verdict.word,
            "coverage": result.coverage.to_json(),
            "violation": result.violation.to_json() if result.violation else None,
            "trace": trace_path,
            "sometimes": result.sometimes,
            "reproduce": result.reproduce,
            "exit_code": code,
        }
        parameters = getattr(result, "parameters", None)
        if parameters is not None:
            doc["parameters"] = parameters.to_json()
        if result.trace is not None:
            doc["steps"] = [s.label() for s in result.trace.steps[1:]]
            doc["narrative"] = narrative
        emit_json(doc)
    else:
        echo(render_check(result, spec_label=spec, full=full, trace_path=trace_path))
        parameters = getattr(result, "parameters", None)
        if parameters is not None:
            echo(parameters.describe())
    sys.exit(code)


@cli.command(epilog=EXIT_TABLE)
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
    from .render.text import narrate, render_replay

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    _check_out(out)
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
        _write_trace(result.trace, out, narrate(model, result.trace))
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


@cli.command(name="list")
@click.argument("spec", required=False, shell_complete=complete_spec)
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Show sizes at these parameters.", shell_complete=complete_param)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
def list_(spec: str | None, params: tuple[str, ...], as_json: bool) -> None:
    """List the shipped specs, or SPEC's parameters, fixes, releases, pools, actions and properties."""
    from .lang.loader import load_spec, shipped_specs
    from .render.text import render_spec, render_spec_list, spec_json

    if spec is None:
        if params:
            raise UsageError("--param sets a spec's parameters: name the spec, e.g. ownership list sglang_pd --param decode_pool=6")
        summaries = {}
        for name in shipped_specs():
            cls = load_spec(name)
            summaries[name] = ((cls.__doc__ or "").strip().splitlines() or [""])[0]
        if as_json:
            emit_json({"specs": [{"name": n, "summary": text} for n, text in summaries.items()], "exit_code": 0})
        else:
            echo(render_spec_list(summaries))
        return
    model = api.model_for(spec, params=parse_params(params))
    if as_json:
        emit_json({"spec": spec, **spec_json(model), "exit_code": 0})
    else:
        echo(render_spec(model, spec))


def _register_optional_commands() -> None:
    from .cli_prove import prove
    from .cli_show import graph, show

    cli.add_command(prove)
    cli.add_command(show)
    cli.add_command(graph)
    try:
        from .cli_config_check import config_check
    except ImportError:
        return
    cli.add_command(config_check)


_register_optional_commands()


def main() -> None:
    """The console script. Once a command has its answer (its exit code), a late Ctrl-C no
    longer changes it: interrupted while Python exits, the process died of SIGINT instead of
    exiting 3 (a second Ctrl-C in quick succession did that)."""
    try:
        cli(prog_name="ownership")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
