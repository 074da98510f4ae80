"""Deployment checks: a disaggregated deployment's KV pools against its advertised context window.

The GLM-5.3 leak (docs/incident.md) began with a configuration that no check read: a context
window of 1,048,576 tokens over a prefill KV pool of 681,280 tokens. Prompts between the two
were rejected on prefill but accepted on decode, and SGLang 0.5.19 served them with the stale KV
of other customers. The operators' advice is to compare the pool with the window at start-up
and after every configuration change, from the real configuration. This module does that
comparison, so that a deploy pipeline can run it as one command (`ownership config-check`).

It reads the figures that the engines themselves print or are given, never guessing a number:

- SGLang (0.5.19 to 0.5.23) start-up logs of the prefill and decode nodes
  (`read_sglang_log`), SGLang launch command lines and JSON dumps of the server arguments or of
  `/server_info` (`read_server_args`);
- vLLM 0.33.0 start-up logs and `vllm serve` arguments (`read_vllm_log`, `read_server_args`);
- numbers given by hand (`build_deployment`'s keyword arguments).

Input may be huge or hostile, so reading has fixed bounds: a log is streamed in chunks
(memory does not grow with its size, time grows linearly), a line over MAX_LINE_BYTES is skipped
rather than cut, every pattern is matched after a literal keyword found with `str.find` and
cannot backtrack, an argument file over MAX_ARGS_BYTES is refused, and a figure over MAX_TOKENS,
zero, negative or contradicted by another line of the same start-up is refused as a
`ConfigError` naming the file and line.

`build_deployment` merges them into a typed `Deployment` (a number given by hand overrides a
log, a log overrides the launch arguments), raising `ConfigError` that names each missing figure
and the file it was not found in. `run_checks` returns a `ConfigReport`: one `CheckOutcome` per
check, each with a verdict, the numbers behind it and a one-line explanation. Nothing here prints.

`spec_params` scales a deployment down to the parameters of the shipped spec `sglang_pd`, so
that `ownership config-check --spec` can attach a counterexample trace to a failing
configuration (see docs/config-check.md for the scaling rule).
"""

from __future__ import annotations

import ast
import enum
import json
import math
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ownership.errors import ConfigError
from ownership.result import Verdict

SGLANG = "sglang"
VLLM = "vllm"
ENGINES = (SGLANG, VLLM)
PREFILL = "prefill"
DECODE = "decode"
ROLES = (PREFILL, DECODE)

#: SGLang's scheduler rejects a prompt of `max_req_input_len` tokens or more, where
#: `max_req_input_len = min(context_len - 1, kv_capacity - 1) - 5`
#: (managers/tp_worker.py::TpModelWorker.get_worker_info in 0.5.19 and 0.5.23; the check is
#: managers/utils.py::validate_input_length, `len(origin_input_ids) >= max_req_input_len`).
SGLANG_INPUT_SLACK = 5

#: The first SGLang release whose intake door retires a rejected request before bootstrap, on
#: prefill and on decode (#38935; the release table of docs/protocols/sglang-pd.md).
SGLANG_DOOR_RELEASE = (0, 5, 21)
#: The first SGLang release that retires an aborted request after the prefill forward (#36988).
SGLANG_RETIRE_RELEASE = (0, 5, 20)
#: The releases the table of docs/protocols/sglang-pd.md was read from (0.5.19 and 0.5.23).
SGLANG_TABLE_RELEASES = ((0, 5, 19), (0, 5, 23))

#: The scaled model for --spec: the advertised window is this many (model) pages.
SPEC_CONTEXT_PAGES = 3
#: The scaled model for --spec: two requests, one to leave KV behind and one to read it.
SPEC_REQUESTS = 2
#: The shipped spec that --spec runs.
SPEC_NAME = "sglang_pd"


# ----------------------------------------------------------------------------------------
# Data: figures, nodes, the deployment, outcomes, the report
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A number read from a deployment, and where it was read (a file and line, or an option)."""

    value: int
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


#: The figures a node needs, in words, for messages.
FIGURE_WORDS: dict[str, str] = {
    "context_length": "context length (tokens)",
    "pool_tokens": "KV pool size (tokens per data-parallel rank)",
    "page_size": "page size (tokens per KV page)",
}


@dataclass
class NodeReading:
    """What one input (a log, an argument file, the explicit options) says about one node.

    Every figure is optional: readings are merged before a missing figure becomes an error.
    `looked_for` says, per missing figure, what this input was searched for, so that the error
    can name the figure and the file exactly.
    """

    origin: str  # a path, or "options"
    kind: str  # "SGLang log", "vLLM log", "SGLang launch command", ..., "options"
    engine: str | None = None
    role: str | None = None  # the node's own idea of its role (disaggregation_mode, kv_role)
    engine_version: str | None = None
    context_length: Figure | None = None
    pool_tokens: Figure | None = None
    pool_in_whole_blocks: bool = False  # vLLM's logged capacity already counts whole blocks
    page_size: Figure | None = None
    max_req_input_len: Figure | None = None  # SGLang /server_info reports it exactly
    dp_ranks: Figure | None = None
    allow_auto_truncate: bool | None = None
    looked_for: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeConfig:
    """One node's resolved figures: every number a check needs, each with its source."""

    role: str
    engine: str
    context_length: Figure
    pool_tokens: Figure
    page_size: Figure | None  # None only for vLLM logs, whose capacity counts whole blocks
    input_limit: Figure  # a prompt of this many tokens or more is rejected
    dp_ranks: Figure | None = None
    allow_auto_truncate: bool | None = None
    engine_version: str | None = None

    @property
    def longest_prompt(self) -> int:
        """The longest prompt this node serves, in tokens."""
        return self.input_limit.value - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "context_length": self.context_length.to_json(),
            "pool_tokens": self.pool_tokens.to_json(),
            "page_size": self.page_size.to_json() if self.page_size else None,
            "input_limit": self.input_limit.to_json(),
            "data_parallel_ranks": self.dp_ranks.to_json() if self.dp_ranks else None,
            "allow_auto_truncate": self.allow_auto_truncate,
        }


@dataclass(frozen=True)
class Deployment:
    """A disaggregated deployment: the advertised window, the engine release, and both nodes."""

    engine: str
    advertised_context: Figure
    prefill: NodeConfig
    decode: NodeConfig
    version: str | None = None  # the SGLang release judged by the gap check
    version_source: str | None = None

    def node(self, role: str) -> NodeConfig:
        return self.prefill if role == PREFILL else self.decode

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "version_source": self.version_source,
            "advertised_context": self.advertised_context.to_json(),
            "prefill": self.prefill.to_json(),
            "decode": self.decode.to_json(),
        }


class CheckVerdict(enum.Enum):
    """A check's outcome and the exit code it contributes (from ownership.result's one table)."""

    PASS = ("pass", Verdict.VERIFIED.exit_code)
    FAIL = ("fail", Verdict.VIOLATED.exit_code)
    #: Only a --spec run stopped by a limit: not a pass, not a counterexample.
    INCONCLUSIVE = ("inconclusive", Verdict.INCONCLUSIVE.exit_code)

    def __init__(self, word: str, exit_code: int) -> None:
        self.word = word
        self.exit_code = exit_code


@dataclass(frozen=True)
class CheckOutcome:
    """One check: its name, its verdict, the numbers behind it and a one-line explanation."""

    name: str
    verdict: CheckVerdict
    numbers: dict[str, Any]
    explanation: str

    @property
    def passed(self) -> bool:
        return self.verdict is CheckVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.word,
            "numbers": dict(self.numbers),
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ConfigReport:
    """Every check's outcome for one deployment, plus the --spec run when one was asked for."""

    deployment: Deployment
    checks: tuple[CheckOutcome, ...]
    spec_result: Any = None  # ownership.result.CheckResult of the --spec run
    spec_params: dict[str, int] | None = None
    spec_fixes: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(c for c in self.checks if c.verdict is CheckVerdict.FAIL)

    @property
    def verdict(self) -> CheckVerdict:
        """FAIL if any check fails; else INCONCLUSIVE if the spec run stopped early; else PASS."""
        if self.failed:
            return CheckVerdict.FAIL
        if any(c.verdict is CheckVerdict.INCONCLUSIVE for c in self.checks):
            return CheckVerdict.INCONCLUSIVE
        return CheckVerdict.PASS

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def to_json(self) -> dict[str, Any]:
        spec: dict[str, Any] | None = None
        if self.spec_params is not None:
            spec = {
                "spec": SPEC_NAME,
                "params": dict(self.spec_params),
                "fixes": list(self.spec_fixes),
            }
            if self.spec_result is not None:
                spec.update(_spec_result_json(self.spec_result))
        return {
            "command": "config-check",
            "verdict": self.verdict.word,
            "exit_code": self.exit_code,
            "deployment": self.deployment.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "spec": spec,
        }


# ----------------------------------------------------------------------------------------
# Reading files: bounds, figures, and the stream of a log's lines
# ----------------------------------------------------------------------------------------

#: The longest log line read, in bytes. A start-up line is a few KB (SGLang's `server_args=`
#: dump is the longest); a longer line is skipped, never cut, so that no figure is read from
#: part of a number, and an error about a missing figure names the skipped line.
MAX_LINE_BYTES = 1 << 20
#: A log is read in chunks of this many bytes, cut at line ends: memory stays under about
#: MAX_LINE_BYTES + 2 * _CHUNK_BYTES whatever the log's size.
_CHUNK_BYTES = 1 << 20
#: The largest argument file read: a launch command line or a /server_info dump is a few KB.
MAX_ARGS_BYTES = 1 << 20
#: A `server_args=` or `non-default args:` body longer than this is read key by key, with a
#: pattern, rather than parsed whole by ast.literal_eval (whose memory grows with the body).
_MAX_LITERAL_CHARS = 64 * 1024
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
        text = f"{text[: limit // 2]}...{text[-(limit // 4):]} ({len(text):,} characters)"
    return repr(text) if isinstance(value, str) else text


