"""Writing a file that a command produces (a trace, an HTML page, a graph, a checkpoint) whole
or not at all: a temporary file beside it, renamed over it at the end."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import UsageError


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
