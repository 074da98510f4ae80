"""The `ownership graph` command: the reachable state graph of a small spec (networkx), the
counterexample path marked, as Graphviz DOT (--dot) or as its size only.

Registered by ownership/cli/__init__.py. The graph is refused (exit 2) beyond --max-nodes
states; --max-seconds, --max-memory (the limits of `check`, loading and tracing the spec
included), the machine's memory ceiling and Ctrl-C stop it with exit 3 (issue 29: it had no
time or memory limit). The DOT file is written whole or not at all (trace.write_output).
"""

from __future__ import annotations

import click

from .. import limits
from ..trace import write_output
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    check_out,
    complete_fix,
    complete_param,
    complete_spec,
    echo,
    limited,
    parse_params,
    release_option,
)


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("spec", shell_complete=complete_spec)
@click.option("--fix", "fixes", multiple=True, metavar="NAME", help="Turn a fix on (repeatable).", shell_complete=complete_fix)
@release_option("Turn on the fixes of an engine release (see `ownership list SPEC`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).", shell_complete=complete_param)
@click.option("--dot", "dot_out", type=click.Path(dir_okay=False), metavar="FILE", help="Write the graph as Graphviz DOT here.")
@click.option("--max-nodes", type=int, default=None, metavar="N",
              help="Refuse graphs of more than N states  [default: 2000].")
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, loading and tracing the spec included (exit 3, no graph).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (exit 3, no graph) before the command holds more than SIZE, e.g. 4G or 512M; it always stops before the machine would swap.")
def graph(spec: str, fixes: tuple[str, ...], release: str | None, params: tuple[str, ...], dot_out: str | None,
          max_nodes: int | None, max_seconds: str | None, max_memory: str | None) -> None:
    """Draw the reachable state graph of SPEC (a small one), the counterexample path marked.

    Without --dot, prints the graph's size only. Refuses (exit 2) a graph of more states than
    --max-nodes, saying how to shrink the parameters."""
    from ..api import model_for
    from ..engines.graph import DEFAULT_MAX_NODES, reachable_graph, summary, to_dot

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    check_out(dot_out, "--dot", "graph")
    progress = Progress()
    # a graph is all or nothing: a limit or Ctrl-C stops the command where it is (exit 3)
    with limited(seconds, memory, progress, spec=spec, unexplored="no graph was drawn"):
        try:
            model = model_for(spec, params=parse_params(params), fixes=fixes, version=release)
            with limits.phase("building the reachable state graph"):
                sg = reachable_graph(model, max_nodes=DEFAULT_MAX_NODES if max_nodes is None else max_nodes)
            limits.settle()  # NOTE(settle) in ownership/limits.py: the graph is built
        finally:
            progress.close()
    facts = summary(sg)
    setting = " ".join(f"{k}={v}" for k, v in model.env.items())
    fixed = ", ".join(model.spec.fixes) or "none"
    echo(f"spec {model.spec_cls.__name__} ({spec}); parameters {setting}; fixes {fixed}")
    echo(f"reachable state graph: {facts['states']:,} states, {facts['transitions']:,} transitions"
         + (f", {facts['violating_transitions']:,} of them violating a property" if facts["violating_transitions"] else ""))
    if sg.trace is not None and sg.trace.violation is not None:
        echo(f"counterexample path marked: {facts['counterexample_steps']} steps to {facts['violation']}")
        echo(f"  {sg.trace.violation.message}")
    else:
        echo("no violation: no counterexample path to mark")
    if dot_out:
        write_output(dot_out, to_dot(sg), "graph")
        echo(f"DOT written to {dot_out} (render: dot -Tsvg {dot_out} -o graph.svg)")
