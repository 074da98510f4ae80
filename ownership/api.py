"""The library entry points behind the CLI: load a spec, check it, replay a trace.

`check("sglang_pd", fixes=["door-retire"])` returns a CheckResult; it is what `ownership
check` runs and what a team's own tests (and ownership.bridges.testing, later) call.
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from collections.abc import Sequence
from typing import Any

from . import limits, registry
from .confirm import confirm, replayed
from .errors import TraceFormatError, UsageError
from .interpret.validate import model_for
from .lang.loader import (
    is_path,
    resolve_spec_path,
    shipped_specs,
    split_ref,
)
from .lang.model import Model
from .result import CheckResult, Verdict
from .trace import ReplayResult, Trace

#: The engines a user can name (ownership.registry: what each takes).
ENGINES = tuple(registry.ENGINES)


def spec_ref(ref: str) -> str:
    """How to name a spec again later: the shipped name when it is one, else the path given."""
    path, cls_name = resolve_spec_path(ref)
    shipped = shipped_specs()
    for name, p in shipped.items():
        if p.resolve() == path.resolve():
            return name + (f":{cls_name}" if cls_name else "")
    return ref


def nothing_to_check(model: Model) -> None:
    """Refuse a check that could only pass vacuously: no request to run, or every property
    skipped (a pass would claim that something was checked)."""
    if model.requests < 1:
        raise UsageError(
            f"nothing to check: requests={model.requests} runs no request, so no property can fail"
            " and a pass would mean nothing; give --param requests=1 or more"
        )
    if not model.checked() and not model.liveness_checked() and model.only:
        raise UsageError(f"nothing to check: {' '.join(f'--only {n}' for n in sorted(model.only))} names no property"
                         f" that {model.spec_cls.__name__} can violate at these parameters (crash: no action of the"
                         " spec crashes), so a pass would mean nothing; name another property")
    if not model.checked() and not model.liveness_checked():
        skipped = " ".join(f"--skip {name}" for name in sorted(model.skip))
        raise UsageError(
            f"nothing to check: every property of {model.spec_cls.__name__} is skipped ({skipped}),"
            " so a pass would mean nothing; drop at least one --skip"
        )


def reproduce_command(spec: str, model: Model, *, engine: str = "explicit", extra: str = "",
                      command: str = "check", options: Sequence[tuple[str, Any]] = (),
                      omit_params: Any = ()) -> str:
    """The command that re-runs this run: spec, version, fixes, non-default parameters,
    skipped properties, then `options` ((flag, value) pairs) and the raw `extra` text."""
    defaults = {n: p.default_at(model.env) for n, p in model.spec_cls._params.items()}
    parts = ["ownership", command, spec]
    release = model.spec.release
    implied = set(model.spec_cls.releases.get(release, [])) if release else set()
    if release:
        parts += ["--version", release]
    for fx in model.spec.fixes:
        if fx not in implied:
            parts += ["--fix", fx]
    for k, v in model.env.items():
        if defaults.get(k) != v and k not in omit_params:
            parts += ["--param", f"{k}={v}"]
    for name in sorted(model.only) or sorted(model.skip):
        parts += ["--only" if model.only else "--skip", name]
    for name in model.kernel_liveness:
        if name not in model.spec_cls.liveness:
            parts += ["--liveness", name]
    if engine != "explicit":
        parts += ["--engine", engine]
    for flag, value in options:
        parts += [flag, str(value)]
    return shlex.join(parts) + extra


def check(
    spec: str,
    *,
    params: dict[str, int] | None = None,
    fixes: Any = (),
    version: str | None = None,
    skip: Any = (),
    only: Any = (),
    engine: str = "explicit",
    max_states: int | None = None,
    max_depth: int | None = None,
    max_seconds: float | None = None,
    reporter: Any = None,
    symbolic: Sequence[str] = (),
    runs: int | None = None,
    steps: int | None = None,
    seed: int | None = None,
    profile: str | None = None,
    database: Any = "default",
    max_memory: int | None = None,
    workers: int | None = None,
    symmetry: bool = False,
    measure: bool = False,
    ray: str | None = None,
    checkpoint: str | None = None,
    resume: str | None = None,
    searches: int | None = None,
    liveness: Any = (),
    native: bool = False,
) -> CheckResult:
    """Check a spec (a path or shipped name) and return the verdict, coverage and trace.

    `symbolic` (bmc only): parameters left unknown within a range, `NAME[=LO..HI]`.
    `runs`, `steps`, `seed`, `profile`, `database` (fuzz only): the random search.
    `max_memory`, `workers`, `symmetry` (explicit only): the batch engine's search (the
    per-state engine takes max_memory only under a command's limits, ownership.limits).
    `measure`: also measure the spec's @measure costs (explicit only: the reachable graph).
    `ray`: a Ray cluster's address, or "local" (ownership.engines.cluster): the explicit
    engine runs as a partitioned search over `workers` Ray workers (default: the cluster's
    CPUs; ownership.engines.partitioned), fuzz as a swarm of `searches` independent searches
    (ownership.engines.swarm). `liveness`: kernel liveness properties ("eventually-released",
    "eventually-landed") to check besides those the spec names (`--liveness NAME`).
    `native` (explicit only): the search compiled to C (ownership.engines.native), the same
    states, verdict and trace as the numpy engine, without symmetry and workers yet.
    `checkpoint`/`resume`: a folder where the explicit engine's
    search writes each complete level, and from which a killed run continues
    (ownership.engines.checkpoint); without `ray` it runs in this process."""
    # which engine takes which option: one table (ownership.registry), before loading
    chosen = registry.settings_for(engine, {
        "symbolic": tuple(symbolic), "runs": runs, "steps": steps, "seed": seed, "profile": profile,
        "symmetry": symmetry, "max_memory": max_memory, "searches": searches, "checkpoint": checkpoint,
        "resume": resume, "ray": ray, "native": native, "max_states": max_states, "max_depth": max_depth,
        "workers": workers, "measure": measure, "database": database})
    if profile == "":
        raise UsageError("--profile '': an empty profile name; give default, ci or the name of a registered"
                         " Hypothesis profile, or leave --profile out")
    distributed = ray is not None or checkpoint is not None or resume is not None
    if engine != "explicit" and workers not in (None, 1) and ray is None:
        raise UsageError(registry.EXPLICIT_ONLY)
    check_distributed(engine, ray=ray, checkpoint=checkpoint, resume=resume, searches=searches,
                      workers=workers, max_memory=max_memory)
    if native and (workers not in (None, 1) or distributed):
        raise UsageError("--native compiles the explicit engine's search in one process: it does not take"
                         " --workers, --ray, --checkpoint or --resume yet; leave --native out for those")
    max_seconds = limits.parse_seconds(max_seconds)
    if ray is None:
        limits.check_workers(1 if workers is None else workers)
    if max_memory is not None and max_memory < 1:
        raise UsageError(f"max_memory={max_memory}: a memory limit is a number of bytes above 0")
    model = model_for(spec, params=params, fixes=fixes, version=version, skip=skip, liveness=liveness, only=only)
    nothing_to_check(model)
    if measure and not model.measures:
        raise UsageError(f"--measure: spec {model.spec_cls.__name__} declares no @measure to measure")
    if measure and (engine != "explicit" or symmetry):
        raise UsageError("--measure needs the explicit engine's search of every reachable state, without --symmetry")
    refuse_liveness(model, engine, symmetry=symmetry)
    if distributed:
        refuse_distributed(model, engine, measure=measure, ray=ray)
    seconds = limits.seconds_left(max_seconds)  # what loading and tracing left of the limit
    where = f" on Ray ({ray})" if ray else ""
    with limits.phase(f"preparing the {engine} engine's search{where}", engine=True):
        if distributed:
            result = _run_distributed(spec, model, chosen, max_seconds=seconds, reporter=reporter)
        else:
            result = _run_engine(model, chosen, max_seconds=seconds, reporter=reporter)
            if model.liveness_checked() or measure:
                result = check_liveness(model, engine, result, max_states=max_states, measure=measure,
                                         max_seconds=limits.seconds_left(max_seconds), reporter=reporter)
        limits.settle()  # NOTE(settle): the answer is in; reporting it is not stopped by a limit
    stopped = limits.tripped()
    if stopped is not None and result.coverage.stopped_by == "interrupt":
        result.coverage = dataclasses.replace(result.coverage, stopped_by=stopped)
    extra = _flags(chosen, max_seconds)
    if isinstance(chosen, registry.FuzzSettings) and result.coverage.seed is not None:
        extra += f" --seed {result.coverage.seed}"
    result.reproduce = reproduce_command(_display_ref(spec), model, engine=engine, extra=extra)
    confirm(result)  # the one counterexample rule: the concrete interpreter re-runs it first
    if result.trace is not None:
        result.trace.spec = spec_ref(spec)
        result.trace.version = version
        result.trace.reproduce = result.reproduce
    return result


def _flags(chosen: registry.Settings, max_seconds: float | None) -> str:
    """The options of a run as its reproduce command gives them again (the seed apart: fuzz
    repeats the one it used); an option the engine's settings do not have is not repeated."""
    def value(name: str) -> Any:
        return getattr(chosen, name, None)

    given = [("--max-states", value("max_states")), ("--max-depth", value("max_depth")), ("--max-seconds", max_seconds),
             ("--runs", value("runs")), ("--steps", value("steps")), ("--profile", value("profile"))]
    extra = "".join(f" {flag} {shlex.quote(str(v))}" for flag, v in given if v is not None)
    extra += "".join(f" --symbolic {shlex.quote(t)}" for t in value("symbolic") or ())
    extra += "".join(f" {flag}" for flag, name in (("--symmetry", "symmetry"), ("--native", "native")) if value(name))
    extra += "".join(f" {flag} {shlex.quote(str(value(name)))}" for flag, name in (("--ray", "ray"), ("--searches", "searches"))
                     if value(name) is not None)
    return extra + (" --measure" if value("measure") else "")


