"""A start-up log of either engine: telling SGLang from vLLM by its lines, and reading it.

`read_log` streams the file once (ownership.config_check.files) past both readers, unless the
engine is given, and keeps the reading of the engine whose start-up lines the log holds.
"""

from __future__ import annotations

from pathlib import Path

from ownership.errors import ConfigError

from .deployment import SGLANG, VLLM, NodeReading
from .files import _log_lines, _naming_the_file, _text_lines
from .log_reader import _all_keywords, _LogReader, _read_lines
from .sglang_logs import _SGLangLogReader
from .vllm_logs import _VLLMLogReader

_READERS: dict[str, type[_SGLangLogReader] | type[_VLLMLogReader]] = {
    SGLANG: _SGLangLogReader,
    VLLM: _VLLMLogReader,
}


def detect_log_engine(text: str) -> str | None:
    """'sglang' or 'vllm' by the start-up lines the log contains, or None when it has neither."""
    readers: list[_LogReader] = [_SGLangLogReader("<log>"), _VLLMLogReader("<log>")]
    _read_lines(_text_lines(text), readers)
    return next((e for e, r in zip(_READERS, readers) if r.seen), None)


def read_log(path: str | Path, *, engine: str | None = None) -> NodeReading:
    """Read an SGLang or vLLM start-up log from a file, telling the engine from its lines.

    The file is streamed (`_log_lines`): memory stays bounded and time grows linearly with its
    size. Without `engine`, both readers see every line and the engine is the one whose
    start-up lines the log holds (SGLang's first).
    """
    engines = [engine] if engine is not None else list(_READERS)
    readers: list[_LogReader] = [_READERS[e](str(path)) for e in engines]
    _read_lines(_log_lines(path, _all_keywords(readers)), readers)
    chosen = next((r for r in readers if r.seen or engine is not None), None)
    if chosen is None:
        raise ConfigError(
            f"{path} does not look like an SGLang or vLLM start-up log: it has none of the lines "
            '"max_total_num_tokens=", "KV Cache is allocated", "server_args=" (SGLang) or '
            '"KV cache size:", "Using max model len" (vLLM); give the whole start-up log'
        )
    return _naming_the_file(path, chosen.result)
