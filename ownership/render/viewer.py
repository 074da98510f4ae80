"""The counterexample viewer's model and its terminal view (`ownership show TRACE`).

A trace is shown as a reviewer reads a post-mortem: first the summary (the violation in plain
words, and why: the spec's beliefs about the violating request set against the kernel's truth
about its pages), the timeline of who acted (router, prefill, transfer, decode) and what each
step did, and the violating step; then every step with the page grid of each pool (owner and
content of every page, marked: free, owned by the acting request, owned by another request,
holding another request's KV, write in flight) and its changes (issues 5 and 17).

Everything here reads only the Trace (named values, `Model.show`), never a spec, so a trace
from any engine, or an ITF file from another tool, is shown without executing anything. The
same view model feeds the HTML page (render/html.py) and the sequence diagram
(render/mermaid.py). A view is a list of lines of (text, style) segments: plain text when
output is not a terminal, colour through rich when it is.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..lang.properties import MONITOR_ONLY, PROPERTIES, STALE_READ, WRITE_UNOWNED
from ..trace import Step, Trace
from .escape import printable
from .text import changes, show_value

#: The kernel's shadow slots of a pool, named "<pool>.<kind>" (ownership.lang.model).
KERNEL_KINDS = ("owner", "holders", "pins", "content", "inflight", "outbound", "free_list")

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
}

_REQUEST_NAME = re.compile(r"r\d+")


def _visible(text: str) -> str:
    """A segment of the terminal view, safe to print: a trace is untrusted, and an escape
    sequence written to a terminal can retitle it or clear it, a bidi override can hide text.
    Such characters are shown as escapes (render.escape.printable); a newline too, since a
    line of the view is one line on screen (a trace cannot forge lines of its own)."""
    return printable(text).replace("\n", "\\n")


Seg = tuple[str, str | None]
Line = list[Seg]


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


def _text(v: Any) -> str:
    return v if isinstance(v, str) else show_value(v)


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


def pools_of(trace: Trace) -> list[str]:
    """The pools whose kernel slots the trace holds: "<pool>.owner" (or "<pool>.holders" for
    a shared pool) as a list of pages."""
    if not trace.steps:
        return []
    state = trace.steps[0].state
    out = []
    for var, value in state.items():
        pool, _, kind = var.rpartition(".")
        if pool and kind in ("owner", "holders") and isinstance(value, list) and pool not in out:
            out.append(pool)
    return out


def _request_order(name: str) -> tuple[int, int, str]:
    return (0, int(name[1:]), "") if _REQUEST_NAME.fullmatch(name) else (1, 0, name)


def _holders(value: Any) -> tuple[str, ...]:
    """The requests holding a page: an owner ("free" for none) or a set of holders."""
    if isinstance(value, frozenset | set | list | tuple):
        return tuple(sorted((_text(x) for x in value), key=_request_order))
    text = _text(value)
    return () if text in ("free", "none", "") else (text,)


def _owner_text(holders: tuple[str, ...]) -> str:
    return "+".join(holders) if holders else "free"


def _page_holders(state: dict[str, Any], pool: str) -> list[tuple[str, ...]]:
    for kind in ("owner", "holders"):
        value = state.get(f"{pool}.{kind}")
        if isinstance(value, list):
            return [_holders(x) for x in value]
    return []


def _foreign_content(content: str, holders: tuple[str, ...], trace: Trace | None = None) -> bool:
    """KV of a request that does not hold the page (a key of a keyed pool is not judged). In a
    spec's trace a request is r1, r2, ...; in a monitored log's, any id the engine gave it."""
    if not holders or content in holders or content in ("none", ""):
        return False
    if trace is not None and trace.engine == "monitor":
        return not content.startswith("key:")  # a key (a prefix-cache block's hash) is not judged
    return bool(_REQUEST_NAME.fullmatch(content))


def is_kernel_var(var: str, pools: Iterable[str]) -> bool:
    """Whether a variable is a kernel shadow slot (ground truth) rather than a spec belief."""
    pool, _, kind = var.rpartition(".")
    return kind in KERNEL_KINDS and pool in set(pools)


def acting_request(step: Step) -> str | None:
    """The request an action acts for: its first argument that names a request (r1, r2, ...),
    else its `request` argument (an event of a monitored log names the engine's own id)."""
    for value in step.args.values():
        if isinstance(value, str) and _REQUEST_NAME.fullmatch(value):
            return value
    value = step.args.get("request")
    return value if isinstance(value, str) else None


def reader_at(trace: Trace, i: int) -> str | None:
    """Whose eyes the page grid of step i takes: the acting request, else the violating one."""
    own = acting_request(trace.steps[i])
    if own is not None:
        return own
    v = trace.violation
    if v is not None and 0 <= v.step < len(trace.steps):
        return acting_request(trace.steps[v.step])
    return None


def _page_values(state: dict[str, Any], pool: str, kind: str, size: int, default: str) -> list[str]:
    value = state.get(f"{pool}.{kind}")
    if not isinstance(value, list):
        return [default] * size
    out = [_text(x) for x in value[:size]]
    return out + [default] * (size - len(out))


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


def _ids(trace: Trace, pool: str, pages: list[int]) -> list[int]:
    """Positions of a pool's kernel slots as the pages' own ids (the same, but in a monitor's trace)."""
    return [trace.page_id(pool, p) for p in pages]


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
            if content == "none":
                marks.append("unwritten")
            elif _foreign_content(content, held, trace):
                marks.append("foreign")
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
            if held and (contents[p] == "none" or _foreign_content(contents[p], held, trace)):
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
    for i in range(len(trace.steps)):
        hazards = _hazards(trace, i, pools)
        row: dict[str, PropertyStatus] = {}
        for prop in props:
            if v is not None and i == v.step and prop == v.property:
                row[prop] = PropertyStatus("violated", v.message)
            elif v is not None and i == v.step and prop in v.also:
                row[prop] = PropertyStatus("violated", f"also violated at step {i}")
            elif v is not None and i > v.step:
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


def build_view(trace: Trace) -> TraceView:
    """The view model of a trace: pools, lanes, messages, property status per step."""
    pools = pools_of(trace)
    props, status = property_status(trace, pools)
    return TraceView(trace, pools, lanes_of(trace), messages_of(trace), props, status, property_words(props))


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


# --------------------------------------------------------------------------- why


@dataclass
class Belief:
    """One value of the spec's state about a request in view at the violating step, and why
    it is worth reading (`reasons`; none: shown for completeness)."""

    name: str          # "sent[r1]"
    value: Any
    reasons: list[str] = field(default_factory=list)
    rank: int = 9      # the order of highlighted beliefs: counts, then page sets, then changes


@dataclass
class Why:
    """Why a violation happened, as far as a trace shows it: the kernel's truth about the
    pages of the violation, the spec's beliefs about the request in view, and the belief
    that differs from the truth (e.g. `sent[r1] = 1` against `prompt[r1] = 3`)."""

    step: int
    request: str | None
    truth: list[str]
    beliefs: list[Belief]
    differs: str | None = None


def _pages_word(pages: list[int]) -> str:
    if not pages:
        return "no page"
    return ("page " if len(pages) == 1 else "pages ") + ", ".join(map(str, pages))


def why_of(trace: Trace, pools: list[str] | None = None) -> Why | None:
    """The why of the trace's violation (None without one, or for a foreign trace).

    Truth: in each pool the violation names, the pages the request in view owns, those that
    hold its KV, and what the violation's pages hold instead. Beliefs: the spec's slots about
    that request, highlighted when they hold the violation's pages, were changed by the
    violating step, or equal one of the truth's counts (the pages it owns, the pages holding
    its KV); two beliefs equal to two different counts are the belief that differs."""
    v = trace.violation
    if v is None or trace.foreign or not 0 <= v.step < len(trace.steps):
        return None
    pools = pools_of(trace) if pools is None else pools
    k = v.step
    state = trace.steps[k].state
    before = trace.steps[k - 1].state if k else state
    reader = acting_request(trace.steps[k])
    if reader is None:
        reader = next((r for r in v.requests if _REQUEST_NAME.fullmatch(r) and r != "r0"), None)
    named_pools = [pl for pl in pools if any(pool == pl for pool, _ in v.pages)]
    truth: list[str] = []
    counts: list[tuple[int, str, str]] = []   # (count, what it counts, pool)
    for pool in named_pools or pools:
        holders = _page_holders(state, pool)
        contents = _page_values(state, pool, "content", len(holders), "none")
        named = sorted(p for pl, p in v.pages if pl == pool)
        parts = []
        if reader is not None:
            owned = [p for p, held in enumerate(holders) if reader in held]
            holding = [p for p, c in enumerate(contents) if c == reader]
            if not named and not owned:
                continue
            parts.append(f"{reader} owns {_pages_word(_ids(trace, pool, owned))}")
            mine = [p for p in holding if p in owned] if owned else holding
            parts.append(f"its KV is in {_pages_word(_ids(trace, pool, mine))}" + (" only" if mine and len(mine) < len(owned) else ""))
            if owned:
                counts.append((len(owned), f"the {len(owned)} {pool} page{'s' if len(owned) != 1 else ''} {reader} owns", pool))
                counts.append((len(mine), f"the {len(mine)} {pool} page{'s' if len(mine) != 1 else ''} holding {reader}'s KV", pool))
        by_what: dict[str, list[int]] = {}
        for p in named:
            if p >= len(holders):
                continue
            held, content = holders[p], contents[p]
            if reader is not None and reader in held and content == reader:
                continue
            what = ("are never written" if content == "none" else f"hold KV of {content}")
            if reader is not None and held and reader not in held:
                what += f", owned by {_owner_text(held)}"
            elif not held:
                what += ", free"
            by_what.setdefault(what, []).append(p)
        for what, ps in by_what.items():
            if len(ps) == 1:
                what = what.replace("are never", "is never").replace("hold KV", "holds KV")
            parts.append(f"{_pages_word(_ids(trace, pool, ps))} {what}")
        if parts:
            truth.append(f"{pool}: " + "; ".join(parts))
    beliefs: list[Belief] = []
    named_pages = sorted({p for _, p in v.pages})
    for var, value in state.items():
        if is_kernel_var(var, pools):
            continue
        old = before.get(var)
        if isinstance(value, dict):
            if reader is None or reader not in value:
                continue
            name, val, was = f"{var}[{reader}]", value[reader], (old.get(reader) if isinstance(old, dict) else None)
        else:
            name, val, was = var, value, old
        b = Belief(name, val)
        if isinstance(val, frozenset | set) and named_pages:
            inside = [p for p in named_pages if p in val]
            if inside:
                b.reasons.append(f"holds {_pages_word(inside)} of the violation")
                b.rank = min(b.rank, 1)
        if isinstance(val, int) and not isinstance(val, bool):
            for count, what, _ in counts:
                if val == count:
                    b.reasons.append(f"= {what}")
                    b.rank = min(b.rank, 0)
                    break
        if k and was != val:
            b.reasons.append(f"changed by step {k} (was {show_value(was)})")
            b.rank = min(b.rank, 2)
        if isinstance(value, dict) or b.reasons:
            beliefs.append(b)
    beliefs.sort(key=lambda b: b.rank)
    differs = None
    if reader is not None:
        for pool in named_pools:
            own = next((c for c in counts if c[2] == pool and "owns" in c[1]), None)
            kv = next((c for c in counts if c[2] == pool and "holding" in c[1]), None)
            if own is None or kv is None or own[0] == kv[0]:
                continue
            a = next((b for b in beliefs if b.reasons and b.reasons[0] == f"= {own[1]}"), None)
            c = next((b for b in beliefs if b.reasons and b.reasons[0] == f"= {kv[1]}"), None)
            if a is not None and c is not None:
                differs = (f"{c.name} = {show_value(c.value)} against {a.name} = {show_value(a.value)}:"
                           f" {reader}'s KV fills {kv[0]} of the {own[0]} {pool} pages it owns")
                break
    return Why(k, reader, truth, beliefs, differs)


def _why_lines(why: Why) -> list[Line]:
    who = f", request {why.request}" if why.request else ""
    out: list[Line] = [[(f"Why (step {why.step}{who}): ", "bold"),
                        ("the spec's beliefs against the kernel's truth about the pages", None)]]
    for k, line in enumerate(why.truth):
        out.append([("  truth    " if k == 0 else "           ", "dim"), (line, None)])
    shown = [b for b in why.beliefs if b.reasons] + [b for b in why.beliefs if not b.reasons]
    width = max([len(f"{b.name} = {show_value(b.value)}") for b in shown] or [0])
    for k, b in enumerate(shown):
        text = f"{b.name} = {show_value(b.value)}"
        line: Line = [("  beliefs  " if k == 0 else "           ", "dim")]
        if b.reasons:
            line += [(f"{text:<{width}}", "bold yellow"), (f"  {'; '.join(b.reasons)}", None)]
        else:
            line.append((text, "dim"))
        out.append(line)
    if why.differs:
        out.append([("  differs  ", "dim"), (why.differs, "bold red")])
    return out


# --------------------------------------------------------------------------- terminal view


def marks_of(trace: Trace) -> dict[str, tuple[str, str, str]]:
    """The page marks a trace can show: `pinned` only where a pool keeps pins."""
    pins = any(k.endswith(".pins") for k in (trace.steps[0].state if trace.steps else {}))
    return {name: m for name, m in MARKS.items() if name != "pinned" or pins}


def _legend(trace: Trace) -> list[Line]:
    out: list[Line] = [[("Page marks: ", "bold")]]
    line: Line = [("  ", None)]
    for name, (sym, style, text) in marks_of(trace).items():
        if name == "free":
            text = "free"
        line += [(sym, style), (f" {text}", None)]
        if len("".join(t for t, _ in line)) > 60:
            out.append(line)
            line = [("  ", None)]
        else:
            line.append(("   ", None))
    if len(line) > 1:
        out.append(line)
    return out


def _grid_lines(grid: PoolGrid, width: int, indent: str) -> list[Line]:
    reader = f" (request in view: {grid.reader})" if grid.reader else ""
    out: list[Line] = [[(indent, None), (f"{grid.pool} pages{reader}:", "bold")]]
    label_w = 9
    widths = [max(len(str(c.shown)), len(c.owner), len(c.content), len(c.symbols)) + 2 for c in grid.cells]
    blocks: list[list[int]] = [[]]
    used = len(indent) + 2 + label_w
    for k, w in enumerate(widths):
        if blocks[-1] and used + w > width:
            blocks.append([])
            used = len(indent) + 2 + label_w
        blocks[-1].append(k)
        used += w
    pad = indent + "  "
    for block in blocks:
        rows: dict[str, Line] = {name: [(pad, None), (f"{name:<{label_w}}", "dim")]
                                 for name in ("page", "owner", "content", "marks")}
        for k in block:
            c, w = grid.cells[k], widths[k]
            own_style = MARKS[c.marks[0]][1] if c.marks else None
            content_style = "bold red" if "foreign" in c.marks else ("yellow" if "unwritten" in c.marks else None)
            rows["page"].append((f"{c.shown:<{w}}", "dim"))
            rows["owner"].append((f"{c.owner:<{w}}", own_style))
            rows["content"].append((f"{c.content:<{w}}", content_style))
            for m in c.marks:
                rows["marks"].append((MARKS[m][0], MARKS[m][1]))
            rows["marks"].append((" " * (w - len(c.symbols)), None))
        out.extend(rows.values())
    if grid.hidden:
        out.append([(pad, None), (f"... and {grid.hidden:,} more pages, free and unchanged at this step", "dim")])
    fl = grid.free_list_text()
    if fl is not None:
        out.append([(pad, None), ("free list ", "dim"), (fl, None)])
    return out


def _change_lines(trace: Trace, i: int, indent: str) -> list[Line]:
    if i == 0:
        return []
    diff = changes(trace.steps[i - 1].state, trace.steps[i].state)
    if trace.page_ids:  # a monitor's trace: the pages' own ids, not their positions
        diff = [(_page_element(trace, name), old, new) for name, old, new in diff]
    if not diff:
        return [[(indent, None), ("(no change)", "dim")]]
    return [[(indent, None), (f"{name}: ", None), (_short(show_value(old)), "dim"), (" -> ", "dim"),
             (_short(show_value(new)), "bold")] for name, old, new in diff]


def _page_element(trace: Trace, name: str) -> str:
    """`decode.owner[0]` as `decode.owner[page 9]` where position 0 is page 9."""
    pool, dot, rest = name.partition(".")
    kind, bracket, index = rest.partition("[")
    if not (dot and bracket and pool in trace.page_ids and index.rstrip("]").isdigit()):
        return name
    return f"{pool}.{kind}[page {trace.page_id(pool, int(index.rstrip(']')))}]"


def _short(text: str, limit: int = 200) -> str:
    """A value for a change line; a huge one (a free list of thousands of pages) cut short."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _step_head(trace: Trace, i: int, narrative: list[str | None] | None = None) -> Line:
    step = trace.steps[i]
    v = trace.violation
    line: Line = [(f"Step {i}  ", "bold")]
    if step.actor:
        line.append((f"[{step.actor}] ", "cyan"))
    line.append((step_label(step), "bold"))
    story = narrative[i] if narrative is not None and i < len(narrative) else None
    if story:
        line += [("  ", None), (story, "italic")]
    if v is not None and v.step == i:
        line += [("  ", None), (f"<-- VIOLATION: {v.property}{_after(v)}", "bold white on red")]
    return line


def _explain_lines(trace: Trace, indent: str) -> list[Line]:
    v = trace.violation
    if v is None:
        return []
    out: list[Line] = [[(indent, None), (f"violated: {v.property}", "bold red")],
                       [(indent + "  ", None), (v.message, None)]]
    if v.also:
        out.append([(indent + "  ", None), (f"(also violated at this step: {', '.join(v.also)})", None)])
    return out


def _state_lines(trace: Trace, i: int, view: TraceView, indent: str) -> list[Line]:
    state = trace.steps[i].state
    before = trace.steps[i - 1].state if i else state
    out: list[Line] = []
    for var, value in state.items():
        if is_kernel_var(var, view.pools):
            continue
        changed = i > 0 and before.get(var) != value
        out.append([(indent, None), (f"{var}: ", None), (show_value(value), "bold" if changed else None)]
                   + ([("  (changed)", "dim")] if changed else []))
    return out


def _status_lines(view: TraceView, i: int, indent: str) -> list[Line]:
    if not view.properties:
        return []
    row = view.status[i]
    line: Line = [(indent, None), ("properties: ", "bold")]
    for k, prop in enumerate(view.properties):
        st = row[prop]
        word, style, _ = STATUSES[st.status]
        line += [(f"{prop} ", None), (word, style)]
        if k < len(view.properties) - 1:
            line.append(("; ", None))
    out = [line]
    for prop in view.properties:
        st = row[prop]
        if st.status == "hazard":
            out.append([(indent + "  ", None), (f"{prop} hazard: ", "yellow"), (st.note, None)])
    return out


def _timeline(trace: Trace, view: TraceView, narrative: list[str | None] | None = None) -> list[Line]:
    n = len(trace.steps) - 1
    out: list[Line] = [[(f"Timeline ({n} step{'s' if n != 1 else ''})", "bold")]]
    wn = max(4, len(str(n)))
    actors = [s.actor or "" for s in trace.steps]
    wa = max([5] + [len(a) for a in actors])
    labels = [step_label(s) for s in trace.steps]
    wl = min(40, max(len(x) for x in labels))
    told = narrative is not None and any(narrative)
    out.append([(f"    {'step':>{wn}}  {'actor':<{wa}}  {'action':<{wl}}  {'what happened' if told else 'pages'}", "dim")])
    v = trace.violation
    for i in range(len(trace.steps)):
        bad = v is not None and v.step == i
        line: Line = [("  > " if bad else "    ", "bold red" if bad else None),
                      (f"{i:>{wn}}  ", None), (f"{actors[i]:<{wa}}  ", "cyan"),
                      (f"{labels[i]:<{wl}}", "bold red" if bad else None)]
        what = (narrative[i] or "") if told and narrative is not None and i < len(narrative) else "; ".join(
            effects(trace, i, view.pools))
        if what:
            line.append((f"  {what}", None))
        if bad and v is not None:
            line.append((f"  <-- violation: {v.property}{_after(v)}", "bold white on red"))
        out.append(line)
    if trace.loop is not None and trace.loop < n:
        out.append([("    ", None), (f"{'':>{wn}}  ", None),
                    (f"... step {n} is the state of step {trace.loop}: steps {trace.loop + 1}..{n} repeat forever",
                     "bold yellow")])
    elif trace.loop is not None:
        out.append([("    ", None), (f"{'':>{wn}}  ", None),
                    (f"... the run stops at step {n} (no action enabled there, says the trace) and stays there forever",
                     "bold yellow")])
    return out


def _foreign_table(trace: Trace, width: int) -> list[Line]:
    """The variables of each step as a table: a row per variable, a column per step."""
    variables = trace.vars
    n = len(trace.steps)
    cells = [[show_value(step.state[var]) for step in trace.steps] for var in variables]
    changed = [[i > 0 and trace.steps[i - 1].state[var] != trace.steps[i].state[var] for i in range(n)]
               for var in variables]
    heads = [f"{i}" if trace.steps[i].action is None else f"{i} {trace.steps[i].action}" for i in range(n)]
    label_w = max([8] + [len(v) for v in variables])
    col_w = [max([len(heads[i])] + [len(cells[r][i]) + 2 for r in range(len(variables))]) + 2 for i in range(n)]
    blocks: list[list[int]] = [[]]
    used = 2 + label_w + 2
    for i in range(n):
        if blocks[-1] and used + col_w[i] > width:
            blocks.append([])
            used = 2 + label_w + 2
        blocks[-1].append(i)
        used += col_w[i]
    out: list[Line] = []
    for b, block in enumerate(blocks):
        if b:
            out.append([])
        out.append([("  ", None), (f"{'step':<{label_w}}  ", "dim")] + [(f"{heads[i]:<{col_w[i]}}", "bold") for i in block])
        for r, var in enumerate(variables):
            line: Line = [("  ", None), (f"{var:<{label_w}}  ", None)]
            for i in block:
                text = cells[r][i] + (" *" if changed[r][i] else "")
                line.append((f"{text:<{col_w[i]}}", "bold" if changed[r][i] else None))
            out.append(line)
    out.append([("  (* changed at this step)", "dim")])
    return out


def render_view(trace: Trace, *, step: int | None = None, diff: bool = False, width: int = 100,
                narrative: list[str | None] | None = None) -> list[Line]:
    """The terminal view of a trace as styled lines.

    Default: the summary first (the violation, why it happened, the timeline, the violating
    step with its changes, page grids and property status), then every step with its changes
    and the page grids of the pools it touched (all pools at step 0), and the reproduce
    command. `step`: that step alone, with its full state and property status. `diff`: only
    what changed at each step. `narrative`: a line per step in the protocol's words (the
    `#meta.narrative` of each state that `ownership check --out` writes), shown in the
    timeline and beside each step's action."""
    check_step(trace, step)
    view = build_view(trace)
    out: list[Line] = [[(title_of(trace), "bold")]]
    v = trace.violation
    if trace.foreign:
        return out + [[]] + _foreign_view(trace, step=step, diff=diff, width=width)
    if narrative is not None and len(narrative) != len(trace.steps):
        narrative = None
    if v is not None:
        out.append([("violated: ", "bold red"), (v.property, "bold red"),
                    (f" after step {v.step}" if _after(v) else f" at step {v.step}", None)])
        out.append([("  ", None), (v.message, None)])
    else:
        out.append([("no violation recorded in this trace", None)])
    why = why_of(trace, view.pools)
    if why is not None and (step is None or step == why.step):
        out.append([])
        out.extend(_why_lines(why))
    show_pools = bool(view.pools) and not diff
    if step is not None:
        if show_pools:
            out.append([])
            out.extend(_legend(trace))
        out.append([])
        out.extend(_step_detail(trace, view, step, narrative, width, full=not diff, alone=True))
    elif diff:
        for i in range(len(trace.steps)):
            out.append([])
            out.append(_step_head(trace, i, narrative))
            if i == 0:
                out.extend([("    ", None), (f"{var}: {show_value(value)}", None)]
                           for var, value in trace.steps[0].state.items())
            out.extend(_change_lines(trace, i, "    "))
            if v is not None and v.step == i:
                out.extend(_explain_lines(trace, "  "))
    else:
        out.append([])
        out.extend(_timeline(trace, view, narrative))
        if show_pools:
            out.append([])
            out.extend(_legend(trace))
        if v is not None:
            out.append([])
            out.append([(f"The violating step, {v.step}:", "bold")])
            out.extend(_step_detail(trace, view, v.step, narrative, width, full=True, alone=False))
            out.append([])
            out.append([("Every step:", "bold")])
        for i in range(len(trace.steps)):
            out.append([])
            if v is not None and v.step == i:
                out.append(_step_head(trace, i, narrative) + [("  (above)", "dim")])
                continue
            out.append(_step_head(trace, i, narrative))
            what = effects(trace, i, view.pools)
            if what and narrative is not None:  # (without narratives the timeline shows them)
                out.append([("  ", None), ("; ".join(what), "italic")])
            if i == 0:
                out.extend(_state_lines(trace, 0, view, "    "))
            out.extend(_change_lines(trace, i, "    "))
            touched = [p for p in view.pools if i == 0 or any(
                trace.steps[i - 1].state.get(f"{p}.{k}") != trace.steps[i].state.get(f"{p}.{k}")
                for k in KERNEL_KINDS)]
            for pool in touched:
                out.extend(_grid_lines(page_grid(trace, i, pool, compact=True), width, "  "))
    if trace.reproduce:
        out.append([])
        out.append([("Reproduce: ", "bold"), (trace.reproduce, None)])
    return out


