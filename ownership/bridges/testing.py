"""Helpers for a team's own pytest suite: check a spec in one line, and test real code against it.

`check_spec("specs/my_protocol.py")` runs the fuzz engine (or another) and fails the test with
the rendered trace on a violation.

`check_conformance(spec, MyAdapter)` is the conformance harness. The adapter drives the team's
REAL allocator or scheduler: one method per spec action, with the action's arguments, and an
`observe()` that says which pages the implementation holds free and which request holds which
(an `Ownership` per pool). The harness runs the spec and the implementation side by side under
Hypothesis and, after every step:
  - if the implementation refused the call (the adapter raised `Refused`), that is correct
    exactly when the model flags the step as a violation (a double free refused by a
    debug-checking allocator, say); the run then ends there;
  - if it accepted a step that the model flags, the implementation has the bug: that kernel
    property is reported as violated by the implementation;
  - the observation is judged by the kernel's properties on its own (a page on the free list
    twice, free and held at once, or held by two requests is a `double-free`);
  - and it must match the model's owner state (exactly, or up to a renaming of pages fixed
    when they are allocated).
A failing run is shrunk (fewer steps, lower requests and arguments) and reported with both
sides at the first diverging step. See docs/testing.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..confirm import confirm
from ..errors import OwnershipError, UsageError
from ..interpret.concrete import Flag
from ..lang.declare import BoolDomain, EnumDomain, PageSetDomain, as_domain
from ..lang.model import Model
from ..lang.spec import Spec, did_you_mean
from ..result import CheckResult, Coverage, Verdict
from ..trace import Trace, Violation, build_trace

__all__ = [
    "DEFAULTS",
    "ConformanceError",
    "ConformanceResult",
    "Defaults",
    "Ownership",
    "Refused",
    "SpecViolated",
    "check_conformance",
    "check_spec",
    "conformance",
    "model_of",
]


# --------------------------------------------------------------------------- defaults


@dataclass
class Defaults:
    """Settings for every check_spec / check_conformance call that does not pass its own.

    The pytest plugin (ownership.bridges.pytest_plugin) sets them from --ownership-profile,
    --ownership-runs and --ownership-steps."""

    profile: str | None = None  # None: "ci" when the CI environment variable is set, else "default"
    runs: int = 100
    steps: int = 50
    seed: int | None = None
    #: the seeds of the checks run in the current test (the plugin records them as JUnit properties)
    seeds_used: list[int] = field(default_factory=list)

    def resolved_profile(self) -> str:
        if self.profile:
            return self.profile
        return "ci" if os.environ.get("CI") else "default"


#: The one place the defaults live (set by the pytest plugin; tests may change them too).
DEFAULTS = Defaults()


# --------------------------------------------------------------------------- check_spec


class SpecViolated(AssertionError):
    """Raised by check_spec when the spec violates a property; the message is the rendered trace."""

    def __init__(self, message: str, result: CheckResult) -> None:
        super().__init__(message)
        self.result = result


def model_of(spec: str | type[Spec], *, params: dict[str, int] | None = None, fixes: Any = ()) -> Model:
    """A Model from a spec path or shipped name, or from a Spec class defined in a test."""
    if isinstance(spec, str):
        from ..api import model_for

        return model_for(spec, params=params, fixes=fixes)
    if isinstance(spec, type) and issubclass(spec, Spec):
        from ..interpret.validate import build_model

        return build_model(spec, params or {}, fixes)
    raise UsageError(f"spec={spec!r}: give a spec file path, a shipped spec name, or a Spec class")


def check_spec(
    spec: str | type[Spec],
    *,
    fixes: Any = (),
    params: dict[str, int] | None = None,
    engine: str = "fuzz",
    runs: int | None = None,
    steps: int | None = None,
    seed: int | None = None,
    profile: str | None = None,
    database: Any = "default",
    max_seconds: float | None = None,
) -> CheckResult:
    """Check a spec and return the result; on a violation fail with the rendered trace.

    `engine` "fuzz" (the default) runs a Hypothesis stateful test generated from the spec;
    "explicit" explores every reachable state. An inconclusive check (stopped by
    `max_seconds`) fails too: a test that established nothing must not pass."""
    __tracebackhide__ = True  # a failure starts with the trace, not with this function's source
    from ..engines import fuzz, per_state
    from ..render.text import render_trace

    model = model_of(spec, params=params, fixes=fixes)
    extra = ""  # (the reproduce command's options beyond the spec's)
    if engine == "fuzz":
        extra = f" --runs {runs or DEFAULTS.runs} --steps {steps or DEFAULTS.steps}"
        result = fuzz.check(
            model, runs=runs or DEFAULTS.runs, steps=steps or DEFAULTS.steps,
            seed=seed if seed is not None else DEFAULTS.seed, database=database,
            profile=profile or DEFAULTS.resolved_profile(), max_seconds=max_seconds, liveness=True,
        )
        if result.coverage.seed is not None:
            DEFAULTS.seeds_used.append(result.coverage.seed)
    elif engine == "explicit":
        from .. import api

        result = per_state.check(model, max_seconds=max_seconds)
        if model.liveness_checked():  # the same liveness check as `ownership check`
            result = api.check_liveness(model, "explicit", result, max_states=None, measure=False,
                                        max_seconds=max_seconds, reporter=None)
    elif isinstance(spec, str):
        from .. import api

        if engine not in api.ENGINES:
            raise UsageError(f"unknown engine {engine!r}; available: fuzz, {', '.join(api.ENGINES)}")
        result = api.check(spec, params=params, fixes=fixes, engine=engine, max_seconds=max_seconds)
    else:
        raise UsageError(f"engine {engine!r} checks spec files only; use fuzz or explicit for a Spec class")
    if result.coverage.stopped_by == "interrupt":
        # Ctrl-C is the user's, not the test's outcome: it ends the test session (issue 29),
        # where an inconclusive check failed this test and pytest went on to the next
        raise KeyboardInterrupt
    confirm(result, getattr(result, "model", None) or model)  # the one counterexample rule (ownership.confirm)
    if result.trace is not None and not result.trace.spec:
        _name_the_run(result, spec, model, extra)
    setting = _setting(model)
    # liveness that no engine covered on every behaviour: not checked, or bounded (fuzz's
    # random runs, bmc's lassos of a bounded length)
    unchecked = [n for n, how in result.liveness.items() if not how.startswith(("holds", "violated"))]
    if unchecked and result.verdict is not Verdict.VIOLATED:
        warnings.warn(f"spec {model.spec_cls.__name__}: liveness {', '.join(unchecked)} not checked on every behaviour"
                      f" by engine {engine} (use engine=\"explicit\", which checks liveness over every reachable state)",
                      stacklevel=2)
    if result.verdict is Verdict.VIOLATED:
        viol = result.violation
        how = "shrunk" if result.engine == "fuzz" else "shortest"
        text = [f"spec {model.spec_cls.__name__} violates {viol.property} ({setting}; engine {result.engine})",
                f"  {viol.message}", "", f"Counterexample ({len(result.trace.steps) - 1} steps, {how}):",
                render_trace(result.trace), "", f"Covered {result.coverage.describe()}."]
        if result.coverage.seed is not None:
            text.append(f"Repeat with seed={result.coverage.seed}.")
        text += failure_artifacts(result.trace, result.coverage.seed)
        raise SpecViolated("\n".join(text), result)
    if result.verdict is Verdict.INCONCLUSIVE:
        raise SpecViolated(f"spec {model.spec_cls.__name__}: inconclusive ({setting}): "
                           f"{result.coverage.describe()}", result)
    return result


def _name_the_run(result: CheckResult, spec: str | type[Spec], model: Model, extra: str) -> None:
    """A trace names its spec and the command that repeats the run, so that `ownership replay`
    and `ownership show` take it (the traces of check_spec named spec '' and no command, and
    replay refused them): a spec given by name or path keeps it; a Spec class is named by its
    file and class."""
    from .. import api

    if isinstance(spec, str):
        ref, shown = api.spec_ref(spec), api._display_ref(spec)
    else:
        ref = shown = f"{spec.source_file()}:{spec.__name__}"
    if result.engine == "fuzz":
        extra += f" --seed {result.coverage.seed}" if result.coverage.seed is not None else " --profile ci"
    result.trace.spec = ref
    result.trace.reproduce = result.reproduce = api.reproduce_command(shown, model, engine=result.engine, extra=extra)


#: Where a failing check writes its trace, relative to the working directory.
FAILURES = Path(".ownership") / "failures"


def failure_artifacts(trace: Any, seed: int | None) -> list[str]:
    """Under pytest: write the trace of a failure to FAILURES/<test id>.itf.json, and say the
    command that repeats this test's run (the seed: the same runs, the database left out)."""
    test = os.environ.get("PYTEST_CURRENT_TEST")
    if not test or trace is None:
        return []
    node = test.rsplit(" (", 1)[0]
    lines = []
    from ..trace import to_itf, write_output

    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", node).strip("_")[:150] + ".itf.json"
    path = FAILURES / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, json.dumps(to_itf(trace), indent=1) + "\n", "trace")
        lines.append(f"Trace: {path} (ownership show {path})")
    except (OSError, OwnershipError) as e:
        lines.append(f"(the trace could not be written to {path}: {e})")
    again = f"--ownership-seed {seed}" if seed is not None else "--ownership-profile ci"
    lines.append(f"Reproduce: python -m pytest {shlex.quote(node)} {again}")
    return lines


