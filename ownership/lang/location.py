"""Where in a spec's own source a value was made: the file and line that spec errors carry.

`spec_location()` walks the Python stack from ownership's code out to the innermost frame
that belongs to a spec (a file outside the ownership package, Python's library and the
installed packages, or a shipped spec under ownership/specs), so an error raised deep inside an interpreter or the kernel names the line
of the spec that caused it.
"""

from __future__ import annotations

import os
import sys
import sysconfig

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SPECS_DIR = os.path.join(_PACKAGE_DIR, "specs")


#: per code file name: whether it belongs to a spec (tracing asks for every possible error)
_IS_SPEC: dict[str, bool] = {}


#: Python's own library and installed packages (click, pytest, hypothesis...): never a spec
_LIBRARIES = tuple(dict.fromkeys(os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts")
                                 if (p := sysconfig.get_paths().get(key))))


def _is_spec(filename: str) -> bool:
    got = _IS_SPEC.get(filename)
    if got is None:
        path = os.path.abspath(filename)
        if path.startswith(_SPECS_DIR + os.sep):
            got = True
        else:
            got = not (filename.startswith("<") or path.startswith(_PACKAGE_DIR + os.sep)
                       or path.startswith(_LIBRARIES))
        _IS_SPEC[filename] = got
    return got


def spec_location() -> tuple[str | None, int | None]:
    """The innermost stack frame that belongs to a spec (not to ownership's own code)."""
    frame = sys._getframe(1)
    while frame is not None:
        if _is_spec(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None, None


__all__ = ["spec_location"]