def _step_detail(trace: Trace, view: TraceView, i: int, narrative: list[str | None] | None, width: int,
                 *, full: bool, alone: bool) -> list[Line]:
    """One step in detail: its head, what it did to the pages, its changes; with `full` the
    page grids (of every pool), and, `alone`, the spec's state; its property status and, at
    the violating step, the explanation."""
    v = trace.violation
    out: list[Line] = [_step_head(trace, i, narrative)]
    what = effects(trace, i, view.pools)
    if what:
        out.append([("  ", None), ("; ".join(what), "italic")])
    out.extend(_change_lines(trace, i, "    "))
    if not full:
        return out
    for pool in view.pools:
        out.extend(_grid_lines(page_grid(trace, i, pool, compact=True), width, "  "))
    if alone:
        state = _state_lines(trace, i, view, "    ")
        if state:
            out.append([("  ", None), ("beliefs (spec state):", "bold")])
            out.extend(state)
    if alone or (v is not None and v.step == i):
        out.extend(_status_lines(view, i, "  "))
    if v is not None and v.step == i:
        out.extend(_explain_lines(trace, "  "))
    return out


def _foreign_view(trace: Trace, *, step: int | None, diff: bool, width: int) -> list[Line]:
    if step is not None:
        head: Line = [(f"Step {step}  ", "bold"), (step_label(trace.steps[step]), "bold")]
        if diff:
            return [head] + _change_lines(trace, step, "    ")
        before = trace.steps[step - 1].state if step else None
        w = max([8] + [len(v) for v in trace.vars])
        rows: list[Line] = [head]
        for var, value in trace.steps[step].state.items():
            changed = before is not None and before.get(var) != value
            rows.append([("  ", None), (f"{var:<{w}}  ", None), (show_value(value), "bold" if changed else None)]
                        + ([("  *", "dim")] if changed else []))
        return rows
    if diff:
        out: list[Line] = []
        for i in range(len(trace.steps)):
            if i:
                out.append([])
            out.append([(f"Step {i}  ", "bold"), (step_label(trace.steps[i]), "bold")])
            if i == 0:
                out.extend([("    ", None), (f"{var}: {show_value(value)}", None)]
                           for var, value in trace.steps[0].state.items())
            out.extend(_change_lines(trace, i, "    "))
        return out
    return _foreign_table(trace, width)


