"""Deployment checks: a disaggregated deployment's KV pools against its advertised context window.

The GLM-5.3 leak (docs/incident.md) began with a configuration that no check read: a context
window of 1,048,576 tokens over a prefill KV pool of 681,280 tokens. Prompts between the two
were rejected on prefill but accepted on decode, and SGLang 0.5.19 served them with the stale KV
of other customers. The operators' advice is to compare the pool with the window at start-up
and after every configuration change, from the real configuration. This package does that
comparison, so that a deploy pipeline can run it as one command (`ownership config-check`).

It reads the figures that the engines themselves print or are given, never guessing a number:

- SGLang (0.5.19 to 0.5.23) start-up logs of the prefill and decode nodes
  (`read_sglang_log`), SGLang launch command lines and JSON dumps of the server arguments or of
  `/server_info` (`read_server_args`);
- vLLM 0.33.0 start-up logs and `vllm serve` arguments (`read_vllm_log`, `read_server_args`);
- numbers given by hand (`build_deployment`'s keyword arguments).

Input may be huge or hostile, so reading has fixed bounds (bounds.py): a log is streamed in
chunks (memory does not grow with its size, time grows linearly), a line over MAX_LINE_BYTES is
skipped rather than cut, every pattern is matched after a literal keyword found with `str.find`
and cannot backtrack, a repr of arguments is bounded in size and nesting before ast.parse reads
it (and is never evaluated), an argument file over MAX_ARGS_BYTES is refused, and a figure over
MAX_TOKENS, zero, negative or contradicted by another line of the same start-up is refused as a
`ConfigError` naming the file and line.

`build_deployment` merges them into a typed `Deployment` (a number given by hand overrides a
log, a log overrides the launch arguments), raising `ConfigError` that names each missing figure
and the file it was not found in. `run_checks` returns a `ConfigReport`: one `CheckOutcome` per
check, each with a verdict, the numbers behind it and a one-line explanation. Nothing here prints.

`spec_params` scales a deployment down to the parameters of the shipped spec `sglang_pd`, so
that `ownership config-check --spec` can attach a counterexample trace to a failing
configuration (see docs/config-check.md for the scaling rule).

The modules, by what they read or decide:

- deployment.py: the model (engines, roles, `Figure`, `NodeReading`, `NodeConfig`, `Deployment`);
- bounds.py: the bounds on hostile input; figures.py: token counts and figure values;
- files.py: log files streamed line by line, argument files read whole within the bound;
- log_reader.py: what the two log readers share; sglang_logs.py and vllm_logs.py: one each;
  logs.py: a log of either engine;
- arg_repr.py: a repr of arguments (`server_args=`, `non-default args:`) read with ast;
- server_args.py: launch command lines, JSON dumps, and argument values made into figures;
- releases.py: SGLang releases (packaging.version) and the release table's row of each;
- merge.py: readings merged into a Deployment; checks.py: the checks; report.py: outcomes
  and the report; spec_run.py: the bridge to the spec sglang_pd.
"""

from __future__ import annotations

from ownership.errors import ConfigError
from ownership.result import Verdict

from .arg_repr import ReprNotRead, read_arg_repr
from .bounds import MAX_ARGS_BYTES, MAX_DP_RANKS, MAX_LINE_BYTES, MAX_TOKENS, brief
from .checks import (
    check_config,
    check_gap_behaviour,
    check_input_limits_agree,
    check_nodes_serve_the_window,
    check_page_rounding,
    check_pool_holds_context,
    run_checks,
)
from .deployment import (
    DECODE,
    ENGINES,
    FIGURE_WORDS,
    PREFILL,
    ROLES,
    SGLANG,
    SGLANG_INPUT_SLACK,
    VLLM,
    Deployment,
    Figure,
    NodeConfig,
    NodeReading,
)
from .figures import parse_token_count
from .logs import detect_log_engine, read_log
from .merge import build_deployment
from .releases import (
    RELEASE_FIXES,
    SGLANG_DOOR_RELEASE,
    SGLANG_RETIRE_RELEASE,
    SGLANG_TABLE_RELEASES,
    parse_version,
    release_fixes,
    table_release,
)
from .report import CheckOutcome, CheckVerdict, ConfigReport
from .server_args import read_args_file, read_server_args
from .sglang_logs import read_sglang_log
from .spec_run import (
    SPEC_CONTEXT_PAGES,
    SPEC_NAME,
    SPEC_REQUESTS,
    run_spec,
    spec_fixes_for_release,
    spec_params,
)
from .vllm_logs import read_vllm_log

__all__ = [
    "DECODE",
    "ENGINES",
    "FIGURE_WORDS",
    "MAX_ARGS_BYTES",
    "MAX_DP_RANKS",
    "MAX_LINE_BYTES",
    "MAX_TOKENS",
    "PREFILL",
    "RELEASE_FIXES",
    "ROLES",
    "SGLANG",
    "SGLANG_DOOR_RELEASE",
    "SGLANG_INPUT_SLACK",
    "SGLANG_RETIRE_RELEASE",
    "SGLANG_TABLE_RELEASES",
    "SPEC_CONTEXT_PAGES",
    "SPEC_NAME",
    "SPEC_REQUESTS",
    "VLLM",
    "CheckOutcome",
    "CheckVerdict",
    "ConfigError",
    "ConfigReport",
    "Deployment",
    "Figure",
    "NodeConfig",
    "NodeReading",
    "ReprNotRead",
    "Verdict",
    "brief",
    "build_deployment",
    "check_config",
    "check_gap_behaviour",
    "check_input_limits_agree",
    "check_nodes_serve_the_window",
    "check_page_rounding",
    "check_pool_holds_context",
    "detect_log_engine",
    "parse_token_count",
    "parse_version",
    "read_arg_repr",
    "read_args_file",
    "read_log",
    "read_server_args",
    "read_sglang_log",
    "read_vllm_log",
    "release_fixes",
    "run_checks",
    "run_spec",
    "spec_fixes_for_release",
    "spec_params",
    "table_release",
]
