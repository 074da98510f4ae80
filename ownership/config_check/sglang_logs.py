"""Reading an SGLang server's start-up log (0.5.19 to 0.5.23): the figures of its last start-up.

The KV pool, the context length, and from the `server_args=` line (read by
ownership.config_check.arg_repr) the page size, data-parallel width, role and
--allow-auto-truncate. Each line format is cited with the SGLang source that prints it.
"""

from __future__ import annotations

import re

from .bounds import MAX_DP_RANKS
from .deployment import SGLANG, Figure, NodeReading
from .figures import _log_count
from .files import _text_lines
from .log_reader import _DIGITS, _find_word, _LogReader, _match_after, _read_lines, _SameFigure
from .server_args import _sglang_args_reading

# SGLang start-up lines (python/sglang/srt/..., 0.5.19 and 0.5.23 alike unless noted). Each is
# found by a literal keyword, then the rest is matched from there by an anchored pattern.
#: entrypoints/engine.py: `logger.info(f"server_args={server_args.resolved_dict()}")`, once per launch.
_SG_ARGS = "server_args="
#: managers/scheduler.py::Scheduler.init_model_worker, on TP rank 0 of each scheduler:
#: "max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
#: max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB".
_SG_SCHED = "max_total_num_tokens="
_SG_SCHED_POOL = re.compile(r"([0-9]+),")
#: managers/tp_worker.py::TpModelWorker.get_worker_info, new in 0.5.23, on every TP rank when
#: kv_capacity < context_len: "KV pool holds %d tokens, fewer than --context-length %d. ...".
_SG_WARN = "KV pool holds "
_SG_WARN_REST = re.compile(r"([0-9]+) tokens, fewer than --context-length ([0-9]+)\.")
#: mem_cache/memory_pool.py::KVCache._finalize_allocation_log: "KV Cache is allocated. dtype: %s,
#: #tokens: %d, KV size: %.2f GB" (a labelled cache, e.g. "SWA KV Cache", is another pool).
_SG_ALLOC = "] KV Cache is allocated. dtype: "
#: model_executor/model_runner_components/kv_pool_runtime.py, after a post-capture resize:
#: "Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, ...".
_SG_POSTCAP = "Post-capture KV sizing: KV cache allocated. dtype: "
_SG_TOKENS_REST = re.compile(r"[^,]*, #tokens: ([0-9]+),")
#: utils/common.py::configure_logger: "[%(asctime)s DP0 TP0] %(message)s"; the DP label is there
#: when the scheduler has a data-parallel rank (managers/scheduler.py::run_scheduler_process).
#: No bracket inside a group, so each character is looked at once.
_SG_DP = re.compile(r"\[[^\[\]]*?(?<![A-Z_])DP([0-9]{1,6})\b[^\[\]]*\]")


