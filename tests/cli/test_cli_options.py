"""Option values and specs that used to crash, run forever or pass silently (issue 12, items
3, 4 and 7): each is exit 2 with one `error:` line naming the value, the rule and the fix.

- limits: --max-seconds nan, inf, negative or zero; --max-memory with 400 digits or any absurd
  size; --workers beyond a few per CPU (it forked one process per worker asked for);
- a spec that exits while it is loaded (sys.exit(0) exited 0: a silent pass);
- --out into a missing folder, onto a full disk (/dev/full) or past a file-size limit: no
  partial file is left;
- a check that checks nothing (no request, or every property skipped) is not a pass.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess

import pytest
from conftest import OWNERSHIP, TRACE, one_error_line, run_cli

from ownership import UsageError, check, model_for
from ownership.limits import WORKERS_PER_CPU, cpus, max_workers, parse_seconds, parse_size

LIMITED = [("check", "sglang_pd"), ("prove", "sglang_pd"), ("replay", TRACE)]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "1e999", "soon"])
@pytest.mark.parametrize("command", LIMITED, ids=[c[0] for c in LIMITED])
def test_a_time_limit_is_a_finite_positive_number(command, value):
    """--max-seconds nan meant no limit at all; inf, 0 and negatives made no sense either."""
    line = one_error_line(run_cli(*command, "--max-seconds", value), "--max-seconds")
    assert "seconds" in line


@pytest.mark.parametrize("value", ["9" * 400, "1" + "0" * 5000 + "G", "2E", "100000T", "0", "1K", "4X", "", "1.5.5G"])
@pytest.mark.parametrize("command", LIMITED, ids=[c[0] for c in LIMITED])
def test_an_absurd_memory_size_is_refused(command, value):
    """--max-memory with 400 digits overflowed a float (a traceback); sizes above what any
    machine holds, below what ownership itself needs, or not sizes at all are refused."""
    line = one_error_line(run_cli(*command, "--max-memory", value), "--max-memory")
    assert len(line) < 400  # a long value is shown cut short


def test_memory_sizes_parse_exactly():
    assert parse_size("4G") == 4 << 30
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size(" 2 GB ") == 2 << 30
    assert parse_size("100000000") == 100_000_000
    assert parse_seconds("0.05") == 0.05 and parse_seconds(None) is None


@pytest.mark.parametrize("workers", [0, -1, "many"])
def test_workers_below_one_are_refused(workers):
    run = run_cli("check", "sglang_pd", "--workers", str(workers))
    assert run.code == 2 and "Traceback" not in run.err


def test_workers_beyond_a_few_per_cpu_are_refused_with_the_limit_and_why():
    """--workers 10000 forked 9,999 processes; the message says the limit and its reason."""
    line = one_error_line(run_cli("check", "sglang_pd", "--workers", "10000"), "--workers 10000",
                          f"at most {max_workers()}", f"{WORKERS_PER_CPU} per CPU")
    assert f"{cpus()} CPU" in line
    with pytest.raises(UsageError, match="at most"):
        check("sglang_pd", workers=max_workers() + 1)
    assert run_cli("check", "sglang_pd", "--workers", str(min(2, max_workers()))).code == 1


# --------------------------------------------------------------------------- a spec that exits


EXITS = {
    "sys_exit_0": "import sys\nfrom ownership import Spec\n\nsys.exit(0)\n",
    "sys_exit_text": "import sys\n\n\nsys.exit('bye')\n",
    "raise_system_exit": "from ownership import Spec\n\n\nclass S(Spec):\n    raise SystemExit(1)\n",
    "base_exception": "\n\n\nraise BaseException('odd')\n",
    "generator_exit": "\n\n\nraise GeneratorExit()\n",
}


@pytest.mark.parametrize("name", sorted(EXITS))
@pytest.mark.parametrize("command", ["check", "prove", "list", "graph"])
def test_a_spec_that_exits_while_loading_is_a_spec_error_with_file_and_line(tmp_path, name, command):
    """sys.exit(0) at a spec's top level ended `ownership check` with exit 0 and nothing
    printed; any BaseException but Ctrl-C is now a spec error at its line (line 4 or 5)."""
    spec = tmp_path / f"{name}.py"
    spec.write_text(EXITS[name], encoding="utf-8")
    line = one_error_line(run_cli(command, str(spec)), f"{spec}:")
    assert line.split(f"{spec}:")[1].split(":")[0] in ("4", "5"), line
    assert "while loading the spec" in line


def test_a_spec_that_exits_is_refused_by_the_real_console_script_too(tmp_path):
    spec = tmp_path / "exits.py"
    spec.write_text(EXITS["sys_exit_0"], encoding="utf-8")
    run = subprocess.run([OWNERSHIP, "check", str(spec)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"error: {spec}:4: SystemExit(0)")


# --------------------------------------------------------------------------- --out


@pytest.mark.parametrize("command", [("check", "sglang_pd"), ("replay", TRACE)], ids=["check", "replay"])
def test_out_into_a_missing_folder_is_refused_before_the_run(tmp_path, command):
    out = tmp_path / "no" / "such" / "t.itf.json"
    one_error_line(run_cli(*command, "--out", str(out)), "cannot write the trace to", "does not exist")
    assert not (tmp_path / "no").exists()
    one_error_line(run_cli(*command, "--out", str(tmp_path)), "is a folder")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("check", "sglang_pd"), ("replay", TRACE)], ids=["check", "replay"])
def test_out_onto_a_full_disk_is_one_error_line(command):
    one_error_line(run_cli(*command, "--out", "/dev/full"), "cannot write the trace to /dev/full", "No space left")


def _small_files() -> None:
    """In the child: files may not grow past 4 KiB (writes past it fail: EFBIG), as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("command", [("check", "sglang_pd"), ("replay", TRACE)], ids=["check", "replay"])
