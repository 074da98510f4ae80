"""A trace from an engine's states, and its violation in plain words: `build_trace` and
`explain` fill each property's words (ownership/lang/properties.py) with the trace's
requests, pages and steps."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..lang.model import Binding, Model
from ..lang.properties import (
    COUNT_BELOW_ZERO,
    CRASH,
    DOUBLE_FREE,
    FREE_IN_FLIGHT,
    FREE_PINNED,
    LEAK,
    PROPERTIES,
    READ_UNOWNED,
    STALE_READ,
    WRITE_UNOWNED,
)
from .data import Step, Trace, Violation


def build_trace(model: Model, states: list[tuple[int, ...]], bindings: list[Binding],
                flags: list[Any], *, engine: str) -> Trace:
    """A Trace from a path of concrete states and the flags raised at its last step."""
    steps = [Step(None, {}, model.show(states[0]))]
    for st, b in zip(states[1:], bindings):
        steps.append(Step(b.action.name, dict(b.shown), model.show(st), b.action.actor))
    spec_cls = model.spec_cls
    trace = Trace(
        steps=steps,
        spec_class=spec_cls.__name__,
        params=dict(model.env),
        fixes=list(model.spec.fixes),
        engine=engine,
        properties=model.checked(),
    )
    if flags:
        trace.violation = explain(model, trace, flags, len(states) - 1)
    return trace


def explain(model: Model, trace: Trace, flags: list[Any], step: int) -> Violation:
    """Turn the flags raised at `step` into a Violation with a message in plain words."""
    order = list(PROPERTIES) + [p.name for p in model.invariants]
    props = sorted({f.prop for f in flags}, key=lambda p: order.index(p) if p in order else len(order))
    head = props[0]
    mine = [f for f in flags if f.prop == head]
    name = model.request_name
    involved = {name(f.request) for f in mine if f.request and f.request > 0}
    if head == CRASH and step:  # (the requests of the step that crashes)
        decl = model.spec_cls._actions.get(trace.steps[step].action or "")
        from ..lang.declare import RequestDomain

        request_args = {a for a, dom in decl.args if isinstance(dom, RequestDomain)} if decl else set()
        involved |= {str(v) for k, v in trace.steps[step].args.items() if k in request_args}
    for f in mine:
        if f.pool is None or not f.other:
            continue
        if head in (READ_UNOWNED, WRITE_UNOWNED, DOUBLE_FREE):
            involved |= {h for h in _holders(model, f.pool, f.other) if h not in model.pools[f.pool].owners}
        elif head == FREE_IN_FLIGHT or (head == STALE_READ and model.pools[f.pool].keys is None):
            involved.add(name(f.other))
        elif head in (FREE_PINNED, COUNT_BELOW_ZERO):
            # (who holds or pins the page: a pin value is laid out like the holders)
            involved |= {h for h in _holders(model, f.pool, f.other) if h not in model.pools[f.pool].owners}
    requests = sorted(involved)
    pages = sorted({(f.pool, f.page) for f in mine if f.pool is not None})
    msg = _message(model, trace, head, mine, step)
    return Violation(head, step, msg, requests, pages, also=props[1:])


def _holders(model: Model, pool: str, v: int) -> list[str]:
    """The holders in an owner value (a request id, or in a shared pool the requests and
    owners holding a reference)."""
    info = model.pools[pool]
    if info.shared:
        return [name for name, _ in info.holders().counts(v, model.env)]
    return [model.request_name(v)] if v else []


def _holder_text(model: Model, pool: str, v: int) -> str:
    info = model.pools[pool]
    if not v:
        return "free"
    if info.counted is not None:  # (how many references each holds)
        names = [name if n == 1 else f"{name} x{n}" for name, n in info.holders().counts(v, model.env)]
    else:
        names = _holders(model, pool, v)
    return ("held by " if info.shared else "owned by ") + ", ".join(names)


def _pinned_text(model: Model, pool: str, v: int) -> str:
    """Who pins a page, in words (a pin value is laid out like a shared pool's holders)."""
    counts = model.pools[pool].holders().counts(v or 0, model.env)
    if not counts:
        return "pinned by nobody"
    return "pinned by " + ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts)


