"""The oracle: a plain breadth-first search over the concrete interpreter, the reference.

`explore(model)` visits every reachable state of a model with nothing but
`Concrete.step` and `Concrete.state_flags`, and records, per depth, every property violated
and every spec error raised (file and line). A depth is the length of the shortest run that
reaches the event: a transition from a state first reached at depth d-1 that raises a
kernel flag or a SpecError happens at depth d, and so does an invariant or leak violation (or
a SpecError raised by an invariant or `finished`) in a state first reached at depth d. An
exception other than a SpecError raised by spec code under the reference (a raw
ZeroDivisionError from an invariant, say) counts as the SpecError it should have been, at the
spec's innermost line, and is noted in `raw`.

The search follows only clean runs: a transition that is flagged or raises has no successor,
and a state that violates a property (or raises while it is judged) is not expanded, as no
engine goes past a violation. So `violations` and `errors`, over all depths, are exactly what
any run of any engine can meet; the shallowest depth that has either decides the verdict
(`Oracle.decision`): at equal depth a violation wins over a spec error.

`explore` can also watch lines of the spec (`watch`): the seeded errors that the reference
must raise whenever it runs their line. A watched line that runs in a step that does not raise
a SpecError on that line is recorded in `unraised`.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ownership.errors import SpecError
from ownership.interpret.concrete import Concrete
from ownership.lang.model import Model

#: The oracle gives up (`truncated`) beyond this many states: the test keeps specs small.
MAX_STATES = 3000

Where = tuple[str | None, int | None]


def where(e: SpecError) -> Where:
    """A spec error's location, with the file as an absolute path."""
    return (os.path.abspath(e.file) if e.file else None, e.line)


@dataclass
class Decision:
    """What every engine must answer: the verdict decided at the shallowest event."""

    verdict: str                 # "violated" | "spec-error" | "verified"
    depth: int | None            # the depth of the event (None when verified)
    allowed: set[Any]            # properties (violated) or locations (spec-error) at that depth

    def describe(self) -> str:
        if self.verdict == "verified":
            return "verified"
        shown = ", ".join(sorted(_show(a) for a in self.allowed))
        return f"{self.verdict} at depth {self.depth}: {shown}"


def _show(a: Any) -> str:
    if isinstance(a, tuple):
        return f"{os.path.basename(a[0] or '?')}:{a[1]}"
    return str(a)


@dataclass
class Oracle:
    """Everything the breadth-first search over the concrete interpreter found."""

    states: int = 0                      # reachable states (every one, when nothing happens)
    transitions: int = 0                 # enabled transitions out of clean states
    actions: dict[str, int] = field(default_factory=dict)  # those transitions per action
    deepest: int = 0                     # the deepest depth at which a state is first reached
    violations: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    errors: dict[int, set[Where]] = field(default_factory=lambda: defaultdict(set))
    messages: dict[Where, str] = field(default_factory=dict)
    sometimes: dict[str, bool] = field(default_factory=dict)
    #: the longest execution, in steps, when every execution ends; None when one can go on forever
    longest: int | None = None
    truncated: bool = False
    #: watched lines run without raising a SpecError there: line -> the step that ran it
    unraised: dict[int, str] = field(default_factory=dict)
    #: errors the reference raised as another exception than a SpecError: location -> exception
    raw: dict[Where, str] = field(default_factory=dict)
    #: every clean transition: state -> [(binding index, successor)] (for the liveness oracle)
    graph: dict[tuple[int, ...], list[tuple[int, tuple[int, ...]]]] = field(default_factory=dict)

    @property
    def first(self) -> int | None:
        """The shallowest depth at which a violation or a spec error happens."""
        depths = [d for d, v in self.violations.items() if v] + [d for d, e in self.errors.items() if e]
        return min(depths) if depths else None

    def decision(self) -> Decision:
        d = self.first
        if d is None:
            return Decision("verified", None, set())
        if self.violations.get(d):
            return Decision("violated", d, set(self.violations[d]))
        return Decision("spec-error", d, set(self.errors[d]))

    def ever_violated(self) -> dict[str, int]:
        """Each property violated at some depth, with the shallowest such depth."""
        out: dict[str, int] = {}
        for d in sorted(self.violations):
            for p in self.violations[d]:
                out.setdefault(p, d)
        return out

    def ever_raised(self) -> dict[Where, int]:
        """Each spec error location raised at some depth, with the shallowest such depth."""
        out: dict[Where, int] = {}
        for d in sorted(self.errors):
            for w in self.errors[d]:
                out.setdefault(w, d)
        return out

    def describe(self) -> str:
        text = f"{self.decision().describe()}; {self.states} states, {self.transitions} transitions, deepest {self.deepest}"
        text += f", longest execution {'unbounded' if self.longest is None else self.longest}"
        later = [f"depth {d}: {', '.join(sorted(v))}" for d, v in sorted(self.violations.items()) if v]
        later += [f"depth {d}: error at {', '.join(sorted(_show(w) for w in e))}" for d, e in sorted(self.errors.items()) if e]
        if later:
            text += "; events: " + "; ".join(later)
        return text


