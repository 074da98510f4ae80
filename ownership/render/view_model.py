"""The counterexample viewer's model: what `ownership show` shows of a trace, whatever draws it
(the terminal view, render/viewer.py; the HTML page, render/html.py; the sequence diagram,
render/mermaid.py).

The summary of the violation, the timeline of who acted (router, prefill, transfer, decode)
and what each step did, the page grid of each pool at each step (owner and content of every
page, marked: free, owned by the acting request, owned by another request, holding another
request's KV, write in flight), each step's changes and the property status per step, each
built-in property's words from lang/properties.py. It reads only the Trace (named values,
`Model.show`), never a spec, so a trace from any engine or tool is shown without executing
anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..lang.properties import MONITOR_ONLY, PROPERTIES, STALE_READ, WRITE_UNOWNED
from ..trace import Step, Trace
from .states import (
    _REQUEST_NAME,
    _holders,
    _ids,
    _owner_text,
    _page_holders,
    _page_values,
    _text,
    acting_request,
    pools_of,
)
from .text import show_value
from .why import Why, why_of

#: Actors in the order their swimlanes appear: the request's path through a PD deployment.
LANE_ORDER = ("client", "router", "prefill", "transfer", "decode")

#: The lane of a step whose action names no actor.
NO_ACTOR = "system"

#: Page marks: name -> (symbol in the terminal, rich style, what it means). Listed in the
#: order the symbols of one page are written.
MARKS: dict[str, tuple[str, str, str]] = {
    "free": (".", "dim", "free"),
    "mine": ("#", "green", "owned by the request in view (the one acting at the step)"),
    "other": ("o", "magenta", "owned by another request"),
    "foreign": ("!", "bold red", "holds KV of a request other than its owner (a read by the owner leaks it)"),
    "unwritten": ("?", "yellow", "owned but never written (a read sees garbage)"),
    "inflight": ("~", "cyan", "a transfer's write into it is in flight"),
    "outbound": ("^", "cyan", "a transfer is reading out of it"),
    "pinned": ("p", "blue", "pinned: a holder keeps its last reference from going (a pool with pins)"),
    "violation": ("*", "bold white on red", "named in the violation"),
}

#: Property status at a step: name -> (word, rich style, meaning).
STATUSES: dict[str, tuple[str, str, str]] = {
    "ok": ("ok", "green", "no violation recorded at this step"),
    "hazard": ("hazard", "yellow", "not violated, but the pages are set up for it"),
    "violated": ("VIOLATED", "bold white on red", "violated at this step"),
    "after": ("-", "dim", "after the violation: not checked"),
    "unmet": ("unmet", "bold yellow", "still unmet: a step of the run that violates it forever (a lasso)"),
}


# --------------------------------------------------------------------------- the view model


@dataclass(frozen=True)
class PageCell:
    """One page of a pool at one step: who owns it, whose KV it holds, and its marks.

    `owner` is "free", a request, or (a shared pool) the holders joined by "+"."""

    page: int
    owner: str
    content: str
    inflight: str
    outbound: str
    marks: tuple[str, ...]
    holders: tuple[str, ...] = ()
    label: int | None = None  # the page's own id, where it is not its position (a monitor's trace)

    @property
    def shown(self) -> int:
        return self.page if self.label is None else self.label

    @property
    def symbols(self) -> str:
        return "".join(MARKS[m][0] for m in self.marks)


@dataclass(frozen=True)
class PoolGrid:
    """The page grid of one pool at one step, seen from the acting request.

    `hidden`: pages left out of a large pool's grid (free, and unchanged at this step)."""

    pool: str
    reader: str | None
    cells: list[PageCell]
    free_list: list[Any] | None = None
    hidden: int = 0

    def free_list_text(self, shown: int = 16) -> str | None:
        """The free list, its head only when long."""
        if self.free_list is None:
            return None
        fl = self.free_list
        if len(fl) <= shown:
            return show_value(fl)
        return "[" + " ".join(map(str, fl[:shown])) + f" ...] ({len(fl):,} pages)"


@dataclass(frozen=True)
class Message:
    """A handoff between lanes: the request moved from one actor's step to another's."""

    source_step: int
    step: int
    src: str
    dst: str
    request: str


@dataclass
class PropertyStatus:
    """The status of one property at one step, with a note in plain words."""

    status: str   # a key of STATUSES
    note: str = ""


