"""The engines a user names, and the options each takes (issue 30, item 2).

One table for what was a chain of ifs in ownership.api and the wording of ownership.render:
`ENGINES` says, for each engine a user can name (`--engine`, `api.check(engine=...)`), what its
"no violation" covers and how its counterexamples are found; `OPTIONS` says which engines take
each option of `api.check` (and `ownership check`), and what to tell a user who gives one to an
engine that does not take it. `refuse_foreign` checks a run's options against both, before the
spec is even loaded; combinations of options one engine takes (--ray with --checkpoint, ...)
are the run's own business (ownership.api.check_distributed).

A new engine is a row here, its module under ownership/engines/, and its branch in
ownership.api._run_engine (docs/CHANGING.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import UsageError


@dataclass(frozen=True)
class Engine:
    """An engine a user can name: `exhaustive`, its counterexamples are shortest (every state
    breadth first, or every execution depth by depth); `order`, how it searched, in a
    sentence's words; `short_of_complete`, what to try for a complete verdict after a bounded
    pass."""

    name: str
    summary: str
    exhaustive: bool
    order: str
    short_of_complete: str


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("explicit", "every reachable state, breadth first (numpy, C with --native, per state for large pools)",
           exhaustive=True, order="breadth first", short_of_complete="raise or drop the limit"),
    Engine("bmc", "every execution up to a depth, with z3 (prove: by induction)",
           exhaustive=True, order="depth by depth", short_of_complete="raise or drop the limit"),
    Engine("fuzz", "random runs, shrunk (Hypothesis)",
           exhaustive=False, order="random runs, then shrunk",
           short_of_complete="more --runs, or the explicit or bmc engine at small parameters"),
)}


@dataclass(frozen=True)
class Option:
    """An option of `api.check` that not every engine takes: its keyword, the engines that
    take it, and what to say to a run that gives it to another (`{engine}`: the one named)."""

    keyword: str
    engines: tuple[str, ...]
    refusal: str


_FUZZ = "--runs, --steps, --seed and --profile belong to the fuzz engine: add --engine fuzz"
_EXPLICIT = "--symmetry, --workers and --max-memory belong to the explicit engine"
#: What a run of another engine that gives --workers is told (ownership.api: on Ray, a fuzz
#: swarm is told its size is --searches)
EXPLICIT_ONLY = _EXPLICIT
_BOUNDS = "--max-states and --max-depth bound the explicit and bmc engines; fuzz takes --runs and --steps"
_CHECKPOINT = "--checkpoint and --resume belong to the explicit engine's breadth-first search"

#: In the order a run is checked: the first option given to an engine that does not take it is
#: the one refused.
OPTIONS: tuple[Option, ...] = (
    Option("symbolic", ("bmc",), "--symbolic needs the symbolic engine: add --engine bmc"),
    Option("runs", ("fuzz",), _FUZZ),
    Option("steps", ("fuzz",), _FUZZ),
    Option("seed", ("fuzz",), _FUZZ),
    Option("profile", ("fuzz",), _FUZZ),
    Option("symmetry", ("explicit",), _EXPLICIT),
    Option("max_memory", ("explicit",), _EXPLICIT),
    Option("searches", ("fuzz",), "--searches is the number of fuzz searches of a swarm: give it with --engine fuzz"
                                  " --ray ADDRESS"),
    Option("checkpoint", ("explicit",), _CHECKPOINT),
    Option("resume", ("explicit",), _CHECKPOINT),
    Option("ray", ("explicit", "fuzz"), "--ray runs the explicit engine (a partitioned search) or fuzz (a swarm);"
                                        " bmc runs in one process"),
    Option("native", ("explicit",), "--native compiles the explicit engine's search; --engine {engine} does not"
                                    " take it"),
    Option("max_states", ("explicit", "bmc"), _BOUNDS),
    Option("max_depth", ("explicit", "bmc"), _BOUNDS),
)

def engine_named(name: str) -> Engine:
    """The engine of that name, or a usage error that lists them."""
    engine = ENGINES.get(name)
    if engine is None:
        raise UsageError(f"unknown engine {name!r}; available: {', '.join(ENGINES)}")
    return engine


def given(value: Any) -> bool:
    """Whether an option's value says it was given (None, False and () say it was not)."""
    return value is not None and value is not False and value != ()


def refuse_foreign(name: str, options: Mapping[str, Any]) -> Engine:
    """The engine named, after refusing (UsageError) the first option it does not take."""
    engine = engine_named(name)
    for option in OPTIONS:
        if option.keyword in options and given(options[option.keyword]) and name not in option.engines:
            raise UsageError(option.refusal.format(engine=name))
    return engine
