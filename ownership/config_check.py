"""Deployment checks: a disaggregated deployment's KV pools against its advertised context window.

The GLM-5.3 leak (../shared/domain/incident.md) began with a configuration that no check read:
a context window of 1,048,576 tokens over a prefill KV pool of 681,280 tokens. Prompts between
the two were rejected on prefill but accepted on decode, and SGLang 0.5.19 served them with the
stale KV of other customers. The operators' advice is to compare the pool with the window at
start-up and after every configuration change, from the real configuration. This module does
that comparison, so that a deploy pipeline can run it as one command (`ownership config-check`).

It reads the figures that the engines themselves print or are given, never guessing a number:

- SGLang (0.5.19 to 0.5.23) start-up logs of the prefill and decode nodes
  (`read_sglang_log`), SGLang launch command lines and JSON dumps of the server arguments or of
  `/server_info` (`read_server_args`);
- vLLM 0.33.0 start-up logs and `vllm serve` arguments (`read_vllm_log`, `read_server_args`);
- numbers given by hand (`build_deployment`'s keyword arguments).

`build_deployment` merges them into a typed `Deployment` (a number given by hand overrides a
log, a log overrides the launch arguments), raising `ConfigError` that names each missing figure
and the file it was not found in. `run_checks` returns a `ConfigReport`: one `CheckOutcome` per
check, each with a verdict, the numbers behind it and a one-line explanation. Nothing here prints.

`spec_params` scales a deployment down to the parameters of the shipped spec `sglang_pd`, so
that `ownership config-check --spec` can attach a counterexample trace to a failing
configuration (see docs/config-check.md for the scaling rule).
"""

from __future__ import annotations

import ast
import enum
import json
import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ownership.errors import ConfigError
from ownership.result import Verdict

SGLANG = "sglang"
VLLM = "vllm"
ENGINES = (SGLANG, VLLM)
PREFILL = "prefill"
DECODE = "decode"
ROLES = (PREFILL, DECODE)

#: SGLang's scheduler rejects a prompt of `max_req_input_len` tokens or more, where
#: `max_req_input_len = min(context_len - 1, kv_capacity - 1) - 5`
#: (managers/tp_worker.py::TpModelWorker.get_worker_info in 0.5.19 and 0.5.23; the check is
#: managers/utils.py::validate_input_length, `len(origin_input_ids) >= max_req_input_len`).
SGLANG_INPUT_SLACK = 5

#: The first SGLang release whose intake door retires a rejected request before bootstrap, on
#: prefill and on decode (#38935; the release table of ../shared/domain/sglang-pd.md).
SGLANG_DOOR_RELEASE = (0, 5, 21)
#: The first SGLang release that retires an aborted request after the prefill forward (#36988).
SGLANG_RETIRE_RELEASE = (0, 5, 20)
#: The releases the table of ../shared/domain/sglang-pd.md was read from.
SGLANG_TABLE_RELEASES = ((0, 5, 19), (0, 5, 23))

#: The scaled model for --spec: the advertised window is this many (model) pages.
SPEC_CONTEXT_PAGES = 3
#: The scaled model for --spec: two requests, one to leave KV behind and one to read it.
SPEC_REQUESTS = 2
#: The shipped spec that --spec runs.
SPEC_NAME = "sglang_pd"


# ----------------------------------------------------------------------------------------
# Data: figures, nodes, the deployment, outcomes, the report
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A number read from a deployment, and where it was read (a file and line, or an option)."""

    value: int
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


#: The figures a node needs, in words, for messages.
FIGURE_WORDS: dict[str, str] = {
    "context_length": "context length (tokens)",
    "pool_tokens": "KV pool size (tokens per data-parallel rank)",
    "page_size": "page size (tokens per KV page)",
}


@dataclass
class NodeReading:
    """What one input (a log, an argument file, the explicit options) says about one node.

    Every figure is optional: readings are merged before a missing figure becomes an error.
    `looked_for` says, per missing figure, what this input was searched for, so that the error
    can name the figure and the file exactly.
    """

    origin: str  # a path, or "options"
    kind: str  # "SGLang log", "vLLM log", "SGLang launch command", ..., "options"
    engine: str | None = None
    role: str | None = None  # the node's own idea of its role (disaggregation_mode, kv_role)
    engine_version: str | None = None
    context_length: Figure | None = None
    pool_tokens: Figure | None = None
    pool_in_whole_blocks: bool = False  # vLLM's logged capacity already counts whole blocks
    page_size: Figure | None = None
    max_req_input_len: Figure | None = None  # SGLang /server_info reports it exactly
    dp_ranks: Figure | None = None
    allow_auto_truncate: bool | None = None
    looked_for: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeConfig:
    """One node's resolved figures: every number a check needs, each with its source."""

    role: str
    engine: str
    context_length: Figure
    pool_tokens: Figure
    page_size: Figure | None  # None only for vLLM logs, whose capacity counts whole blocks
    input_limit: Figure  # a prompt of this many tokens or more is rejected
    dp_ranks: Figure | None = None
    allow_auto_truncate: bool | None = None
    engine_version: str | None = None

    @property
    def longest_prompt(self) -> int:
        """The longest prompt this node serves, in tokens."""
        return self.input_limit.value - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "context_length": self.context_length.to_json(),
            "pool_tokens": self.pool_tokens.to_json(),
            "page_size": self.page_size.to_json() if self.page_size else None,
            "input_limit": self.input_limit.to_json(),
            "data_parallel_ranks": self.dp_ranks.to_json() if self.dp_ranks else None,
            "allow_auto_truncate": self.allow_auto_truncate,
        }


@dataclass(frozen=True)
class Deployment:
    """A disaggregated deployment: the advertised window, the engine release, and both nodes."""

    engine: str
    advertised_context: Figure
    prefill: NodeConfig
    decode: NodeConfig
    version: str | None = None  # the SGLang release judged by the gap check
    version_source: str | None = None

    def node(self, role: str) -> NodeConfig:
        return self.prefill if role == PREFILL else self.decode

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "version_source": self.version_source,
            "advertised_context": self.advertised_context.to_json(),
            "prefill": self.prefill.to_json(),
            "decode": self.decode.to_json(),
        }


class CheckVerdict(enum.Enum):
    """A check's outcome and the exit code it contributes (from ownership.result's one table)."""

    PASS = ("pass", Verdict.VERIFIED.exit_code)
    FAIL = ("fail", Verdict.VIOLATED.exit_code)
    #: Only a --spec run stopped by a limit: not a pass, not a counterexample.
    INCONCLUSIVE = ("inconclusive", Verdict.INCONCLUSIVE.exit_code)

    def __init__(self, word: str, exit_code: int) -> None:
        self.word = word
        self.exit_code = exit_code


