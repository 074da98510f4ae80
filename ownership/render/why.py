"""The "why" of a violation in the viewer: the spec's beliefs about the request in view at the
violating step set against the kernel's truth about its pages (issue 17), read from the
trace alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..trace import Trace
from .states import (
    _REQUEST_NAME,
    _ids,
    _owner_text,
    _page_holders,
    _page_values,
    acting_request,
    is_kernel_var,
    pools_of,
)
from .text import show_value


@dataclass
class Belief:
    """One value of the spec's state about a request in view at the violating step, and why
    it is worth reading (`reasons`; none: shown for completeness)."""

    name: str          # "sent[r1]"
    value: Any
    reasons: list[str] = field(default_factory=list)
    rank: int = 9      # the order of highlighted beliefs: counts, then page sets, then changes

    @property
    def text(self) -> str:
        """The belief as both viewers write it: `sent[r1] = 1`."""
        return f"{self.name} = {show_value(self.value)}"


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

    @property
    def heading(self) -> str:
        who = f", request {self.request}" if self.request else ""
        return f"Why (step {self.step}{who}): the spec's beliefs against the kernel's truth about the pages"

    def shown(self) -> list[Belief]:
        """The beliefs in the order both viewers show them: the highlighted ones first."""
        return [b for b in self.beliefs if b.reasons] + [b for b in self.beliefs if not b.reasons]


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