def _absurd(where: str, shown: str) -> ConfigError:
    return ConfigError(
        f"{where} is {shown}, not a real figure: no KV pool, page or context window is over "
        f"{MAX_TOKENS:,} tokens (2**40); check the value, or give the node's own start-up log or arguments"
    )


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


#: One `key: value` or `key=value` of a dict printed by Python, for bodies that ast.literal_eval
#: cannot or should not read. Each branch stops at a fixed delimiter, so it cannot backtrack.
_REPR_ITEM = re.compile(
    r"""(?:['"](?P<k1>\w+)['"]\s*:\s*|(?<![\w.])(?P<k2>\w+)=)(?P<v>None|True|False|-?[0-9]+|'[^']*'|"[^"]*")"""
)
_REPR_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False}


def _repr_dict(body: str) -> dict[str, Any]:
    """The top-level keys of a dict printed by Python (`server_args={...}`, `non-default args: {...}`).

    Values that are not literals (enums, config objects) are skipped: only ints, bools, None
    and strings are read, which is all a check needs. A number is kept as its digits, for
    _figure_value to judge (a number of thousands of digits never reaches int()).
    """
    body = body.strip()
    if len(body) <= _MAX_LITERAL_CHARS:
        try:
            value = ast.literal_eval(body)
            if isinstance(value, dict):
                return {str(k): v for k, v in value.items()}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    out: dict[str, Any] = {}
    for m in _REPR_ITEM.finditer(body):
        key = m.group("k1") or m.group("k2")
        if key in out:
            continue  # the first occurrence is the outermost one in these dumps
        raw = m.group("v")
        out[key] = _REPR_CONSTANTS[raw] if raw in _REPR_CONSTANTS else raw.strip("'\"")
    return out


def _open_input(path: str | Path, what: str) -> Any:
    try:
        return open(path, "rb")  # closed by the caller's with
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc


def _read_chunk(f: Any, path: str | Path, what: str) -> bytes:
    try:
        return f.read(_CHUNK_BYTES)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc


def _not_text(path: str | Path, what: str, line: int) -> ConfigError:
    return ConfigError(
        f"{path}:{line}: the {what} is not text (this line holds a NUL byte); give the log or argument file itself"
    )


_NL = b"\n"


def _log_lines(
    path: str | Path, keywords: tuple[str, ...]
) -> Iterator[tuple[int, str | None, int]]:
    """(line number, text, size in bytes) of each line of the log at `path` holding a keyword.

    The file is read in chunks cut at line ends, so memory does not grow with the log's size,
    and the keywords are found with bytes.find on each chunk, so a line holding none costs no
    Python step. A line over MAX_LINE_BYTES comes with text None: it is skipped, not cut.
    """
    keys = tuple(k.encode() for k in keywords)
    with _open_input(path, "log") as f:
        first = 1  # the number of the first line in buf
        buf = b""
        while True:
            data = _read_chunk(f, path, "log")
            buf += data
            cut = buf.rfind(_NL) + 1 if data else len(buf)
            if cut == 0:
                if len(buf) > MAX_LINE_BYTES:  # one line longer than the bound: skip to its end
                    if b"\x00" in buf:
                        raise _not_text(path, "log", first)
                    size, hit = len(buf), any(k in buf for k in keys)
                    buf = b""
                    while data:
                        data = _read_chunk(f, path, "log")
                        if b"\x00" in data:
                            raise _not_text(path, "log", first)
                        end = data.find(_NL)
                        if end >= 0:
                            size, buf = size + end, data[end + 1 :]
                            break
                        size += len(data)
                    if hit:
                        yield first, None, size
                    first += 1
                if data:
                    continue
                cut = len(buf)
            yield from _chunk_lines(path, buf[:cut], first, keys)
            first += buf.count(_NL, 0, cut)
            buf = buf[cut:]
            if not data:
                return


def _chunk_lines(
    path: str | Path, chunk: bytes, first: int, keys: tuple[bytes, ...]
) -> Iterator[tuple[int, str | None, int]]:
    """The lines of one chunk (whole lines, the first numbered `first`) that hold a keyword."""
    nul = chunk.find(b"\x00")
    if nul >= 0:
        raise _not_text(path, "log", first + chunk.count(_NL, 0, nul))
    spans: set[tuple[int, int]] = set()
    for key in keys:
        at = chunk.find(key)
        while at >= 0:
            start = chunk.rfind(_NL, 0, at) + 1
            end = chunk.find(_NL, at)
            end = len(chunk) if end < 0 else end
            spans.add((start, end))
            at = chunk.find(key, end)
    no, counted = first, 0
    for start, end in sorted(spans):
        no += chunk.count(_NL, counted, start)
        counted = start
        if end - start > MAX_LINE_BYTES:
            yield no, None, end - start
        else:
            yield no, chunk[start:end].decode("utf-8", errors="replace").removesuffix("\r"), end - start


def _text_lines(text: str) -> Iterator[tuple[int, str | None, int]]:
    """The lines of a log given as text, in the form _log_lines gives them."""
    for no, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE_BYTES:
            yield no, None, len(line)
        else:
            yield no, line.removesuffix("\r"), len(line)