class _LineWatch:
    """Records which watched lines of one file run (a sys.settrace tracer, local to that file)."""

    def __init__(self, path: str, lines: set[int]) -> None:
        self.path = os.path.abspath(path)
        self.lines = lines
        self.hit: set[int] = set()

    def tracer(self, frame: Any, event: str, arg: Any) -> Any:
        if os.path.abspath(frame.f_code.co_filename) != self.path:
            return None
        return self.local

    def local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno in self.lines:
            self.hit.add(frame.f_lineno)
        return self.local


def explore(model: Model, *, max_states: int = MAX_STATES, watch: set[int] | None = None,
            lemmas: bool = False) -> Oracle:
    """Breadth-first search of `model` over the concrete interpreter (see the module docstring).
    With `lemmas`, the spec's @lemma properties count as invariants, as `prove` checks them."""
    interp = Concrete(model)
    lemma_decls = [p for p in model.spec_cls._properties.values() if p.kind == "lemma"] if lemmas else []
    out = Oracle()
    names = [p.name for p in model.sometimes]
    out.sometimes = {n: False for n in names}
    watcher = _LineWatch(model.spec_cls.source_file(), set(watch)) if watch else None
    edges: dict[tuple[int, ...], list[tuple[int, ...]]] = {}

    def judge(state: tuple[int, ...], depth: int) -> bool:
        """Record the state's violations or error; True when it is clean (to be expanded)."""
        try:
            flags = [f.prop for f in interp.state_flags(state)]
            if not flags and lemma_decls:
                view = interp.view
                view.reset(state)
                flags = [p.name for p in lemma_decls if not _truth(p.fn(model.spec, view))]
            if not flags and names:
                for n in interp.sometimes_hits(state, names):
                    out.sometimes[n] = True
        except Exception as e:
            error = _as_spec_error(e, model, out, "while judging a state")
            out.errors[depth].add(where(error))
            out.messages.setdefault(where(error), str(error))
            return False
        if flags:
            out.violations[depth].update(flags)
            return False
        return True

    seen = {model.initial}
    frontier = [model.initial] if judge(model.initial, 0) else []
    depth = 0
    while frontier:
        nxt: list[tuple[int, ...]] = []
        for state in frontier:
            succ = edges.setdefault(state, [])
            labelled = out.graph.setdefault(state, [])
            for b_index, binding in enumerate(model.bindings):
                result = _step(interp, state, binding, watcher, out, f"{binding.label()} at depth {depth + 1}")
                if isinstance(result, SpecError):
                    out.errors[depth + 1].add(where(result))
                    out.messages.setdefault(where(result), str(result))
                    continue
                if result is None:
                    continue
                out.transitions += 1
                out.actions[binding.action.name] = out.actions.get(binding.action.name, 0) + 1
                if result.flags:
                    out.violations[depth + 1].update(f.prop for f in result.flags)
                    continue
                succ.append(result.state)
                labelled.append((b_index, result.state))
                if result.state in seen:
                    continue
                seen.add(result.state)
                out.deepest = depth + 1
                if judge(result.state, depth + 1):
                    nxt.append(result.state)
            if len(seen) > max_states:
                out.truncated = True
                break
        if out.truncated:
            break
        frontier = nxt
        depth += 1
    out.states = len(seen)
    out.violations = {d: v for d, v in out.violations.items() if v}
    out.errors = {d: e for d, e in out.errors.items() if e}
    out.longest = None if out.truncated else _longest(model.initial, edges)
    return out


