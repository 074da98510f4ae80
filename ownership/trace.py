"""Traces: a counterexample as data, its ITF JSON form, and replay against a spec.

A Trace is the initial state, then each step's action with its arguments and the state after
it, plus the violation (property, step, message, requests, pages). States are stored as named
values (`Model.show`), so a trace is rendered and exported without the spec, and read back
without executing anything: `read_itf` only parses JSON. `replay` re-executes a trace's
actions on a Model, which answers "does this fix kill this trace?".

ITF (the Informal Trace Format of Apalache and Quint): docs/trace-format.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import TraceFormatError
from .lang.model import Binding, Model

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
FORMAT_VERSION = 1


@dataclass
class Violation:
    """A property that fails at a step, with the requests and pages involved."""

    property: str
    step: int
    message: str
    requests: list[str] = field(default_factory=list)
    pages: list[tuple[str, int]] = field(default_factory=list)  # (pool, page)
    also: list[str] = field(default_factory=list)  # other properties violated at the same step

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "step": self.step,
            "message": self.message,
            "requests": self.requests,
            "pages": [{"pool": pool, "page": p} for pool, p in self.pages],
            "also": self.also,
        }

    @staticmethod
    def from_json(d: Any) -> Violation:
        try:
            return Violation(
                property=str(d["property"]),
                step=int(d["step"]),
                message=str(d["message"]),
                requests=[str(r) for r in d.get("requests", [])],
                pages=[(str(x["pool"]), int(x["page"])) for x in d.get("pages", [])],
                also=[str(a) for a in d.get("also", [])],
            )
        except (KeyError, TypeError, ValueError) as e:
            raise TraceFormatError(f"the trace's violation record is malformed ({e!r})") from None


@dataclass
class Step:
    """One state of a trace and the action that produced it (None for the initial state)."""

    action: str | None
    args: dict[str, Any]
    state: dict[str, Any]
    actor: str | None = None

    def label(self) -> str:
        if self.action is None:
            return "initial state"
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.action}({inner})"


@dataclass
class Trace:
    """A run of a spec: steps[0] is the initial state; `violation` says what failed, if anything."""

    steps: list[Step]
    violation: Violation | None = None
    spec: str = ""              # how to name the spec again: a shipped name or a path
    spec_class: str = ""
    params: dict[str, int] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    version: str | None = None  # the engine release whose fixes were on, if one was named
    engine: str = ""
    reproduce: str = ""
    properties: list[str] = field(default_factory=list)  # the properties that were checked
    foreign: bool = False       # read from an ITF file without our annotations

    @property
    def vars(self) -> list[str]:
        return list(self.steps[0].state) if self.steps else []


# --------------------------------------------------------------------------- building


def build_trace(model: Model, states: list[tuple[int, ...]], bindings: list[Binding],
                flags: list[Any], *, engine: str) -> Trace:
    """A Trace from a path of concrete states and the flags raised at its last step."""
    steps = [Step(None, {}, model.show(states[0]))]
    for st, b in zip(states[1:], bindings):
        steps.append(Step(b.action.name, dict(b.shown), model.show(st), b.action.actor))
    spec_cls = model.spec_cls
    trace = Trace(
        steps=steps,
        spec_class=spec_cls.__name__,
        params=dict(model.env),
        fixes=list(model.spec.fixes),
        engine=engine,
        properties=model.checked(),
    )
    if flags:
        trace.violation = explain(model, trace, flags, len(states) - 1)
    return trace


def explain(model: Model, trace: Trace, flags: list[Any], step: int) -> Violation:
    """Turn the flags raised at `step` into a Violation with a message in plain words."""
    from .kernel import PROPERTIES

    order = list(PROPERTIES) + [p.name for p in model.invariants]
    props = sorted({f.prop for f in flags}, key=lambda p: order.index(p) if p in order else len(order))
    head = props[0]
    mine = [f for f in flags if f.prop == head]
    name = model.request_name
    involved = {name(f.request) for f in mine if f.request}
    for f in mine:
        if f.pool is None or not f.other:
            continue
        if head in ("read-unowned", "write-unowned", "double-free"):
            involved |= set(_holders(model, f.pool, f.other))
        elif head == "free-in-flight" or (head == "stale-read" and model.pools[f.pool].keys is None):
            involved.add(name(f.other))
    requests = sorted(involved)
    pages = sorted({(f.pool, f.page) for f in mine if f.pool is not None})
    msg = _message(model, trace, head, mine, step)
    return Violation(head, step, msg, requests, pages, also=props[1:])


def _holders(model: Model, pool: str, v: int) -> list[str]:
    """The requests in an owner value (a request id, or a set of holders in a shared pool)."""
    if model.pools[pool].shared:
        return [f"r{r}" for r in range(1, model.requests + 1) if v >> (r - 1) & 1]
    return [model.request_name(v)] if v else []


def _holder_text(model: Model, pool: str, v: int) -> str:
    names = _holders(model, pool, v)
    if not names:
        return "free"
    return ("held by " if model.pools[pool].shared else "owned by ") + ", ".join(names)


def _pages_text(ps: list[int]) -> str:
    return ("page " if len(ps) == 1 else "pages ") + ", ".join(map(str, ps))


def _written_at(trace: Trace, pool: str, page: int, before: int) -> int | None:
    """The step (< before) at which the page's content last changed, None if never."""
    var = f"{pool}.content"
    value = trace.steps[before - 1].state[var][page] if before >= 1 else None
    for i in range(before - 1, 0, -1):
        if trace.steps[i - 1].state[var][page] != value:
            return i
    return None