def test_a_write_that_fails_half_way_leaves_no_partial_file(tmp_path, command):
    """The trace is larger than the file-size limit: the write fails after 4 KiB. Exit 2, one
    error line, and neither the trace nor a temporary file is left behind."""
    out = tmp_path / "t.itf.json"
    run = subprocess.run([OWNERSHIP, *command, "--out", str(out)], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, preexec_fn=_small_files)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write the trace to {out}"), run.stderr
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- vacuous checks


ZERO_REQUESTS = '''"""A spec whose requests parameter allows 0."""

from ownership import Request, Spec, action, param, per_request


class MaybeNone(Spec):
    requests = param(1, "requests", minimum=0)
    done = per_request(bool, False)

    @action
    def finish(self, s, r: Request):
        s.require(~s.done[r])
        s.done[r] = True
'''


@pytest.mark.parametrize("engine", ["explicit", "bmc", "fuzz"])
def test_a_check_of_no_request_is_not_a_pass(tmp_path, engine):
    """--param requests=0 printed "verified" with nothing checked."""
    spec = tmp_path / "maybe_none.py"
    spec.write_text(ZERO_REQUESTS, encoding="utf-8")
    quick = ["--runs", "5", "--steps", "3", "--profile", "ci"] if engine == "fuzz" else []
    assert run_cli("check", str(spec), "--engine", engine, *quick).code == 0
    one_error_line(run_cli("check", str(spec), "--engine", engine, "--param", "requests=0"),
                   "nothing to check", "requests=0", "--param requests=1")


def test_a_proof_of_no_request_is_not_a_pass(tmp_path):
    spec = tmp_path / "maybe_none.py"
    spec.write_text(ZERO_REQUESTS, encoding="utf-8")
    one_error_line(run_cli("prove", str(spec), "--param", "requests=0"), "nothing to check", "requests=0")


@pytest.mark.parametrize("command", ["check", "prove"])
def test_skipping_every_property_is_not_a_pass(command):
    """--skip of every property printed "verified"; one property left is a check again."""
    names = model_for("sglang_pd").property_names()
    skips = [a for name in names for a in ("--skip", name)]
    one_error_line(run_cli(command, "sglang_pd", *skips), "nothing to check", "every property", "--skip")
    quick = ["--k", "1"] if command == "prove" else []
    assert run_cli(command, "sglang_pd", "--fix", "door-retire", *skips[2:], *quick).code in (0, 3)


