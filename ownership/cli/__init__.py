"""The `ownership` command line: the command group, one module per command, and `main`.

Each command (check.py, replay.py, listing.py, prove.py, show.py, graph.py, config_check.py,
monitor.py)
only parses options, calls the library and prints its renderings; what they share (bad input
as one `error:` line with exit 2, an internal error as exit 4, --json output, limits, the
progress line, escaping) is in common.py. The commands import common.py and never this
module, so imports run one way: here -> a command -> common. The exit code comes from the one
table in ownership.result. `python -m ownership` runs the same `main` (ownership/__main__.py).
"""

from __future__ import annotations

import os
import signal
import sys


def _no_imports_from_the_working_directory() -> None:
    """`python -m ownership` puts the working directory first on sys.path (Python's rule for
    -m), so that a `click.py`, `z3.py` or `packaging/` there would be imported by what follows:
    the command drops that entry, as the console script never has it. (Only when run so: a
    program that imports ownership keeps its sys.path.)"""
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(main_spec, "name", None) != "ownership.__main__" or not sys.path:
        return
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: nothing there to import
        return
    if sys.path[0] in ("", cwd):
        del sys.path[0]


_no_imports_from_the_working_directory()

import click  # noqa: E402 (after the working directory left sys.path)

from . import check, config_check, graph, listing, matrix, monitor, new, prove, replay, show  # noqa: E402
from .common import EXIT_TABLE, OwnershipGroup  # noqa: E402


@click.group(cls=OwnershipGroup, epilog=EXIT_TABLE)
@click.version_option(package_name="ownership", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show the traceback of an internal error (a bug of ownership).")
def cli(debug: bool) -> None:
    """Model checker for KV-cache page ownership in disaggregated LLM inference."""


# the modules keep their names (ownership.cli.show is the module, its command is show.show)
for _command in (check.check, replay.replay, listing.list_, prove.prove, show.show, graph.graph,
                 config_check.config_check, monitor.monitor, matrix.matrix, new.new):
    cli.add_command(_command)

__all__ = ["OwnershipGroup", "cli", "main"]


def main() -> None:
    """The console script. Once a command has its answer (its exit code), a late Ctrl-C no
    longer changes it: interrupted while Python exits, the process died of SIGINT instead of
    exiting 3 (a second Ctrl-C in quick succession did that)."""
    try:
        cli(prog_name="ownership")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
