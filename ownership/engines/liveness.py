"""Liveness on the explicit engine: fair cycles and dead ends of the reachable state graph.

A behaviour of a spec is a run from its initial state that goes on forever, or stops in a
state where no action is enabled and stays there (a dead end stutters forever; no other
state may stutter: something enabled always happens, as in SPIN). Fairness, declared on
actions (`@action(fair=True)` weak, `fair="strong"`), holds for each binding (the action at
given arguments): weak, a binding enabled in every state of a cycle is taken on it; strong,
a binding enabled somewhere on a cycle is taken on it.

A property `leads_to(p, q)` fails when some reachable state has p and not q, and from it a
fair behaviour runs on with q false forever; `eventually(q)` is `leads_to` from the initial
state. Such a behaviour ends in a dead end of the not-q states, or in a cycle of them that
can be run fairly: a strongly connected component in which every weakly fair binding
enabled everywhere has an edge inside, and every strongly fair binding enabled somewhere
has an edge inside (where one has not, the states enabling it are removed and the rest is
decomposed again, as Emerson and Lei's algorithm does). The counterexample is a lasso: the
shortest path to the earliest such p-state, the shortest path on to the component, and a
cycle through it that takes (or sees disabled) every fair binding the cycle needs.

The graph is built breadth first after the safety search has covered every reachable state,
by ownership.engines.reachable (the batch interpreter's successors where it runs the spec, else
the concrete interpreter's: the same graph, state for state). Its state count must
equal the safety search's, or ownership has a bug (InternalError). Nothing here prints.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from ..errors import InternalError, SpecError
from ..interpret.concrete import Concrete
from ..interpret.concrete_values import _v
from ..lang import sorts
from ..lang.model import Binding, Model
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import Trace, Violation, build_trace
from . import reachable
from .reachable import Graph


@dataclass
class Instance:
    """One liveness obligation: a property, for one request or one page where it is per-thing."""

    name: str
    kind: str                    # "eventually" | "leads-to"
    p: list[bool]                # per state: the trigger (eventually: the initial state only)
    q: list[bool]                # per state: the goal
    request: int | None = None
    page: tuple[str, int] | None = None
    text_p: str = ""
    text_q: str = ""


@dataclass
class Lasso:
    """A counterexample to an instance: the states of the run, where its loop starts, and
    the step at which the obligation began (its trigger)."""

    states: list[int]
    bindings: list[int]
    loop: int | None   # index into states: the last state equals states[loop] (== last: a dead end);
                       # None: a finite run (a bounded response that came too late)
    trigger: int       # index into states


def instances(model: Model, interp: Concrete, graph: Graph) -> list[Instance]:
    """The liveness obligations of `model` that are checked, evaluated in every state."""
    out: list[Instance] = []
    checked = set(model.liveness_checked())
    n = len(graph.states)
    view = interp.view
    for prop in model.liveness:
        if prop.name not in checked:
            continue
        for r in (range(1, model.requests + 1) if prop.per_request else (None,)):
            args = () if r is None else (r,)
            ps, qs = [], []
            for state in graph.states:
                view.reset(state)
                p, q = _evaluate(interp, prop, args)
                ps.append(p)
                qs.append(q)
            if prop.kind == "eventually":
                ps = [i == 0 for i in range(n)]
            out.append(Instance(prop.name, prop.kind, ps, qs, request=r))
    for ob in model.kernel_obligations():
        held = [st[ob.at] != 0 for st in graph.states]
        out.append(Instance(ob.name, "leads-to", held, [not h for h in held], page=(ob.pool, ob.page),
                            text_p=ob.text_p, text_q=ob.text_q))
    return out


def _evaluate(interp: Concrete, prop: Any, args: tuple[int, ...]) -> tuple[bool, bool]:
    """(p, q) of a liveness property in the view's current state (p is True for eventually)."""
    what = prop.what(args)
    p, q = interp._run(lambda: interp.view._liveness(prop, what, args), f"in {what}")
    return bool(_v(p)), bool(_v(q))


