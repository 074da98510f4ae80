"""Checking a log of page events against the ownership kernel, online (`ownership monitor`).

A running engine (or a recording of one, ownership.bridges.record) writes one JSON object per line:

    {"event": "alloc", "node": "decode", "request": "req-17", "pages": [3, 4], "t": 12.5}

with `event` one of EVENTS. `node` names a KV pool (a prefill or decode node's pool, or any
pool with a name of its own); `request` is the engine's request id (a string or an integer);
`pages` the page (or block) ids; `t` an optional timestamp. `send` also names where the data
goes (`to`, `to_pages`, one destination page per source page); `land` and `finish` may leave
`pages` out (every transfer of the request lands; the request leaves the node). `write` and
`read` may name a `key`: the content written or expected is then that key (a prefix-cache
block's hash) instead of the request's own KV, as in a keyed pool of the kernel.

Each event is checked as the kernel checks the operation of the same name
(ownership/kernel.py), on the pages it touches:

- alloc: the pages become the request's; a page that some request still holds is
  `alloc-held` (the monitor's own check: an allocator that hands out a held page, the
  visible end of a free that went wrong earlier);
- share: the request takes a reference to pages (a prefix-cache hit): a page may then have
  several holders, as in a shared pool of the kernel;
- free: a page the request does not hold is `double-free` (in a shared page: it drops its
  reference); a page with a transfer in flight into or out of it is `free-in-flight` when the
  free lets its last holder go (a page other holders keep is not freed);
- write: a page the request does not hold alone is `write-unowned`; the page then holds its
  KV (or the key);
- send: the source pages are read (`read-unowned`, `stale-read`) and marked outbound, the
  destination pages in flight;
- land: the destination pages in flight for the request now hold its KV (`write-unowned`
  where it no longer holds one: a transfer engine cannot cancel a write);
- read: `read-unowned` on a page the request does not hold, `stale-read` on one that does not
  hold its KV or the key it names (never written, or another's);
- finish: the request leaves the node; pages it still holds there are a `leak`.

Memory depends on the pages and requests alive, never on the log's length: the state is one
record per page touched and one set per live request (and at most MAX_COUNTED_REQUESTS request
ids kept for counting), and each page keeps the last `history`
events that touched it (its story). At the first violation the monitor stops and returns a
Finding: the property, the message, and a Trace of the story of the pages involved (the real
request ids and page numbers, the log's line of each step) that `ownership show` displays.
Nothing here prints; a malformed line is an EventLogError naming the file and line.
"""

from __future__ import annotations

import json
import math
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import EventLogError, shorten
from ..lang.properties import (
    ALLOC_HELD,
    DOUBLE_FREE,
    FREE_IN_FLIGHT,
    LEAK,
    MONITOR_ONLY,
    MONITORED,
    READ_UNOWNED,
    STALE_READ,
    WRITE_UNOWNED,
)
from ..lang.properties import PROPERTIES as WORDING
from ..trace import Step, Trace, Violation, unique_keys

#: The events a log may hold.
EVENTS = ("alloc", "share", "free", "write", "send", "land", "read", "finish")
#: What the monitor checks: the kernel's properties that a log shows, and alloc-held (a log
#: can show an allocator handing out a held page; a model's alloc takes free pages only).
#: The one list of lang/properties.py (NOTE(one-voice)).
PROPERTIES = MONITORED
#: Each property's words, the monitor's own (alloc-held) included.
WORDS = {**WORDING, **MONITOR_ONLY}

#: Bounds on one line of a log: its length, the pages of one event, a page id, a name.
MAX_LINE_BYTES = 1 << 20
MAX_PAGES = 1 << 16
MAX_PAGE_ID = 1 << 48
MAX_NAME = 200
#: Distinct request ids counted for the coverage line; beyond them it says "over N", so that
#: a log of ever new requests does not grow the monitor's memory.
MAX_COUNTED_REQUESTS = 100_000
#: Events kept per page for the trace of a violation (the page's story).
DEFAULT_HISTORY = 16


