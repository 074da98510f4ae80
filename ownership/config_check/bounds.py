"""The fixed bounds on hostile or huge input, and the messages that name a value cut short.

Every reader of ownership.config_check stays within these whatever its input: lines and
argument files have a size, a repr body a size and a nesting depth, a figure a largest
believable value and a release string a length. `brief` shows a value from a hostile file in
an error without printing all of it.
"""

from __future__ import annotations

from typing import Any

from ownership.errors import ConfigError

#: The longest log line read, in bytes. A start-up line is a few KB (SGLang's `server_args=`
#: dump is the longest); a longer line is skipped, never cut, so that no figure is read from
#: part of a number, and an error about a missing figure names the skipped line.
MAX_LINE_BYTES = 1 << 20
#: A log is read in chunks of this many bytes, cut at line ends: memory stays under about
#: MAX_LINE_BYTES + 2 * _CHUNK_BYTES whatever the log's size.
_CHUNK_BYTES = 1 << 20
#: The largest argument file read: a launch command line or a /server_info dump is a few KB.
MAX_ARGS_BYTES = 1 << 20
#: The longest `server_args=` or `non-default args:` body parsed (ownership.config_check.arg_repr):
#: ast.parse's memory and time grow with the body, and a real one is a few KB. A longer body is
#: not read, and an error about a figure it would have given names its line.
MAX_REPR_CHARS = 64 * 1024
#: The deepest nesting of brackets in such a body: a dict of config objects is 3 or 4 deep, and
#: ast.parse refuses 200 (and recurses in C well before Python's limit).
MAX_REPR_DEPTH = 32
#: The largest token count believed (2**40, about 1.1 * 10**12): a KV pool of that many tokens
#: would take petabytes of GPU memory, and context windows are below 10**8 tokens. A figure
#: above it is refused as absurd (this also keeps int() away from numbers of thousands of digits).
MAX_TOKENS = 2**40
#: The most data-parallel ranks believed for one node.
MAX_DP_RANKS = 2**16
#: The longest release string read (`0.5.23`, `v0.5.22.post1`, `0.33.0+cu130`).
_MAX_VERSION_CHARS = 64
#: Digits of the longest token count written in figures ("1,099,511,627,776" has 13 digits).
_MAX_DIGITS = len(str(MAX_TOKENS))


def brief(value: Any, limit: int = 40) -> str:
    """A value for an error message, cut to about `limit` characters (it may come from a hostile file)."""
    if isinstance(value, (dict, list, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = f"{text[: limit // 2]}...{text[-(limit // 4) :]} ({len(text):,} characters)"
    return repr(text) if isinstance(value, str) else text


def _absurd(where: str, shown: str) -> ConfigError:
    return ConfigError(
        f"{where} is {shown}, not a real figure: no KV pool, page or context window is over "
        f"{MAX_TOKENS:,} tokens (2**40); check the value, or give the node's own start-up log or arguments"
    )