def find_lasso(graph: Graph, inst: Instance, fair: dict[int, str]) -> Lasso | None:
    """A fair behaviour on which `inst` fails, as a lasso; None when it holds on every one."""
    bad = [not q for q in inst.q]
    h = nx.DiGraph()
    h.add_nodes_from(i for i, b in enumerate(bad) if b)
    h.add_edges_from((i, j) for i in h.nodes for _, j in graph.succ[i] if bad[j])
    enabled = [{b for b, _ in out} for out in graph.succ]
    accepting: dict[int, set[int] | None] = {}   # state -> its fair component (None: a dead end)
    for c in _fair_components(h, set(h.nodes), graph, fair, enabled):
        for i in c:
            accepting[i] = c
    for i in h.nodes:
        if not graph.succ[i]:
            accepting[i] = None
    if not accepting:
        return None
    # the not-q states from which a fair not-q behaviour goes on: backward reach from them
    can = set(accepting)
    todo = deque(accepting)
    while todo:
        j = todo.popleft()
        for i in h.predecessors(j):
            if i not in can:
                can.add(i)
                todo.append(i)
    triggers = [i for i in range(len(graph.states)) if inst.p[i] and i in can]
    if not triggers:
        return None
    depth = graph.depths()
    trigger = min(triggers, key=lambda i: (depth[i], i))
    prefix = graph.path(trigger)
    on = _bfs(h, trigger, lambda i: i in accepting, allowed=None)
    states = prefix + on[1:]
    end = states[-1]
    component = accepting[end]
    bindings = [_edge(graph, a, b) for a, b in zip(states, states[1:])]
    loop = len(states) - 1
    if component is not None:  # else a dead end: the run stops there, q false forever
        cycle, via = _cycle(graph, component, end, fair, enabled)
        states = states + cycle[1:]
        bindings = bindings + via
    return Lasso(states, bindings, loop, len(prefix) - 1)


def _fair_components(h: nx.DiGraph, nodes: set[int], graph: Graph, fair: dict[int, str],
                     enabled: list[set[int]]) -> Iterable[set[int]]:
    """The strongly connected parts of h[nodes] on which a cycle can run fairly."""
    work = [set(c) for c in nx.strongly_connected_components(h.subgraph(nodes))]
    while work:
        c = work.pop()
        if len(c) == 1:
            (i,) = c
            if not h.has_edge(i, i):
                continue  # no cycle here
        inside = {b for i in c for b, j in graph.succ[i] if j in c}
        some: set[int] = set()
        every: set[int] | None = None
        for i in c:
            mine = {b for b in enabled[i] if b in fair}
            some |= mine
            every = mine if every is None else every & mine
        strong = [b for b in some if fair[b] == "strong" and b not in inside]
        if strong:  # never taken inside: only the states where it is disabled can cycle fairly
            rest = {i for i in c if strong[0] not in enabled[i]}
            work.extend(set(x) for x in nx.strongly_connected_components(h.subgraph(rest)))
            continue
        if any(b not in inside for b in every or ()):
            continue  # a weakly fair binding enabled throughout and never taken
        yield c


def _cycle(graph: Graph, c: set[int], start: int, fair: dict[int, str],
           enabled: list[set[int]]) -> tuple[list[int], list[int]]:
    """A cycle in component c from `start` back to it that is fair: it takes every fair
    binding that has an edge inside c and is enabled on c, or passes a state where it is
    disabled (a weakly fair one), so that no fair binding is postponed forever. Returns its
    states (start first and last) and the binding of each of its edges."""
    sub = nx.DiGraph()
    sub.add_nodes_from(c)
    sub.add_edges_from((i, j) for i in c for _, j in graph.succ[i] if j in c)
    walk, via = [start], []

    def go(path: list[int]) -> None:
        for a, b in zip(path, path[1:]):
            walk.append(b)
            via.append(_edge(graph, a, b))

    for b in sorted({b for i in c for b in enabled[i] if b in fair}):
        if b in via or (fair[b] == "weak" and any(b not in enabled[i] for i in walk)):
            continue  # the walk so far takes it, or passes a state where it is disabled
        off = {i for i in c if b not in enabled[i]}
        if fair[b] == "weak" and off:
            go(_bfs(sub, walk[-1], off.__contains__, allowed=c))
            continue
        tails = {i for i in c if any(x == b and j in c for x, j in graph.succ[i])}
        go(_bfs(sub, walk[-1], tails.__contains__, allowed=c))
        walk.append(next(j for x, j in graph.succ[walk[-1]] if x == b and j in c))
        via.append(b)
    go(_bfs(sub, walk[-1], lambda i: i == start, allowed=c, leave=len(walk) == 1))
    return walk, via