@dataclass(frozen=True)
class Event:
    """One line of a page-event log."""

    line: int
    kind: str
    node: str
    request: str
    pages: tuple[int, ...] | None  # None: land or finish without pages (all of the request's)
    to: str | None = None          # send: the destination pool
    to_pages: tuple[int, ...] = ()
    t: float | None = None
    key: str | None = None         # write, read: the content is this key, not the request's KV
    #: the line's other fields whose values are a string, a number or a boolean (for an
    #: adapter that maps events to a spec's actions, ownership.bridges.follow)
    fields: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        """The value of one of the line's other fields (`fields`), or `default`."""
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def label(self) -> str:
        pages = "" if self.pages is None else f", pages={list(self.pages)}"
        to = f", to={self.to}, to_pages={list(self.to_pages)}" if self.kind == "send" else ""
        key = f", key={self.key}" if self.key is not None else ""
        return f"{self.kind}(request={self.request}, node={self.node}{pages}{to}{key})"


@dataclass(slots=True)
class PageState:
    """What the kernel knows of one page: its holder, whose KV it holds, transfers on it."""

    holders: frozenset[str] = frozenset()  # the requests holding it (more than one: shared)
    content: str | None = None   # whose KV it holds ("key:K" for a key); None: never written
    inflight: str | None = None  # a transfer of this request is landing into it
    outbound: str | None = None  # a transfer of this request is reading out of it

    def copy(self) -> PageState:
        """A snapshot (dataclasses.replace took a third of the monitor's time)."""
        return PageState(self.holders, self.content, self.inflight, self.outbound)


Page = tuple[str, int]  # (node, page id)


@dataclass(frozen=True)
class Flag:
    """A property that an event breaks on one page (`other`: the holder or content found)."""

    property: str
    node: str
    page: int | None
    request: str
    other: str | None


@dataclass
class Finding:
    """The first violation of a log: the event, its flags, and the trace of its pages' story."""

    event: Event
    flags: list[Flag]
    message: str
    trace: Trace


@dataclass
class Coverage:
    """How much of the log was checked."""

    events: int = 0
    lines: int = 0
    pages: int = 0            # distinct (node, page) touched
    requests: int = 0         # distinct requests seen (counted up to MAX_COUNTED_REQUESTS)
    requests_capped: bool = False  # more distinct requests than were counted
    by_kind: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- reading


