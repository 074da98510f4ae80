"""The native engine's cache and compiler (issue 29, item 3 and a broken $CC of item 6): the
folders that hold compiled models are made 0700 and refused when anyone else could have written
to them (a planted library is never run), a damaged library is built again rather than loaded,
a spec's names never change the C code, and a compiler that fails is bad input (exit 2) with its
first error, not an internal error."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import OWNERSHIP, run_cli

from ownership import Verdict, model_for
from ownership.engines import batch, native
from ownership.errors import InternalError
from ownership.interpret import native as compiled

#: A small model that the native engine checks in well under a second, and its command line.
SPEC = ("sglang_pd", "--fix", "door-retire", "--param", "requests=1")


def _small_model():
    return model_for("sglang_pd", fixes=("door-retire",), params={"requests": 1})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache home of this test's own (XDG_CACHE_HOME), and the umask of most systems."""
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("CC", raising=False)
    old = os.umask(0o022)
    yield home
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _the_library(folder: Path) -> Path:
    """The one compiled model in a cache folder."""
    (lib,) = folder.glob("*.so")
    return lib


# -- the folders --------------------------------------------------------------------------------

def test_the_cache_folders_are_made_0700(cache):
    native.check(_small_model())
    assert _mode(cache / "ownership") == 0o700
    assert _mode(cache / "ownership" / "native") == 0o700


def _fallback_to(tmp_path, monkeypatch) -> Path:
    """Make the user's cache unusable (XDG_CACHE_HOME names a file, as an unwritable home does)
    and $TMPDIR a folder of the test's: the folder the native engine falls back to."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp / f"ownership-native-{os.geteuid()}"


def test_the_temporary_fallback_is_made_0700_too(cache, tmp_path, monkeypatch):
    folder = _fallback_to(tmp_path, monkeypatch)
    native.check(_small_model())
    assert _mode(folder) == 0o700 and _the_library(folder).exists()


_PLANTED = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(getenv("OWNERSHIP_TEST_PLANTED"), "w");
    if (f) { fputs("the planted library ran\n", f); fclose(f); }
}
"""


def _plant(folder: Path, name: str, tmp_path: Path) -> None:
    """Another user's library under a model's name, with the content hash that matches it (who
    can write the folder can write both)."""
    src = tmp_path / "planted.c"
    src.write_text(_PLANTED)
    lib = folder / name
    subprocess.run([compiled.compiler() or "cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    lib.with_suffix(".sha256").write_text(hashlib.sha256(lib.read_bytes()).hexdigest() + "\n")


def _library_name(tmp_path: Path, monkeypatch) -> str:
    """The cache's name for the small model's library, learnt by building it once elsewhere."""
    scratch = tmp_path / "scratch-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch))
    native.check(_small_model())
    return _the_library(scratch / "ownership" / "native").name


def _refused(folder: Path, marker: Path, why: str) -> None:
    """The check is exit 2, one error line naming the folder, why and the fix; nothing planted ran."""
    run = run_cli("check", *SPEC, "--native")
    assert run.code == 2, (run.out, run.err)
    assert run.err.startswith("error: ") and run.err.count("\n") == 1, run.err
    assert str(folder) in run.err and why in run.err and "XDG_CACHE_HOME" in run.err, run.err
    assert not marker.exists()


def _owned_by_someone_else(folder: Path, monkeypatch) -> None:
    if os.geteuid() == 0:
        os.chown(folder, 12345, 12345)
        return
    real = os.lstat  # (only root can give a folder away: lstat says that this one is uid 12345's)

    def lstat(path, *args, **kw):
        st = real(path, *args, **kw)
        if Path(path) != folder:
            return st
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, 12345, st.st_gid, st.st_size,
                               int(st.st_atime), int(st.st_mtime), int(st.st_ctime)))

    monkeypatch.setattr(os, "lstat", lstat)


@pytest.mark.parametrize("where", ["user cache", "temporary fallback"])
@pytest.mark.parametrize("how", ["group-writable", "world-writable", "owned by someone else", "a symbolic link"])
def test_a_library_planted_in_a_folder_others_can_write_is_never_loaded(cache, tmp_path, monkeypatch, where, how):
    """Issue 29: the $TMPDIR fallback was used whatever its owner and mode, and a .so found
    there under the model's digest was run. A folder that is not the user's own and private is
    refused (exit 2, naming it and the fix), so the planted library's constructor never runs."""
    name = _library_name(tmp_path, monkeypatch)
    marker = tmp_path / "planted-ran"
    monkeypatch.setenv("OWNERSHIP_TEST_PLANTED", str(marker))
    if where == "user cache":
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        folder = cache / "ownership" / "native"
        folder.parent.mkdir(parents=True)
    else:
        folder = _fallback_to(tmp_path, monkeypatch)
    planted = folder
    if how == "a symbolic link":
        planted = tmp_path / "elsewhere"
        planted.mkdir(mode=0o700)
        folder.symlink_to(planted)
    else:
        folder.mkdir()
    _plant(planted, name, tmp_path)
    if how == "group-writable":
        folder.chmod(0o770)
        _refused(folder, marker, "writable by group or others (mode 0770)")
    elif how == "world-writable":
        folder.chmod(0o777)
        _refused(folder, marker, "writable by group or others (mode 0777)")
    elif how == "owned by someone else":
        folder.chmod(0o700)
        _owned_by_someone_else(folder, monkeypatch)
        _refused(folder, marker, "not by you")
    else:
        _refused(folder, marker, "is a symbolic link")


