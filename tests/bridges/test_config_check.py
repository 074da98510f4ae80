"""Tests of `ownership config-check`: a deployment's KV pools against its advertised context window.

The log excerpts in tests/data/config_check/ are in the real line formats of SGLang 0.5.23 and
0.5.19 and of vLLM 0.33.0 (the sources each pattern in ownership/config_check/sglang_logs.py and vllm_logs.py cites). The
incident's numbers come from docs/incident.md: a window of 1,048,576 tokens over a prefill pool
of 681,280 tokens, fixed by a pool of about 2.04 M tokens (twice the window).
Hostile and huge input is tested in tests/bridges/test_config_check_hostile.py.
"""

from __future__ import annotations

import json
import shlex
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ROOT

from ownership import config_check as cc
from ownership.cli.config_check import config_check
from ownership.errors import ConfigError
from ownership.result import EXIT_BAD_INPUT

DATA = (ROOT / "tests") / "data" / "config_check"
WINDOW = 1_048_576
INCIDENT_POOL = 681_280
FIXED_POOL = 2_097_152  # twice the window
ABOUT_2_04_M = 2_040_000  # "about 2.04 million tokens", a multiple of 64

INCIDENT_NUMBERS = [
    "--context-length", str(WINDOW),
    "--prefill-pool-tokens", str(INCIDENT_POOL),
    "--decode-pool-tokens", str(FIXED_POOL),
    "--page-size", "64",
]  # fmt: skip


def run(*args: str) -> tuple[int, str, str]:
    """Invoke the command object; return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(config_check, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def data(name: str) -> str:
    return str(DATA / name)


def outcome(report: cc.ConfigReport, name: str) -> cc.CheckOutcome:
    return next(c for c in report.checks if c.name == name)


# ---------------------------------------------------------------------------------------
# The incident and its fix
# ---------------------------------------------------------------------------------------


def test_the_incidents_numbers_fail_with_exit_code_1() -> None:
    """A 1,048,576-token window over a 681,280-token prefill pool fails, naming the shortfall."""
    code, out, err = run(*INCIDENT_NUMBERS, "--version", "0.5.19")
    assert code == 1
    assert err == ""
    assert "FAIL  prefill-pool-holds-context" in out
    assert "367,296 fewer than the advertised 1,048,576" in out
    assert "PASS  decode-pool-holds-context" in out
    assert "FAIL  input-limits-agree" in out


def test_the_incidents_prefill_log_of_sglang_0_5_23_fails_with_the_pool_from_the_warning_line() -> (
    None
):
    """SGLang 0.5.23's 'KV pool holds N tokens, fewer than --context-length C' gives the pool and the window."""
    report = cc.check_config(
        prefill_log=data("sglang-0.5.23-prefill-incident.log"),
        decode_log=data("sglang-0.5.23-decode-incident.log"),
        version="0.5.23",
    )
    prefill = report.deployment.prefill
    assert prefill.pool_tokens.value == INCIDENT_POOL
    assert "KV pool holds 681280 tokens" in prefill.pool_tokens.source
    assert report.deployment.advertised_context.value == WINDOW
    assert prefill.page_size is not None and prefill.page_size.value == 64
    assert outcome(report, "prefill-pool-holds-context").verdict is cc.CheckVerdict.FAIL
    assert outcome(report, "decode-pool-holds-context").verdict is cc.CheckVerdict.PASS
    assert report.exit_code == 1


