"""Merging what each input says about each node into one Deployment, or naming what is missing.

Per figure, a number given by hand overrides the start-up log, which overrides the launch
arguments. A missing figure is a ConfigError naming the figure, each file it was not found in
and what was looked for; figures whose arithmetic makes no sense (a pool holding no page, a
window admitting no prompt) are refused rather than judged.
"""

from __future__ import annotations

from pathlib import Path

from ownership.errors import ConfigError

from .bounds import MAX_TOKENS, _absurd, brief
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
from .figures import _tokens
from .logs import read_log
from .releases import _older, parse_version
from .server_args import read_args_file


def _merge(readings: list[NodeReading]) -> NodeReading:
    """Field by field, the first reading that has a figure wins (readings come in precedence order)."""
    merged = NodeReading(origin="+".join(r.origin for r in readings), kind="merged")
    for name in (
        "engine",
        "role",
        "engine_version",
        "context_length",
        "pool_tokens",
        "page_size",
        "max_req_input_len",
        "dp_ranks",
        "allow_auto_truncate",
    ):
        for r in readings:
            value = getattr(r, name)
            if value is not None:
                setattr(merged, name, value)
                if name == "pool_tokens":
                    merged.pool_in_whole_blocks = r.pool_in_whole_blocks
                break
    return merged


def _missing_message(role: str, figure: str, readings: list[NodeReading], option: str) -> str:
    words = FIGURE_WORDS[figure]
    files = [r for r in readings if r.kind != "options"]
    if not files:
        return f"the {role} {words} was not given: pass --{role}-log, --{role}-args or {option}"
    where = "; ".join(f"not in {r.origin} ({r.looked_for.get(figure, 'not there')})" for r in files)
    return f"the {role} {words} was not found: {where}. Give it with {option}"


def _missing_figures(
    role: str,
    merged: NodeReading,
    readings: list[NodeReading],
    engine: str,
    explicit_context: Figure | None,
) -> list[str]:
    """One message per figure that no input of this node gave."""
    missing: list[str] = []
    if merged.context_length is None and explicit_context is None:
        missing.append(_missing_message(role, "context_length", readings, "--context-length"))
    if merged.pool_tokens is None:
        missing.append(_missing_message(role, "pool_tokens", readings, f"--{role}-pool-tokens"))
    if merged.page_size is None and not (engine == VLLM and merged.pool_in_whole_blocks):
        missing.append(_missing_message(role, "page_size", readings, "--page-size"))
    return missing


def _check_role(role: str, merged: NodeReading, readings: list[NodeReading]) -> None:
    if merged.role is not None and merged.role != role:
        source = next(r.origin for r in readings if r.role is not None)
        raise ConfigError(
            f"{source} belongs to a {merged.role} node (its own configuration says so) but was given as the {role} input; swap --prefill-* and --decode-*"
        )


#: The smallest context window that serves a one-token prompt: SGLang rejects prompts of
#: `context_len - 1 - 5` tokens or more, vLLM of `max_model_len` or more.
_SMALLEST_WINDOW = {SGLANG: 2 + 1 + SGLANG_INPUT_SLACK, VLLM: 2}


def _check_figure(role: str, name: str, fig: Figure) -> None:
    """A figure is a whole number of tokens, from 1 to MAX_TOKENS (an option may hold anything)."""
    value = fig.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"the {role} {name} is {brief(value)} ({fig.source}); it must be a whole number of tokens"
        )
    if value <= 0:
        raise ConfigError(
            f"the {role} {name} is {value} ({fig.source}); it must be a positive number of tokens"
        )
    if value > MAX_TOKENS:
        raise _absurd(f"the {role} {name} ({fig.source})", f"{value:,}")


def _resolve_node(
    role: str, merged: NodeReading, engine: str, explicit_context: Figure | None
) -> NodeConfig:
    """A node's figures, all present (checked by _missing_figures first), with its input limit.

    Figures whose arithmetic makes no sense are refused rather than judged: a pool holding no
    whole page, or an input limit that rejects even a one-token prompt (a 1-token pool would
    otherwise "reject prompts from -5").
    """
    context = merged.context_length or explicit_context
    pool = merged.pool_tokens
    assert context is not None and pool is not None
    for name, fig in (
        ("context length", context),
        ("KV pool size", pool),
        ("page size", merged.page_size),
    ):
        if fig is not None:
            _check_figure(role, name, fig)
    page = merged.page_size
    if page is not None and pool.value < page.value:
        raise ConfigError(
            f"the {role} KV pool of {_tokens(pool.value)} ({pool.source}) holds no whole page of "
            f"{_tokens(page.value)} ({page.source}), so no request fits at all; check both figures"
        )

    if engine == SGLANG:
        if merged.max_req_input_len is not None:
            limit = merged.max_req_input_len
        else:
            value = min(context.value - 1, pool.value - 1) - SGLANG_INPUT_SLACK
            limit = Figure(
                value, "min(context_len - 1, kv_capacity - 1) - 5 (TpModelWorker.get_worker_info)"
            )
        if limit.value < 2 and merged.max_req_input_len is not None:
            raise ConfigError(
                f"the {role} node would serve no prompt: {limit.source} is {limit.value}, so it rejects "
                "every prompt; a node serving a one-token prompt has a limit of at least 2: check the dump"
            )
        if limit.value < 2:
            raise ConfigError(
                f"the {role} node would serve no prompt: SGLang rejects prompts of "
                f"min(context_len - 1, kv_capacity - 1) - 5 = {limit.value} tokens or more, with a context "
                f"length of {_tokens(context.value)} ({context.source}) and a KV pool of "
                f"{_tokens(pool.value)} ({pool.source}); both must be at least "
                f"{_SMALLEST_WINDOW[SGLANG]} tokens to serve a one-token prompt, so check the figures"
            )
    else:
        # A generate request of max_model_len prompt tokens has no room for an output token
        # (v1/engine/input_processor.py::InputProcessor._validate_prompt_len rejects it).
        limit = Figure(context.value, "max_model_len (InputProcessor._validate_prompt_len)")
        if limit.value < 2:
            raise ConfigError(
                f"the {role} node would serve no prompt: its max_model_len is {context.value} ({context.source}), "
                f"and vLLM needs at least {_SMALLEST_WINDOW[VLLM]} for a one-token prompt; check the figure"
            )
    return NodeConfig(
        role=role,
        engine=engine,
        context_length=context,
        pool_tokens=merged.pool_tokens,
        page_size=merged.page_size,
        input_limit=limit,
        dp_ranks=merged.dp_ranks,
        allow_auto_truncate=merged.allow_auto_truncate,
        engine_version=merged.engine_version,
    )