def _bfs(g: nx.DiGraph, src: int, goal: Callable[[int], bool], *, allowed: set[int] | None,
         leave: bool = False) -> list[int]:
    """The shortest path in g from src to a goal state (src itself unless `leave`: a cycle)."""
    if goal(src) and not leave:
        return [src]
    prev = {src: -1}
    todo = deque([src])
    while todo:
        i = todo.popleft()
        for j in g.successors(i):
            if allowed is not None and j not in allowed:
                continue
            if goal(j):
                path = [j, i]
                while prev[path[-1]] != -1:
                    path.append(prev[path[-1]])
                return path[::-1]
            if j not in prev:
                prev[j] = i
                todo.append(j)
    raise InternalError("liveness: a state the search found reachable has no path to it")


def _edge(graph: Graph, a: int, b: int) -> int:
    """The first binding (in the engine's order) leading from state a to state b."""
    for x, j in graph.succ[a]:
        if j == b:
            return x
    raise InternalError("liveness: a lasso uses a transition the graph does not have")


def fairness_text(model: Model) -> str:
    """The fairness a liveness verdict assumed, in words."""
    fair = model.fairness()
    if not fair:
        return "no action is fair: any enabled action may be postponed forever while another runs"
    weak = [n for n, f in fair if f == "weak"]
    strong = [n for n, f in fair if f == "strong"]
    parts = ([f"weak fairness of {', '.join(weak)}"] if weak else []) + \
            ([f"strong fairness of {', '.join(strong)}"] if strong else [])
    return " and ".join(parts) + " (for each of their bindings)"


def _message(model: Model, inst: Instance, lasso: Lasso, trace: Trace) -> str:
    who = f" for request {model.request_name(inst.request)}" if inst.request is not None else ""
    start = lasso.trigger
    if inst.kind == "eventually":
        head = f"{inst.name}{who}: it never holds"
    elif inst.page is not None:
        head = f"{inst.name}: {inst.text_p} at step {start} and never {inst.text_q.split(' is ')[-1]} after"
    else:
        head = f"{inst.name}{who}: its p holds at step {start} and its q never holds after"
    last = len(lasso.states) - 1
    if lasso.loop is None or lasso.loop == last:  # (find_lasso always closes its run)
        tail = f"the run stops at step {last}, where no action is enabled, and stays there forever"
    else:
        tail = f"the run then repeats steps {lasso.loop + 1}..{last} forever (step {last} is the state of step {lasso.loop})"
    return f"{head}: {tail}; assuming {fairness_text(model)}"


@dataclass
class Measured:
    """What a @measure came to over every reachable state."""

    largest: int
    at: int                  # its depth: the length of a shortest run reaching it
    longest: int | None      # the most consecutive states of a run where it is above 0; None: unbounded

    def describe(self) -> str:
        if self.largest <= 0:
            return f"at most {self.largest} in every reachable state"
        stretch = ("above 0 without end on some run (a cycle, or a state the run stops in)" if self.longest is None
                   else f"above 0 for at most {self.longest} consecutive state{'s' if self.longest != 1 else ''} of a run")
        return f"at most {self.largest} (first reached in {self.at} steps); {stretch}"

    def brief(self) -> str:
        """For a table cell: "3, for 8 states", "3, without end", or "0"."""
        if self.largest <= 0:
            return str(self.largest)
        return f"{self.largest}, " + ("without end" if self.longest is None else f"for {self.longest} states")