def test_the_incidents_prefill_log_of_sglang_0_5_19_fails_without_the_warning_line() -> None:
    """0.5.19 has no KV pool warning: the pool comes from the scheduler's max_total_num_tokens line."""
    text = (DATA / "sglang-0.5.19-prefill-incident.log").read_text()
    assert "KV pool holds" not in text
    report = cc.check_config(
        prefill_log=data("sglang-0.5.19-prefill-incident.log"),
        decode_log=data("sglang-0.5.19-decode-incident.log"),
        version="0.5.19",
    )
    assert report.deployment.prefill.pool_tokens.value == INCIDENT_POOL
    assert "max_total_num_tokens" in report.deployment.prefill.pool_tokens.source
    gap = outcome(report, "engine-gap-behaviour")
    assert gap.verdict is cc.CheckVerdict.FAIL
    assert gap.numbers["behaviour"] == "served-with-stale-kv"
    assert gap.numbers["gap_from_tokens"] == 681_274
    assert gap.numbers["gap_to_tokens"] == 1_048_569


def test_the_fixed_pool_of_twice_the_window_passes_every_check() -> None:
    """The fix, 2,097,152-token pools on both nodes, passes from the real 0.5.23 start-up logs."""
    code, out, _ = run(
        "--prefill-log", data("sglang-0.5.23-prefill-fixed.log"),
        "--decode-log", data("sglang-0.5.23-decode-fixed.log"),
        "--version", "0.5.23",
    )  # fmt: skip
    assert code == 0, out
    assert "config-check: PASS (all 6 checks hold)" in out
    assert "FAIL" not in out


@pytest.mark.parametrize("pool", [ABOUT_2_04_M, FIXED_POOL])
def test_a_pool_of_about_2_04_million_tokens_passes_even_on_0_5_19(pool: int) -> None:
    """With both pools at least the window no prompt falls in a gap, so even 0.5.19 is safe."""
    code, out, _ = run(
        "--context-length", str(WINDOW),
        "--prefill-pool-tokens", str(pool),
        "--decode-pool-tokens", str(pool),
        "--page-size", "64",
        "--version", "0.5.19",
    )  # fmt: skip
    assert code == 0, out


# ---------------------------------------------------------------------------------------
# Asymmetric limits and SGLang's input limit
# ---------------------------------------------------------------------------------------


def test_sglangs_input_limit_is_min_of_context_and_pool_less_one_less_five() -> None:
    """max_req_input_len = min(context_len - 1, kv_capacity - 1) - 5, as TpModelWorker.get_worker_info."""
    d = cc.build_deployment(
        context_length=WINDOW,
        prefill_pool_tokens=INCIDENT_POOL,
        decode_pool_tokens=FIXED_POOL,
        page_size=64,
    )
    assert d.prefill.input_limit.value == INCIDENT_POOL - 1 - 5
    assert d.decode.input_limit.value == WINDOW - 1 - 5
    assert d.prefill.longest_prompt == 681_273


def test_asymmetric_input_limits_fail_even_when_both_pools_hold_the_window() -> None:
    """A decode launched with --context-length 1M (10**6 to SGLang) rejects prompts that prefill serves."""
    report = cc.check_config(
        prefill_args=data("sglang-prefill-launch.sh"),
        decode_args=data("sglang-decode-launch-1M.sh"),
        prefill_pool_tokens=FIXED_POOL,
        decode_pool_tokens=FIXED_POOL,
        version="0.5.23",
    )
    assert report.deployment.decode.context_length.value == 1_000_000
    limits = outcome(report, "input-limits-agree")
    assert limits.verdict is cc.CheckVerdict.FAIL
    assert limits.numbers["decode_rejects_from"] == 999_994
    assert limits.numbers["prefill_rejects_from"] == 1_048_570
    assert "rejected on decode only" in limits.explanation
    assert outcome(report, "prefill-pool-holds-context").passed
    assert outcome(report, "decode-pool-holds-context").passed
    assert report.exit_code == 1


def test_asymmetric_pools_fail_the_input_limit_check_with_the_incidents_gap() -> None:
    """Prefill at 681,280 and decode at 1,310,720 tokens: prompts of 681,274 to 1,048,569 tokens split."""
    report = cc.check_config(
        prefill_log=data("sglang-0.5.23-prefill-incident.log"),
        decode_log=data("sglang-0.5.23-decode-incident.log"),
        version="0.5.23",
    )
    limits = outcome(report, "input-limits-agree")
    assert limits.verdict is cc.CheckVerdict.FAIL
    assert limits.numbers["gap_tokens"] == 1_048_570 - 681_274
    assert "incident's one-token placeholder" in limits.explanation