@dataclass
class TraceView:
    """Everything the viewers show, computed once from a Trace."""

    trace: Trace
    pools: list[str]
    lanes: list[str]
    messages: list[Message]
    properties: list[str]
    status: list[dict[str, PropertyStatus]] = field(default_factory=list)
    #: what each built-in property among `properties` means (property_words)
    about: dict[str, str] = field(default_factory=dict)
    #: each step's narrative in the protocol's words (the trace file's `#meta.narrative`), or None
    narrative: list[str | None] | None = None
    #: why the violation happened (render/why.py), None without one
    why: Why | None = None
    #: the lasso's words (loop_note), None for a finite trace
    loop: str | None = None


def arg_text(v: Any) -> str:
    """An action argument as text; a Quint variant {"tag": T, "value": V} reads T(V)."""
    if isinstance(v, dict):
        if set(v) == {"tag", "value"}:
            inner = v["value"]
            empty = inner == () or inner == [] or inner == {}
            return str(v["tag"]) if empty else f"{v['tag']}({arg_text(inner)})"
        return "{" + ", ".join(f"{k}: {arg_text(x)}" for k, x in v.items()) + "}"
    return show_value(v)


def step_label(step: Step) -> str:
    """The action of a step with its arguments, "initial state" for step 0."""
    if step.action is None:
        return "initial state"
    return f"{step.action}(" + ", ".join(f"{k}={arg_text(v)}" for k, v in step.args.items()) + ")"


def _reads(holder: str, trace: Trace | None) -> bool:
    """Whether a holder of a page is a request, the only kind of holder that reads a page
    (`read(pool, r, pages)`, `send(r, ...)`). A pool's other owners (`owners=("cache",)`, a
    store job, the radix tree's reference) hold a page but never read it as a request. In a
    spec's trace a request is r1, r2, ...; in a monitored log's, any id the engine gave it."""
    if trace is not None and trace.engine == "monitor":
        return True
    return bool(_REQUEST_NAME.fullmatch(holder))


def _judged(content: str, trace: Trace | None) -> bool:
    """Whether a page's content is a request's KV (or none) that a read can be judged against:
    a key of a keyed pool (a prefix-cache block's hash) is read with the key it expects
    (`read(pool, r, pages, key=k)`), which a trace does not record, so it is not judged."""
    if content in ("none", ""):
        return True
    if trace is not None and trace.engine == "monitor":
        return not content.startswith("key:")
    return bool(_REQUEST_NAME.fullmatch(content))


def stale_readers(content: str, holders: tuple[str, ...], trace: Trace | None = None) -> tuple[str, ...]:
    """The holders of a page whose read of it now would be a stale-read: THE hazard rule of
    both viewers (page marks `foreign` and `unwritten`, the stale-read row of the property
    status), in one place.

    It mirrors the kernel's rule (ownership/kernel.py `_read`, the property `stale-read` of
    ownership/lang/properties.py): a read of page p by request r is stale when `content[p]`,
    whose KV the page holds (none if never written: `written` is the set of pages holding
    a request's KV), is not r's own KV. So a page is a hazard for each *request* among its
    holders whose KV it does not hold. A holder that is not a request (a shared or counted
    pool's owner: the prefix cache's reference, a store job) never reads as a request, so a
    page it alone holds, whatever its content, is no hazard; nor is a page of a keyed pool
    (see `_judged`)."""
    if not _judged(content, trace):
        return ()
    return tuple(h for h in holders if _reads(h, trace) and h != content)


def reader_at(trace: Trace, i: int) -> str | None:
    """Whose eyes the page grid of step i takes: the acting request, else the violating one."""
    own = acting_request(trace.steps[i])
    if own is not None:
        return own
    v = trace.violation
    if v is not None and 0 <= v.step < len(trace.steps):
        return acting_request(trace.steps[v.step])
    return None


#: Above this many pages a pool's grid shows only the pages worth reading (held, in flight,
#: changed at the step, named in the violation): a fuzz trace can have thousands of pages.
GRID_PAGE_LIMIT = 64


def page_grid(trace: Trace, i: int, pool: str, *, compact: bool = False) -> PoolGrid:
    """The page grid of `pool` at step i; `compact`: a large pool's free, unchanged pages left out."""
    grid = _full_grid(trace, i, pool)
    if not compact or len(grid.cells) <= GRID_PAGE_LIMIT:
        return grid
    before = _full_grid(trace, i - 1, pool).cells if i else []

    def same(c: PageCell) -> bool:
        if c.page >= len(before):
            return False
        b = before[c.page]
        return (b.holders, b.content, b.inflight, b.outbound) == (c.holders, c.content, c.inflight, c.outbound)

    keep = [c for c in grid.cells if c.marks != ("free",) or not same(c)]
    return PoolGrid(grid.pool, grid.reader, keep, grid.free_list, len(grid.cells) - len(keep))