def refuse_liveness(model: Model, engine: str, *, symmetry: bool = False) -> None:
    """Refuse a liveness property an engine cannot check, rather than pass it unchecked."""
    live = model.liveness_checked()
    if not live:
        return
    skip = " ".join(f"--skip {n}" for n in live)
    if engine == "prove":  # (only when no safety property is left: prove leaves liveness out, and says so)
        raise UsageError(f"nothing to prove: induction proves safety, and the properties left to check are liveness"
                         f" ({', '.join(live)}): check them with `ownership check` (the explicit engine, over every"
                         " reachable state; --engine bmc for lassos of a bounded length)")
    if symmetry:
        raise UsageError(f"--symmetry is not sound for liveness yet ({', '.join(live)}): a cycle up to symmetry is"
                         f" not a cycle of the spec; check without --symmetry, or leave them out with {skip}")


def check_liveness(model: Model, engine: str, result: CheckResult, *, max_states: int | None, measure: bool,
                    max_seconds: float | None, reporter: Any) -> CheckResult:
    """Liveness after the safety search: on the explicit engine once every reachable state is
    covered and safe; otherwise each liveness property says why it was not checked. bmc and
    fuzz checked liveness within their search (lassos of a bounded length; obligations along
    random runs): here each property's text says how far."""
    from .engines import liveness

    live = model.liveness_checked()
    result.fairness = liveness.fairness_text(model) if live else ""
    graph_why = ""
    if engine == "fuzz":
        # fuzz followed each property along its runs: "violated", or how far its runs went
        # without a violation (bounded, never "holds")
        if not result.liveness:  # the search stopped before its first run
            result.liveness = {n: "not checked: the fuzz search stopped before its first run" for n in live}
        return result
    if engine == "bmc":
        result.liveness = {n: _bmc_liveness(result, n) for n in live}
        return result
    if result.verdict is Verdict.VIOLATED:
        why = "not checked: the search stopped at a safety violation"
    elif result.verdict is not Verdict.VERIFIED:
        why = "not checked: liveness needs every reachable state, and the search stopped before"
    else:
        began = time.monotonic()
        try:
            with limits.phase("checking liveness on the reachable graph", engine=True):
                outcome = liveness.check(model, states_expected=result.coverage.states, max_states=max_states,
                                         max_seconds=max_seconds, reporter=reporter, measure=measure)
        except KeyboardInterrupt:  # Ctrl-C or a command's limit: the safety verdict's coverage stands
            outcome = liveness.Outcome(stopped=limits.tripped() or "interrupt")
        result.graph_seconds = time.monotonic() - began
        if outcome.found is not None:  # (its coverage is the search's, complete; the graph's time apart)
            outcome.found.coverage = dataclasses.replace(outcome.found.coverage, seconds=result.coverage.seconds)
            outcome.found.graph_seconds = result.graph_seconds
        found, stopped = outcome.found, outcome.stopped
        if stopped == "interrupt":  # (the graph's build catches a command's limit as Ctrl-C)
            stopped = limits.tripped() or stopped
        result.measures = outcome.measures or {}
        if found is not None:
            found.measures = result.measures
            found.model = model
            found.sometimes = result.sometimes
            found.fairness = result.fairness
            found.liveness = {n: ("violated" if n == found.trace.violation.property else "not checked: the search"
                                  " stopped at the first liveness violation") for n in live}
            return found
        if stopped is not None:
            # the safety search covered every state; the graph of liveness and measures did not
            result.verdict = Verdict.INCONCLUSIVE
            why = f"not checked: the search of the reachable graph was stopped by {stopped}"
            graph_why = why
            result.measures = {}
        else:
            why = "holds on every behaviour"
    result.liveness = {n: why for n in live}
    if measure and not result.measures:
        if graph_why:
            result.measures_note = graph_why.replace("not checked", "not measured")
        elif result.verdict is Verdict.VIOLATED:
            result.measures_note = "not measured: the search stopped at a safety violation"
        else:
            result.measures_note = "not measured: measures need every reachable state, and the search stopped before"
    return result


