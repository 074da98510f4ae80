"""The `ownership new NAME` command: a new spec and its docs page to start from
(ownership.skeleton), checked at once.

Registered by ownership/cli/__init__.py. Writes NAME.py and NAME.md into --dir (never over a
file), checks the new spec without and with its fix, puts those outputs and its matrix into
the page, and prints what to do next. Exit 0, or 2 for a bad name or a file that exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from .common import EXIT_TABLE, OwnershipCommand, echo


@click.command(cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("name")
@click.option("--dir", "folder", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The folder to write NAME.py and NAME.md into (made if missing).")
def new(name: str, folder: str) -> None:
    """Write a new spec NAME.py and its docs page NAME.md, a skeleton that checks at once.

    The spec: a prefill node computes a request's KV and sends it to a decode node, with one
    bug (prefill frees its pages while the transfer reads them) and its fix. The page: where
    the real sources, the bug and the fix go, with the checker's outputs."""
    from .. import api, matrix, skeleton
    from ..render.text import render_check

    spec_path, page_path = skeleton.paths(name, folder)
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    shown = os.path.relpath(spec_path) if not Path(folder).is_absolute() else str(spec_path)
    spec_path.write_text(skeleton.spec_text(name, shown), encoding="utf-8")
    ref = str(spec_path)
    bug = api.check(ref)
    fixed = api.check(ref, fixes=["free-after-land"])
    table = matrix.build(ref)
    page = skeleton.page_text(name, shown, bug=render_check(bug, spec_label=shown),
                              fixed=render_check(fixed, spec_label=shown), matrix=table.markdown())
    page_path.write_text(page, encoding="utf-8")
    echo(f"wrote {shown} (the spec) and {os.path.relpath(page_path) if not Path(folder).is_absolute() else page_path}"
         " (its docs page)")
    echo(f"  {bug.verdict.word}: {bug.violation.property if bug.violation else ''} without the fix;"
         f" {fixed.verdict.word} with --fix free-after-land")
    echo("next: change the actions into your protocol's steps, then")
    echo(f"  ownership check {shown}                  # the shortest trace of a violation")
    echo(f"  ownership matrix {shown} --markdown      # each fix against each property, for a review")
    echo(f"  ownership check {shown} --format sarif   # for CI (docs/cli.md, CI output)")


__all__ = ["new"]