def test_an_advertised_window_larger_than_the_nodes_context_fails() -> None:
    """The documentation says 2,097,152 tokens, the nodes run with 1,048,576: the real configuration wins."""
    report = cc.check_config(
        prefill_log=data("sglang-0.5.23-prefill-fixed.log"),
        decode_log=data("sglang-0.5.23-decode-fixed.log"),
        context_length=2 * WINDOW,
        version="0.5.23",
    )
    window = outcome(report, "nodes-serve-the-window")
    assert window.verdict is cc.CheckVerdict.FAIL
    assert window.numbers == {
        "context_length": 2 * WINDOW,
        "prefill_context": WINDOW,
        "decode_context": WINDOW,
    }
    assert "sglang-0.5.23-prefill-fixed.log:6" in window.explanation


# ---------------------------------------------------------------------------------------
# What the release does with a prompt in the gap
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "behaviour", "verdict"),
    [
        ("0.5.18", "served-with-stale-kv", cc.CheckVerdict.FAIL),
        ("0.5.19", "served-with-stale-kv", cc.CheckVerdict.FAIL),
        ("0.5.20", "held-until-timeout", cc.CheckVerdict.FAIL),
        ("0.5.21rc1", "held-until-timeout", cc.CheckVerdict.FAIL),
        ("0.5.21", "rejected-at-door", cc.CheckVerdict.PASS),
        ("v0.5.22.post1", "rejected-at-door", cc.CheckVerdict.PASS),
        ("0.5.23", "rejected-at-door", cc.CheckVerdict.PASS),
        ("0.6.0", "rejected-at-door", cc.CheckVerdict.PASS),
    ],
)
def test_the_release_decides_what_happens_to_a_prompt_that_prefill_rejects(
    version: str, behaviour: str, verdict: cc.CheckVerdict
) -> None:
    """Served with stale KV up to 0.5.19, held until a timeout in 0.5.20, rejected at the door from 0.5.21."""
    d = cc.build_deployment(
        context_length=WINDOW,
        prefill_pool_tokens=INCIDENT_POOL,
        decode_pool_tokens=FIXED_POOL,
        page_size=64,
        version=version,
    )
    gap = cc.check_gap_behaviour(d)
    assert gap.numbers["behaviour"] == behaviour
    assert gap.verdict is verdict


def test_a_prompt_that_only_decode_rejects_is_served_wrongly_before_0_5_21() -> None:
    """Decode's pop_preallocated checks finished, not rejected, until the 0.5.21 door covers it."""
    kwargs: dict[str, Any] = dict(
        context_length=WINDOW,
        prefill_pool_tokens=FIXED_POOL,
        decode_pool_tokens=INCIDENT_POOL,
        page_size=64,
    )
    assert (
        cc.check_gap_behaviour(cc.build_deployment(**kwargs, version="0.5.20")).numbers["behaviour"]
        == "served-wrongly"
    )
    assert cc.check_gap_behaviour(cc.build_deployment(**kwargs, version="0.5.21")).passed


def test_an_unknown_release_with_a_gap_fails_and_asks_for_the_version() -> None:
    """Without --release the gap cannot be ruled safe, so the check fails rather than guess."""
    d = cc.build_deployment(
        context_length=WINDOW,
        prefill_pool_tokens=INCIDENT_POOL,
        decode_pool_tokens=FIXED_POOL,
        page_size=64,
    )
    gap = cc.check_gap_behaviour(d)
    assert gap.verdict is cc.CheckVerdict.FAIL
    assert "pass --release" in gap.explanation


