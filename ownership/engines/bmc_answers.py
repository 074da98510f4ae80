"""What the symbolic engine answers: its coverage, its result, the parametric answer (which
values of the symbolic parameters break the spec) and the counterexample to induction.

Plain data, below every other layer of the symbolic engine (ownership.engines.bmc): nothing
here loads z3 or asks a solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..interpret.smt_params import SymbolicParam
from ..lang.model import Binding, Model
from ..result import CheckResult, Coverage
from ..trace import Trace

#: With `sweep`, stop listing violating parameter values after this many.
SWEEP_LIMIT = 64


@dataclass(frozen=True)
class SymbolicCoverage(Coverage):
    """What a symbolic run covered: executions up to a depth, or every depth by induction.

    `states` and `transitions` stay 0: a symbolic engine does not enumerate states."""

    method: str = "bmc"            # "bmc" | "k-induction"
    k: int | None = None           # the k that proved the properties
    queries: int = 0

    def describe(self) -> str:
        if self.complete and self.method == "k-induction":
            return f"every reachable state at every depth (proved by k-induction with k = {self.k})"
        if self.complete:
            return (f"every execution: none is longer than {self.depth} steps, and every execution of at"
                    f" most {self.depth} steps was checked symbolically")
        if self.stopped_by == "violation":
            return f"every execution of fewer than {self.depth} steps, symbolically, before the violation at step {self.depth}"
        bound = self.bound_depth or 0
        if self.stopped_by == "induction-failed":
            return (f"every execution of at most {bound} steps (no violation within {bound} steps);"
                    f" induction failed for every k up to {self.k}, so longer executions are not covered")
        if self.stopped_by == "max-depth":
            return f"every execution of at most {bound} steps, symbolically: no violation within {bound} steps; longer executions were not checked"
        return f"every execution of at most {bound} steps, symbolically (stopped by {self.stopped_by}; longer executions were not checked)"

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out.update({"method": self.method, "k": self.k, "queries": self.queries})
        return out


@dataclass
class ParameterOutcome:
    """One assignment of the symbolic parameters that violates, and its shortest counterexample."""

    values: dict[str, int]
    depth: int
    property: str


@dataclass
class ParameterAnswer:
    """Which values of the symbolic parameters break the spec, and what holds for the rest."""

    params: list[SymbolicParam]
    violating: list[ParameterOutcome]
    rest: str              # what holds for every other value: "no violation within K steps", ...
    capped: bool = False   # the listing stopped at SWEEP_LIMIT values

    def safe_values(self) -> list[tuple[int, int]] | None:
        """For one parameter: the ranges of values not found violating."""
        if len(self.params) != 1:
            return None
        p = self.params[0]
        bad = {o.values[p.name] for o in self.violating}
        return _ranges([v for v in range(p.lo, p.hi + 1) if v not in bad]) if p.hi - p.lo < 1 << 16 else None

    def describe(self) -> str:
        """The answer in words, e.g. `prefill_pool in 1..2: stale-read in 6 steps; 3..8: no ...`."""
        lines = []
        if len(self.params) == 1:
            name = self.params[0].name
            by_result: dict[tuple[int, str], list[int]] = {}
            for o in self.violating:
                by_result.setdefault((o.depth, o.property), []).append(o.values[name])
            for (depth, prop), values in sorted(by_result.items()):
                lines.append(f"{name} in {_show_ranges(_ranges(sorted(values)))}: {prop} (shortest counterexample: {depth} steps)")
            safe = self.safe_values()
            if safe is None or safe:
                where = _show_ranges(safe) if safe else "every other value"
                lines.append(f"{name} in {where}: {self.rest}")
        else:
            for o in self.violating:
                vals = ", ".join(f"{k}={v}" for k, v in o.values.items())
                lines.append(f"{vals}: {o.property} (shortest counterexample: {o.depth} steps)")
            lines.append(f"every other combination in {', '.join(p.show() for p in self.params)}: {self.rest}")
        if self.capped:
            lines.append(f"(listing stopped after {SWEEP_LIMIT} violating values; more may violate)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "params": {p.name: [p.lo, p.hi] for p in self.params},
            "violating": [{"values": o.values, "depth": o.depth, "property": o.property} for o in self.violating],
            "rest": self.rest,
            "capped": self.capped,
        }


def _ranges(values: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def _show_ranges(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in ranges)


@dataclass
class InductionFailure:
    """A counterexample to induction: k steps that keep every property from a state that may be
    unreachable, into a state that breaks one. Not a bug by itself (docs/engines.md)."""

    k: int
    states: list[tuple[int, ...]]   # k + 1 states (k + 2 when the failure is a step's flag)
    bindings: list[Binding]
    property: str
    message: str
    params: dict[str, int]
    trace: Trace                    # the same run as a Trace; its first state is NOT the initial state
    hint: str

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "property": self.property,
            "message": self.message,
            "params": self.params,
            "possibly_unreachable": True,
            "steps": [{"action": s.action, "args": s.args, "state": _jsonable(s.state)} for s in self.trace.steps],
            "hint": self.hint,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, frozenset | set):
        return sorted(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


@dataclass
class SymbolicResult(CheckResult):
    """A CheckResult of the symbolic engine, with what only it can say."""

    symbolic: list[SymbolicParam] = field(default_factory=list)
    witness: dict[str, int] = field(default_factory=dict)   # the symbolic parameters' values in the trace
    witness_model: Model | None = None                      # the model at those values (the trace's)
    parameters: ParameterAnswer | None = None
    k: int | None = None                                    # prove: the k that proved it
    cti: InductionFailure | None = None                     # prove: why induction failed


__all__ = ["SWEEP_LIMIT", "InductionFailure", "ParameterAnswer", "ParameterOutcome", "SymbolicCoverage", "SymbolicResult"]
