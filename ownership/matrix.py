"""The design review's table: every release and fix of a spec against every property.

`ownership matrix SPEC` answers what a design review asks of a fix: does it close the bug,
what does it cost, what did it break. Each row is a run of the spec (a release of the real
engine, or one fix alone, or a set the user names); each property is checked in that run on
its own (`check --only PROPERTY`), so that a violation of one property does not hide the
others. A cell says what that search showed, never more: holds (every reachable state),
violated at step N (the shortest trace), bounded, or inconclusive. Each row also carries the
run as a whole: its verdict, the states it covered, and each @measure of the spec.

Built on ownership.api.check (one search per cell): nothing here searches or prints.
Rendered as a terminal table, Markdown for a pull request or a docs page, and JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError
from .lang.loader import load_spec
from .result import CheckResult, Verdict


@dataclass(frozen=True)
class Row:
    """One run of the spec: a release's fixes or a set of fixes."""

    label: str                 # as the table shows it: "0.5.19", "--fix door-retire", "no fix"
    release: str | None = None
    fixes: tuple[str, ...] = ()

    def options(self) -> list[str]:
        """The run's options on the command line."""
        out = ["--release", self.release] if self.release else []
        for fx in self.fixes:
            out += ["--fix", fx]
        return out


@dataclass
class Cell:
    """What one search of one property showed in one run."""

    word: str                  # holds | violated | bounded | inconclusive
    steps: int | None = None   # violated: the shortest trace's length
    states: int = 0
    trace: str | None = None   # where the counterexample was written (with an output folder)
    stopped_by: str | None = None
    found: CheckResult | None = field(default=None, repr=False)  # a violation: the result, with its trace

    def text(self) -> str:
        if self.word == "violated":
            return f"violated at step {self.steps}"
        if self.word == "inconclusive" and self.stopped_by:
            return f"inconclusive ({self.stopped_by})"
        return self.word


@dataclass
class RunRow:
    """A row of the matrix: the run as a whole and a cell per property."""

    row: Row
    verdict: str
    states: int
    complete: bool
    cells: dict[str, Cell] = field(default_factory=dict)
    measures: dict[str, str] = field(default_factory=dict)  # each @measure in words, or why not