def _bmc_liveness(result: CheckResult, name: str) -> str:
    """What the bmc engine's lasso search says of liveness property `name` (ownership.engines.lasso)."""
    cov = result.coverage
    found = result.trace.violation.property if result.trace is not None and result.trace.violation else None
    if found == name:  # (a liveness property's name is no safety property's)
        return "violated"
    if cov.complete:
        return f"holds on every behaviour (none has more than {cov.depth} steps before it stops)"
    shape = "a run that loops back to an earlier state or stops, or that answers too late"
    if result.verdict is Verdict.VIOLATED:
        return (f"no counterexample of fewer than {cov.depth} steps ({shape}); the search stopped at the first"
                " violation")
    bound = cov.bound_depth or 0
    tail = "" if cov.stopped_by == "max-depth" else f" (stopped by {cov.stopped_by})"
    return (f"no counterexample of at most {bound} steps ({shape}){tail}; longer ones are not ruled out: use the"
            " explicit engine for every behaviour")


def check_distributed(engine: str, *, ray: str | None, checkpoint: str | None, resume: str | None,
                      searches: int | None, workers: int | None, max_memory: int | None) -> None:
    """Refuse option combinations of --ray, --checkpoint, --resume and --searches that no
    engine runs (before the spec is loaded)."""
    if searches is not None and ray is None:
        raise UsageError("--searches is the number of fuzz searches of a swarm: give it with --engine fuzz --ray ADDRESS")
    if searches is not None and searches < 1:
        raise UsageError(f"--searches {searches}: a swarm needs at least 1 search")
    if checkpoint is not None and resume is not None:
        raise UsageError("give --checkpoint DIR for a new run or --resume DIR to continue one, not both"
                         " (a resumed run keeps writing its checkpoint in the folder it resumes)")
    if ray is None and (checkpoint is not None or resume is not None) and workers not in (None, 1):
        raise UsageError("--checkpoint and --resume without --ray run the search in this process; for more workers,"
                         " run it on Ray: --ray local")
    if ray is not None and engine == "fuzz" and workers is not None:
        raise UsageError("--workers partitions the explicit engine's search; a fuzz swarm's size is --searches N")
    if ray is not None and workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: a search on Ray needs at least one worker")
    if max_memory is not None and (ray is not None or checkpoint is not None or resume is not None):
        raise UsageError("--max-memory bounds the single-process search; on Ray each worker is bounded by Ray's"
                         " memory monitor (a worker it stops makes the result inconclusive), and a checkpointed"
                         " search keeps its states on disk as it goes: leave --max-memory out")


