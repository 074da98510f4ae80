"""Tests of `ownership config-check` against hostile and huge input (issue 12, items 3, 6 and 8).

One test per class of input: huge logs (memory and the calls made, each by a ratio against a
log a tenth of the size), pathological long lines (read in a process of their own, where a
pattern that backtracks would run for minutes: a hang, not a time, fails the test), figures of thousands of digits, deeply nested argument files,
absurd, zero, negative or wrong-typed values, two context lengths in one start-up, nonsensical
arithmetic (a 1-token pool), and a bounded --spec run. Every bad input must end in exit 2 and
one `error:` line naming the value, the rule and, for a log line, the file and line; exit 1
only means a check failed, exit 4 only an internal error.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from ownership import config_check as cc
from ownership.cli.config_check import config_check
from ownership.result import EXIT_BAD_INPUT, EXIT_INTERNAL, CheckResult, Coverage, Verdict

DATA = (ROOT / "tests") / "data" / "config_check"
PREFILL_FIXED = DATA / "sglang-0.5.23-prefill-fixed.log"
DECODE_FIXED = str(DATA / "sglang-0.5.23-decode-fixed.log")
STARTUP = PREFILL_FIXED.read_text()
SERVER_ARGS_LINE = STARTUP.splitlines()[0]
SCHED_LINE = (
    "[2026-10-31 11:40:52 DP0 TP0] max_total_num_tokens=2097152, chunked_prefill_size=16384, "
    "max_prefill_tokens=16384, max_running_requests=48, context_len=1048576, available_gpu_mem=4.21 GB\n"
)
RUNTIME_LINE = (
    "[2026-10-31 11:41:07 TP0] Decode batch. #running-req: 12, #token: 123456, token usage: 0.06, "
    "cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0\n"
)
NUMBERS = ["--context-length", "1048576", "--prefill-pool-tokens", "2097152",
           "--decode-pool-tokens", "2097152", "--page-size", "64"]  # fmt: skip


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(config_check, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def assert_one_error_line(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, nothing on stdout, one `error:` line on stderr holding every needle."""
    assert code == EXIT_BAD_INPUT, out + err
    assert out == ""
    assert err.startswith("error: "), err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def calls_made(fn: Callable[[], object]) -> int:
    """How many Python and C function calls `fn()` makes: a measure of work that, unlike a time,
    does not change when the machine is busy (issue 29)."""
    calls = [0]

    def count(frame: object, event: str, arg: object) -> None:
        calls[0] += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls[0]


