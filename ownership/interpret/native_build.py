"""Compiling a native model's C source into a shared library, kept in a private cache.

The C file (ownership.interpret.native_source) is compiled by the system's C compiler (`cc`, or
$CC), its parts at once and linked (NOTE(parts)), into a shared library kept in a cache
directory by the hash of its source, the compiler and the machine, and loaded with ctypes. The
cache is the user's alone and each library is checked against the content hash recorded when it
was built (NOTE(private-cache)); a compiler that cannot build even a one-line library is bad
input (exit 2), not a bug of ownership.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import signal
import stat
import subprocess
import tempfile
from pathlib import Path

from ..errors import UsageError, shorten

#: Bump when the generated code or the search template changes meaning (cache key).
VERSION = 7

#: Above O1_BYTES of C, gcc -O1 with a one-region, priority register allocator (_LARGE): -O2
#: took twice as long to compile 2.3 MB, for a search 10% faster (1.5 M states of sglang_pd at
#: 62 pages in 3.6 s against 4.0 s, after 39 s of compiling against 17 s), and register
#: allocation was a third of -O1's time on 3 MB, 30% less with these two options.
O1_BYTES = 1_000_000
_LARGE = ["-O1", "-fira-region=one", "-fira-algorithm=priority"]


def compiler() -> str | None:
    """The C compiler this machine has ($CC, else cc or gcc), or None."""
    cc = os.environ.get("CC")
    if cc is not None and cc.strip():
        return cc if shutil.which(cc.split()[0]) else None
    return shutil.which("cc") or shutil.which("gcc")


def _no_compiler() -> UsageError:
    """The error for a machine without a C compiler, or a $CC that names no program."""
    cc = os.environ.get("CC")
    if cc:  # (issue 29: name what was set, and how to fix it)
        return UsageError(f"the native engine needs a C compiler: $CC is {shorten(cc, 160)!r}, not a program on PATH;"
                          " set CC to a C compiler (CC=gcc), or unset it to use cc, or leave --native out")
    return UsageError("the native engine needs a C compiler (cc, gcc, or $CC) on PATH: install one"
                      " (Debian: apt install gcc), or leave --native out")


# -- the cache of compiled models ------------------------------------------------------------
#
# NOTE(private-cache): a compiled model is code this process runs, so the folder it is loaded
# from must be one that nobody else can write (issue 29: the $TMPDIR fallback was used whatever
# its owner and mode, and a .so planted there under a model's digest was run). Every folder of
# the cache is made 0700, and one that is a symbolic link, not owned by the user, or writable
# by group or others is refused (exit 2), never used. Each library is recorded with the sha256
# of its content at build time and loaded only when that content is what is read (the file
# opened without following a link); a missing, empty, truncated or changed one is built again.

def _user() -> int:
    """The user the cache belongs to (the effective uid: the files are created as it)."""
    return os.geteuid()


class _Unwritable(Exception):
    """Raised (and caught here) when a cache folder cannot be made: the next place is tried."""


def _cache_dir() -> Path:
    """Where compiled models are kept: $XDG_CACHE_HOME/ownership/native (or ~/.cache/...), else
    $TMPDIR/ownership-native-<uid>; made 0700 and checked (NOTE(private-cache))."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        return _private_folder(Path(base), ("ownership", "native"))
    except _Unwritable:
        pass
    tmp = Path(tempfile.gettempdir())
    try:
        return _private_folder(tmp, (f"ownership-native-{_user()}",))
    except _Unwritable as e:
        raise UsageError(f"the native engine cannot make its cache folder in {shorten(base, 80)!r} nor in"
                         f" {shorten(str(tmp), 80)!r} ({e}): set XDG_CACHE_HOME to a folder you can write,"
                         " or leave --native out") from None