def test_auto_truncate_on_the_narrower_node_fails_in_every_release(tmp_path: Path) -> None:
    """With --allow-auto-truncate prefill truncates instead of rejecting, and no release checks the length at commit."""
    launch = tmp_path / "prefill.sh"
    launch.write_text(
        "python3 -m sglang.launch_server --context-length 1048576 --page-size 64 "
        "--allow-auto-truncate --disaggregation-mode prefill\n"
    )
    report = cc.check_config(
        prefill_args=launch,
        prefill_pool_tokens=INCIDENT_POOL,
        decode_args=data("sglang-0.5.23-decode-server-info.json"),
    )
    gap = outcome(report, "engine-gap-behaviour")
    assert report.deployment.version == "0.5.23"
    assert gap.numbers["behaviour"] == "truncated-on-one-side"
    assert gap.verdict is cc.CheckVerdict.FAIL


# ---------------------------------------------------------------------------------------
# Page rounding
# ---------------------------------------------------------------------------------------


def test_page_rounding_fails_when_whole_pages_fall_short_of_the_window() -> None:
    """A pool of 1,048,570 tokens holds the window in tokens but only 16,383 of the 16,384 pages it needs."""
    report = cc.check_config(
        context_length=1_048_570,
        prefill_pool_tokens=1_048_570,
        decode_pool_tokens=FIXED_POOL,
        page_size=64,
        version="0.5.23",
    )
    assert outcome(report, "prefill-pool-holds-context").passed
    rounding = outcome(report, "page-rounding-fits-prompt")
    assert rounding.verdict is cc.CheckVerdict.FAIL
    assert rounding.numbers["prefill_pages_needed"] == 16_384
    assert rounding.numbers["prefill_pages_in_pool"] == 16_383


def test_different_page_sizes_on_prefill_and_decode_fail(tmp_path: Path) -> None:
    """SGLang refuses a prefill/decode pair whose page sizes differ, so the check fails before it does."""
    decode = tmp_path / "decode.json"
    decode.write_text(
        json.dumps({"context_length": WINDOW, "page_size": 32, "disaggregation_mode": "decode"})
    )
    report = cc.check_config(
        prefill_log=data("sglang-0.5.23-prefill-fixed.log"),
        decode_args=decode,
        decode_pool_tokens=FIXED_POOL,
        version="0.5.23",
    )
    rounding = outcome(report, "page-rounding-fits-prompt")
    assert rounding.verdict is cc.CheckVerdict.FAIL
    assert "64 tokens but decode pages hold 32" in rounding.explanation


# ---------------------------------------------------------------------------------------
# Reading logs and arguments
# ---------------------------------------------------------------------------------------


def test_the_smallest_data_parallel_rank_decides_the_pool() -> None:
    """Each data-parallel rank has its own pool and a request lives on one: the smallest rank decides."""
    reading = cc.read_log(data("sglang-0.5.23-prefill-dp.log"))
    assert reading.pool_tokens is not None and reading.pool_tokens.value == 983_040
    assert reading.dp_ranks is not None and reading.dp_ranks.value == 2


def test_a_restarted_server_is_judged_by_its_last_start_up() -> None:
    """Only the lines after the last server_args= count: the configuration now running, not the old one."""
    reading = cc.read_log(data("sglang-0.5.23-prefill-restarted.log"))
    assert reading.pool_tokens is not None and reading.pool_tokens.value == FIXED_POOL


def test_a_server_info_dump_gives_the_exact_input_limit_and_the_release() -> None:
    """/server_info carries max_total_num_tokens, max_req_input_len and version: no formula, no --version."""
    reading = cc.read_args_file(data("sglang-0.5.23-decode-server-info.json"))
    assert reading.engine == cc.SGLANG
    assert reading.max_req_input_len is not None and reading.max_req_input_len.value == 1_048_570
    assert reading.pool_tokens is not None and reading.pool_tokens.value == FIXED_POOL
    assert reading.engine_version == "0.5.23"
    assert reading.role == cc.DECODE