def _name(value: Any, what: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise EventLogError(f"{where}: {what} must be a string or an integer, got {shorten(json.dumps(value))}")
    text = str(value)
    if not text or len(text) > MAX_NAME:
        raise EventLogError(f"{where}: {what} must be 1 to {MAX_NAME} characters, got {len(text)}")
    return text


def _pages(value: Any, what: str, where: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise EventLogError(f"{where}: {what} must be a list of page ids (integers), got {shorten(json.dumps(value))}")
    if len(value) > MAX_PAGES:
        raise EventLogError(f"{where}: {what} has {len(value):,} pages; one event may name at most {MAX_PAGES:,}")
    for p in value:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < MAX_PAGE_ID:
            raise EventLogError(f"{where}: {what}: a page id is an integer from 0 to 2**48 - 1,"
                                f" got {shorten(json.dumps(p))}")
    if len(set(value)) < len(value):
        twice = next(p for p in value if value.count(p) > 1)
        raise EventLogError(f"{where}: {what} names page {twice} twice")
    return tuple(value)


def parse_event(text: str, line: int, where: str) -> Event | None:
    """One line of a log as an Event; None for a blank line. EventLogError names what is wrong."""
    if not text.strip():
        return None
    try:
        doc = json.loads(text, object_pairs_hook=lambda pairs: unique_keys(pairs, EventLogError))
    except RecursionError:
        raise EventLogError(f"{where}: nested too deeply to be an event") from None
    except EventLogError as e:
        raise EventLogError(f"{where}: {e}") from None
    except json.JSONDecodeError as e:
        raise EventLogError(f"{where}: not JSON ({shorten(str(e), 80)}); each line is one event object,"
                            ' e.g. {"event": "alloc", "node": "decode", "request": "r1", "pages": [3]}') from None
    except ValueError:  # (the one other ValueError of json.loads: int() refuses thousands of digits)
        raise EventLogError(f"{where}: an integer of over {sys.get_int_max_str_digits():,} digits is not read;"
                            " a page id is an integer from 0 to 2**48 - 1") from None
    if not isinstance(doc, dict):
        raise EventLogError(f"{where}: an event is a JSON object, got {type(doc).__name__}")
    kind = doc.get("event")
    if kind not in EVENTS:
        raise EventLogError(f"{where}: \"event\" must be one of {', '.join(EVENTS)}, got {shorten(json.dumps(kind))}")
    node = _name(doc.get("node"), '"node"', where)
    request = _name(doc.get("request"), '"request"', where)
    if "pages" in doc:
        pages: tuple[int, ...] | None = _pages(doc["pages"], '"pages"', where)
    elif kind in ("land", "finish"):
        pages = None
    else:
        raise EventLogError(f"{where}: a {kind} event needs \"pages\", the page ids it touches")
    to: str | None = None
    to_pages: tuple[int, ...] = ()
    if kind == "send":
        to = _name(doc.get("to"), '"to" (the destination pool of the send)', where)
        to_pages = _pages(doc.get("to_pages"), '"to_pages"', where)
        if len(to_pages) != len(pages or ()):
            raise EventLogError(f"{where}: a send needs one destination page per source page:"
                                f" {len(pages or ())} pages, {len(to_pages)} to_pages")
    key = None
    if "key" in doc:
        if kind not in ("write", "read"):
            raise EventLogError(f"{where}: only a write or a read names a \"key\"; a {kind} does not")
        key = _name(doc["key"], '"key"', where)
    t = doc.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t)):
        raise EventLogError(f"{where}: \"t\" (the timestamp) must be a number, got {shorten(json.dumps(t))}")
    fields = tuple((k, v) for k, v in doc.items()
                   if k not in _KNOWN and (isinstance(v, str | bool) or (isinstance(v, float) and math.isfinite(v))
                                           or (isinstance(v, int) and abs(v) <= MAX_PAGE_ID)))
    return Event(line, kind, node, request, pages, to, to_pages, None if t is None else float(t), key, fields)


#: The fields of an event line that the monitor reads itself.
_KNOWN = frozenset(("event", "node", "request", "pages", "to", "to_pages", "key", "t"))


def read_events(stream: IO[bytes], name: str) -> Iterator[Event]:
    """The events of a log, streamed line by line (a line over MAX_LINE_BYTES is refused)."""
    for no, raw in enumerate(iter(lambda: stream.readline(MAX_LINE_BYTES + 1), b""), start=1):
        where = f"{name}:{no}"
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise EventLogError(f"{where}: a line over {MAX_LINE_BYTES:,} bytes is not an event")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise EventLogError(f"{where}: not UTF-8 text (byte {e.start})") from None
        ev = parse_event(text, no, where)
        if ev is not None:
            yield ev


# --------------------------------------------------------------------------- the kernel's checks


def _holder_text(holders: frozenset[str]) -> str | None:
    """The holders of a page as a message names them: None (free), one id, or ids joined by +."""
    return "+".join(sorted(holders)) if holders else None


