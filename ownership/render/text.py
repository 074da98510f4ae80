"""Plain-text renderings of check results, traces, replays and spec listings.

Traces number their states and head each with the action that produced it and its
narrative: one line in the protocol's words, from the spec's `describe(s, step)` hook or the
first sentence of the action's docstring (docs/spec-language.md, "Narratives"). `check`
shows the narrative alone; with `full` each step also lists what changed (the initial state
whole). The report explains the violation in words and ends with the command that
reproduces the run (after TLC's StatePrinter and Quint's `--seed` hint).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SpecError
from ..lang.properties import LEAK, LIVENESS, PROPERTIES
from ..registry import ENGINES
from ..result import CheckResult, Verdict
from ..trace import ReplayResult, Trace


def show_value(v: Any) -> str:
    """A trace value in compact text: {0, 1} for sets, r1=.. for maps, [..] for lists."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, frozenset | set):
        return "{" + ", ".join(show_value(x) for x in sorted(v, key=_sort_key)) + "}"
    if isinstance(v, dict):
        if len(v) > 16:  # many requests: only those not at the first value
            items = list(v.items())
            common = items[0][1]
            rest = [f"{k}={show_value(x)}" for k, x in items if x != common]
            return f"all={show_value(common)}" + (" except " + " ".join(rest) if rest else "")
        return " ".join(f"{k}={show_value(x)}" for k, x in v.items())
    if isinstance(v, list):
        if len(v) > 16:  # a large pool: runs, e.g. [r1 r1 r0×4094], a free list [3..4095]
            parts, i = [], 0
            while i < len(v):
                j = i
                while j + 1 < len(v) and v[j + 1] == v[i]:
                    j += 1
                if j == i and isinstance(v[i], int) and not isinstance(v[i], bool):
                    while j + 1 < len(v) and isinstance(v[j + 1], int) and v[j + 1] == v[j] + 1:
                        j += 1
                    parts.append(f"{v[i]}..{v[j]}" if j > i + 1 else " ".join(str(x) for x in v[i:j + 1]))
                else:
                    parts.append(show_value(v[i]) + (f"×{j - i + 1}" if j > i else ""))
                i = j + 1
            return "[" + " ".join(parts) + "]"
        return "[" + " ".join(show_value(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(show_value(x) for x in v) + ")"
    return str(v)


def _sort_key(x: Any) -> tuple[int, Any]:
    return (0, x) if isinstance(x, int) else (1, str(x))


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, old, new) for every element that changed, e.g. ("p_stage[r1]", "NEW", "QUEUED")."""
    out: list[tuple[str, Any, Any]] = []
    for var, new in after.items():
        old = before.get(var)
        if old == new:
            continue
        if isinstance(new, dict) and isinstance(old, dict):
            for k, x in new.items():
                if old.get(k) != x:
                    out.append((f"{var}[{k}]", old.get(k), x))
        elif isinstance(new, list) and isinstance(old, list) and len(old) == len(new) and not var.endswith("free_list"):
            for k, (a, b) in enumerate(zip(old, new)):
                if a != b:
                    out.append((f"{var}[{k}]", a, b))
        else:
            out.append((var, old, new))
    return out


def render_trace(trace: Trace, *, full: bool = False, narrative: list[str | None] | None = None,
                 diffs: bool = True) -> str:
    """The trace as numbered steps, each with its narrative when given (`narrate`), then
    (`diffs`) the initial state whole and only the changes of each later step, or (`full`)
    every state whole."""
    lines: list[str] = []
    width = len(str(len(trace.steps) - 1))
    heads = [(f"[{step.actor}] " if step.actor else "") + step.label() for step in trace.steps]
    told = narrative is not None and any(narrative)
    column = max(len(h) for h in heads) if told else 0
    for i, step in enumerate(trace.steps):
        marker = "  <-- violation" if trace.violation and trace.violation.step == i else ""
        story = (narrative[i] if narrative is not None and i < len(narrative) else None) or ""
        head = f"{heads[i]:<{column}}  {story}" if story else heads[i]
        lines.append(f"{i:>{width}}  {head}".rstrip() + marker)
        if not diffs:
            continue
        pad = " " * (width + 4)
        if i == 0 or full:
            for var, value in step.state.items():
                lines.append(f"{pad}{var}: {show_value(value)}")
        else:
            diff = changes(trace.steps[i - 1].state, step.state)
            if not diff:
                lines.append(f"{pad}(no change)")
            for name, old, new in diff:
                lines.append(f"{pad}{name}: {show_value(old)} -> {show_value(new)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- narratives


class Pages(frozenset):  # type: ignore[type-arg]
    """A set of pages in a narrative: `str` gives {0, 1, 2}, `listed` gives "pages 0, 1, 2"."""

    def __str__(self) -> str:
        return "{" + ", ".join(str(x) for x in sorted(self, key=_sort_key)) + "}"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    @property
    def listed(self) -> str:
        """"page 3", "pages 0, 1, 2", or "no page"."""
        if not self:
            return "no page"
        return ("page " if len(self) == 1 else "pages ") + ", ".join(str(x) for x in sorted(self, key=_sort_key))


def _narrative_value(v: Any) -> Any:
    if isinstance(v, frozenset | set):
        return Pages(v)
    if isinstance(v, dict):
        return {k: _narrative_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_narrative_value(x) for x in v]
    return v


class PoolState:
    """One pool of a state as a narrative reads it: the kernel's truth about each page.

    `owner`, `content`, `inflight`, `outbound` are lists by page ("free", "none", "r1",
    "r0" for KV of a request from before the trace); `free_list` the pages free, in order."""

    def __init__(self, name: str, state: dict[str, Any]) -> None:
        self.name = name
        self._state = state

    def _column(self, kind: str) -> list[Any]:
        value = self._state.get(f"{self.name}.{kind}")
        return list(value) if isinstance(value, list) else []

    @property
    def owner(self) -> list[Any]:
        return self._column("owner") or [
            "+".join(sorted(str(x) for x in v)) or "free" for v in self._column("holders")]

    @property
    def content(self) -> list[Any]:
        return self._column("content")

    @property
    def inflight(self) -> list[Any]:
        return self._column("inflight")

    @property
    def outbound(self) -> list[Any]:
        return self._column("outbound")

    @property
    def free_list(self) -> list[Any]:
        return self._column("free_list")

    @property
    def size(self) -> int:
        return len(self.owner)

    def _where(self, column: list[Any], value: Any) -> Pages:
        return Pages(p for p, x in enumerate(column) if x == value)

    def owned_by(self, r: str) -> Pages:
        """The pages request r owns (or holds, in a shared pool)."""
        holders = self._column("holders")
        if holders:
            return Pages(p for p, v in enumerate(holders) if r in v)
        return self._where(self.owner, r)

    def free(self) -> Pages:
        """The pages nobody owns."""
        return self._where(self.owner, "free")

    def holding(self, r: str) -> Pages:
        """The pages whose content is request r's KV."""
        return self._where(self.content, r)

    def in_flight(self, r: str) -> Pages:
        """The pages a transfer of request r is writing into."""
        return self._where(self.inflight, r)

    def sending(self, r: str) -> Pages:
        """The pages a transfer of request r is reading out of."""
        return self._where(self.outbound, r)


class StateView:
    """A state of a trace as a narrative reads it: `s.sent[r]`, `s.d_table[r]` (Pages),
    `s.decode` (a PoolState). Read-only: a narrative describes, it never changes a state."""

    def __init__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name: str) -> Any:
        state = object.__getattribute__(self, "_state")
        if name in state:
            return _narrative_value(state[name])
        if f"{name}.owner" in state or f"{name}.holders" in state:
            return PoolState(name, state)
        raise AttributeError(f"the state has no slot or pool {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a narrative reads the state, it does not change it")


