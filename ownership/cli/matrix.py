"""The `ownership matrix` command: every release and fix of a spec against every property, the
design review's table (ownership.matrix), in the terminal, as Markdown or as JSON.

Registered by ownership/cli/__init__.py. Parses options, calls ownership.matrix.build, writes
each counterexample into --out-dir when given, prints. Exit 0 when every cell is decided (a
property holds or is violated), 3 when a search stopped before (a limit: bounded or
inconclusive cells), 2 for bad input.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from .. import limits
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    Progress,
    complete_param,
    complete_property,
    complete_spec,
    echo,
    emit_json,
    limited,
    parse_params,
    release_spelling,
    write_trace,
)


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("spec", shell_complete=complete_spec)
@click.option("--row", "rows", multiple=True, metavar="RUN",
              help="A run to put in the table (repeatable): a release (0.5.20), fixes joined by + (door-retire+coverage-check), or none. Default: each release, then each fix alone.")
@click.option("--property", "properties", multiple=True, metavar="PROPERTY", shell_complete=complete_property,
              help="A property to put in the table (repeatable). Default: every property the spec checks.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Set a parameter (repeatable).", shell_complete=complete_param)
@click.option("--engine", type=click.Choice(["explicit", "bmc", "fuzz"]), default="explicit", show_default=True)
@click.option("--max-states", type=click.IntRange(min=1), help="Bound each search (its cells: bounded).")
@click.option("--max-depth", type=click.IntRange(min=0), help="Bound each search by depth (bmc: its bound).")
@click.option("--markdown", is_flag=True, help="Print a Markdown table (for a pull request or a docs page).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--out-dir", "out_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write each counterexample here as an ITF trace; the table links to it.")
@click.option("--max-seconds", metavar="SECONDS", help="Stop after this long, the whole table (exit 3, no table).")
@click.option("--max-memory", "max_memory", metavar="SIZE", help="Stop (exit 3, no table) before the command holds more than SIZE.")
def matrix(spec: str, rows: tuple[str, ...], properties: tuple[str, ...], params: tuple[str, ...], engine: str,
           max_states: int | None, max_depth: int | None, markdown: bool, as_json: bool, out_dir: str | None,
           max_seconds: str | None, max_memory: str | None) -> None:
    """Check every release and fix of SPEC against every property, each property on its own.

    One row per run (each release of the real engine, then each fix alone), one column per
    property: holds (in every reachable state), violated at step N (the shortest trace),
    bounded or inconclusive; with the run's verdict, its states and each @measure."""
    from .. import matrix as review

    seconds = limits.parse_seconds(max_seconds)
    memory = limits.parse_size(max_memory) if max_memory is not None else None
    progress = Progress()
    with limited(seconds, memory, progress, as_json=as_json, spec=spec, unexplored="no table was made"):
        try:
            chosen = review.parse_rows(spec, list(rows)) if rows else None
            table = review.build(spec, rows=chosen, params=parse_params(params), properties=list(properties) or None,
                                 max_states=max_states, max_depth=max_depth, max_seconds=limits.seconds_left(seconds),
                                 engine=engine, reporter=progress)
            limits.settle()
        finally:
            progress.close()
    if out_dir:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for run in table.rows:
            for prop, cell in run.cells.items():
                if cell.found is None or cell.found.trace is None:
                    continue
                name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{run.row.label}-{prop}").strip("-") + ".itf.json"
                cell.found.trace.reproduce = release_spelling(cell.found.trace.reproduce)
                write_trace(cell.found.trace, str(folder / name))
                cell.trace = str(folder / name)
    undecided = any(c.word not in ("holds", "violated") for r in table.rows for c in r.cells.values())
    code = 3 if undecided else 0
    if as_json:
        emit_json({**table.to_json(), "exit_code": code})
    elif markdown:
        echo(table.markdown())
    else:
        echo(table.text())
    sys.exit(code)


__all__ = ["matrix"]
