"""The `ownership` command line: click commands that call the library and print its renderings.

No logic lives here beyond parsing options, calling ownership.api, and choosing the exit
code from the one table in ownership.result. Every OwnershipError becomes one line on stderr
and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import re
import sys

import click

from . import api
from .cli_common import OwnershipGroup, Progress, echo
from .errors import UsageError
from .result import EXIT_CODES, Verdict
from .trace import read_itf, write_itf

EXIT_TABLE = "\b\nExit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


@click.group(cls=OwnershipGroup, epilog=EXIT_TABLE)
@click.version_option(package_name="ownership")
@click.option("--debug", is_flag=True, help="Show the traceback of an internal error (a bug of ownership).")
def cli(debug: bool) -> None:
    """Model checker for KV-cache page ownership in disaggregated LLM inference."""


def _params(pairs: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {pair!r}: expected NAME=VALUE, e.g. --param decode_pool=8")
        try:
            out[name.strip()] = int(value.replace("_", "").replace(",", ""))
        except ValueError:
            raise UsageError(f"--param {pair!r}: {value!r} is not an integer") from None
    return out


def _size(text: str) -> int:
    """A memory size such as 4G, 512M, 1.5GiB or 1000000 (bytes)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.I)
    if m is None:
        raise UsageError(f"--max-memory {text!r}: expected a size such as 4G, 512M or 1000000")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


@cli.command(epilog=EXIT_TABLE)
@click.argument("spec")
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Turn a fix on (repeatable).")
@click.option("--version", "version", metavar="RELEASE", help="Turn on the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).")
@click.option("--skip", "skip", multiple=True, metavar="PROPERTY", help="Do not check this property (repeatable), to see past it.")
@click.option("--engine", default="explicit", show_default=True, type=click.Choice(api.ENGINES), help="Search engine.")
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write the counterexample as ITF JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--strict", is_flag=True, help="Exit 3 for a bounded pass or an unreached sometimes property.")
@click.option("--full", is_flag=True, help="Show whole states in the trace, not only what changed.")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop after this many distinct states (verdict: bounded).")
@click.option("--max-depth", "--depth", "max_depth", type=click.IntRange(min=0), help="Explore executions of at most this many steps (verdict: bounded). bmc: the unrolling bound (default 20).")
@click.option("--symbolic", "symbolic", multiple=True, metavar="NAME[=LO..HI]", help="bmc: leave an integer parameter unknown within a range (repeatable).")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), help="Stop after this long (verdict: inconclusive).")
@click.option("--symmetry/--no-symmetry", default=False, show_default=True, help="Store one state per renaming of interchangeable requests; the coverage says how many states they stand for.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes for an exhaustive search: the parent keeps the visited states, the others expand.")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (inconclusive) before the search holds more than SIZE, e.g. 4G or 512M; it always stops before the machine would swap.")
@click.option("--runs", type=click.IntRange(min=1), help="fuzz: runs to try (default 200).")
@click.option("--steps", type=click.IntRange(min=1), help="fuzz: steps per run at most (default 50).")
@click.option("--seed", type=int, help="fuzz: the seed, to repeat a search.")
@click.option("--profile", metavar="NAME", help="fuzz: default, ci (derandomised) or a registered Hypothesis profile.")
def check(spec: str, fixes: tuple[str, ...], version: str | None, params: tuple[str, ...], skip: tuple[str, ...],
          engine: str, out: str | None,
          as_json: bool, strict: bool, full: bool, max_states: int | None, max_depth: int | None,
          symbolic: tuple[str, ...], max_seconds: float | None, symmetry: bool, workers: int,
          max_memory: str | None, runs: int | None, steps: int | None, seed: int | None,
          profile: str | None) -> None:
    """Check SPEC (a .py file or a shipped spec name) and print the verdict.

    A violation comes with a counterexample (a shortest one with the explicit and bmc
    engines); a pass says what was covered, and never more."""
    from .engines.batch import keep_freed_memory
    from .render.text import render_check

    keep_freed_memory()  # NOTE(first-touch) in engines/batch.py: process-wide, so only here
    progress = Progress()
    try:
        result = api.check(spec, params=_params(params), fixes=fixes, version=version, skip=skip, engine=engine,
                           max_states=max_states, max_depth=max_depth, max_seconds=max_seconds,
                           reporter=progress, symbolic=symbolic, runs=runs, steps=steps, seed=seed,
                           profile=profile, symmetry=symmetry, workers=workers,
                           max_memory=_size(max_memory) if max_memory else None)
    finally:
        progress.close()
    if out and result.trace is not None:
        try:
            write_itf(result.trace, out)
        except OSError as e:
            raise UsageError(f"cannot write the trace to {out}: {e}") from None
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
            "version": model.spec.release,
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
        click.echo(json.dumps(doc, indent=1))
    else:
        echo(render_check(result, spec_label=spec, full=full, trace_path=trace_path))
        parameters = getattr(result, "parameters", None)
        if parameters is not None:
            echo(parameters.describe())
    sys.exit(code)


@cli.command(epilog=EXIT_TABLE)
@click.argument("trace_file", metavar="TRACE", type=click.Path(dir_okay=False))
@click.option("--spec", default=None, help="The spec to replay on (default: the shipped spec the trace names).")
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Replay with these fixes instead of the trace's.")
@click.option("--version", "version", metavar="RELEASE", help="Replay with the fixes of an engine release instead.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write the replayed run as ITF JSON here.")
def replay(trace_file: str, spec: str | None, fixes: tuple[str, ...], version: str | None, as_json: bool,
           out: str | None) -> None:
    """Re-execute TRACE on its spec: exit 1 if it still violates, 0 if a fix blocks it."""
    from .render.text import render_replay

    trace = read_itf(trace_file)
    result, model = api.replay_trace(trace, spec=spec, fixes=list(fixes) if fixes else None, version=version)
    if out and result.trace is not None:
        result.trace.spec = trace.spec
        write_itf(result.trace, out)
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
            "exit_code": code,
        }
        click.echo(json.dumps(doc, indent=1))
    else:
        echo(render_replay(result, trace=trace, fixes=model.spec.fixes))
    sys.exit(code)


@cli.command(name="list")
@click.argument("spec", required=False)
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Show sizes at these parameters.")
def list_(spec: str | None, params: tuple[str, ...]) -> None:
    """List the shipped specs, or SPEC's parameters, fixes, actions and properties."""
    from .lang.loader import load_spec, shipped_specs
    from .render.text import render_spec, render_spec_list

    if spec is None:
        summaries = {}
        for name in shipped_specs():
            cls = load_spec(name)
            summaries[name] = ((cls.__doc__ or "").strip().splitlines() or [""])[0]
        echo(render_spec_list(summaries))
        return
    echo(render_spec(api.model_for(spec, params=_params(params)), spec))


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
    """The console script."""
    cli(prog_name="ownership")


if __name__ == "__main__":
    main()