@pytest.mark.parametrize(
    ("text", "engine", "tokens"),
    [
        ("1M", cc.SGLANG, 1_000_000),
        ("1Mi", cc.SGLANG, 1_048_576),
        ("1M", cc.VLLM, 1_048_576),
        ("1m", cc.VLLM, 1_000_000),
        ("25.6k", cc.SGLANG, 25_600),
        ("1048576", cc.VLLM, 1_048_576),
    ],
)
def test_token_counts_with_suffixes_are_read_as_each_engine_reads_them(
    text: str, engine: str, tokens: int
) -> None:
    """'1M' is 10**6 tokens to SGLang (human_readable_int) but 2**20 to vLLM (argparse_utils)."""
    assert cc.parse_token_count(text, engine=engine) == tokens


def test_vllm_start_up_logs_pass_when_both_pools_hold_max_model_len() -> None:
    """vLLM 0.33.0's 'GPU KV cache size: N tokens' and 'Using max model len M' lines, two DP engines on decode."""
    code, out, _ = run(
        "--prefill-log",
        data("vllm-0.33.0-prefill.log"),
        "--decode-log",
        data("vllm-0.33.0-decode.log"),
    )
    assert code == 0, out
    assert "engine vllm 0.33.0" in out
    assert "engine-gap-behaviour" not in out  # the release table is SGLang's


def test_vllm_nodes_with_different_max_model_len_fail_the_input_limit_check() -> None:
    """A decode with max_model_len 524,288 rejects prompts a 1,048,576 prefill serves."""
    report = cc.check_config(
        prefill_log=data("vllm-0.33.0-prefill.log"),
        decode_log=data("vllm-0.33.0-decode-short-window.log"),
    )
    limits = outcome(report, "input-limits-agree")
    assert limits.verdict is cc.CheckVerdict.FAIL
    assert limits.numbers["decode_rejects_from"] == 524_288
    assert limits.numbers["prefill_longest_prompt"] == WINDOW - 1


def test_a_vllm_launch_command_counts_gpu_blocks_times_block_size_less_the_null_block() -> None:
    """--num-gpu-blocks-override 32769 --block-size 64 is 32,768 usable blocks of 64 tokens; --max-model-len 1M is 2**20."""
    reading = cc.read_args_file(data("vllm-prefill-serve.sh"))
    assert reading.engine == cc.VLLM
    assert reading.pool_tokens is not None and reading.pool_tokens.value == FIXED_POOL
    assert reading.context_length is not None and reading.context_length.value == WINDOW
    assert reading.role == cc.PREFILL


def test_explicit_numbers_override_the_log() -> None:
    """--prefill-pool-tokens answers 'what if we raise the pool?' over the real log's other figures."""
    report = cc.check_config(
        prefill_log=data("sglang-0.5.23-prefill-incident.log"),
        decode_log=data("sglang-0.5.23-decode-incident.log"),
        prefill_pool_tokens=FIXED_POOL,
        version="0.5.23",
    )
    assert report.deployment.prefill.pool_tokens.source == "--prefill-pool-tokens"
    assert outcome(report, "prefill-pool-holds-context").passed


# ---------------------------------------------------------------------------------------
# Bad input: exit 2, naming the figure and the file, never a traceback
# ---------------------------------------------------------------------------------------


def test_a_partial_log_exits_2_naming_the_missing_figure_and_the_file() -> None:
    """A start-up log cut before the pool was sized: exit 2, 'error: the prefill KV pool size ... not in <file>'."""
    code, out, err = run(
        "--prefill-log", data("sglang-0.5.23-prefill-partial.log"),
        "--decode-log", data("sglang-0.5.23-decode-fixed.log"),
    )  # fmt: skip
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert err.startswith("error: the prefill KV pool size")
    assert "sglang-0.5.23-prefill-partial.log" in err
    assert "--prefill-pool-tokens" in err
    assert "Traceback" not in err