def refuse_distributed(model: Model, engine: str, *, measure: bool, ray: str | None) -> None:
    """What the partitioned search and the swarm do not check yet: refused, never passed unchecked."""
    live = model.liveness_checked()
    what = "on Ray" if ray is not None else "with a checkpoint"
    if engine == "explicit" and live:
        skip = " ".join(f"--skip {n}" for n in live)
        raise UsageError(f"liveness ({', '.join(live)}) needs the whole reachable graph in one process, and the search"
                         f" {what} keeps it in parts: check liveness without --ray, --checkpoint and --resume, or"
                         f" leave it out here with {skip}")
    if measure:
        raise UsageError("--measure needs the whole reachable graph in one process: measure without --ray,"
                         " --checkpoint and --resume")


def _run_distributed(spec: str, model: Model, chosen: registry.Settings, *, max_seconds: float | None,
                     reporter: Any) -> CheckResult:
    """The explicit engine as a partitioned search (on Ray, or checkpointed in this process),
    or fuzz as a swarm on Ray."""
    from .engines import cluster, partitioned

    assert isinstance(chosen, (registry.ExplicitSettings, registry.FuzzSettings))  # (bmc runs in one process)
    symmetry = isinstance(chosen, registry.ExplicitSettings) and chosen.symmetry
    recipe = cluster.Recipe.of(spec, model, symmetry=symmetry)
    if chosen.ray is None:
        assert isinstance(chosen, registry.ExplicitSettings)  # (a swarm runs on Ray)
        result = partitioned.check(model, recipe=recipe, parts=1, max_states=chosen.max_states,
                                   max_depth=chosen.max_depth, max_seconds=max_seconds, symmetry=symmetry,
                                   checkpoint=chosen.checkpoint, resume=chosen.resume, reporter=reporter)
        result.model = model
        return result
    with cluster.connected(chosen.ray) as connected:
        cpus = cluster.cluster_cpus(connected)
        if isinstance(chosen, registry.FuzzSettings):
            from .engines import fuzz, swarm

            result = swarm.check(recipe, connected, searches=chosen.searches or cpus,
                                 runs=chosen.runs or fuzz.DEFAULT_RUNS, steps=chosen.steps or fuzz.DEFAULT_STEPS,
                                 seed=chosen.seed, max_seconds=max_seconds, reporter=reporter, liveness=True)
            result.note = result.swarm.note  # type: ignore[attr-defined]
        else:
            parts = chosen.workers if chosen.workers is not None else cpus
            if parts > 4 * cpus:
                raise UsageError(f"--workers {parts}: the Ray cluster has {cpus} CPUs; give at most {4 * cpus}"
                                 " (more partitions than CPUs only add messages)")
            result = partitioned.check(model, recipe=recipe, ray=connected, parts=parts, max_states=chosen.max_states,
                                       max_depth=chosen.max_depth, max_seconds=max_seconds, symmetry=symmetry,
                                       checkpoint=chosen.checkpoint, resume=chosen.resume, reporter=reporter)
    result.model = model
    return result


