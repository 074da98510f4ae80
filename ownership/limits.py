"""Limits that hold for a whole command: a deadline and a memory ceiling (issue 12).

`ownership check`, `prove` and `replay` arm them first (`with limits.armed(max_seconds=...,
max_memory=...)`), so that they cover loading the spec, tracing its actions and building the
model, not only the search. While armed, a SIGALRM interval timer ticks every TICK seconds in
the main thread: when the deadline or the ceiling is crossed, the tick raises LimitReached (a
KeyboardInterrupt, ownership.errors) wherever the command is. The command then reports
`inconclusive: stopped by max-seconds while tracing the spec's actions; nothing was explored`
(exit 3). Code says what it is doing with `with limits.phase("tracing the spec's actions")`;
outside the engine, the tick also reports that phase to a progress reporter once a second.

Engines check their own limits between blocks of their search and report the coverage
reached; they get the time left (`seconds_left`). Inside an engine phase the timer only stops
an engine that does not stop by itself: ENGINE_GRACE later, or past the ceiling by
ENGINE_MEMORY_GRACE. Its LimitReached is a KeyboardInterrupt, so an engine that catches
Ctrl-C still reports what it covered, and `tripped()` says which limit it was.

The ceiling is --max-memory, or else the machine's: what the process holds plus 90% of the
memory still available when the command starts (it stops before the machine would swap).

Also here: the checks of the limits' option values (`parse_seconds`, `parse_size`,
`check_workers`). The one module-level state is the armed guard (`_armed`), which the signal
handler and `phase` need.
"""

from __future__ import annotations

import math
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .errors import LimitReached, UsageError, shorten

#: Seconds between two looks at the clock and the resident memory.
TICK = 0.1

#: How long past the deadline an engine may run before the timer stops it (the engine's own
#: check normally stops it first, with its coverage): at least a second, a tenth of the limit.
ENGINE_GRACE = (1.0, 0.1, 10.0)  # (minimum s, fraction of --max-seconds, maximum s)

#: How far past the ceiling an engine's memory may grow before the timer stops it.
ENGINE_MEMORY_GRACE = 1.05

#: Worker processes per CPU at most: more only add forks and memory, never speed.
WORKERS_PER_CPU = 4

#: Sizes above this are refused: no machine has a pebibyte of memory.
MAX_SIZE = 1 << 50


# --------------------------------------------------------------------------- option values


