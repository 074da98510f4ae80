"""The reachable state graph of a small spec, as a networkx graph and as Graphviz DOT.

`ownership graph SPEC --dot out.dot` draws every reachable state of a Model and every
transition between them, with the shortest counterexample path marked, so a reviewer can see
the whole protocol, not only one run. The search is breadth first over `model.bindings` with
the concrete interpreter, in the same order as the explicit engine, so the marked path is
the same shortest counterexample that `ownership check` prints. A transition that violates a
property ends its run: the state it reaches is drawn (marked) but not expanded unless a
clean transition reaches it too, and neither is a state whose invariants fail.

A graph is for reading, so it is small by construction: past `max_nodes` states the search
stops with a UsageError that says the limit and how to shrink the parameters. Like every
engine, this module never prints.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..errors import UsageError
from ..interpret.concrete import Concrete, Flag
from ..lang.model import Binding, Model
from ..trace import Trace, build_trace

#: The default size limit of `ownership graph`, in states.
DEFAULT_MAX_NODES = 2000


@dataclass
class StateGraph:
    """The reachable states (nodes 0..n-1, node 0 initial) and transitions of a Model.

    Node attributes: `state` (the tuple), `depth`, `violation` (True when the state is reached
    only by violating transitions or fails an invariant), `path` (on the counterexample).
    Edge attributes: `label` (the action with its arguments), `violation` (the properties the
    transition violates), `path`."""

    graph: nx.MultiDiGraph
    model: Model
    trace: Trace | None = None          # the shortest counterexample, if any
    path: list[int] = field(default_factory=list)  # its nodes, initial first

    @property
    def states(self) -> int:
        return self.graph.number_of_nodes()

    @property
    def transitions(self) -> int:
        return self.graph.number_of_edges()


def _refuse(model: Model, max_nodes: int) -> UsageError:
    params = " ".join(f"{k}={v}" for k, v in model.env.items())
    hint = "--param requests=1" if model.env.get("requests", 1) > 1 else "smaller pools, e.g. --param " + next(
        (f"{k}={max(1, v // 2)}" for k, v in model.env.items() if k != "requests" and v > 1), "NAME=VALUE")
    return UsageError(
        f"the reachable state graph of {model.spec_cls.__name__} ({params}) has more than {max_nodes:,}"
        f" states, the limit for a graph (--max-nodes); a larger drawing cannot be read. Shrink the"
        f" parameters ({hint}) or raise --max-nodes; `ownership check` explores large state spaces."
    )


def reachable_graph(model: Model, *, max_nodes: int = DEFAULT_MAX_NODES) -> StateGraph:
    """Every reachable state and transition of `model`, breadth first, with the shortest
    counterexample path marked; raises UsageError past `max_nodes` states."""
    if max_nodes < 1:
        raise UsageError(f"--max-nodes {max_nodes}: the limit must be at least 1")
    interp = Concrete(model)
    bindings: list[Binding] = model.bindings
    g = nx.MultiDiGraph()
    index: dict[tuple[int, ...], int] = {}
    parent: dict[int, tuple[int, int]] = {}   # node -> (parent node, binding index), clean nodes only
    queued: set[int] = set()
    queue: deque[int] = deque()
    first_violation: tuple[int, int | None, list[Flag]] | None = None  # (node, binding, flags)

    def node(state: tuple[int, ...], depth: int) -> int:
        got = index.get(state)
        if got is not None:
            return got
        if len(index) >= max_nodes:
            raise _refuse(model, max_nodes)
        n = len(index)
        index[state] = n
        g.add_node(n, state=state, depth=depth, violation=True, path=False)
        return n

    def enqueue(n: int, via: tuple[int, int] | None) -> None:
        nonlocal first_violation
        if n in queued:
            return
        queued.add(n)
        if via is not None:
            parent[n] = via
        flags = interp.state_flags(g.nodes[n]["state"])
        if flags:
            if first_violation is None:
                first_violation = (n, None, flags)
            return
        g.nodes[n]["violation"] = False
        queue.append(n)

    enqueue(node(model.initial, 0), None)
    while queue:
        u = queue.popleft()
        state, depth = g.nodes[u]["state"], g.nodes[u]["depth"]
        for b, binding in enumerate(bindings):
            out = interp.step(state, binding)
            if out is None:
                continue
            v = node(out.state, depth + 1)
            props = sorted({f.prop for f in out.flags})
            g.add_edge(u, v, label=binding.label(), binding=b, violation=props, path=False)
            if out.flags:
                if first_violation is None:
                    first_violation = (u, b, list(out.flags))
                continue
            enqueue(v, (u, b))

    sg = StateGraph(g, model)
    if first_violation is not None:
        end, last_binding, flags = first_violation
        chain = [end]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]][0])
        chain.reverse()
        steps = [parent[n][1] for n in chain[1:]]
        states = [g.nodes[n]["state"] for n in chain]
        if last_binding is not None:   # the violating transition itself ends the path
            last = index[interp.step(states[-1], bindings[last_binding]).state]  # type: ignore[union-attr]
            chain.append(last)
            steps.append(last_binding)
            states.append(g.nodes[last]["state"])
        sg.path = chain
        sg.trace = build_trace(model, states, [bindings[k] for k in steps], flags, engine="graph")
        for n in chain:
            g.nodes[n]["path"] = True
        for k, (x, y) in enumerate(zip(chain, chain[1:])):
            for key, data in g.get_edge_data(x, y).items():
                if data["binding"] == steps[k]:
                    g.edges[x, y, key]["path"] = True
    return sg


# --------------------------------------------------------------------------- DOT


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def _node_label(model: Model, state: tuple[int, ...], n: int) -> str:
    from ..render.text import show_value

    shown = model.show(state)
    lines = [f"s{n}"]
    for slot in model.slots:
        if not slot.kernel:
            lines.append(f"{slot.name}: {show_value(shown[slot.name])}")
    for pool in model.pools:
        owners = shown.get(f"{pool}.owner", shown.get(f"{pool}.holders", []))
        contents = shown.get(f"{pool}.content", [])
        inflight = shown.get(f"{pool}.inflight", [])
        cells = []
        for p, (o, c) in enumerate(zip(owners, contents)):
            who = "+".join(sorted(o)) if isinstance(o, (frozenset, tuple)) else str(o)  # (counted: a tuple)
            cells.append(f"{'-' if who in ('free', '') else who}:{c}" + ("~" if p < len(inflight) and inflight[p] != "none" else ""))
        lines.append(f"{pool}: " + " ".join(cells))
    return "\n".join(lines) + "\n"


def to_dot(sg: StateGraph) -> str:
    """The graph in Graphviz DOT: the counterexample path red and bold, violations red."""
    model = sg.model
    g = sg.graph
    out = [f"digraph {_dot_string(model.spec_cls.__name__)} {{",
           '  graph [rankdir=TB, fontname="monospace"];',
           '  node [shape=box, fontname="monospace", fontsize=9];',
           '  edge [fontname="monospace", fontsize=8];']
    v = sg.trace.violation if sg.trace is not None else None
    if v is not None:
        out.append(f"  label={_dot_string('counterexample (red): ' + v.message)}; labelloc=t;")
    for n, data in g.nodes(data=True):
        attrs = [f"label={_dot_string(_node_label(model, data['state'], n))}"]
        if n == 0:
            attrs.append("peripheries=2")
        if data["violation"]:
            attrs.append('style=filled, fillcolor="#ffcdd2"')
        if data["path"]:
            attrs.append('color="#c62828", penwidth=2.5')
        out.append(f"  s{n} [{', '.join(attrs)}];")
    for x, y, data in g.edges(data=True):
        label = data["label"] + (f"\n[{', '.join(data['violation'])}]" if data["violation"] else "")
        attrs = [f"label={_dot_string(label)}"]
        if data["violation"]:
            attrs.append('fontcolor="#c62828", style=dashed')
        if data["path"]:
            attrs.append('color="#c62828", penwidth=2.5')
        out.append(f"  s{x} -> s{y} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def summary(sg: StateGraph) -> dict[str, Any]:
    """The graph in numbers, for the CLI."""
    violating = sum(1 for _, _, d in sg.graph.edges(data=True) if d["violation"])
    return {
        "states": sg.states,
        "transitions": sg.transitions,
        "violating_transitions": violating,
        "counterexample_steps": len(sg.path) - 1 if sg.path else None,
        "violation": sg.trace.violation.property if sg.trace is not None and sg.trace.violation else None,
    }