def _run_engine(model: Model, chosen: registry.Settings, *, max_seconds: float | None, reporter: Any) -> CheckResult:
    """Run one engine in this process on a built model, by its settings; the result carries the model."""
    if isinstance(chosen, registry.BmcSettings):
        from .engines import bmc

        result: CheckResult = bmc.run(model, max_states=chosen.max_states, max_depth=chosen.max_depth,
                                      max_seconds=max_seconds, reporter=reporter, symbolic=chosen.symbolic)
        result.model = getattr(result, "witness_model", None) or model
        return result
    if isinstance(chosen, registry.FuzzSettings):
        from .engines import fuzz

        result = fuzz.check(model, runs=chosen.runs or fuzz.DEFAULT_RUNS, steps=chosen.steps or fuzz.DEFAULT_STEPS,
                            seed=chosen.seed, profile=chosen.profile, database=chosen.database,
                            max_seconds=max_seconds, reporter=reporter, liveness=True)
        result.model = model
        return result
    from .engines import explicit

    result = explicit.check(model, native=chosen.native, symmetry=chosen.symmetry, workers=chosen.workers,
                            max_memory=chosen.max_memory, max_states=chosen.max_states, max_depth=chosen.max_depth,
                            max_seconds=max_seconds, reporter=reporter)
    result.model = model
    return result


def _display_ref(spec: str) -> str:
    """The spec as the user should type it again: a path as given, or the shipped name
    (a bare name is always a shipped spec: NOTE(no-code-from-cwd) in ownership.lang.loader)."""
    return spec if is_path(split_ref(spec)[0]) else spec_ref(spec)


def spec_of_trace(trace: Trace, spec: str | None) -> str:
    """The spec to replay `trace` on: `spec` when the user gave one, else the shipped spec the
    trace names (a trace file never chooses which code runs: UsageError for any other)."""
    if spec is not None:
        return spec
    base, _ = split_ref(trace.spec)
    if base not in shipped_specs():
        raise UsageError(
            f"the trace names spec {trace.spec!r}, which is not a shipped spec; say which spec to"
            " replay it on with --spec PATH (a trace file never chooses which code runs)"
        )
    return trace.spec