def _pages_text(ps: list[int]) -> str:
    return ("page " if len(ps) == 1 else "pages ") + ", ".join(map(str, ps))


def _written_at(trace: Trace, pool: str, page: int, before: int) -> int | None:
    """The step (< before) at which the page's content last changed, None if never."""
    var = f"{pool}.content"
    value = trace.steps[before - 1].state[var][page] if before >= 1 else None
    for i in range(before - 1, 0, -1):
        if trace.steps[i - 1].state[var][page] != value:
            return i
    return None


def _released_at(model: Model, trace: Trace, pool: str, page: int, who: str, before: int) -> int | None:
    """The step (< before) at which request `who` last stopped holding the page, None if it
    never held it in the trace."""
    var = f"{pool}.holders" if model.pools[pool].shared else f"{pool}.owner"

    def holds(i: int) -> bool:
        v = trace.steps[i].state[var][page]
        return who in v if isinstance(v, (set, frozenset, tuple)) else v == who

    for i in range(min(before, len(trace.steps)) - 1, 0, -1):
        if holds(i - 1) and not holds(i):
            return i
    return None


def _message(model: Model, trace: Trace, prop: str, flags: list[Any], step: int) -> str:
    """The violation in one sentence, led by where it happened; a property broken in several
    pools at once (an action that touches both nodes) gets a clause per pool."""
    at = f"step {step}, {trace.steps[step].label()}: " if step else "in the initial state: "
    pools = list(dict.fromkeys(f.pool for f in flags))
    if prop == LEAK or len(pools) < 2:
        return at + _clause(model, trace, prop, flags, step)
    clauses = [_clause(model, trace, prop, [f for f in flags if f.pool == p], step) for p in pools]
    return at + "; and ".join(c.removesuffix(".") for c in clauses) + "."


