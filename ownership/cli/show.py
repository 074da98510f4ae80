"""The `ownership show` command (issue 5), registered by ownership/cli/__init__.py.

`show` renders a trace file: in the terminal (colour on a TTY, plain text otherwise; through a
pager on a TTY when longer than the screen, unless --no-pager), as one self-contained HTML
page (`--html`), or as a Mermaid sequence diagram (`--mermaid`). It reads the file as JSON
only; it never loads a spec, so showing a trace never runs code.

Like the rest of the CLI, bad input is one `error: ...` line on stderr and exit code 2; the
command catches OwnershipError itself too, so they behave the same when invoked alone.
Every text from a trace or a spec reaches the terminal escaped (common.echo, or the
viewer's own escaping under its colour codes), and an output file (`--html`, `--dot`) is
written whole or not at all (trace.write_output), never left half-written.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import click

from ..render.escape import printable
from ..trace import write_output
from .common import (
    OwnershipCommand,
    check_out,
    echo,
    write_out,
)


@click.command(cls=OwnershipCommand)
@click.argument("trace_file", metavar="TRACE")
@click.option("--step", type=int, default=None, metavar="K", help="Show step K alone, with its whole state (with --html: open at step K).")
@click.option("--diff", is_flag=True, help="Show only what changed at each step.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write one self-contained HTML page (no network requests) instead.")
@click.option("--mermaid", is_flag=True, help="Print a Mermaid sequence diagram of the steps instead.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the terminal view (auto: when standard output is a terminal).")
@click.option("--pager/--no-pager", default=True, show_default=True,
              help="On a terminal, page a view longer than the screen ($PAGER, else less). Never when output is not a terminal.")
def show(trace_file: str, step: int | None, diff: bool, html_out: str | None, mermaid: bool, color: str,
         pager: bool) -> None:
    """Show TRACE (an ITF JSON file): the violation and why, the timeline, the violating step,
    then every step with its page grids and changes.

    Opens traces of any ownership engine, and ITF traces of other tools (Quint, Apalache) as
    a table of their variables. Reading a trace never executes code."""
    from ..render.view_model import check_step
    from ..render.viewer import render_show
    from ..trace import read_itf

    check_out(html_out, "--html", "HTML page")
    trace = read_itf(trace_file)
    check_step(trace, step)
    if html_out or mermaid:
        if html_out:
            from ..render.html import render_html

            write_output(html_out, render_html(trace, start=step, narrative=narratives(trace_file, len(trace.steps))),
                         "HTML page")
            echo(f"HTML page written to {html_out}", err=mermaid)
        if mermaid:
            from ..render.mermaid import render_mermaid

            echo(render_mermaid(trace))
        return
    tty = sys.stdout.isatty()
    colour = color == "always" or (color == "auto" and tty)
    size = shutil.get_terminal_size((100, 24))
    width = size.columns if tty else 100
    text = render_show(trace, step=step, diff=diff, color=colour, width=max(60, width),
                       narrative=narratives(trace_file, len(trace.steps)))
    if not colour:
        text = printable(text)  # (render_show escaped the trace's text already; this is the rule of every output)
    if pager and tty and text.count("\n") + 1 > size.lines:
        # the view escaped the trace's text before rich added our colour codes (render.viewer)
        if colour:
            less_shows_colours()
        write_out(lambda: click.echo_via_pager(text, color=True if colour else None))
    elif colour:
        # color=True: click strips escape codes when stdout is not a terminal unless told otherwise
        write_out(lambda: click.echo(text, color=True))
    else:
        write_out(lambda: click.echo(text))


def less_shows_colours() -> None:
    """`less` (click's pager unless $PAGER names another) prints colour codes as text, `ESC[1m`,
    unless started with -R; click passes LESS=-R only when it is not told whether to colour, and
    `show` tells it. So -R goes into LESS here, after the user's own options."""
    options = os.environ.get("LESS", "")
    if "-R" not in options.split():
        os.environ["LESS"] = f"{options} -R".strip()


def narratives(path: str, steps: int) -> list[str | None] | None:
    """The narrative of each state of a trace file (`#meta.narrative`, written by `check --out`),
    or None when the file has none, or not one entry per step. Strings only; the view escapes
    them like every text of a trace."""
    try:
        with open(path, encoding="utf-8") as f:
            states = json.load(f).get("states")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(states, list) or len(states) != steps:
        return None
    out: list[str | None] = []
    for st in states:
        meta: Any = st.get("#meta") if isinstance(st, dict) else None
        text = meta.get("narrative") if isinstance(meta, dict) else None
        out.append(text if isinstance(text, str) else None)
    return out if any(out) else None