def test_only_checks_the_named_properties_alone_in_every_engine_and_repeats():
    """--only PROPERTY: that property alone (the inverse of a --skip of every other one), said in
    the report, kept by the reproduce command; refused beside --skip, for a misspelt name, and
    where it leaves nothing to check."""
    whole = check("sglang_pd")  # (the unfixed spec: a stale read, and no double free)
    assert whole.violation.property == "stale-read"
    for engine, extra in (("explicit", {}), ("bmc", {"max_depth": 8}),
                          ("fuzz", {"runs": 300, "steps": 30, "profile": "ci", "database": None})):
        alone = check("sglang_pd", only=["double-free"], engine=engine, **extra)
        assert alone.model.checked() == ["double-free"], engine
        assert alone.verdict.word == ("verified" if engine == "explicit" else "bounded"), (engine, alone.verdict)
        assert "--only double-free" in alone.reproduce and "--skip" not in alone.reproduce
        both = check("sglang_pd", only=["double-free", "stale-read"], engine=engine, **extra)
        assert both.violation is not None and both.violation.property == "stale-read", engine
    shown = run_cli("check", "sglang_pd", "--fix", "door-retire", "--only", "double-free")
    assert shown.code == 0 and "Properties checked: double-free (these alone, with --only; left out:" in shown.out
    one_error_line(run_cli("check", "sglang_pd", "--only", "stale-read", "--skip", "leak"), "--only and --skip")
    one_error_line(run_cli("check", "sglang_pd", "--only", "stale-red"), "--only 'stale-red'", "stale-read")
    one_error_line(run_cli("check", "sglang_pd", "--only", "crash"), "nothing to check", "--only crash")
    proof = run_cli("prove", "sglang_pd", "--fix", "door-retire", "--only", "double-free", "--k", "1")
    assert proof.code in (0, 3) and "Properties: double-free" in proof.out, proof.out + proof.err


@pytest.mark.parametrize("extra", [["--engine", "bmc", "--max-depth", "2"],
                                   ["--engine", "fuzz", "--runs", "2", "--steps", "3", "--profile", "ci"],
                                   ["--param", "decode_pool=100", "--max-states", "50"]],
                         ids=["bmc", "fuzz", "per-state"])
def test_max_memory_is_a_limit_of_every_engine(extra):
    """--max-memory holds for the whole command, so every engine takes it (it was refused for
    all but the batch engine)."""
    run = run_cli("check", "sglang_pd", "--fix", "door-retire", "--max-memory", "8G", *extra)
    assert run.code == 0, run.err


# --------------------------------------------------------------------------- huge integers (issue 29, item 6)

#: Past Python's int-string limit (4,300 digits): int() of it raised ValueError, exit 4.
HUGE = "9" * 5000

INTEGER_OPTIONS = {
    "param": ("check", "sglang_pd", "--param", f"decode_pool={HUGE}"),
    "param-prove": ("prove", "sglang_pd", "--param", f"decode_pool={HUGE}"),
    "param-graph": ("graph", "sglang_pd", "--param", f"decode_pool={HUGE}"),
    "param-list": ("list", "sglang_pd", "--param", f"decode_pool={HUGE}"),
    "max-states": ("check", "sglang_pd", "--max-states", HUGE),
    "max-depth": ("check", "sglang_pd", "--max-depth", HUGE),
    "runs": ("check", "sglang_pd", "--engine", "fuzz", "--runs", HUGE),
    "steps": ("check", "sglang_pd", "--engine", "fuzz", "--steps", HUGE),
    "seed": ("check", "sglang_pd", "--engine", "fuzz", "--seed", HUGE),
    "workers": ("check", "sglang_pd", "--workers", HUGE),
    "searches": ("check", "sglang_pd", "--engine", "fuzz", "--searches", HUGE),
    "symbolic-high": ("check", "sglang_pd", "--engine", "bmc", "--symbolic", f"decode_pool=1..{HUGE}"),
    "symbolic-low": ("prove", "sglang_pd", "--symbolic", f"decode_pool={HUGE}..3"),
    "k": ("prove", "sglang_pd", "--k", HUGE),
    "max-nodes": ("graph", "sglang_pd", "--max-nodes", HUGE),
    "max-seconds": ("check", "sglang_pd", "--max-seconds", HUGE),
    "max-memory": ("check", "sglang_pd", "--max-memory", HUGE + "M"),
    "step": ("show", TRACE, "--step", HUGE),
}


@pytest.mark.parametrize("name", sorted(INTEGER_OPTIONS))
def test_an_integer_of_thousands_of_digits_is_bad_input_shown_short(name):
    """Every option that reads an integer, given 5,000 digits: exit 2, one error line with the
    value shortened (a `--param` of 5,000 digits was exit 4, a ValueError of Python's
    int-string limit; --max-seconds printed the value whole)."""
    line = one_error_line(run_cli(*INTEGER_OPTIONS[name]))
    assert HUGE[:100] not in line and len(line) < 400, len(line)


@pytest.mark.parametrize("value", ["decode_pool=" + "1" * 19, "decode_pool=-" + "9" * 30, "x" * 5000 + "=3",
                                   "decode_pool=" + "٣" * 5000])
def test_a_param_too_long_to_be_a_parameter_is_refused_short(value):
    """A value past any pool's size or a name past any parameter's, shown shortened."""
    line = one_error_line(run_cli("check", "sglang_pd", "--param", value), "--param")
    assert len(line) < 400
