"""`ownership prove`: prove a spec's properties for every depth by k-induction (issue 3).

A click command registered by ownership/cli/__init__.py. Like every command it
only parses options, calls the library (ownership.engines.bmc.run_proof) and prints; exit
codes come from the one table in ownership.result: verified 0, violated in the base case 1,
induction failure or inconclusive 3, bad input 2 (an OwnershipError, turned into exit code 2
by the command group). `--format` json, sarif or github as for `check` (ownership/render/sarif.py).
Importing this module does not import z3.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from ..engines.bmc import DEFAULT_K
from ..result import Verdict
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
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
)
from .common import output_format as resolve_format


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("spec", shell_complete=complete_spec)
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Turn a fix on (repeatable).", shell_complete=complete_fix)
@release_option("Turn on the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).", shell_complete=complete_param)
@click.option("--skip", "skip", multiple=True, metavar="PROPERTY", help="Do not prove this property (repeatable).", shell_complete=complete_property)
@click.option("--only", "only", multiple=True, metavar="PROPERTY", help="Prove this property alone (repeatable: these alone).", shell_complete=complete_property)
@click.option("--k", "k", type=click.IntRange(min=1), default=None,
              help=f"Try k-induction with k = 1, 2, ... up to this many steps.  [default: {DEFAULT_K}]")
@click.option("--symbolic", "symbolic", multiple=True, metavar="NAME[=LO..HI]",
              help="Leave an integer parameter unknown within a range (repeatable); without a range: its minimum..1024.",
              shell_complete=complete_symbolic)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too): --format json.")
@format_option
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, loading and tracing the spec included (verdict: inconclusive).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (inconclusive) before the command holds more than SIZE, e.g. 4G; it always stops before the machine would swap.")
def prove(spec: str, fixes: tuple[str, ...], release: str | None, params: tuple[str, ...], skip: tuple[str, ...],
          only: tuple[str, ...], k: int | None, symbolic: tuple[str, ...], as_json: bool, output_format: str | None, max_seconds: str | None,
          max_memory: str | None) -> None:
    """Prove SPEC's kernel properties, invariants and lemmas for every depth (k-induction, z3).

    Verified means no reachable state violates them at any depth. A failing base case is a
    real counterexample (exit 1). A failing induction step is shown as a counterexample to
    induction, whose first state may be unreachable (exit 3)."""
    from .. import api, limits
    from ..confirm import confirm
    from ..engines import bmc

    fmt = resolve_format(as_json, output_format)
    as_json = fmt == "json"
    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec, fmt=fmt):
        try:
            model = api.model_for(spec, params=parse_params(params), fixes=fixes, version=release, skip=skip, only=only)
            api.nothing_to_check(model)
            # induction proves the safety part; liveness is left to `check`, and said so
            left_out = model.liveness_checked()
            if left_out and not model.checked():
                api.refuse_liveness(model, "prove")
            proved = model.leaving_out(left_out)
            with limits.phase("preparing the k-induction proof", engine=True):
                result = bmc.run_proof(proved, k=DEFAULT_K if k is None else k, max_seconds=limits.seconds_left(seconds),
                                       symbolic=symbolic, reporter=progress)
                limits.settle()  # NOTE(settle) in ownership/limits.py
        finally:
            progress.close()
        stopped = limits.tripped()
        if stopped is not None and result.coverage.stopped_by == "interrupt":
            result.coverage = dataclasses.replace(result.coverage, stopped_by=stopped)
    # the one counterexample rule (ownership/confirm.py, issue 29): the concrete interpreter
    # re-runs a base-case counterexample before it is reported (with symbolic parameters, on
    # the model at the witness's values); one that does not re-run is exit 4, never 1
    confirm(result, getattr(result, "witness_model", None) or proved)
    reproduce = _reproduce(spec, model, k=k, symbolic=symbolic, max_seconds=seconds)
    if result.trace is not None:
        result.trace.spec = api.spec_ref(spec)
        result.trace.version = release
        result.trace.reproduce = reproduce
    code = result.verdict.exit_code
    if as_json:
        doc = _json(result, spec, model, reproduce, code)
        if left_out:
            doc["left_out"] = {name: LEFT_OUT for name in left_out}
        emit_json(doc)
    elif fmt == "sarif":
        emit_sarif(_sarif(result, proved, reproduce, code, left_out))
    else:
        if fmt == "github":
            from ..render.sarif import github_annotations

            for line in github_annotations(proved, result.trace, reproduce):
                echo(line)
        echo(render_proof(result, spec_label=spec, model=proved, reproduce=reproduce, left_out=left_out))
    sys.exit(code)


def _reproduce(spec: str, model: Any, *, k: int | None, symbolic: tuple[str, ...], max_seconds: float | None) -> str:
    """The command that re-runs this proof: spec, fixes, non-default parameters, options."""
    from .. import api

    extra: list[tuple[str, Any]] = [("--k", k)] if k is not None else []
    extra += [("--symbolic", text) for text in symbolic]
    extra += [("--max-seconds", max_seconds)] if max_seconds is not None else []
    sym_names = {t.partition("=")[0].strip() for t in symbolic}
    return release_spelling(api.reproduce_command(api._display_ref(spec), model, command="prove", options=extra,
                                                  omit_params=sym_names))


def _setting(model: Any, result: Any) -> str:
    sym = {p.name: p for p in result.symbolic}
    shown = " ".join(f"{n}={sym[n].lo}..{sym[n].hi} (symbolic)" if n in sym else f"{n}={v}" for n, v in model.env.items())
    fixes = ", ".join(model.spec.fixes) or "none"
    return f"parameters {shown}; fixes {fixes}"


def _properties(model: Any) -> str:
    props = model.checked()
    lemmas = [p.name for p in model.spec_cls._properties.values() if p.kind == "lemma"]
    text = ", ".join(props)
    if lemmas:
        text += f"; lemmas: {', '.join(lemmas)}"
    return text


def _relabel_first(text: str) -> str:
    """A counterexample to induction starts anywhere: say so where a trace says `initial state`."""
    lines = text.split("\n")
    if lines and lines[0].rstrip().endswith("initial state"):
        lines[0] = lines[0].replace("initial state", "arbitrary state (possibly unreachable)")
    return "\n".join(lines)


#: Why prove leaves a liveness property out, in words.
LEFT_OUT = ("not proved: induction proves safety; check it with `ownership check` (every reachable state;"
            " --engine bmc for lassos of a bounded length)")


def render_proof(result: Any, *, spec_label: str, model: Any, reproduce: str, left_out: Any = ()) -> str:
    """The report of `ownership prove`: verdict, what it covers, trace or counterexample to induction."""
    from ..render.text import narrate, render_trace

    cov = result.coverage
    lines = [f"spec {model.spec_cls.__name__} ({spec_label}); {_setting(model, result)}; engine k-induction (z3)"]
    v = result.verdict
    if v is Verdict.VERIFIED:
        if result.k is not None:
            lines.append(f"verified: proved by k-induction with k = {result.k}: no reachable state violates a property, at any depth ({cov.seconds:.2f} s)")
        else:
            lines.append(f"verified: no violation at any depth: no execution is longer than {cov.depth} steps, and every one was checked ({cov.seconds:.2f} s)")
        if result.symbolic:
            lines.append(f"  for every value of {', '.join(p.show() for p in result.symbolic)}")
    elif v is Verdict.VIOLATED:
        viol = result.violation
        at = ", ".join(f"{k}={x}" for k, x in result.witness.items())
        lines.append("")
        lines.append(f"violated: {viol.property}" + (f" (at {at})" if at else "") + ": a real counterexample, from the initial state")
        lines.append(f"  {viol.message}")
        if viol.also:
            lines.append(f"  (also violated at this step: {', '.join(viol.also)})")
        lines.append("")
        lines.append(f"Shortest counterexample ({len(result.trace.steps) - 1} steps):")
        lines.append(render_trace(result.trace, narrative=narrate(model, result.trace)))
    elif result.cti is not None and cov.stopped_by == "induction-failed":
        cti = result.cti
        bound = cov.bound_depth or 0
        lines.append(f"inconclusive: induction failed for every k up to {cov.k}; no violation within {bound} steps"
                     f" of the initial state; longer executions are not covered ({cov.seconds:.2f} s)")
        lines.append("")
        at = ", ".join(f"{k}={x}" for k, x in cti.params.items())
        lines.append(f"Counterexample to induction with k = {cti.k}" + (f" (at {at})" if at else "")
                     + ", POSSIBLY UNREACHABLE: its first state was not reached from the initial state.")
        lines.append(f"  {cti.property}: {cti.message}")
        lines.append(_relabel_first(render_trace(cti.trace, full=False)))
        lines.append("")
        lines.append(f"Hint: {cti.hint}")
    else:
        lines.append(f"inconclusive: {cov.describe()} ({cov.seconds:.2f} s)")
        if result.cti is not None:
            lines.append(f"  (the last counterexample to induction, k = {result.cti.k}, possibly unreachable: {result.cti.property}: {result.cti.message})")
    lines.append(f"Properties: {_properties(model)}" + ("" if model.checks_leak else " (leak: not checked, the spec defines no finished())"))
    for name in left_out:
        lines.append(f"Liveness {name}: {LEFT_OUT}")
    for name, got in result.sometimes.items():
        if got:
            lines.append(f"Sometimes {name}: reached")
        elif got is None:
            lines.append(f"Sometimes {name}: not reached within the base case")
        else:
            lines.append(f"WARNING: sometimes {name} is never reached in any reachable state: the spec may be vacuous")
    lines.append(f"Reproduce: {reproduce}")
    return "\n".join(lines)


def _sarif(result: Any, model: Any, reproduce: str, code: int, left_out: Any) -> dict[str, Any]:
    """The SARIF log of a proof: the rules (lemmas too), a base-case counterexample as a
    result, the verdict and its coverage in words (as render_proof words them, never more).
    A counterexample to induction is no result: it may be unreachable."""
    from ..render.sarif import sarif_log
    from ..render.text import narrate

    cov = result.coverage
    v = result.verdict
    if v is Verdict.VERIFIED and result.k is not None:
        coverage = f"proved by k-induction with k = {result.k}: no reachable state violates a property, at any depth"
    elif v is Verdict.VERIFIED:
        coverage = f"no violation at any depth: no execution is longer than {cov.depth} steps, and every one was checked"
    elif v is Verdict.VIOLATED:
        coverage = "a real counterexample, from the initial state"
    elif result.cti is not None and cov.stopped_by == "induction-failed":
        coverage = (f"induction failed for every k up to {cov.k}; no violation within {cov.bound_depth or 0} steps"
                    " of the initial state; longer executions are not covered")
    else:
        coverage = cov.describe()
    extra: dict[str, Any] = {"engine": result.engine, "k": result.k, "sometimes": result.sometimes}
    if result.symbolic:
        extra["symbolic"] = {p.name: [p.lo, p.hi] for p in result.symbolic}
    if result.cti is not None:
        extra["counterexample_to_induction"] = {"property": result.cti.property, "message": result.cti.message,
                                                "possibly_unreachable": True}
    if left_out:
        extra["left_out"] = {name: LEFT_OUT for name in left_out}
    lemmas = [p.name for p in model.spec_cls._properties.values() if p.kind == "lemma"]
    trace_model = getattr(result, "witness_model", None) or model
    narrative = narrate(trace_model, result.trace) if result.trace is not None else None
    return sarif_log(model, verdict=v.word, coverage=coverage, exit_code=code, trace=result.trace,
                     narrative=narrative, reproduce=reproduce, command_line=command_line(),
                     extra_rules=lemmas, properties=extra)


def _json(result: Any, spec: str, model: Any, reproduce: str, code: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "spec": spec,
        "spec_class": model.spec_cls.__name__,
        "params": (result.witness_model or model).env,
        "symbolic": {p.name: [p.lo, p.hi] for p in result.symbolic},
        "fixes": list(model.spec.fixes),
        "release": model.spec.release,
        "version": model.spec.release,  # the old name of "release", until schema_version 2
        "engine": result.engine,
        "verdict": result.verdict.word,
        "k": result.k,
        "coverage": result.coverage.to_json(),
        "violation": result.violation.to_json() if result.violation else None,
        "counterexample_to_induction": result.cti.to_json() if result.cti else None,
        "sometimes": result.sometimes,
        "reproduce": reproduce,
        "exit_code": code,
    }
    if result.trace is not None:
        doc["steps"] = [s.label() for s in result.trace.steps[1:]]
    return doc


__all__ = ["prove", "render_proof"]