class StepView:
    """The step a narrative describes: its `number` (0 for the initial state), `action`
    (None for the initial state), `args` ({"r": "r1", "n": 3}), `actor`, and `before`, the
    state before it (a StateView; None for the initial state)."""

    def __init__(self, number: int, action: str | None, args: dict[str, Any], actor: str | None,
                 before: StateView | None) -> None:
        self.number, self.action, self.args, self.actor, self.before = number, action, dict(args), actor, before

    def __repr__(self) -> str:
        return f"StepView({self.number}, {self.action!r}, {self.args!r})"


def first_sentence(doc: str) -> str:
    """A docstring's first sentence (of its first paragraph), on one line."""
    text = " ".join(doc.split("\n\n")[0].split())
    m = re.search(r"(?<=[.!?])\s", text)
    return text[:m.start()] if m else text


def narrate(model: Any, trace: Trace) -> list[str | None]:
    """Each step of the trace in the protocol's words: the spec's `describe(s, step)`, else
    the first sentence of the action's docstring (None: nothing to say). A hook that raises
    or returns something other than a string or None is a SpecError at its line."""
    from ..lang.loader import spec_failure

    spec, cls = model.spec, model.spec_cls
    hook = getattr(spec, "describe", None)
    hook = hook if callable(hook) else None
    docs = {decl.name: decl.doc for decl in cls._actions.values()}
    out: list[str | None] = []
    for i, step in enumerate(trace.steps):
        text: Any = None
        if hook is not None:
            before = StateView(trace.steps[i - 1].state) if i else None
            view = StepView(i, step.action, step.args, step.actor, before)
            try:
                text = hook(StateView(step.state), view)
            except Exception as e:
                err = spec_failure(e, cls.source_file(), f"in describe() at step {i} ({step.label()})")
                raise err from None
            if text is not None and not isinstance(text, str):
                raise SpecError(f"describe() returned {type(text).__name__} at step {i} ({step.label()}):"
                                " it returns the step's narrative, a string, or None for the action's docstring",
                                file=cls.source_file())
        if text is None and step.action is not None:
            text = first_sentence(docs.get(step.action) or "") or None
        out.append(" ".join(text.split()) if text else None)
    return out


