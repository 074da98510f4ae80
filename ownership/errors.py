"""Every exception that ownership raises, in one place (one per kind of bad input or state),
and `shorten`, which cuts a long value in their messages.

The CLI turns any OwnershipError into one message on stderr and exit code 2; nothing here
is ever shown as a traceback. A message says the offending value, the rule and the fix.
InternalError is not bad input: it is a bug of ownership itself, with an exit code of its own
(ownership.result.EXIT_INTERNAL), never 0 or 1.
"""

from __future__ import annotations


class OwnershipError(Exception):
    """Raised for any bad input the user can fix: the base of every error below."""


class UsageError(OwnershipError):
    """Raised when a command's arguments are wrong: an unknown fix, parameter or spec name."""


class SpecError(OwnershipError):
    """Raised when a spec breaks a rule of the spec language; carries the spec file and line."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self.file = file
        self.line = line
        self.message = message  # without the file and line
        #: the steps (action labels, e.g. "arrive(r=r1, n=3)") from the initial state to the
        #: state where an action or property raised this error; empty when raised at load time
        self.steps: list[str] = []
        where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
        super().__init__(f"{where}{message}")


class TraceFormatError(OwnershipError):
    """Raised when a trace file cannot be read: not JSON, not ITF, or not of the named spec."""


class EventLogError(OwnershipError):
    """Raised when a line of a page-event log (ownership monitor) is not an event: names the file and line."""


class AdapterError(OwnershipError):
    """Raised when the user's event adapter (ownership monitor --adapter) fails or returns what is not a list of actions."""


class ConfigError(OwnershipError):
    """Raised when a deployment's configuration or logs lack a figure that a check needs."""


class OutputError(OwnershipError):
    """Raised when a command's report cannot be written to standard output (the reader closed
    the pipe, the disk is full): said on stderr, never as JSON on the stdout that failed."""


class InternalError(Exception):
    """Raised when ownership itself is wrong: two interpreters disagree, or an assertion of ours fails."""


def shorten(text: str, limit: int = 60) -> str:
    """`text` (a value from a file anyone may have written) for an error message, at most about
    `limit` characters, saying so when it is cut: an integer keeps its first digits and its
    length (`123456789012...(5,000 digits)`), any other text is cut at a space or punctuation
    and says its length (`... (5,000 characters, shortened)`), never silently mid-word."""
    if len(text) <= limit:
        return text
    digits = text.removeprefix("-")
    if digits.isascii() and digits.isdigit():
        return f"{text[:max(limit // 3, 8)]}...({len(digits):,} digits)"
    cut = text[:limit]
    clean = max(cut.rfind(c) for c in " ,;:)]}")
    if clean >= limit // 2:  # (else one long word: cut it, the note says so)
        cut = cut[:clean + 1]
    return f"{cut.rstrip()}... ({len(text):,} characters, shortened)"


class LimitReached(KeyboardInterrupt):
    """Raised in the main thread when a command crosses its --max-seconds or memory ceiling (ownership.limits)."""

    def __init__(self, reason: str = "max-seconds") -> None:
        super().__init__(reason)
        self.reason = reason  # "max-seconds", "max-memory" or "memory" (the machine's)