def _full_grid(trace: Trace, i: int, pool: str) -> PoolGrid:
    state = trace.steps[i].state
    holders = _page_holders(state, pool)
    size = len(holders)
    contents = _page_values(state, pool, "content", size, "none")
    inflight = _page_values(state, pool, "inflight", size, "none")
    outbound = _page_values(state, pool, "outbound", size, "none")
    pins = state.get(f"{pool}.pins")
    pinned = [bool(_holders(x)) for x in pins] if isinstance(pins, list) else [False] * size
    reader = reader_at(trace, i)
    v = trace.violation
    named = {p for pl, p in v.pages if pl == pool} if v is not None and v.step == i else set()
    cells = []
    for p in range(size):
        held, content = holders[p], contents[p]
        marks: list[str] = []
        if not held:
            marks.append("free")
        else:
            marks.append("mine" if reader in held else "other")
            if stale_readers(content, held, trace):
                marks.append("unwritten" if content == "none" else "foreign")
        if inflight[p] != "none":
            marks.append("inflight")
        if outbound[p] != "none":
            marks.append("outbound")
        if p < len(pinned) and pinned[p]:
            marks.append("pinned")
        if p in named:
            marks.append("violation")
        label = trace.page_id(pool, p) if trace.page_ids else None
        cells.append(PageCell(p, _owner_text(held), content, inflight[p], outbound[p], tuple(marks), held, label))
    fl = state.get(f"{pool}.free_list")
    return PoolGrid(pool, reader, cells, list(fl) if isinstance(fl, list) else None)


def _pages_text(pool: str, pages: list[int]) -> str:
    return f"{pool} page{'s' if len(pages) > 1 else ''} " + ", ".join(map(str, pages))


def _column(state: dict[str, Any], pool: str, kind: str) -> list[str]:
    value = state.get(f"{pool}.{kind}")
    return [_text(x) for x in value] if isinstance(value, list) else []


def _pool_effects(before: dict[str, Any], after: dict[str, Any], pool: str,
                  ids: list[int] | None = None) -> list[str]:
    """What changed in one pool between two states, grouped by kind and request."""
    o0, o1 = _page_holders(before, pool), _page_holders(after, pool)
    c0, c1 = _column(before, pool, "content"), _column(after, pool, "content")
    f0, f1 = _column(before, pool, "inflight"), _column(after, pool, "inflight")
    b0, b1 = _column(before, pool, "outbound"), _column(after, pool, "outbound")
    groups: dict[tuple[str, str], list[int]] = {}
    for p in range(min(len(o0), len(o1))):
        if o0[p] == o1[p]:
            continue
        if len(o0[p]) <= 1 and len(o1[p]) <= 1 and o0[p] and o1[p]:
            groups.setdefault(("passes", f"{o0[p][0]}>{o1[p][0]}"), []).append(p)
            continue
        for r in o1[p]:
            if r not in o0[p]:
                groups.setdefault(("takes" if not o0[p] else "shares", r), []).append(p)
        for r in o0[p]:
            if r not in o1[p]:
                groups.setdefault(("frees" if not o1[p] else "releases", r), []).append(p)
    for p in range(min(len(c0), len(c1))):
        if c0[p] != c1[p]:
            landed = p < len(f0) and p < len(f1) and f0[p] == c1[p] and f1[p] == "none"
            groups.setdefault(("lands" if landed else "writes", c1[p]), []).append(p)
    for p in range(min(len(f0), len(f1))):
        if f0[p] != f1[p] and f1[p] != "none":
            groups.setdefault(("inflight", f1[p]), []).append(p)
    for p in range(min(len(b0), len(b1))):
        if b0[p] != b1[p] and b1[p] != "none":
            groups.setdefault(("outbound", b1[p]), []).append(p)
    out = []
    for (kind, who), ps in groups.items():
        where = _pages_text(pool, [ids[p] if ids is not None and p < len(ids) else p for p in ps])
        if kind == "takes":
            out.append(f"{who} takes {where}")
        elif kind == "shares":
            out.append(f"{who} shares {where}")
        elif kind == "frees":
            out.append(f"{who} frees {where}")
        elif kind == "releases":
            out.append(f"{who} releases {where} (still held)")
        elif kind == "passes":
            a, b = who.split(">", 1)
            out.append(f"{where} pass from {a} to {b}")
        elif kind == "lands":
            out.append(f"{who}'s KV lands in {where}")
        elif kind == "writes":
            out.append(f"{who}'s KV written to {where}" if who != "none" else f"{where} cleared")
        elif kind == "inflight":
            out.append(f"{who}'s KV in flight into {where}")
        else:
            out.append(f"{who}'s KV sent out of {where}")
    return out