class _Pages:
    """The kernel's state of the pages touched: per page, per request, per transfer."""

    def __init__(self) -> None:
        self.page: dict[Page, PageState] = {}
        self.held: dict[tuple[str, str], set[int]] = {}         # (node, request) -> pages held
        self.landing: dict[str, dict[Page, Page | None]] = {}   # request -> dst page -> src page

    def get(self, p: Page) -> PageState:
        st = self.page.get(p)
        if st is None:
            st = self.page[p] = PageState()
        return st

    def _hold(self, node: str, request: str, page: int, on: bool) -> None:
        mine = self.held.setdefault((node, request), set())
        if on:
            mine.add(page)
        else:
            mine.discard(page)
            if not mine:
                del self.held[(node, request)]

    def _read(self, node: str, r: str, pages: Iterable[int], flags: list[Flag], key: str | None = None) -> None:
        expect = r if key is None else f"key:{key}"
        for p in pages:
            st = self.get((node, p))
            if r not in st.holders:
                flags.append(Flag(READ_UNOWNED, node, p, r, _holder_text(st.holders)))
            if st.content != expect:
                flags.append(Flag(STALE_READ, node, p, r, st.content))

    def _write(self, node: str, r: str, p: int, flags: list[Flag], key: str | None = None) -> None:
        st = self.get((node, p))
        if st.holders != {r}:
            others = st.holders - {r}
            flags.append(Flag(WRITE_UNOWNED, node, p, r, _holder_text(others) if others else None))
        st.content = r if key is None else f"key:{key}"

    def _take(self, node: str, r: str, p: int, st: PageState) -> None:
        st.holders = st.holders | {r}
        self._hold(node, r, p, True)

    def apply(self, ev: Event) -> list[Flag]:
        """Apply one event; the flags it raises (empty: every property holds)."""
        flags: list[Flag] = []
        node, r = ev.node, ev.request
        if ev.kind == "alloc":
            for p in ev.pages or ():
                st = self.get((node, p))
                if st.holders:
                    flags.append(Flag(ALLOC_HELD, node, p, r, _holder_text(st.holders)))
                    for h in st.holders:
                        self._hold(node, h, p, False)
                    st.holders = frozenset()
                self._take(node, r, p, st)
        elif ev.kind == "share":
            for p in ev.pages or ():
                self._take(node, r, p, self.get((node, p)))
        elif ev.kind == "free":
            for p in ev.pages or ():
                st = self.get((node, p))
                if r not in st.holders:
                    flags.append(Flag(DOUBLE_FREE, node, p, r, _holder_text(st.holders)))
                # (NOTE(last-reference): the page is freed when its last holder lets it go)
                if (st.inflight is not None or st.outbound is not None) and not st.holders - {r}:
                    flags.append(Flag(FREE_IN_FLIGHT, node, p, r, st.inflight or st.outbound))
                if r in st.holders:
                    st.holders = st.holders - {r}
                    self._hold(node, r, p, False)
        elif ev.kind == "write":
            for p in ev.pages or ():
                self._write(node, r, p, flags, ev.key)
        elif ev.kind == "read":
            self._read(node, r, ev.pages or (), flags, ev.key)
        elif ev.kind == "send":
            self._read(node, r, ev.pages or (), flags)
            assert ev.to is not None
            landing = self.landing.setdefault(r, {})
            for src, dst in zip(ev.pages or (), ev.to_pages):
                self.get((node, src)).outbound = r
                self.get((ev.to, dst)).inflight = r
                landing[(ev.to, dst)] = (node, src)
        elif ev.kind == "land":
            landing = self.landing.get(r, {})
            if ev.pages is None:
                chosen = list(landing)
            else:
                chosen = [(node, p) for p in ev.pages]
            for into in chosen:
                self._write(into[0], r, into[1], flags)
                self.get(into).inflight = None
                out_of = landing.pop(into, None)
                if out_of is not None:
                    self.get(out_of).outbound = None
            if not landing:
                self.landing.pop(r, None)
        elif ev.kind == "finish":
            kept = sorted(self.held.get((node, r), ())) if ev.pages is None else \
                [p for p in ev.pages if r in self.get((node, p)).holders]
            for p in kept:
                flags.append(Flag(LEAK, node, p, r, r))
        return flags

    def touched(self, ev: Event) -> list[Page]:
        """The pages an event touches (for its story)."""
        pages = [(ev.node, p) for p in ev.pages or ()]
        if ev.kind == "send" and ev.to is not None:
            pages += [(ev.to, p) for p in ev.to_pages]
        elif ev.kind == "land" and ev.pages is None:
            pages += list(self.landing.get(ev.request, {}))
        elif ev.kind == "finish" and ev.pages is None:
            pages += [(ev.node, p) for p in sorted(self.held.get((ev.node, ev.request), ()))]
        return pages