def _step(interp: Concrete, state: tuple[int, ...], binding: Any, watcher: _LineWatch | None,
          out: Oracle, label: str) -> Any:
    """One concrete step: its Outcome, None (disabled) or the SpecError it raised."""
    if watcher is None:
        try:
            return interp.step(state, binding)
        except Exception as e:
            return _as_spec_error(e, interp.model, out, f"in action {binding.label()}")
    watcher.hit.clear()
    previous = sys.gettrace()
    sys.settrace(watcher.tracer)
    try:
        result: Any = interp.step(state, binding)
    except Exception as e:
        result = _as_spec_error(e, interp.model, out, f"in action {binding.label()}")
    finally:
        sys.settrace(previous)
    raised_at = result.line if isinstance(result, SpecError) else None
    for line in watcher.hit:
        if line != raised_at:
            out.unraised.setdefault(line, label)
    return result


def _number(value: Any) -> int:
    """A measure's result as a Python int."""
    from ownership.interpret import concrete_values as concrete

    return int(concrete._v(value))


def _truth(value: Any) -> bool:
    """A property's result as a Python bool (a concrete condition or a Python constant)."""
    from ownership.interpret import concrete_values as concrete

    return bool(concrete._v(value))


def _as_spec_error(e: Exception, model: Model, out: Oracle, doing: str) -> SpecError:
    """A SpecError as is; any other exception raised by spec code under the reference (which
    should have been a SpecError: issue 11) as the SpecError at the spec's innermost line,
    noted in `out.raw`."""
    if isinstance(e, SpecError):
        return e
    from ownership.lang.loader import spec_failure

    error = spec_failure(e, model.spec_cls.source_file(), doing)
    out.raw.setdefault(where(error), f"{type(e).__name__}: {e}")
    return error


def _longest(start: tuple[int, ...], edges: dict[tuple[int, ...], list[tuple[int, ...]]]) -> int | None:
    """The longest path from `start` in the graph of clean transitions; None if it has a cycle."""
    longest: dict[tuple[int, ...], int] = {}
    on_path: set[tuple[int, ...]] = set()
    stack: list[tuple[tuple[int, ...], int]] = [(start, 0)]
    while stack:
        node, i = stack.pop()
        if i == 0:
            on_path.add(node)
        kids = edges.get(node, [])
        if i < len(kids):
            stack.append((node, i + 1))
            kid = kids[i]
            if kid in on_path:
                return None
            if kid not in longest:
                stack.append((kid, 0))
            continue
        on_path.discard(node)
        longest[node] = max((longest[k] + 1 for k in kids), default=0)
    return longest[start]


__all__ = ["MAX_STATES", "Decision", "Oracle", "explore", "where"]


# --------------------------------------------------------------------------- liveness

#: The liveness oracle tries every set of not-q states: it gives up (None) beyond this many.
LIVENESS_MAX = 11


def liveness(model: Model, oracle: Oracle) -> dict[str, bool | None]:
    """Each liveness property of the spec: violated on some fair behaviour (True), on none
    (False), or too large to decide here (None). Only for a spec whose whole graph is clean
    (the oracle's decision is verified), so that `oracle.graph` is every reachable state.

    Independent of ownership.engines.liveness: p and q are evaluated through the spec's
    methods and the shown state (not the kernel's slot offsets), and a fair cycle is found by
    trying every set S of reachable not-q states: S is strongly connected, has an edge inside,
    and every weakly fair binding enabled in all of S and every strongly fair binding enabled
    somewhere in S has an edge inside S; a not-q state with no successor is a dead end."""
    interp = Concrete(model)
    view = interp.view
    states = list(oracle.graph)
    for succ in oracle.graph.values():
        for _, t in succ:
            if t not in oracle.graph:
                states.append(t)
                oracle.graph[t] = []
    fair = {b: binding.action.fair for b, binding in enumerate(model.bindings) if binding.action.fair}
    out: dict[str, bool | None] = {}
    checked = model.liveness_checked()
    for prop in model.liveness:
        if prop.name not in checked:
            continue
        verdicts = []
        for r in (range(1, model.requests + 1) if prop.per_request else (None,)):
            args = () if r is None else (r,)
            ps, qs = {}, {}
            for st in states:
                view.reset(st)
                got = prop.fn(model.spec, view, *args)
                if prop.kind == "eventually":
                    ps[st], qs[st] = st == model.initial, _truth(got)
                else:
                    ps[st], qs[st] = _truth(got[0]), _truth(got[1])
            if prop.name in model.within:
                verdicts.append(_late(oracle.graph, ps, qs, model.within[prop.name]))
            else:
                verdicts.append(_violated(oracle.graph, model.initial, ps, qs, fair))
        out[prop.name] = None if None in verdicts else any(verdicts)
    for name in model.kernel_liveness:
        if name not in checked:
            continue
        verdicts = []
        field_name, idle = ("owner", "free") if name == "eventually-released" else ("inflight", "none")
        shown = {st: model.show(st) for st in states}
        for pool, info in model.pools.items():
            key = f"{pool}.{field_name}" if f"{pool}.{field_name}" in shown[model.initial] else f"{pool}.holders"
            for page in range(info.size):
                ps = {st: shown[st][key][page] not in (idle, frozenset(), ()) for st in states}  # (counted: a tuple)
                qs = {st: not ps[st] for st in states}
                verdicts.append(_violated(oracle.graph, model.initial, ps, qs, fair))
        out[name] = None if None in verdicts else any(verdicts)
    return out


