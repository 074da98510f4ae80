"""Reading input files within fixed bounds: a log streamed line by line, an argument file whole.

A log is read in chunks cut at line ends, and only the lines holding one of a reader's keywords
are decoded (found with bytes.find), so memory does not grow with the log's size and time grows
linearly with it; a line over MAX_LINE_BYTES is skipped, never cut. An argument file over
MAX_ARGS_BYTES is refused unread. A NUL byte means the file is not text, named by its line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ownership.errors import ConfigError

from .bounds import _CHUNK_BYTES, MAX_ARGS_BYTES, MAX_LINE_BYTES
from .deployment import NodeReading


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
            yield (
                no,
                chunk[start:end].decode("utf-8", errors="replace").removesuffix("\r"),
                end - start,
            )


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


def _naming_the_file(path: str | Path, read: Callable[[], NodeReading]) -> NodeReading:
    """Run a reader; a ConfigError about a value (e.g. '--context-length abc') then names the file."""
    try:
        return read()
    except ConfigError as exc:
        if str(path) in str(exc):
            raise
        raise ConfigError(f"{path}: {exc}") from exc
