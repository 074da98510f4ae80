"""What the SGLang and vLLM log readers share: lines fed one at a time, kept errors, unread lines.

A reader sees only the lines holding one of its keywords (ownership.config_check.files finds
them) and keeps the figures of the last start-up in the file. Each pattern is matched right
after a literal keyword found with str.find, so no pattern can backtrack over a long line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ownership.errors import ConfigError

from .arg_repr import ReprNotRead, read_arg_repr
from .bounds import MAX_LINE_BYTES

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
        # the arguments line of the last start-up, when its repr was not read: (line, what, why)
        self.unread: tuple[int, str, str] | None = None

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
        self.unread = None

    def read_args(self, no: int, what: str, body: str) -> dict[str, Any]:
        """The top-level values of the repr `body` on line `no`; {} when it is not read (remembered).
        A key named twice is a ConfigError naming the file and line (read_arg_repr)."""
        try:
            return read_arg_repr(body)
        except ReprNotRead as exc:
            self.unread = (no, what, str(exc))
            return {}
        except ConfigError as exc:
            raise ConfigError(f"{self.path}:{no}: in the {what} line, {exc}") from None

    def where_start(self) -> str:
        """' after the start-up at line N' for the missing-figure messages, plus any line not read."""
        text = f" after the start-up at line {self.start}" if self.start > 1 else ""
        if self.skipped is not None:
            no, size = self.skipped
            text += f"; line {no} ({size:,} bytes) was not read: lines over {MAX_LINE_BYTES:,} bytes are skipped"
        if self.unread is not None:
            no, what, why = self.unread
            text += f"; the {what} of line {no} was not read: {why}"
        return text


def _read_lines(lines: Iterable[tuple[int, str | None, int]], readers: list[_LogReader]) -> None:
    for no, line, size in lines:
        for reader in readers:
            reader.feed(no, line, size)


def _all_keywords(readers: list[_LogReader]) -> tuple[str, ...]:
    return tuple(k for r in readers for k in r.KEYWORDS)
