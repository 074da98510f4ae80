"""Traces in ITF JSON (the Informal Trace Format of Apalache and Quint; docs/trace-format.md):
`to_itf`/`write_itf` and `read_itf`/`from_itf`, ours or another tool's. Reading parses JSON
only and executes nothing; every field's type is checked (TraceFormatError naming it)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError
from .data import Step, Trace, Violation
from .files import write_output
from .json_values import (
    _PLAIN,
    MAX_DIGITS,
    _check_json,
    _field,
    _is_int,
    _is_names,
    _key_path,
    _kind,
    parse_json,
)

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
FORMAT_VERSION = 1


#: What a trace file may hold. A trace is data from anywhere: these bound the memory and work
#: of reading one (a counterexample is kilobytes, a long fuzz trace megabytes).
MAX_TRACE_BYTES = 256 * 2**20

#: The ITF forms of a value that is not a JSON scalar, list or record.
_FORMS = ("#bigint", "#set", "#tup", "#map", "#unserializable")
_BIGINT = re.compile(r"-?[0-9]+")


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
