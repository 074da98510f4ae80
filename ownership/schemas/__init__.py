"""JSON Schemas (draft 2020-12) of what `ownership ... --json` prints, shipped with the package.

One file per command: check.json, prove.json, replay.json, list.json, config-check.json, monitor.json,
matrix.json, and
error.json for the error object that every command prints under --json instead of its
`error:` line (docs/cli.md, "Machine-readable output"). Every object carries
`schema_version`; it changes only when a field is removed or changes meaning (a new field
is not a new version). The schemas refer to each other by their `$id` (`urn:ownership:...`):
`registry()` gives them to the `referencing` library that jsonschema uses.

    from ownership import schemas
    doc = json.loads(stdout)
    jsonschema.validate(doc, schemas.load("check"), registry=schemas.registry())

Reading a schema needs nothing beyond the standard library; validating needs jsonschema.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

#: The version of every --json output and of these schemas.
SCHEMA_VERSION = 1

#: The schemas by name: the commands whose --json output they describe, the error object, and
#: the parts they share (common.json).
NAMES = ("check", "prove", "replay", "list", "config-check", "monitor", "matrix", "error", "common")


@cache
def load(name: str) -> dict[str, Any]:
    """The schema of `name` (one of NAMES) as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r}; schemas: {', '.join(NAMES)}")
    text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def registry() -> Any:
    """A `referencing.Registry` holding every schema under its `$id` (needs jsonschema)."""
    from referencing import Registry, Resource

    return Registry().with_resources(
        (load(name)["$id"], Resource.from_contents(load(name))) for name in NAMES
    )


__all__ = ["NAMES", "SCHEMA_VERSION", "load", "registry"]