def parse_seconds(value: Any, flag: str = "--max-seconds") -> float | None:
    """A time limit in seconds: a finite number above 0 (None: no limit)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{flag} {value!r}: expected a number of seconds, e.g. {flag} 60") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{flag} {value}: a time limit is a finite number of seconds above 0,"
                         f" e.g. {flag} 60 (leave the option out for no limit)")
    return seconds


_SIZE = re.compile(r"\s*(\d+)(?:\.(\d+))?\s*([KMGTPE]?)(i?B?)\s*", re.I)


def parse_size(text: str, flag: str = "--max-memory") -> int:
    """A memory size such as 4G, 512M, 1.5GiB or 1000000 (bytes; K, M, G... are powers of
    1024), from 1 MiB up to MAX_SIZE."""
    shown = shorten(text.strip(), 40)
    m = _SIZE.fullmatch(text)
    if m is None or (m.group(4) and not m.group(3) and m.group(4).lower() != "b"):
        raise UsageError(f"{flag} {shorten(repr(text.strip()), 40)}: expected a size such as 4G, 512M or 100000000 (bytes)")
    whole, frac, unit = m.group(1).lstrip("0") or "0", m.group(2) or "", m.group(3).upper()
    absurd = UsageError(f"{flag} {shown}: more than {_show_bytes(MAX_SIZE)}, which no machine has;"
                        " give a size such as 4G (leave the option out to stop before the machine swaps)")
    if len(whole) > 20:  # (also keeps int() far from its 4,300-digit limit)
        raise absurd
    frac = frac[:20]
    size = (int(whole + frac) * 1024 ** " KMGTPE".index(unit or " ")) // (10 ** len(frac))
    if size > MAX_SIZE:
        raise absurd
    if size < 1 << 20:
        raise UsageError(f"{flag} {shown}: below 1 MiB, and ownership alone needs tens of"
                         " megabytes; give a size such as 512M or 4G")
    return size


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def max_workers() -> int:
    """The most --workers accepted on this machine: WORKERS_PER_CPU per CPU."""
    return WORKERS_PER_CPU * cpus()


def check_workers(workers: int) -> None:
    """Refuse a worker count below 1 or above max_workers()."""
    if workers < 1:
        raise UsageError(f"--workers {workers}: need at least one worker (1: the search runs in this process)")
    if workers > max_workers():
        raise UsageError(
            f"--workers {workers}: at most {max_workers()} on this machine ({WORKERS_PER_CPU} per CPU,"
            f" {cpus()} CPU{'s' if cpus() != 1 else ''}): more processes than that only add forks and"
            f" memory, never speed; give --workers {cpus()} or fewer"
        )


def _show_bytes(n: int) -> str:
    for unit in ("EiB", "PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = 1024 ** (" KMGTPE".index(unit[0]))
        if n >= scale:
            return f"{n / scale:,.0f} {unit}"
    return f"{n} bytes"


# --------------------------------------------------------------------------- memory


def resident_memory() -> int:
    """This process's resident memory, in bytes (0 if unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _proc_kib(path: str, field: str) -> int | None:
    """The figure of a `Field:   N kB` line of a /proc file, in bytes (None if unknown)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_resident_memory() -> int:
    """This process's peak resident memory so far (the kernel's VmHWM), in bytes (0 if unknown)."""
    return _proc_kib("/proc/self/status", "VmHWM") or 0


def available_memory() -> int | None:
    """Memory the machine can still give without swapping, in bytes (None if unknown)."""
    return _proc_kib("/proc/meminfo", "MemAvailable")


# --------------------------------------------------------------------------- the guard


@dataclass
class PhaseProgress:
    """What a command is doing outside an engine, for a progress reporter."""

    phase: str
    seconds: float

    def describe(self) -> str:
        return f"{self.phase}: {self.seconds:.0f} s"


class Guard:
    """The armed limits of one command, what it is doing, and which limit stopped it."""

    def __init__(self, max_seconds: float | None, max_memory: int | None,
                 reporter: Callable[[PhaseProgress], None] | None) -> None:
        self.start = time.monotonic()
        self.max_seconds = max_seconds
        self.deadline = None if max_seconds is None else self.start + max_seconds
        if max_memory is not None:
            self.ceiling: int | None = max_memory
            self.memory_reason = "max-memory"
        else:
            avail = available_memory()
            self.ceiling = None if avail is None else resident_memory() + int(avail * 0.9)
            self.memory_reason = "memory"
        self.reporter = reporter
        self.phase = "starting"
        self.in_engine = False
        self.tripped: str | None = None     # the limit that stopped the command
        self.stopped_in: str | None = None  # the phase it stopped in (a limit or Ctrl-C)
        self.active = False
        self.last_report = self.start
        self.held: Held | None = None  # inside `deferred()`: a stop waits for its poll()

    def seconds_left(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.monotonic()

    def crossed(self) -> str | None:
        """The limit crossed now, if any (with an engine's grace inside an engine phase)."""
        now = time.monotonic()
        if self.deadline is not None:
            grace = 0.0
            if self.in_engine:
                low, share, high = ENGINE_GRACE
                grace = min(max(low, share * (self.max_seconds or 0.0)), high)
            if now >= self.deadline + grace:
                return "max-seconds"
        if self.ceiling is not None:
            ceiling = self.ceiling * (ENGINE_MEMORY_GRACE if self.in_engine else 1.0)
            if resident_memory() > ceiling:
                return self.memory_reason
        return None

    def tick(self, _signum: int, _frame: Any) -> None:
        """The SIGALRM handler: stop the command at a crossed limit, else report the phase."""
        if not self.active:
            return
        reason = self.crossed()
        if reason is not None:
            self.active = False
            self.tripped, self.stopped_in = reason, self.phase
            signal.setitimer(signal.ITIMER_REAL, 0)
            if self.held is not None:
                self.held.hold(LimitReached(reason))
                return
            raise LimitReached(reason)
        now = time.monotonic()
        if self.reporter is not None and not self.in_engine and now - self.last_report >= 1.0:
            self.last_report = now
            self.reporter(PhaseProgress(self.phase, now - self.start))


_armed: Guard | None = None  # the armed guard of the running command (the mechanism's state)


def _flush() -> None:
    """A Python call: pending signal handlers run at its entry (see `armed`)."""


@contextmanager
def armed(*, max_seconds: float | None = None, max_memory: int | None = None,
          reporter: Callable[[PhaseProgress], None] | None = None) -> Iterator[Guard]:
    """Arm the limits for the block: LimitReached is raised in it when one is crossed.

    Only in the main thread (signals are delivered there); elsewhere, and inside an armed
    block, the limits are not armed again and only the engines' own checks apply."""
    global _armed
    guard = Guard(max_seconds, max_memory, reporter)
    if _armed is not None or threading.current_thread() is not threading.main_thread():
        yield _armed or guard
        return
    previous = signal.signal(signal.SIGALRM, guard.tick)
    _armed = guard
    guard.active = True
    signal.setitimer(signal.ITIMER_REAL, TICK, TICK)
    try:
        yield guard
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        guard.active = False
        _flush()  # a tick delivered just before the timer stopped runs now, as a no-op
        _armed = None
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def phase(doing: str, *, engine: bool = False) -> Iterator[None]:
    """Say what the command is doing (`doing`: "tracing the spec's actions"), for the report
    of a limit or Ctrl-C; `engine`: an engine that checks the limits itself runs here."""
    guard = _armed
    if guard is None:
        yield
        return
    before = (guard.phase, guard.in_engine)
    guard.phase, guard.in_engine = doing, engine
    try:
        yield
    except KeyboardInterrupt:
        if guard.stopped_in is None:
            guard.stopped_in = doing
        raise
    finally:
        guard.phase, guard.in_engine = before


class Held:
    """A stop (Ctrl-C, a crossed limit) held inside `deferred()` until the code polls it."""

    def __init__(self) -> None:
        self.pending: KeyboardInterrupt | None = None

    def hold(self, stop: KeyboardInterrupt) -> None:
        if self.pending is None:  # (the first stop is the one reported)
            self.pending = stop

    def poll(self) -> None:
        """Raise the stop held, if any: here, in the caller's code."""
        stop, self.pending = self.pending, None
        if stop is not None:
            raise stop


@contextmanager
def deferred() -> Iterator[Held]:
    """Inside the block, Ctrl-C and a crossed limit do not raise wherever the main thread
    happens to be, but are held until the block's code calls `poll()`, which raises them.

    NOTE(deferred): for code that waits inside multiprocessing (a pool's results): an
    exception raised by a signal handler inside its locks can leave a lock held (a `with
    lock:` interrupted between the acquire and the block), and the pool's result thread then
    waits for it forever; stopping the pool hung (one Ctrl-C in a few hundred on a loaded
    2-core machine). The code in the block polls often (between results, and every TICK while
    it waits). A stop still held when the block ends is dropped: its code has its answer. Only
    in the main thread; elsewhere nothing is held (signals never run there)."""
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    guard = _armed
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: held.hold(KeyboardInterrupt()))
    if guard is not None:
        guard.held = held
    try:
        yield held
    finally:
        if guard is not None:
            guard.held = None
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def seconds_left(max_seconds: float | None) -> float | None:
    """The time an engine may take: max_seconds, or less if the armed deadline comes first
    (at least a millisecond: a spent limit stops the engine at its first check)."""
    guard = _armed
    left = guard.seconds_left() if guard is not None else None
    if left is None:
        return max_seconds
    left = max(left, 1e-3)
    return left if max_seconds is None else min(max_seconds, left)


def active() -> bool:
    """Whether a command's limits are armed (its memory ceiling stands for every engine)."""
    return _armed is not None


def tripped() -> str | None:
    """The limit that stopped the running command, if one did."""
    return _armed.tripped if _armed is not None else None


def settle() -> None:
    """The command has its answer (an engine's result, with the coverage it reached): no
    limit stops it any more. Else the time limit, crossed while the answer is reported
    (outside an engine there is no grace), replaced the answer by "stopped, nothing was
    explored" (NOTE(settle))."""
    if _armed is not None:
        _armed.active = False


__all__ = [
    "Guard", "Held", "PhaseProgress", "active", "armed", "available_memory", "check_workers", "deferred",
    "max_workers", "parse_seconds", "parse_size", "phase", "resident_memory", "seconds_left", "settle", "tripped",
]