def _setting(params: dict[str, int], fixes: list[str] | tuple[str, ...]) -> str:
    p = " ".join(f"{k}={v}" for k, v in params.items())
    f = ", ".join(fixes) if fixes else "none"
    return f"parameters {p}; fixes {f}"


def render_check(result: CheckResult, *, spec_label: str, full: bool = False,
                 trace_path: str | None = None) -> str:
    """The whole report of `ownership check`: verdict, coverage, trace (a narrative line per
    step; with `full` the state changes of each step too), reproduce command."""
    model = result.model
    env = dict(model.env)
    for sym in getattr(result, "symbolic", None) or []:
        name = getattr(sym, "name", None)
        if name in env and not getattr(result, "witness", None):
            env[name] = f"{sym.lo}..{sym.hi} (symbolic)"  # type: ignore[assignment]
    setting = _setting(env, model.spec.fixes)
    if model.spec.release:
        setting += f" (release {model.spec.release})"
    cov = result.coverage
    lines = [f"spec {model.spec_cls.__name__} ({spec_label}); {setting}; engine {result.engine}"]
    v = result.verdict
    if v is Verdict.VIOLATED:
        viol = result.violation
        lines.append("")
        lines.append(f"violated: {viol.property}")
        lines.append(f"  {viol.message}")
        if viol.also:
            lines.append(f"  (also violated at this step: {', '.join(viol.also)})")
        lines.append("")
        engine = ENGINES.get(result.engine)  # (None: a result no named engine gave, k-induction's)
        exhaustive = engine is not None and engine.exhaustive
        kind = "Shortest" if exhaustive else "Shrunk"
        loop = result.trace.loop
        n = len(result.trace.steps) - 1
        live = viol.property in model.liveness_checked()
        if loop is None and live:  # a bounded response (leads_to within=N) that came too late
            lines.append(f"Counterexample: a run of {n} steps on which the response comes too late:")
        elif loop is None:
            lines.append(f"{kind} counterexample ({n} step{'' if n == 1 else 's'}):")
        elif loop == n:
            lines.append(f"Counterexample: a behaviour of {n} steps that then stops (no action is enabled at step {n}):")
        else:
            lines.append(f"Counterexample: a lasso of {n} steps, whose steps {loop + 1}..{n} repeat forever:")
        narrative = narrate(model, result.trace)
        told = any(narrative)  # a spec that tells nothing of its steps: their changes say what happened
        lines.append(render_trace(result.trace, narrative=narrative, diffs=full or not told))
        if loop is not None and loop < n:
            lines.append(f"  ... step {n} is back at the state of step {loop}: steps {loop + 1}..{n} again, forever")
        elif loop is not None:
            lines.append(f"  ... and the run stays at step {n} forever")
        if told and not full:
            grids = f"ownership show {trace_path}" if trace_path else "--out FILE, then ownership show FILE"
            lines.append(f"  (the state changes of each step: --full; the page grids: {grids})")
        lines.append("")
        if live and result.engine == "bmc":
            lines.append(f"Explored {cov.describe()} {result.took()}, depth by depth: no run of fewer"
                         f" than {n} steps violates a property, liveness included, so this lasso is a shortest one.")
        elif live and not exhaustive:
            lines.append(f"Fuzzed {cov.describe()} {result.took()} (random runs, then shrunk: a shorter"
                         " counterexample may exist).")
        elif live:
            rest = "the loop is a short one" if loop is not None and loop < n else "the rest of the run is a short one"
            lines.append(f"Explored {cov.describe()} {result.took()}, and the graph they make"
                         " for liveness: no shorter path reaches a state where the property's obligation begins;"
                         f" {rest}, not always the shortest.")
        elif exhaustive:
            assert engine is not None
            lines.append(f"Explored {cov.describe()} {result.took()} ({engine.order}, so no shorter counterexample"
                         " exists).")
        else:
            lines.append(f"Fuzzed {cov.describe()} {result.took()} (random runs, then shrunk: a shorter counterexample may exist).")
    elif v is Verdict.VERIFIED:
        lines.append(f"verified: no violation in {cov.describe()}, {result.took()}")
    elif v is Verdict.BOUNDED:
        lines.append(f"bounded: no violation found; covered {cov.describe()}, {result.took()}")
        hint = ENGINES[result.engine].short_of_complete if result.engine in ENGINES else "raise or drop the limit"
        lines.append(f"  (a bounded pass: {hint} for a complete verdict; --strict exits 3)")
    elif cov.complete:  # safety over every state; the reachable graph (liveness, measures) stopped
        rest = "liveness" if not result.measures_note else "liveness and measures" if result.liveness else "measures"
        lines.append(f"inconclusive: no safety violation in {cov.describe()}, {result.took()};"
                     f" the {rest} below were not finished")
    else:
        lines.append(f"inconclusive: {cov.describe()}, {result.took()}")
    if result.note:
        lines.append(f"  ({result.note})")
    if never := cov.never_enabled_actions():
        lines.append(f"Never enabled in any reachable state: {', '.join(never)} (a guard that never holds at these"
                     " parameters: a step the protocol cannot take, or a mistake in the spec)")
    if (memory := cov.memory()) is not None:
        lines.append(memory)
    notes = []
    if not model.checks_leak:
        notes.append("leak: not checked, the spec defines no finished()")
    if model.only:
        left = sorted(set(model.property_names()) - model.only)
        notes.append(f"these alone, with --only; left out: {', '.join(left) or 'none'}")
    elif model.skip:
        notes.append(f"skipped with --skip: {', '.join(sorted(model.skip))}")
    lines.append(f"Properties checked: {', '.join(model.checked()) or 'no safety property'}" + (f" ({'; '.join(notes)})" if notes else ""))
    for name, how in result.liveness.items():
        lines.append(f"Liveness {name}: {how}")
    if result.liveness:
        lines.append(f"  (assuming {result.fairness})")
    for name, got in result.measures.items():
        lines.append(f"Measure {name}: {got.describe()}")
    if result.measures_note:
        lines.append(f"Measures: {result.measures_note}")
    for name, got in result.sometimes.items():
        if got:
            lines.append(f"Sometimes {name}: reached")
        elif got is None:
            lines.append(f"Sometimes {name}: not reached before the search stopped")
        else:
            lines.append(f"WARNING: sometimes {name} is never reached in any reachable state: the spec may be vacuous")
    if trace_path:
        lines.append(f"Trace written to {trace_path}")
    lines.append(f"Reproduce: {result.reproduce}")
    return "\n".join(lines)


