"""The engines a user names, and the options each takes (issue 30, item 2).

One table for what was a chain of ifs in ownership.api and the wording of ownership.render:
`ENGINES` says, for each engine a user can name (`--engine`, `api.check(engine=...)`), the
frozen settings class of the options it takes, what its "no violation" covers and how its
counterexamples are found; `OPTIONS` says what to tell a user who gives an option of
`api.check` (and `ownership check`) to an engine whose settings do not have it.
`settings_for` checks a run's options against both, before the spec is even loaded, and gives
the run's settings; combinations of options one engine takes (--ray with --checkpoint, ...)
are the run's own business (ownership.api.check_distributed).

A new engine is a row here with its settings class, its module under ownership/engines/, and
its branch in ownership.api._run_engine (docs/CHANGING.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .errors import UsageError


@dataclass(frozen=True)
class ExplicitSettings:
    """What a run of the explicit engine takes: its bounds, the batch search's memory, workers
    and symmetry, the compiled search (`native`), the reachable graph's measures, and the
    partitioned search's Ray address and checkpoint folders."""

    max_states: int | None = None
    max_depth: int | None = None
    max_memory: int | None = None
    workers: int | None = None  # (None: 1 in this process; on Ray, the cluster's CPUs)
    symmetry: bool = False
    native: bool = False
    measure: bool = False
    ray: str | None = None
    checkpoint: str | None = None
    resume: str | None = None


@dataclass(frozen=True)
class BmcSettings:
    """What a run of the bmc engine takes: its bounds and the parameters left symbolic."""

    max_states: int | None = None
    max_depth: int | None = None
    symbolic: tuple[str, ...] = ()


@dataclass(frozen=True)
class FuzzSettings:
    """What a run of the fuzz engine takes: runs, steps, seed, the Hypothesis profile and
    example database, and a swarm's Ray address and number of searches."""

    runs: int | None = None
    steps: int | None = None
    seed: int | None = None
    profile: str | None = None
    database: Any = "default"
    ray: str | None = None
    searches: int | None = None


#: The settings of any engine.
Settings = ExplicitSettings | BmcSettings | FuzzSettings


@dataclass(frozen=True)
class Engine:
    """An engine a user can name: `settings`, the frozen class of the options it takes;
    `exhaustive`, its counterexamples are shortest (every state breadth first, or every
    execution depth by depth); `order`, how it searched, in a sentence's words;
    `short_of_complete`, what to try for a complete verdict after a bounded pass."""

    name: str
    summary: str
    settings: type[Settings]
    exhaustive: bool
    order: str
    short_of_complete: str

    def takes(self, keyword: str) -> bool:
        """Whether the engine's settings have this option."""
        return keyword in {f.name for f in fields(self.settings)}


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("explicit", "every reachable state, breadth first (numpy, C with --native, per state for large pools)",
           ExplicitSettings, exhaustive=True, order="breadth first", short_of_complete="raise or drop the limit"),
    Engine("bmc", "every execution up to a depth, with z3 (prove: by induction)",
           BmcSettings, exhaustive=True, order="depth by depth", short_of_complete="raise or drop the limit"),
    Engine("fuzz", "random runs, shrunk (Hypothesis)",
           FuzzSettings, exhaustive=False, order="random runs, then shrunk",
           short_of_complete="more --runs, or the explicit or bmc engine at small parameters"),
)}


@dataclass(frozen=True)
class Option:
    """An option of `api.check` that not every engine takes: its keyword, and what to say to a
    run that gives it to an engine whose settings do not have it (`{engine}`: the one named)."""

    keyword: str
    refusal: str

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines that take it: those whose settings have it."""
        return tuple(name for name, engine in ENGINES.items() if engine.takes(self.keyword))


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
    Option("symbolic", "--symbolic needs the symbolic engine: add --engine bmc"),
    Option("runs", _FUZZ),
    Option("steps", _FUZZ),
    Option("seed", _FUZZ),
    Option("profile", _FUZZ),
    Option("symmetry", _EXPLICIT),
    Option("max_memory", _EXPLICIT),
    Option("searches", "--searches is the number of fuzz searches of a swarm: give it with --engine fuzz"
                       " --ray ADDRESS"),
    Option("checkpoint", _CHECKPOINT),
    Option("resume", _CHECKPOINT),
    Option("ray", "--ray runs the explicit engine (a partitioned search) or fuzz (a swarm); bmc runs in one"
                  " process"),
    Option("native", "--native compiles the explicit engine's search; --engine {engine} does not take it"),
    Option("max_states", _BOUNDS),
    Option("max_depth", _BOUNDS),
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
    """The engine named, after refusing (UsageError) the first option of the table it does not take."""
    engine = engine_named(name)
    for option in OPTIONS:
        if option.keyword in options and given(options[option.keyword]) and not engine.takes(option.keyword):
            raise UsageError(option.refusal.format(engine=name))
    return engine


def settings_for(name: str, options: Mapping[str, Any]) -> Settings:
    """The settings of a run of the engine named: the options of the table it does not take
    refused first (UsageError); of the others (workers, measure, database: checked by the run
    itself, with words of their own), those its settings have."""
    engine = refuse_foreign(name, options)
    return engine.settings(**{k: v for k, v in options.items() if engine.takes(k)})