@dataclass
class Matrix:
    """The table: the spec, its properties (columns) and measures, and the rows."""

    spec: str
    spec_class: str
    params: dict[str, int]
    properties: list[str]
    measures: list[str]
    rows: list[RunRow]

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec, "spec_class": self.spec_class, "params": self.params,
            "properties": self.properties, "measures": self.measures,
            "rows": [{"label": r.row.label, "release": r.row.release, "fixes": list(r.row.fixes),
                      "verdict": r.verdict, "states": r.states, "complete": r.complete,
                      "properties": {p: {"result": c.word, "steps": c.steps, "states": c.states, "trace": c.trace,
                                         "stopped_by": c.stopped_by} for p, c in r.cells.items()},
                      "measures": r.measures} for r in self.rows],
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The header and the rows as text cells (the terminal's and Markdown's table)."""
        head = ["run", "verdict", "states", *self.properties, *self.measures]
        body = []
        for r in self.rows:
            states = f"{r.states:,}" if r.complete else f"{r.states:,} explored"
            body.append([r.row.label, r.verdict, states, *(r.cells[p].text() for p in self.properties),
                         *(r.measures.get(m, "") for m in self.measures)])
        return head, body

    def markdown(self) -> str:
        """A Markdown table; a violated cell links to its trace where one was written."""
        head, body = self.table()
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r, cells in zip(self.rows, body):
            for i, p in enumerate(self.properties):
                c = r.cells[p]
                if c.trace is not None:
                    cells[3 + i] = f"[{cells[3 + i]}]({c.trace})"
            lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
        return "\n".join(lines)

    def text(self) -> str:
        """The table for a terminal: aligned columns."""
        head, body = self.table()
        widths = [max(len(x) for x in col) for col in zip(head, *body)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        out = [f"spec {self.spec_class} ({self.spec}); parameters "
               + (" ".join(f"{k}={v}" for k, v in self.params.items()) or "defaults"), "", line(head),
               line(["-" * w for w in widths])]
        out += [line(cells) for cells in body]
        out.append("")
        out.append("Each property is checked on its own in each run (check --only PROPERTY): holds = in every reachable"
                   " state; violated at step N = its shortest trace; bounded / inconclusive = the search stopped.")
        return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def default_rows(spec: str) -> list[Row]:
    """The runs a review looks at: each release of the real engine, then each fix alone that
    no release is, and no fix at all when no release is without fixes."""
    cls = load_spec(spec)
    rows = [Row(release, release=release) for release in cls.releases]
    sets = {tuple(sorted(names)) for names in cls.releases.values()}
    if () not in sets:
        rows.insert(0, Row("no fix"))
    rows += [Row(f"--fix {name}", fixes=(name,)) for name in cls._fixes if (name,) not in sets]
    return rows


def parse_rows(spec: str, texts: list[str]) -> list[Row]:
    """Rows the user names: `none`, a release of the spec (`0.5.20`), or fixes joined by `+`
    (`door-retire+coverage-check`)."""
    cls = load_spec(spec)
    rows = []
    for text in texts:
        text = text.strip()
        if text in ("none", ""):
            rows.append(Row("no fix"))
        elif text in cls.releases:
            rows.append(Row(text, release=text))
        else:
            fixes = tuple(f.strip() for f in text.split("+") if f.strip())
            rows.append(Row("--fix " + " --fix ".join(fixes), fixes=fixes))
    return rows


def build(spec: str, *, rows: list[Row] | None = None, params: dict[str, int] | None = None,
          properties: list[str] | None = None, max_states: int | None = None, max_seconds: float | None = None,
          **engine: Any) -> Matrix:
    """The matrix of `spec`: for each row, the run as a whole (with its measures, where the spec
    has any and the engine is the explicit one), then each property alone. A violated cell
    keeps its result (`Cell.found`), whose trace the caller may write."""
    from . import api

    rows = rows or default_rows(spec)
    first = api.model_for(spec, params=params, fixes=rows[0].fixes, version=rows[0].release)
    known = first.property_names()
    checked = set(first.checked()) | set(first.liveness_checked())
    for p in properties or ():
        if p not in known:
            raise UsageError(f"--property {p!r}: no such property of {first.spec_cls.__name__}; properties:"
                             f" {', '.join(known)}")
    props = list(properties) if properties else [p for p in known if p in checked]
    explicit = engine.get("engine", "explicit") == "explicit"
    measures = [m.name for m in first.measures] if explicit else []
    table = []
    for row in rows:
        whole = api.check(spec, params=params, fixes=row.fixes, version=row.release, max_states=max_states,
                          max_seconds=max_seconds, measure=bool(measures), **engine)
        run = RunRow(row, whole.verdict.word, whole.coverage.states, whole.coverage.complete)
        for m in measures:
            got = whole.measures.get(m)
            run.measures[m] = got.brief() if got is not None else "not measured"
        for p in props:
            result = api.check(spec, params=params, fixes=row.fixes, version=row.release, only=[p],
                               max_states=max_states, max_seconds=max_seconds, **engine)
            run.cells[p] = _cell(result, p)
        table.append(run)
    return Matrix(spec, first.spec_cls.__name__, dict(first.env), props, measures, table)


def _cell(result: CheckResult, prop: str) -> Cell:
    cov = result.coverage
    if result.verdict is Verdict.VIOLATED:
        return Cell("violated", steps=len(result.trace.steps) - 1, states=cov.states, found=result)
    live = result.liveness.get(prop)
    if result.verdict is Verdict.VERIFIED and live not in (None, "holds on every behaviour"):
        return Cell("inconclusive", states=cov.states, stopped_by=live)
    if result.verdict is Verdict.VERIFIED:
        return Cell("holds", states=cov.states)
    return Cell(result.verdict.word, states=cov.states, stopped_by=cov.stopped_by)