def render_replay(result: ReplayResult, *, trace: Trace, fixes: list[str] | tuple[str, ...]) -> str:
    """The report of `ownership replay`."""
    with_fixes = f" with fixes {', '.join(fixes)}" if fixes else " with no fixes"
    lines = []
    if result.outcome == "violated":
        viol = result.violation
        assert viol is not None
        lines.append(f"still violated{with_fixes}: {viol.property} at step {viol.step}")
        lines.append(f"  {viol.message}")
    elif result.outcome == "blocked":
        lines.append(
            f"no longer violates{with_fixes}: step {result.blocked_step}, {result.blocked_action},"
            " is blocked (its action is not enabled in the replayed state)"
        )
    else:
        lines.append(f"no longer violates{with_fixes}: all {result.steps_run} steps ran without a violation")
    if result.diverged_step is not None:
        lines.append(
            f"  the run differs from the recording from step {result.diverged_step} on"
            f" ({', '.join(result.diverged_vars)})"
        )
    if trace.violation is not None and result.outcome != "violated":
        # (a name from the trace file: kept on its line, so that it cannot forge a line of the report)
        name = trace.violation.property.replace("\r", "\\r").replace("\n", "\\n")
        lines.append(f"  recorded violation: {name} at step {trace.violation.step}")
    return "\n".join(lines)


