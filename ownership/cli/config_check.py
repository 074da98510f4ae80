"""`ownership config-check`: the command a deploy pipeline runs to compare KV pools with the context window.

Parses options, calls ownership.config_check (which does all the reading and judging), and
prints the report as text or JSON, escaped for the terminal (a log may hold control
characters). Exit codes come from the one table in ownership.result: 0 every check holds,
1 a check failed, 2 bad input (one `error:` line: a figure not found, absurd or contradicted, an
unreadable file, a bad option), 3 only with --spec, when the model search stopped at a limit
before exploring every reachable state, 4 an internal error of ownership (cli/common.py).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import click

from ownership import config_check as cc
from ownership.cli.common import (
    OwnershipCommand,
    Progress,
    complete_fix,
    echo,
    emit_json,
    limited,
    release_option,
    report_bad_input,
)
from ownership.errors import OwnershipError, UsageError
from ownership.result import EXIT_BAD_INPUT


class TokenCount(click.ParamType):
    """A plain positive integer up to config_check.MAX_TOKENS, commas or underscores allowed (1,048,576).

    Suffixes are refused on purpose: '1M' is 10**6 tokens to SGLang and 2**20 to vLLM.
    """

    name = "tokens"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value).strip()
        digits = text.replace(",", "").replace("_", "")
        if len(digits) > 2 * len(str(cc.MAX_TOKENS)):
            self.fail(
                f"{cc.brief(text)} is not a token count: no pool or window is over {cc.MAX_TOKENS:,} tokens (2**40)",
                param,
                ctx,
            )
        if isinstance(value, int) or re.fullmatch(r"[0-9]{1,3}(,[0-9]{3})+|[0-9]+(_[0-9]+)*", text):
            number = int(digits)
            if 0 < number <= cc.MAX_TOKENS:
                return number
            if number > cc.MAX_TOKENS:
                self.fail(
                    f"{number:,} tokens is not a real figure: no pool or window is over {cc.MAX_TOKENS:,} tokens (2**40)",
                    param,
                    ctx,
                )
        self.fail(
            f"{cc.brief(text)} is not a positive whole number of tokens (write 1048576 or 1,048,576; "
            "a suffix like 1M means 10**6 to SGLang but 2**20 to vLLM, so it is not accepted here)",
            param,
            ctx,
        )


TOKENS = TokenCount()


class StateCount(click.ParamType):
    """A positive whole number of states for --max-states, refused (and shown cut short) when absurd."""

    name = "states"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value).strip()
        if re.fullmatch(r"[0-9]{1,15}", text) and int(text) > 0:
            return int(text)
        self.fail(f"{cc.brief(text)} is not a positive whole number of states up to 10**15", param, ctx)
_PATH = click.Path(dir_okay=False, path_type=Path)


@click.command("config-check", cls=OwnershipCommand)
@click.option(
    "--prefill-log", type=_PATH, help="Start-up log of the prefill node (SGLang or vLLM)."
)
@click.option("--decode-log", type=_PATH, help="Start-up log of the decode node (SGLang or vLLM).")
@click.option(
    "--prefill-args",
    type=_PATH,
    help="Prefill launch command line, or a JSON dump of its server arguments or /server_info.",
)
@click.option(
    "--decode-args",
    type=_PATH,
    help="Decode launch command line, or a JSON dump of its server arguments or /server_info.",
)
@click.option(
    "--engine",
    type=click.Choice(list(cc.ENGINES)),
    help="The engine, when the inputs do not say (default: told from the inputs, else sglang).",
)
@click.option(
    "--context-length",
    type=TOKENS,
    help="The advertised context window in tokens (default: the larger node context).",
)
@click.option(
    "--prefill-pool-tokens",
    type=TOKENS,
    help="Prefill KV pool in tokens per data-parallel rank (overrides the log).",
)
@click.option(
    "--decode-pool-tokens",
    type=TOKENS,
    help="Decode KV pool in tokens per data-parallel rank (overrides the log).",
)
@click.option(
    "--page-size", type=TOKENS, help="Tokens per KV page, both nodes (overrides the inputs)."
)
@release_option("The SGLang release the nodes run, e.g. 0.5.19: decides what happens to a prompt in the gap.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (errors too).")
@click.option(
    "--spec",
    "run_spec",
    is_flag=True,
    help="Also run specs/sglang_pd.py with parameters scaled from these numbers (a trace on failure).",
)
@click.option(
    "--fix",
    "fixes",
    multiple=True,
    metavar="NAME",
    help="A fix to enable in the --spec run (repeatable).",
    shell_complete=complete_fix,
)
@click.option(
    "--max-states",
    type=StateCount(),
    help="Stop the --spec search after this many states.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop the --spec search after this long.",
)
def config_check(
    prefill_log: Path | None,
    decode_log: Path | None,
    prefill_args: Path | None,
    decode_args: Path | None,
    engine: str | None,
    context_length: int | None,
    prefill_pool_tokens: int | None,
    decode_pool_tokens: int | None,
    page_size: int | None,
    release: str | None,
    as_json: bool,
    run_spec: bool,
    fixes: tuple[str, ...],
    max_states: int | None,
    max_seconds: float | None,
) -> None:
    """Compare a deployment's KV pools with its advertised context window.

    Reads the figures from SGLang or vLLM start-up logs, launch command lines, JSON dumps of
    the server arguments, or numbers given here, and checks that each pool holds the window
    per data-parallel rank, that prefill and decode reject the same prompt lengths, that both
    run with the advertised window, that page rounding leaves room for a full-length prompt,
    and what the SGLang release does with a prompt in the gap. Exit 0: every check holds;
    1: a check failed; 2: bad input; 3: the --spec search stopped at a limit before it explored
    every reachable state (a bounded search is no verdict).

    \b
    Example (the GLM-5.3 incident's numbers):
      ownership config-check --context-length 1048576 \\
        --prefill-pool-tokens 681280 --decode-pool-tokens 2097152 \\
        --page-size 64 --release 0.5.19
    """
    try:
        _check_spec_options(run_spec, fixes, max_states, max_seconds)
        report = cc.check_config(
            prefill_log=prefill_log,
            prefill_args=prefill_args,
            decode_log=decode_log,
            decode_args=decode_args,
            engine=engine,
            context_length=context_length,
            prefill_pool_tokens=prefill_pool_tokens,
            decode_pool_tokens=decode_pool_tokens,
            page_size=page_size,
            version=release,
        )
        if run_spec:
            # the whole-command limits cover loading and tracing the spec too (ownership.limits)
            progress = Progress()
            with limited(max_seconds, None, progress, as_json=as_json, spec="sglang_pd",
                         unexplored="the deployment's figures were checked, the spec was not"):
                try:
                    report = cc.run_spec(
                        report, fixes=list(fixes), max_states=max_states,
                        max_seconds=max_seconds,
                    )
                finally:
                    progress.close()
    except OwnershipError as exc:
        report_bad_input(exc, None, as_json=as_json)
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        emit_json(report.to_json(), indent=2)
    else:
        echo(render_report(report))
    sys.exit(report.exit_code)


def _check_spec_options(
    run_spec: bool, fixes: tuple[str, ...], max_states: int | None, max_seconds: float | None
) -> None:
    """--fix, --max-states and --max-seconds shape the --spec run only; a limit must be finite."""
    if not run_spec:
        given = [
            name
            for name, value in (("--fix", fixes), ("--max-states", max_states), ("--max-seconds", max_seconds))
            if value
        ]
        if given:
            raise UsageError(f"{', '.join(given)} only apply to the --spec run: add --spec, or leave them out")
    if max_seconds is not None and not math.isfinite(max_seconds):
        raise UsageError(
            f"--max-seconds {max_seconds} is not a time limit: give a finite number of seconds, or leave it out for no limit"
        )


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "-"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render_report(report: cc.ConfigReport) -> str:
    """The report as text: a headline, the figures with their sources, then one block per check."""
    d = report.deployment
    lines: list[str] = []
    failed = len(report.failed)
    total = len(report.checks)
    open_ = sum(1 for c in report.checks if c.verdict is cc.CheckVerdict.INCONCLUSIVE)
    if failed:
        head = f"{failed} of {total} checks fail"
    elif open_:
        head = f"{total - open_} of {total} checks hold, {open_} without a verdict"
    else:
        head = f"all {total} checks hold"
    lines.append(f"config-check: {report.verdict.word.upper()} ({head})")
    release = d.version or "release unknown"
    if d.engine == cc.VLLM:
        versions = {n.engine_version for n in (d.prefill, d.decode) if n.engine_version}
        release = ", ".join(sorted(versions)) or "release unknown"
    lines.append(
        f"  engine {d.engine} {release}"
        + (f" ({d.version_source})" if d.version_source else "")
        + f"; advertised context {_fmt(d.advertised_context.value)} tokens ({d.advertised_context.source})"
    )
    for node in (d.prefill, d.decode):
        page = _fmt(node.page_size.value) if node.page_size else "whole blocks"
        dp = (
            f", {node.dp_ranks.value} data-parallel ranks"
            if node.dp_ranks and node.dp_ranks.value > 1
            else ""
        )
        lines.append(
            f"  {node.role:<8} pool {_fmt(node.pool_tokens.value)} tokens{dp}, page {page}, "
            f"context {_fmt(node.context_length.value)}, rejects prompts from {_fmt(node.input_limit.value)}"
        )
        lines.append(f"           pool from {node.pool_tokens.source}")
    lines.append("")
    for check in report.checks:
        lines.append(f"{check.verdict.word.upper():<5} {check.name}")
        lines.append(f"      {check.explanation}")
        numbers = "  ".join(f"{k}={_fmt(v)}" for k, v in check.numbers.items())
        lines.append(f"      {numbers}")
    if report.spec_result is not None:
        lines.append("")
        lines.append(_render_spec(report))
    lines.append("")
    meaning = {
        0: "every check holds",
        1: "a check failed",
        3: "the --spec search stopped before it explored every reachable state, so no verdict",
    }
    lines.append(f"exit {report.exit_code}: {meaning.get(report.exit_code, '')}")
    return "\n".join(lines)


def _render_spec(report: cc.ConfigReport) -> str:
    """The --spec run as `ownership check` prints it, headed by the scaling."""
    from ownership.render.text import render_check

    params = " ".join(f"{k}={v}" for k, v in (report.spec_params or {}).items())
    head = (
        f"--spec: {cc.SPEC_NAME} scaled to {params} "
        f"(the advertised window is {cc.SPEC_CONTEXT_PAGES} model pages; docs/config-check.md)"
    )
    body = render_check(report.spec_result, spec_label=cc.SPEC_NAME)
    # `ownership check` counts a bounded search as a pass unless --strict; config-check never does.
    body = "\n".join(
        _NO_VERDICT_HINT if line.startswith("  (a bounded pass:") else line
        for line in body.splitlines()
    )
    return head + "\n" + body


_NO_VERDICT_HINT = (
    "  (config-check counts a bounded search as no verdict, exit 3: raise or drop --max-states"
    " and --max-seconds to explore every reachable state)"
)
