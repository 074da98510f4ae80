"""Reading a trace's states as the viewers show them: which pools the trace holds, who holds
each page, the values of a pool's kernel slots, which variables are the kernel's, and which
request a step acts for. Shared by the view model (view_model.py) and the why of a violation
(why.py), which imports nothing of the view model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..trace import Step, Trace
from .text import show_value

#: The kernel's shadow slots of a pool, named "<pool>.<kind>" (ownership.lang.model).
KERNEL_KINDS = ("owner", "holders", "pins", "content", "inflight", "outbound", "free_list")


_REQUEST_NAME = re.compile(r"r\d+")


def _text(v: Any) -> str:
    return v if isinstance(v, str) else show_value(v)


def pools_of(trace: Trace) -> list[str]:
    """The pools whose kernel slots the trace holds: "<pool>.owner" (or "<pool>.holders" for
    a shared pool) as a list of pages."""
    if not trace.steps:
        return []
    state = trace.steps[0].state
    out = []
    for var, value in state.items():
        pool, _, kind = var.rpartition(".")
        if pool and kind in ("owner", "holders") and isinstance(value, list) and pool not in out:
            out.append(pool)
    return out


def _request_order(name: str) -> tuple[int, int, str]:
    return (0, int(name[1:]), "") if _REQUEST_NAME.fullmatch(name) else (1, 0, name)


def _holders(value: Any) -> tuple[str, ...]:
    """The requests holding a page: an owner ("free" for none) or a set of holders."""
    if isinstance(value, frozenset | set | list | tuple):
        return tuple(sorted((_text(x) for x in value), key=_request_order))
    text = _text(value)
    return () if text in ("free", "none", "") else (text,)


def _owner_text(holders: tuple[str, ...]) -> str:
    return "+".join(holders) if holders else "free"


def _page_holders(state: dict[str, Any], pool: str) -> list[tuple[str, ...]]:
    for kind in ("owner", "holders"):
        value = state.get(f"{pool}.{kind}")
        if isinstance(value, list):
            return [_holders(x) for x in value]
    return []


def is_kernel_var(var: str, pools: Iterable[str]) -> bool:
    """Whether a variable is a kernel shadow slot (ground truth) rather than a spec belief."""
    pool, _, kind = var.rpartition(".")
    return kind in KERNEL_KINDS and pool in set(pools)


def acting_request(step: Step) -> str | None:
    """The request an action acts for: its first argument that names a request (r1, r2, ...),
    else its `request` argument (an event of a monitored log names the engine's own id)."""
    for value in step.args.values():
        if isinstance(value, str) and _REQUEST_NAME.fullmatch(value):
            return value
    value = step.args.get("request")
    return value if isinstance(value, str) else None


def _page_values(state: dict[str, Any], pool: str, kind: str, size: int, default: str) -> list[str]:
    value = state.get(f"{pool}.{kind}")
    if not isinstance(value, list):
        return [default] * size
    out = [_text(x) for x in value[:size]]
    return out + [default] * (size - len(out))


def _ids(trace: Trace, pool: str, pages: list[int]) -> list[int]:
    """Positions of a pool's kernel slots as the pages' own ids (the same, but in a monitor's trace)."""
    return [trace.page_id(pool, p) for p in pages]
