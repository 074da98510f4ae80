"""What every `ownership` command shares: bad input as one `error:` line with exit code 2, a
bug of ownership as one `internal error:` line with exit code 4 (the traceback only under
`--debug` or OWNERSHIP_DEBUG=1), text escaped for the terminal, and the progress line on stderr
for runs that last over a second. Used by cli.py and the command modules beside it (cli_show,
cli_prove), so that each command behaves the same when invoked alone (as the tests do) or
through the `ownership` group."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from . import limits
from .errors import OwnershipError, UsageError
from .render.escape import printable
from .result import EXIT_BAD_INPUT, EXIT_INTERNAL, Verdict


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print text that may hold strings from a trace or a spec, escaped for the terminal."""
    click.echo(printable(text), err=err, nl=nl)


def debugging(ctx: click.Context | None = None) -> bool:
    """Whether to show tracebacks of internal errors: `ownership --debug ...` or OWNERSHIP_DEBUG=1."""
    if os.environ.get("OWNERSHIP_DEBUG", "") not in ("", "0"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


def _command_line(ctx: click.Context) -> str:
    """The command as the user typed it (its arguments as the outermost command parsed them)."""
    argv = ctx.find_root().meta.get("ownership.argv", sys.argv[1:])
    return shlex.join(["ownership", *argv])


def _run_reporting_errors(invoke: Any, ctx: click.Context) -> Any:
    try:
        return invoke(ctx)
    except OwnershipError as e:
        echo(f"error: {e}", err=True)
        steps = getattr(e, "steps", None)
        if steps:
            echo(f"reached from the initial state in {len(steps)} step{'s' if len(steps) != 1 else ''}:", err=True)
            for i, label in enumerate(steps, 1):
                echo(f"  {i}  {label}", err=True)
        ctx.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        echo("interrupted", err=True)
        ctx.exit(Verdict.INCONCLUSIVE.exit_code)
    except MemoryError:
        echo("inconclusive: stopped by memory: the machine ran out of memory (give a smaller"
             " instance, or --max-memory to stop earlier with the coverage so far)", err=True)
        ctx.exit(Verdict.INCONCLUSIVE.exit_code)
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise
    except Exception as e:  # a bug of ownership: never exit 0 or 1 (result.EXIT_INTERNAL)
        if debugging(ctx):
            traceback.print_exc()
        where = "" if debugging(ctx) else " (the traceback: add --debug)"
        echo(f"internal error: this is a bug of ownership, not of your spec or input:"
             f" {type(e).__name__}: {e}. Please report it with the command: {_command_line(ctx)}{where}",
             err=True)
        ctx.exit(EXIT_INTERNAL)


class OwnershipCommand(click.Command):
    """A click command that turns bad input into `error: ...` and exit code 2."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # (run alone, as the tests do, the command's own name comes first; under the group the
        # group has recorded the whole command line already)
        ctx.meta.setdefault("ownership.argv", [ctx.info_name or "", *args])
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        return _run_reporting_errors(super().invoke, ctx)


class OwnershipGroup(click.Group):
    """A click group that turns bad input into `error: ...` and exit code 2."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta.setdefault("ownership.argv", list(args))
        return super().parse_args(ctx, args)

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
        line = printable(line)
        click.echo(("\r" + line) if self.tty else line, err=True, nl=not self.tty)
        self.printed = True

    def close(self) -> None:
        if self.printed and self.tty:
            click.echo("", err=True)


def parse_params(pairs: tuple[str, ...]) -> dict[str, int]:
    """`--param NAME=VALUE` options as a dict (every command that takes parameters)."""
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {pair!r}: expected NAME=VALUE, e.g. --param decode_pool=8")
        try:
            out[name.strip()] = int(value.replace("_", "").replace(",", ""))
        except ValueError:
            raise UsageError(f"--param {pair!r}: {value!r} is not an integer") from None
    return out


@contextmanager
def limited(max_seconds: float | None, max_memory: int | None, progress: Any, *, as_json: bool = False,
            spec: str | None = None, unexplored: str = "nothing was explored") -> Iterator[limits.Guard]:
    """Run a command's block under its whole-command limits (ownership.limits). A limit or
    Ctrl-C outside an engine (which reports its own coverage) ends the command here: exit 3,
    one line saying what stopped it, while doing what, and what was not done."""
    guard: limits.Guard | None = None
    try:
        with limits.armed(max_seconds=max_seconds, max_memory=max_memory, reporter=progress) as guard:
            yield guard
    except KeyboardInterrupt:  # LimitReached too (the block has closed its progress line)
        reason = (guard.tripped if guard is not None else None) or "interrupt"
        doing = (guard.stopped_in if guard is not None else None) or "starting"
        code = Verdict.INCONCLUSIVE.exit_code
        if as_json:
            click.echo(json.dumps({"spec": spec, "verdict": "inconclusive", "stopped_by": reason,
                                   "while": doing, "coverage": None, "exit_code": code}, indent=1))
        else:
            echo(f"inconclusive: stopped by {reason} while {doing}; {unexplored}")
        sys.exit(code)
