"""The checks of a deployment: each pool against the window, the two input limits, page rounding,
and what the SGLang release does with a prompt that the window admits but a pool rejects.

Each check returns a `CheckOutcome` with its verdict, the numbers behind it and a one-line
explanation; `run_checks` runs them all in a fixed order. Nothing here reads a file or prints.
"""

from __future__ import annotations

import math
from typing import Any

from .deployment import DECODE, PREFILL, ROLES, SGLANG, SGLANG_INPUT_SLACK, Deployment, NodeConfig
from .merge import build_deployment
from .releases import RELEASE_FIXES, table_release
from .report import CheckOutcome, CheckVerdict, ConfigReport


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
    the full prompt. That is how the incident's placeholder was born (docs/incident.md;
    the rejection path per release is in docs/protocols/sglang-pd.md).
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


#: What each release does with a prompt in the gap, by which node rejects it (the release table
#: of docs/protocols/sglang-pd.md).
_BEHAVIOUR_WORDS = {
    "served-with-stale-kv": "sends the one-page placeholder and decode attends over pages holding other requests' KV (the incident: HTTP 200, a cross-request leak)",
    "served-wrongly": "lets decode admit its own rejected placeholder (pop_preallocated checks finished, not rejected) into a one-page reservation while prefill computes and sends the whole prompt, which the transfer truncates",
    "served-placeholder": "serves the one-token placeholder on both nodes: HTTP 200 with a reply to a prompt the client never sent",
    "held-until-timeout": "retires them after the prefill forward but tells decode nothing (sender.abort is local), so decode holds the reserved pages until its 300 s timeout",
    "rejected-at-door": "retires them at the intake door before bootstrap, allocation and transfer (HTTP 400)",
}


def _release_behaviour(fixes: tuple[str, ...], rejecting: str) -> str:
    """The release table of docs/protocols/sglang-pd.md, for a prompt rejected by `rejecting`,
    from the fixes of the release's row (ownership.config_check.releases)."""
    if "door-retire" in fixes:
        return "rejected-at-door"  # #38935: doors on prefill and decode
    if rejecting == DECODE:
        return "served-wrongly"  # decode's pop_preallocated tests finished_reason only, to 0.5.23
    if "post-forward-retire" in fixes:
        return "held-until-timeout"  # #36988: post-forward retire on prefill
    return "served-with-stale-kv" if rejecting == PREFILL else "served-placeholder"


def check_gap_behaviour(deployment: Deployment) -> CheckOutcome:
    """What the SGLang release does with a prompt that the window admits but a pool rejects.

    From the release table of docs/protocols/sglang-pd.md: up to 0.5.19 the rejected prompt's
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
            f"{span}: {who}; the SGLang release is not known, so the outcome cannot be ruled safe (up to 0.5.19 it is a cross-request leak): pass --release",
        )
    row, why = table_release(deployment.version)
    table_note = f" ({why})" if why else ""
    behaviour = _release_behaviour(RELEASE_FIXES[row], rejecting)
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