def test_a_base_folder_anyone_may_write_without_the_sticky_bit_is_refused(cache, tmp_path, monkeypatch):
    """Whoever can write $XDG_CACHE_HOME (without /tmp's sticky bit) can rename the private
    folder away and put theirs in its place."""
    cache.mkdir()
    cache.chmod(0o777)
    marker = tmp_path / "planted-ran"
    _refused(cache, marker, "without the sticky bit")


def test_a_folder_of_the_user_with_the_sticky_bit_is_fine(cache, tmp_path, monkeypatch):
    """(the base check does not refuse /tmp, which is world-writable with the sticky bit)"""
    cache.mkdir()
    cache.chmod(0o1777)
    assert native.check(_small_model()).verdict is Verdict.VERIFIED


# -- the libraries ------------------------------------------------------------------------------

def _cli(env: dict[str, str]) -> subprocess.CompletedProcess:
    """The check as a process of its own (a truncated library was a SIGBUS: it would kill pytest)."""
    return subprocess.run([OWNERSHIP, "check", *SPEC, "--native"], capture_output=True, text=True, env=env,
                          timeout=600)


@pytest.mark.parametrize("damage", ["empty", "truncated", "one byte changed", "hash missing"])
def test_a_damaged_library_in_the_cache_is_built_again_not_loaded(cache, damage):
    """Issue 29: an empty cached .so gave exit 4 on every run, a truncated one a SIGBUS (exit 135).
    The library's content hash is recorded at build time and checked before loading: a damaged
    one is built again, and the verdict is the undamaged run's."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    first = _cli(env)
    assert first.returncode == 0, first.stderr
    lib = _the_library(cache / "ownership" / "native")
    good = lib.read_bytes()
    recorded = lib.with_suffix(".sha256")
    if damage == "empty":
        lib.write_bytes(b"")
    elif damage == "truncated":
        lib.write_bytes(good[: len(good) // 2])
    elif damage == "one byte changed":
        lib.write_bytes(good[:1000] + bytes([good[1000] ^ 0xFF]) + good[1001:])
    else:
        recorded.unlink(missing_ok=True)
    damaged = lib.read_bytes()
    again = _cli(env)
    assert again.returncode == 0, (again.returncode, again.stderr)
    assert again.stdout.splitlines()[1].split(", in ")[0] == first.stdout.splitlines()[1].split(", in ")[0]
    assert hashlib.sha256(lib.read_bytes()).hexdigest() == recorded.read_text().strip()
    if damage != "hash missing":
        assert lib.read_bytes() != damaged


# -- the spec's names ---------------------------------------------------------------------------

_COMMENT_LABEL = '''
from enum import IntEnum

from ownership import Spec, action, state

Mode = IntEnum("Mode", {"idle": 0, "go */ break; /* ": 1})


class CommentLabel(Spec):
    mode = state(Mode, Mode.idle)

    @action
    def switch(self, s, to: Mode):
        s.require(s.mode != to)
        s.mode = to
'''


def test_a_name_that_closes_a_c_comment_does_not_change_the_compiled_model(tmp_path):
    """Issue 29: binding labels went unescaped into a C comment, and an enum member named with
    `*/` made the compiled model skip the action: "verified, 1 state" where the spec has 2."""
    spec = tmp_path / "comment_label.py"
    spec.write_text(_COMMENT_LABEL)
    model = model_for(str(spec))
    ref, got = batch.check(model), native.check(model)
    assert (ref.coverage.states, ref.coverage.transitions) == (2, 2)
    assert (got.verdict, got.coverage.states, got.coverage.transitions) == (ref.verdict, 2, 2)


# -- the compiler -------------------------------------------------------------------------------

def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("kind", ["exits 1", "says why", "crashes", "not a program", "missing"])
def test_a_compiler_that_fails_is_bad_input_with_its_first_error(cache, tmp_path, monkeypatch, kind):
    """Issue 29: a broken $CC was an internal error (exit 4). It is exit 2: one error line naming
    $CC, the compiler's first error (or how it ended), and the fix."""
    cc, said = {
        "exits 1": ("/bin/false", "exit status 1, no message"),
        "says why": (_script(tmp_path, "cc-error", "#!/bin/sh\necho 'note: reading' >&2\n"
                             "echo 'cc1: fatal error: out of cheese' >&2\nexit 1\n"),
                     "its first error: cc1: fatal error: out of cheese"),
        "crashes": (_script(tmp_path, "cc-crash", "#!/bin/sh\nkill -SEGV $$\n"), "killed by SIGSEGV"),
        "not a program": (_script(tmp_path, "cc-text", "this is not a program\0\n"), "cannot be run"),
        "missing": (str(tmp_path / "no-such-cc"), "not a program on PATH"),
    }[kind]
    monkeypatch.setenv("CC", cc)
    run = run_cli("check", *SPEC, "--native")
    assert run.code == 2, (run.out, run.err)
    assert run.err.startswith("error: ") and run.err.count("\n") == 1, run.err
    assert "$CC" in run.err and cc in run.err and said in run.err and "set CC" in run.err, run.err


def test_a_model_whose_c_does_not_compile_with_a_working_compiler_is_still_a_bug_of_ownership(cache, monkeypatch):
    """(the other side of the test above: the compiler builds a one-line library, so a failure
    on the model's C is ownership's, exit 4)"""
    monkeypatch.setattr(compiled, "source", lambda *a, **k: "#define PARTS 1\nthis is not C;\n")
    with pytest.raises(InternalError, match="does not compile"):
        native.check(_small_model())