@dataclass
class Outcome:
    """What the behaviours of a model showed: a violated liveness property (a result with
    its trace), or what stopped the search, and each measure's values."""

    found: CheckResult | None = None
    stopped: str | None = None
    measures: dict[str, Measured] | None = None


def check(model: Model, *, states_expected: int | None, max_states: int | None = None,
          max_seconds: float | None = None, reporter: Reporter | None = None, measure: bool = True) -> Outcome:
    """Check every liveness property of `model` on its reachable graph, and (`measure`)
    measure its @measure costs: `found` at the first property that fails, else every one holds.
    Each phase (the graph, the measures, each obligation) is reported as it starts."""
    interp = Concrete(model)
    start = time.monotonic()

    def doing(phase: str) -> None:
        if reporter is not None:
            reporter(Progress(time.monotonic() - start, kind="phase", phase=phase))

    doing("liveness: building the reachable graph")
    graph, stopped = reachable.build(model, max_states=max_states, max_seconds=max_seconds, reporter=reporter)
    if stopped is not None:
        return Outcome(stopped=stopped)
    if states_expected is not None and len(graph.states) != states_expected:
        raise InternalError(f"the liveness graph of {model.spec_cls.__name__} has {len(graph.states):,} states and"
                            f" the safety search {states_expected:,}: the two searches disagree")
    if measure and model.measures:
        doing(f"measuring {', '.join(m.name for m in model.measures)} in {len(graph.states):,} states")
    measured = measures(model, interp, graph) if measure else {}
    fair = {b: binding.action.fair for b, binding in enumerate(model.bindings) if binding.action.fair}
    doing(f"liveness: evaluating the obligations in {len(graph.states):,} states")
    obligations = instances(model, interp, graph)
    for i, inst in enumerate(obligations):
        doing(f"liveness: {inst.name}{_whose(model, inst)} ({i + 1} of {len(obligations)})")
        bound = model.within.get(inst.name)
        lasso = find_lasso(graph, inst, fair) if bound is None else find_slow(graph, inst, bound)
        if lasso is None:
            continue
        trace = lasso_trace(model, inst, [graph.states[i] for i in lasso.states],
                            [model.bindings[b] for b in lasso.bindings], lasso.loop, lasso.trigger, engine="explicit")
        # the whole graph was explored: the coverage is complete, though a property fails
        cov = Coverage(len(graph.states), graph.transitions, max(graph.depths()), complete=True,
                       stopped_by=None, seconds=time.monotonic() - start)
        return Outcome(found=CheckResult(Verdict.VIOLATED, cov, "explicit", trace=trace), measures=measured)
    return Outcome(measures=measured)


def _whose(model: Model, inst: Instance) -> str:
    """Whom an obligation is for, in a progress line: ", request r2", ", decode page 3", or ""."""
    if inst.request is not None:
        return f", request {model.request_name(inst.request)}"
    if inst.page is not None:
        return f", {inst.page[0]} page {inst.page[1]}"
    return ""


def lasso_trace(model: Model, inst: Instance, states: list[tuple[int, ...]], bindings: list[Binding],
                loop: int | None, trigger: int, *, engine: str) -> Trace:
    """The trace of a liveness counterexample of `inst` (a lasso: the last state is
    states[loop], the last index for a dead end; None: a finite run, too late for a bounded
    response), its obligation starting at step `trigger`, worded for the user."""
    trace = build_trace(model, states, bindings, [], engine=engine)
    trace.loop = loop
    lasso = Lasso(list(range(len(states))), [], loop, trigger)
    bound = model.within.get(inst.name)
    message = _message(model, inst, lasso, trace) if bound is None else _slow_message(model, inst, lasso, bound)
    requests = [model.request_name(inst.request)] if inst.request is not None else []
    pages = [inst.page] if inst.page is not None else []
    trace.violation = Violation(inst.name, trigger, message, requests, pages)
    return trace


