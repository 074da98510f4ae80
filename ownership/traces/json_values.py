"""Reading JSON that comes from anywhere (a trace file, a server's arguments): the limits on
its size, nesting and integers, keys given once, and the error messages that name the field
that is wrong ("states[3].decode.owner: expected ..., got ...")."""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeGuard

from ..errors import TraceFormatError, shorten

#: How deeply arrays and objects may nest (ours nest 6 deep); checked before anything recurses.
MAX_DEPTH = 100
#: The most digits of an integer (Python itself refuses to print one of over 4,300 digits).
MAX_DIGITS = 1000
_INT_BOUND = 10**MAX_DIGITS

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_#:][A-Za-z0-9_.#:-]*")


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