def test_every_missing_figure_is_named_at_once() -> None:
    """Launch commands alone give no pool sizes: both are named, each with the file it was not in."""
    with pytest.raises(ConfigError) as info:
        cc.build_deployment(
            prefill_args=data("sglang-prefill-launch.sh"),
            decode_args=data("sglang-decode-launch-1M.sh"),
        )
    message = str(info.value)
    assert message.startswith("2 figures were not found")
    assert "the prefill KV pool size" in message and "sglang-prefill-launch.sh" in message
    assert "the decode KV pool size" in message and "sglang-decode-launch-1M.sh" in message


def test_a_node_with_no_input_at_all_is_named() -> None:
    """Only prefill numbers given: the decode figures are reported as not given, with the options to give them."""
    code, _, err = run(
        "--context-length",
        str(WINDOW),
        "--prefill-pool-tokens",
        str(INCIDENT_POOL),
        "--page-size",
        "64",
    )
    assert code == EXIT_BAD_INPUT
    assert "the decode KV pool size (tokens per data-parallel rank) was not given" in err


def test_a_file_that_is_not_a_start_up_log_exits_2() -> None:
    """A file with none of the engines' start-up lines is refused, not read as zero."""
    code, _, err = run("--prefill-log", data("not-a-log.txt"), *INCIDENT_NUMBERS[2:])
    assert code == EXIT_BAD_INPUT
    assert "does not look like an SGLang or vLLM start-up log" in err


def test_a_missing_file_exits_2_with_one_error_line() -> None:
    """An unreadable path is bad input: one 'error:' line on stderr and exit 2."""
    code, _, err = run("--prefill-log", str(DATA / "no-such.log"), *INCIDENT_NUMBERS)
    assert code == EXIT_BAD_INPUT
    assert err.startswith("error: cannot read the log")
    assert len(err.strip().splitlines()) == 1


def test_a_log_given_for_the_wrong_role_is_refused() -> None:
    """A decode node's log passed as --prefill-log is caught by its own disaggregation_mode."""
    code, _, err = run(
        "--prefill-log",
        data("sglang-0.5.23-decode-fixed.log"),
        "--decode-log",
        data("sglang-0.5.23-decode-fixed.log"),
    )
    assert code == EXIT_BAD_INPUT
    assert "belongs to a decode node" in err


def test_a_malformed_version_is_bad_input() -> None:
    """--version must name a release like 0.5.23."""
    code, _, err = run(*INCIDENT_NUMBERS, "--version", "latest")
    assert code == EXIT_BAD_INPUT
    assert "not an SGLang release" in err


