"""Plain-text renderings of check results, traces, replays and spec listings.

Traces number their states, head each with the action that produced it, show only what
changed (or everything with `full`), explain the violation in words, and end with the command
that reproduces the run (after TLC's StatePrinter and Quint's `--seed` hint).
"""

from __future__ import annotations

from typing import Any

from ..kernel import PROPERTIES
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


def render_trace(trace: Trace, *, full: bool = False) -> str:
    """The trace as numbered steps; only the changes of each step unless `full`."""
    lines: list[str] = []
    width = len(str(len(trace.steps) - 1))
    for i, step in enumerate(trace.steps):
        actor = f"[{step.actor}] " if step.actor else ""
        marker = "  <-- violation" if trace.violation and trace.violation.step == i else ""
        lines.append(f"{i:>{width}}  {actor}{step.label()}{marker}")
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


def _setting(params: dict[str, int], fixes: list[str] | tuple[str, ...]) -> str:
    p = " ".join(f"{k}={v}" for k, v in params.items())
    f = ", ".join(fixes) if fixes else "none"
    return f"parameters {p}; fixes {f}"


def render_check(result: CheckResult, *, spec_label: str, full: bool = False,
                 trace_path: str | None = None) -> str:
    """The whole report of `ownership check`: verdict, coverage, trace, reproduce command."""
    model = result.model
    env = dict(model.env)
    for sym in getattr(result, "symbolic", None) or []:
        name = getattr(sym, "name", None)
        if name in env and not getattr(result, "witness", None):
            env[name] = f"{sym.lo}..{sym.hi} (symbolic)"  # type: ignore[assignment]
    setting = _setting(env, model.spec.fixes)
    if model.spec.release:
        setting += f" (version {model.spec.release})"
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
        exhaustive = result.engine in ("explicit", "bmc")
        kind = "Shortest" if exhaustive else "Shrunk"
        lines.append(f"{kind} counterexample ({len(result.trace.steps) - 1} steps):")
        lines.append(render_trace(result.trace, full=full))
        lines.append("")
        if exhaustive:
            order = "depth by depth" if result.engine == "bmc" else "breadth first"
            lines.append(f"Explored {cov.describe()} in {cov.seconds:.2f} s ({order}, so no shorter counterexample exists).")
        else:
            lines.append(f"Fuzzed {cov.describe()} in {cov.seconds:.2f} s (random runs, then shrunk: a shorter counterexample may exist).")
    elif v is Verdict.VERIFIED:
        lines.append(f"verified: no violation in {cov.describe()}, in {cov.seconds:.2f} s")
    elif v is Verdict.BOUNDED:
        lines.append(f"bounded: no violation found; covered {cov.describe()}, in {cov.seconds:.2f} s")
        hint = ("more --runs, or the explicit or bmc engine at small parameters" if result.engine == "fuzz"
                else "raise or drop the limit")
        lines.append(f"  (a bounded pass: {hint} for a complete verdict; --strict exits 3)")
    else:
        lines.append(f"inconclusive: {cov.describe()}, in {cov.seconds:.2f} s")
    notes = []
    if not model.checks_leak:
        notes.append("leak: not checked, the spec defines no finished()")
    if model.skip:
        notes.append(f"skipped with --skip: {', '.join(sorted(model.skip))}")
    lines.append(f"Properties checked: {', '.join(model.checked())}" + (f" ({'; '.join(notes)})" if notes else ""))
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
        lines.append(f"  {name} = {p.default}  {p.help}")
    lines.append("")
    lines.append("Fixes (--fix NAME):")
    for name, fx in cls._fixes.items():
        lines.append(f"  {name}  {fx.help}")
    if not cls._fixes:
        lines.append("  (none)")
    if cls.releases:
        lines.append("")
        lines.append("Versions (--version RELEASE: the fixes that release had):")
        for release, names in cls.releases.items():
            lines.append(f"  {release}  {', '.join(names) if names else '(none of the fixes)'}")
    lines.append("")
    lines.append("Pools:")
    for name, info in model.pools.items():
        help_ = cls._pools[name].help
        lines.append(f"  {name}: {info.size} pages, {info.order} order{', warm (pages start with KV of an earlier request)' if info.warm else ''}" + (f"  {help_}" if help_ else ""))
    lines.append("")
    lines.append("Actions:")
    for decl in cls._actions.values():
        args = ", ".join(a for a, _ in decl.args)
        actor = f"[{decl.actor}] " if decl.actor else ""
        lines.append(f"  {actor}{decl.name}({args})  {_first_paragraph(decl.doc)}")
    lines.append("")
    lines.append("Properties:")
    for name, text in PROPERTIES.items():
        if name == "leak" and not model.checks_leak:
            lines.append(f"  {name}  (not checked: the spec defines no finished())")
        else:
            lines.append(f"  {name}  {text}")
    for prop in model.invariants:
        lines.append(f"  {prop.name}  (invariant) {_first_paragraph(prop.doc)}")
    for prop in model.sometimes:
        lines.append(f"  {prop.name}  (sometimes) {_first_paragraph(prop.doc)}")
    return "\n".join(lines)


def _first_paragraph(doc: str) -> str:
    """A docstring's first paragraph on one line."""
    return " ".join(doc.split("\n\n")[0].split())
