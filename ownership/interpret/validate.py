"""A spec class to a validated Model: instantiated at parameters and fixes, then traced once.

`build_model(cls, params, fixes)` lays the spec out (ownership.lang.model) and runs every
action binding and property through the symbolic tracer (ownership.ir.tracer), so
that a spec error (Python control flow on state, an operation the language refuses, an
unknown slot) is reported with file and line before any engine runs. It lives here, above the
language, because validating is tracing (docs/adr/0005-the-kernel-stands-on-the-language.md).
`model_for(spec, ...)` loads a spec by name or path and builds it: what every command, the
public API (ownership.model_for) and a Ray worker (ownership.engines.cluster) call; here, below
the engines, so that none of them reaches up to ownership.api for it (issue 30).
"""

from __future__ import annotations

from typing import Any

from .. import limits
from ..errors import OwnershipError
from ..ir.tracer import trace_model
from ..lang.failure import spec_failure
from ..lang.loader import load_spec
from ..lang.model import Model
from ..lang.properties import CRASH
from ..lang.spec import Spec

#: Above this many pages in a pool, validation traces at the spec's default parameters
#: instead: tracing unrolls loops over pages, and the defaults take the same Python paths.
VALIDATE_MAX_PAGES = 16


def build_model(cls: type[Spec], params: dict[str, int] | None = None, fixes: Any = (),
                release: str | None = None, *, skip: Any = (), liveness: Any = (), only: Any = ()) -> Model:
    """Instantiate a spec at parameters, fixes and release, and validate it by symbolic tracing."""
    spec = cls(params=params, fixes=fixes, release=release)
    path = cls.source_file()
    try:
        model = Model(spec, skip=skip, liveness=liveness, only=only)
        small = all(p.size <= VALIDATE_MAX_PAGES for p in model.pools.values())
        check = model if small else Model(cls(params=None, fixes=spec.fixes))
        traced = trace_model(check)
        model.can_crash = any(prop == CRASH for t in traced.actions for prop, _, _ in t.flags)
    except OwnershipError:
        raise
    except Exception as e:
        raise spec_failure(e, path, "while tracing the spec's actions") from None
    return model


__all__ = ["VALIDATE_MAX_PAGES", "build_model", "model_for"]


def model_for(spec: str, *, params: dict[str, int] | None = None, fixes: Any = (),
              version: str | None = None, skip: Any = (), shipped_only: bool = False,
              liveness: Any = (), only: Any = ()) -> Model:
    """Load and validate a spec at parameters, fixes and (optionally) an engine release;
    `skip` names properties not to check (`only`: the only ones to check); `liveness` kernel liveness properties to check
    besides those the spec names; `shipped_only`: `spec` comes from a trace, and only a
    shipped spec is loaded (ownership.lang.loader.resolve_spec_path)."""
    with limits.phase("loading the spec"):
        cls = load_spec(spec, shipped_only=shipped_only)
    with limits.phase("tracing the spec's actions"):
        return build_model(cls, params or {}, fixes, version, skip=skip, liveness=liveness, only=only)