def peak_traced_memory(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------------------
# Huge logs: memory independent of the size, time linear in it
# ---------------------------------------------------------------------------------------


def _long_log(path: Path, size: int) -> None:
    """A start-up followed by runtime lines, one scheduler line in ten (so lines are parsed throughout)."""
    block = (RUNTIME_LINE * 9 + SCHED_LINE).encode() * 100
    with path.open("wb") as f:
        f.write(STARTUP.encode())
        while f.tell() < size:
            f.write(block)


def test_a_log_ten_times_larger_takes_the_same_memory_and_about_ten_times_the_work(
    tmp_path: Path,
) -> None:
    """20 MB against 2 MB: peak traced memory at most 2x, function calls at most 30x (streamed,
    no whole-file read; linear is 10x, quadratic 100x). The time it takes is a benchmark's
    business, not a test's: a ratio of seconds failed at 15.04x under CI load."""
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    _long_log(small, 2 << 20)
    _long_log(big, 20 << 20)
    assert big.stat().st_size >= 9 * small.stat().st_size
    reading = cc.read_log(big)
    assert reading.pool_tokens is not None and reading.pool_tokens.value == 2_097_152
    small_calls = calls_made(lambda: cc.read_log(small))
    big_calls = calls_made(lambda: cc.read_log(big))
    assert 5 * small_calls <= big_calls <= 30 * small_calls, (big_calls, small_calls)
    small_peak = peak_traced_memory(lambda: cc.read_log(small))
    big_peak = peak_traced_memory(lambda: cc.read_log(big))
    assert big_peak <= 2 * small_peak, (big_peak, small_peak)
    assert big_peak < big.stat().st_size / 2  # the file is never held whole


# ---------------------------------------------------------------------------------------
# Pathological lines: no pattern backtracks, whatever the line holds
# ---------------------------------------------------------------------------------------

LINE = 300_000  # characters per pathological line; quadratic patterns took 24 s at 185 KB
PATHOLOGICAL = {
    "brackets": "[" * LINE,
    "brackets before a scheduler line": "[" * LINE + " max_total_num_tokens=1, context_len=1048576",
    "DP labels before a scheduler line": "[" + " DPx" * (LINE // 4) + " max_total_num_tokens=9, context_len=1048576",
    "repeated pool keyword": "max_total_num_tokens=1," * (LINE // 23),
    "repeated pool keyword, then context": "[DP0 " + "max_total_num_tokens=1, " * (LINE // 24) + "context_len=1048576",
    "upper-case run before KV cache size": "A" * LINE + " KV cache size: 5 tokens",
    "repeated KV cache size": " KV cache size: " * (LINE // 16),
    "server_args of brackets": "server_args={" + "[" * LINE,
    "server_args of many items": "server_args={" + "'a': 1, " * (LINE // 8) + "}",
    "server_args of one word": "server_args={" + "a" * LINE,
    "server_args of open quotes": "server_args={" + "'a':'" * (LINE // 5),
    "non-default args of braces": "non-default args: {" + "}" * LINE,
    "non-default args of x=": "non-default args: {" + "x=" * (LINE // 2) + "}",
    "repeated engine line": "Initializing a V1 LLM engine (v1) with config: " * (LINE // 48),
    "engine line, max_seq_len inside words": "Initializing a V1 LLM engine (v1) with config: " + "xmax_seq_len=" * (LINE // 13),
    "repeated KV Cache is allocated": "] KV Cache is allocated. dtype: " * (LINE // 32),
    "repeated KV pool holds": "KV pool holds " * (LINE // 14),
    "concurrency of commas": "Maximum concurrency for " + "1," * (LINE // 2),
}  # fmt: skip


#: seconds before a read of four pathological lines counts as a hang: a linear read of them takes
#: well under a second, a backtracking pattern minutes (24 s for one line of 185 KB, and a
#: quadratic one grows with the square of the line: 4 lines of 300 KB, over 4 minutes)
HANG = 120

_READ = """
import sys
from ownership import config_check as cc
try:
    cc.read_log(sys.argv[1])
except cc.ConfigError:
    pass  # bad input is fine; a hang or a crash is not
print("read")
"""


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_a_pathological_line_is_read_without_backtracking(name: str, tmp_path: Path) -> None:
    """Four 300 KB lines of each kind are read (or refused as bad input) in a process of their
    own, without a crash and before HANG seconds, which only a pattern that backtracks passes."""
    path = tmp_path / "pathological.log"
    path.write_text(STARTUP + (PATHOLOGICAL[name] + "\n") * 4)
    try:
        done = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, text=True,
                              timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading four 300 KB lines of {name!r} did not end within {HANG} s: a pattern backtracks")
    assert done.returncode == 0 and done.stdout.strip() == "read", done.stderr


def test_a_line_over_the_bound_is_skipped_and_named(tmp_path: Path) -> None:
    """A 1.5 MB line is not cut (no figure from part of a number): it is skipped and the error names it."""
    huge = "x" * (3 * cc.MAX_LINE_BYTES // 2) + " " + SCHED_LINE
    log = write(tmp_path, "long.log", SERVER_ARGS_LINE + "\n" + huge)
    code, out, err = run("--prefill-log", log, "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, "the prefill KV pool size", "line 2 (", "bytes) was not read")


def test_a_nul_byte_names_its_line() -> None:
    """A log holding a NUL byte (or /dev/zero) is not text: exit 2 naming the line."""
    code, out, err = run("--prefill-log", "/dev/zero", "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, "/dev/zero:1", "NUL byte")


def test_an_argument_file_over_the_bound_is_refused_without_reading_it_whole(
    tmp_path: Path,
) -> None:
    """A 'launch command' of 2 MB is not one: refused at MAX_ARGS_BYTES, before shlex or JSON see it."""
    args = write(tmp_path, "huge.sh", "python -m sglang.launch_server " + "--x y " * 400_000)
    code, out, err = run("--prefill-args", args, "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, "huge.sh is over 1,048,576 bytes")


# ---------------------------------------------------------------------------------------
# Figures of thousands of digits, absurd, wrong-typed, zero or negative values
# ---------------------------------------------------------------------------------------

DIGITS = "9" * 5000  # int() refuses more than 4,300 digits with a ValueError


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("pool.log", f"{SERVER_ARGS_LINE}\n[x TP0] max_total_num_tokens={DIGITS}, context_len=1048576\n",
         "pool.log:2 max_total_num_tokens"),
        ("ctx.log", f"{SERVER_ARGS_LINE}\n[x TP0] max_total_num_tokens=2097152, x, context_len={'9' * 20}\n",
         "ctx.log:2 context_len"),
        ("page.log", STARTUP.replace("'page_size': 64", f"'page_size': {DIGITS}"),
         "page.log:1 server_args page_size"),
        ("vllm.log", f"(EngineCore_DP0 pid=1) INFO GPU KV cache size: {'1,' * 3000}000 tokens\n",
         "vllm.log:1 KV cache size"),
    ],
)  # fmt: skip
def test_a_log_figure_of_thousands_of_digits_is_refused_with_its_line(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    code, out, err = run("--prefill-log", write(tmp_path, name, text), "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, needle, "not a real figure", "2**40")


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("digits.json", f'{{"context_length": {DIGITS}, "page_size": 64}}', "digits.json: context_length"),
        ("string.json", f'{{"context_length": "{DIGITS}", "page_size": 64}}', "string.json: context_length"),
        ("nan.json", '{"context_length": NaN, "page_size": 64}', "context_length is nan, not a whole number"),
        ("inf.json", '{"context_length": 1e400, "page_size": 64}', "context_length is inf, not a whole number"),
        ("float.json", '{"context_length": 1048576.0, "page_size": 64}', "not a whole number"),
        ("list.json", '{"context_length": [1048576], "page_size": 64}', "a list of 1 items, not a whole number"),
        ("bool.json", '{"context_length": 1048576, "page_size": true}', "page_size is True, not a whole number"),
        ("version.json", f'{{"context_length": 1048576, "page_size": 64, "version": "0.5.{DIGITS}"}}',
         "version.json: version"),
        ("launch.sh", f"python -m sglang.launch_server --context-length {DIGITS} --page-size 64\n",
         "launch.sh: --context-length"),
        ("blocks.sh", "vllm serve m --max-model-len 1M --block-size 64 --num-gpu-blocks-override 99999999999999\n",
         "blocks.sh: --num-gpu-blocks-override"),
    ],
)  # fmt: skip
def test_an_argument_file_with_an_absurd_or_wrong_typed_figure_is_refused(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    args = write(tmp_path, name, text)
    code, out, err = run("--prefill-args", args, "--prefill-pool-tokens", "2097152", "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, needle)


@pytest.mark.parametrize(
    "args",
    [
        ["--context-length", DIGITS],
        ["--context-length", "99999999999999"],
        ["--max-states", DIGITS, "--spec"],
        ["--version", "0.5." + DIGITS],
    ],
)
def test_an_option_of_thousands_of_digits_is_bad_input(args: list[str]) -> None:
    code, _, err = run(*NUMBERS, *args)
    assert code == EXIT_BAD_INPUT
    assert "Traceback" not in err and len(err) < 600


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("dp0.log", STARTUP.replace("'dp_size': 1", "'dp_size': 0"), "dp0.log:1 server_args dp_size is 0"),
        ("dpneg.log", STARTUP.replace("'dp_size': 1", "'dp_size': -2").replace("'attn_dp_size': 1", "'attn_dp_size': -3"),
         "dp_size is -2"),
        ("dp0.json", '{"context_length": 1048576, "page_size": 64, "dp_size": 0}', "dp0.json: dp_size is 0"),
        ("dp.sh", "vllm serve m --max-model-len 1048576 --block-size 64 --data-parallel-size -1\n",
         "dp.sh: --data-parallel-size is -1"),
    ],
)  # fmt: skip
def test_zero_or_negative_data_parallel_ranks_are_refused(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    """dp_size 0 would count no rank, and two negatives would multiply into a positive: both refused."""
    path = write(tmp_path, name, text)
    option = "--prefill-log" if name.endswith(".log") else "--prefill-args"
    code, out, err = run(option, path, "--prefill-pool-tokens", "2097152", "--decode-log", DECODE_FIXED)
    assert_one_error_line(code, out, err, needle, "at least 1 data-parallel rank")


# ---------------------------------------------------------------------------------------
# Nonsensical arithmetic is refused, never printed
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--context-length", "1048576", "--prefill-pool-tokens", "1", "--decode-pool-tokens", "2097152",
          "--page-size", "1"], "min(context_len - 1, kv_capacity - 1) - 5 = -5"),
        (["--context-length", "1048576", "--prefill-pool-tokens", "32", "--decode-pool-tokens", "2097152",
          "--page-size", "64"], "holds no whole page of 64 tokens"),
        (["--context-length", "5", "--prefill-log", str(PREFILL_FIXED), "--decode-log", DECODE_FIXED],
         "advertised context window of 5 tokens"),
        (["--context-length", "1", "--prefill-pool-tokens", "64", "--decode-pool-tokens", "64",
          "--page-size", "64", "--engine", "vllm"], "vLLM needs at least 2"),
    ],
)  # fmt: skip
def test_a_pool_or_window_that_serves_no_prompt_is_refused(args: list[str], needle: str) -> None:
    """A 1-token pool does not 'reject prompts from -5': the figures are refused as bad input."""
    code, out, err = run(*args)
    assert_one_error_line(code, out, err, needle)
    assert "rejects prompts from -" not in out


def test_a_server_info_limit_below_two_is_refused(tmp_path: Path) -> None:
    info = json.loads((DATA / "sglang-0.5.23-decode-server-info.json").read_text())
    info["max_req_input_len"] = -5
    path = write(tmp_path, "info.json", json.dumps(info))
    code, out, err = run("--prefill-log", str(PREFILL_FIXED), "--decode-args", path)
    assert_one_error_line(code, out, err, "info.json: max_req_input_len is -5")


def test_the_python_api_refuses_absurd_and_wrong_typed_numbers() -> None:
    for bad in (0, -5, 2**41, 1.5, True):
        with pytest.raises(cc.ConfigError):
            cc.build_deployment(
                context_length=1_048_576, prefill_pool_tokens=bad, decode_pool_tokens=2_097_152, page_size=64
            )  # fmt: skip


# ---------------------------------------------------------------------------------------
# Conflicting figures name both lines
# ---------------------------------------------------------------------------------------


def test_two_context_lengths_in_one_sglang_start_up_name_both_lines(tmp_path: Path) -> None:
    other = SCHED_LINE.replace("DP0", "DP1").replace("context_len=1048576", "context_len=524288")
    log = write(tmp_path, "two.log", STARTUP + other)
    code, out, err = run("--prefill-log", log, "--decode-log", DECODE_FIXED)
    assert_one_error_line(
        code, out, err, "two.log gives two different values of the context length",
        "line 6 says context_len=1048576", "line 13 says context_len=524288",
    )  # fmt: skip


def test_two_max_model_lens_in_one_vllm_start_up_name_both_lines(tmp_path: Path) -> None:
    text = (DATA / "vllm-0.33.0-prefill.log").read_text()
    text += "(APIServer pid=9) INFO Using max model len 524288\n"
    log = write(tmp_path, "two.log", text)
    code, out, err = run("--prefill-log", log, "--decode-log", str(DATA / "vllm-0.33.0-decode.log"))
    assert_one_error_line(code, out, err, "two different values", "says 524288")


def test_a_restart_is_not_a_conflict() -> None:
    """Two start-ups with different figures are a restart: only the last one is judged."""
    reading = cc.read_log(DATA / "sglang-0.5.23-prefill-restarted.log")
    assert reading.pool_tokens is not None and reading.pool_tokens.value == 2_097_152


# ---------------------------------------------------------------------------------------
# Deep nesting
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "option"),
    [
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "--prefill-args"),
        ("deep-kv.json", '{"max_model_len": 1048576, "block_size": 64, "kv_transfer_config": "'
         + "[" * 50_000 + '"}', "--prefill-args"),
        ("deep.yaml", "".join("  " * i + f"k{i}:\n" for i in range(500)), "--prefill-args"),
        ("deep-args.log", "[x] server_args={" + "{'a': " * 50_000 + "\n" + STARTUP, "--prefill-log"),
        ("deep-repr.log", STARTUP.replace("'page_size': 64", "'page_size': 64, 'x': " + "-" * 60_000 + "1"),
         "--prefill-log"),
    ],
)  # fmt: skip
def test_argument_files_nested_deeper_than_the_recursion_limit_raise_no_recursion_error(
    tmp_path: Path, name: str, text: str, option: str
) -> None:
    """JSON, YAML-ish or repr dicts nested past sys.getrecursionlimit(): a verdict or one error line."""
    path = write(tmp_path, name, text)
    code, out, err = run(option, path, "--prefill-pool-tokens", "2097152", "--decode-log", DECODE_FIXED)
    assert "Traceback" not in err and "RecursionError" not in err
    if code == EXIT_BAD_INPUT:
        assert_one_error_line(code, out, err)
    else:
        assert code in (0, 1), out + err


# ---------------------------------------------------------------------------------------
# --spec: a bounded search is no verdict, and a pass says what it covered
# ---------------------------------------------------------------------------------------


def _fake_api(monkeypatch: pytest.MonkeyPatch, verdict: Verdict, coverage: Coverage) -> None:
    def check(spec: str, **kwargs: object) -> CheckResult:
        return CheckResult(verdict, coverage, "explicit")

    monkeypatch.setattr("ownership.api.check", check)


BOUNDED = Coverage(3, 2, 0, False, "max-states", bound_depth=0)


def test_a_bounded_spec_run_is_exit_3_and_never_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """--spec --max-states 3 stops after 3 states ("every execution of at most 0 steps"): inconclusive."""
    _fake_api(monkeypatch, Verdict.BOUNDED, BOUNDED)
    code, out, _ = run(*NUMBERS, "--version", "0.5.23", "--spec", "--max-states", "3", "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 3
    spec = next(c for c in doc["checks"] if c["name"] == "spec-sglang_pd")
    assert spec["verdict"] == "inconclusive"
    assert "every execution of at most 0 steps" in spec["explanation"]  # what was covered
    assert "no verdict" in spec["explanation"]


def test_verified_without_complete_coverage_is_no_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_api(monkeypatch, Verdict.VERIFIED, BOUNDED)
    d = cc.build_deployment(
        context_length=1_048_576, prefill_pool_tokens=2_097_152, decode_pool_tokens=2_097_152, page_size=64
    )  # fmt: skip
    report = cc.run_spec(cc.run_checks(d), max_states=3)
    assert report.verdict is cc.CheckVerdict.INCONCLUSIVE and report.exit_code == 3


def test_a_complete_spec_pass_says_what_it_covered(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_api(monkeypatch, Verdict.VERIFIED, Coverage(1234, 5678, 17, True, None))
    d = cc.build_deployment(
        context_length=1_048_576, prefill_pool_tokens=2_097_152, decode_pool_tokens=2_097_152, page_size=64
    )  # fmt: skip
    spec = cc.run_spec(cc.run_checks(d)).checks[-1]
    assert spec.verdict is cc.CheckVerdict.PASS
    assert "all 1,234 reachable states" in spec.explanation


def test_the_text_report_of_a_bounded_run_prints_no_pass_for_the_spec() -> None:
    """The real engine at --max-states 3: exit 3, INCONCLUSIVE, no 'every check holds', no --strict hint."""
    code, out, _ = run(*NUMBERS, "--version", "0.5.23", "--spec", "--max-states", "3")
    assert code == 3, out
    assert out.startswith("config-check: INCONCLUSIVE (6 of 7 checks hold, 1 without a verdict)")
    assert "INCONCLUSIVE spec-sglang_pd" in out
    assert "PASS  spec-sglang_pd" not in out
    assert "every check holds" not in out and "--strict" not in out
    assert "exit 3: the --spec search stopped" in out


@pytest.mark.parametrize(
    "args",
    [["--max-states", "3"], ["--max-seconds", "5"], ["--fix", "door-retire"], ["--spec", "--max-seconds", "nan"]],
)
def test_spec_options_without_spec_or_without_a_finite_limit_are_bad_input(args: list[str]) -> None:
    code, out, err = run(*NUMBERS, *args)
    assert_one_error_line(code, out, err)


# ---------------------------------------------------------------------------------------
# Exit codes and the terminal
# ---------------------------------------------------------------------------------------


def test_an_internal_error_is_exit_4_never_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ownership must not read as 'a check failed' (exit 1): one line, exit 4."""

    def broken(**inputs: object) -> cc.ConfigReport:
        raise RuntimeError("boom")

    monkeypatch.setattr(cc, "check_config", broken)
    code, _, err = run(*NUMBERS)
    assert code == EXIT_INTERNAL
    assert err.startswith("internal error:") and "Traceback" not in err


def test_control_characters_from_a_log_are_escaped(tmp_path: Path) -> None:
    """A vLLM release string is printed in the report: an OSC title sequence in it is shown escaped."""
    text = (DATA / "vllm-0.33.0-prefill.log").read_text()
    text = text.replace("engine (v0.33.0)", "engine (v0.33.0\x1b]0;pwned\x07)")
    log = write(tmp_path, "osc.log", text)
    code, out, _ = run("--prefill-log", log, "--decode-log", str(DATA / "vllm-0.33.0-decode.log"))
    assert code in (0, 1)
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b" in out
