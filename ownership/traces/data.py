"""A trace as data: the Violation, each Step (an action, its arguments, the state after it) and
the Trace, with the violation's JSON form. States are named values (`Model.show`), so a
trace is shown and written without the spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceFormatError
from .json_values import _field, _is_int, _is_names, _kind


@dataclass
class Violation:
    """A property that fails at a step, with the requests and pages involved."""

    property: str
    step: int
    message: str
    requests: list[str] = field(default_factory=list)
    pages: list[tuple[str, int]] = field(default_factory=list)  # (pool, page)
    also: list[str] = field(default_factory=list)  # other properties violated at the same step

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "step": self.step,
            "message": self.message,
            "requests": self.requests,
            "pages": [{"pool": pool, "page": p} for pool, p in self.pages],
            "also": self.also,
        }

    @staticmethod
    def from_json(d: Any, where: str = "violation") -> Violation:
        """A Violation from its JSON form, each field's type checked (TraceFormatError)."""
        if not isinstance(d, dict):
            raise TraceFormatError(f"{where}: expected an object, got {_kind(d)}")
        for key in ("property", "step", "message"):
            if key not in d:
                raise TraceFormatError(f"{where}: lacks {key!r}")
        pages = _field(d, "pages", where, "a list of {\"pool\": NAME, \"page\": N} objects",
                       lambda v: isinstance(v, list), [])
        for i, x in enumerate(pages):
            if not (isinstance(x, dict) and isinstance(x.get("pool"), str) and _is_int(x.get("page"))):
                raise TraceFormatError(f"{where}.pages[{i}]: expected an object {{\"pool\": NAME, \"page\": N}},"
                                       f" got {_kind(x)}")
        return Violation(
            property=_field(d, "property", where, "a string (a property's name)", lambda v: isinstance(v, str), ""),
            step=_field(d, "step", where, "a step number, 0 or more", lambda v: _is_int(v) and v >= 0, 0),
            message=_field(d, "message", where, "a string", lambda v: isinstance(v, str), ""),
            requests=list(_field(d, "requests", where, "a list of request names", _is_names, [])),
            pages=[(x["pool"], x["page"]) for x in pages],
            also=list(_field(d, "also", where, "a list of names of properties", _is_names, [])),
        )


@dataclass
class Step:
    """One state of a trace and the action that produced it (None for the initial state)."""

    action: str | None
    args: dict[str, Any]
    state: dict[str, Any]
    actor: str | None = None

    def label(self) -> str:
        if self.action is None:
            return "initial state"
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.action}({inner})"


@dataclass
class Trace:
    """A run of a spec: steps[0] is the initial state; `violation` says what failed, if anything."""

    steps: list[Step]
    violation: Violation | None = None
    spec: str = ""              # how to name the spec again: a shipped name or a path
    spec_class: str = ""
    params: dict[str, int] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    version: str | None = None  # the engine release whose fixes were on, if one was named
    engine: str = ""
    reproduce: str = ""
    properties: list[str] = field(default_factory=list)  # the properties that were checked
    foreign: bool = False       # read from an ITF file without our annotations
    #: the real page id of each position of a pool's kernel slots, where they are not 0..n-1
    #: (a monitor's trace shows only the pages of its violation, by the engine's own ids)
    page_ids: dict[str, list[int]] = field(default_factory=dict)
    #: a lasso (a liveness counterexample): the last state is the state of step `loop`, and the
    #: run repeats steps loop+1.. forever; loop == the last step: the run stops there (no
    #: action is enabled) and stays. None: a finite run (a safety counterexample).
    loop: int | None = None

    def page_id(self, pool: str, index: int) -> int:
        """The page id shown for position `index` of a pool's kernel slots."""
        ids = self.page_ids.get(pool)
        return ids[index] if ids is not None and 0 <= index < len(ids) else index

    @property
    def vars(self) -> list[str]:
        return list(self.steps[0].state) if self.steps else []
