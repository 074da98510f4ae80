"""Traces: a counterexample as data, its ITF JSON form, and replay against a spec.

A Trace is the initial state, then each step's action with its arguments and the state after
it, plus the violation (property, step, message, requests, pages). States are stored as named
values (`Model.show`), so a trace is rendered and exported without the spec, and read back
without executing anything: `read_itf` only parses JSON. `replay` re-executes a trace's
actions on a Model, which answers "does this fix kill this trace?".

ITF (the Informal Trace Format of Apalache and Quint): docs/trace-format.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from .errors import TraceFormatError, UsageError, shorten
from .lang.model import Binding, Model
from .lang.properties import (
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

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
FORMAT_VERSION = 1


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


# --------------------------------------------------------------------------- building


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
        from .lang.declare import RequestDomain

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


# --------------------------------------------------------------------------- ITF

#: What a trace file may hold. A trace is data from anywhere: these bound the memory and work
#: of reading one (a counterexample is kilobytes, a long fuzz trace megabytes).
MAX_TRACE_BYTES = 256 * 2**20
#: How deeply arrays and objects may nest (ours nest 6 deep); checked before anything recurses.
MAX_DEPTH = 100
#: The most digits of an integer (Python itself refuses to print one of over 4,300 digits).
MAX_DIGITS = 1000
_INT_BOUND = 10**MAX_DIGITS

#: The ITF forms of a value that is not a JSON scalar, list or record.
_FORMS = ("#bigint", "#set", "#tup", "#map", "#unserializable")
_BIGINT = re.compile(r"-?[0-9]+")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_#:][A-Za-z0-9_.#:-]*")


def _to_itf(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, frozenset | set):
        return {"#set": [_to_itf(x) for x in sorted(v)]}
    if isinstance(v, dict):
        return {"#map": [[_to_itf(k), _to_itf(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return [_to_itf(x) for x in v]
    if isinstance(v, tuple):
        return {"#tup": [_to_itf(x) for x in v]}
    raise TypeError(f"cannot write {v!r} to ITF")


def _kind(v: Any) -> str:
    """What a JSON value is, for an error message: its type, and its text when short."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"the integer {v}" if -10**12 < v < 10**12 else "an integer"
    if isinstance(v, float):
        return f"the number {v!r}"
    if isinstance(v, str):
        return f"the string {v!r}" if len(v) <= 40 else f"a string of {len(v):,} characters"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return f"a {type(v).__name__}"


def _key_path(base: str, key: str) -> str:
    """The JSON path of a field of an object: `states[3].decode.owner`, `x['odd key']`;
    `base` is a path, or "FILE: " for a field of the document itself."""
    if not _PLAIN_KEY.fullmatch(key):
        return f"{base}[{key!r}]"
    return f"{base}{key}" if base.endswith(": ") else f"{base}.{key}"


def _path_text(where: str, path: Any) -> str:
    """`FILE: states[3].x[0]` from a chain of (parent, key) pairs; `FILE` for the document."""
    keys: list[Any] = []
    while path:
        path, key = path
        keys.append(key)
    if not keys:
        return where
    keys.reverse()
    if len(keys) > 16:  # deep nesting: the first and last levels say where
        keys = [*keys[:8], (f"... {len(keys) - 12} levels ...",), *keys[-4:]]
    text = f"{where}: "
    for key in keys:
        if isinstance(key, tuple):
            text = f"{text}[{key[0]}]"
        else:
            text = f"{text}[{key}]" if isinstance(key, int) else _key_path(text, key)
    return text


def _json_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS:
        raise TraceFormatError(f"an integer of {digits:,} digits (at most {MAX_DIGITS:,} are read)")
    return int(text)


def _json_constant(name: str) -> Any:
    raise TraceFormatError(f"{name} is not a JSON value (ITF numbers are integers)")


def unique_keys(pairs: list[tuple[str, Any]], error: type[Exception] = TraceFormatError) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key it names twice (json.loads keeps the last one
    silently: a trace with two "decode_pool" keys was read as the second)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise error(f"the key {shorten(json.dumps(twice), 80)} appears twice in one object; give each key once")
    return out