@dataclass(frozen=True)
class CheckOutcome:
    """One check: its name, its verdict, the numbers behind it and a one-line explanation."""

    name: str
    verdict: CheckVerdict
    numbers: dict[str, Any]
    explanation: str

    @property
    def passed(self) -> bool:
        return self.verdict is CheckVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.word,
            "numbers": dict(self.numbers),
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ConfigReport:
    """Every check's outcome for one deployment, plus the --spec run when one was asked for."""

    deployment: Deployment
    checks: tuple[CheckOutcome, ...]
    spec_result: Any = None  # ownership.result.CheckResult of the --spec run
    spec_params: dict[str, int] | None = None
    spec_fixes: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(c for c in self.checks if c.verdict is CheckVerdict.FAIL)

    @property
    def verdict(self) -> CheckVerdict:
        """FAIL if any check fails; else INCONCLUSIVE if the spec run stopped early; else PASS."""
        if self.failed:
            return CheckVerdict.FAIL
        if any(c.verdict is CheckVerdict.INCONCLUSIVE for c in self.checks):
            return CheckVerdict.INCONCLUSIVE
        return CheckVerdict.PASS

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def to_json(self) -> dict[str, Any]:
        spec: dict[str, Any] | None = None
        if self.spec_params is not None:
            spec = {
                "spec": SPEC_NAME,
                "params": dict(self.spec_params),
                "fixes": list(self.spec_fixes),
            }
            if self.spec_result is not None:
                spec.update(_spec_result_json(self.spec_result))
        return {
            "command": "config-check",
            "verdict": self.verdict.word,
            "exit_code": self.exit_code,
            "deployment": self.deployment.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "spec": spec,
        }


# ----------------------------------------------------------------------------------------
# Reading files
# ----------------------------------------------------------------------------------------