def test_a_token_count_with_a_suffix_is_refused_by_the_options() -> None:
    """--context-length 1M is ambiguous between engines (10**6 or 2**20), so the option wants digits."""
    result = CliRunner().invoke(config_check, ["--context-length", "1M"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "10**6 to SGLang but 2**20 to vLLM" in result.output


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


def test_json_output_has_the_verdict_exit_code_deployment_and_one_entry_per_check() -> None:
    """--json prints one object: verdict, exit_code, deployment figures with sources, and the checks."""
    code, out, _ = run(*INCIDENT_NUMBERS, "--version", "0.5.19", "--json")
    assert code == 1
    doc = json.loads(out)
    assert set(doc) == {"schema_version", "command", "verdict", "exit_code", "deployment", "checks", "spec"}
    assert doc["command"] == "config-check"
    assert doc["verdict"] == "fail" and doc["exit_code"] == 1
    assert doc["spec"] is None
    assert doc["deployment"]["advertised_context"] == {
        "value": WINDOW,
        "source": "--context-length",
    }
    assert doc["deployment"]["prefill"]["pool_tokens"] == {
        "value": INCIDENT_POOL,
        "source": "--prefill-pool-tokens",
    }
    assert [c["name"] for c in doc["checks"]] == [
        "prefill-pool-holds-context",
        "decode-pool-holds-context",
        "input-limits-agree",
        "nodes-serve-the-window",
        "page-rounding-fits-prompt",
        "engine-gap-behaviour",
    ]
    for check in doc["checks"]:
        assert set(check) == {"name", "verdict", "numbers", "explanation"}
        assert check["verdict"] in ("pass", "fail")
        assert "\n" not in check["explanation"]
    first = doc["checks"][0]
    assert first["verdict"] == "fail"
    assert first["numbers"]["shortfall_tokens"] == WINDOW - INCIDENT_POOL


def test_the_text_report_names_the_source_of_every_pool() -> None:
    """Each node's line says which file and line its pool came from, so an operator can check it."""
    code, out, _ = run(
        "--prefill-log", data("sglang-0.5.23-prefill-incident.log"),
        "--decode-args", data("sglang-0.5.23-decode-server-info.json"),
    )  # fmt: skip
    assert code == 1
    assert "sglang-0.5.23-prefill-incident.log:6" in out
    assert "sglang-0.5.23-decode-server-info.json: max_total_num_tokens" in out
    assert "engine sglang 0.5.23 (/server_info version)" in out


# ---------------------------------------------------------------------------------------
# --spec: the shipped spec at parameters scaled from the real numbers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefill", "decode", "expected"),
    [
        (INCIDENT_POOL, FIXED_POOL, (2, 6)),  # the incident: below the window, twice the window
        (FIXED_POOL, FIXED_POOL, (6, 6)),  # the fix
        (WINDOW, WINDOW, (3, 3)),  # exactly the window
        (INCIDENT_POOL, 983_040, (1, 2)),  # both below, prefill smaller: the order survives
        (1_310_720, 1_572_864, (4, 5)),  # both between one and two windows
        (FIXED_POOL, INCIDENT_POOL, (6, 2)),  # decode is the narrow node
    ],
)
def test_spec_parameters_keep_which_inequalities_hold(
    prefill: int, decode: int, expected: tuple[int, int]
) -> None:
    """The window becomes 3 model pages; pools map below/equal/between/above it, keeping prefill-vs-decode order."""
    d = cc.build_deployment(
        context_length=WINDOW, prefill_pool_tokens=prefill, decode_pool_tokens=decode, page_size=64
    )
    params = cc.spec_params(d)
    assert params["context"] == cc.SPEC_CONTEXT_PAGES
    assert (params["prefill_pool"], params["decode_pool"]) == expected
    assert params["requests"] == cc.SPEC_REQUESTS


def test_each_release_runs_the_spec_with_the_fixes_it_shipped() -> None:
    """0.5.19 none, 0.5.20 the post-forward retire, 0.5.21 and later the door as well."""
    assert cc.spec_fixes_for_release("0.5.19") == []
    assert cc.spec_fixes_for_release("0.5.20") == ["post-forward-retire"]
    assert cc.spec_fixes_for_release("0.5.23") == ["post-forward-retire", "door-retire"]
    assert cc.spec_fixes_for_release(None) == []


def test_spec_wiring_passes_the_scaled_parameters_and_reports_a_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """run_spec calls ownership.api.check with the scaled parameters and turns 'violated' into a failed check."""
    from ownership.result import CheckResult, Coverage, Verdict

    calls: list[dict[str, object]] = []

    def fake_check(spec: str, **kwargs: object) -> CheckResult:
        calls.append({"spec": spec, **kwargs})
        violation = types.SimpleNamespace(
            property="stale-read",
            message="decode read r0's KV",
            to_json=lambda: {"property": "stale-read"},
        )
        trace = types.SimpleNamespace(violation=violation, steps=[])
        result = CheckResult(
            Verdict.VIOLATED, Coverage(10, 12, 6, False, "violation"), "explicit", trace=trace
        )
        return result

    monkeypatch.setitem(sys.modules, "ownership.api", types.SimpleNamespace(check=fake_check))
    monkeypatch.setattr("ownership.api", sys.modules["ownership.api"], raising=False)
    d = cc.build_deployment(
        context_length=WINDOW,
        prefill_pool_tokens=INCIDENT_POOL,
        decode_pool_tokens=FIXED_POOL,
        page_size=64,
        version="0.5.20",
    )
    report = cc.run_spec(cc.run_checks(d), max_states=1000)
    assert calls == [
        {"spec": "sglang_pd", "params": {"requests": 2, "context": 3, "prefill_pool": 2, "decode_pool": 6},
         "fixes": ["post-forward-retire"], "max_states": 1000, "max_seconds": None}
    ]  # fmt: skip
    spec = outcome(report, "spec-sglang_pd")
    assert spec.verdict is cc.CheckVerdict.FAIL
    assert "stale-read" in spec.explanation


def _real_api_available() -> bool:
    try:
        from ownership import api

        return hasattr(api, "check")
    except ImportError:
        return False


def test_the_incidents_numbers_with_spec_come_with_a_stale_read_counterexample() -> None:
    """--spec on the incident's numbers at 0.5.19 runs specs/sglang_pd.py and prints a shortest trace."""
    if not _real_api_available():
        pytest.skip("ownership.api not available yet")
    code, out, _ = run(*INCIDENT_NUMBERS, "--version", "0.5.19", "--spec", "--max-seconds", "60")
    assert code == 1
    assert "FAIL  spec-sglang_pd" in out
    assert "violated: stale-read" in out
    assert "Shortest counterexample" in out
    assert "Reproduce: ownership check sglang_pd" in out


def test_the_fixed_numbers_with_spec_verify_the_scaled_model() -> None:
    """--spec on the fixed pools at 0.5.23 verifies the scaled model: every reachable state explored."""
    if not _real_api_available():
        pytest.skip("ownership.api not available yet")
    code, out, _ = run(
        "--context-length", str(WINDOW),
        "--prefill-pool-tokens", str(FIXED_POOL),
        "--decode-pool-tokens", str(FIXED_POOL),
        "--page-size", "64",
        "--version", "0.5.23",
        "--spec", "--json", "--max-seconds", "60",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert doc["spec"]["params"] == {
        "requests": 2,
        "context": 3,
        "prefill_pool": 6,
        "decode_pool": 6,
    }
    assert doc["spec"]["fixes"] == ["post-forward-retire", "door-retire"]
    assert doc["spec"]["verdict"] == "verified"


# ---------------------------------------------------------------------------------------
# The documented commands run as documented
# ---------------------------------------------------------------------------------------


def _doc_commands() -> list[tuple[str, int]]:
    """(command, exit code) pairs from docs/config-check.md: a '$ ownership config-check ...' line, then '# exit N'."""
    doc = ROOT / "docs" / "config-check.md"
    lines = doc.read_text().splitlines()
    out: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        if line.startswith("$ ownership config-check"):
            command = line[2:]
            j = i + 1
            while command.endswith("\\"):
                command = command[:-1] + " " + lines[j].strip()
                j += 1
            expected = next(int(x.split()[-1]) for x in lines[j:] if x.startswith("# exit"))
            out.append((command, expected))
    return out


def test_the_documented_examples_exit_as_the_docs_say() -> None:
    """Every '$ ownership config-check' example in docs/config-check.md exits with the code written under it."""
    commands = _doc_commands()
    assert len(commands) >= 4, "docs/config-check.md lost its examples"
    root = ROOT
    for command, expected in commands:
        args = shlex.split(command)[2:]
        args = [str(root / a) if a.startswith("tests/data/") else a for a in args]
        if "--spec" in args and not _real_api_available():
            continue
        code, out, err = run(*args)
        assert code == expected, f"{command}\n{out}{err}"