def _message(model: Model, trace: Trace, prop: str, flags: list[Any], step: int) -> str:
    """The violation in one sentence, led by where it happened."""
    name = model.request_name
    at = f"step {step}, {trace.steps[step].label()}: " if step else "in the initial state: "
    pool = flags[0].pool
    actor = name(flags[0].request) if flags[0].request else ""
    if prop == "stale-read":
        by_content: dict[int, list[int]] = defaultdict(list)
        for f in flags:
            by_content[f.other].append(f.page)
        parts = []
        leak = False
        info = model.pools[pool]
        for content, ps in sorted(by_content.items()):
            ps = sorted(ps)
            if content == 0:
                parts.append(f"{_pages_text(ps)} never written for anyone (garbage)")
            elif content == info.earlier:
                leak = True
                whose = "KV from before the trace began (k0)" if info.keys is not None else \
                    "KV written for an earlier request (r0, before the trace began)"
                parts.append(f"{_pages_text(ps)} holding {whose}")
            elif info.keys is not None:
                leak = True
                parts.append(f"{_pages_text(ps)} holding KV of key {info.content_name(content)}")
            else:
                leak = True
                whens = sorted({w for p in ps if (w := _written_at(trace, pool, p, step)) is not None})
                when = f" at step {', '.join(map(str, whens))}" if whens else ""
                parts.append(f"{_pages_text(ps)} holding KV written for request {name(content)}{when}")
        kind = "a cross-request leak" if leak else "it attends over data never written for it"
        expected = actor
        if info.keys is not None and flags[0].expected is not None:
            expected = f"key {info.content_name(flags[0].expected)} (what {actor} expects)"
        return f"{at}request {actor} read {pool} " + "; ".join(parts) + f", not for {expected}: {kind}."
    if prop in ("read-unowned", "write-unowned"):
        verb = "read" if prop == "read-unowned" else "wrote"
        parts = [f"page {f.page} ({_holder_text(model, pool, f.other)})" for f in sorted(flags, key=lambda f: f.page)]
        extra = ""
        if prop == "write-unowned":
            others = sorted({h for f in flags for h in _holders(model, pool, f.other) if h != actor})
            extra = (f": it was freed and reused meanwhile, so the KV of {', '.join(others)} is overwritten"
                     if others else ": it was freed meanwhile, and the next owner's KV will be overwritten")
        own = "hold alone" if model.pools[pool].shared and prop == "write-unowned" else "own"
        return f"{at}request {actor} {verb} {pool} {', '.join(parts)}, which it does not {own}{extra}."
    if prop == "double-free":
        parts = [f"page {f.page} ({'already free' if f.other == 0 else _holder_text(model, pool, f.other)})"
                 for f in sorted(flags, key=lambda f: f.page)]
        return f"{at}request {actor} freed {pool} {', '.join(parts)}: the page can end up with two owners."
    if prop == "free-in-flight":
        ps = sorted(f.page for f in flags)
        xfer = ", ".join(sorted({name(f.other) for f in flags}))
        return (f"{at}request {actor} freed {pool} {_pages_text(ps)} while a transfer of {xfer} into or out"
                " of it was still in flight: the write can land after the page is reused.")
    if prop == "leak":
        by_req: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for f in flags:
            by_req[f.request].append((f.pool, f.page))
        parts = [f"{name(r)} still owns " + ", ".join(f"{pl} page {p}" for pl, p in sorted(ps))
                 for r, ps in sorted(by_req.items())]
        return f"{at}a finished request keeps pages that never return to the pool: {'; '.join(parts)}."
    doc = " ".join(next((p.doc for p in model.invariants if p.name == prop), "").split("\n\n")[0].split())
    return f"{at}invariant {prop} does not hold" + (f": {doc}" if doc else ".")


