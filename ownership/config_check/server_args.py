"""Reading a server's launch arguments: a command line, a JSON dump, or the values of a repr.

`read_server_args` reads `python -m sglang.launch_server ...` and `vllm serve ...` command lines
and JSON dumps of SGLang's server arguments, of its `/server_info`, or of vLLM's engine
arguments. `_sglang_args_reading` and `_vllm_args_reading` turn argument values, from any of
these or from a log's `server_args=` or `non-default args:` line, into a node's figures.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from ownership.errors import ConfigError
from ownership.trace import unique_keys

from .bounds import _MAX_DIGITS, MAX_DP_RANKS, brief
from .deployment import DECODE, PREFILL, SGLANG, VLLM, Figure, NodeReading
from .figures import (
    _CONTEXT_RULE,
    _PAGE_RULE,
    _RANKS_RULE,
    _as_bool,
    _at,
    _figure_value,
    _positive,
)
from .files import _naming_the_file, _read_args_text
from .releases import parse_version


def _sglang_args_reading(values: dict[str, Any], reading: NodeReading, where: str) -> None:
    """Fill a reading from SGLang server-argument values (a resolved dict or a parsed command line)."""
    ctx = _positive(values, "context_length", SGLANG, where, _CONTEXT_RULE)
    if ctx is not None:
        reading.context_length = Figure(ctx, _at(where, "context_length"))
    page = _positive(values, "page_size", SGLANG, where, _PAGE_RULE)
    if page is not None:
        reading.page_size = Figure(page, _at(where, "page_size"))
    mode = values.get("disaggregation_mode")
    if mode in (PREFILL, DECODE):
        reading.role = mode
    truncate = _as_bool(values.get("allow_auto_truncate"))
    if truncate is not None:
        reading.allow_auto_truncate = truncate
    dp = _positive(values, "dp_size", SGLANG, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    attn_dp = _positive(values, "attn_dp_size", SGLANG, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    if dp is not None:
        # 0.5.23: one scheduler (and one KV pool) per dp_size * attn_dp_size rank
        # (runtime_context.num_dp_ranks_of); 0.5.19: one per dp_size rank, with or without
        # --enable-dp-attention.
        ranks = dp * (attn_dp or 1)
        source = _at(where, "dp_size") + (" * attn_dp_size" if attn_dp else "")
        if ranks > MAX_DP_RANKS:
            raise ConfigError(
                f"{source} is {ranks:,} data-parallel ranks: more than {MAX_DP_RANKS:,} is not a real figure; check the values"
            )
        reading.dp_ranks = Figure(ranks, source)
    bound = _figure_value(values, "max_total_tokens", SGLANG, where)
    if bound is not None:
        reading.looked_for.setdefault(
            "pool_tokens",
            f"--max-total-tokens {bound} is only an upper bound: the pool is the smaller of it and "
            "what fits in GPU memory, known at start-up",
        )


def _vllm_args_reading(
    values: dict[str, Any], reading: NodeReading, where: str, *, from_log: bool = False
) -> None:
    """Fill a reading from vLLM engine arguments (non-default args, a JSON dump, a command line)."""
    raw_len = values.get("max_model_len")
    auto = isinstance(raw_len, str) and raw_len.strip().lower() == "auto"
    max_len = -1 if auto else _figure_value(values, "max_model_len", VLLM, where)
    if max_len is not None:
        if max_len > 0:
            reading.context_length = Figure(max_len, _at(where, "max_model_len"))
        else:
            reading.looked_for["context_length"] = (
                "max_model_len is -1 (auto-fit): the value is decided at start-up; give the start-up log"
            )
    block = _positive(values, "block_size", VLLM, where, _PAGE_RULE)
    if block is not None:
        reading.page_size = Figure(block, _at(where, "block_size"))
    dp = _positive(values, "data_parallel_size", VLLM, where, _RANKS_RULE, limit=MAX_DP_RANKS)
    if dp is not None:
        reading.dp_ranks = Figure(dp, _at(where, "data_parallel_size"))
    blocks = _figure_value(values, "num_gpu_blocks_override", VLLM, where)
    if blocks is not None and not from_log:
        if reading.page_size is not None:
            # Block 0 is the null block, held back for ever (v1/core/block_pool.py::BlockPool).
            usable = (blocks - 1) * reading.page_size.value
            reading.pool_tokens = Figure(
                usable,
                f"{_at(where, 'num_gpu_blocks_override')} {blocks} (less the null block) * block size {reading.page_size.value}",
            )
        else:
            reading.looked_for["pool_tokens"] = (
                f"num_gpu_blocks_override {blocks} is given but not block_size, so the pool in tokens is unknown"
            )
    kv = values.get("kv_transfer_config")
    if isinstance(kv, str):
        try:
            kv = json.loads(kv)
        except (ValueError, RecursionError):
            kv = None
    if isinstance(kv, dict):
        kv_role = kv.get("kv_role")
        role = (
            {"kv_producer": PREFILL, "kv_consumer": DECODE}.get(kv_role)
            if isinstance(kv_role, str)
            else None
        )
        if role:
            reading.role = role


_SGLANG_ALIASES = {
    "data_parallel_size": "dp_size",
    "dp": "dp_size",
    "attention_data_parallel_size": "attn_dp_size",
    "tp": "tp_size",
    "tensor_parallel_size": "tp_size",
}
_VLLM_ALIASES = {
    "dp": "data_parallel_size",
    "tp": "tensor_parallel_size",
    "O": "compilation_config",
}


def _command_line_values(tokens: list[str], aliases: dict[str, str]) -> dict[str, Any]:
    """`--context-length 1M --page-size=64 --enable-x` -> {'context_length': '1M', 'page_size': '64', 'enable_x': True}."""
    values: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--") or re.fullmatch(r"-\d+", tok):
            continue
        name, eq, value = tok.lstrip("-").partition("=")
        key = aliases.get(name.replace("-", "_"), name.replace("-", "_"))
        if eq:
            values[key] = value
        elif i < len(tokens) and (
            not tokens[i].startswith("-") or re.fullmatch(r"-\d+", tokens[i])
        ):
            values[key] = tokens[i]
            i += 1
        else:
            values[key] = True
    return values


def _engine_of_command(tokens: list[str]) -> str | None:
    for tok in tokens[:6]:
        if "sglang" in tok:
            return SGLANG
        if "vllm" in tok:
            return VLLM
    flags = {t.split("=")[0] for t in tokens if t.startswith("--")}
    if flags & {
        "--context-length",
        "--page-size",
        "--disaggregation-mode",
        "--model-path",
        "--mem-fraction-static",
    }:
        return SGLANG
    if flags & {
        "--max-model-len",
        "--block-size",
        "--gpu-memory-utilization",
        "--kv-transfer-config",
    }:
        return VLLM
    return None


def _engine_of_dict(values: dict[str, Any]) -> str | None:
    if values.keys() & {
        "context_length",
        "page_size",
        "disaggregation_mode",
        "max_req_input_len",
        "mem_fraction_static",
        "model_path",
    }:
        return SGLANG
    if values.keys() & {
        "max_model_len",
        "block_size",
        "gpu_memory_utilization",
        "num_gpu_blocks_override",
    }:
        return VLLM
    return None


def read_server_args(text: str, *, path: str = "<args>", engine: str | None = None) -> NodeReading:
    """Read a server's launch arguments: a JSON dump, or the launch command line.

    JSON: SGLang's `server_args.resolved_dict()` or a `/server_info` response (which adds the
    scheduler's `max_total_num_tokens` and `max_req_input_len` of data-parallel rank 0,
    Scheduler.get_init_info, and the release as `version`); or vLLM engine arguments.
    A command line: `python -m sglang.launch_server ...` or `vllm serve ...`, backslash
    continuations allowed; SGLang reads token counts like 1M as 10**6 and 1Mi as 2**20, vLLM
    reads 1M as 2**20 (`parse_token_count`).

    A launch command fixes no SGLang pool size: the pool is sized at start-up from free GPU
    memory (`--max-total-tokens` only caps it), so the pool must come from the start-up log,
    a `/server_info` dump or --prefill/decode-pool-tokens.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            # A number of more digits than any real figure stays text, so that int() never sees
            # thousands of digits and _figure_value can name the key.
            # A key named twice is refused (json.loads keeps the last silently): a dump of server
            # arguments names each once, so such a file was edited and neither value can be believed.
            values = json.loads(stripped, parse_int=_json_int,
                                object_pairs_hook=lambda pairs: unique_keys(pairs, ConfigError))
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except RecursionError as exc:
            raise ConfigError(
                f"{path} is JSON nested deeper than Python's recursion limit ({sys.getrecursionlimit():,} levels), "
                "and a dump of server arguments is one or two levels deep; give the dump itself"
            ) from exc
        except ValueError as exc:
            raise ConfigError(
                f"{path} starts like JSON but is not JSON ({brief(str(exc), 120)}); give a JSON dump of the server arguments or the launch command line"
            ) from exc
        if not isinstance(values, dict):
            raise ConfigError(
                f"{path}: expected a JSON object of server arguments, found {type(values).__name__}"
            )
        nested = values.get("server_args")
        if isinstance(nested, dict):
            values = {**nested, **{k: v for k, v in values.items() if k != "server_args"}}
        found = engine or _engine_of_dict(values)
        if found is None:
            raise ConfigError(
                f"{path}: cannot tell whether these are SGLang or vLLM arguments (no context_length, page_size, max_model_len or block_size key); pass --engine"
            )
        kind = "JSON server arguments"
        reading = NodeReading(origin=path, kind=f"{found} {kind}", engine=found)
        if found == SGLANG:
            _sglang_args_reading(values, reading, f"{path}:")
            pool = _figure_value(values, "max_total_num_tokens", SGLANG, f"{path}:")
            if pool is not None:
                reading.pool_tokens = Figure(
                    pool, f"{path}: max_total_num_tokens (data-parallel rank 0)"
                )
            limit = _figure_value(values, "max_req_input_len", SGLANG, f"{path}:")
            if limit is not None:
                reading.max_req_input_len = Figure(limit, f"{path}: max_req_input_len")
            release = values.get("version")
            if isinstance(release, str):
                parse_version(release, source=f"{path}: version")
                reading.engine_version = release
            reading.looked_for.setdefault(
                "pool_tokens",
                "no max_total_num_tokens key (a /server_info dump has it; the server arguments alone do not)",
            )
            reading.looked_for.setdefault(
                "context_length",
                "context_length is missing or null (it then comes from the model's config.json, known at start-up)",
            )
            reading.looked_for.setdefault("page_size", "page_size is missing or null")
        else:
            _vllm_args_reading(values, reading, f"{path}:")
            reading.looked_for.setdefault(
                "pool_tokens",
                "no num_gpu_blocks_override with block_size (the pool is sized at start-up: give the start-up log)",
            )
            reading.looked_for.setdefault("context_length", "no max_model_len key")
        return reading

    joined = re.sub(r"\\\r?\n", " ", text)
    joined = "\n".join(line for line in joined.splitlines() if not line.lstrip().startswith("#"))
    try:
        tokens = shlex.split(joined)
    except ValueError as exc:
        raise ConfigError(f"{path}: cannot split the launch command line ({exc})") from exc
    if not any(t.startswith("--") for t in tokens):
        raise ConfigError(
            f"{path} is neither a JSON dump of server arguments nor a launch command line with --options"
        )
    found = engine or _engine_of_command(tokens)
    if found is None:
        raise ConfigError(
            f"{path}: cannot tell whether this launches SGLang or vLLM (no sglang/vllm program and no engine-specific option); pass --engine"
        )
    reading = NodeReading(origin=path, kind=f"{found} launch command", engine=found)
    if found == SGLANG:
        values = _command_line_values(tokens, _SGLANG_ALIASES)
        _sglang_args_reading(values, reading, f"{path}: --")
        reading.looked_for.setdefault(
            "pool_tokens",
            "a launch command fixes no pool size: the pool is sized from free GPU memory at start-up",
        )
        reading.looked_for.setdefault(
            "context_length",
            "no --context-length (it then comes from the model's config.json, known at start-up)",
        )
        reading.looked_for.setdefault(
            "page_size",
            "no --page-size (the default depends on the attention backend, known at start-up)",
        )
    else:
        values = _command_line_values(tokens, _VLLM_ALIASES)
        _vllm_args_reading(values, reading, f"{path}: --")
        reading.looked_for.setdefault(
            "pool_tokens",
            "no --num-gpu-blocks-override with --block-size (the pool is sized at start-up)",
        )
        reading.looked_for.setdefault(
            "context_length",
            "no --max-model-len (it then comes from the model's config, known at start-up)",
        )
    reading.looked_for.setdefault("page_size", "no block size option")
    return reading


def _json_int(digits: str) -> int | str:
    """A JSON integer: an int, or its digits when longer than any real figure (judged later)."""
    return int(digits) if len(digits) <= 2 * _MAX_DIGITS else digits


def read_args_file(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read a launch command line or a JSON dump of server arguments from a file (at most MAX_ARGS_BYTES)."""
    text = _read_args_text(path)
    return _naming_the_file(path, lambda: read_server_args(text, path=str(path), engine=engine))
