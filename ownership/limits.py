"""Limits that hold for a whole command: a deadline and a memory ceiling (issue 12).

`ownership check`, `prove` and `replay` arm them first (`with limits.armed(max_seconds=...,
max_memory=...)`), so that they cover loading the spec, tracing its actions and building the
model, not only the search. While armed, a SIGALRM interval timer ticks every TICK seconds in
the main thread: when the deadline or the ceiling is crossed, the tick raises LimitReached (a
KeyboardInterrupt, ownership.errors) wherever the command is. The command then reports
`inconclusive: stopped by max-seconds while tracing the spec's actions; nothing was explored`
(exit 3). Code says what it is doing with `with limits.phase("tracing the spec's actions")`;
outside the engine, the tick also reports that phase to a progress reporter once a second.

Engines check their own time limit between blocks of their search and report the coverage
reached; they get the time left (`seconds_left`). Inside an engine phase the timer only stops
an engine that does not stop by itself: ENGINE_GRACE later. Memory: the timer stops the
command at MEMORY_STOP of the ceiling, less what it grows in two ticks, so that what grows
until the stop lands stays under it;
an engine that keeps to the ceiling itself (the batch engine, `memory_checked()`) is stopped
only past the ceiling. Its LimitReached is a KeyboardInterrupt, so an engine that catches
Ctrl-C still reports what it covered, and `tripped()` says which limit it was.

The ceiling is --max-memory, or else the machine's: what the process holds plus 90% of the
memory still available when the command starts (it stops before the machine would swap).

Also here: the checks of the limits' option values (`parse_seconds`, `parse_size`,
`check_workers`). The one module-level state is the armed guard (`_armed`), which the signal
handler and `phase` need.
"""

from __future__ import annotations

import gc
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .errors import LimitReached, UsageError, shorten
from .progress import Progress, Reporter

#: Seconds between two looks at the clock and the resident memory.
TICK = 0.1

#: How long past the deadline an engine may run before the timer stops it (the engine's own
#: check normally stops it first, with its coverage): at least a second, a tenth of the limit.
ENGINE_GRACE = (1.0, 0.1, 10.0)  # (minimum s, fraction of --max-seconds, maximum s)

#: The share of the memory ceiling at which the timer stops a command, less what the memory
#: grew in the last tick, twice: it still grows until the stop lands (a tick of TICK, then a
#: safe point, then the engine's report), and the peak stays under the ceiling (issue 29: the
#: per-state engine, fuzz and liveness stopped at 1.05 to 1.06 of it).
MEMORY_STOP = 0.98

#: Worker processes per CPU at most: more only add forks and memory, never speed.
WORKERS_PER_CPU = 4

#: Sizes above this are refused: no machine has a pebibyte of memory.
MAX_SIZE = 1 << 50


# --------------------------------------------------------------------------- option values


def parse_seconds(value: Any, flag: str = "--max-seconds") -> float | None:
    """A time limit in seconds: a finite number above 0 (None: no limit)."""
    if value is None:
        return None
    shown = shorten(str(value).strip(), 40)  # (a 5,000-digit value was printed whole: issue 29)
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{flag} {shorten(repr(value), 40)}: expected a number of seconds, e.g. {flag} 60") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{flag} {shown}: a time limit is a finite number of seconds above 0,"
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



class Guard:
    """The armed limits of one command, what it is doing, and which limit stopped it."""

    def __init__(self, max_seconds: float | None, max_memory: int | None,
                 reporter: Reporter | None) -> None:
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
        self.memory_checked = False  # inside `memory_checked()`: the engine keeps to the ceiling
        self.last_resident = resident_memory()  # at the last tick: how fast the memory grows

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
            rss = resident_memory()
            growth, self.last_resident = max(rss - self.last_resident, 0), rss
            if self.in_engine and self.memory_checked:
                if rss > self.ceiling:  # (a backup: the engine stops itself before)
                    return self.memory_reason
            elif rss + 2 * growth > self.ceiling * MEMORY_STOP:
                # (what it grew since the last tick, twice: until the next tick, and until the
                # stop lands and the engine has reported)
                return self.memory_reason
        return None

    def tick(self, _signum: int, frame: Any) -> None:
        """The SIGALRM handler: stop the command at a crossed limit, else report the phase."""
        if not self.active:
            return
        reason = self.crossed()
        if reason is not None:
            stop = LimitReached(reason)
            at_once = self.held is not None or safe_point(frame)
            if not at_once and not stop_at_next_line(frame, stop):
                return  # NOTE(safe-stop): the next tick stops the command, at a safe point
            self.active = False
            self.tripped, self.stopped_in = reason, self.phase
            signal.setitimer(signal.ITIMER_REAL, 0)
            if self.held is not None:
                self.held.hold(stop)
            elif at_once:
                raise stop
            return
        now = time.monotonic()
        if self.reporter is not None and not self.in_engine and now - self.last_report >= 1.0:
            self.last_report = now
            self.reporter(Progress(now - self.start, kind="phase", phase=self.phase))


