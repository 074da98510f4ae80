"""The bridge to the spec: a deployment scaled down to the parameters of the shipped spec sglang_pd.

`spec_params` keeps the inequalities between the pools and the window that matter (see
docs/config-check.md for the scaling rule), `spec_fixes_for_release` turns on the fixes of the
deployment's SGLang release, and `run_spec` runs the spec through ownership.api, imported only
then, so that the checks need no engine, and adds its outcome to the report.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ownership.errors import ConfigError
from ownership.result import Verdict

from .deployment import DECODE, PREFILL, ROLES, SGLANG, Deployment
from .releases import release_fixes
from .report import CheckOutcome, CheckVerdict, ConfigReport

#: The scaled model for --spec: the advertised window is this many (model) pages.
SPEC_CONTEXT_PAGES = 3
#: The scaled model for --spec: two requests, one to leave KV behind and one to read it.
SPEC_REQUESTS = 2
#: The shipped spec that --spec runs.
SPEC_NAME = "sglang_pd"


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
    """The sglang_pd fixes a release has (the release table of docs/protocols/sglang-pd.md).

    0.5.20 added the post-forward retire (#36988), 0.5.21 the intake door (#38935). A release
    the table does not name has the fixes of its row (ownership.config_check.releases): a post
    release its base's, a pre-release or development release of X those of the release
    before X. Without a release, none: the model of 0.5.19, the last release without either.
    """
    if version is None:
        return []
    return list(release_fixes(version))


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
        spec_name=SPEC_NAME,
    )


def _spec_outcome(result: Any, params: dict[str, int], fixes: list[str]) -> CheckOutcome:
    """The --spec run as a check: FAIL on a violation, PASS only when every reachable state of
    the scaled model was explored, and INCONCLUSIVE (exit 3) otherwise: a search cut short by
    --max-states or --max-seconds ("bounded") proves nothing about the states it did not reach.
    Every outcome says what was covered."""
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
    if result.verdict is Verdict.VERIFIED and result.coverage.complete:
        return CheckOutcome(
            name,
            CheckVerdict.PASS,
            numbers,
            f"the scaled model is verified: no violation in {covered}",
        )
    return CheckOutcome(
        name,
        CheckVerdict.INCONCLUSIVE,
        numbers,
        f"the scaled model's search stopped before it explored every reachable state, so no verdict: "
        f"no violation in {covered}; raise or drop --max-states and --max-seconds",
    )
