"""Figures as the engines read them: token counts with each engine's suffixes, typed values, where.

A figure comes from a log line, an argument file or a repr of arguments; each helper here turns
one raw value into an int or refuses it with a ConfigError naming the key and where it was read
(a float, a bool, a number of thousands of digits or one over MAX_TOKENS is never guessed at).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from ownership.errors import ConfigError

from .bounds import _MAX_DIGITS, MAX_TOKENS, _absurd, brief
from .deployment import SGLANG, VLLM


def _tokens(n: int) -> str:
    return f"{n:,} token" + ("" if n == 1 else "s")


def _log_count(digits: str, where: str) -> int:
    """A token count printed in a log line: digits, maybe grouped by commas ('2,097,152')."""
    plain = digits.replace(",", "")
    if len(plain) > _MAX_DIGITS or int(plain) > MAX_TOKENS:
        raise _absurd(where, brief(plain) if len(plain) > _MAX_DIGITS else f"{int(plain):,}")
    return int(plain)


def parse_token_count(text: str, *, engine: str) -> int:
    """A token count as the engine's own argument parser reads it: '1048576', '1M', '1Mi', '1K'.

    The suffixes differ between the engines, and the difference is a trap: in SGLang
    (utils/common.py::human_readable_int) 'M' is 10**6 and 'Mi' is 2**20; in vLLM
    (utils/argparse_utils.py::human_readable_int) 'm' is 10**6 and 'M' is 2**20.
    A count over MAX_TOKENS, or of more digits than any real one, is refused as absurd.
    """
    value = text.strip().replace("_", "")
    if len(value) > 2 * _MAX_DIGITS:
        raise _absurd("the token count", brief(value))
    number: int | None = None
    if re.fullmatch(r"-?[0-9]+", value):
        number = int(value)
    elif engine == VLLM:
        m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([kKmMgGtT])", value)
        if m:
            digits, suffix = m.groups()
            if suffix.islower():
                number = int(Decimal(digits) * 10 ** (3 * "kmgt".index(suffix) + 3))
            elif "." not in digits:
                number = int(digits) * 2 ** (10 * "KMGT".index(suffix) + 10)
    else:
        m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
        if m:
            digits, suffix = m.groups()
            if not suffix.endswith("i"):
                number = int(Decimal(digits) * 10 ** (3 * "kMGT".index(suffix) + 3))
            elif "." not in digits:
                number = int(digits) * 2 ** (10 * "KMGT".index(suffix[0]) + 10)
    if number is None:
        raise ConfigError(
            f"{brief(text)} is not a token count that {engine} accepts: use a plain integer"
            + (
                " or a suffix like 1M (10**6) or 1Mi (2**20)"
                if engine == SGLANG
                else " or a suffix like 1m (10**6) or 1M (2**20)"
            )
        )
    if abs(number) > MAX_TOKENS:
        raise _absurd(f"the token count {brief(text)}", f"{number:,}")
    return number


def _figure_value(
    values: dict[str, Any], key: str, engine: str, where: str, *, limit: int = MAX_TOKENS
) -> int | None:
    """values[key] as an int (a string is read as the engine's parser reads it), None if absent.

    A value of the wrong type (a float, a bool, a list) or beyond `limit` is refused, naming
    the key and where it was read: a figure is never silently dropped or guessed.
    """
    value = values.get(key)
    if value is None:
        return None
    at = _at(where, key)
    if isinstance(value, str):
        if len(value) > 2 * _MAX_DIGITS:
            raise _absurd(at, brief(value))
        try:
            number = parse_token_count(value, engine=engine)
        except ConfigError as exc:
            raise ConfigError(f"{at}: {exc}") from exc
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise ConfigError(
            f"{at} is {brief(value)}, not a whole number; write it as an integer (e.g. 1048576)"
        )
    if abs(number) > limit:
        if limit == MAX_TOKENS:
            raise _absurd(at, f"{number:,}")
        raise ConfigError(
            f"{at} is {number:,}: more than {limit:,} is not a real figure; check the value"
        )
    return number


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _at(where: str, key: str) -> str:
    """Where a figure was read: 'args.sh: --page-size' on a command line, 'x.log:3 server_args page_size' elsewhere."""
    if where.endswith("--"):
        return where + key.replace("_", "-")
    return f"{where} {key}"


def _positive(
    values: dict[str, Any], key: str, engine: str, where: str, rule: str, *, limit: int = MAX_TOKENS
) -> int | None:
    """A figure that must be positive when given: `rule` says so in words, for the error."""
    number = _figure_value(values, key, engine, where, limit=limit)
    if number is not None and number <= 0:
        raise ConfigError(
            f"{_at(where, key)} is {number}, but {rule}; fix the value or leave the key out"
        )
    return number


_CONTEXT_RULE = "a context length is at least 1 token"
_PAGE_RULE = "a page holds at least 1 token"
_RANKS_RULE = "a node has at least 1 data-parallel rank"