def render_spec_list(specs: dict[str, str]) -> str:
    """`ownership list`: the shipped specs, a line each."""
    width = max((len(n) for n in specs), default=0)
    return "\n".join(f"{name:<{width}}  {summary}" for name, summary in specs.items())


def render_spec(model: Any, label: str) -> str:
    """`ownership list SPEC`: a spec's parameters, fixes, pools, actions and properties."""
    cls = model.spec_cls
    lines = [f"{cls.__name__} ({label})"]
    doc = (cls.__doc__ or "").strip().splitlines()
    if doc:
        lines.append(f"  {doc[0]}")
    lines.append("")
    lines.append("Parameters (--param NAME=VALUE):")
    for name, p in cls._params.items():
        shown = f"{p.derived!r} (= {model.env[name]})" if p.derived is not None else p.default
        lines.append(f"  {name} = {shown}  {p.help}")
    lines.append("")
    lines.append("Fixes (--fix NAME):")
    for name, fx in cls._fixes.items():
        lines.append(f"  {name}  {fx.help}")
    if not cls._fixes:
        lines.append("  (none)")
    if cls.releases:
        lines.append("")
        lines.append("Releases (--release RELEASE: the fixes that engine release had):")
        for release, names in cls.releases.items():
            lines.append(f"  {release}  {', '.join(names) if names else '(none of the fixes)'}")
    lines.append("")
    lines.append("Pools:")
    for name, info in model.pools.items():
        help_ = cls._pools[name].help
        sized = _sized_by(cls._pools[name])
        lines.append(f"  {name}: {info.size} pages{f' (= {sized})' if sized else ''}, {info.order} order"
                     f"{', warm (pages start with KV of an earlier request)' if info.warm else ''}"
                     + (f"  {help_}" if help_ else ""))
    lines.append("")
    lines.append("Actions:")
    for decl in cls._actions.values():
        args = ", ".join(a for a, _ in decl.args)
        actor = f"[{decl.actor}] " if decl.actor else ""
        fair = f"({decl.fair}ly fair) " if decl.fair else ""
        lines.append(f"  {actor}{decl.name}({args})  {fair}{_first_paragraph(decl.doc)}")
    lines.append("")
    lines.append("Properties:")
    for name, words in PROPERTIES.items():
        if not model.models(name):
            continue  # (crash, free-pinned, count-below-zero: listed where the spec models them)
        if name == LEAK and not model.checks_leak:
            lines.append(f"  {name}  (not checked: the spec defines no finished())")
        else:
            lines.append(f"  {name}  {words.when}")
    for prop in model.invariants:
        lines.append(f"  {prop.name}  (invariant) {_first_paragraph(prop.doc)}")
    for prop in model.sometimes:
        lines.append(f"  {prop.name}  (sometimes) {_first_paragraph(prop.doc)}")
    for prop in model.liveness:
        bound = f", within {model.within[prop.name]} steps" if prop.name in model.within else ""
        lines.append(f"  {prop.name}  ({prop.kind}{bound}) {_first_paragraph(prop.doc)}")
    for name in model.kernel_liveness:
        lines.append(f"  {name}  (kernel liveness) {LIVENESS[name]}")
    if model.measures:
        lines.append("")
        lines.append("Measures (check --measure):")
        for m in model.measures:
            lines.append(f"  {m.name}  {_first_paragraph(m.doc)}")
    return "\n".join(lines)


