"""`ownership check`: search a spec's states with one engine and print the verdict, with a
counterexample told a line per step (--out writes it as ITF JSON); `--format` json, sarif or
github for machines (the SARIF log and the workflow commands: ownership/render/sarif.py)."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import api, limits
from ..lang.properties import LIVENESS
from ..result import Verdict
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    check_out,
    command_line,
    complete_fix,
    complete_param,
    complete_property,
    complete_spec,
    complete_symbolic,
    echo,
    emit_json,
    emit_sarif,
    format_option,
    limited,
    parse_params,
    release_option,
    release_spelling,
    write_trace,
)
from .common import output_format as resolve_format


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("spec", shell_complete=complete_spec)
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Turn a fix on (repeatable).", shell_complete=complete_fix)
@release_option("Turn on the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).", shell_complete=complete_param)
@click.option("--skip", "skip", multiple=True, metavar="PROPERTY", help="Do not check this property (repeatable), to see past it.", shell_complete=complete_property)
@click.option("--only", "only", multiple=True, metavar="PROPERTY", help="Check this property alone (repeatable: these alone), every other one left out.", shell_complete=complete_property)
@click.option("--liveness", "liveness", multiple=True, metavar="NAME", type=click.Choice(list(LIVENESS)), help="Also check this liveness property of the kernel (repeatable): eventually-released, eventually-landed; under the fairness the spec's actions declare.")
@click.option("--engine", default="explicit", show_default=True, type=click.Choice(api.ENGINES), help="Search engine.")
@click.option("--out", "out", metavar="PATH", help="Write the counterexample as ITF JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too): --format json.")
@format_option
@click.option("--strict", is_flag=True, help="Exit 3 for a bounded pass or an unreached sometimes property.")
@click.option("--full", is_flag=True, help="Under each step of the counterexample, what it changed (the initial state whole).")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop after this many distinct states (verdict: bounded).")
@click.option("--max-depth", "--depth", "max_depth", type=click.IntRange(min=0), help="Explore executions of at most this many steps (verdict: bounded). bmc: the unrolling bound (default 20).")
@click.option("--symbolic", "symbolic", multiple=True, metavar="NAME[=LO..HI]", help="bmc: leave an integer parameter unknown within a range (repeatable).", shell_complete=complete_symbolic)
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, loading and tracing the spec included (verdict: inconclusive).")
@click.option("--symmetry/--no-symmetry", default=False, show_default=True, help="Store one state per renaming of interchangeable requests; the coverage says how many states they stand for.")
@click.option("--native", "native", is_flag=True, help="explicit: run the search compiled to C (needs a C compiler: cc, gcc or $CC; the first run of a spec compiles it, about a second, kept in ~/.cache/ownership, or a private $TMPDIR/ownership-native-UID folder where that cannot be written; a library is loaded only when its sha256 matches). The same states, verdict and trace, faster; with --symmetry too, not yet --workers.")
@click.option("--measure", "measure", is_flag=True, help="Also measure the spec's @measure costs over every reachable state (explicit engine; it builds the reachable graph, about 1,500 states a second).")
@click.option("--workers", type=int, default=None, help=f"Processes for an exhaustive search: the parent keeps the visited states, the others expand (at most {limits.WORKERS_PER_CPU} per CPU; default 1). With --ray: the partitions of the visited set (default: the cluster's CPUs).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (inconclusive) before the command holds more than SIZE, e.g. 4G or 512M; it always stops before the machine would swap.")
@click.option("--ray", "ray", metavar="ADDRESS", help="Search on a Ray cluster (`local`: start one on this machine's CPUs): the explicit engine partitioned over --workers, fuzz as a swarm of --searches. Needs pip install 'ownership[ray]'.")
@click.option("--checkpoint", "checkpoint", metavar="DIR", help="explicit: write each complete BFS level of the search into DIR (created if missing), to --resume it if it is killed.")
@click.option("--resume", "resume", metavar="DIR", help="explicit: continue the search checkpointed in DIR (the same spec and options), with the final counts of an uninterrupted run.")
@click.option("--searches", type=click.IntRange(min=1), help="fuzz with --ray: independent searches in the swarm (default: the cluster's CPUs).")
@click.option("--runs", type=click.IntRange(min=1), help="fuzz: runs to try (default 200).")
@click.option("--steps", type=click.IntRange(min=1), help="fuzz: steps per run at most (default 50).")
@click.option("--seed", type=int, help="fuzz: the seed, to repeat a search.")
@click.option("--profile", metavar="NAME", help="fuzz: default, ci (derandomised) or a registered Hypothesis profile.")
def check(spec: str, fixes: tuple[str, ...], release: str | None, params: tuple[str, ...], skip: tuple[str, ...],
          only: tuple[str, ...], liveness: tuple[str, ...], engine: str, out: str | None,
          as_json: bool, output_format: str | None, strict: bool, full: bool, max_states: int | None, max_depth: int | None,
          symbolic: tuple[str, ...], max_seconds: str | None, symmetry: bool, native: bool, measure: bool, workers: int,
          max_memory: str | None, ray: str | None, checkpoint: str | None, resume: str | None,
          searches: int | None, runs: int | None, steps: int | None, seed: int | None,
          profile: str | None) -> None:
    """Check SPEC (a .py file or a shipped spec name) and print the verdict.

    A violation comes with a counterexample (a shortest one with the explicit and bmc
    engines); a pass says what was covered, and never more."""
    from ..engines.memory import keep_freed_memory
    from ..render.text import narrate, render_check

    fmt = resolve_format(as_json, output_format)
    as_json = fmt == "json"
    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    if ray is None:
        limits.check_workers(workers or 1)
    check_out(out)
    keep_freed_memory()  # NOTE(first-touch) in engines/memory.py: process-wide, so only here
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec, fmt=fmt):
        try:
            result = api.check(spec, params=parse_params(params), fixes=fixes, version=release, skip=skip, only=only, engine=engine,
                               max_states=max_states, max_depth=max_depth, max_seconds=seconds,
                               reporter=progress, symbolic=symbolic, runs=runs, steps=steps, seed=seed,
                               profile=profile, symmetry=symmetry, workers=workers, measure=measure,
                               ray=ray, checkpoint=checkpoint, resume=resume, searches=searches, liveness=liveness,
                               native=native,
                               max_memory=memory if engine == "explicit" else None)
        finally:
            progress.close()
    result.reproduce = release_spelling(result.reproduce)
    narrative = None
    if result.trace is not None:
        result.trace.reproduce = release_spelling(result.trace.reproduce)
        narrative = narrate(result.model, result.trace)  # a SpecError (exit 2) if the spec's describe() fails
    if out and result.trace is not None:
        write_trace(result.trace, out, narrative)
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
        if result.note:
            doc["note"] = result.note
        if result.trace is not None:
            doc["steps"] = [s.label() for s in result.trace.steps[1:]]
            doc["narrative"] = narrative
            if result.trace.loop is not None:
                doc["loop"] = result.trace.loop
                if doc["violation"] is not None:  # (the lasso's shape beside where its obligation begins)
                    doc["violation"]["lasso"] = {"length": len(result.trace.steps) - 1, "loop": result.trace.loop}
        if result.graph_seconds is not None:
            doc["graph_seconds"] = round(result.graph_seconds, 3)
        if result.liveness:
            doc["liveness"] = result.liveness
            doc["fairness"] = result.fairness
        if measure and model.measures:
            doc["measures"] = {m.name: (None if m.name not in result.measures else {
                "largest": result.measures[m.name].largest, "at_depth": result.measures[m.name].at,
                "longest_positive": result.measures[m.name].longest}) for m in model.measures}
            if result.measures_note:
                doc["measures_note"] = result.measures_note
        emit_json(doc)
    elif fmt == "sarif":
        emit_sarif(_sarif(result, narrative, code))
    else:
        if fmt == "github":
            from ..render.sarif import github_annotations

            for line in github_annotations(result.model, result.trace, result.reproduce):
                echo(line)
        echo(render_check(result, spec_label=spec, full=full, trace_path=trace_path))
        parameters = getattr(result, "parameters", None)
        if parameters is not None:
            echo(parameters.describe())
    sys.exit(code)


def _sarif(result: Any, narrative: list[str | None] | None, code: int) -> dict[str, Any]:
    """The SARIF log of a check: its rules, the violation as a result, the verdict and the
    coverage in words (as the text report words them, never more)."""
    from ..render.sarif import sarif_log

    cov = result.coverage
    v = result.verdict
    if v is Verdict.VIOLATED:
        coverage = f"explored {cov.describe()}"
    elif v is Verdict.VERIFIED:
        coverage = f"no violation in {cov.describe()}"
    elif v is Verdict.BOUNDED:
        coverage = f"no violation found; covered {cov.describe()}"
    elif cov.complete:  # safety over every state; the reachable graph (liveness, measures) stopped
        coverage = f"no safety violation in {cov.describe()}; liveness or measures were not finished"
    else:
        coverage = cov.describe()
    extra: dict[str, Any] = {"engine": result.engine, "sometimes": result.sometimes}
    if result.liveness:
        extra["liveness"] = result.liveness
    if result.note:
        extra["note"] = result.note
    parameters = getattr(result, "parameters", None)
    if parameters is not None:  # (bmc --symbolic: for which values the spec breaks)
        extra["parameters"] = parameters.to_json()
    return sarif_log(result.model, verdict=v.word, coverage=coverage, exit_code=code, trace=result.trace,
                     narrative=narrative, reproduce=result.reproduce, command_line=command_line(),
                     properties=extra)