def effects(trace: Trace, i: int, pools: list[str] | None = None) -> list[str]:
    """What step i did to the pages, in the protocol's words ("r1 takes decode pages 0, 1, 2")."""
    if i == 0:
        return []
    pools = pools_of(trace) if pools is None else pools
    before, after = trace.steps[i - 1].state, trace.steps[i].state
    return [text for pool in pools for text in _pool_effects(before, after, pool, trace.page_ids.get(pool))]


def lanes_of(trace: Trace) -> list[str]:
    """The swimlanes: the actors of the trace, router-prefill-transfer-decode first."""
    seen: list[str] = []
    for step in trace.steps[1:]:
        lane = step.actor or NO_ACTOR
        if lane not in seen:
            seen.append(lane)
    if any(a in seen for a in ("prefill", "transfer", "decode")):
        for a in ("prefill", "transfer", "decode"):
            if a not in seen:
                seen.append(a)
    known = [a for a in LANE_ORDER if a in seen]
    return known + [a for a in seen if a not in known]


def lane_of(step: Step) -> str:
    return step.actor or NO_ACTOR


def messages_of(trace: Trace) -> list[Message]:
    """A message wherever a request passes from one actor to another between its steps."""
    last: dict[str, int] = {}
    out = []
    for i, step in enumerate(trace.steps):
        if i == 0:
            continue
        r = acting_request(step)
        if r is None:
            continue
        j = last.get(r)
        if j is not None and lane_of(trace.steps[j]) != lane_of(step):
            out.append(Message(j, i, lane_of(trace.steps[j]), lane_of(step), r))
        last[r] = i
    return out


def _hazards(trace: Trace, i: int, pools: list[str]) -> dict[str, str]:
    """Properties set up to fail at step i (not violated): the pages and why, in words."""
    state = trace.steps[i].state
    stale: list[str] = []
    unowned: list[str] = []
    for pool in pools:
        holders = _page_holders(state, pool)
        size = len(holders)
        contents = _page_values(state, pool, "content", size, "none")
        inflight = _page_values(state, pool, "inflight", size, "none")
        by_pair: dict[tuple[str, str], list[int]] = {}
        for p in range(size):
            held = holders[p]
            if stale_readers(contents[p], held, trace):
                by_pair.setdefault((_owner_text(held), contents[p]), []).append(p)
            if inflight[p] != "none" and inflight[p] not in held:
                owner = f"owned by {_owner_text(held)}" if held else "free"
                unowned.append(f"{inflight[p]}'s transfer is in flight into {pool} page {trace.page_id(pool, p)} ({owner})")
        for (owner, content), ps in by_pair.items():
            what = "never written" if content == "none" else f"hold{'s' if len(ps) == 1 else ''} KV of {content}"
            verb = "is" if len(ps) == 1 else "are"
            where = _pages_text(pool, _ids(trace, pool, ps))
            stale.append(f"{where} {verb} owned by {owner} but {what}"
                         if content != "none" else f"{where} owned by {owner} {verb} {what}")
    out = {}
    for prop, where in ((STALE_READ, stale), (WRITE_UNOWNED, unowned)):
        if where:  # (the property's own note: NOTE(one-voice))
            out[prop] = "; ".join(where) + f": {PROPERTIES[prop].setup}."
    return out