def parse_json(text: str, where: str = "trace") -> Any:
    """JSON text as Python values; TraceFormatError for anything that is not JSON, for NaN and
    Infinity, for an integer of over MAX_DIGITS digits, and for nesting deeper than the parser
    can go (json.loads recurses: RecursionError is caught here, and from_itf then refuses
    anything deeper than MAX_DEPTH)."""
    try:
        return json.loads(text.removeprefix("\ufeff"), parse_int=_json_int, parse_constant=_json_constant,
                          object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"{where}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise TraceFormatError(f"{where}: not an ITF trace: arrays and objects nested more than"
                               f" {MAX_DEPTH} deep") from None
    except TraceFormatError as e:
        raise TraceFormatError(f"{where}: not an ITF trace: {e}") from None


#: The types of the JSON scalars that are ITF values as they are (null and numbers are not).
_PLAIN = frozenset({str, int, bool})


def _check_json(doc: Any, where: str) -> None:
    """Refuse, before anything recurses into the document, what no trace holds: nesting
    deeper than MAX_DEPTH, a string that is not Unicode text (a lone surrogate, which
    json.loads accepts as "\\ud800" and nothing can write later), a key that is not a string,
    a number that is not finite or an integer of over MAX_DIGITS digits. Iterative: it
    cannot run out of stack whatever the document. A list of only ASCII strings or only
    integers in range (a pool's pages) is checked at once."""

    def check_scalar(v: Any, path: Any, what: str = "a string") -> None:
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as e:
                    raise TraceFormatError(f"{_path_text(where, path)}: {what} holding a lone surrogate"
                                           f" ({v[e.start]!r}), which is not Unicode text") from None
        elif isinstance(v, bool) or v is None:
            pass
        elif isinstance(v, int):
            if not -_INT_BOUND < v < _INT_BOUND:
                raise TraceFormatError(f"{_path_text(where, path)}: an integer of over {MAX_DIGITS:,} digits")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise TraceFormatError(f"{_path_text(where, path)}: {v!r} is not a JSON number")
        else:
            raise TraceFormatError(f"{_path_text(where, path)}: {_kind(v)} is not a JSON value")

    def all_fine(values: Any) -> bool:
        kinds = set(map(type, values))
        if kinds == {str}:
            return "".join(values).isascii()
        if kinds == {int}:
            return -_INT_BOUND < min(values) and max(values) < _INT_BOUND
        return kinds <= {bool, type(None)}

    stack: list[tuple[Any, int, Any]] = [(doc, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            if not all_fine(value.keys()):
                for key in value:
                    if not isinstance(key, str):
                        raise TraceFormatError(f"{_path_text(where, path)}: a key that is not a string ({_kind(key)})")
                    check_scalar(key, path, "a key")
            children: Any = value.values()
            items: Any = value.items()
        elif isinstance(value, list):
            children = items = value
            items = enumerate(value)
        else:
            check_scalar(value, path)
            continue
        if depth > MAX_DEPTH:
            raise TraceFormatError(f"{_path_text(where, path)}: arrays and objects nested more than"
                                   f" {MAX_DEPTH} deep")
        if not children or all_fine(children):
            continue
        for key, x in items:
            if type(x) is dict and depth < MAX_DEPTH and len(x) == 1 and type(b := x.get("#bigint")) is str \
                    and b.isascii():
                continue  # an integer of ITF: its digits are checked by _from_itf
            if type(x) is dict or type(x) is list:
                stack.append((x, depth + 1, (path, key)))
            elif not (type(x) is str and x.isascii()):
                check_scalar(x, (path, key))


def _from_itf(v: Any, where: str) -> Any:
    """An ITF value as a Python value; `where` is its JSON path, for errors. Only the ITF
    forms are values: a boolean, a string, an integer ({"#bigint": "N"} or a JSON integer),
    a list, a record (an object), {"#set": [...]}, {"#tup": [...]}, {"#map": [[k, v], ...]}.
    The paths of nested values are made only for containers and errors (a trace holds
    millions of page values)."""
    kind = type(v)
    if kind in _PLAIN:
        return v
    if kind is list:
        if set(map(type, v)) <= _PLAIN:
            return list(v)
        return [x if type(x) in _PLAIN else n if (n := _bigint(x)) is not None else _from_itf(x, f"{where}[{i}]")
                for i, x in enumerate(v)]
    if kind is not dict:
        if v is None:
            raise TraceFormatError(f"{where}: null is not an ITF value")
        if isinstance(v, float):
            raise TraceFormatError(f"{where}: {v!r} is not an integer; ITF integers are {{\"#bigint\": \"...\"}}")
        raise TraceFormatError(f"{where}: unexpected JSON value {_kind(v)}")
    if (n := _bigint(v)) is not None:
        return n
    form = next((k for k in v if k.startswith("#")), None)
    if form is None:
        return {k: x if type(x) in _PLAIN else _from_itf(x, _key_path(where, k)) for k, x in v.items()}
    if form not in _FORMS:
        raise TraceFormatError(f"{where}: {form!r} is not an ITF form; a value is a boolean, a string,"
                               f" a list, a record or one of {', '.join(_FORMS)}")
    if len(v) != 1:
        raise TraceFormatError(f"{where}: an object with {form!r} must have no other field")
    x = v[form]
    inner = f"{where}.{form}"
    if form == "#bigint":
        if isinstance(x, str) and _BIGINT.fullmatch(x) and len(x.lstrip("-")) <= MAX_DIGITS:
            return int(x)
        if isinstance(x, int) and not isinstance(x, bool):
            return x
        raise TraceFormatError(f"{inner}: expected an integer written in decimal digits,"
                               f" {{\"#bigint\": \"-12\"}}, got {_kind(x)}")
    if form == "#unserializable":
        if not isinstance(x, str):
            raise TraceFormatError(f"{inner}: expected a string, got {_kind(x)}")
        return f"<unserializable {x}>"
    if not isinstance(x, list):
        raise TraceFormatError(f"{inner}: expected a list, got {_kind(x)}")
    if form == "#map":
        out = {}
        for i, pair in enumerate(x):
            if not isinstance(pair, list) or len(pair) != 2:
                raise TraceFormatError(f"{inner}[{i}]: expected a [key, value] pair, got {_kind(pair)}"
                                       + (f" of {len(pair)} items" if isinstance(pair, list) else ""))
            k, value = pair
            key = k if type(k) in _PLAIN else _from_itf(k, f"{inner}[{i}][0]")
            if type(key) not in _PLAIN and not _hashable(key):
                raise TraceFormatError(f"{inner}[{i}][0]: a map key cannot be a list or a record")
            out[key] = value if type(value) in _PLAIN else _from_itf(value, f"{inner}[{i}][1]")
        return out
    items = _from_itf(x, inner)
    if form == "#tup" or not (set(map(type, items)) <= _PLAIN or all(_hashable(y) for y in items)):
        return tuple(items)  # a set of records or lists (Quint) is kept as a tuple, in order
    return frozenset(items)


def _bigint(v: Any) -> int | None:
    """The integer of {"#bigint": "N"} (N of at most MAX_DIGITS digits), else None: the
    common case of _from_itf, on its own for speed (a free list holds thousands)."""
    if type(v) is dict and len(v) == 1:
        b = v.get("#bigint")
        if type(b) is str and len(b) <= MAX_DIGITS and _BIGINT.fullmatch(b):
            return int(b)
    return None


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def to_itf(trace: Trace) -> dict[str, Any]:
    """The trace as an ITF document (a JSON-serialisable dict)."""
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION,
        "source": trace.spec,
        "description": f"Created by ownership ({trace.engine} engine)",
        "ownership": {
            "version": FORMAT_VERSION,
            "spec": trace.spec,
            "spec_class": trace.spec_class,
            "params": trace.params,
            "fixes": trace.fixes,
            "release": trace.version,
            "engine": trace.engine,
            "reproduce": trace.reproduce,
            "properties": trace.properties,
            "violation": trace.violation.to_json() if trace.violation else None,
            "actors": [s.actor for s in trace.steps],
        },
    }
    if trace.page_ids:
        meta["ownership"]["page_ids"] = trace.page_ids
    variables = trace.vars
    if trace.loop is not None:
        meta["ownership"]["loop"] = trace.loop
    states = []
    for i, step in enumerate(trace.steps):
        st: dict[str, Any] = {"#meta": {"index": i}}
        st["mbt::actionTaken"] = step.action or "init"
        st["mbt::nondetPicks"] = {k: _to_itf(v) for k, v in step.args.items()}
        for var in variables:
            st[var] = _to_itf(step.state[var])
        states.append(st)
    doc: dict[str, Any] = {"#meta": meta, "vars": ["mbt::actionTaken", "mbt::nondetPicks", *variables], "states": states}
    if trace.loop is not None and trace.loop < len(trace.steps) - 1:
        # ITF's own field: the index of the state the last state loops back to (a lasso)
        doc["loop"] = trace.loop
    return doc


def write_output(path: str | Path, text: str, what: str) -> None:
    """Write a file that a command produces (a trace, an HTML page, a graph) whole or not at
    all (`whole_file`). A path that is not a regular file (/dev/stdout, a pipe) is written in
    place. UsageError, naming the path, when it cannot be written."""
    target = Path(os.path.realpath(path))
    try:
        data = text.encode("utf-8")
        if target.exists() and not target.is_file():
            with target.open("wb") as f:
                f.write(data)
            return
        with whole_file(target) as f:
            f.write(data)
    except OSError as e:
        raise UsageError(f"cannot write the {what} to {path}: {e.strerror or e}") from None
    except UnicodeEncodeError as e:
        raise UsageError(f"cannot write the {what} to {path}: it holds text that is not Unicode ({e.reason})") from None


@contextlib.contextmanager
def whole_file(target: Path) -> Iterator[BinaryIO]:
    """A binary file to write `target` whole or not at all: a temporary file beside it,
    renamed over it when the block ends, removed if the block fails (a full disk, an error,
    Ctrl-C), so that no partial file is ever left. OSError when it cannot be written."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            yield f
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_itf(trace: Trace, path: str | Path) -> None:
    """Write the trace as ITF JSON (whole or not at all: write_output)."""
    write_output(path, json.dumps(to_itf(trace), indent=1) + "\n", "trace")


def read_itf(path: str | Path) -> Trace:
    """Read an ITF JSON trace (ours or another tool's). Parses JSON only; executes nothing.

    Anything that is not a well-formed trace, a file over MAX_TRACE_BYTES included, is a
    TraceFormatError naming the file and the field that is wrong."""
    too_large = f"{path}: a trace file of over {MAX_TRACE_BYTES // 2**20} MB is not read"
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_TRACE_BYTES:
                raise TraceFormatError(too_large)
            data = f.read(MAX_TRACE_BYTES + 1)
    except OSError as e:
        raise TraceFormatError(f"cannot read trace file {path}: {e}") from None
    if len(data) > MAX_TRACE_BYTES:
        raise TraceFormatError(too_large)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start:,});"
                               " a trace is JSON in UTF-8") from None
    return from_itf(parse_json(text, str(path)), str(path))


def _field(obj: dict[str, Any], key: str, where: str, expected: str, ok: Any, default: Any) -> Any:
    """obj[key] if it is of the right type (`ok(value)`), `default` if absent."""
    if key not in obj:
        return default
    value = obj[key]
    if not ok(value):
        raise TraceFormatError(f"{_key_path(where, key)}: expected {expected}, got {_kind(value)}")
    return value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_names(v: Any) -> TypeGuard[list[str]]:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def from_itf(doc: Any, where: str = "trace") -> Trace:
    """A Trace from a parsed ITF document, every field's type checked: TraceFormatError,
    naming the field ("#meta.ownership.actors: expected a list ..., got an object"), for
    anything else."""
    _check_json(doc, where)
    if not isinstance(doc, dict) or not isinstance(doc.get("states"), list) or not doc["states"]:
        raise TraceFormatError(f"{where}: not an ITF trace: expected an object with a non-empty \"states\" list")
    states: list[Any] = doc["states"]
    variables = doc.get("vars")
    if not _is_names(variables):
        raise TraceFormatError(f"{where}: not an ITF trace: \"vars\" must be a list of variable names")
    twice = sorted({v for v in variables if variables.count(v) > 1}) if len(set(variables)) < len(variables) else []
    if twice:
        raise TraceFormatError(f"{where}: vars: {twice[0]!r} is listed twice")
    meta = _field(doc, "#meta", f"{where}: ", "an object", lambda v: isinstance(v, dict), {})
    ours = _field(meta, "ownership", f"{where}: #meta", "an object (ownership's annotations)",
                  lambda v: isinstance(v, dict), None)
    at_ours = f"{where}: #meta.ownership"
    actors: list[str | None] = []
    if ours is not None:
        actors = _field(ours, "actors", at_ours, "a list of actor names (or null), one per state",
                        lambda v: isinstance(v, list) and all(a is None or isinstance(a, str) for a in v), [])
        if "actors" in ours and len(actors) != len(states):
            raise TraceFormatError(f"{at_ours}.actors: {len(actors)} actors for {len(states)} states;"
                                   " expected one per state")
    plain_vars = [v for v in variables if not v.startswith("mbt::")]
    steps = []
    for i, st in enumerate(states):
        at = f"{where}: states[{i}]"
        if not isinstance(st, dict):
            raise TraceFormatError(f"{at}: expected an object (a state), got {_kind(st)}")
        missing = [v for v in plain_vars if v not in st]
        if missing:
            raise TraceFormatError(f"{at}: lacks variable(s) {', '.join(map(repr, missing))}")
        state = {v: _from_itf(st[v], _key_path(at, v)) for v in plain_vars}
        action = _field(st, "mbt::actionTaken", at, "the name of an action, a string",
                        lambda v: v is None or isinstance(v, str), None)
        picks = _field(st, "mbt::nondetPicks", at, "an object (the action's arguments)",
                       lambda v: isinstance(v, dict), {})
        args = {k: _from_itf(x, _key_path(f"{at}.mbt::nondetPicks", k)) for k, x in picks.items()}
        is_init = i == 0 and action in (None, "init", "")
        if ours is not None:
            _check_our_step(i, action, args, at)
        actor = actors[i] if i < len(actors) else None
        steps.append(Step(None if is_init else action, {} if is_init else args, state, actor))
    trace = Trace(steps=steps, foreign=ours is None)
    if ours is not None:
        _read_our_meta(trace, ours, at_ours)
    return trace


def _check_our_step(i: int, action: str | None, args: dict[str, Any], at: str) -> None:
    """A state of an ownership trace: the first one is the initial state, each later one names
    the action that led to it, with arguments an action can take (not lists or records)."""
    if i == 0 and action not in (None, "init", ""):
        raise TraceFormatError(f"{at}.mbt::actionTaken: the first state is the initial state, so"
                               f" \"init\"; got {_kind(action)}")
    if i > 0 and not action:
        raise TraceFormatError(f"{at}.mbt::actionTaken: the action that led to this state is missing")
    for name, value in args.items():
        if not _hashable(value):
            raise TraceFormatError(f"{_key_path(f'{at}.mbt::nondetPicks', name)}: an action's argument is"
                                   " an integer, a string, a boolean, a set or a tuple; got a"
                                   f" {'list' if isinstance(value, list) else 'record'}")


def _read_our_meta(trace: Trace, ours: dict[str, Any], at: str) -> None:
    """Fill in a trace from #meta.ownership, each field's type checked."""
    params = _field(ours, "params", at, "an object mapping parameter names to integers",
                    lambda v: isinstance(v, dict), {})
    for name in params:
        _field(params, name, f"{at}.params", "an integer", _is_int, 0)
    _field(ours, "version", at, "an integer (the format version)", _is_int, FORMAT_VERSION)
    trace.spec = _field(ours, "spec", at, "a string (a spec's name)", lambda v: isinstance(v, str), "")
    trace.spec_class = _field(ours, "spec_class", at, "a string", lambda v: isinstance(v, str), "")
    trace.params = dict(params)
    trace.fixes = list(_field(ours, "fixes", at, "a list of names of fixes", _is_names, []))
    trace.version = _field(ours, "release", at, "a string (an engine release) or null",
                           lambda v: v is None or isinstance(v, str), None)
    trace.engine = _field(ours, "engine", at, "a string", lambda v: isinstance(v, str), "")
    trace.reproduce = _field(ours, "reproduce", at, "a string (a command)", lambda v: isinstance(v, str), "")
    trace.properties = list(_field(ours, "properties", at, "a list of names of properties", _is_names, []))
    ids = _field(ours, "page_ids", at, "an object mapping pools to lists of page ids (integers)",
                 lambda v: isinstance(v, dict) and all(isinstance(x, list) and all(_is_int(i) for i in x)
                                                       for x in v.values()), {})
    for pool, pages in ids.items():
        held = trace.steps[0].state.get(f"{pool}.owner", trace.steps[0].state.get(f"{pool}.holders"))
        if not isinstance(held, list) or len(held) != len(pages):
            raise TraceFormatError(f"{at}.page_ids.{pool}: {len(pages)} page ids for a pool of"
                                   f" {len(held) if isinstance(held, list) else 'no'} pages; expected one per page")
    trace.page_ids = {pool: [int(i) for i in pages] for pool, pages in ids.items()}
    last_step = len(trace.steps) - 1
    trace.loop = _field(ours, "loop", at, f"a step number 0..{last_step} (where the run loops back to) or null",
                        lambda v: v is None or (_is_int(v) and 0 <= v <= last_step), None)
    if trace.loop is not None and trace.loop < last_step and trace.steps[-1].state != trace.steps[trace.loop].state:
        raise TraceFormatError(f"{at}.loop: {trace.loop}, but the last state (step {last_step}) is not the state of step"
                               f" {trace.loop}: a lasso's last state is the state it loops back to")
    violation = _field(ours, "violation", at, "an object (the violation) or null",
                       lambda v: v is None or isinstance(v, dict), None)
    if violation:
        trace.violation = Violation.from_json(violation, f"{at}.violation")
        last = len(trace.steps) - 1
        if trace.violation.step > last:
            raise TraceFormatError(f"{at}.violation.step: {trace.violation.step} is not a state of the trace"
                                   f" (it has states 0..{last})")


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    """What re-executing a trace on a Model showed."""

    outcome: str                     # "violated" | "blocked" | "passed"
    steps_run: int
    violation: Violation | None = None
    blocked_step: int | None = None  # the step whose action is not enabled any more
    blocked_action: str | None = None
    diverged_step: int | None = None # the first step whose state differs from the recording
    diverged_vars: list[str] = field(default_factory=list)
    trace: Trace | None = None       # the replayed run, as far as it went
    states: list[tuple[int, ...]] = field(default_factory=list)  # its states, the initial one first
    bindings: list[Binding] = field(default_factory=list)        # the binding of each of its steps


def replay(trace: Trace, model: Model) -> ReplayResult:
    """Re-execute the trace's actions from its initial state on `model`.

    The trace must start from the spec's initial state (at the model's parameters), and a
    trace that records a violation must have steps to replay: otherwise "no longer violates"
    would be a pass that checked nothing. Both are TraceFormatError (bad input)."""
    from .interpret.concrete import Concrete

    if trace.foreign:
        raise TraceFormatError("this ITF trace was not written by ownership (no #meta.ownership): it has no actions to replay")
    if not trace.steps:
        raise TraceFormatError("the trace has no states, not even an initial state: nothing to replay")
    name = model.spec_cls.__name__
    if len(trace.steps) == 1 and trace.violation is not None and trace.loop is None:
        raise TraceFormatError(
            f"the trace records a violation of {trace.violation.property!r} but has no steps after its"
            " initial state: nothing to replay (was it cut short?)"
        )
    try:
        state = model.parse(trace.steps[0].state)
    except ValueError as e:
        raise TraceFormatError(f"the trace's initial state does not fit spec {name}: {e}") from None
    if state != model.initial:
        differ = [s.name for s in model.slots
                  if state[s.offset:s.offset + s.length] != model.initial[s.offset:s.offset + s.length]]
        setting = " ".join(f"{k}={v}" for k, v in model.env.items())
        raise TraceFormatError(
            f"the trace does not start from the initial state of spec {name} at {setting}:"
            f" {', '.join(map(repr, differ))} differ{'s' if len(differ) == 1 else ''}"
            " (a trace replays from the spec's own initial state)"
        )
    interp = Concrete(model)
    states = [state]
    bindings: list[Binding] = []
    diverged: tuple[int, list[str]] | None = None

    def result(outcome: str, flags: list[Any] | None = None, **kw: Any) -> ReplayResult:
        run = build_trace(model, states, bindings, flags or [], engine="replay")
        return ReplayResult(outcome, len(bindings), violation=run.violation, trace=run,
                            diverged_step=diverged[0] if diverged else None,
                            diverged_vars=diverged[1] if diverged else [], states=states,
                            bindings=bindings, **kw)

    flags = interp.state_flags(state)
    if flags:
        return result("violated", flags)
    for i, step in enumerate(trace.steps[1:], start=1):
        _check_argument_kinds(model, i, step)
        binding = model.binding_of(step.action, tuple(step.args.values()))
        if binding is None:
            raise TraceFormatError(
                f"step {i}: action {shorten(repr(step.label()), 120)} is not an action of spec {name}"
                " with these arguments"
            )
        out = interp.step(states[-1], binding)
        if out is None:
            return result("blocked", blocked_step=i, blocked_action=step.label())
        states.append(out.state)
        bindings.append(binding)
        if diverged is None:
            shown = model.show(out.state)
            differ = [v for v in shown if v in step.state and not _same(shown[v], step.state[v])]
            if differ:
                diverged = (i, differ)
        flags = out.flags or interp.state_flags(out.state)
        if flags:
            return result("violated", flags)
    return result("passed")


def _holds_bool(v: Any) -> bool:
    """Whether a value read from JSON is, or holds, a boolean (true, false)."""
    if isinstance(v, bool):
        return True
    if isinstance(v, (list, tuple, frozenset, set)):
        return any(_holds_bool(x) for x in v)
    if isinstance(v, dict):
        return any(_holds_bool(x) for x in (*v.keys(), *v.values()))
    return False


def _check_argument_kinds(model: Model, i: int, step: Step) -> None:
    """A step's argument that is a boolean where the action takes an integer (or a set of page
    numbers), or an integer where it takes a boolean, is refused: Python's True == 1, so
    `"n": true` would otherwise be read as the binding n=1."""
    from .lang.declare import BoolDomain, Domain, PageSetDomain, as_domain

    decl = model.spec_cls._actions.get(step.action or "")
    if decl is None:
        return  # (not an action of the spec: said by replay)
    for name, declared in decl.args:
        if name not in step.args:
            continue
        value = step.args[name]
        domain = as_domain(declared, f"action {decl.name}, argument {name}")
        at = f"step {i}: argument {name} of action {decl.name}"
        if isinstance(domain, BoolDomain):
            if not isinstance(value, bool) and isinstance(value, int):
                raise TraceFormatError(f"{at} is {_kind(value)}; the action takes a boolean there, so true or"
                                       " false is expected")
            continue
        lo, hi = domain.bounds(model.env)
        if isinstance(domain, PageSetDomain):
            expected = f"a set of page numbers (integers 0..{domain.pool.size(model.env) - 1})"
        elif type(domain).show is Domain.show:
            expected = f"an integer ({lo}..{hi})"
        else:
            continue  # (names, keys, holders: a boolean matches none of them, and replay says so)
        if isinstance(value, bool):
            raise TraceFormatError(f"{at} is {_kind(value)}, a boolean; {expected} is expected:"
                                   ' write it as a number, e.g. {"#bigint": "1"}')
        if _holds_bool(value):
            raise TraceFormatError(f"{at} is a set holding a boolean; {expected} is expected: write each"
                                   ' page as a number, e.g. {"#set": [{"#bigint": "1"}]}')


def _same(a: Any, b: Any) -> bool:
    """a == b, where a boolean is not the integer 0 or 1 (Python's True == 1): a recorded
    `true` where the spec has the integer 1 is a difference."""
    if a != b:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if type(a) in (list, tuple) and type(b) in (list, tuple):
        if set(map(type, a)) | set(map(type, b)) <= {int, str}:  # (a pool's pages: the common case)
            return True
        return all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict and type(b) is dict:
        return _holds_bool(list(a)) == _holds_bool(list(b)) and all(_same(x, b[k]) for k, x in a.items())
    return _holds_bool(a) == _holds_bool(b)
