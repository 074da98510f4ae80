"""The deployment model: engines, roles, and the figures read about each node and the deployment.

A `Figure` is a number with the place it was read from. A `NodeReading` is what one input (a log,
an argument file, the options) says about one node, every figure optional; readings are merged
(ownership.config_check.merge) into a `NodeConfig` per node, all figures present, and a
`Deployment`: the advertised window, the SGLang release and both nodes. Nothing here reads a
file or judges a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
