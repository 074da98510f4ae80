"""ownership: a model checker for KV-cache page ownership in disaggregated LLM inference.

The public API is exactly what `__all__` lists (pinned by tests/test_public_api.py): the
spec language, and the entry points to check a spec and to read, write and replay traces.
"""

from .api import check, model_for, replay_trace
from .errors import ConfigError, OwnershipError, SpecError, TraceFormatError, UsageError
from .lang import (
    If,
    Max,
    Min,
    Request,
    Spec,
    action,
    all_of,
    any_of,
    count,
    first,
    fix,
    has,
    ints,
    invariant,
    nth,
    page,
    param,
    per_page,
    per_request,
    pool,
    select,
    sometimes,
    state,
    without,
)
from .result import CheckResult, Coverage, Verdict
from .trace import Trace, Violation, read_itf, write_itf

__all__ = [
    "CheckResult",
    "ConfigError",
    "Coverage",
    "If",
    "Max",
    "Min",
    "OwnershipError",
    "Request",
    "Spec",
    "SpecError",
    "Trace",
    "TraceFormatError",
    "UsageError",
    "Verdict",
    "Violation",
    "action",
    "all_of",
    "any_of",
    "check",
    "count",
    "first",
    "fix",
    "has",
    "ints",
    "invariant",
    "model_for",
    "nth",
    "page",
    "param",
    "per_page",
    "per_request",
    "pool",
    "read_itf",
    "replay_trace",
    "select",
    "sometimes",
    "state",
    "without",
    "write_itf",
]