def property_status(trace: Trace, pools: list[str]) -> tuple[list[str], list[dict[str, PropertyStatus]]]:
    """The properties and each one's status at each step (none for a foreign trace)."""
    if trace.foreign:
        return [], [{} for _ in trace.steps]
    v = trace.violation
    props = list(trace.properties) if trace.engine == "monitor" else [
        p for p, words in PROPERTIES.items() if words.always or p in trace.properties]
    if v is not None:
        props += [p for p in [v.property, *v.also] if p not in props]
    out = []
    # a lasso (trace.loop set) is a counterexample whole: every step of it was checked (the
    # safety properties held in each), and the violated property stays unmet to the end
    lasso = loop_note(trace) or ""
    for i in range(len(trace.steps)):
        hazards = _hazards(trace, i, pools)
        row: dict[str, PropertyStatus] = {}
        for prop in props:
            if v is not None and i == v.step and prop == v.property:
                row[prop] = PropertyStatus("violated", v.message)
            elif v is not None and i == v.step and prop in v.also:
                row[prop] = PropertyStatus("violated", f"also violated at step {i}")
            elif v is not None and i > v.step and trace.loop is not None and prop in (v.property, *v.also):
                row[prop] = PropertyStatus("unmet", lasso)
            elif v is not None and i > v.step and trace.loop is None:
                row[prop] = PropertyStatus("after")
            elif prop in hazards:
                row[prop] = PropertyStatus("hazard", hazards[prop])
            else:
                row[prop] = PropertyStatus("ok")
        out.append(row)
    return props, out


def property_words(props: Iterable[str]) -> dict[str, str]:
    """What each built-in property among `props` means, in its own words (lang/properties.py,
    NOTE(one-voice)): when it is violated, and what goes wrong then in a real engine. A spec's
    invariant has no entry (its words are its docstring, in the violation's message)."""
    table = {**PROPERTIES, **MONITOR_ONLY}
    return {p: f"violated when {table[p].when}; in a real engine: {table[p].hazard}" for p in props if p in table}


def loop_note(trace: Trace) -> str | None:
    """The lasso of a liveness counterexample in words, as both viewers write it: the steps
    after `trace.loop` repeat forever, or (loop at the last step) the run stops there, no
    action enabled, forever. None for a finite trace."""
    n = len(trace.steps) - 1
    if trace.loop is None or not 0 <= trace.loop <= n:
        return None
    if trace.loop < n:
        return f"step {n} is the state of step {trace.loop}: steps {trace.loop + 1}..{n} repeat forever"
    return f"the run stops at step {n} (no action enabled there, says the trace) and stays there forever"


def build_view(trace: Trace, narrative: list[str | None] | None = None) -> TraceView:
    """The view model of a trace: pools, lanes, messages, property status per step, and what
    both viewers tell of it: each step's narrative (`narrative`, one entry per step, as
    cli/show.py reads it from the trace file; dropped when the count differs), the why of the
    violation (render/why.py) and the lasso's words."""
    pools = pools_of(trace)
    props, status = property_status(trace, pools)
    if narrative is not None and (len(narrative) != len(trace.steps) or not any(narrative)):
        narrative = None
    return TraceView(trace, pools, lanes_of(trace), messages_of(trace), props, status, property_words(props),
                     narrative, why_of(trace, pools), loop_note(trace))


def title_of(trace: Trace) -> str:
    """One line naming the spec, its setting and the engine; or what kind of foreign trace."""
    if trace.foreign:
        nvars = len(trace.vars)
        return (f"ITF trace from another tool (no ownership annotations): {len(trace.steps)} states,"
                f" {nvars} variable{'s' if nvars != 1 else ''}")
    if trace.engine == "monitor":
        return f"page-event log ({trace.reproduce.removeprefix('ownership monitor ') or 'unnamed'}); checked by ownership monitor"
    name = trace.spec_class or "trace"
    spec = f" ({trace.spec})" if trace.spec else ""
    params = " ".join(f"{k}={v}" for k, v in trace.params.items()) or "none"
    fixes = ", ".join(trace.fixes) if trace.fixes else "none"
    engine = f"; engine {trace.engine}" if trace.engine else ""
    return f"spec {name}{spec}; parameters {params}; fixes {fixes}{engine}"


def check_step(trace: Trace, step: int | None) -> None:
    """Refuse a --step outside the trace, saying which steps exist."""
    from ..errors import UsageError

    if step is not None and not 0 <= step < len(trace.steps):
        raise UsageError(f"--step {step}: the trace has steps 0..{len(trace.steps) - 1}")


def marks_of(trace: Trace) -> dict[str, tuple[str, str, str]]:
    """The page marks a trace can show: `pinned` only where a pool keeps pins."""
    pins = any(k.endswith(".pins") for k in (trace.steps[0].state if trace.steps else {}))
    return {name: m for name, m in MARKS.items() if name != "pinned" or pins}