def _violated(graph: dict[Any, list[tuple[int, Any]]], initial: Any, p: dict[Any, bool], q: dict[Any, bool],
              fair: dict[int, str]) -> bool | None:
    notq = {s for s in graph if not q[s]}
    if len(notq) > LIVENESS_MAX:
        return None
    enabled = {s: {b for b, _ in graph[s]} for s in graph}

    def reach(src: set[Any], inside: set[Any]) -> set[Any]:
        seen, todo = set(src), list(src)
        while todo:
            x = todo.pop()
            for _, t in graph[x]:
                if t in inside and t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen

    targets = {s for s in notq if not graph[s]}
    members = sorted(notq, key=repr)
    for size in range(1, len(members) + 1):
        for subset in itertools.combinations(members, size):
            group = set(subset)
            edges = {b for x in group for b, t in graph[x] if t in group}
            if not edges or any(reach({x}, group) != group for x in group):
                continue
            if all(b in edges for b, f in fair.items()
                   if (f == "weak" and all(b in enabled[x] for x in group))
                   or (f == "strong" and any(b in enabled[x] for x in group))):
                targets |= group
    return any(p[s] and not q[s] and reach({s}, notq) & targets for s in graph)


def _late(graph: dict[Any, list[tuple[int, Any]]], p: dict[Any, bool], q: dict[Any, bool], bound: int) -> bool:
    """leads_to(within=bound) fails: from a p-state, some run has bound + 1 states without q,
    or stops (a state with no successor) before with q still false; every path is tried."""
    def late(s: Any, left: int) -> bool:
        if q[s]:
            return False
        if left == 0 or not graph[s]:
            return True
        return any(late(t, left - 1) for _, t in graph[s])

    return any(p[s] and late(s, bound) for s in graph)


def measures(model: Model, oracle: Oracle) -> dict[str, tuple[int, int | None]]:
    """Each @measure: its largest value over the reachable states, and the most consecutive
    states of a run where it is above 0 (None: without end), by trying every path from every
    state (left out where more than LIVENESS_MAX states are above 0)."""
    interp = Concrete(model)
    view = interp.view
    out: dict[str, tuple[int, int | None]] = {}
    states = list(oracle.graph)
    for m in model.measures:
        value = {}
        for st in states:
            view.reset(st)
            value[st] = _number(m.fn(model.spec, view))
        positive = {st for st in states if value[st] > 0}
        if len(positive) > LIVENESS_MAX:
            continue

        def longest(st: Any, path: frozenset[Any], positive: set[Any] = positive) -> int | None:
            """The most positive states of a run from st (st included); None: without end."""
            if not oracle.graph[st]:
                return None  # the run stays here forever, above 0
            best = 1
            for _, t in oracle.graph[st]:
                if t not in positive:
                    continue
                if t in path:
                    return None
                got = longest(t, path | {t}, positive)
                if got is None:
                    return None
                best = max(best, 1 + got)
            return best

        stretch: int | None = 0
        for st in positive:
            got = longest(st, frozenset({st}))
            stretch = None if got is None or stretch is None else max(stretch, got)
        out[m.name] = (max(value.values()), stretch)
    return out