def _read_args_text(path: str | Path) -> str:
    """An argument file's text, refused when bigger than MAX_ARGS_BYTES or not text."""
    with _open_input(path, "argument file") as f:
        try:
            data = f.read(MAX_ARGS_BYTES + 1)
        except OSError as exc:
            raise ConfigError(
                f"cannot read the argument file {path}: {exc.strerror or exc}"
            ) from exc
    if len(data) > MAX_ARGS_BYTES:
        raise ConfigError(
            f"the argument file {path} is over {MAX_ARGS_BYTES:,} bytes, and a launch command line or a "
            "dump of server arguments is a few KB; give that file (a start-up log goes to --prefill-log or --decode-log)"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _not_text(path, "argument file", data.count(_NL, 0, nul) + 1)
    return data.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------------------
# Reading start-up logs, one line at a time
# ----------------------------------------------------------------------------------------

_DIGITS = re.compile(r"[0-9]+")


def _find_word(line: str, word: str, start: int = 0) -> int:
    """Where `word` first occurs in `line` from `start` with no word character before it, or -1."""
    at = line.find(word, start)
    while at > 0 and (line[at - 1].isalnum() or line[at - 1] == "_"):
        at = line.find(word, at + 1)
    return at


def _match_after(line: str, keyword: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """`pattern` matched right after the first `keyword` in `line` (found with str.find)."""
    at = line.find(keyword)
    return pattern.match(line, at + len(keyword)) if at >= 0 else None


class _SameFigure:
    """A figure that every line of one start-up must agree on (a node runs with one context length)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.first: tuple[int, str] | None = None
        self.clash: tuple[int, str] | None = None

    def add(self, value: int, line: str) -> None:
        if self.first is None:
            self.first = (value, line)
        elif value != self.first[0] and self.clash is None:
            self.clash = (value, line)

    def check(self, path: str) -> None:
        if self.first is not None and self.clash is not None:
            raise ConfigError(
                f"{path} gives two different values of the {self.what} in one start-up: "
                f"{self.first[1]} and {self.clash[1]}. A node runs with one {self.what}, so these "
                "lines are not one server's (several servers writing to one file, or an edited log): "
                "give each node's own start-up log"
            )


class _LogReader:
    """What the SGLang and vLLM log readers share: the lines fed in, the error kept, the skipped lines.

    A reader sees only lines holding one of its KEYWORDS. A figure's error is kept until the
    end (`reading`) so that a line of an earlier start-up, or one read while the engine is not
    yet known, never stops the file; a new start-up clears it, since only the last one counts.
    """

    KEYWORDS: tuple[str, ...] = ()

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen = False  # some start-up line of this engine was read (tells the engine)
        self.skipped: tuple[int, int] | None = None  # the first over-long line: (number, bytes)
        self.start = 0  # the line of the last start-up, 0 when none
        self.error: ConfigError | None = None

    def feed(self, no: int, line: str | None, size: int) -> None:
        if line is None:
            self.skipped = self.skipped or (no, size)
            return
        try:
            self.read_line(no, line)
        except ConfigError as exc:
            self.error = self.error or exc

    def read_line(self, no: int, line: str) -> None:
        raise NotImplementedError

    def restart(self, no: int) -> None:
        self.start = no
        self.error = None

    def where_start(self) -> str:
        """' after the start-up at line N' for the missing-figure messages, plus any skipped line."""
        text = f" after the start-up at line {self.start}" if self.start > 1 else ""
        if self.skipped is not None:
            no, size = self.skipped
            text += f"; line {no} ({size:,} bytes) was not read: lines over {MAX_LINE_BYTES:,} bytes are skipped"
        return text


# SGLang start-up lines (python/sglang/srt/..., 0.5.19 and 0.5.23 alike unless noted). Each is
# found by a literal keyword, then the rest is matched from there by an anchored pattern.
#: entrypoints/engine.py: `logger.info(f"server_args={server_args.resolved_dict()}")`, once per launch.
_SG_ARGS = "server_args="
#: managers/scheduler.py::Scheduler.init_model_worker, on TP rank 0 of each scheduler:
#: "max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
#: max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB".
_SG_SCHED = "max_total_num_tokens="
_SG_SCHED_POOL = re.compile(r"([0-9]+),")
#: managers/tp_worker.py::TpModelWorker.get_worker_info, new in 0.5.23, on every TP rank when
#: kv_capacity < context_len: "KV pool holds %d tokens, fewer than --context-length %d. ...".
_SG_WARN = "KV pool holds "
_SG_WARN_REST = re.compile(r"([0-9]+) tokens, fewer than --context-length ([0-9]+)\.")
#: mem_cache/memory_pool.py::KVCache._finalize_allocation_log: "KV Cache is allocated. dtype: %s,
#: #tokens: %d, KV size: %.2f GB" (a labelled cache, e.g. "SWA KV Cache", is another pool).
_SG_ALLOC = "] KV Cache is allocated. dtype: "
#: model_executor/model_runner_components/kv_pool_runtime.py, after a post-capture resize:
#: "Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, ...".
_SG_POSTCAP = "Post-capture KV sizing: KV cache allocated. dtype: "
_SG_TOKENS_REST = re.compile(r"[^,]*, #tokens: ([0-9]+),")
#: utils/common.py::configure_logger: "[%(asctime)s DP0 TP0] %(message)s"; the DP label is there
#: when the scheduler has a data-parallel rank (managers/scheduler.py::run_scheduler_process).
#: No bracket inside a group, so each character is looked at once.
_SG_DP = re.compile(r"\[[^\[\]]*?(?<![A-Z_])DP([0-9]{1,6})\b[^\[\]]*\]")


class _SGLangLogReader(_LogReader):
    """One SGLang server's start-up log, a line at a time: the figures of its last start-up."""

    KEYWORDS = (_SG_ARGS, _SG_SCHED, _SG_WARN, "KV Cache is allocated", "KV cache allocated")

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.restart(0)

    def restart(self, no: int) -> None:
        super().restart(no)
        self.reading = NodeReading(origin=self.path, kind="SGLang log", engine=SGLANG)
        # the smallest pool of each kind of line: (line number, pool, context or 0)
        self.sched: tuple[int, int, int] | None = None
        self.warn: tuple[int, int, int] | None = None
        self.alloc: tuple[int, int, int] | None = None
        self.postcap: tuple[int, int, int] | None = None
        self.ranks: set[str] = set()
        self.contexts = _SameFigure("context length")

    def read_line(self, no: int, line: str) -> None:
        at = line.find(_SG_ARGS)
        if at >= 0 and line.startswith(("{", "ServerArgs("), at + len(_SG_ARGS)):
            self.seen = True
            self.restart(no)
            body = line[at + len(_SG_ARGS) :]
            _sglang_args_reading(_repr_dict(body), self.reading, f"{self.path}:{no} server_args")
            return
        where = f"{self.path}:{no}"
        at = line.find(_SG_SCHED)
        pool = _SG_SCHED_POOL.match(line, at + len(_SG_SCHED)) if at >= 0 else None
        ctx_at = _find_word(line, "context_len=", pool.end()) if pool else -1
        ctx = _DIGITS.match(line, ctx_at + len("context_len=")) if ctx_at >= 0 else None
        if pool and ctx:
            self.seen = True
            tokens = _log_count(pool.group(1), f"{where} max_total_num_tokens")
            context = _log_count(ctx.group(), f"{where} context_len")
            self.contexts.add(context, f"line {no} says context_len={context}")
            if self.sched is None or tokens < self.sched[1]:
                self.sched = (no, tokens, context)
            label = _SG_DP.search(line, 0, at)
            if label and len(self.ranks) < MAX_DP_RANKS:
                self.ranks.add(label.group(1))
            return
        m = _match_after(line, _SG_WARN, _SG_WARN_REST)
        if m:
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} (KV pool holds)")
            context = _log_count(m.group(2), f"{where} (--context-length in the KV pool warning)")
            self.contexts.add(context, f"line {no} says --context-length {context}")
            if self.warn is None or tokens < self.warn[1]:
                self.warn = (no, tokens, context)
            return
        for keyword, kind in ((_SG_POSTCAP, "postcap"), (_SG_ALLOC, "alloc")):
            m = _match_after(line, keyword, _SG_TOKENS_REST)
            if m:
                self.seen = True
                tokens = _log_count(m.group(1), f"{where} #tokens")
                smallest = getattr(self, kind)
                if smallest is None or tokens < smallest[1]:
                    setattr(self, kind, (no, tokens, 0))
                return

    def result(self) -> NodeReading:
        """The reading of the last start-up; ConfigError for a bad figure or two context lengths."""
        if self.error is not None:
            raise self.error
        self.contexts.check(self.path)
        reading, path = self.reading, self.path
        if self.warn:
            no, pool, ctx = self.warn
            reading.pool_tokens = Figure(pool, f'{path}:{no} ("KV pool holds {pool} tokens")')
            reading.context_length = Figure(
                ctx, f"{path}:{no} (--context-length in the KV pool warning)"
            )
        if self.sched:
            no, pool, ctx = self.sched
            ranks = len(self.ranks)
            note = f", smallest of {ranks} data-parallel ranks" if ranks > 1 else ""
            if reading.pool_tokens is None:
                reading.pool_tokens = Figure(pool, f"{path}:{no} (max_total_num_tokens{note})")
            reading.context_length = Figure(ctx, f"{path}:{no} (context_len)")
        allocated = self.postcap or self.alloc
        if reading.pool_tokens is None and allocated:
            no, pool, _ = allocated
            reading.pool_tokens = Figure(pool, f"{path}:{no} (KV cache allocated, #tokens)")
        where_start = self.where_start()
        reading.looked_for.setdefault(
            "pool_tokens",
            f'no "max_total_num_tokens=", "KV pool holds" or "KV Cache is allocated ... #tokens:" line{where_start}',
        )
        reading.looked_for.setdefault(
            "context_length",
            f'no "context_len=" in a "max_total_num_tokens=" line and no \'context_length\' in "server_args="{where_start}',
        )
        reading.looked_for.setdefault(
            "page_size", f"no 'page_size' in a \"server_args=\" line{where_start}"
        )
        return reading


# vLLM 0.33.0 start-up lines, each found by its keyword like SGLang's above.
#: entrypoints/common/startup.py::log_version_and_model (with VLLM_DISABLE_LOG_LOGO).
_VL_VERSION = "vLLM server version "
_VL_VERSION_REST = re.compile(rf"[^\s,]{{1,{_MAX_VERSION_CHARS}}}(?![^\s,])")
#: entrypoints/common/startup.py::log_non_default_args: "non-default args: {...}".
_VL_ARGS = "non-default args: {"
#: config/model.py::ModelConfig.get_and_verify_max_len: "Using max model len %s".
_VL_MAXLEN = "Using max model len "
#: v1/engine/core.py::EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: ...,
#: max_seq_len=%d, ...".
_VL_ENGINE = "Initializing a V1 LLM engine (v"
_VL_ENGINE_REST = re.compile(rf"([^)]{{1,{_MAX_VERSION_CHARS}}})\) with config: ")
#: v1/core/kv_cache_utils.py::update_kv_cache_capacity, once per engine core (per DP rank):
#: "GPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,048,576 tokens per request: 2.00x".
#: The device before it is an upper-case word ("GPU", "XPU", "GPU + host").
_VL_CAPACITY = " KV cache size: "
_VL_DEVICE = re.compile(r"(?<!\w)[A-Z]{1,16}(?: \+ host)?")
_VL_CAPACITY_REST = re.compile(r"([0-9][0-9,]*) tokens")
_VL_CONCURRENCY = "Maximum concurrency for "
_VL_CONCURRENCY_REST = re.compile(r"([0-9][0-9,]*) tokens per request: [0-9.]+x")


def _device_before(line: str, at: int) -> bool:
    """An upper-case device name ends at `at` (vLLM's "GPU KV cache size:"), looked for in 24 characters."""
    start = max(0, at - 24)
    return any(m.end() == at for m in _VL_DEVICE.finditer(line, start, at))


class _VLLMLogReader(_LogReader):
    """One vLLM 0.33.0 server's start-up log, a line at a time: the figures of its last start-up."""

    KEYWORDS = (_VL_VERSION, _VL_ARGS, _VL_MAXLEN, _VL_ENGINE, _VL_CAPACITY, _VL_CONCURRENCY)

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.restart(0)

    def restart(self, no: int) -> None:
        super().restart(no)
        self.reading = NodeReading(
            origin=self.path, kind="vLLM log", engine=VLLM, pool_in_whole_blocks=True
        )
        self.capacity: tuple[int, int] | None = None  # the smallest: (line number, tokens)
        self.engines = 0  # "KV cache size" lines, one per data-parallel engine
        self.maxlen: Figure | None = None
        self.engine_len: Figure | None = None
        self.conc_len: Figure | None = None
        # Each kind of line must agree with itself; across kinds they may differ when
        # max_model_len is fitted at start-up (-1), so each keeps its own precedence.
        self.contexts = {
            kind: _SameFigure(f"context length ({kind})")
            for kind in ("Using max model len", "max_seq_len", "tokens per request")
        }

    def read_line(self, no: int, line: str) -> None:
        where = f"{self.path}:{no}"
        version = _match_after(line, _VL_VERSION, _VL_VERSION_REST)
        at = line.find(_VL_ARGS)
        body = line[at + len(_VL_ARGS) - 1 :].rstrip() if at >= 0 else ""
        if version or body.endswith("}"):
            self.seen = True
            self.restart(no)
        if version:
            self.reading.engine_version = version.group()
        if body.endswith("}"):
            values = _repr_dict(body)
            _vllm_args_reading(values, self.reading, f"{where} non-default args", from_log=True)
        m = _match_after(line, _VL_MAXLEN, _DIGITS)
        if m:
            self.seen = True
            tokens = _log_count(m.group(), f"{where} (Using max model len)")
            self.maxlen = Figure(tokens, f"{where} (Using max model len)")
            self.contexts["Using max model len"].add(tokens, f"line {no} says {tokens}")
        m = _match_after(line, _VL_ENGINE, _VL_ENGINE_REST)
        seq_at = _find_word(line, "max_seq_len=", m.end()) if m else -1
        seq = _DIGITS.match(line, seq_at + len("max_seq_len=")) if seq_at >= 0 else None
        if m and seq:
            self.seen = True
            self.reading.engine_version = self.reading.engine_version or m.group(1)
            tokens = _log_count(seq.group(), f"{where} max_seq_len")
            self.engine_len = Figure(tokens, f"{where} (max_seq_len)")
            self.contexts["max_seq_len"].add(tokens, f"line {no} says max_seq_len={tokens}")
        at = line.find(_VL_CAPACITY)
        m = _VL_CAPACITY_REST.match(line, at + len(_VL_CAPACITY)) if at >= 0 else None
        if m and _device_before(line, at):
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} KV cache size")
            self.engines += 1
            if self.capacity is None or tokens < self.capacity[1]:
                self.capacity = (no, tokens)
        m = _match_after(line, _VL_CONCURRENCY, _VL_CONCURRENCY_REST)
        if m:
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} (tokens per request)")
            self.conc_len = Figure(tokens, f"{where} (tokens per request)")
            self.contexts["tokens per request"].add(tokens, f"line {no} says {tokens}")

    def result(self) -> NodeReading:
        """The reading of the last start-up; ConfigError for a bad figure or two context lengths."""
        if self.error is not None:
            raise self.error
        for same in self.contexts.values():
            same.check(self.path)
        reading = self.reading
        if self.capacity:
            no, tokens = self.capacity
            note = f", smallest of {self.engines} engines" if self.engines > 1 else ""
            reading.pool_tokens = Figure(tokens, f"{self.path}:{no} (KV cache size{note})")
        reading.context_length = (
            self.maxlen or self.engine_len or self.conc_len or reading.context_length
        )
        where_start = self.where_start()
        reading.looked_for.setdefault(
            "pool_tokens", f'no "KV cache size: N tokens" line{where_start}'
        )
        reading.looked_for.setdefault(
            "context_length",
            f'no "Using max model len", "max_seq_len=" or "Maximum concurrency for M tokens" line{where_start}',
        )
        return reading