# --------------------------------------------------------------------------- ITF


def _to_itf(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, frozenset | set):
        return {"#set": [_to_itf(x) for x in sorted(v)]}
    if isinstance(v, dict):
        return {"#map": [[_to_itf(k), _to_itf(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return [_to_itf(x) for x in v]
    if isinstance(v, tuple):
        return {"#tup": [_to_itf(x) for x in v]}
    raise TypeError(f"cannot write {v!r} to ITF")


def _from_itf(v: Any, where: str) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        raise TraceFormatError(f"{where}: {v!r} is not an integer; ITF integers are {{\"#bigint\": \"...\"}}")
    if isinstance(v, list):
        return [_from_itf(x, where) for x in v]
    if isinstance(v, dict):
        if "#bigint" in v:
            try:
                return int(v["#bigint"])
            except (TypeError, ValueError):
                raise TraceFormatError(f"{where}: {v!r} is not an integer") from None
        if "#set" in v:
            items = _from_itf(v["#set"], where)
            try:
                return frozenset(items)
            except TypeError:
                return tuple(items)
        if "#tup" in v:
            return tuple(_from_itf(v["#tup"], where))
        if "#map" in v:
            pairs = v["#map"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise TraceFormatError(f"{where}: a #map must be a list of [key, value] pairs")
            out = {}
            for k, x in pairs:
                key = _from_itf(k, where)
                try:
                    out[key] = _from_itf(x, where)
                except TypeError:
                    raise TraceFormatError(f"{where}: map key {k!r} cannot be a key") from None
            return out
        if "#unserializable" in v:
            return f"<unserializable {v['#unserializable']!s}>"
        return {str(k): _from_itf(x, where) for k, x in v.items()}
    raise TraceFormatError(f"{where}: unexpected JSON value {v!r}")


def to_itf(trace: Trace) -> dict[str, Any]:
    """The trace as an ITF document (a JSON-serialisable dict)."""
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION,
        "source": trace.spec,
        "description": f"Created by ownership ({trace.engine} engine)",
        "ownership": {
            "version": FORMAT_VERSION,
            "spec": trace.spec,
            "spec_class": trace.spec_class,
            "params": trace.params,
            "fixes": trace.fixes,
            "release": trace.version,
            "engine": trace.engine,
            "reproduce": trace.reproduce,
            "properties": trace.properties,
            "violation": trace.violation.to_json() if trace.violation else None,
            "actors": [s.actor for s in trace.steps],
        },
    }
    variables = trace.vars
    states = []
    for i, step in enumerate(trace.steps):
        st: dict[str, Any] = {"#meta": {"index": i}}
        st["mbt::actionTaken"] = step.action or "init"
        st["mbt::nondetPicks"] = {k: _to_itf(v) for k, v in step.args.items()}
        for var in variables:
            st[var] = _to_itf(step.state[var])
        states.append(st)
    return {"#meta": meta, "vars": ["mbt::actionTaken", "mbt::nondetPicks", *variables], "states": states}


def write_itf(trace: Trace, path: str | Path) -> None:
    """Write the trace as ITF JSON."""
    Path(path).write_text(json.dumps(to_itf(trace), indent=1) + "\n", encoding="utf-8")


def read_itf(path: str | Path) -> Trace:
    """Read an ITF JSON trace (ours or another tool's). Parses JSON only; executes nothing."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"cannot read trace file {path}: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    return from_itf(doc, str(path))


def from_itf(doc: Any, where: str = "trace") -> Trace:
    """A Trace from a parsed ITF document."""
    if not isinstance(doc, dict) or not isinstance(doc.get("states"), list) or not doc["states"]:
        raise TraceFormatError(f"{where}: not an ITF trace: expected an object with a non-empty \"states\" list")
    variables = doc.get("vars")
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise TraceFormatError(f"{where}: not an ITF trace: \"vars\" must be a list of variable names")
    meta: dict[str, Any] = doc["#meta"] if isinstance(doc.get("#meta"), dict) else {}
    ours: dict[str, Any] | None = meta["ownership"] if isinstance(meta.get("ownership"), dict) else None
    plain_vars = [v for v in variables if not v.startswith("mbt::")]
    actors = ours.get("actors", []) if ours else []
    steps = []
    for i, st in enumerate(doc["states"]):
        if not isinstance(st, dict):
            raise TraceFormatError(f"{where}: state {i} is not an object")
        missing = [v for v in plain_vars if v not in st]
        if missing:
            raise TraceFormatError(f"{where}: state {i} lacks variable(s) {', '.join(missing)}")
        state = {v: _from_itf(st[v], f"{where}: state {i}, {v}") for v in plain_vars}
        action = st.get("mbt::actionTaken")
        picks = st.get("mbt::nondetPicks", {})
        if action is not None and not isinstance(action, str):
            raise TraceFormatError(f"{where}: state {i}: mbt::actionTaken must be a string")
        if not isinstance(picks, dict):
            raise TraceFormatError(f"{where}: state {i}: mbt::nondetPicks must be an object")
        args = {str(k): _from_itf(v, f"{where}: state {i}, argument {k}") for k, v in picks.items()}
        is_init = i == 0 and action in (None, "init", "")
        actor = actors[i] if i < len(actors) and isinstance(actors[i], str) else None
        steps.append(Step(None if is_init else action, {} if is_init else args, state, actor))
    trace = Trace(steps=steps, foreign=ours is None)
    if ours is not None:
        params = ours.get("params", {})
        fixes = ours.get("fixes", [])
        if not isinstance(params, dict) or not all(isinstance(v, int) for v in params.values()):
            raise TraceFormatError(f"{where}: #meta.ownership.params must map names to integers")
        if not isinstance(fixes, list) or not all(isinstance(f, str) for f in fixes):
            raise TraceFormatError(f"{where}: #meta.ownership.fixes must be a list of names")
        trace.spec = str(ours.get("spec", ""))
        trace.spec_class = str(ours.get("spec_class", ""))
        trace.params = {str(k): v for k, v in params.items()}
        trace.fixes = list(fixes)
        release = ours.get("release")
        trace.version = str(release) if release is not None else None
        trace.engine = str(ours.get("engine", ""))
        trace.reproduce = str(ours.get("reproduce", ""))
        props = ours.get("properties", [])
        if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
            raise TraceFormatError(f"{where}: #meta.ownership.properties must be a list of names")
        trace.properties = list(props)
        if ours.get("violation"):
            trace.violation = Violation.from_json(ours["violation"])
    return trace


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    """What re-executing a trace on a Model showed."""

    outcome: str                     # "violated" | "blocked" | "passed"
    steps_run: int
    violation: Violation | None = None
    blocked_step: int | None = None  # the step whose action is not enabled any more
    blocked_action: str | None = None
    diverged_step: int | None = None # the first step whose state differs from the recording
    diverged_vars: list[str] = field(default_factory=list)
    trace: Trace | None = None       # the replayed run, as far as it went


def replay(trace: Trace, model: Model) -> ReplayResult:
    """Re-execute the trace's actions from its initial state on `model`."""
    from .interpret.concrete import Concrete

    if trace.foreign:
        raise TraceFormatError("this ITF trace was not written by ownership (no #meta.ownership): it has no actions to replay")
    try:
        state = model.parse(trace.steps[0].state)
    except ValueError as e:
        raise TraceFormatError(f"the trace's initial state does not fit spec {model.spec_cls.__name__}: {e}") from None
    interp = Concrete(model)
    by_label = {(b.action.name, tuple(v for _, v in b.shown)): b for b in model.bindings}
    states = [state]
    bindings: list[Binding] = []
    diverged: tuple[int, list[str]] | None = None

    def result(outcome: str, flags: list[Any] | None = None, **kw: Any) -> ReplayResult:
        run = build_trace(model, states, bindings, flags or [], engine="replay")
        return ReplayResult(outcome, len(bindings), violation=run.violation, trace=run,
                            diverged_step=diverged[0] if diverged else None,
                            diverged_vars=diverged[1] if diverged else [], **kw)

    flags = interp.state_flags(state)
    if flags:
        return result("violated", flags)
    for i, step in enumerate(trace.steps[1:], start=1):
        key = (step.action, tuple(step.args.values()))
        binding = by_label.get(key)  # type: ignore[arg-type]
        if binding is None:
            raise TraceFormatError(
                f"step {i}: action {step.label()} is not an action of spec {model.spec_cls.__name__}"
                " with these arguments"
            )
        out = interp.step(states[-1], binding)
        if out is None:
            return result("blocked", blocked_step=i, blocked_action=step.label())
        states.append(out.state)
        bindings.append(binding)
        if diverged is None:
            shown = model.show(out.state)
            differ = [v for v in shown if v in step.state and shown[v] != step.state[v]]
            if differ:
                diverged = (i, differ)
        flags = out.flags or interp.state_flags(out.state)
        if flags:
            return result("violated", flags)
    return result("passed")