def build_deployment(
    *,
    prefill_log: str | Path | None = None,
    prefill_args: str | Path | None = None,
    decode_log: str | Path | None = None,
    decode_args: str | Path | None = None,
    engine: str | None = None,
    context_length: int | None = None,
    prefill_pool_tokens: int | None = None,
    decode_pool_tokens: int | None = None,
    page_size: int | None = None,
    version: str | None = None,
) -> Deployment:
    """Read every input and merge it into a Deployment; ConfigError names any figure not found.

    Precedence, per figure: a number given here, then the start-up log, then the launch
    arguments. `context_length` is the advertised window; without it the advertised window is
    the larger of the two nodes' context lengths. `version` is the SGLang release; without it,
    the `version` of a /server_info dump (the older of the two nodes when they differ).
    """
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"unknown engine {brief(engine)}: use one of {', '.join(ENGINES)}")
    if version is not None:
        parse_version(version)  # fail early on a malformed release

    per_role: dict[str, list[NodeReading]] = {}
    for role, log, args, pool in (
        (PREFILL, prefill_log, prefill_args, prefill_pool_tokens),
        (DECODE, decode_log, decode_args, decode_pool_tokens),
    ):
        options = NodeReading(origin="options", kind="options", engine=None)
        if pool is not None:
            options.pool_tokens = Figure(pool, f"--{role}-pool-tokens")
        if page_size is not None:
            options.page_size = Figure(page_size, "--page-size")
        readings = [options]
        if log is not None:
            readings.append(read_log(log, engine=engine))
        if args is not None:
            readings.append(read_args_file(args, engine=engine))
        per_role[role] = readings

    engines = {r.engine for rs in per_role.values() for r in rs if r.engine is not None}
    if engine is None:
        if len(engines) > 1:
            where = ", ".join(
                f"{r.origin} is {r.engine}" for rs in per_role.values() for r in rs if r.engine
            )
            raise ConfigError(
                f"the inputs disagree about the engine ({where}); a disaggregated deployment runs one engine"
            )
        engine = engines.pop() if engines else SGLANG

    explicit_context = (
        Figure(context_length, "--context-length") if context_length is not None else None
    )
    merged = {role: _merge(per_role[role]) for role in ROLES}
    for role in ROLES:
        _check_role(role, merged[role], per_role[role])
    missing = [
        line
        for role in ROLES
        for line in _missing_figures(role, merged[role], per_role[role], engine, explicit_context)
    ]
    if len(missing) == 1:
        raise ConfigError(missing[0])
    if missing:
        raise ConfigError(f"{len(missing)} figures were not found:\n  - " + "\n  - ".join(missing))
    prefill = _resolve_node(PREFILL, merged[PREFILL], engine, explicit_context)
    decode = _resolve_node(DECODE, merged[DECODE], engine, explicit_context)

    if explicit_context is not None:
        _check_figure("advertised", "context window", explicit_context)
        advertised = explicit_context
    elif prefill.context_length.value >= decode.context_length.value:
        advertised = Figure(
            prefill.context_length.value, f"largest node context: {prefill.context_length.source}"
        )
    else:
        advertised = Figure(
            decode.context_length.value, f"largest node context: {decode.context_length.source}"
        )

    if advertised.value < _SMALLEST_WINDOW[engine]:
        raise ConfigError(
            f"the advertised context window of {advertised.value} tokens ({advertised.source}) admits no prompt: "
            f"{engine} needs a window of at least {_SMALLEST_WINDOW[engine]} tokens to serve a one-token prompt; "
            "give the real window"
        )

    version_source: str | None = None
    if version is not None:
        version_source = "--release"
    elif engine == SGLANG:
        known = [(n.engine_version, n.role) for n in (prefill, decode) if n.engine_version]
        if known:
            version = known[0][0]
            for v, _ in known[1:]:
                assert v is not None
                version = _older(version, v)
            version_source = "/server_info version" + (
                " (the older node)" if len({v for v, _ in known}) > 1 else ""
            )
    return Deployment(
        engine=engine,
        advertised_context=advertised,
        prefill=prefill,
        decode=decode,
        version=version,
        version_source=version_source,
    )