class _SGLangLogReader(_LogReader):
    """One SGLang server's start-up log, a line at a time: the figures of its last start-up."""

    KEYWORDS = (_SG_ARGS, _SG_SCHED, _SG_WARN, "KV Cache is allocated", "KV cache allocated")

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.restart(0)

    def restart(self, no: int) -> None:
        super().restart(no)
        self.reading = NodeReading(origin=self.path, kind="SGLang log", engine=SGLANG)
        # the smallest pool of each kind of line: (line number, pool, context or 0)
        self.sched: tuple[int, int, int] | None = None
        self.warn: tuple[int, int, int] | None = None
        self.alloc: tuple[int, int, int] | None = None
        self.postcap: tuple[int, int, int] | None = None
        self.ranks: set[str] = set()
        self.contexts = _SameFigure("context length")

    def read_line(self, no: int, line: str) -> None:
        at = line.find(_SG_ARGS)
        if at >= 0 and line.startswith(("{", "ServerArgs("), at + len(_SG_ARGS)):
            self.seen = True
            self.restart(no)
            body = line[at + len(_SG_ARGS) :]
            values = self.read_args(no, "server_args=", body)
            _sglang_args_reading(values, self.reading, f"{self.path}:{no} server_args")
            return
        where = f"{self.path}:{no}"
        at = line.find(_SG_SCHED)
        pool = _SG_SCHED_POOL.match(line, at + len(_SG_SCHED)) if at >= 0 else None
        ctx_at = _find_word(line, "context_len=", pool.end()) if pool else -1
        ctx = _DIGITS.match(line, ctx_at + len("context_len=")) if ctx_at >= 0 else None
        if pool and ctx:
            self.seen = True
            tokens = _log_count(pool.group(1), f"{where} max_total_num_tokens")
            context = _log_count(ctx.group(), f"{where} context_len")
            self.contexts.add(context, f"line {no} says context_len={context}")
            if self.sched is None or tokens < self.sched[1]:
                self.sched = (no, tokens, context)
            label = _SG_DP.search(line, 0, at)
            if label and len(self.ranks) < MAX_DP_RANKS:
                self.ranks.add(label.group(1))
            return
        m = _match_after(line, _SG_WARN, _SG_WARN_REST)
        if m:
            self.seen = True
            tokens = _log_count(m.group(1), f"{where} (KV pool holds)")
            context = _log_count(m.group(2), f"{where} (--context-length in the KV pool warning)")
            self.contexts.add(context, f"line {no} says --context-length {context}")
            if self.warn is None or tokens < self.warn[1]:
                self.warn = (no, tokens, context)
            return
        for keyword, kind in ((_SG_POSTCAP, "postcap"), (_SG_ALLOC, "alloc")):
            m = _match_after(line, keyword, _SG_TOKENS_REST)
            if m:
                self.seen = True
                tokens = _log_count(m.group(1), f"{where} #tokens")
                smallest = getattr(self, kind)
                if smallest is None or tokens < smallest[1]:
                    setattr(self, kind, (no, tokens, 0))
                return

    def result(self) -> NodeReading:
        """The reading of the last start-up; ConfigError for a bad figure or two context lengths."""
        if self.error is not None:
            raise self.error
        self.contexts.check(self.path)
        reading, path = self.reading, self.path
        if self.warn:
            no, pool, ctx = self.warn
            reading.pool_tokens = Figure(pool, f'{path}:{no} ("KV pool holds {pool} tokens")')
            reading.context_length = Figure(
                ctx, f"{path}:{no} (--context-length in the KV pool warning)"
            )
        if self.sched:
            no, pool, ctx = self.sched
            ranks = len(self.ranks)
            note = f", smallest of {ranks} data-parallel ranks" if ranks > 1 else ""
            if reading.pool_tokens is None:
                reading.pool_tokens = Figure(pool, f"{path}:{no} (max_total_num_tokens{note})")
            reading.context_length = Figure(ctx, f"{path}:{no} (context_len)")
        allocated = self.postcap or self.alloc
        if reading.pool_tokens is None and allocated:
            no, pool, _ = allocated
            reading.pool_tokens = Figure(pool, f"{path}:{no} (KV cache allocated, #tokens)")
        where_start = self.where_start()
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


def read_sglang_log(text: str, *, path: str = "<log>") -> NodeReading:
    """Read one SGLang server's start-up log (0.5.19 to 0.5.23), given as text.

    Figures, from the last start-up in the file (the last `server_args=` line on):
    - the KV pool size: 0.5.23's warning "KV pool holds N tokens, fewer than --context-length C"
      (tp_worker.py::TpModelWorker.get_worker_info; N is exactly the kv_capacity that bounds
      `max_req_input_len`), else the scheduler line "max_total_num_tokens=N, ..., context_len=C"
      (scheduler.py::Scheduler.init_model_worker), else "KV Cache is allocated ... #tokens: N"
      (memory_pool.py::KVCache._finalize_allocation_log). With several data-parallel ranks, the
      smallest pool is the one that decides.
    - the context length: `context_len=` of the scheduler line (the effective value, from
      --context-length or the model's config.json), else `'context_length'` of `server_args=`.
      Two different effective context lengths in one start-up are refused, naming both lines.
    - the page size, data-parallel width, role and --allow-auto-truncate: from `server_args=`.
    """
    reader = _SGLangLogReader(path)
    _read_lines(_text_lines(text), [reader])
    return reader.result()