def _read_text(path: str | Path, what: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc
    if b"\x00" in data:
        raise ConfigError(
            f"the {what} {path} is not text (it contains NUL bytes); give the log or argument file itself"
        )
    return data.decode("utf-8", errors="replace")


def _int_from_digits(text: str) -> int:
    """'1,048,576' or '1048576' -> 1048576 (vLLM prints its capacities with commas)."""
    return int(text.replace(",", ""))


def parse_token_count(text: str, *, engine: str) -> int:
    """A token count as the engine's own argument parser reads it: '1048576', '1M', '1Mi', '1K'.

    The suffixes differ between the engines, and the difference is a trap: in SGLang
    (utils/common.py::human_readable_int) 'M' is 10**6 and 'Mi' is 2**20; in vLLM
    (utils/argparse_utils.py::human_readable_int) 'm' is 10**6 and 'M' is 2**20.
    """
    value = text.strip().replace("_", "")
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if engine == VLLM:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
        if m:
            number, suffix = m.groups()
            if suffix.islower():
                return int(Decimal(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
            if "." not in number:
                return int(number) * 2 ** (10 * "KMGT".index(suffix) + 10)
    else:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
        if m:
            number, suffix = m.groups()
            if suffix.endswith("i"):
                if "." not in number:
                    return int(number) * 2 ** (10 * "KMGT".index(suffix[0]) + 10)
            else:
                return int(Decimal(number) * 10 ** (3 * "kMGT".index(suffix) + 3))
    raise ConfigError(
        f"{text!r} is not a token count that {engine} accepts: use a plain integer"
        + (
            " or a suffix like 1M (10**6) or 1Mi (2**20)"
            if engine == SGLANG
            else " or a suffix like 1m (10**6) or 1M (2**20)"
        )
    )


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    return None


def _int_value(value: Any, engine: str) -> int | None:
    """An int, or a string the engine's parser reads as one (a command-line value); else None."""
    if isinstance(value, str):
        return parse_token_count(value, engine=engine)
    return _as_int(value)


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _repr_dict(body: str) -> dict[str, Any]:
    """The top-level keys of a dict printed by Python (`server_args={...}`, `non-default args: {...}`).

    Values that are not literals (enums, config objects) are skipped: only ints, bools, None
    and strings are read, which is all a check needs.
    """
    body = body.strip()
    try:
        value = ast.literal_eval(body)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    out: dict[str, Any] = {}
    pattern = re.compile(
        r"""(?:['"](?P<k1>\w+)['"]\s*:\s*|(?<![\w.])(?P<k2>\w+)=)(?P<v>None|True|False|-?\d+|'[^']*'|"[^"]*")"""
    )
    for m in pattern.finditer(body):
        key = m.group("k1") or m.group("k2")
        if key in out:
            continue  # the first occurrence is the outermost one in these dumps
        raw = m.group("v")
        out[key] = ast.literal_eval(raw)
    return out


# SGLang start-up lines (python/sglang/srt/..., 0.5.19 and 0.5.23 alike unless noted).
#: entrypoints/engine.py: `logger.info(f"server_args={server_args.resolved_dict()}")`, once per launch.
_SG_ARGS = re.compile(r"server_args=(?P<body>(?:\{|ServerArgs\().*)$")
#: managers/scheduler.py::Scheduler.init_model_worker, on TP rank 0 of each scheduler:
#: "max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
#: max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB".
_SG_SCHED = re.compile(r"max_total_num_tokens=(?P<pool>\d+),.*?\bcontext_len=(?P<ctx>\d+)")
#: managers/tp_worker.py::TpModelWorker.get_worker_info, new in 0.5.23, on every TP rank when
#: kv_capacity < context_len: "KV pool holds %d tokens, fewer than --context-length %d. ...".
_SG_WARN = re.compile(
    r"KV pool holds (?P<pool>\d+) tokens, fewer than --context-length (?P<ctx>\d+)\."
)
#: mem_cache/memory_pool.py::KVCache._finalize_allocation_log: "KV Cache is allocated. dtype: %s,
#: #tokens: %d, KV size: %.2f GB" (a labelled cache, e.g. "SWA KV Cache", is another pool).
_SG_ALLOC = re.compile(r"\] KV Cache is allocated\. dtype: [^,]*, #tokens: (?P<pool>\d+),")
#: model_executor/model_runner_components/kv_pool_runtime.py, after a post-capture resize:
#: "Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, ...".
_SG_POSTCAP = re.compile(
    r"Post-capture KV sizing: KV cache allocated\. dtype: [^,]*, #tokens: (?P<pool>\d+),"
)
#: utils/common.py::configure_logger: "[%(asctime)s DP0 TP0] %(message)s"; the DP label is there
#: when the scheduler has a data-parallel rank (managers/scheduler.py::run_scheduler_process).
_SG_DP = re.compile(r"\[[^\]]*?(?<![A-Z_])DP(?P<dp>\d+)\b[^\]]*\]")

# vLLM 0.33.0 start-up lines.
#: entrypoints/common/startup.py::log_version_and_model (with VLLM_DISABLE_LOG_LOGO).
_VL_VERSION = re.compile(r"vLLM server version (?P<ver>[^\s,]+)")
#: entrypoints/common/startup.py::log_non_default_args: "non-default args: {...}".
_VL_ARGS = re.compile(r"non-default args: (?P<body>\{.*\})\s*$")
#: config/model.py::ModelConfig.get_and_verify_max_len: "Using max model len %s".
_VL_MAXLEN = re.compile(r"Using max model len (?P<len>\d+)")
#: v1/engine/core.py::EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: ...,
#: max_seq_len=%d, ...".
_VL_ENGINE = re.compile(
    r"Initializing a V1 LLM engine \(v(?P<ver>[^)]+)\) with config: .*?\bmax_seq_len=(?P<len>\d+)"
)
#: v1/core/kv_cache_utils.py::update_kv_cache_capacity, once per engine core (per DP rank):
#: "GPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,048,576 tokens per request: 2.00x".
_VL_CAPACITY = re.compile(r"\b[A-Z]+(?: \+ host)? KV cache size: (?P<tok>[\d,]+) tokens")
_VL_CONCURRENCY = re.compile(
    r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x"
)
#: vLLM's log prefix "(EngineCore_DP1 pid=...)" (logger.py::_FORMAT).
_VL_DP = re.compile(r"\((?:EngineCore|[A-Za-z]+)_DP(?P<dp>\d+) pid=")

_SGLANG_MARKERS = (_SG_ARGS, _SG_SCHED, _SG_WARN, _SG_ALLOC, _SG_POSTCAP)
_VLLM_MARKERS = (_VL_VERSION, _VL_ARGS, _VL_MAXLEN, _VL_ENGINE, _VL_CAPACITY, _VL_CONCURRENCY)


def detect_log_engine(text: str) -> str | None:
    """'sglang' or 'vllm' by the start-up lines the log contains, or None when it has neither."""
    if any(p.search(text) for p in (_SG_SCHED, _SG_WARN, _SG_ALLOC, _SG_POSTCAP)) or re.search(
        r"server_args=\{", text
    ):
        return SGLANG
    if any(p.search(text) for p in _VLLM_MARKERS):
        return VLLM
    return None


def _last_startup(lines: list[str], markers: tuple[re.Pattern[str], ...]) -> int:
    """Index of the last line that begins a start-up (so a restarted server is judged by its last run)."""
    start = 0
    for i, line in enumerate(lines):
        if any(m.search(line) for m in markers):
            start = i
    return start


def _at(where: str, key: str) -> str:
    """Where a figure was read: 'args.sh: --page-size' on a command line, 'x.log:3 server_args page_size' elsewhere."""
    if where.endswith("--"):
        return where + key.replace("_", "-")
    return f"{where} {key}"


def _sglang_args_reading(values: dict[str, Any], reading: NodeReading, where: str) -> None:
    """Fill a reading from SGLang server-argument values (a resolved dict or a parsed command line)."""
    ctx = _int_value(values.get("context_length"), SGLANG)
    if ctx is not None and ctx > 0:
        reading.context_length = Figure(ctx, _at(where, "context_length"))
    page = _int_value(values.get("page_size"), SGLANG)
    if page is not None and page > 0:
        reading.page_size = Figure(page, _at(where, "page_size"))
    mode = values.get("disaggregation_mode")
    if mode in (PREFILL, DECODE):
        reading.role = mode
    truncate = _as_bool(values.get("allow_auto_truncate"))
    if truncate is not None:
        reading.allow_auto_truncate = truncate
    dp = _int_value(values.get("dp_size"), SGLANG)
    attn_dp = _int_value(values.get("attn_dp_size"), SGLANG)
    if dp is not None:
        # 0.5.23: one scheduler (and one KV pool) per dp_size * attn_dp_size rank
        # (runtime_context.num_dp_ranks_of); 0.5.19: one per dp_size rank, with or without
        # --enable-dp-attention.
        ranks = dp * (attn_dp or 1)
        reading.dp_ranks = Figure(
            ranks, _at(where, "dp_size") + (" * attn_dp_size" if attn_dp else "")
        )
    bound = _int_value(values.get("max_total_tokens"), SGLANG)
    if bound is not None:
        reading.looked_for.setdefault(
            "pool_tokens",
            f"--max-total-tokens {bound} is only an upper bound: the pool is the smaller of it and "
            "what fits in GPU memory, known at start-up",
        )


def read_sglang_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one SGLang server's start-up log (0.5.19 to 0.5.23).

    Figures, from the last start-up in the file (the last `server_args=` line on):
    - the KV pool size: 0.5.23's warning "KV pool holds N tokens, fewer than --context-length C"
      (tp_worker.py::TpModelWorker.get_worker_info; N is exactly the kv_capacity that bounds
      `max_req_input_len`), else the scheduler line "max_total_num_tokens=N, ..., context_len=C"
      (scheduler.py::Scheduler.init_model_worker), else "KV Cache is allocated ... #tokens: N"
      (memory_pool.py::KVCache._finalize_allocation_log). With several data-parallel ranks, the
      smallest pool is the one that decides.
    - the context length: `context_len=` of the scheduler line (the effective value, from
      --context-length or the model's config.json), else `'context_length'` of `server_args=`.
    - the page size, data-parallel width, role and --allow-auto-truncate: from `server_args=`.
    """
    reading = NodeReading(origin=path, kind="SGLang log", engine=SGLANG)
    lines = text.splitlines()
    start = _last_startup(lines, (_SG_ARGS,))
    where_start = f" after the start-up at line {start + 1}" if start else ""

    sched: list[tuple[int, int, int, str | None]] = []  # (line no, pool, ctx, dp label)
    warns: list[tuple[int, int, int]] = []
    allocs: list[tuple[int, int]] = []
    postcaps: list[tuple[int, int]] = []
    for i in range(start, len(lines)):
        line = lines[i]
        no = i + 1
        m = _SG_ARGS.search(line)
        if m:
            _sglang_args_reading(_repr_dict(m.group("body")), reading, f"{path}:{no} server_args")
            continue
        m = _SG_SCHED.search(line)
        if m:
            dp = _SG_DP.search(line)
            sched.append(
                (no, int(m.group("pool")), int(m.group("ctx")), dp.group("dp") if dp else None)
            )
            continue
        m = _SG_WARN.search(line)
        if m:
            warns.append((no, int(m.group("pool")), int(m.group("ctx"))))
            continue
        m = _SG_POSTCAP.search(line)
        if m:
            postcaps.append((no, int(m.group("pool"))))
            continue
        m = _SG_ALLOC.search(line)
        if m:
            allocs.append((no, int(m.group("pool"))))

    if warns:
        no, pool, ctx = min(warns, key=lambda w: w[1])
        reading.pool_tokens = Figure(pool, f'{path}:{no} ("KV pool holds {pool} tokens")')
        reading.context_length = Figure(
            ctx, f"{path}:{no} (--context-length in the KV pool warning)"
        )
    if sched:
        no, pool, ctx, _ = min(sched, key=lambda s: s[1])
        ranks = {s[3] for s in sched if s[3] is not None}
        note = f", smallest of {len(ranks)} data-parallel ranks" if len(ranks) > 1 else ""
        if reading.pool_tokens is None:
            reading.pool_tokens = Figure(pool, f"{path}:{no} (max_total_num_tokens{note})")
        reading.context_length = Figure(ctx, f"{path}:{no} (context_len)")
    if reading.pool_tokens is None and (postcaps or allocs):
        no, pool = min(postcaps or allocs, key=lambda a: a[1])
        reading.pool_tokens = Figure(pool, f"{path}:{no} (KV cache allocated, #tokens)")

    reading.looked_for.setdefault(
        "pool_tokens",
        f'no "max_total_num_tokens=", "KV pool holds" or "KV Cache is allocated ... #tokens:" line{where_start}',
    )
    reading.looked_for.setdefault(
        "context_length",
        f'no "context_len=" in a "max_total_num_tokens=" line and no \'context_length\' in "server_args="{where_start}',
    )
    reading.looked_for.setdefault(
        "page_size", f"no 'page_size' in a \"server_args=\" line{where_start}"
    )
    return reading


def read_vllm_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one vLLM 0.33.0 server's start-up log.

    Figures, from the last start-up in the file:
    - the KV pool: "GPU KV cache size: N tokens, Maximum concurrency for M tokens per request"
      (v1/core/kv_cache_utils.py::update_kv_cache_capacity). N is `int(concurrency * M)` where
      concurrency = num_gpu_blocks / blocks per max_model_len request
      (get_max_concurrency_for_kv_cache_config), so it already counts whole blocks: the page
      rounding is in it. With several data-parallel engines, the smallest decides.
    - max_model_len: "Using max model len M" (config/model.py::ModelConfig.get_and_verify_max_len),
      else `max_seq_len=` of "Initializing a V1 LLM engine (vX) with config:", else M above.
    - the block size, when set, and the data-parallel width: "non-default args: {...}".
    """
    reading = NodeReading(origin=path, kind="vLLM log", engine=VLLM, pool_in_whole_blocks=True)
    lines = text.splitlines()
    start = _last_startup(lines, (_VL_VERSION, _VL_ARGS))
    where_start = f" after the start-up at line {start + 1}" if start else ""
    caps: list[tuple[int, int]] = []
    maxlen: Figure | None = None
    engine_len: Figure | None = None
    conc_len: Figure | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        no = i + 1
        m = _VL_VERSION.search(line)
        if m:
            reading.engine_version = m.group("ver")
        m = _VL_ARGS.search(line)
        if m:
            values = _repr_dict(m.group("body"))
            _vllm_args_reading(values, reading, f"{path}:{no} non-default args", from_log=True)
        m = _VL_MAXLEN.search(line)
        if m:
            maxlen = Figure(int(m.group("len")), f"{path}:{no} (Using max model len)")
        m = _VL_ENGINE.search(line)
        if m:
            reading.engine_version = reading.engine_version or m.group("ver")
            engine_len = Figure(int(m.group("len")), f"{path}:{no} (max_seq_len)")
        m = _VL_CAPACITY.search(line)
        if m:
            caps.append((no, _int_from_digits(m.group("tok"))))
        m = _VL_CONCURRENCY.search(line)
        if m:
            conc_len = Figure(_int_from_digits(m.group("len")), f"{path}:{no} (tokens per request)")
    if caps:
        no, tok = min(caps, key=lambda c: c[1])
        note = f", smallest of {len(caps)} engines" if len(caps) > 1 else ""
        reading.pool_tokens = Figure(tok, f"{path}:{no} (KV cache size{note})")
    reading.context_length = maxlen or engine_len or conc_len or reading.context_length
    reading.looked_for.setdefault("pool_tokens", f'no "KV cache size: N tokens" line{where_start}')
    reading.looked_for.setdefault(
        "context_length",
        f'no "Using max model len", "max_seq_len=" or "Maximum concurrency for M tokens" line{where_start}',
    )
    return reading


def _vllm_args_reading(
    values: dict[str, Any], reading: NodeReading, where: str, *, from_log: bool = False
) -> None:
    """Fill a reading from vLLM engine arguments (non-default args, a JSON dump, a command line)."""
    raw_len = values.get("max_model_len")
    max_len = (
        -1
        if isinstance(raw_len, str) and raw_len.strip().lower() == "auto"
        else _int_value(raw_len, VLLM)
    )
    if max_len is not None:
        if max_len > 0:
            reading.context_length = Figure(max_len, _at(where, "max_model_len"))
        else:
            reading.looked_for["context_length"] = (
                "max_model_len is -1 (auto-fit): the value is decided at start-up; give the start-up log"
            )
    block = _int_value(values.get("block_size"), VLLM)
    if block is not None and block > 0:
        reading.page_size = Figure(block, _at(where, "block_size"))
    dp = _int_value(values.get("data_parallel_size"), VLLM)
    if dp is not None:
        reading.dp_ranks = Figure(dp, _at(where, "data_parallel_size"))
    blocks = _int_value(values.get("num_gpu_blocks_override"), VLLM)
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
        except ValueError:
            kv = None
    if isinstance(kv, dict):
        role = {"kv_producer": PREFILL, "kv_consumer": DECODE}.get(str(kv.get("kv_role")))
        if role:
            reading.role = role


#: Command-line spellings that mean the same server argument.
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
            values = json.loads(stripped)
        except ValueError as exc:
            raise ConfigError(
                f"{path} starts like JSON but is not JSON ({exc}); give a JSON dump of the server arguments or the launch command line"
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
            pool = _as_int(values.get("max_total_num_tokens"))
            if pool is not None:
                reading.pool_tokens = Figure(
                    pool, f"{path}: max_total_num_tokens (data-parallel rank 0)"
                )
            limit = _as_int(values.get("max_req_input_len"))
            if limit is not None:
                reading.max_req_input_len = Figure(limit, f"{path}: max_req_input_len")
            if isinstance(values.get("version"), str):
                reading.engine_version = values["version"]
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


def read_log(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read an SGLang or vLLM start-up log from a file, telling the engine from its lines."""
    text = _read_text(path, "log")
    found = engine or detect_log_engine(text)
    if found is None:
        raise ConfigError(
            f"{path} does not look like an SGLang or vLLM start-up log: it has none of the lines "
            '"max_total_num_tokens=", "KV Cache is allocated", "server_args=" (SGLang) or '
            '"KV cache size:", "Using max model len" (vLLM); give the whole start-up log'
        )
    reader = read_sglang_log if found == SGLANG else read_vllm_log
    return _naming_the_file(path, lambda: reader(text, path=str(path)))


def read_args_file(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read a launch command line or a JSON dump of server arguments from a file."""
    text = _read_text(path, "argument file")
    return _naming_the_file(path, lambda: read_server_args(text, path=str(path), engine=engine))


def _naming_the_file(path: str | Path, read: Callable[[], NodeReading]) -> NodeReading:
    """Run a reader; a ConfigError about a value (e.g. '--context-length abc') then names the file."""
    try:
        return read()
    except ConfigError as exc:
        if str(path) in str(exc):
            raise
        raise ConfigError(f"{path}: {exc}") from exc


# ----------------------------------------------------------------------------------------
# Versions
# ----------------------------------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int, int, int]:
    """'0.5.19', 'v0.5.21.post1', '0.5.21rc1' -> a sortable key; a pre-release sorts before its release."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(.*)", text.strip())
    if not m:
        raise ConfigError(f"--version {text!r} is not an SGLang release like 0.5.23")
    major, minor, patch, rest = m.groups()
    pre = 0 if re.match(r"[.-]?(rc|a|b|alpha|beta|dev)", rest) else 1
    return int(major), int(minor), int(patch), pre


def _older(a: str, b: str) -> str:
    return a if parse_version(a) <= parse_version(b) else b


# ----------------------------------------------------------------------------------------
# Merging readings into a deployment
# ----------------------------------------------------------------------------------------


def _merge(readings: list[NodeReading]) -> NodeReading:
    """Field by field, the first reading that has a figure wins (readings come in precedence order)."""
    merged = NodeReading(origin="+".join(r.origin for r in readings), kind="merged")
    for name in (
        "engine",
        "role",
        "engine_version",
        "context_length",
        "pool_tokens",
        "page_size",
        "max_req_input_len",
        "dp_ranks",
        "allow_auto_truncate",
    ):
        for r in readings:
            value = getattr(r, name)
            if value is not None:
                setattr(merged, name, value)
                if name == "pool_tokens":
                    merged.pool_in_whole_blocks = r.pool_in_whole_blocks
                break
    return merged


def _missing_message(role: str, figure: str, readings: list[NodeReading], option: str) -> str:
    words = FIGURE_WORDS[figure]
    files = [r for r in readings if r.kind != "options"]
    if not files:
        return f"the {role} {words} was not given: pass --{role}-log, --{role}-args or {option}"
    where = "; ".join(f"not in {r.origin} ({r.looked_for.get(figure, 'not there')})" for r in files)
    return f"the {role} {words} was not found: {where}. Give it with {option}"


def _missing_figures(
    role: str,
    merged: NodeReading,
    readings: list[NodeReading],
    engine: str,
    explicit_context: Figure | None,
) -> list[str]:
    """One message per figure that no input of this node gave."""
    missing: list[str] = []
    if merged.context_length is None and explicit_context is None:
        missing.append(_missing_message(role, "context_length", readings, "--context-length"))
    if merged.pool_tokens is None:
        missing.append(_missing_message(role, "pool_tokens", readings, f"--{role}-pool-tokens"))
    if merged.page_size is None and not (engine == VLLM and merged.pool_in_whole_blocks):
        missing.append(_missing_message(role, "page_size", readings, "--page-size"))
    return missing


def _check_role(role: str, merged: NodeReading, readings: list[NodeReading]) -> None:
    if merged.role is not None and merged.role != role:
        source = next(r.origin for r in readings if r.role is not None)
        raise ConfigError(
            f"{source} belongs to a {merged.role} node (its own configuration says so) but was given as the {role} input; swap --prefill-* and --decode-*"
        )


def _resolve_node(
    role: str, merged: NodeReading, engine: str, explicit_context: Figure | None
) -> NodeConfig:
    """A node's figures, all present (checked by _missing_figures first), with its input limit."""
    context = merged.context_length or explicit_context
    assert context is not None and merged.pool_tokens is not None
    for name, fig in (
        ("context length", context),
        ("KV pool size", merged.pool_tokens),
        ("page size", merged.page_size),
    ):
        if fig is not None and fig.value <= 0:
            raise ConfigError(
                f"the {role} {name} is {fig.value} ({fig.source}); it must be a positive number of tokens"
            )

    if engine == SGLANG:
        if merged.max_req_input_len is not None:
            limit = merged.max_req_input_len
        else:
            value = min(context.value - 1, merged.pool_tokens.value - 1) - SGLANG_INPUT_SLACK
            limit = Figure(
                value, "min(context_len - 1, kv_capacity - 1) - 5 (TpModelWorker.get_worker_info)"
            )
    else:
        # A generate request of max_model_len prompt tokens has no room for an output token
        # (v1/engine/input_processor.py::InputProcessor._validate_prompt_len rejects it).
        limit = Figure(context.value, "max_model_len (InputProcessor._validate_prompt_len)")
    return NodeConfig(
        role=role,
        engine=engine,
        context_length=context,
        pool_tokens=merged.pool_tokens,
        page_size=merged.page_size,
        input_limit=limit,
        dp_ranks=merged.dp_ranks,
        allow_auto_truncate=merged.allow_auto_truncate,
        engine_version=merged.engine_version,
    )


def build_deployment(
    *,
    prefill_log: str | Path | None = None,
    prefill_args: str | Path | None = None,
    decode_log: str | Path | None = None,
    decode_args: str | Path | None = None,
    engine: str | None = None,
    context_length: int | None = None,
    prefill_pool_tokens: int | None = None,
    decode_pool_tokens: int | None = None,
    page_size: int | None = None,
    version: str | None = None,
) -> Deployment:
    """Read every input and merge it into a Deployment; ConfigError names any figure not found.

    Precedence, per figure: a number given here, then the start-up log, then the launch
    arguments. `context_length` is the advertised window; without it the advertised window is
    the larger of the two nodes' context lengths. `version` is the SGLang release; without it,
    the `version` of a /server_info dump (the older of the two nodes when they differ).
    """
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    if version is not None:
        parse_version(version)  # fail early on a malformed release

    per_role: dict[str, list[NodeReading]] = {}
    for role, log, args, pool in (
        (PREFILL, prefill_log, prefill_args, prefill_pool_tokens),
        (DECODE, decode_log, decode_args, decode_pool_tokens),
    ):
        options = NodeReading(origin="options", kind="options", engine=None)
        if pool is not None:
            options.pool_tokens = Figure(pool, f"--{role}-pool-tokens")
        if page_size is not None:
            options.page_size = Figure(page_size, "--page-size")
        readings = [options]
        if log is not None:
            readings.append(read_log(log, engine=engine))
        if args is not None:
            readings.append(read_args_file(args, engine=engine))
        per_role[role] = readings

    engines = {r.engine for rs in per_role.values() for r in rs if r.engine is not None}
    if engine is None:
        if len(engines) > 1:
            where = ", ".join(
                f"{r.origin} is {r.engine}" for rs in per_role.values() for r in rs if r.engine
            )
            raise ConfigError(
                f"the inputs disagree about the engine ({where}); a disaggregated deployment runs one engine"
            )
        engine = engines.pop() if engines else SGLANG

    explicit_context = (
        Figure(context_length, "--context-length") if context_length is not None else None
    )
    merged = {role: _merge(per_role[role]) for role in ROLES}
    for role in ROLES:
        _check_role(role, merged[role], per_role[role])
    missing = [
        line
        for role in ROLES
        for line in _missing_figures(role, merged[role], per_role[role], engine, explicit_context)
    ]
    if len(missing) == 1:
        raise ConfigError(missing[0])
    if missing:
        raise ConfigError(f"{len(missing)} figures were not found:\n  - " + "\n  - ".join(missing))
    prefill = _resolve_node(PREFILL, merged[PREFILL], engine, explicit_context)
    decode = _resolve_node(DECODE, merged[DECODE], engine, explicit_context)

    if explicit_context is not None:
        advertised = explicit_context
    elif prefill.context_length.value >= decode.context_length.value:
        advertised = Figure(
            prefill.context_length.value, f"largest node context: {prefill.context_length.source}"
        )
    else:
        advertised = Figure(
            decode.context_length.value, f"largest node context: {decode.context_length.source}"
        )

    version_source: str | None = None
    if version is not None:
        version_source = "--version"
    elif engine == SGLANG:
        known = [(n.engine_version, n.role) for n in (prefill, decode) if n.engine_version]
        if known:
            version = known[0][0]
            for v, _ in known[1:]:
                assert v is not None
                version = _older(version, v)
            version_source = "/server_info version" + (
                " (the older node)" if len({v for v, _ in known}) > 1 else ""
            )
    return Deployment(
        engine=engine,
        advertised_context=advertised,
        prefill=prefill,
        decode=decode,
        version=version,
        version_source=version_source,
    )


# ----------------------------------------------------------------------------------------
# The checks
# ----------------------------------------------------------------------------------------


def _n(value: int) -> str:
    return f"{value:,}"


def check_pool_holds_context(deployment: Deployment, role: str) -> CheckOutcome:
    """The node's KV pool, per data-parallel rank, holds one request of the advertised window.

    Each data-parallel rank of a node has its own pool and a request lives on one rank, so a
    pool summed over ranks says nothing: the per-rank figure must hold the whole window.
    """
    node = deployment.node(role)
    need = deployment.advertised_context.value
    have = node.pool_tokens.value
    shortfall = max(0, need - have)
    numbers = {
        "context_length": need,
        "pool_tokens": have,
        "shortfall_tokens": shortfall,
        "data_parallel_ranks": node.dp_ranks.value if node.dp_ranks else None,
        "rejects_prompts_from": node.input_limit.value,
    }
    if have >= need:
        return CheckOutcome(
            f"{role}-pool-holds-context",
            CheckVerdict.PASS,
            numbers,
            f"the {role} pool holds {_n(have)} tokens per data-parallel rank, at least the advertised {_n(need)}: a full-length request fits",
        )
    return CheckOutcome(
        f"{role}-pool-holds-context",
        CheckVerdict.FAIL,
        numbers,
        f"the {role} pool holds {_n(have)} tokens per data-parallel rank, {_n(shortfall)} fewer than the advertised {_n(need)}: "
        f"{role} rejects prompts of {_n(node.input_limit.value)} tokens or more that the window admits",
    )


def check_input_limits_agree(deployment: Deployment) -> CheckOutcome:
    """Prefill and decode reject the same prompt lengths.

    With asymmetric limits a prompt between them is rejected on one side only; in SGLang the
    rejecting side replaces it with a one-token placeholder while the other side goes on with
    the full prompt. That is how the incident's placeholder was born (sglang-pd.md section 9).
    """
    p, d = deployment.prefill, deployment.decode
    lo, hi = sorted((p.input_limit.value, d.input_limit.value))
    numbers = {
        "prefill_rejects_from": p.input_limit.value,
        "decode_rejects_from": d.input_limit.value,
        "prefill_longest_prompt": p.longest_prompt,
        "decode_longest_prompt": d.longest_prompt,
        "gap_tokens": hi - lo,
    }
    if lo == hi:
        return CheckOutcome(
            "input-limits-agree",
            CheckVerdict.PASS,
            numbers,
            f"prefill and decode both serve prompts of up to {_n(p.longest_prompt)} tokens: no prompt is rejected on one side only",
        )
    narrow, wide = (
        (PREFILL, DECODE) if p.input_limit.value < d.input_limit.value else (DECODE, PREFILL)
    )
    return CheckOutcome(
        "input-limits-agree",
        CheckVerdict.FAIL,
        numbers,
        f"{narrow} rejects prompts of {_n(lo)} tokens or more while {wide} serves up to {_n(hi - 1)}: "
        f"a prompt in between is rejected on {narrow} only, the asymmetry that made the incident's one-token placeholder",
    )


def check_nodes_serve_the_window(deployment: Deployment) -> CheckOutcome:
    """Each node's own context length is at least the advertised window.

    A node refuses a prompt of its context length or more at the door of its tokenizer
    (managers/tokenizer_manager.py for SGLang, InputProcessor._validate_prompt_len for vLLM),
    whatever its pool holds: the documentation's window must be the one the nodes run with.
    """
    window = deployment.advertised_context.value
    numbers = {
        "context_length": window,
        "prefill_context": deployment.prefill.context_length.value,
        "decode_context": deployment.decode.context_length.value,
    }
    short = [n for n in (deployment.prefill, deployment.decode) if n.context_length.value < window]
    if not short:
        return CheckOutcome(
            "nodes-serve-the-window",
            CheckVerdict.PASS,
            numbers,
            f"both nodes run with a context length of at least the advertised {_n(window)} tokens",
        )
    said = "; ".join(
        f"{n.role} runs with {_n(n.context_length.value)} ({n.context_length.source})"
        for n in short
    )
    return CheckOutcome(
        "nodes-serve-the-window",
        CheckVerdict.FAIL,
        numbers,
        f"the advertised window is {_n(window)} tokens but {said}: longer prompts are refused whatever the pools hold",
    )


def check_page_rounding(deployment: Deployment) -> CheckOutcome:
    """Whole pages of each pool hold a full-length request rounded up to pages, and the page sizes agree.

    A request of the advertised window needs ceil(context / page_size) pages, and a pool holds
    floor(pool / page_size) whole pages (the allocator hands out whole pages:
    mem_cache/allocator/paged.py::PagedTokenToKVPoolAllocator, num_pages = size // page_size).
    SGLang also refuses a prefill/decode pair with different page sizes at the first transfer
    (disaggregation/common/conn.py::CommonKVManager.try_ensure_parallel_info).
    """
    context = deployment.advertised_context.value
    numbers: dict[str, Any] = {"context_length": context}
    short: list[str] = []
    sizes: dict[str, int] = {}
    for node in (deployment.prefill, deployment.decode):
        if node.page_size is None:
            # vLLM's logged capacity already counts whole blocks per max_model_len request.
            numbers[f"{node.role}_page_size"] = None
            numbers[f"{node.role}_pages_needed"] = None
            numbers[f"{node.role}_pages_in_pool"] = None
            if node.pool_tokens.value < context:
                short.append(
                    f"{node.role} holds {_n(node.pool_tokens.value)} tokens in whole blocks, fewer than {_n(context)}"
                )
            continue
        size = node.page_size.value
        sizes[node.role] = size
        need = math.ceil(context / size)
        have = node.pool_tokens.value // size
        numbers[f"{node.role}_page_size"] = size
        numbers[f"{node.role}_pages_needed"] = need
        numbers[f"{node.role}_pages_in_pool"] = have
        if have < need:
            short.append(
                f"{node.role} has {_n(have)} whole pages of {size} tokens, a full-length request needs {_n(need)}"
            )
    if len(sizes) == 2 and sizes[PREFILL] != sizes[DECODE]:
        return CheckOutcome(
            "page-rounding-fits-prompt",
            CheckVerdict.FAIL,
            numbers,
            f"prefill pages hold {sizes[PREFILL]} tokens but decode pages hold {sizes[DECODE]}: page counts cannot agree, and SGLang refuses the pair at the first transfer",
        )
    if short:
        return CheckOutcome(
            "page-rounding-fits-prompt", CheckVerdict.FAIL, numbers, "; ".join(short)
        )
    return CheckOutcome(
        "page-rounding-fits-prompt",
        CheckVerdict.PASS,
        numbers,
        f"rounded up to whole pages, a request of {_n(context)} tokens fits in both pools",
    )


def _pool_bound(node: NodeConfig) -> bool:
    """The node's input limit comes from its pool, not from its context length."""
    return node.input_limit.value < node.context_length.value - 1 - SGLANG_INPUT_SLACK


def _gap(deployment: Deployment) -> tuple[int, int] | None:
    """Prompt lengths [lo, hi) that the advertised window admits but some node's pool rejects.

    hi is the limit a node has when its pool holds the window, context - 1 - 5: the prompts
    above it are SGLang's own slack, rejected by both nodes alike, not a gap. A prompt of the
    node's context length or more never reaches its scheduler (the tokenizer manager rejects it,
    managers/tokenizer_manager.py), so only a pool-bound limit opens a gap.
    """
    hi = deployment.advertised_context.value - 1 - SGLANG_INPUT_SLACK
    bound = [n.input_limit.value for n in (deployment.prefill, deployment.decode) if _pool_bound(n)]
    if not bound or min(bound) >= hi:
        return None
    return min(bound), hi


#: What each release does with a prompt in the gap, by which node rejects it (sglang-pd.md).
_BEHAVIOUR_WORDS = {
    "served-with-stale-kv": "sends the one-page placeholder and decode attends over pages holding other requests' KV (the incident: HTTP 200, a cross-request leak)",
    "served-wrongly": "lets decode admit its own rejected placeholder (pop_preallocated checks finished, not rejected) into a one-page reservation while prefill computes and sends the whole prompt, which the transfer truncates",
    "served-placeholder": "serves the one-token placeholder on both nodes: HTTP 200 with a reply to a prompt the client never sent",
    "held-until-timeout": "retires them after the prefill forward but tells decode nothing (sender.abort is local), so decode holds the reserved pages until its 300 s timeout",
    "rejected-at-door": "retires them at the intake door before bootstrap, allocation and transfer (HTTP 400)",
}


def _release_behaviour(key: tuple[int, int, int, int], rejecting: str) -> str:
    """The release table of ../shared/domain/sglang-pd.md, for a prompt rejected by `rejecting`."""
    if key >= (*SGLANG_DOOR_RELEASE, 1):
        return "rejected-at-door"  # #38935: doors on prefill and decode
    if rejecting == DECODE:
        return "served-wrongly"  # decode's pop_preallocated tests finished_reason only, to 0.5.23
    if key >= (*SGLANG_RETIRE_RELEASE, 1):
        return "held-until-timeout"  # #36988: post-forward retire on prefill
    return "served-with-stale-kv" if rejecting == PREFILL else "served-placeholder"


def check_gap_behaviour(deployment: Deployment) -> CheckOutcome:
    """What the SGLang release does with a prompt that the window admits but a pool rejects.

    From the release table of ../shared/domain/sglang-pd.md: up to 0.5.19 the rejected prompt's
    one-token placeholder is served (prefill sends one page; decode, which reserved pages for
    the whole prompt, attends over stale KV of earlier requests: the incident); in 0.5.20
    prefill retires it after the forward but tells decode nothing, so decode holds its pages
    until SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s); from 0.5.21 both intake doors retire it
    before bootstrap, allocation and transfer, and the client gets HTTP 400.
    With --allow-auto-truncate on the narrower node the prompt is truncated, not rejected, and no
    release checks the transferred length at commit (#38704 is open in 0.5.23) [inferred].
    """
    p, d = deployment.prefill, deployment.decode
    gap = _gap(deployment)
    numbers: dict[str, Any] = {
        "version": deployment.version,
        "gap_from_tokens": gap[0] if gap else None,
        "gap_to_tokens": gap[1] - 1 if gap else None,
        "prefill_rejects_from": p.input_limit.value,
        "decode_rejects_from": d.input_limit.value,
        "behaviour": "none",
    }
    name = "engine-gap-behaviour"
    if gap is None:
        return CheckOutcome(
            name,
            CheckVerdict.PASS,
            numbers,
            "no prompt within the advertised window is rejected for want of pool, so the rejection path is never taken by a valid prompt",
        )
    lo, hi = gap
    span = f"prompts of {_n(lo)} to {_n(hi - 1)} tokens"
    if p.input_limit.value < d.input_limit.value:
        rejecting, who = PREFILL, "prefill rejects them and decode accepts them"
    elif d.input_limit.value < p.input_limit.value:
        rejecting, who = DECODE, "decode rejects them and prefill accepts them"
    else:
        rejecting, who = "both", "both nodes reject them"
    narrow = deployment.node(rejecting) if rejecting in ROLES else None
    if narrow is not None and narrow.allow_auto_truncate:
        numbers["behaviour"] = "truncated-on-one-side"
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"{span}: {narrow.role} truncates them (--allow-auto-truncate) while the other node keeps the whole prompt, so the nodes disagree on the page count, which no release checks at commit",
        )
    if deployment.version is None:
        numbers["behaviour"] = "unknown"
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"{span}: {who}; the SGLang release is not known, so the outcome cannot be ruled safe (up to 0.5.19 it is a cross-request leak): pass --version",
        )
    key = parse_version(deployment.version)
    table_note = ""
    if key[:3] < SGLANG_TABLE_RELEASES[0]:
        table_note = " (older than the release table, so as 0.5.19)"
    elif key[:3] > SGLANG_TABLE_RELEASES[1]:
        table_note = " (newer than the release table, so as 0.5.23)"
    behaviour = _release_behaviour(key, rejecting)
    numbers["behaviour"] = behaviour
    verdict = CheckVerdict.PASS if behaviour == "rejected-at-door" else CheckVerdict.FAIL
    return CheckOutcome(
        name,
        verdict,
        numbers,
        f"{span}: {who}; SGLang {deployment.version}{table_note} {_BEHAVIOUR_WORDS[behaviour]}",
    )


def run_checks(deployment: Deployment) -> ConfigReport:
    """Every check for a deployment, in a fixed order (the gap check only for SGLang)."""
    checks = [
        check_pool_holds_context(deployment, PREFILL),
        check_pool_holds_context(deployment, DECODE),
        check_input_limits_agree(deployment),
        check_nodes_serve_the_window(deployment),
        check_page_rounding(deployment),
    ]
    if deployment.engine == SGLANG:
        checks.append(check_gap_behaviour(deployment))
    return ConfigReport(deployment=deployment, checks=tuple(checks))


def check_config(**inputs: Any) -> ConfigReport:
    """build_deployment(**inputs), then run_checks: the whole command without the printing."""
    return run_checks(build_deployment(**inputs))


# ----------------------------------------------------------------------------------------
# --spec: the deployment scaled down to the shipped spec's parameters
# ----------------------------------------------------------------------------------------


def _band(pages: int, context_pages: int) -> int:
    """0: below the window, 1: exactly the window, 2: between one and two windows, 3: two or more."""
    if pages < context_pages:
        return 0
    if pages == context_pages:
        return 1
    if pages < 2 * context_pages:
        return 2
    return 3


def spec_params(deployment: Deployment, *, requests: int = SPEC_REQUESTS) -> dict[str, int]:
    """The sglang_pd spec's parameters (in model pages) that keep the deployment's inequalities.

    The advertised window becomes SPEC_CONTEXT_PAGES = 3 pages. Each pool, in whole real pages,
    is compared with the window in real pages (ceil(context / page_size)) and mapped to:
    2 pages if smaller than the window, 3 if equal, 4 if between one and two windows, 6 if two
    windows or more. When both pools fall in the same band but differ, the smaller one moves one
    page down (1 below the window, 4 and 5 between windows), so that `prefill < decode`,
    `prefill == decode` and `prefill > decode` also survive; above two windows both are 6,
    since either pool then admits every prompt the window does.
    """
    if deployment.engine != SGLANG:
        raise ConfigError(
            "--spec runs the shipped SGLang spec (specs/sglang_pd.py); this deployment is vLLM"
        )
    context = deployment.advertised_context.value
    pages: dict[str, int] = {}
    context_pages: dict[str, int] = {}
    for node in (deployment.prefill, deployment.decode):
        if node.page_size is None:
            raise ConfigError(f"--spec needs the {node.role} page size: pass --page-size")
        pages[node.role] = node.pool_tokens.value // node.page_size.value
        context_pages[node.role] = math.ceil(context / node.page_size.value)
    base = {0: 2, 1: SPEC_CONTEXT_PAGES, 2: 4, 3: 2 * SPEC_CONTEXT_PAGES}
    bands = {role: _band(pages[role], context_pages[role]) for role in ROLES}
    scaled = {role: base[bands[role]] for role in ROLES}
    if bands[PREFILL] == bands[DECODE] and bands[PREFILL] in (0, 2):
        p, d = pages[PREFILL], pages[DECODE]
        if p != d:
            smaller, larger = (PREFILL, DECODE) if p < d else (DECODE, PREFILL)
            if bands[PREFILL] == 0:
                scaled[smaller] = 1
            else:
                scaled[larger] = 5
    return {
        "requests": requests,
        "context": SPEC_CONTEXT_PAGES,
        "prefill_pool": scaled[PREFILL],
        "decode_pool": scaled[DECODE],
    }


def spec_fixes_for_release(version: str | None) -> list[str]:
    """The sglang_pd fixes a release has (the release table of ../shared/domain/sglang-pd.md).

    0.5.20 added the post-forward retire (#36988), 0.5.21 the intake door (#38935). Without a
    release, none: the model of 0.5.19, the last release without either.
    """
    if version is None:
        return []
    key = parse_version(version)
    fixes: list[str] = []
    if key >= (*SGLANG_RETIRE_RELEASE, 1):
        fixes.append("post-forward-retire")
    if key >= (*SGLANG_DOOR_RELEASE, 1):
        fixes.append("door-retire")
    return fixes


def run_spec(
    report: ConfigReport,
    *,
    fixes: list[str] | None = None,
    max_states: int | None = None,
    max_seconds: float | None = None,
) -> ConfigReport:
    """Run the shipped spec with the scaled parameters and add its outcome to the report.

    The fixes are the release's (spec_fixes_for_release) plus `fixes`. Uses ownership.api.check,
    imported here so that the checks above need no engine.
    """
    params = spec_params(report.deployment)
    chosen = spec_fixes_for_release(report.deployment.version)
    chosen += [f for f in (fixes or []) if f not in chosen]
    try:
        from ownership import api
    except ImportError as exc:
        raise ConfigError(f"--spec needs ownership.api, which is not available ({exc})") from exc
    result = api.check(
        SPEC_NAME, params=params, fixes=chosen, max_states=max_states, max_seconds=max_seconds
    )
    outcome = _spec_outcome(result, params, chosen)
    return replace(
        report,
        checks=(*report.checks, outcome),
        spec_result=result,
        spec_params=params,
        spec_fixes=tuple(chosen),
    )


def _spec_outcome(result: Any, params: dict[str, int], fixes: list[str]) -> CheckOutcome:
    numbers: dict[str, Any] = {
        **params,
        "fixes": ",".join(fixes) or "none",
        "verdict": result.verdict.word,
    }
    covered = result.coverage.describe()
    name = f"spec-{SPEC_NAME}"
    if result.verdict is Verdict.VIOLATED:
        viol = result.violation
        return CheckOutcome(
            name,
            CheckVerdict.FAIL,
            numbers,
            f"the scaled model violates {viol.property}: {viol.message}",
        )
    if result.verdict is Verdict.INCONCLUSIVE:
        return CheckOutcome(
            name,
            CheckVerdict.INCONCLUSIVE,
            numbers,
            f"the scaled model's search stopped early ({covered}): no verdict",
        )
    return CheckOutcome(
        name,
        CheckVerdict.PASS,
        numbers,
        f"the scaled model is {result.verdict.word}: no violation in {covered}",
    )


def _spec_result_json(result: Any) -> dict[str, Any]:
    """The --spec run in the report's JSON: verdict, coverage, violation, the trace's steps."""
    out: dict[str, Any] = {
        "verdict": result.verdict.word,
        "coverage": result.coverage.to_json(),
        "violation": result.violation.to_json() if result.violation is not None else None,
        "steps": [step.label() for step in result.trace.steps[1:]]
        if result.trace is not None
        else None,
        "reproduce": getattr(result, "reproduce", None),
    }
    return out
