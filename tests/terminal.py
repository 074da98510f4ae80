"""A command on a pseudo-terminal of its own, and Ctrl-C as a terminal sends it (SIGINT to the
foreground process group): shared by the Ctrl-C tests of tests/cli/test_interrupt.py and the
Ray and checkpoint tests of tests/distributed/. A helper module, not a test file.

Every child resets SIGINT to its default itself, so the tests hold when the suite runs with
SIGINT ignored (a background job of a non-interactive shell, some CI runners).
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import sys
import time
from pathlib import Path

from conftest import ROOT, sigint_default

OWNERSHIP = shutil.which("ownership") or str(Path(sys.executable).with_name("ownership"))

#: Seconds after which a command that was sent Ctrl-C is taken to hang (it stops in well under
#: a second; this only tells a hang from a loaded machine).
HANG = 60.0

#: Long enough to be interrupted: 7.3 M states, about 20 s.
LARGE = ["check", "sglang_pd", "--param", "requests=4", "--param", "decode_pool=5", "--fix", "door-retire"]


def group_of(pgid: int) -> list[int]:
    """The processes of a process group."""
    return processes(pgid, field=2)


def processes(value: int, *, field: int) -> list[int]:
    """The live processes whose field of /proc/PID/stat after the command's name equals
    `value` (2: the process group, 3: the session)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[field]) == value and fields[0] != "Z":
                found.append(int(entry))
    return found


class Terminal:
    """A command on a pseudo-terminal of its own (its process group is the foreground one)."""

    def __init__(self, *args: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command, with the pty as its terminal
            sigint_default()  # (the suite may run with SIGINT ignored: exec keeps that)
            os.chdir(ROOT)
            os.execv(OWNERSHIP, [OWNERSHIP, *args])
        self.output = b""
        self.code: int | None = None

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.02)
            if ready:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:  # the command ended and closed the terminal
                    return
                if not data:
                    return
                self.output += data

    def wait_for(self, text: bytes, seconds: float = 60.0) -> None:
        end = time.monotonic() + seconds
        while text not in self.output and time.monotonic() < end:
            self.read(0.05)
        assert text in self.output, self.output.decode(errors="replace")

    def ctrl_c(self) -> None:
        """What a terminal does on Ctrl-C: SIGINT to its foreground process group."""
        os.killpg(os.getpgid(self.pid), signal.SIGINT)

    def wait(self, seconds: float) -> float | None:
        """Seconds until the command exits, or None if it does not within `seconds`."""
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            self.read(0.02)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
                took = time.monotonic() - start
                self.read(0.2)
                return took
        return None

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)

    def text(self) -> str:
        return self.output.decode(errors="replace")


def interrupted(term: Terminal, *, times: int = 1) -> tuple[str, float]:
    """Ctrl-C (`times` times), then: exit 3 well within a generous bound, no traceback, no
    process of the group left. The output and how long the command took to exit."""
    group = group_of(term.pid)
    try:
        for i in range(times):
            if i:
                time.sleep(0.05)
            term.ctrl_c()
        took = term.wait(HANG)
        assert took is not None, "the command did not stop after Ctrl-C:\n" + term.text()
        text = term.text()
        assert term.code == 3, (term.code, text)
        assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
        end = time.monotonic() + HANG  # (workers exit as soon as they can; a loaded machine is slow)
        while group_of(term.pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert group_of(term.pid) == [], f"processes left behind: {group_of(term.pid)} (group was {group})"
        return text, took
    finally:
        term.kill()