def replay_trace(trace: Trace, *, spec: str | None = None, fixes: Any = None,
                 version: str | None = None) -> tuple[ReplayResult, Model]:
    """Replay a trace on its spec (or `spec`), with its own fixes unless `fixes` or `version`
    (an engine release's fixes) is given.

    Without `spec`, only a shipped spec named in the trace is loaded: a trace file never
    chooses which code runs."""
    if trace.foreign:
        raise TraceFormatError("this ITF trace was not written by ownership (no #meta.ownership): it has no"
                               " actions of a spec to replay")
    if trace.engine == "monitor" and (not trace.spec or (trace.violation and trace.violation.property == "diverged")):
        what = ("the story of a log's pages, not a run of a spec" if not trace.spec else
                "a spec's run up to where a log diverged from it: the log's next action is not in it")
        again = f": check the log again with `{trace.reproduce}`" if trace.reproduce else ""
        raise UsageError(f"this trace was written by `ownership monitor`; it is {what}, so there is nothing to"
                         f" replay{again} (`ownership show` displays the trace)")
    from_trace = spec is None
    spec = spec_of_trace(trace, spec)
    other_fixes = fixes is not None or version is not None
    if not other_fixes:
        fixes = trace.fixes
    # a lasso of a kernel liveness property that its check switched on (--liveness NAME)
    live = _trace_liveness(trace)
    model = model_for(spec, params=trace.params, fixes=fixes or (), version=version, shipped_only=from_trace,
                      liveness=live)
    with limits.phase(f"replaying the trace's {max(len(trace.steps) - 1, 0):,} steps"):
        if other_fixes and trace.violation is not None:
            # "does this fix kill the trace?" means something only if the trace violates without
            # it: a trace cut short or edited would otherwise "no longer violate" (issue 12, 7)
            own = model_for(spec, params=trace.params, fixes=trace.fixes, shipped_only=from_trace, liveness=live)
            if replayed(trace, own).outcome != "violated":
                raise TraceFormatError(
                    f"the trace does not violate {trace.violation.property} on spec {trace.spec or spec} with its"
                    f" own fixes ({', '.join(trace.fixes) or 'none'}): it was cut short or edited, or made by"
                    " another version of the spec, so replaying it with other fixes shows nothing. Make the"
                    " trace again with `ownership check ... --out`")
        result = replayed(trace, model)
        if not other_fixes and from_trace and trace.violation is not None and result.outcome != "violated":
            # a shipped spec does not change under a trace: its own run must violate again
            raise TraceFormatError(
                f"the trace does not violate {trace.violation.property} on the shipped spec {trace.spec} with its"
                f" own fixes ({', '.join(trace.fixes) or 'none'}): it was cut short or edited, or made by another"
                " version of ownership. Make the trace again with `ownership check ... --out`, or replay it"
                " on your own spec with --spec PATH")
        limits.settle()  # NOTE(settle) in ownership/limits.py
        return result, model


def _trace_liveness(trace: Trace) -> tuple[str, ...]:
    """The kernel liveness property a trace violates, if it is one (to check it on replay)."""
    from .lang.properties import LIVENESS

    name = trace.violation.property if trace.violation is not None else None
    return (name,) if name in LIVENESS else ()


def load_adapter(ref: str, *, what: str = "conformance adapter") -> Any:
    """The object `FILE.py:NAME` that the user typed: a conformance adapter class
    (ownership.bridges.testing: one method per action, and observe()), or an event adapter for
    `monitor --spec` (ownership.bridges.follow). Its folder is put on sys.path first, as pytest does
    for a test file, so that it can import the code it drives."""
    import contextlib
    import importlib.util
    import os
    import sys

    path, sep, name = ref.rpartition(":")
    if not sep or not path.endswith(".py") or not name.isidentifier():
        example = ("examples/allocator/toy_allocator_adapter.py:ToyAllocatorAdapter" if what == "conformance adapter"
                   else "examples/monitor/sglang_pd_events.py:to_actions")
        raise UsageError(f"--adapter {ref!r}: give FILE.py:NAME, the {what} (e.g. {example})")
    if not os.path.isfile(path):
        raise UsageError(f"--adapter {ref!r}: no file {path}")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_name = "ownership_adapter_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout holds the command's answer (--json)
            spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 (the user's code, sys.exit included: bad input, in its words)
        raise UsageError(f"--adapter {ref!r}: importing {path} failed: {type(e).__name__}: {e}") from None
    cls = getattr(module, name, None)
    if cls is None:
        raise UsageError(f"--adapter {ref!r}: {path} defines no {name}")
    return cls
