"""`ownership list`: the shipped specs, or one spec's parameters, fixes, releases, pools,
actions and properties (the module is not named list: that is a builtin)."""

from __future__ import annotations

import click

from .. import api
from ..errors import UsageError
from .common import (
    EXIT_TABLE,
    OwnershipCommand,
    complete_param,
    complete_spec,
    echo,
    emit_json,
    parse_params,
)


@click.command(name="list", cls=OwnershipCommand, epilog=EXIT_TABLE)
@click.argument("spec", required=False, shell_complete=complete_spec)
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Show sizes at these parameters.", shell_complete=complete_param)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text (errors too).")
def list_(spec: str | None, params: tuple[str, ...], as_json: bool) -> None:
    """List the shipped specs, or SPEC's parameters, fixes, releases, pools, actions and properties."""
    from ..lang.loader import load_spec, shipped_specs
    from ..render.text import render_spec, render_spec_list, spec_json

    if spec is None:
        if params:
            raise UsageError("--param sets a spec's parameters: name the spec, e.g. ownership list sglang_pd --param decode_pool=6")
        summaries = {}
        for name in shipped_specs():
            cls = load_spec(name)
            summaries[name] = ((cls.__doc__ or "").strip().splitlines() or [""])[0]
        if as_json:
            emit_json({"specs": [{"name": n, "summary": text} for n, text in summaries.items()], "exit_code": 0})
        else:
            echo(render_spec_list(summaries))
        return
    model = api.model_for(spec, params=parse_params(params))
    if as_json:
        emit_json({"spec": spec, **spec_json(model), "exit_code": 0})
    else:
        echo(render_spec(model, spec))