def _clause(model: Model, trace: Trace, prop: str, flags: list[Any], step: int) -> str:
    """What `flags` (all in one pool, except for leak) say happened, without the step: the
    words are the property's own (lang/properties.py, NOTE(one-voice)), the data the trace's."""
    name = model.request_name
    words = PROPERTIES.get(prop)
    if words is None:  # a spec's own invariant: its name and its docstring's first paragraph
        doc = " ".join(next((p.doc for p in model.invariants if p.name == prop), "").split("\n\n")[0].split())
        failing = sorted({f.request for f in flags if f.request})
        who = f" for {', '.join(name(r) for r in failing)}" if failing else ""
        return f"invariant {prop} does not hold{who}" + (f": {doc}" if doc else ".")
    pool = flags[0].pool
    actor = model.holder_name(pool, flags[0].request) if flags[0].request else ""
    if flags[0].request and flags[0].request < 0:  # (an owner that is not a request: "the cache")
        actor_is = f"owner {actor}"
    else:
        actor_is = f"request {actor}"
    if prop == STALE_READ:
        by_content: dict[int, list[int]] = defaultdict(list)
        for f in flags:
            by_content[f.other].append(f.page)
        parts = []
        leak = False
        info = model.pools[pool]
        for content, ps in sorted(by_content.items()):
            ps = sorted(ps)
            if content == 0:
                parts.append(f"{_pages_text(ps)} never written for anyone (garbage)")
            elif content == info.earlier:
                leak = True
                whose = "KV from before the trace began (k0)" if info.keys is not None else \
                    "KV written for an earlier request (r0, before the trace began)"
                parts.append(f"{_pages_text(ps)} holding {whose}")
            elif info.keys is not None:
                leak = True
                parts.append(f"{_pages_text(ps)} holding KV of key {info.content_name(content)}")
            else:
                leak = True
                whens = sorted({w for p in ps if (w := _written_at(trace, pool, p, step)) is not None})
                when = f" at step {', '.join(map(str, whens))}" if whens else ""
                parts.append(f"{_pages_text(ps)} holding KV written for request {name(content)}{when}")
        expected = actor
        if info.keys is not None and flags[0].expected is not None:
            expected = f"key {info.content_name(flags[0].expected)} (what {actor} expects)"
        return words.say(request=actor, pages=f"{pool} " + "; ".join(parts), whose=f"for {expected}",
                         hazard=None if leak else words.parts["unwritten"])
    if prop in (READ_UNOWNED, WRITE_UNOWNED):
        parts = [f"page {f.page} ({_holder_text(model, pool, f.other)})" for f in sorted(flags, key=lambda f: f.page)]
        detail = ""
        if prop == WRITE_UNOWNED:
            others = ", ".join(sorted({h for f in flags for h in _holders(model, pool, f.other) if h != actor}))
            freed = sorted({w for f in flags if (w := _released_at(model, trace, pool, f.page, actor, step)) is not None})
            when = f" (at step {', '.join(map(str, freed))})"
            case = ("reused" if others else "freed") if freed else ("never" if others else "never-given")
            detail = words.part(case, others=others, when=when)
        own = "hold alone" if model.pools[pool].shared and prop == WRITE_UNOWNED else "own"
        return words.say(request=actor, pages=f"{pool} {', '.join(parts)}", own=own, detail=detail)
    if prop == DOUBLE_FREE:
        parts = [f"page {f.page} ({'already free' if f.other == 0 else _holder_text(model, pool, f.other)})"
                 for f in sorted(flags, key=lambda f: f.page)]
        # (in a shared pool another holder's reference is what a real counter would lose)
        held = sorted({h for f in flags if f.other != 0 for h in _holders(model, pool, f.other)})
        taken = words.part("taken", holders=", ".join(held)) if model.pools[pool].shared and held else None
        return words.say(who=actor_is, pages=f"{pool} {', '.join(parts)}", hazard=taken)
    if prop == COUNT_BELOW_ZERO:
        pins = [f for f in flags if f.text == "pin"]
        refs = [f for f in flags if f.text != "pin"]
        said = []
        if refs:
            said.append(words.part("reference", pages=f"{pool} {_pages_text(sorted(f.page for f in refs))}"))
        if pins:
            parts = [f"page {f.page} ({_pinned_text(model, pool, f.other)})" for f in sorted(pins, key=lambda f: f.page)]
            said.append(words.part("pin", pages=f"{pool} {', '.join(parts)}"))
        return words.say(who=actor_is, what="; and ".join(said))
    if prop == FREE_PINNED:
        parts = [f"page {f.page} ({_pinned_text(model, pool, f.other)})" for f in sorted(flags, key=lambda f: f.page)]
        return words.say(who=actor_is, pages=f"{pool} {', '.join(parts)}")
    if prop == FREE_IN_FLIGHT:
        ps = sorted(f.page for f in flags)
        xfer = ", ".join(sorted({name(f.other) for f in flags}))
        return words.say(who=actor_is, pages=f"{pool} {_pages_text(ps)}", transfer=f" of {xfer}")
    if prop == CRASH:
        return words.say(what="; ".join(dict.fromkeys(f.text for f in flags if f.text)))
    if prop == LEAK:
        by_req: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for f in flags:
            by_req[f.request].append((f.pool, f.page))
        parts = [f"{name(r)} still owns " + ", ".join(f"{pl} page {p}" for pl, p in sorted(ps))
                 for r, ps in sorted(by_req.items())]
        return words.say(pages="; ".join(parts))
    raise AssertionError(f"property {prop} has words but no clause")  # (a new built-in property: NOTE(one-voice))
