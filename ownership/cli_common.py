"""What every `ownership` command shares: bad input as one `error:` line with exit code 2, and
the progress line on stderr for runs that last over a second. Used by cli.py and the command
modules beside it (cli_show, cli_prove), so that each command behaves the same when invoked
alone (as the tests do) or through the `ownership` group."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from .errors import OwnershipError
from .result import EXIT_BAD_INPUT, Verdict


def _run_reporting_errors(invoke: Any, ctx: click.Context) -> Any:
    try:
        return invoke(ctx)
    except OwnershipError as e:
        click.echo(f"error: {e}", err=True)
        ctx.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        ctx.exit(Verdict.INCONCLUSIVE.exit_code)


class OwnershipCommand(click.Command):
    """A click command that turns bad input into `error: ...` and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        return _run_reporting_errors(super().invoke, ctx)


class OwnershipGroup(click.Group):
    """A click group that turns bad input into `error: ...` and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        return _run_reporting_errors(super().invoke, ctx)


class Progress:
    """Prints a progress line on stderr once a run has lasted a second: in place on a
    terminal, every 10 s otherwise (CI logs). An engine's progress object either describes
    itself (`describe()`) or has states, transitions, depth and seconds."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.printed = False
        self.last = 0.0

    def __call__(self, p: Any) -> None:
        if p.seconds < 1.0:
            return
        now = time.monotonic()
        if not self.tty and now - self.last < 10.0:
            return
        self.last = now
        if hasattr(p, "describe"):
            line = f"  {p.describe()}"
        else:
            rate = p.states / p.seconds if p.seconds else 0.0
            memory = getattr(p, "memory_bytes", 0)
            mem = f", {memory / 2**20:,.0f} MB" if memory else ""
            line = (f"  {p.states:,} states, {p.transitions:,} transitions, depth {p.depth},"
                    f" {rate:,.0f} states/s{mem}, {p.seconds:.0f} s")
        click.echo(("\r" + line) if self.tty else line, err=True, nl=not self.tty)
        self.printed = True

    def close(self) -> None:
        if self.printed and self.tty:
            click.echo("", err=True)
