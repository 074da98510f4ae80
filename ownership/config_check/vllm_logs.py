"""Reading a vLLM 0.33.0 server's start-up log: the figures of its last start-up.

The KV cache capacity (already in whole blocks), max_model_len, the release, and from the
`non-default args:` line (read by ownership.config_check.arg_repr) the block size and the
data-parallel width. Each line format is cited with the vLLM source that prints it.
"""

from __future__ import annotations

import re

from .bounds import _MAX_VERSION_CHARS
from .deployment import VLLM, Figure, NodeReading
from .figures import _log_count
from .files import _text_lines
from .log_reader import _DIGITS, _find_word, _LogReader, _match_after, _read_lines, _SameFigure
from .server_args import _vllm_args_reading

# vLLM 0.33.0 start-up lines, each found by its keyword like SGLang's above.
#: entrypoints/common/startup.py::log_version_and_model (with VLLM_DISABLE_LOG_LOGO).
_VL_VERSION = "vLLM server version "
_VL_VERSION_REST = re.compile(rf"[^\s,]{{1,{_MAX_VERSION_CHARS}}}(?![^\s,])")
#: entrypoints/common/startup.py::log_non_default_args: "non-default args: {...}".
_VL_ARGS = "non-default args: {"
#: config/model.py::ModelConfig.get_and_verify_max_len: "Using max model len %s".
_VL_MAXLEN = "Using max model len "
#: v1/engine/core.py::EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: ...,
#: max_seq_len=%d, ...".
_VL_ENGINE = "Initializing a V1 LLM engine (v"
_VL_ENGINE_REST = re.compile(rf"([^)]{{1,{_MAX_VERSION_CHARS}}})\) with config: ")
#: v1/core/kv_cache_utils.py::update_kv_cache_capacity, once per engine core (per DP rank):
#: "GPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,048,576 tokens per request: 2.00x".
#: The device before it is an upper-case word ("GPU", "XPU", "GPU + host").
_VL_CAPACITY = " KV cache size: "
_VL_DEVICE = re.compile(r"(?<!\w)[A-Z]{1,16}(?: \+ host)?")
_VL_CAPACITY_REST = re.compile(r"([0-9][0-9,]*) tokens")
_VL_CONCURRENCY = "Maximum concurrency for "
_VL_CONCURRENCY_REST = re.compile(r"([0-9][0-9,]*) tokens per request: [0-9.]+x")


def _device_before(line: str, at: int) -> bool:
    """An upper-case device name ends at `at` (vLLM's "GPU KV cache size:"), looked for in 24 characters."""
    start = max(0, at - 24)
    return any(m.end() == at for m in _VL_DEVICE.finditer(line, start, at))


class _VLLMLogReader(_LogReader):
    """One vLLM 0.33.0 server's start-up log, a line at a time: the figures of its last start-up."""

    KEYWORDS = (_VL_VERSION, _VL_ARGS, _VL_MAXLEN, _VL_ENGINE, _VL_CAPACITY, _VL_CONCURRENCY)

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.restart(0)

    def restart(self, no: int) -> None:
        super().restart(no)
        self.reading = NodeReading(
            origin=self.path, kind="vLLM log", engine=VLLM, pool_in_whole_blocks=True
        )
        self.capacity: tuple[int, int] | None = None  # the smallest: (line number, tokens)
        self.engines = 0  # "KV cache size" lines, one per data-parallel engine
        self.maxlen: Figure | None = None
        self.engine_len: Figure | None = None
        self.conc_len: Figure | None = None
        # Each kind of line must agree with itself; across kinds they may differ when
        # max_model_len is fitted at start-up (-1), so each keeps its own precedence.
        self.contexts = {
            kind: _SameFigure(f"context length ({kind})")
            for kind in ("Using max model len", "max_seq_len", "tokens per request")
        }

    def read_line(self, no: int, line: str) -> None:
        where = f"{self.path}:{no}"
        version = _match_after(line, _VL_VERSION, _VL_VERSION_REST)
        at = line.find(_VL_ARGS)
        body = line[at + len(_VL_ARGS) - 1 :].rstrip() if at >= 0 else ""
        if version or body.endswith("}"):
            self.seen = True
            self.restart(no)
        if version:
            self.reading.engine_version = version.group()
        if body.endswith("}"):
            values = self.read_args(no, "non-default args", body)
            _vllm_args_reading(values, self.reading, f"{where} non-default args", from_log=True)
        m = _match_after(line, _VL_MAXLEN, _DIGITS)
        if m:
            self.seen = True
            tokens = _log_count(m.group(), f"{where} (Using max model len)")
            self.maxlen = Figure(tokens, f"{where} (Using max model len)")
            self.contexts["Using max model len"].add(tokens, f"line {no} says {tokens}")
        m = _match_after(line, _VL_ENGINE, _VL_ENGINE_REST)
        seq_at = _find_word(line, "max_seq_len=", m.end()) if m else -1
        seq = _DIGITS.match(line, seq_at + len("max_seq_len=")) if seq_at >= 0 else None
        if m and seq:
            self.seen = True
            self.reading.engine_version = self.reading.engine_version or m.group(1)
            tokens = _log_count(seq.group(), f"{where} max_seq_len")
            self.engine_len = Figure(tokens, f"{where} (max_seq_len)")
            self.contexts["max_seq_len"].add(tokens, f"line {no} says max_seq_len={tokens}")
        at = line.find(_VL_CAPACITY)
        m = _VL_CAPACITY_REST.match(line, at + len(_VL_CAPACITY)) if at >= 0 else None
        if m and _device_before(line, at):
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} KV cache size")
            self.engines += 1
            if self.capacity is None or tokens < self.capacity[1]:
                self.capacity = (no, tokens)
        m = _match_after(line, _VL_CONCURRENCY, _VL_CONCURRENCY_REST)
        if m:
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} (tokens per request)")
            self.conc_len = Figure(tokens, f"{where} (tokens per request)")
            self.contexts["tokens per request"].add(tokens, f"line {no} says {tokens}")

    def result(self) -> NodeReading:
        """The reading of the last start-up; ConfigError for a bad figure or two context lengths."""
        if self.error is not None:
            raise self.error
        for same in self.contexts.values():
            same.check(self.path)
        reading = self.reading
        if self.capacity:
            no, tokens = self.capacity
            note = f", smallest of {self.engines} engines" if self.engines > 1 else ""
            reading.pool_tokens = Figure(tokens, f"{self.path}:{no} (KV cache size{note})")
        reading.context_length = (
            self.maxlen or self.engine_len or self.conc_len or reading.context_length
        )
        where_start = self.where_start()
        reading.looked_for.setdefault(
            "pool_tokens", f'no "KV cache size: N tokens" line{where_start}'
        )
        reading.looked_for.setdefault(
            "context_length",
            f'no "Using max model len", "max_seq_len=" or "Maximum concurrency for M tokens" line{where_start}',
        )
        return reading


def read_vllm_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one vLLM 0.33.0 server's start-up log, given as text.

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
    reader = _VLLMLogReader(path)
    _read_lines(_text_lines(text), [reader])
    return reader.result()