def on_run(model: Model, states: list[tuple[int, ...]], name: str, request: int | None,
           page: tuple[str, int] | None) -> Instance:
    """The obligation of property `name` (for `request`, or at `page`) over the states of a run."""
    graph = Graph.of_states(states)
    for inst in instances(model, Concrete(model), graph):
        if (inst.name, inst.request, inst.page) == (name, request, page):
            return inst
    raise InternalError(f"liveness: no obligation {name} for {request or page} in this model")


def trigger_of(inst: Instance, loop: int | None, last: int, bound: int | None) -> int | None:
    """The first step of a run (states 0..last; the last is states[loop] for a lasso, the
    last index for a dead end, None for a finite run) where the obligation starts and is not
    met: p holds and q never does after (within `bound` steps for a bounded response)."""
    for t in range(last + 1):
        if not inst.p[t]:
            continue
        if loop is None:  # a finite run: bound + 1 states without q
            if bound is not None and t + bound <= last and not any(inst.q[u] for u in range(t, t + bound + 1)):
                return t
        elif not any(inst.q[u] for u in range(min(t, loop), last + 1)):
            return t
    return None


def find_slow(graph: Graph, inst: Instance, bound: int) -> Lasso | None:
    """A run on which q does not hold in the `bound` steps after a p-state (bound + 1 states
    without q), or that stops with q false before: `leads_to(within=bound)` fails on it.

    f(s) is the most states without q that a run from s begins with, capped at bound + 1 (a
    dead end without q counts as the cap: the run stays there); bound rounds of
    f(s) = 1 + max f(successor) make it exact for runs of bound steps."""
    n = len(graph.states)
    if bound >= n:
        # bound + 1 states without q repeat one (there are n): such a run goes round a cycle
        # without q, or stops at a dead end without q, for ever; any cycle will do, fair or not
        return find_lasso(graph, inst, {})
    cap = bound + 1
    q = inst.q
    f = [0 if q[i] else (cap if not graph.succ[i] else 1) for i in range(n)]
    for _ in range(bound):
        g = [0 if q[i] else (cap if not graph.succ[i] else min(cap, 1 + max(f[j] for _, j in graph.succ[i])))
             for i in range(n)]
        if g == f:
            break
        f = g
    triggers = [i for i in range(n) if inst.p[i] and f[i] >= cap]
    if not triggers:
        return None
    depth = graph.depths()
    trigger = min(triggers, key=lambda i: (depth[i], i))
    states = graph.path(trigger)
    at = len(states) - 1
    need = cap
    while need > 1 and graph.succ[states[-1]]:
        need -= 1
        here = states[-1]
        states.append(next(j for _, j in graph.succ[here] if f[j] >= need))
    bindings = [_edge(graph, a, b) for a, b in zip(states, states[1:])]
    loop = len(states) - 1 if not graph.succ[states[-1]] else None
    return Lasso(states, bindings, loop, at)


def _slow_message(model: Model, inst: Instance, lasso: Lasso, bound: int) -> str:
    who = f" for request {model.request_name(inst.request)}" if inst.request is not None else ""
    start, last = lasso.trigger, len(lasso.states) - 1
    if lasso.loop == last:
        tail = f"the run stops at step {last}, where no action is enabled, with q still false"
    elif lasso.loop is not None:
        tail = (f"q never holds after it: the run repeats steps {lasso.loop + 1}..{last} forever (step {last} is the"
                f" state of step {lasso.loop})")
    else:
        tail = f"q does not hold at steps {start}..{last}"
    steps = "step" if bound == 1 else "steps"
    return f"{inst.name}{who}: its p holds at step {start}, and q must hold within {bound} {steps}: {tail}"