def _private_folder(base: Path, names: tuple[str, ...]) -> Path:
    """base/names..., each folder made 0700 where missing and checked (_check_private)."""
    try:
        os.makedirs(base, 0o700, exist_ok=True)  # (~/.cache itself may be missing)
    except OSError as e:
        raise _Unwritable(e.strerror or str(e)) from None
    _check_parent(base)
    path = base
    for name in names:
        path = path / name
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # (mkdir's mode passes through the umask)
        except FileExistsError:
            pass
        except OSError as e:  # (not writable, read-only, not a folder: the next place)
            raise _Unwritable(e.strerror or str(e)) from None
        _check_private(path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise _Unwritable(f"{path} is not writable")
    return path


def _refuse(path: Path, what: str) -> UsageError:
    """A cache folder that anyone but the user could have written to: exit 2, and the fix."""
    return UsageError(f"the native engine's cache folder {shorten(str(path), 100)!r} {what}: a library planted"
                      " there would run as your code; remove it, or set XDG_CACHE_HOME to a folder of your own")


def _check_private(path: Path) -> None:
    """Refuse a cache folder that is a symbolic link, not a folder, not the user's, or writable
    by group or others (NOTE(private-cache))."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, f"is a symbolic link (to {shorten(os.readlink(path), 60)!r})")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "is not a folder")
    if st.st_uid != _user():
        raise _refuse(path, f"is owned by uid {st.st_uid} (mode {stat.S_IMODE(st.st_mode):04o}), not by you"
                            f" (uid {_user()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _refuse(path, f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})")


def _check_parent(base: Path) -> None:
    """Refuse a base folder that others may write without the sticky bit (as /tmp has it): they
    could rename the cache folder away and put theirs in its place."""
    st = os.stat(base)
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise _refuse(base, f"is writable by others without the sticky bit (mode {stat.S_IMODE(st.st_mode):04o})")


def _content_hash(fd: int) -> str:
    """The sha256 of a file's content, read from an open descriptor."""
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def _recorded_hash(folder: Path, digest: str) -> str | None:
    """The content hash recorded beside a cached library at build time, or None."""
    try:
        fd = os.open(folder / f"{digest}.sha256", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, 200).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def _load_cached(folder: Path, digest: str) -> ctypes.CDLL | None:
    """The cached library of `digest` when its content is the one recorded at build time; None
    when it is missing or damaged (an empty .so failed to load, a truncated one was a SIGBUS:
    issue 29). Between the check and the load only the user can change it (NOTE(private-cache))."""
    want = _recorded_hash(folder, digest)
    if want is None:
        return None
    try:
        fd = os.open(folder / f"{digest}.so", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _user() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        if _content_hash(fd) != want:
            return None
        try:
            # (by its path, not /proc/self/fd/N: the dynamic loader takes a name it has loaded
            # before for that library, and the fd's name is reused by every other model)
            return ctypes.CDLL(str(folder / f"{digest}.so"))
        except OSError:
            return None
    finally:
        os.close(fd)


def _store(folder: Path, digest: str, built: Path) -> None:
    """Put a library built in a temporary folder of `folder` in the cache under `digest`, its
    content hash beside it, each by an atomic rename (another process may be storing the same
    model: a library and a hash that do not match are built again, never loaded)."""
    recorded = built.with_suffix(".sha256")
    fd = os.open(built, os.O_RDONLY)
    try:
        recorded.write_text(_content_hash(fd) + "\n")
    finally:
        os.close(fd)
    os.replace(built, folder / f"{digest}.so")
    os.replace(recorded, folder / f"{digest}.sha256")


def _machine() -> str:
    """What the code is compiled for (-march=native): the machine and its CPU's features."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def cache_key(cc: str, text: str) -> str:
    """The name of a model's library in the cache: its source, the compiler and the machine."""
    return hashlib.sha256(f"{VERSION}\n{cc}\n{_machine()}\n{text}".encode()).hexdigest()[:24]


# -- compiling --------------------------------------------------------------------------------

class _CompilerFailed(Exception):
    """Raised (and caught here) when a compiler run fails: its first error line, or how it
    ended; `stderr` keeps what it said."""

    def __init__(self, summary: str, stderr: str = "") -> None:
        super().__init__(summary)
        self.stderr = stderr


def _run_compilers(jobs: list[list[str]]) -> None:
    """Run compiler commands at once; raise _CompilerFailed with the first failure's message."""
    # (each in a session of its own, so that a limit or Ctrl-C stops the compiler proper, cc1,
    # with the driver: killing the driver alone left cc1 running after the command had ended)
    runs = []
    try:
        for job in jobs:
            try:
                runs.append(subprocess.Popen(job, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             errors="replace", start_new_session=True))
            except OSError as e:  # (not a program this system can run: issue 29)
                raise _CompilerFailed(f"it cannot be run: {e.strerror or e}") from None
        failed = [(run.returncode, err) for run in runs for _, err in [run.communicate()] if run.returncode != 0]
    finally:
        for run in runs:
            if run.poll() is None:
                try:
                    os.killpg(run.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                run.wait()
    if failed:
        code, err = failed[0]
        raise _CompilerFailed(_how_it_failed(code, err), err)


def _how_it_failed(code: int, err: str) -> str:
    """A compiler's failure in a few words: its first error line, else its exit status or signal."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else None)
    if first is not None:
        return f"its first error: {shorten(first, 160)}"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}, no message"
        except ValueError:
            return f"killed by signal {-code}, no message"
    return f"exit status {code}, no message"


#: A C file that any working compiler builds: a failure on it is the compiler's, not ownership's.
_PROBE = "int ownership_probe(int x) { return x + 1; }\n"


def _build(cc: str, text: str, tmp: Path) -> Path:
    """Compile the C source into tmp/model.so: its parts (NOTE(parts)) at once, then linked. A
    compiler that fails on a C file any compiler builds too is bad input (exit 2, issue 29);
    one that builds that but not the model's C is a bug of ownership (exit 4)."""
    c_file = tmp / "model.c"
    c_file.write_text(text)
    out = tmp / "model.so"
    n_parts = int(text[text.index("#define PARTS ") + 14:].split("\n", 1)[0])
    flags = [*cc.split(), *(_LARGE if len(text) > O1_BYTES else ["-O2"]), "-march=native", "-fPIC"]
    try:
        if n_parts == 1:
            _run_compilers([flags + ["-shared", "-o", str(out), str(c_file)]])
        else:
            _run_compilers([flags + [f"-DPART={k}", "-c", "-o", str(tmp / f"part{k}.o"), str(c_file)]
                            for k in range(n_parts)])
            _run_compilers([[*cc.split(), "-shared", "-o", str(out), *(str(tmp / f"part{k}.o") for k in range(n_parts))]])
    except _CompilerFailed as model_failed:
        _probe(cc, flags, tmp)
        from ..errors import InternalError

        raise InternalError(f"the native engine's C code does not compile (a bug of ownership): {model_failed}\n"
                            + model_failed.stderr[-2000:]) from None
    return out


def _probe(cc: str, flags: list[str], tmp: Path) -> None:
    """Raise the compiler's failure as bad input when it cannot build even a one-line library."""
    probe = tmp / "probe.c"
    probe.write_text(_PROBE)
    try:
        _run_compilers([flags + ["-shared", "-o", str(tmp / "probe.so"), str(probe)]])
    except _CompilerFailed as e:
        named = "$CC" if os.environ.get("CC") else "the C compiler"
        raise UsageError(f"the native engine cannot compile with {named} {shorten(cc, 160)!r} ({e}): set CC to a"
                         " working C compiler (CC=gcc), or unset it to use cc, or leave --native out") from None


def _compiled(cc: str, text: str) -> ctypes.CDLL:
    """The library of C source `text`: from the cache when its recorded content hash holds,
    else built into a temporary folder of the cache and stored by atomic renames
    (NOTE(private-cache))."""
    digest = cache_key(cc, text)
    where = _cache_dir()
    lib = _load_cached(where, digest)
    if lib is not None:
        return lib
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        _store(where, digest, _build(cc, text, Path(tmp)))
    lib = _load_cached(where, digest)
    if lib is None:  # (built and stored just now: a folder whose libraries cannot be mapped, noexec)
        try:
            ctypes.CDLL(str(where / f"{digest}.so"))
        except OSError as e:
            raise UsageError(f"the native engine cannot load the model it compiled into {shorten(str(where), 100)!r}"
                             f" ({shorten(str(e), 120)}): set XDG_CACHE_HOME to a folder on a file system that"
                             " allows running code, or leave --native out") from None
        raise UsageError(f"the native engine's compiled model in {shorten(str(where), 100)!r} changed as it was"
                         " stored (another process?): run the command again") from None
    return lib
