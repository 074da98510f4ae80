"""Spec code that fails: any exception it raises becomes a SpecError at the spec's own line.

Every interpreter runs the spec's own functions (actions, properties, `finished`) through
here, so that a ZeroDivisionError of plain Python, a KeyError, a `sys.exit(0)` or any other
exception of spec code is reported the same way by every engine: exit code 2, the spec's file
and line, and what ownership was doing ("in action bump(r=r1)"), never a traceback and never a
silent exit. KeyboardInterrupt passes through (it is the user's).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any

from ..errors import OwnershipError, SpecError
from . import faults


def spec_failure(e: BaseException, path: str | None, doing: str) -> SpecError:
    """A SpecError for an exception raised by spec code, at the spec's innermost line."""
    file, line = None, None
    for frame in traceback.extract_tb(e.__traceback__):
        if path is not None and os.path.abspath(frame.filename) == os.path.abspath(path):
            file, line = frame.filename, frame.lineno
        elif path is None and "ownership" not in frame.filename:
            file, line = frame.filename, frame.lineno
    if isinstance(e, SystemExit):
        what = f"SystemExit({e.code!r}) {doing}: a spec must not exit the process"
    else:
        what = f"{type(e).__name__} {doing}: {e}"
    return SpecError(what, file=file or path, line=line)


def in_context(e: SpecError, doing: str) -> SpecError:
    """The same error, said to happen while `doing` (once: an inner context wins). Anything
    but an action ("in action ...") is a property, whose hints do not name s.require
    (ownership.lang.faults.for_property)."""
    if e.message.startswith("in ") or doing in e.message:
        return e
    message = e.message if doing.startswith("in action ") else faults.for_property(e.message)
    out = SpecError(f"{doing}: {message}", file=e.file, line=e.line)
    out.steps = list(e.steps)
    return out


def run_spec(fn: Callable[[], Any], model: Any, doing: str) -> Any:
    """Call spec code; its failures become SpecErrors (see the module docstring)."""
    try:
        return fn()
    except SpecError as e:
        raise in_context(e, doing) from None
    except OwnershipError:
        raise
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit, GeneratorExit) as e:
        raise spec_failure(e, model.spec_cls.source_file(), doing) from None


__all__ = ["in_context", "run_spec", "spec_failure"]