def measures(model: Model, interp: Concrete, graph: Graph) -> dict[str, Measured]:
    """Each @measure over every reachable state: its largest value, where, and the longest
    stretch of a run where it is above 0 (unbounded on a cycle or at a dead end)."""
    out: dict[str, Measured] = {}
    if not model.measures:
        return out
    depth = graph.depths()
    view = interp.view
    for m in model.measures:
        what = f"measure {m.name}"
        values = []
        for state in graph.states:
            view.reset(state)
            got = interp._run(lambda m=m, w=what: view._read_only(w, lambda: m.fn(interp.spec, view)), f"in {what}")
            try:
                sort = None if got is None else (sorts.TYPE_SORT.get(type(got)) or sorts.sort_of(got))
            except Exception:  # noqa: BLE001 (a str, a float, a list: no value of the language)
                sort = f"{type(got).__name__}, which is no value of the spec language"
            if sort != sorts.INT:
                code = m.fn.__code__
                said = "None: did it forget `return`?" if got is None else (
                    "a condition: write If(c, 1, 0) to count a condition" if sort == sorts.BOOL else f"a {sort}")
                raise SpecError(f"{what} must return an integer (a number of pages, of requests...); it returned {said}",
                                file=code.co_filename, line=code.co_firstlineno)
            values.append(int(_v(got)))
        largest = max(values)
        at = min((depth[i] for i, v in enumerate(values) if v == largest))
        out[m.name] = Measured(largest, at, _longest_positive(graph, values))
    return out


def _longest_positive(graph: Graph, values: list[int]) -> int | None:
    """The most consecutive states of a run with a value above 0; None when unbounded."""
    pos = [i for i, v in enumerate(values) if v > 0]
    if not pos:
        return 0
    g = nx.DiGraph()
    g.add_nodes_from(pos)
    g.add_edges_from((i, j) for i in pos for _, j in graph.succ[i] if values[j] > 0)
    if any(not graph.succ[i] for i in pos) or any(g.has_edge(i, i) for i in pos) or not nx.is_directed_acyclic_graph(g):
        return None
    return int(nx.dag_longest_path_length(g)) + 1


def violates(model: Model, states: list[tuple[int, ...]], bindings: list[Binding], loop: int | None,
             name: str) -> bool:
    """Whether the lasso `states` (the last equal to states[loop], or a dead end when loop is
    the last index) is a fair behaviour on which property `name` fails: replaying a trace."""
    interp = Concrete(model)
    last = len(states) - 1
    if name in model.within and (loop is None or loop == last):
        return _slow(model, interp, states, name, model.within[name])
    fair_matters = name not in model.within  # a bounded response is late on any run, fair or not
    if loop is None or not 0 <= loop <= last:
        return False
    cycle = states[loop:last] if loop < last else [states[last]]
    enabled = []
    for st in cycle:
        enabled.append({b for b, binding in enumerate(model.bindings) if interp.step(st, binding) is not None})
    if loop == last:
        if enabled[0]:
            return False  # not a dead end: the run does not stop there
    else:
        if states[last] != states[loop]:
            return False
        number = {id(b): k for k, b in enumerate(model.bindings)}
        taken = {number[id(b)] for b in bindings[loop:]}
        for b, binding in enumerate(model.bindings if fair_matters else ()):
            f = binding.action.fair
            if f == "weak" and all(b in e for e in enabled) and b not in taken:
                return False
            if f == "strong" and any(b in e for e in enabled) and b not in taken:
                return False
    graph = Graph.of_states(states)
    for inst in (i for i in instances(model, interp, graph) if i.name == name):
        for t in range(len(states)):
            # q must stay false from t on, forever: after the last state the run repeats the
            # loop, so a trigger inside the loop needs q false on the whole loop too
            if inst.p[t] and not any(inst.q[u] for u in range(min(t, loop), len(states))):
                return True
    return False


def _slow(model: Model, interp: Concrete, states: list[tuple[int, ...]], name: str, bound: int) -> bool:
    """Whether the run `states` shows leads_to(within=bound) `name` failing: a p-state followed
    by bound + 1 states without q, or by states without q up to a dead end."""
    last = len(states) - 1
    dead = not any(interp.step(states[last], b) is not None for b in model.bindings)
    graph = Graph.of_states(states)
    for inst in (i for i in instances(model, interp, graph) if i.name == name):
        for t in range(len(states)):
            if not inst.p[t]:
                continue
            window = range(t, min(t + bound, last) + 1)
            if any(inst.q[u] for u in window):
                continue
            if t + bound <= last or dead:
                return True
    return False