# --------------------------------------------------------------------------- the monitor


class Monitor:
    """Feeds events to the kernel's checks, keeping each page's story; stops at a violation."""

    def __init__(self, *, history: int = DEFAULT_HISTORY, skip: Iterable[str] = ()) -> None:
        self.state = _Pages()
        self.history = history
        self.skip = frozenset(skip)
        #: per page: the last events that touched it, each with the page's state before and after
        self.story: dict[Page, deque[tuple[Event, PageState, PageState]]] = {}
        self.coverage = Coverage()
        self._requests: set[str] = set()

    def feed(self, ev: Event) -> Finding | None:
        """Check one event; a Finding at the first event that breaks a property."""
        cov = self.coverage
        cov.events += 1
        cov.lines = ev.line
        cov.by_kind[ev.kind] = cov.by_kind.get(ev.kind, 0) + 1
        if ev.request not in self._requests:
            if len(self._requests) < MAX_COUNTED_REQUESTS:
                self._requests.add(ev.request)
                cov.requests = len(self._requests)
            else:  # the count stops here, so that memory does not grow with the log
                cov.requests_capped = True
        touched = self.state.touched(ev)
        before = [self.state.get(p).copy() for p in touched]
        flags = [f for f in self.state.apply(ev) if f.property not in self.skip]
        for p, b in zip(touched, before):
            story = self.story.get(p)
            if story is None:
                story = self.story[p] = deque(maxlen=self.history)
            story.append((ev, b, self.state.get(p).copy()))
        cov.pages = len(self.state.page)
        if not flags:
            return None
        return self._finding(ev, flags)

    def run(self, events: Iterable[Event], *, tick: Callable[[Coverage], None] | None = None,
            every: int = 65536) -> Finding | None:
        """Feed every event; the first Finding, or None. `tick` sees the coverage every
        `every` events (a progress line)."""
        for ev in events:
            found = self.feed(ev)
            if found is not None:
                return found
            if tick is not None and self.coverage.events % every == 0:
                tick(self.coverage)
        return None

    def _finding(self, ev: Event, flags: list[Flag]) -> Finding:
        head = flags[0].property
        mine = [f for f in flags if f.property == head]
        pages = list(dict.fromkeys((f.node, f.page) for f in mine if f.page is not None))
        message = f"line {ev.line}, {ev.label()}: " + _message(head, mine)
        trace = self._trace(ev, head, mine, pages, message)
        return Finding(ev, flags, message, trace)

    def _trace(self, ev: Event, head: str, mine: list[Flag], pages: list[Page], message: str) -> Trace:
        """The story of the violated pages as a trace: each step one event of the log that
        touched one of them, each state those pages exactly as the kernel saw them then.

        A page's story keeps its last `history` events; where one was cut, the trace starts
        at the latest cut, so every page shown is known from the first step on."""
        stories = {p: list(self.story.get(p, ())) for p in pages}
        cut = max((st[0][0].line for st in stories.values() if len(st) == self.history), default=0)
        kept = {e.line: e for st in stories.values() for e, _, _ in st if e.line >= cut}
        lines = sorted(kept)
        nodes = list(dict.fromkeys(n for n, _ in pages))
        by_node = {n: sorted(p for m, p in pages if m == n) for n in nodes}
        # each page at each step: its state after its latest event at or before the step
        at: dict[Page, list[PageState]] = {}
        for p, st in stories.items():
            mine_ = [(e.line, b, a) for e, b, a in st if e.line >= cut]
            state = mine_[0][1] if mine_ else self.state.get(p)
            row, k = [state.copy()], 0
            for line in lines:
                while k < len(mine_) and mine_[k][0] <= line:
                    state = mine_[k][2]
                    k += 1
                row.append(state.copy())
            at[p] = row
        steps = [Step(None, {}, _shown(at, by_node, 0))]
        for i, line in enumerate(lines, start=1):
            e = kept[line]
            args: dict[str, Any] = {"request": e.request, "line": e.line}
            if e.pages is not None:
                args["pages"] = frozenset(e.pages)
            if e.kind == "send":
                args["to"] = e.to
            steps.append(Step(e.kind, args, _shown(at, by_node, i), e.node))
        involved = sorted({f.request for f in mine} | {f.other for f in mine if f.other})
        violation = Violation(head, len(steps) - 1, message, involved,
                              [(n, by_node[n].index(p)) for n, p in pages])
        trace = Trace(steps=steps, violation=violation, engine="monitor", properties=list(PROPERTIES))
        trace.page_ids = by_node
        return trace