_armed: Guard | None = None  # the armed guard of the running command (the mechanism's state)


def _flush() -> None:
    """A Python call: pending signal handlers run at its entry (see `armed`)."""


@contextmanager
def armed(*, max_seconds: float | None = None, max_memory: int | None = None,
          reporter: Reporter | None = None) -> Iterator[Guard]:
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
        with interrupts_at_safe_points():
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


@contextmanager
def memory_checked() -> Iterator[None]:
    """Inside the block an engine keeps to the memory ceiling itself, stopping with its
    coverage before it (the batch engine, NOTE(memory-estimate)): the timer stops it only past
    the ceiling, not at MEMORY_STOP of it."""
    guard = _armed
    if guard is None:
        yield
        return
    before, guard.memory_checked = guard.memory_checked, True
    try:
        yield
    finally:
        guard.memory_checked = before


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


# --------------------------------------------------------------------------- Ctrl-C


#: Seconds after which a Ctrl-C that found no safe point is tried again (NOTE(safe-stop)).
RETRY = 0.05


def _unsafe_frames(frame: Any) -> list[Any]:
    """The frames of the stack from `frame` outwards, each with whether an exception raised
    there is lost or garbled (NOTE(safe-stop)): [(frame, unsafe), ...]."""
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    z3 = sys.modules.get("z3")
    z3_dir = os.path.dirname(getattr(z3, "__file__", None) or "") + os.sep if z3 is not None else None
    weak = getattr(sys.modules.get("weakref"), "__file__", None)
    out = []
    f = frame
    while f is not None:
        code = f.f_code
        unsafe = (code.co_name in ("__del__", "from_param") or code in callbacks or code.co_filename == weak
                  or (z3_dir is not None and code.co_filename.startswith(z3_dir)))
        out.append((f, unsafe))
        f = f.f_back
    return out


def safe_point(frame: Any) -> bool:
    """Whether a stop (Ctrl-C, a crossed limit) raised in `frame`, where a signal handler runs,
    reaches the code that reports it.

    NOTE(safe-stop): Python runs a signal handler between two bytecodes of the main thread,
    wherever it is, and some places lose or garble an exception raised there (issue 29). In a
    `__del__`, a gc callback (Hypothesis keeps one, timing the collector) or a weakref callback
    it is printed as "ignored" and dropped: fuzz went on after Ctrl-C (1 try in 4) and after
    its time limit. In ctypes's conversion of an argument (a `from_param`, as z3's wrappers
    have) it becomes a ctypes.ArgumentError: prove exited 4. In z3's Python layer it can cut
    an AST from the reference z3 counts, a crash when the AST is freed. There the stop is
    raised instead in the innermost frame below which the stack is safe, at its next line
    (`stop_at_next_line`: a trace function, as a debugger stops a frame); where that cannot
    be (a tracer of someone else's runs), Ctrl-C is sent again RETRY later and a limit waits
    for its next tick."""
    return not any(unsafe for _, unsafe in _unsafe_frames(frame))


def stop_at_next_line(frame: Any, stop: KeyboardInterrupt) -> bool:
    """Arrange for `stop` to be raised in the innermost safe frame of the stack at `frame`,
    at its next line (or when it returns or raises): NOTE(safe-stop). False if it cannot be
    (no safe frame, or a tracer such as coverage's is running)."""
    frames = _unsafe_frames(frame)
    outermost = max((i for i, (_, unsafe) in enumerate(frames) if unsafe), default=-1)
    if outermost + 1 >= len(frames) or sys.gettrace() is not None:
        return False
    target = frames[outermost + 1][0]

    def local(f: Any, _event: str, _arg: Any) -> Any:
        sys.settrace(None)
        f.f_trace = None
        raise stop

    target.f_trace = local
    target.f_trace_lines = True
    sys.settrace(_trace_no_new_frame)  # (frame tracing runs only while the thread traces)
    return True


def _trace_no_new_frame(_frame: Any, _event: str, _arg: Any) -> None:
    """The thread's trace function while a stop waits for a safe frame: no frame it calls
    is traced."""
    return None


def interrupt(signum: int, frame: Any) -> None:
    """SIGINT's handler while a command's limits are armed (or under ownership's pytest
    plugin): KeyboardInterrupt, as Python's own handler, but at a safe point (NOTE(safe-stop))."""
    if safe_point(frame):
        raise KeyboardInterrupt
    if stop_at_next_line(frame, KeyboardInterrupt()):
        return
    again = threading.Timer(RETRY, _interrupt_again, (signum,))
    again.daemon = True
    again.start()


def _interrupt_again(signum: int) -> None:
    """The retry of a Ctrl-C that came at no safe point: sent again only while `interrupt` still
    handles SIGINT. Once the block that installed it has ended, SIGINT's handler may be the
    default one again (pytest's, or none at exit): the resent signal then killed a pytest
    session that Ctrl-C had already ended cleanly (exit -2, not pytest's 2; issue 29)."""
    if signal.getsignal(signal.SIGINT) is interrupt:
        signal.pthread_kill(threading.main_thread().ident or 0, signum)