def _sized_by(decl: Any) -> str | None:
    """The parameter that sizes a pool, when it is one (pool(context): "context")."""
    from ..lang.declare import Param

    return decl.pages.name if isinstance(decl.pages, Param) and decl.pages.name else None


def spec_json(model: Any) -> dict[str, Any]:
    """`ownership list SPEC --json`: what `render_spec` shows, as data (ownership/schemas/list.json)."""
    cls = model.spec_cls
    doc = (cls.__doc__ or "").strip().splitlines()
    invariants = {p.name for p in model.invariants}
    return {
        "spec_class": cls.__name__,
        "summary": doc[0] if doc else "",
        "params": [{"name": n, "default": p.default_at(model.env), "value": model.env[n],
                    "minimum": p.minimum, "help": p.help, "derived": None if p.derived is None else repr(p.derived)}
                   for n, p in cls._params.items()],
        "fixes": [{"name": n, "help": fx.help} for n, fx in cls._fixes.items()],
        "releases": {release: list(names) for release, names in cls.releases.items()},
        "pools": [{"name": n, "pages": info.size, "sized_by": _sized_by(cls._pools[n]), "order": info.order,
                   "warm": info.warm, "shared": info.shared, "counted": info.counted, "owners": list(info.owners),
                   "pins": info.pins, "help": cls._pools[n].help}
                  for n, info in model.pools.items()],
        "actions": [{"name": d.name, "actor": d.actor, "args": [a for a, _ in d.args], "doc": _first_paragraph(d.doc),
                     "fair": d.fair} for d in cls._actions.values()],
        "properties": [{"name": n, "kind": "kernel", "checked": n != LEAK or model.checks_leak, "doc": words.when}
                       for n, words in PROPERTIES.items() if model.models(n)]
        + [{"name": p.name, "kind": "invariant" if p.name in invariants else "sometimes", "checked": True,
            "doc": _first_paragraph(p.doc)} for p in [*model.invariants, *model.sometimes]]
        + [{"name": p.name, "kind": p.kind, "checked": p.name not in model.skip, "doc": _first_paragraph(p.doc),
            "within": model.within.get(p.name)} for p in model.liveness]
        + [{"name": n, "kind": "kernel-liveness", "checked": n not in model.skip, "doc": LIVENESS[n]}
           for n in model.kernel_liveness],
        "measures": [{"name": m.name, "doc": _first_paragraph(m.doc)} for m in model.measures],
    }


def _first_paragraph(doc: str) -> str:
    """A docstring's first paragraph on one line."""
    return " ".join(doc.split("\n\n")[0].split())