_READERS: dict[str, type[_SGLangLogReader] | type[_VLLMLogReader]] = {
    SGLANG: _SGLangLogReader,
    VLLM: _VLLMLogReader,
}


def _read_lines(
    lines: Iterable[tuple[int, str | None, int]], readers: list[_LogReader]
) -> None:
    for no, line, size in lines:
        for reader in readers:
            reader.feed(no, line, size)


def _all_keywords(readers: list[_LogReader]) -> tuple[str, ...]:
    return tuple(k for r in readers for k in r.KEYWORDS)


def detect_log_engine(text: str) -> str | None:
    """'sglang' or 'vllm' by the start-up lines the log contains, or None when it has neither."""
    readers: list[_LogReader] = [_SGLangLogReader("<log>"), _VLLMLogReader("<log>")]
    _read_lines(_text_lines(text), readers)
    return next((e for e, r in zip(_READERS, readers) if r.seen), None)


def read_sglang_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one SGLang server's start-up log (0.5.19 to 0.5.23), given as text.

    Figures, from the last start-up in the file (the last `server_args=` line on):
    - the KV pool size: 0.5.23's warning "KV pool holds N tokens, fewer than --context-length C"
      (tp_worker.py::TpModelWorker.get_worker_info; N is exactly the kv_capacity that bounds
      `max_req_input_len`), else the scheduler line "max_total_num_tokens=N, ..., context_len=C"
      (scheduler.py::Scheduler.init_model_worker), else "KV Cache is allocated ... #tokens: N"
      (memory_pool.py::KVCache._finalize_allocation_log). With several data-parallel ranks, the
      smallest pool is the one that decides.
    - the context length: `context_len=` of the scheduler line (the effective value, from
      --context-length or the model's config.json), else `'context_length'` of `server_args=`.
      Two different effective context lengths in one start-up are refused, naming both lines.
    - the page size, data-parallel width, role and --allow-auto-truncate: from `server_args=`.
    """
    reader = _SGLangLogReader(path)
    _read_lines(_text_lines(text), [reader])
    return reader.result()


def read_vllm_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one vLLM 0.33.0 server's start-up log, given as text.

    Figures, from the last start-up in the file:
    - the KV pool: "GPU KV cache size: N tokens, Maximum concurrency for M tokens per request"
      (v1/core/kv_cache_utils.py::update_kv_cache_capacity). N is `int(concurrency * M)` where
      concurrency = num_gpu_blocks / blocks per max_model_len request
      (get_max_concurrency_for_kv_cache_config), so it already counts whole blocks: the page
      rounding is in it. With several data-parallel engines, the smallest decides.
    - max_model_len: "Using max model len M" (config/model.py::ModelConfig.get_and_verify_max_len),
      else `max_seq_len=` of "Initializing a V1 LLM engine (vX) with config:", else M above.
    - the block size, when set, and the data-parallel width: "non-default args: {...}".
    """
    reader = _VLLMLogReader(path)
    _read_lines(_text_lines(text), [reader])
    return reader.result()


# ----------------------------------------------------------------------------------------
# Reading launch arguments (command lines, JSON dumps, the args lines of a log)
# ----------------------------------------------------------------------------------------


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


def _sglang_args_reading(values: dict[str, Any], reading: NodeReading, where: str) -> None:
    """Fill a reading from SGLang server-argument values (a resolved dict or a parsed command line)."""
    ctx = _positive(values, "context_length", SGLANG, where, _CONTEXT_RULE)
    if ctx is not None:
        reading.context_length = Figure(ctx, _at(where, "context_length"))
    page = _positive(values, "page_size", SGLANG, where, _PAGE_RULE)
    if page is not None:
        reading.page_size = Figure(page, _at(where, "page_size"))
    mode = values.get("disaggregation_mode")
    if mode in (PREFILL, DECODE):
        reading.role = mode
    truncate = _as_bool(values.get("allow_auto_truncate"))
    if truncate is not None:
        reading.allow_auto_truncate = truncate
    dp = _positive(values, "dp_size", SGLANG, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    attn_dp = _positive(values, "attn_dp_size", SGLANG, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    if dp is not None:
        # 0.5.23: one scheduler (and one KV pool) per dp_size * attn_dp_size rank
        # (runtime_context.num_dp_ranks_of); 0.5.19: one per dp_size rank, with or without
        # --enable-dp-attention.
        ranks = dp * (attn_dp or 1)
        source = _at(where, "dp_size") + (" * attn_dp_size" if attn_dp else "")
        if ranks > MAX_DP_RANKS:
            raise ConfigError(
                f"{source} is {ranks:,} data-parallel ranks: more than {MAX_DP_RANKS:,} is not a real figure; check the values"
            )
        reading.dp_ranks = Figure(ranks, source)
    bound = _figure_value(values, "max_total_tokens", SGLANG, where)
    if bound is not None:
        reading.looked_for.setdefault(
            "pool_tokens",
            f"--max-total-tokens {bound} is only an upper bound: the pool is the smaller of it and "
            "what fits in GPU memory, known at start-up",
        )


def _vllm_args_reading(
    values: dict[str, Any], reading: NodeReading, where: str, *, from_log: bool = False
) -> None:
    """Fill a reading from vLLM engine arguments (non-default args, a JSON dump, a command line)."""
    raw_len = values.get("max_model_len")
    auto = isinstance(raw_len, str) and raw_len.strip().lower() == "auto"
    max_len = -1 if auto else _figure_value(values, "max_model_len", VLLM, where)
    if max_len is not None:
        if max_len > 0:
            reading.context_length = Figure(max_len, _at(where, "max_model_len"))
        else:
            reading.looked_for["context_length"] = (
                "max_model_len is -1 (auto-fit): the value is decided at start-up; give the start-up log"
            )
    block = _positive(values, "block_size", VLLM, where, _PAGE_RULE)
    if block is not None:
        reading.page_size = Figure(block, _at(where, "block_size"))
    dp = _positive(values, "data_parallel_size", VLLM, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    if dp is not None:
        reading.dp_ranks = Figure(dp, _at(where, "data_parallel_size"))
    blocks = _figure_value(values, "num_gpu_blocks_override", VLLM, where)
    if blocks is not None and not from_log:
        if reading.page_size is not None:
            # Block 0 is the null block, held back for ever (v1/core/block_pool.py::BlockPool).
            usable = (blocks - 1) * reading.page_size.value
            reading.pool_tokens = Figure(
                usable,
                f"{_at(where, 'num_gpu_blocks_override')} {blocks} (less the null block) * block size {reading.page_size.value}",
            )
        else:
            reading.looked_for["pool_tokens"] = (
                f"num_gpu_blocks_override {blocks} is given but not block_size, so the pool in tokens is unknown"
            )
    kv = values.get("kv_transfer_config")
    if isinstance(kv, str):
        try:
            kv = json.loads(kv)
        except (ValueError, RecursionError):
            kv = None
    if isinstance(kv, dict):
        kv_role = kv.get("kv_role")
        role = {"kv_producer": PREFILL, "kv_consumer": DECODE}.get(kv_role) if isinstance(kv_role, str) else None
        if role:
            reading.role = role


_SGLANG_ALIASES = {
    "data_parallel_size": "dp_size",
    "dp": "dp_size",
    "attention_data_parallel_size": "attn_dp_size",
    "tp": "tp_size",
    "tensor_parallel_size": "tp_size",
}
_VLLM_ALIASES = {
    "dp": "data_parallel_size",
    "tp": "tensor_parallel_size",
    "O": "compilation_config",
}


def _command_line_values(tokens: list[str], aliases: dict[str, str]) -> dict[str, Any]:
    """`--context-length 1M --page-size=64 --enable-x` -> {'context_length': '1M', 'page_size': '64', 'enable_x': True}."""
    values: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--") or re.fullmatch(r"-\d+", tok):
            continue
        name, eq, value = tok.lstrip("-").partition("=")
        key = aliases.get(name.replace("-", "_"), name.replace("-", "_"))
        if eq:
            values[key] = value
        elif i < len(tokens) and (
            not tokens[i].startswith("-") or re.fullmatch(r"-\d+", tokens[i])
        ):
            values[key] = tokens[i]
            i += 1
        else:
            values[key] = True
    return values


def _engine_of_command(tokens: list[str]) -> str | None:
    for tok in tokens[:6]:
        if "sglang" in tok:
            return SGLANG
        if "vllm" in tok:
            return VLLM
    flags = {t.split("=")[0] for t in tokens if t.startswith("--")}
    if flags & {
        "--context-length",
        "--page-size",
        "--disaggregation-mode",
        "--model-path",
        "--mem-fraction-static",
    }:
        return SGLANG
    if flags & {
        "--max-model-len",
        "--block-size",
        "--gpu-memory-utilization",
        "--kv-transfer-config",
    }:
        return VLLM
    return None


def _engine_of_dict(values: dict[str, Any]) -> str | None:
    if values.keys() & {
        "context_length",
        "page_size",
        "disaggregation_mode",
        "max_req_input_len",
        "mem_fraction_static",
        "model_path",
    }:
        return SGLANG
    if values.keys() & {
        "max_model_len",
        "block_size",
        "gpu_memory_utilization",
        "num_gpu_blocks_override",
    }:
        return VLLM
    return None


def read_server_args(text: str, *, path: str = "<args>", engine: str | None = None) -> NodeReading:
    """Read a server's launch arguments: a JSON dump, or the launch command line.

    JSON: SGLang's `server_args.resolved_dict()` or a `/server_info` response (which adds the
    scheduler's `max_total_num_tokens` and `max_req_input_len` of data-parallel rank 0,
    Scheduler.get_init_info, and the release as `version`); or vLLM engine arguments.
    A command line: `python -m sglang.launch_server ...` or `vllm serve ...`, backslash
    continuations allowed; SGLang reads token counts like 1M as 10**6 and 1Mi as 2**20, vLLM
    reads 1M as 2**20 (`parse_token_count`).

    A launch command fixes no SGLang pool size: the pool is sized at start-up from free GPU
    memory (`--max-total-tokens` only caps it), so the pool must come from the start-up log,
    a `/server_info` dump or --prefill/decode-pool-tokens.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            # A number of more digits than any real figure stays text, so that int() never sees
            # thousands of digits and _figure_value can name the key.
            values = json.loads(stripped, parse_int=_json_int)
        except RecursionError as exc:
            raise ConfigError(
                f"{path} is JSON nested deeper than Python's recursion limit ({sys.getrecursionlimit():,} levels), "
                "and a dump of server arguments is one or two levels deep; give the dump itself"
            ) from exc
        except ValueError as exc:
            raise ConfigError(
                f"{path} starts like JSON but is not JSON ({brief(str(exc), 120)}); give a JSON dump of the server arguments or the launch command line"
            ) from exc
        if not isinstance(values, dict):
            raise ConfigError(
                f"{path}: expected a JSON object of server arguments, found {type(values).__name__}"
            )
        nested = values.get("server_args")
        if isinstance(nested, dict):
            values = {**nested, **{k: v for k, v in values.items() if k != "server_args"}}
        found = engine or _engine_of_dict(values)
        if found is None:
            raise ConfigError(
                f"{path}: cannot tell whether these are SGLang or vLLM arguments (no context_length, page_size, max_model_len or block_size key); pass --engine"
            )
        kind = "JSON server arguments"
        reading = NodeReading(origin=path, kind=f"{found} {kind}", engine=found)
        if found == SGLANG:
            _sglang_args_reading(values, reading, f"{path}:")
            pool = _figure_value(values, "max_total_num_tokens", SGLANG, f"{path}:")
            if pool is not None:
                reading.pool_tokens = Figure(
                    pool, f"{path}: max_total_num_tokens (data-parallel rank 0)"
                )
            limit = _figure_value(values, "max_req_input_len", SGLANG, f"{path}:")
            if limit is not None:
                reading.max_req_input_len = Figure(limit, f"{path}: max_req_input_len")
            release = values.get("version")
            if isinstance(release, str):
                parse_version(release, source=f"{path}: version")
                reading.engine_version = release
            reading.looked_for.setdefault(
                "pool_tokens",
                "no max_total_num_tokens key (a /server_info dump has it; the server arguments alone do not)",
            )
            reading.looked_for.setdefault(
                "context_length",
                "context_length is missing or null (it then comes from the model's config.json, known at start-up)",
            )
            reading.looked_for.setdefault("page_size", "page_size is missing or null")
        else:
            _vllm_args_reading(values, reading, f"{path}:")
            reading.looked_for.setdefault(
                "pool_tokens",
                "no num_gpu_blocks_override with block_size (the pool is sized at start-up: give the start-up log)",
            )
            reading.looked_for.setdefault("context_length", "no max_model_len key")
        return reading

    joined = re.sub(r"\\\r?\n", " ", text)
    joined = "\n".join(line for line in joined.splitlines() if not line.lstrip().startswith("#"))
    try:
        tokens = shlex.split(joined)
    except ValueError as exc:
        raise ConfigError(f"{path}: cannot split the launch command line ({exc})") from exc
    if not any(t.startswith("--") for t in tokens):
        raise ConfigError(
            f"{path} is neither a JSON dump of server arguments nor a launch command line with --options"
        )
    found = engine or _engine_of_command(tokens)
    if found is None:
        raise ConfigError(
            f"{path}: cannot tell whether this launches SGLang or vLLM (no sglang/vllm program and no engine-specific option); pass --engine"
        )
    reading = NodeReading(origin=path, kind=f"{found} launch command", engine=found)
    if found == SGLANG:
        values = _command_line_values(tokens, _SGLANG_ALIASES)
        _sglang_args_reading(values, reading, f"{path}: --")
        reading.looked_for.setdefault(
            "pool_tokens",
            "a launch command fixes no pool size: the pool is sized from free GPU memory at start-up",
        )
        reading.looked_for.setdefault(
            "context_length",
            "no --context-length (it then comes from the model's config.json, known at start-up)",
        )
        reading.looked_for.setdefault(
            "page_size",
            "no --page-size (the default depends on the attention backend, known at start-up)",
        )
    else:
        values = _command_line_values(tokens, _VLLM_ALIASES)
        _vllm_args_reading(values, reading, f"{path}: --")
        reading.looked_for.setdefault(
            "pool_tokens",
            "no --num-gpu-blocks-override with --block-size (the pool is sized at start-up)",
        )
        reading.looked_for.setdefault(
            "context_length",
            "no --max-model-len (it then comes from the model's config, known at start-up)",
        )
    reading.looked_for.setdefault("page_size", "no block size option")
    return reading


def _json_int(digits: str) -> int | str:
    """A JSON integer: an int, or its digits when longer than any real figure (judged later)."""
    return int(digits) if len(digits) <= 2 * _MAX_DIGITS else digits


def read_log(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read an SGLang or vLLM start-up log from a file, telling the engine from its lines.

    The file is streamed (`_log_lines`): memory stays bounded and time grows linearly with its
    size. Without `engine`, both readers see every line and the engine is the one whose
    start-up lines the log holds (SGLang's first).
    """
    engines = [engine] if engine is not None else list(_READERS)
    readers: list[_LogReader] = [_READERS[e](str(path)) for e in engines]
    _read_lines(_log_lines(path, _all_keywords(readers)), readers)
    chosen = next((r for r in readers if r.seen or engine is not None), None)
    if chosen is None:
        raise ConfigError(
            f"{path} does not look like an SGLang or vLLM start-up log: it has none of the lines "
            '"max_total_num_tokens=", "KV Cache is allocated", "server_args=" (SGLang) or '
            '"KV cache size:", "Using max model len" (vLLM); give the whole start-up log'
        )
    return _naming_the_file(path, chosen.result)


def read_args_file(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read a launch command line or a JSON dump of server arguments from a file (at most MAX_ARGS_BYTES)."""
    text = _read_args_text(path)
    return _naming_the_file(path, lambda: read_server_args(text, path=str(path), engine=engine))


def _naming_the_file(path: str | Path, read: Callable[[], NodeReading]) -> NodeReading:
    """Run a reader; a ConfigError about a value (e.g. '--context-length abc') then names the file."""
    try:
        return read()
    except ConfigError as exc:
        if str(path) in str(exc):
            raise
        raise ConfigError(f"{path}: {exc}") from exc


# ----------------------------------------------------------------------------------------
# Versions
# ----------------------------------------------------------------------------------------


def parse_version(text: str, *, source: str = "--version") -> tuple[int, int, int, int]:
    """'0.5.19', 'v0.5.21.post1', '0.5.21rc1' -> a sortable key; a pre-release sorts before its release.

    `source` names where the release was read, for the error.
    """
    m = re.fullmatch(r"v?([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})(.*)", text.strip())
    if not m or len(text) > _MAX_VERSION_CHARS:
        raise ConfigError(f"{source} {brief(text)} is not an SGLang release like 0.5.23")
    major, minor, patch, rest = m.groups()
    pre = 0 if re.match(r"[.-]?(rc|a|b|alpha|beta|dev)", rest) else 1
    return int(major), int(minor), int(patch), pre


def _older(a: str, b: str) -> str:
    return a if parse_version(a) <= parse_version(b) else b


# ----------------------------------------------------------------------------------------
# Merging readings into a deployment
# ----------------------------------------------------------------------------------------


def _merge(readings: list[NodeReading]) -> NodeReading:
    """Field by field, the first reading that has a figure wins (readings come in precedence order)."""
    merged = NodeReading(origin="+".join(r.origin for r in readings), kind="merged")
    for name in (
        "engine",
        "role",
        "engine_version",
        "context_length",
        "pool_tokens",
        "page_size",
        "max_req_input_len",
        "dp_ranks",
        "allow_auto_truncate",
    ):
        for r in readings:
            value = getattr(r, name)
            if value is not None:
                setattr(merged, name, value)
                if name == "pool_tokens":
                    merged.pool_in_whole_blocks = r.pool_in_whole_blocks
                break
    return merged


def _missing_message(role: str, figure: str, readings: list[NodeReading], option: str) -> str:
    words = FIGURE_WORDS[figure]
    files = [r for r in readings if r.kind != "options"]
    if not files:
        return f"the {role} {words} was not given: pass --{role}-log, --{role}-args or {option}"
    where = "; ".join(f"not in {r.origin} ({r.looked_for.get(figure, 'not there')})" for r in files)
    return f"the {role} {words} was not found: {where}. Give it with {option}"


def _missing_figures(
    role: str,
    merged: NodeReading,
    readings: list[NodeReading],
    engine: str,
    explicit_context: Figure | None,
) -> list[str]:
    """One message per figure that no input of this node gave."""
    missing: list[str] = []
    if merged.context_length is None and explicit_context is None:
        missing.append(_missing_message(role, "context_length", readings, "--context-length"))
    if merged.pool_tokens is None:
        missing.append(_missing_message(role, "pool_tokens", readings, f"--{role}-pool-tokens"))
    if merged.page_size is None and not (engine == VLLM and merged.pool_in_whole_blocks):
        missing.append(_missing_message(role, "page_size", readings, "--page-size"))
    return missing


def _check_role(role: str, merged: NodeReading, readings: list[NodeReading]) -> None:
    if merged.role is not None and merged.role != role:
        source = next(r.origin for r in readings if r.role is not None)
        raise ConfigError(
            f"{source} belongs to a {merged.role} node (its own configuration says so) but was given as the {role} input; swap --prefill-* and --decode-*"
        )


#: The smallest context window that serves a one-token prompt: SGLang rejects prompts of
#: `context_len - 1 - 5` tokens or more, vLLM of `max_model_len` or more.
_SMALLEST_WINDOW = {SGLANG: 2 + 1 + SGLANG_INPUT_SLACK, VLLM: 2}


def _check_figure(role: str, name: str, fig: Figure) -> None:
    """A figure is a whole number of tokens, from 1 to MAX_TOKENS (an option may hold anything)."""
    value = fig.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"the {role} {name} is {brief(value)} ({fig.source}); it must be a whole number of tokens"
        )
    if value <= 0:
        raise ConfigError(
            f"the {role} {name} is {value} ({fig.source}); it must be a positive number of tokens"
        )
    if value > MAX_TOKENS:
        raise _absurd(f"the {role} {name} ({fig.source})", f"{value:,}")


def _resolve_node(
    role: str, merged: NodeReading, engine: str, explicit_context: Figure | None
) -> NodeConfig:
    """A node's figures, all present (checked by _missing_figures first), with its input limit.

    Figures whose arithmetic makes no sense are refused rather than judged: a pool holding no
    whole page, or an input limit that rejects even a one-token prompt (a 1-token pool would
    otherwise "reject prompts from -5").
    """
    context = merged.context_length or explicit_context
    pool = merged.pool_tokens
    assert context is not None and pool is not None
    for name, fig in (
        ("context length", context),
        ("KV pool size", pool),
        ("page size", merged.page_size),
    ):
        if fig is not None:
            _check_figure(role, name, fig)
    page = merged.page_size
    if page is not None and pool.value < page.value:
        raise ConfigError(
            f"the {role} KV pool of {_tokens(pool.value)} ({pool.source}) holds no whole page of "
            f"{_tokens(page.value)} ({page.source}), so no request fits at all; check both figures"
        )

    if engine == SGLANG:
        if merged.max_req_input_len is not None:
            limit = merged.max_req_input_len
        else:
            value = min(context.value - 1, pool.value - 1) - SGLANG_INPUT_SLACK
            limit = Figure(
                value, "min(context_len - 1, kv_capacity - 1) - 5 (TpModelWorker.get_worker_info)"
            )
        if limit.value < 2 and merged.max_req_input_len is not None:
            raise ConfigError(
                f"the {role} node would serve no prompt: {limit.source} is {limit.value}, so it rejects "
                "every prompt; a node serving a one-token prompt has a limit of at least 2: check the dump"
            )
        if limit.value < 2:
            raise ConfigError(
                f"the {role} node would serve no prompt: SGLang rejects prompts of "
                f"min(context_len - 1, kv_capacity - 1) - 5 = {limit.value} tokens or more, with a context "
                f"length of {_tokens(context.value)} ({context.source}) and a KV pool of "
                f"{_tokens(pool.value)} ({pool.source}); both must be at least "
                f"{_SMALLEST_WINDOW[SGLANG]} tokens to serve a one-token prompt, so check the figures"
            )
    else:
        # A generate request of max_model_len prompt tokens has no room for an output token
        # (v1/engine/input_processor.py::InputProcessor._validate_prompt_len rejects it).
        limit = Figure(context.value, "max_model_len (InputProcessor._validate_prompt_len)")
        if limit.value < 2:
            raise ConfigError(
                f"the {role} node would serve no prompt: its max_model_len is {context.value} ({context.source}), "
                f"and vLLM needs at least {_SMALLEST_WINDOW[VLLM]} for a one-token prompt; check the figure"
            )
    return NodeConfig(
        role=role,
        engine=engine,
        context_length=context,
        pool_tokens=merged.pool_tokens,
        page_size=merged.page_size,
        input_limit=limit,
        dp_ranks=merged.dp_ranks,
        allow_auto_truncate=merged.allow_auto_truncate,
        engine_version=merged.engine_version,
    )


def build_deployment(
    *,
    prefill_log: str | Path | None = None,
    prefill_args: str | Path | None = None,
    decode_log: str | Path | None = None,
    decode_args: str | Path | None = None,
    engine: str | None = None,
    context_length: int | None = None,
    prefill_pool_tokens: int | None = None,
    decode_pool_tokens: int | None = None,
    page_size: int | None = None,
    version: str | None = None,
) -> Deployment:
    """Read every input and merge it into a Deployment; ConfigError names any figure not found.

    Precedence, per figure: a number given here, then the start-up log, then the launch
    arguments. `context_length` is the advertised window; without it the advertised window is
    the larger of the two nodes' context lengths. `version` is the SGLang release; without it,
    the `version` of a /server_info dump (the older of the two nodes when they differ).
    """
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"unknown engine {brief(engine)}: use one of {', '.join(ENGINES)}")
    if version is not None:
        parse_version(version)  # fail early on a malformed release

    per_role: dict[str, list[NodeReading]] = {}
    for role, log, args, pool in (
        (PREFILL, prefill_log, prefill_args, prefill_pool_tokens),
        (DECODE, decode_log, decode_args, decode_pool_tokens),
    ):
        options = NodeReading(origin="options", kind="options", engine=None)
        if pool is not None:
            options.pool_tokens = Figure(pool, f"--{role}-pool-tokens")
        if page_size is not None:
            options.page_size = Figure(page_size, "--page-size")
        readings = [options]
        if log is not None:
            readings.append(read_log(log, engine=engine))
        if args is not None:
            readings.append(read_args_file(args, engine=engine))
        per_role[role] = readings

    engines = {r.engine for rs in per_role.values() for r in rs if r.engine is not None}
    if engine is None:
        if len(engines) > 1:
            where = ", ".join(
                f"{r.origin} is {r.engine}" for rs in per_role.values() for r in rs if r.engine
            )
            raise ConfigError(
                f"the inputs disagree about the engine ({where}); a disaggregated deployment runs one engine"
            )
        engine = engines.pop() if engines else SGLANG

    explicit_context = (
        Figure(context_length, "--context-length") if context_length is not None else None
    )
    merged = {role: _merge(per_role[role]) for role in ROLES}
    for role in ROLES:
        _check_role(role, merged[role], per_role[role])
    missing = [
        line
        for role in ROLES
        for line in _missing_figures(role, merged[role], per_role[role], engine, explicit_context)
    ]
    if len(missing) == 1:
        raise ConfigError(missing[0])
    if missing:
        raise ConfigError(f"{len(missing)} figures were not found:\n  - " + "\n  - ".join(missing))
    prefill = _resolve_node(PREFILL, merged[PREFILL], engine, explicit_context)
    decode = _resolve_node(DECODE, merged[DECODE], engine, explicit_context)

    if explicit_context is not None:
        _check_figure("advertised", "context window", explicit_context)
        advertised = explicit_context
    elif prefill.context_length.value >= decode.context_length.value:
        advertised = Figure(
            prefill.context_length.value, f"largest node context: {prefill.context_length.source}"
        )
    else:
        advertised = Figure(
            decode.context_length.value, f"largest node context: {decode.context_length.source}"
        )

    if advertised.value < _SMALLEST_WINDOW[engine]:
        raise ConfigError(
            f"the advertised context window of {advertised.value} tokens ({advertised.source}) admits no prompt: "
            f"{engine} needs a window of at least {_SMALLEST_WINDOW[engine]} tokens to serve a one-token prompt; "
            "give the real window"
        )

    version_source: str | None = None
    if version is not None:
        version_source = "--version"
    elif engine == SGLANG:
        known = [(n.engine_version, n.role) for n in (prefill, decode) if n.engine_version]
        if known:
            version = known[0][0]
            for v, _ in known[1:]:
                assert v is not None
                version = _older(version, v)
            version_source = "/server_info version" + (
                " (the older node)" if len({v for v, _ in known}) > 1 else ""
            )
    return Deployment(
        engine=engine,
        advertised_context=advertised,
        prefill=prefill,
        decode=decode,
        version=version,
        version_source=version_source,
    )


# ----------------------------------------------------------------------------------------
# The checks
# ----------------------------------------------------------------------------------------


def _n(value: int) -> str:
    return f"{value:,}"


def check_pool_holds_context(deployment: Deployment, role: str) -> CheckOutcome:
    """The node's KV pool, per data-parallel rank, holds one request of the advertised window.

    Each data-parallel rank of a node has its own pool and a request lives on one rank, so a
    pool summed over ranks says nothing: the per-rank figure must hold the whole window.
    """
    node = deployment.node(role)
    need = deployment.advertised_context.value
    have = node.pool_tokens.value
    shortfall = max(0, need - have)
    numbers = {
        "context_length": need,
        "pool_tokens": have,
        "shortfall_tokens": shortfall,
        "data_parallel_ranks": node.dp_ranks.value if node.dp_ranks else None,
        "rejects_prompts_from": node.input_limit.value,
    }
    if have >= need:
        return CheckOutcome(
            f"{role}-pool-holds-context",
            CheckVerdict.PASS,
            numbers,
            f"the {role} pool holds {_n(have)} tokens per data-parallel rank, at least the advertised {_n(need)}: a full-length request fits",
        )
    return CheckOutcome(
        f"{role}-pool-holds-context",
        CheckVerdict.FAIL,
        numbers,
        f"the {role} pool holds {_n(have)} tokens per data-parallel rank, {_n(shortfall)} fewer than the advertised {_n(need)}: "
        f"{role} rejects prompts of {_n(node.input_limit.value)} tokens or more that the window admits",
    )


def check_input_limits_agree(deployment: Deployment) -> CheckOutcome:
    """Prefill and decode reject the same prompt lengths.

    With asymmetric limits a prompt between them is rejected on one side only; in SGLang the
    rejecting side replaces it with a one-token placeholder while the other side goes on with
    the full prompt. That is how the incident's placeholder was born (docs/incident.md;
    the rejection path per release is in docs/protocols/sglang-pd.md).
    """
    p, d = deployment.prefill, deployment.decode
    lo, hi = sorted((p.input_limit.value, d.input_limit.value))
    numbers = {
        "prefill_rejects_from": p.input_limit.value,
        "decode_rejects_from": d.input_limit.value,
        "prefill_longest_prompt": p.longest_prompt,
        "decode_longest_prompt": d.longest_prompt,
        "gap_tokens": hi - lo,
    }
    if lo == hi:
        return CheckOutcome(
            "input-limits-agree",
            CheckVerdict.PASS,
            numbers,
            f"prefill and decode both serve prompts of up to {_n(p.longest_prompt)} tokens: no prompt is rejected on one side only",
        )
    narrow, wide = (
        (PREFILL, DECODE) if p.input_limit.value < d.input_limit.value else (DECODE, PREFILL)
    )
    return CheckOutcome(
        "input-limits-agree",
        CheckVerdict.FAIL,
        numbers,
        f"{narrow} rejects prompts of {_n(lo)} tokens or more while {wide} serves up to {_n(hi - 1)}: "
        f"a prompt in between is rejected on {narrow} only, the asymmetry that made the incident's one-token placeholder",
    )


def check_nodes_serve_the_window(deployment: Deployment) -> CheckOutcome:
    """Each node's own context length is at least the advertised window.

    A node refuses a prompt of its context length or more at the door of its tokenizer
    (managers/tokenizer_manager.py for SGLang, InputProcessor._validate_prompt_len for vLLM),
    whatever its pool holds: the documentation's window must be the one the nodes run with.
    """
    window = deployment.advertised_context.value
    numbers = {
        "context_length": window,
        "prefill_context": deployment.prefill.context_length.value,
        "decode_context": deployment.decode.context_length.value,
    }
    short = [n for n in (deployment.prefill, deployment.decode) if n.context_length.value < window]
    if not short:
        return CheckOutcome(
            "nodes-serve-the-window",
            CheckVerdict.PASS,
            numbers,
            f"both nodes run with a context length of at least the advertised {_n(window)} tokens",
        )
    said = "; ".join(
        f"{n.role} runs with {_n(n.context_length.value)} ({n.context_length.source})"
        for n in short
    )
    return CheckOutcome(
        "nodes-serve-the-window",
        CheckVerdict.FAIL,
        numbers,
        f"the advertised window is {_n(window)} tokens but {said}: longer prompts are refused whatever the pools hold",
    )


def check_page_rounding(deployment: Deployment) -> CheckOutcome:
    """Whole pages of each pool hold a full-length request rounded up to pages, and the page sizes agree.

    A request of the advertised window needs ceil(context / page_size) pages, and a pool holds
    floor(pool / page_size) whole pages (the allocator hands out whole pages:
    mem_cache/allocator/paged.py::PagedTokenToKVPoolAllocator, num_pages = size // page_size).
    SGLang also refuses a prefill/decode pair with different page sizes at the first transfer
    (disaggregation/common/conn.py::CommonKVManager.try_ensure_parallel_info).
    """
    context = deployment.advertised_context.value
    numbers: dict[str, Any] = {"context_length": context}
    short: list[str] = []
    sizes: dict[str, int] = {}
    for node in (deployment.prefill, deployment.decode):
        if node.page_size is None:
            # vLLM's logged capacity already counts whole blocks per max_model_len request.
            numbers[f"{node.role}_page_size"] = None
            numbers[f"{node.role}_pages_needed"] = None
            numbers[f"{node.role}_pages_in_pool"] = None
            if node.pool_tokens.value < context:
                short.append(
                    f"{node.role} holds {_n(node.pool_tokens.value)} tokens in whole blocks, fewer than {_n(context)}"
                )
            continue
        size = node.page_size.value
        sizes[node.role] = size
        need = math.ceil(context / size)
        have = node.pool_tokens.value // size
        numbers[f"{node.role}_page_size"] = size
        numbers[f"{node.role}_pages_needed"] = need
        numbers[f"{node.role}_pages_in_pool"] = have
        if have < need:
            short.append(
                f"{node.role} has {_n(have)} whole pages of {size} tokens, a full-length request needs {_n(need)}"
            )
    if len(sizes) == 2 and sizes[PREFILL] != sizes[DECODE]:
        return CheckOutcome(
            "page-rounding-fits-prompt",
            CheckVerdict.FAIL,
            numbers,
            f"prefill pages hold {sizes[PREFILL]} tokens but decode pages hold {sizes[DECODE]}: page counts cannot agree, and SGLang refuses the pair at the first transfer",
        )
    if short:
        return CheckOutcome(
            "page-rounding-fits-prompt", CheckVerdict.FAIL, numbers, "; ".join(short)
        )
    return CheckOutcome(
        "page-rounding-fits-prompt",
        CheckVerdict.PASS,
        numbers,
        f"rounded up to whole pages, a request of {_n(context)} tokens fits in both pools",
    )


def _pool_bound(node: NodeConfig) -> bool:
    """The node's input limit comes from its pool, not from its context length."""
    return node.input_limit.value < node.context_length.value - 1 - SGLANG_INPUT_SLACK


def _gap(deployment: Deployment) -> tuple[int, int] | None:
    """Prompt lengths [lo, hi) that the advertised window admits but some node's pool rejects.

    hi is the limit a node has when its pool holds the window, context - 1 - 5: the prompts
    above it are SGLang's own slack, rejected by both nodes alike, not a gap. A prompt of the
    node's context length or more never reaches its scheduler (the tokenizer manager rejects it,
    managers/tokenizer_manager.py), so only a pool-bound limit opens a gap.
    """
    hi = deployment.advertised_context.value - 1 - SGLANG_INPUT_SLACK
    bound = [n.input_limit.value for n in (deployment.prefill, deployment.decode) if _pool_bound(n)]
    if not bound or min(bound) >= hi:
        return None
    return min(bound), hi


#: What each release does with a prompt in the gap, by which node rejects it (the release table
#: of docs/protocols/sglang-pd.md).
_BEHAVIOUR_WORDS = {
    "served-with-stale-kv": "sends the one-page placeholder and decode attends over pages holding other requests' KV (the incident: HTTP 200, a cross-request leak)",
    "served-wrongly": "lets decode admit its own rejected placeholder (pop_preallocated checks finished, not rejected) into a one-page reservation while prefill computes and sends the whole prompt, which the transfer truncates",
    "served-placeholder": "serves the one-token placeholder on both nodes: HTTP 200 with a reply to a prompt the client never sent",
    "held-until-timeout": "retires them after the prefill forward but tells decode nothing (sender.abort is local), so decode holds the reserved pages until its 300 s timeout",
    "rejected-at-door": "retires them at the intake door before bootstrap, allocation and transfer (HTTP 400)",
}


def _release_behaviour(key: tuple[int, int, int, int], rejecting: str) -> str:
    """The release table of docs/protocols/sglang-pd.md, for a prompt rejected by `rejecting`."""
    if key >= (*SGLANG_DOOR_RELEASE, 1):
        return "rejected-at-door"  # #38935: doors on prefill and decode
    if rejecting == DECODE:
        return "served-wrongly"  # decode's pop_preallocated tests finished_reason only, to 0.5.23
    if key >= (*SGLANG_RETIRE_RELEASE, 1):
        return "held-until-timeout"  # #36988: post-forward retire on prefill
    return "served-with-stale-kv" if rejecting == PREFILL else "served-placeholder"


def check_gap_behaviour(deployment: Deployment) -> CheckOutcome:
    """What the SGLang release does with a prompt that the window admits but a pool rejects.

    From the release table of docs/protocols/sglang-pd.md: up to 0.5.19 the rejected prompt's
    one-token placeholder is served (prefill sends one page; decode, which reserved pages for
    the whole prompt, attends over stale KV of earlier requests: the incident); in 0.5.20
    prefill retires it after the forward but tells decode nothing, so decode holds its pages
    until SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s); from 0.5.21 both intake doors retire it
    before bootstrap, allocation and transfer, and the client gets HTTP 400.
    With --allow-auto-truncate on the narrower node the prompt is truncated, not rejected, and no
    release checks the transferred length at commit (#38704 is open in 0.5.23) [inferred].
    """
    p, d = deployment.prefill, deployment.decode
    gap = _gap(deployment)
    numbers: dict[str, Any] = {
        "version": deployment.version,
        "gap_from_tokens": gap[0] if gap else None,
        "gap_to_tokens": gap[1] - 1 if gap else None,
        "prefill_rejects_from": p.input_limit.value,
        "decode_rejects_from": d.input_limit.value,
        "behaviour": "none",
    }
    name = "engine-gap-behaviour"
    if gap is None:
        return CheckOutcome(
            name,
            CheckVerdict.PASS,
            numbers,
            "no prompt within the advertised window is rejected for want of pool, so the rejection path is never taken by a valid prompt",
        )
    lo, hi = gap
    span = f"prompts of {_n(lo)} to {_n(hi - 1)} tokens"
    if p.input_limit.value < d.input_limit.value:
        rejecting, who = PREFILL, "prefill rejects them and decode accepts them"
    elif d.input_limit.value < p.input_limit.value:
        rejecting, who = DECODE, "decode rejects them and prefill accepts them"
    else:
        rejecting, who = "both", "both nodes reject them"
    narrow = deployment.node(rejecting) if rejecting in ROLES else None
    if narrow is not None and narrow.allow_auto_truncate:
        numbers["behaviour"] = "truncated-on-one-side"
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"{span}: {narrow.role} truncates them (--allow-auto-truncate) while the other node keeps the whole prompt, so the nodes disagree on the page count, which no release checks at commit",
        )
    if deployment.version is None:
        numbers["behaviour"] = "unknown"
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"{span}: {who}; the SGLang release is not known, so the outcome cannot be ruled safe (up to 0.5.19 it is a cross-request leak): pass --version",
        )
    key = parse_version(deployment.version)
    table_note = ""
    if key[:3] < SGLANG_TABLE_RELEASES[0]:
        table_note = " (older than the release table, so as 0.5.19)"
    elif key[:3] > SGLANG_TABLE_RELEASES[1]:
        table_note = " (newer than the release table, so as 0.5.23)"
    behaviour = _release_behaviour(key, rejecting)
    numbers["behaviour"] = behaviour
    verdict = CheckVerdict.PASS if behaviour == "rejected-at-door" else CheckVerdict.FAIL
    return CheckOutcome(
        name,
        verdict,
        numbers,
        f"{span}: {who}; SGLang {deployment.version}{table_note} {_BEHAVIOUR_WORDS[behaviour]}",
    )


def run_checks(deployment: Deployment) -> ConfigReport:
    """Every check for a deployment, in a fixed order (the gap check only for SGLang)."""
    checks = [
        check_pool_holds_context(deployment, PREFILL),
        check_pool_holds_context(deployment, DECODE),
        check_input_limits_agree(deployment),
        check_nodes_serve_the_window(deployment),
        check_page_rounding(deployment),
    ]
    if deployment.engine == SGLANG:
        checks.append(check_gap_behaviour(deployment))
    return ConfigReport(deployment=deployment, checks=tuple(checks))


def check_config(**inputs: Any) -> ConfigReport:
    """build_deployment(**inputs), then run_checks: the whole command without the printing."""
    return run_checks(build_deployment(**inputs))


# ----------------------------------------------------------------------------------------
# --spec: the deployment scaled down to the shipped spec's parameters
# ----------------------------------------------------------------------------------------


def _band(pages: int, context_pages: int) -> int:
    """0: below the window, 1: exactly the window, 2: between one and two windows, 3: two or more."""
    if pages < context_pages:
        return 0
    if pages == context_pages:
        return 1
    if pages < 2 * context_pages:
        return 2
    return 3


def spec_params(deployment: Deployment, *, requests: int = SPEC_REQUESTS) -> dict[str, int]:
    """The sglang_pd spec's parameters (in model pages) that keep the deployment's inequalities.

    The advertised window becomes SPEC_CONTEXT_PAGES = 3 pages. Each pool, in whole real pages,
    is compared with the window in real pages (ceil(context / page_size)) and mapped to:
    2 pages if smaller than the window, 3 if equal, 4 if between one and two windows, 6 if two
    windows or more. When both pools fall in the same band but differ, the smaller one moves one
    page down (1 below the window, 4 and 5 between windows), so that `prefill < decode`,
    `prefill == decode` and `prefill > decode` also survive; above two windows both are 6,
    since either pool then admits every prompt the window does.
    """
    if deployment.engine != SGLANG:
        raise ConfigError(
            "--spec runs the shipped SGLang spec (specs/sglang_pd.py); this deployment is vLLM"
        )
    context = deployment.advertised_context.value
    pages: dict[str, int] = {}
    context_pages: dict[str, int] = {}
    for node in (deployment.prefill, deployment.decode):
        if node.page_size is None:
            raise ConfigError(f"--spec needs the {node.role} page size: pass --page-size")
        pages[node.role] = node.pool_tokens.value // node.page_size.value
        context_pages[node.role] = math.ceil(context / node.page_size.value)
    base = {0: 2, 1: SPEC_CONTEXT_PAGES, 2: 4, 3: 2 * SPEC_CONTEXT_PAGES}
    bands = {role: _band(pages[role], context_pages[role]) for role in ROLES}
    scaled = {role: base[bands[role]] for role in ROLES}
    if bands[PREFILL] == bands[DECODE] and bands[PREFILL] in (0, 2):
        p, d = pages[PREFILL], pages[DECODE]
        if p != d:
            smaller, larger = (PREFILL, DECODE) if p < d else (DECODE, PREFILL)
            if bands[PREFILL] == 0:
                scaled[smaller] = 1
            else:
                scaled[larger] = 5
    return {
        "requests": requests,
        "context": SPEC_CONTEXT_PAGES,
        "prefill_pool": scaled[PREFILL],
        "decode_pool": scaled[DECODE],
    }


def spec_fixes_for_release(version: str | None) -> list[str]:
    """The sglang_pd fixes a release has (the release table of docs/protocols/sglang-pd.md).

    0.5.20 added the post-forward retire (#36988), 0.5.21 the intake door (#38935). Without a
    release, none: the model of 0.5.19, the last release without either.
    """
    if version is None:
        return []
    key = parse_version(version)
    fixes: list[str] = []
    if key >= (*SGLANG_RETIRE_RELEASE, 1):
        fixes.append("post-forward-retire")
    if key >= (*SGLANG_DOOR_RELEASE, 1):
        fixes.append("door-retire")
    return fixes


def run_spec(
    report: ConfigReport,
    *,
    fixes: list[str] | None = None,
    max_states: int | None = None,
    max_seconds: float | None = None,
) -> ConfigReport:
    """Run the shipped spec with the scaled parameters and add its outcome to the report.

    The fixes are the release's (spec_fixes_for_release) plus `fixes`. Uses ownership.api.check,
    imported here so that the checks above need no engine.
    """
    params = spec_params(report.deployment)
    chosen = spec_fixes_for_release(report.deployment.version)
    chosen += [f for f in (fixes or []) if f not in chosen]
    try:
        from ownership import api
    except ImportError as exc:
        raise ConfigError(f"--spec needs ownership.api, which is not available ({exc})") from exc
    result = api.check(
        SPEC_NAME, params=params, fixes=chosen, max_states=max_states, max_seconds=max_seconds
    )
    outcome = _spec_outcome(result, params, chosen)
    return replace(
        report,
        checks=(*report.checks, outcome),
        spec_result=result,
        spec_params=params,
        spec_fixes=tuple(chosen),
    )


def _spec_outcome(result: Any, params: dict[str, int], fixes: list[str]) -> CheckOutcome:
    """The --spec run as a check: FAIL on a violation, PASS only when every reachable state of
    the scaled model was explored, and INCONCLUSIVE (exit 3) otherwise: a search cut short by
    --max-states or --max-seconds ("bounded") proves nothing about the states it did not reach.
    Every outcome says what was covered."""
    numbers: dict[str, Any] = {
        **params,
        "fixes": ",".join(fixes) or "none",
        "verdict": result.verdict.word,
    }
    covered = result.coverage.describe()
    name = f"spec-{SPEC_NAME}"
    if result.verdict is Verdict.VIOLATED:
        viol = result.violation
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"the scaled model violates {viol.property}: {viol.message}",
        )
    if result.verdict is Verdict.VERIFIED and result.coverage.complete:
        return CheckOutcome(
            name,
            CheckVerdict.PASS,
            numbers,
            f"the scaled model is verified: no violation in {covered}",
        )
    return CheckOutcome(
        name,
        CheckVerdict.INCONCLUSIVE,
        numbers,
        f"the scaled model's search stopped before it explored every reachable state, so no verdict: "
        f"no violation in {covered}; raise or drop --max-states and --max-seconds",
    )


def _spec_result_json(result: Any) -> dict[str, Any]:
    """The --spec run in the report's JSON: verdict, coverage, violation, the trace's steps."""
    out: dict[str, Any] = {
        "verdict": result.verdict.word,
        "coverage": result.coverage.to_json(),
        "violation": result.violation.to_json() if result.violation is not None else None,
        "steps": [step.label() for step in result.trace.steps[1:]]
        if result.trace is not None
        else None,
        "reproduce": getattr(result, "reproduce", None),
    }
    return out
