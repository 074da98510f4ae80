"""Server arguments printed with Python's repr, read with ast within fixed bounds, never run.

SGLang logs its arguments as `server_args={'page_size': 64, ...}` (a dict) or
`server_args=ServerArgs(page_size=64, ...)` (a dataclass), vLLM as `non-default args: {...}`.
`read_arg_repr` returns the top-level keys with literal values. Only the top level counts: in
`ServerArgs(lora_config=LoRAConfig(page_size=16), page_size=64)` the page size is 64, and
`LoRAConfig(page_size=16)` is the value of `lora_config`. That value is a call, not a literal,
so it is not read. Enums, config objects and other non-literals are left out the same way.

The text comes from a file anyone may have written. Before ast.parse sees it, one linear scan
(`_bounded_text`) checks its size and nesting: at most MAX_REPR_CHARS characters, brackets at
most MAX_REPR_DEPTH deep, attribute and call chains at most as long, and only the tokens a repr
is made of: strings, numbers, names, `.`, `,`, `:`, `=`, brackets, a sign before a number, and
`<...>` reprs, which are read as no value. No operator, keyword or f-string gets through, and
those are what could make the tree deep or the parse slow. The scan also turns an integer of
more digits than any figure into a string of its digits, so that ownership.config_check.figures
refuses it by name and int() never converts thousands of digits. The tree is then walked for
literals only (`_literal`), so `__import__('os').system('x')` is a call that is read as no
value and never run: nothing here evaluates code.

A body that fails a bound, or does not parse, raises `ReprNotRead` with the reason. The log
readers then treat the line as unread and name it when a figure is missing, as they do for a
line over MAX_LINE_BYTES.
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Any

from ownership.errors import ConfigError

from .bounds import _MAX_DIGITS, MAX_REPR_CHARS, MAX_REPR_DEPTH, brief


class ReprNotRead(ValueError):
    """A repr of arguments that is not read: the message says why (a bound, or not a repr)."""


#: A quoted string on one line, as Python reads it. The possessive `*+` means a quote that is
#: never closed costs one pass to the end of the line and no backtracking.
_STRING_PATTERN = r"'(?:[^'\\\n]|\\.)*+'" + r'|"(?:[^"\\\n]|\\.)*+"'
_STRING = re.compile(_STRING_PATTERN)
#: One token of a repr, after any blanks: each alternative starts with a different character
#: class, so a token is found by one anchored match that cannot backtrack.
_TOKEN = re.compile(
    r"[ \t\f]*(?:"
    rf"(?P<string>{_STRING_PATTERN})"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<number>0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
    r"|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]+)?[jJ]?)"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<separator>[,:=])|(?P<dot>\.)|(?P<sign>[+-])"
    r"|(?P<angle><)|(?P<end>$)|(?P<other>.))"
)
#: The text of a `<...>` repr up to its next quote or angle bracket.
_ANGLE_TEXT = re.compile(r"[^'\"<>]*")
_INTEGER = re.compile(r"[0-9_]+|0[xXoObB][0-9a-fA-F_]+")
#: String prefixes that a repr may print (bytes, raw); an f-string holds code, and is refused.
_PREFIXES = frozenset({"b", "r", "u", "br", "rb"})
#: What may come right before a sign: the start of a value.
_BEFORE_SIGN = frozenset({"", "open", "separator"})


def _bounded_text(body: str) -> str:
    """The repr at the start of `body`, up to its closing bracket, checked and ready for ast.parse.

    One pass over the tokens, each found by one anchored match that cannot backtrack, so the
    time is linear in the body. Raises ReprNotRead for a body over MAX_REPR_CHARS, brackets or
    chains over MAX_REPR_DEPTH, a token no repr holds, or a string or bracket never closed.
    """
    if len(body) > MAX_REPR_CHARS:
        raise ReprNotRead(
            f"it is {len(body):,} characters, and bodies over {MAX_REPR_CHARS:,} are not parsed"
        )
    pieces: list[str] = []  # the text, with <...> reprs and huge integers replaced
    copied = 0  # body[:copied] is in pieces
    chains = [0]  # per open bracket: the length of the current attribute or call chain
    previous = ""  # the kind of the last token ("" at the start; "value" for any operand)
    pos = 0
    while True:
        m = _TOKEN.match(body, pos)
        assert m is not None  # `other` matches any character, `end` the end
        kind, at, pos = m.lastgroup, m.start(m.lastgroup or 0), m.end()
        token = m.group(kind or 0)
        where = f"at character {at + 1:,}"
        if kind in ("string", "name", "number"):
            if previous == "value":
                raise ReprNotRead(f"a {kind} follows a value {where}")
            if kind == "string" and token in ("''", '""') and body.startswith(token[0], pos):
                raise ReprNotRead(
                    "it holds a triple-quoted string, which no repr of arguments prints"
                )
            if kind == "name" and body.startswith(("'", '"'), pos):  # a string prefix
                if token.lower() not in _PREFIXES:
                    raise ReprNotRead(
                        f"it holds a {brief(token)}-string, which holds code and no repr of arguments prints"
                    )
                continue  # the string itself is the next token
            if (
                kind == "name"
                and keyword.iskeyword(token)
                and token not in ("True", "False", "None")
            ):
                raise ReprNotRead(
                    f"it holds the keyword {token!r}, which no repr of arguments holds"
                )
            if kind == "number" and len(token) > 2 * _MAX_DIGITS and _INTEGER.fullmatch(token):
                # more digits than any figure: kept as its digits, for figures.py to refuse by name
                pieces += [body[copied:at], repr(token)]
                copied = pos
            previous = "value"
        elif kind == "open":
            if previous == "value":  # a call or a subscript: one more link of the chain
                chains[-1] += 1
                if chains[-1] > MAX_REPR_DEPTH:
                    raise ReprNotRead(f"it chains more than {MAX_REPR_DEPTH} calls or attributes")
            elif previous in ("dot", "sign"):
                raise ReprNotRead(f"a bracket follows a {previous} {where}")
            chains.append(0)
            if len(chains) - 1 > MAX_REPR_DEPTH:
                raise ReprNotRead(f"it is nested more than {MAX_REPR_DEPTH} brackets deep")
            previous = "open"
        elif kind == "close":
            if len(chains) == 1:
                raise ReprNotRead(f"a {token!r} {where} closes no bracket")
            chains.pop()
            previous = "value"
            if len(chains) == 1:  # the repr's own closing bracket: the rest of the line is not its
                pieces.append(body[copied:pos])
                return "".join(pieces)
        elif kind == "separator":
            chains[-1] = 0
            previous = "separator"
        elif kind == "dot":
            if previous != "value":
                raise ReprNotRead(f"a '.' follows no value {where}")
            chains[-1] += 1
            if chains[-1] > MAX_REPR_DEPTH:
                raise ReprNotRead(f"it chains more than {MAX_REPR_DEPTH} calls or attributes")
            previous = "dot"
        elif kind == "sign" and previous in _BEFORE_SIGN:
            nxt = body[pos : pos + 1]
            if not (nxt.isdigit() or nxt == "." or nxt.isidentifier()):
                raise ReprNotRead(f"a sign {where} is not before a number")
            previous = "sign"
        elif kind == "angle":
            if previous == "value":
                raise ReprNotRead(f"a '<' follows a value {where}")
            pos = _skip_angle_repr(body, at)
            pieces += [body[copied:at], "..."]
            copied, previous = pos, "value"
        elif kind == "end":
            if len(chains) == 1:
                raise ReprNotRead("it is neither a dict nor a call with keyword arguments")
            raise ReprNotRead("a bracket is never closed (the line may be cut short)")
        elif token in ("'", '"'):
            raise ReprNotRead(f"a string opened {where} is never closed")
        else:
            raise ReprNotRead(
                f"it holds {token!r} {where}, which no repr of arguments holds outside a string"
            )


def _skip_angle_repr(body: str, pos: int) -> int:
    """The end of a `<...>` repr (an enum, a function, an object at an address) starting at `pos`.

    Such a repr is no Python syntax; it is replaced by `...`, read as no value. Strings inside
    are skipped whole, and nested `<` count, so `<E.A: '>'>` ends at its own `>`.
    """
    depth, at, end = 0, pos, len(body)
    while at < end:
        text = _ANGLE_TEXT.match(body, at)
        assert text is not None  # the pattern matches the empty string
        at = text.end()
        c = body[at : at + 1]
        if c in ("'", '"'):
            m = _STRING.match(body, at)
            if not m:
                raise ReprNotRead(f"a string opened at character {at + 1:,} is never closed")
            at = m.end()
            continue
        if c == "<":
            depth += 1
            if depth > MAX_REPR_DEPTH:
                raise ReprNotRead(f"it is nested more than {MAX_REPR_DEPTH} '<' deep")
        elif c == ">":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1  # past the bracket (or the end)
    raise ReprNotRead(f"a '<' at character {pos + 1:,} is never closed")


_NOT_LITERAL = object()


def _literal(node: ast.AST, depth: int = 0) -> Any:
    """The value of a literal node (a constant, a signed number, a list, tuple, set or dict of
    literals), or _NOT_LITERAL. Nothing is evaluated: names, calls and attributes are not literals."""
    if depth > MAX_REPR_DEPTH:
        return _NOT_LITERAL
    if isinstance(node, ast.Constant):
        return _NOT_LITERAL if node.value is Ellipsis else node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float, complex))
        and not isinstance(node.operand.value, bool)
    ):
        value = node.operand.value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_literal(e, depth + 1) for e in node.elts]
        if any(i is _NOT_LITERAL for i in items):
            return _NOT_LITERAL
        if isinstance(node, ast.List):
            return items
        if isinstance(node, ast.Tuple):
            return tuple(items)
        try:
            return set(items)
        except TypeError:  # an unhashable item
            return _NOT_LITERAL
    if isinstance(node, ast.Dict):
        pairs = []
        for k, v in zip(node.keys, node.values):
            key = _literal(k, depth + 1) if k is not None else _NOT_LITERAL
            value = _literal(v, depth + 1)
            if key is _NOT_LITERAL or value is _NOT_LITERAL:
                return _NOT_LITERAL
            pairs.append((key, value))
        try:
            return dict(pairs)
        except TypeError:
            return _NOT_LITERAL
    return _NOT_LITERAL


def read_arg_repr(body: str) -> dict[str, Any]:
    """The top-level keys of a repr of arguments with literal values: `{'k': v, ...}` or `Name(k=v, ...)`.

    Keys whose value is no literal (a call, a name, an enum's `<...>`) are left out. A key
    named twice is refused with a ConfigError naming it: a repr of a dict or a dataclass never
    names a key twice, so such a line was edited or is not one server's, and neither of its
    values can be believed (a Python dict would keep the later one silently). Raises
    ReprNotRead when the body is over a bound or is not a repr (see the module's docstring).
    """
    text = _bounded_text(body.strip())
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ReprNotRead(f"it is not a Python repr ({brief(reason, 80)})") from exc
    top = tree.body
    if isinstance(top, ast.Dict):
        items = list(zip(top.keys, top.values))
    elif isinstance(top, ast.Call):
        items = [(ast.Constant(kw.arg), kw.value) for kw in top.keywords if kw.arg is not None]
    else:
        raise ReprNotRead("it is neither a dict nor a call with keyword arguments")
    out: dict[str, Any] = {}
    named: set[str] = set()
    for key_node, value_node in items:
        if key_node is None:
            continue
        key = _literal(key_node)
        if key is _NOT_LITERAL:
            continue
        name = str(key)
        if name in named:
            raise ConfigError(
                f"the key {brief(name)} is named twice, and a repr of server arguments names each key once"
                " (the line was edited, or joins two servers' lines): give the server's own start-up log"
            )
        named.add(name)
        value = _literal(value_node)
        if value is not _NOT_LITERAL:
            out[name] = value
    return out