@contextmanager
def interrupts_at_safe_points() -> Iterator[None]:
    """Inside the block, Ctrl-C raises KeyboardInterrupt at safe points only (`interrupt`);
    a SIGINT handler of someone else's (or SIGINT ignored) is left as it is."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def exit_interrupted(_signum: int, _frame: Any) -> None:
    """SIGINT's handler of the `ownership` command until its body runs (NOTE(command-interrupt)):
    nothing has been done that a report could tell, so say so and exit 3 at once."""
    try:
        os.write(2, b"interrupted\n")
    finally:
        os._exit(3)  # (result.Verdict.INCONCLUSIVE; no Python code may run on, nor print a traceback)


def _is_the_command() -> bool:
    """Whether this process is the `ownership` command (its console script, or
    `python -m ownership`), not a program that imports ownership."""
    script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    if os.path.splitext(os.path.basename(script))[0] in ("ownership", "ownership-script"):
        return True
    argv = list(getattr(sys, "orig_argv", ()))[1:]
    while argv:
        word = argv.pop(0)
        if word in ("-W", "-X"):
            argv[:1] = []
        elif word == "-m" or word.startswith("-m"):
            name = word[2:] or (argv[0] if argv else "")
            return name == "ownership"
        elif word == "-c" or not word.startswith("-"):
            return False
    return False


def command_starts() -> None:
    """First thing in the package (ownership/__init__.py): in the `ownership` command, Ctrl-C
    exits 3 at once until the command's body runs.

    NOTE(command-interrupt): what Ctrl-C does in the `ownership` command, from its first
    import to its exit. While Python imports the package (0.3 s or more) and click parses the
    command line there is nothing to report: `exit_interrupted` (exit 3, "interrupted"; it
    printed an import traceback and died of SIGINT). Inside the command's body
    (ownership.cli.common `_reporting`, `command_body`) Ctrl-C raises KeyboardInterrupt, which
    the engines turn into their coverage so far and the command into exit 3. Once the body
    has ended, the exit code is settled and Ctrl-C is ignored (click said "Aborted!" and exited
    1, a verdict's code). Only before Python runs this (its own startup) is a Ctrl-C not ours.
    A SIGINT that the parent ignores stays ignored."""
    if (_is_the_command() and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, exit_interrupted)


@contextmanager
def command_body() -> Iterator[None]:
    """The body of the `ownership` command (NOTE(command-interrupt)): inside, Ctrl-C raises
    KeyboardInterrupt at safe points; once it ends, Ctrl-C is ignored. Anywhere else (a
    command run in-process, as the tests do; a nested body) this changes nothing."""
    if signal.getsignal(signal.SIGINT) is not exit_interrupted:
        yield
        return
    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def cancelled_at_interrupt(cancel: Callable[[], None]) -> Iterator[None]:
    """Inside the block, `cancel` is called from another thread as soon as SIGINT arrives.

    NOTE(cancel-in-c): Python runs signal handlers only between bytecodes of the main thread,
    so a call into C that takes long (a z3 query) is deaf to Ctrl-C until it returns. z3 has
    a SIGINT handler of its own, but it took the signal from Python: the query came back
    "unknown" and code that reads unknown as "maybe" went on (prove ignored Ctrl-C, 1 try in
    3). The caller turns z3's own off (its `ctrl_c` parameter) and passes z3's interrupt as
    `cancel`: Python's handler then sees every SIGINT, and the query returns at once. The
    signal reaches the thread through Python's wakeup file descriptor."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _cancelling
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    called = threading.Event()

    def watch() -> None:
        while True:
            got = os.read(read, 512)
            if not got:  # the block has ended
                return
            if signal.SIGINT in got:
                called.set()
                cancel()

    watcher = threading.Thread(target=watch, name="ownership-cancel", daemon=True)
    outer, _cancelling = _cancelling, called
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        os.close(write)
        watcher.join()
        os.close(read)
        _cancelling = outer


_cancelling: threading.Event | None = None  # set once the running block's `cancel` was called


def cancelled() -> bool:
    """Whether Ctrl-C has cancelled the calls into C of the running `cancelled_at_interrupt`
    block: what a cancelled call answered (z3: unknown, an exception, even a result without
    its model) is not an answer (NOTE(cancel-in-c))."""
    return _cancelling is not None and _cancelling.is_set()


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


command_starts()  # (at the package's first import: NOTE(command-interrupt))

__all__ = [
    "Guard", "Held", "active", "armed", "available_memory", "cancelled", "cancelled_at_interrupt",
    "check_workers",
    "command_body", "command_starts", "deferred", "interrupt", "interrupts_at_safe_points", "max_workers",
    "memory_checked",
    "parse_seconds", "parse_size", "phase", "resident_memory", "safe_point", "seconds_left", "settle",
    "stop_at_next_line", "tripped",
]