def _setting(model: Model) -> str:
    params = " ".join(f"{k}={v}" for k, v in model.env.items())
    fixes = ", ".join(model.spec.fixes) or "none"
    return f"parameters {params}; fixes {fixes}"


# --------------------------------------------------------------------------- conformance


@dataclass(frozen=True)
class Ownership:
    """What an implementation says about one pool, in the spec's page numbers (0..pages-1).

    `free`: the pool's free list as the implementation keeps it (a page listed twice there
    is reported as a double free, so pass the list, not a set). `held`: the pages each
    request (1..requests) holds; a request that holds nothing may be left out."""

    free: Collection[int]
    held: Mapping[int, Collection[int]] = field(default_factory=dict)


class Refused(Exception):
    """Raised by an adapter method when the implementation refused the call (raised its own error).

    Raise it from the implementation's error, `raise Refused(...) from e`, so the report shows
    the cause. Refusing is right when the model flags the step (a double free that a
    debug-checking allocator rejects); refusing a step that the model allows is a divergence."""


class ConformanceError(AssertionError):
    """Raised by check_conformance when the implementation diverges from the spec or violates
    a property; the message shows the shrunk run and both sides at the failing step."""

    def __init__(self, message: str, result: ConformanceResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class ConformanceResult:
    """The outcome of a conformance run: a verdict, what was covered, and on a failure the
    shrunk run with both sides at the failing step."""

    verdict: Verdict
    coverage: Coverage
    kind: str | None = None          # "divergence", "error", or a kernel property such as "double-free"
    trace: Trace | None = None       # the shrunk run of the model, violation = the failure
    model_side: dict[str, str] = field(default_factory=dict)
    implementation_side: dict[str, str] = field(default_factory=dict)
    refusals: int = 0                # runs that ended with the implementation refusing a violating step
    report: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict is not Verdict.VIOLATED


MATCHES = ("pages", "renamed", "counts")


@dataclass
class _Failure:
    """Why a run failed, at which step, with both sides described."""

    kind: str
    step: int
    message: str
    model_side: dict[str, str]
    implementation_side: dict[str, str]
    flags: list[Flag] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    pages: list[tuple[str, int]] = field(default_factory=list)


class _Harness:
    """The spec, the adapter factory, and how observations are compared with the model."""

    def __init__(self, model: Model, factory: Callable[[dict[str, int]], Any], match: str) -> None:
        if match not in MATCHES:
            raise UsageError(f"match={match!r}: use one of {', '.join(MATCHES)}")
        self.model = model
        self.factory = factory
        self.match = match
        self.args: list[tuple[Any, ...]] = [self._python_args(b) for b in range(len(model.bindings))]
        self.checked_methods = False

    def _python_args(self, b: int) -> tuple[Any, ...]:
        binding = self.model.bindings[b]
        out: list[Any] = []
        for (name, decl), v in zip(binding.action.args, binding.args):
            dom = as_domain(decl, f"action {binding.action.name}, argument {name}")
            if isinstance(dom, BoolDomain):
                out.append(bool(v))
            elif isinstance(dom, EnumDomain):
                out.append(dom.enum_cls(v))
            elif isinstance(dom, PageSetDomain):
                out.append(frozenset(p for p in range(dom.pool.size(self.model.env)) if v >> p & 1))
            else:
                out.append(int(v))
        return tuple(out)

    def new_adapter(self) -> Any:
        try:
            adapter = self.factory(dict(self.model.env))
        except OwnershipError:
            raise
        except Exception as e:  # (the user's adapter cannot be made: bad input, never our bug)
            name = getattr(self.factory, "__name__", type(self.factory).__name__)
            raise UsageError(f"adapter {name} could not be made for spec {self.model.spec_cls.__name__} with"
                             f" parameters {dict(self.model.env)}: {type(e).__name__}: {e}; its constructor"
                             " takes the spec's parameters as one dict") from None
        if not self.checked_methods:
            names = list(self.model.spec_cls._actions)
            missing = [n for n in names if not callable(getattr(adapter, n, None))]
            if missing or not callable(getattr(adapter, "observe", None)):
                have = [n for n in dir(adapter) if not n.startswith("_")]
                hints = "".join(did_you_mean(n, have) for n in missing)
                what = ", ".join(missing + ([] if callable(getattr(adapter, "observe", None)) else ["observe"]))
                raise UsageError(
                    f"adapter {type(adapter).__name__} lacks {what}: it needs one method per action of"
                    f" spec {self.model.spec_cls.__name__} ({', '.join(names)}) and observe().{hints}"
                )
            self.checked_methods = True
        return adapter

    # -- one run of both sides ------------------------------------------------------------------

    def observe(self, adapter: Any) -> dict[str, Ownership]:
        obs = adapter.observe()
        if isinstance(obs, Ownership):
            if len(self.model.pools) != 1:
                raise UsageError(
                    f"observe() returned one Ownership, but spec {self.model.spec_cls.__name__} has pools"
                    f" {', '.join(self.model.pools)}: return a dict pool name -> Ownership"
                )
            return {next(iter(self.model.pools)): obs}
        if isinstance(obs, Mapping) and all(isinstance(v, Ownership) for v in obs.values()):
            unknown = [p for p in obs if p not in self.model.pools]
            if unknown:
                raise UsageError(f"observe() names pool(s) {', '.join(map(str, unknown))}; the spec's pools are"
                                 f" {', '.join(self.model.pools)}")
            return dict(obs)
        raise UsageError(f"observe() must return an Ownership or a dict of them, not {obs!r}")

    def model_view(self, state: tuple[int, ...], pool: str) -> tuple[set[int], dict[int, set[int]]]:
        """The model's free pages and each request's pages (a shared pool: every holder's; the
        pages only an owner that is not a request holds are neither)."""
        free: set[int] = set()
        held: dict[int, set[int]] = {r: set() for r in range(1, self.model.requests + 1)}
        if self.model.pools[pool].shared:  # (holders: a field per request, then per owner)
            info = self.model.by_name[f"{pool}.holders"]
            fields = self.model.pools[pool].holders()
            for p, holders in enumerate(state[info.offset:info.offset + info.length]):
                if holders == 0:
                    free.add(p)
                for name, _ in fields.counts(holders, self.model.env):
                    if name not in fields.owners:
                        held[int(name[1:])].add(p)
            return free, held
        info = self.model.by_name[f"{pool}.owner"]
        for p, owner in enumerate(state[info.offset:info.offset + info.length]):
            (free.add(p) if owner == 0 else held[owner].add(p))
        return free, held

    def describe_model(self, state: tuple[int, ...], pools: Collection[str]) -> dict[str, str]:
        out = {}
        for pool in pools:
            free, held = self.model_view(state, pool)
            out[pool] = _describe(sorted(free), {r: sorted(ps) for r, ps in held.items()})
        return out

    @staticmethod
    def describe_impl(obs: dict[str, Ownership]) -> dict[str, str]:
        return {pool: _describe(list(o.free), {int(r): sorted(ps) for r, ps in o.held.items()})
                for pool, o in obs.items()}

    def judge_observation(self, obs: dict[str, Ownership]) -> tuple[str, str, list[tuple[str, int]]] | None:
        """The kernel's properties applied to what the implementation says on its own."""
        for pool, o in obs.items():
            size = self.model.pools[pool].size
            free = [int(p) for p in o.free]
            held = {int(r): [int(p) for p in ps] for r, ps in o.held.items()}
            for r in held:
                if not 1 <= r <= self.model.requests:
                    return ("error", f"observe() says request {r} holds {pool} pages; requests are 1..{self.model.requests}", [])
            every = free + [p for ps in held.values() for p in ps]
            bad = sorted({p for p in every if not 0 <= p < size})
            if bad:
                return ("error", f"observe() reports {pool} page(s) {bad}, outside 0..{size - 1}", [])
            seen: dict[int, str] = {}
            for p in free:
                if p in seen:
                    return ("double-free", f"{pool} page {p} is on the implementation's free list twice: it was freed twice"
                            " and can be handed to two requests", [(pool, p)])
                seen[p] = "free"
            shared = self.model.pools[pool].shared  # a prefix-cache hit shares a page: two holders are fine
            for r, ps in sorted(held.items()):
                for p in ps:
                    if p in seen and (seen[p] == "free" or not shared):
                        return ("double-free", f"{pool} page {p} is held by r{r} and also {_whose(seen[p])}:"
                                " one page, two owners", [(pool, p)])
                    seen[p] = f"r{r}"
        return None

    def compare(self, state: tuple[int, ...], obs: dict[str, Ownership], mapping: dict[str, dict[int, int]]) -> str | None:
        """Where the observation differs from the model's owner state, in words, or None."""
        for pool, o in obs.items():
            m_free, m_held = self.model_view(state, pool)
            i_free = {int(p) for p in o.free}
            i_held = {r: {int(p) for p in o.held.get(r, ())} for r in m_held}
            if self.match == "pages":
                if m_free != i_free:
                    return f"{pool}: the model has free pages {sorted(m_free)}, the implementation {sorted(i_free)}"
                for r in m_held:
                    if m_held[r] != i_held[r]:
                        return f"{pool}: r{r} holds {sorted(m_held[r])} in the model, {sorted(i_held[r])} in the implementation"
                continue
            if len(m_free) != len(i_free):
                return f"{pool}: {len(m_free)} pages are free in the model, {len(i_free)} in the implementation"
            for r in m_held:
                if len(m_held[r]) != len(i_held[r]):
                    return f"{pool}: r{r} holds {len(m_held[r])} pages in the model, {len(i_held[r])} in the implementation"
            if self.match == "counts":
                continue
            # "renamed": a model page stands for the implementation page it was given with.
            old = mapping.setdefault(pool, {})
            new: dict[int, int] = {}
            for r in m_held:
                kept = {mp: old[mp] for mp in m_held[r] if mp in old}
                for mp, ip in kept.items():
                    if ip not in i_held[r]:
                        return (f"{pool}: model page {mp} of r{r} is implementation page {ip}, which r{r}"
                                " does not hold any more")
                fresh_m = sorted(m_held[r] - kept.keys())
                fresh_i = sorted(i_held[r] - set(kept.values()))
                new.update(kept)
                new.update(zip(fresh_m, fresh_i))
            images = set(new.values())
            for mp, ip in old.items():
                if mp not in new and ip not in i_free and ip not in images:
                    return f"{pool}: model page {mp} was freed, but its implementation page {ip} is not free"
            mapping[pool] = new
        return None


def _whose(tag: str) -> str:
    return "free" if tag == "free" else f"held by {tag}"


def _describe(free: list[int], held: dict[int, list[int]]) -> str:
    parts = [f"free {_pages(free)}"]
    parts += [f"r{r} holds {_pages(ps)}" for r, ps in sorted(held.items()) if ps]
    return "; ".join(parts)


def _pages(ps: list[int]) -> str:
    return "[" + " ".join(map(str, ps)) + "]"


class _Driver:
    """One run of the implementation along a path of the model."""

    REFUSED = "refused"

    def __init__(self, harness: _Harness) -> None:
        self.harness = harness
        self.adapter = harness.new_adapter()
        self.mapping: dict[str, dict[int, int]] = {}

    def close(self) -> None:
        closer = getattr(self.adapter, "close", None)
        if callable(closer):
            closer()

    def start(self, state: tuple[int, ...]) -> _Failure | None:
        return self._after(0, "initial state", state, [], None)

    def step(self, i: int, b: int, state: tuple[int, ...], flags: list[Flag]) -> _Failure | str | None:
        h = self.harness
        binding = h.model.bindings[b]
        label = binding.label()
        method = getattr(self.adapter, binding.action.name)
        try:
            method(*h.args[b])
        except Refused as e:
            if flags:
                return self.REFUSED
            cause = e.__cause__ or e
            obs_text = self._safe_observe()
            return _Failure("divergence", i, f"the implementation refused {label}, which the model allows:"
                            f" {type(cause).__name__}: {cause}", h.describe_model(state, h.model.pools), obs_text)
        except Exception as e:  # the implementation's own error: report it as data, with both sides
            obs_text = self._safe_observe()
            return _Failure("error", i, f"the implementation raised {type(e).__name__}: {e} in {label}"
                            " (raise ownership.bridges.testing.Refused from it if refusing is intended)",
                            h.describe_model(state, h.model.pools), obs_text)
        return self._after(i, label, state, flags, b)

    def _safe_observe(self) -> dict[str, str]:
        try:
            return self.harness.describe_impl(self.harness.observe(self.adapter))
        except Exception as e:  # observe() itself failing is reported, not raised
            return {"?": f"observe() raised {type(e).__name__}: {e}"}

    def _after(self, i: int, label: str, state: tuple[int, ...], flags: list[Flag], b: int | None) -> _Failure | None:
        h = self.harness
        obs = h.observe(self.adapter)
        pools = list(obs)
        model_side = h.describe_model(state, pools)
        impl_side = h.describe_impl(obs)
        own = h.judge_observation(obs)
        if flags:
            from ..engines.fuzz import primary
            from ..kernel import PROPERTIES

            prop = primary(flags)
            if prop in PROPERTIES:
                evidence = f"; the implementation shows it: {own[1]}" if own and own[0] == prop else ""
                text = f"the implementation accepted {label}, which violates {prop}{evidence}"
            else:  # the spec's own invariant, over protocol state the harness does not observe
                text = (f"the spec's invariant {prop} fails after {label}, a step the implementation accepted"
                        " (the harness cannot see whether it shares the bug: fix the spec, or check the protocol)")
            return _Failure(prop, i, text, model_side, impl_side, flags=flags)
        if own is not None:
            kind, text, pages = own
            return _Failure(kind, i, f"after {label}: {text}", model_side, impl_side, pages=pages)
        diff = h.compare(state, obs, self.mapping)
        if diff is not None:
            return _Failure("divergence", i, f"after {label} the implementation diverges from the model: {diff}",
                            model_side, impl_side)
        return None


def conformance(
    spec: str | type[Spec],
    adapter: Callable[[dict[str, int]], Any],
    *,
    params: dict[str, int] | None = None,
    fixes: Any = (),
    runs: int | None = None,
    steps: int | None = None,
    seed: int | None = None,
    profile: str | None = None,
    database: Any = None,
    match: str = "pages",
    max_seconds: float | None = None,
    max_shrink_seconds: float | None = 60.0,
) -> ConformanceResult:
    """Run the implementation behind `adapter` beside `spec` under Hypothesis; never raises on a
    failure (see check_conformance). `adapter` is called with the spec's parameters (a dict)
    for each run and returns a fresh adapter. `match`: "pages" (the same page numbers),
    "renamed" (the same pages up to a renaming fixed at allocation: for a free-list order the
    spec does not model), or "counts" (how many pages are free and held)."""
    from ..engines import fuzz
    from ..render.text import render_trace

    model = model_of(spec, params=params, fixes=fixes)
    harness = _Harness(model, adapter, match)
    hsettings = fuzz.build_settings(runs=runs or DEFAULTS.runs, steps=steps or DEFAULTS.steps,
                                    database=database, profile=profile or DEFAULTS.resolved_profile())
    exact = (seed if seed is not None else DEFAULTS.seed) is not None
    seed = fuzz.choose_seed(seed if seed is not None else DEFAULTS.seed, hsettings)
    if seed is not None:
        DEFAULTS.seeds_used.append(seed)
    start = time.monotonic()
    explorer = fuzz.Explorer(model)
    search = fuzz.Search(explorer, start, max_seconds, None, 1.0, last_report=start)
    refusals = [0]

    class ConformanceMachine(fuzz.MachineBase):
        """A run of the model with the implementation driven beside it."""

        def __init__(self) -> None:
            super().__init__()
            self.stopped = False
            self.driver = _Driver(harness)
            failure = self.driver.start(model.initial)
            if failure is not None:
                self.fail(fuzz.RunFailed(failure.kind, (), failure))

        def fire(self, a: int, picks: list[int]) -> None:
            if not self.stopped:
                super().fire(a, picks)

        def judge_step(self, b: int, child: fuzz.Node) -> None:
            got = self.driver.step(len(self.path), b, child.state, explorer.flags_at(child))
            if got == _Driver.REFUSED:
                self.stopped = True
                if self.counted:
                    refusals[0] += 1
            elif got is not None:
                assert isinstance(got, _Failure)
                self.fail(fuzz.RunFailed(got.kind, self.path, got))

        def teardown(self) -> None:
            super().teardown()
            self.driver.close()

    stopped_by = "max-runs"
    # (Ctrl-C propagates: it ends the test session, not this check: issue 29)
    failure: fuzz.RunFailed | None = fuzz.run_search(model, search, hsettings, seed, base=ConformanceMachine, salt="conformance",
                              exact=exact)
    if search.expired and failure is None:
        stopped_by = "max-seconds"
    names = [sl.name for sl in explorer.slices]
    never_fired = tuple(n for n in names if n not in search.fired)
    cov = Coverage(len(search.seen), search.steps, search.longest, complete=False,
                   stopped_by="violation" if failure else stopped_by, seconds=time.monotonic() - start,
                   runs=search.runs, never_fired=never_fired,
                   never_enabled=tuple(n for n in never_fired if n not in search.enabled), seed=seed)
    label = f"{getattr(adapter, '__name__', type(adapter).__name__)} against spec {model.spec_cls.__name__} ({_setting(model)})"
    if failure is None:
        verdict = Verdict.BOUNDED if stopped_by == "max-runs" else Verdict.INCONCLUSIVE
        text = (f"conformance of {label}: {verdict.word}, no divergence; covered {cov.describe()};"
                f" {refusals[0]} run(s) ended with the implementation refusing a step that violates a property")
        return ConformanceResult(verdict, cov, refusals=refusals[0], report=text)

    def judge(path: tuple[int, ...]) -> fuzz.RunFailed | None:
        return _replay(harness, explorer, path)

    deadline = None if max_shrink_seconds is None else time.monotonic() + max_shrink_seconds
    best = judge(failure.path) or failure
    best = fuzz.PathShrinker(explorer.slices, judge, deadline=deadline).shrink(best)
    detail: _Failure = best.detail
    walked = [explorer.root]
    node = explorer.root
    for i, b in enumerate(best.path):
        nxt = explorer.child(best.path[:i], node, b)
        assert nxt is not None
        walked.append(nxt)
        node = nxt
    trace = build_trace(model, [n.state for n in walked], [model.bindings[b] for b in best.path],
                        detail.flags, engine="conformance")
    if trace.violation is None or not detail.flags:
        last = model.bindings[best.path[-1]].shown if best.path else ()
        involved = sorted({str(v) for _, v in last if isinstance(v, str) and v.startswith("r")})
        trace.violation = Violation(detail.kind, detail.step, detail.message, involved, detail.pages)
    else:
        trace.violation.message = f"{detail.message}: {trace.violation.message}"
    lines = [f"conformance of {label}: FAILED: {detail.kind} at step {detail.step}",
             f"  {trace.violation.message}", "",
             f"Shrunk run ({len(best.path)} steps):", render_trace(trace), "",
             f"At step {detail.step}, {trace.steps[detail.step].label()}:"]
    pools = sorted(set(detail.model_side) | set(detail.implementation_side))
    for pool in pools:
        lines.append(f"  model           {pool}: {detail.model_side.get(pool, '(not observed)')}")
        lines.append(f"  implementation  {pool}: {detail.implementation_side.get(pool, '(not observed)')}")
    lines.append("")
    lines.append(f"Covered {cov.describe()}." + (f" Repeat with seed={seed}." if seed is not None else ""))
    return ConformanceResult(Verdict.VIOLATED, cov, detail.kind, trace, detail.model_side,
                             detail.implementation_side, refusals[0], "\n".join(lines))


def _replay(harness: _Harness, explorer: Any, path: tuple[int, ...]) -> Any:
    """Drive a fresh implementation along `path`: the failure it ends in, or None if it passes
    (or a binding is not enabled in the model, or the implementation rightly refused)."""
    from ..engines import fuzz

    driver = _Driver(harness)
    try:
        node = explorer.root
        got = driver.start(node.state)
        if got is not None:
            return fuzz.RunFailed(got.kind, (), got)
        for i, b in enumerate(path):
            nxt = explorer.child(path[:i], node, b)
            if nxt is None:
                return None
            node = nxt
            res = driver.step(i + 1, b, node.state, explorer.flags_at(node))
            if res == _Driver.REFUSED:
                return None
            if isinstance(res, _Failure):
                return fuzz.RunFailed(res.kind, path[:i + 1], res)
        return None
    finally:
        driver.close()


@dataclass
class ConformanceReplay:
    """A recorded run of the model re-run on the real implementation (`replay_conformance`)."""

    outcome: str                      # "conforms", "failed" (diverged or violated), "refused", "blocked"
    steps_run: int
    kind: str | None = None           # what failed: "divergence", "error", or a property
    step: int | None = None           # the step where it failed, was refused or is not enabled
    message: str = ""
    model_side: dict[str, str] = field(default_factory=dict)
    implementation_side: dict[str, str] = field(default_factory=dict)


def replay_conformance(trace: Trace, spec: str | type[Spec], adapter: Callable[[dict[str, int]], Any], *,
                       params: dict[str, int] | None = None, fixes: Any = None,
                       match: str = "pages") -> ConformanceReplay:
    """Drive a fresh implementation (`adapter`) along the steps of `trace`, beside the model,
    checking it after every step as a conformance run does: whether the real code still
    diverges where the trace says (or conforms now, after a fix of the implementation)."""
    from ..engines import fuzz

    model = model_of(spec, params=trace.params if params is None else params,
                     fixes=trace.fixes if fixes is None else fixes)
    by_label = {b.label(): i for i, b in enumerate(model.bindings)}
    path = []
    for k, st in enumerate(trace.steps[1:], start=1):
        b = by_label.get(st.label())
        if b is None:
            raise UsageError(f"step {k} of the trace, {st.label()}, is no action of spec {model.spec_cls.__name__}"
                             f" at its parameters: replay the trace on the spec that made it")
        path.append(b)
    harness = _Harness(model, adapter, match)
    explorer = fuzz.Explorer(model)
    driver = _Driver(harness)
    try:
        node = explorer.root
        got = driver.start(node.state)
        if got is not None:
            return ConformanceReplay("failed", 0, got.kind, 0, got.message, got.model_side, got.implementation_side)
        for i, b in enumerate(path):
            nxt = explorer.child(tuple(path[:i]), node, b)
            if nxt is None:
                return ConformanceReplay("blocked", i, step=i + 1,
                                         message=f"step {i + 1}, {model.bindings[b].label()}, is not enabled in the model")
            node = nxt
            res = driver.step(i + 1, b, node.state, explorer.flags_at(node))
            if res == _Driver.REFUSED:
                return ConformanceReplay("refused", i + 1, step=i + 1,
                                         message=f"the implementation refused step {i + 1}, {model.bindings[b].label()}")
            if isinstance(res, _Failure):
                return ConformanceReplay("failed", i + 1, res.kind, res.step, res.message, res.model_side,
                                         res.implementation_side)
        return ConformanceReplay("conforms", len(path))
    finally:
        driver.close()


def check_conformance(spec: str | type[Spec], adapter: Callable[[dict[str, int]], Any], **options: Any) -> ConformanceResult:
    """Like `conformance`, but fail the test (ConformanceError, an AssertionError) on a
    divergence or a violated property, with the report as its message, the trace written
    to .ownership/failures/ and the pytest command that repeats the run."""
    __tracebackhide__ = True  # a failure starts with the report, not with this function's source
    result = conformance(spec, adapter, **options)
    if not result.ok:
        extra = failure_artifacts(result.trace, result.coverage.seed) if result.trace is not None else []
        raise ConformanceError("\n".join([result.report, *extra]), result)
    if result.verdict is Verdict.INCONCLUSIVE:
        raise ConformanceError(result.report, result)
    return result