def _shown(at: dict[Page, list[PageState]], by_node: dict[str, list[int]], i: int) -> dict[str, Any]:
    """The kernel slots of the pages shown at step i, as a trace's state shows them."""
    out: dict[str, Any] = {}
    for node, pages in by_node.items():
        sts = [at[(node, p)][i] for p in pages]
        out[f"{node}.owner"] = [_owner_value(s.holders) for s in sts]
        out[f"{node}.content"] = [s.content or "none" for s in sts]
        out[f"{node}.inflight"] = [s.inflight or "none" for s in sts]
        out[f"{node}.outbound"] = [s.outbound or "none" for s in sts]
    return out


def _owner_value(holders: frozenset[str]) -> Any:
    """A page's holders as a trace shows them: "free", the one holder, or the set of them."""
    if not holders:
        return "free"
    return next(iter(holders)) if len(holders) == 1 else frozenset(holders)


def _pages_text(flags: list[Flag]) -> str:
    nodes = list(dict.fromkeys(f.node for f in flags))
    parts = []
    for n in nodes:
        ps = [str(f.page) for f in flags if f.node == n and f.page is not None]
        parts.append(f"{n} page{'s' if len(ps) > 1 else ''} {', '.join(ps)}")
    return "; ".join(parts)


def _message(prop: str, flags: list[Flag]) -> str:
    """The violation in one sentence, after its line and event: the property's own words
    (lang/properties.py, NOTE(one-voice)) filled with the log's requests and pages."""
    r = flags[0].request
    where = _pages_text(flags)
    others = sorted({f.other for f in flags if f.other and f.other != r})
    holders = ", ".join(others)
    words = WORDS[prop]
    if prop == STALE_READ:
        whose = "never written" if not others else "holding KV of " + ", ".join(o.replace("key:", "key ", 1) for o in others)
        return words.say(request=r, pages=f"{where}, {whose}", whose="its own",
                         hazard=None if others else words.parts["unwritten"])
    if prop in (READ_UNOWNED, WRITE_UNOWNED):
        detail = words.part("held" if others else "free", holders=holders, others=holders)
        return words.say(request=r, pages=where, own="hold", detail=detail)
    if prop == DOUBLE_FREE:
        return words.say(who=f"request {r}", pages=words.part("held" if others else "free", pages=where, holders=holders))
    if prop == FREE_IN_FLIGHT:
        transfers = sorted({f.other for f in flags if f.other})
        return words.say(who=f"request {r}", pages=where, transfer=f" of {', '.join(transfers)}")
    if prop == LEAK:
        return words.part("left", request=r, pages=where)
    return words.say(request=r, pages=where, holders=holders or "it")


__all__ = ["EVENTS", "PROPERTIES", "Coverage", "Event", "Finding", "Flag", "Monitor", "parse_event", "read_events"]