def to_plain(lines: list[Line]) -> str:
    """The view as plain text (no escape codes, trace text escaped); trailing spaces trimmed."""
    return "\n".join("".join(_visible(text) for text, _ in line).rstrip() for line in lines)


def to_ansi(lines: list[Line]) -> str:
    """The view with colour, through rich. Each segment is escaped first, then appended to a
    rich Text object with our own style: trace text is never read as rich markup (a request
    named "[bold red]x" shows those characters) and carries no control character."""
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard", width=10_000,
                      highlight=False, soft_wrap=True, emoji=False)
    for line in lines:
        text = Text()
        for chunk, style in line:
            text.append(_visible(chunk), style=style or "")
        text.rstrip()
        console.print(text)
    return buf.getvalue().rstrip("\n")


def render_show(trace: Trace, *, step: int | None = None, diff: bool = False,
                color: bool = False, width: int = 100, narrative: list[str | None] | None = None) -> str:
    """`ownership show TRACE`: the terminal view, plain or coloured."""
    lines = render_view(trace, step=step, diff=diff, width=width, narrative=narrative)
    return to_ansi(lines) if color else to_plain(lines)


def _after(v: Any) -> str:
    """A log's divergence from a spec (ownership monitor --spec) is found after the trace's last
    step: the log's next action, refused by the spec, is not a step of it."""
    return " after this step" if v.property == "diverged" else ""
