"""What every `ownership` command shares: bad input as one `error:` line with exit code 2, a
bug of ownership as one `internal error:` line with exit code 4 (the traceback only under
`--debug` or OWNERSHIP_DEBUG=1), text escaped for the terminal, and the progress line on stderr
for runs that last over a second. Used by every command module of this package (check.py, prove.py, show.py, ...), so that each command behaves the same when invoked alone (as the tests do) or
through the `ownership` group.

Also shared: `-h` beside `--help`; click's own usage errors (a bad option value, a missing
argument) in the same one-line `error:` form, exit 2; under `--json` every error, stop and
internal error as one JSON object on stdout (ownership/schemas/error.json); `--format` (text,
json, sarif, github: `output_format`) and the one SARIF log of a stop (`emit_sarif`); `--release` with
its old spelling `--version` kept as a hidden alias; and shell completion of spec, fix,
parameter, property and release names; the exit-code table of every --help (EXIT_TABLE);
and checking and writing a trace file of --out (`check_out`, `write_trace`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import click

from .. import limits
from ..errors import (
    ConfigError,
    OutputError,
    OwnershipError,
    SpecError,
    TraceFormatError,
    UsageError,
    shorten,
)
from ..render.escape import printable
from ..result import EXIT_BAD_INPUT, EXIT_CODES, EXIT_INTERNAL, Verdict
from ..schemas import SCHEMA_VERSION
from ..trace import to_itf, write_output

#: `-h` as well as `--help`, on the group and on every command run alone.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def write_out(write: Any, *, err: bool = False) -> None:
    """Run `write`, which prints on standard output (on stderr: err=True). Every print of a
    command goes through here. Standard output that cannot be written (the reader closed the
    pipe, the disk is full) is an OutputError: exit 2, said on stderr, never a traceback nor
    the exit code of a verdict the reader did not get. A stderr that cannot be written is let
    be: nothing can be said there, and the exit code still tells."""
    try:
        write()
    except OSError as e:
        if not err:
            raise output_failed(e) from None


def output_failed(e: OSError) -> OutputError:
    """The OutputError of standard output that failed with `e`. Standard output then goes to
    the null device, so that what is still buffered cannot fail again when Python exits
    (which would print a traceback and exit 120)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's runner): nothing buffered fails later
        pass
    return OutputError(f"cannot write the report to standard output ({e.strerror or e}): it is cut short;"
                       " send it to a file, or to a reader that takes all of it")


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print text that may hold strings from a trace or a spec, escaped for the terminal."""
    write_out(lambda: click.echo(printable(text), err=err, nl=nl), err=err)


def emit_json(doc: dict[str, Any], *, indent: int = 1) -> None:
    """Print one JSON object of a --json output on stdout, `schema_version` first. The JSON is
    ASCII (json.dumps escapes every other character), so a trace's text cannot reach the terminal."""
    text = json.dumps({"schema_version": SCHEMA_VERSION, **doc}, indent=indent)
    write_out(lambda: click.echo(text))


def emit_sarif(doc: dict[str, Any]) -> None:
    """Print one SARIF log (ownership/render/sarif.py) on stdout: ASCII JSON, as emit_json's,
    without `schema_version` (SARIF allows no other top-level field)."""
    text = json.dumps(doc, indent=1)
    write_out(lambda: click.echo(text))


def wants_json(ctx: click.Context | None) -> bool:
    """Whether the command was given --json or --format json (parsed, or only typed when
    parsing failed)."""
    c = ctx
    while c is not None:
        if c.params.get("as_json") or c.params.get("output_format") == "json":
            return True
        c = c.parent
    if ctx is None:
        return False
    argv = ctx.find_root().meta.get("ownership.argv", [])
    typed = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in typed or "--format=json" in typed or any(
        a == "--format" and b == "json" for a, b in zip(typed, typed[1:]))


#: What `--format` prints: the text report, one JSON object (as --json), one SARIF 2.1.0
#: log, or GitHub Actions workflow commands before the text report (ownership/render/sarif.py).
FORMATS = ("text", "json", "sarif", "github")


def format_option(f: Any) -> Any:
    """`--format text|json|sarif|github` (default text; `--json` is `--format json`)."""
    return click.option("--format", "output_format", type=click.Choice(FORMATS), default=None,
                        help="What to print: text (the default), json (as --json), sarif (one SARIF 2.1.0"
                             " log, for code scanning) or github (GitHub Actions ::error lines, then the text).")(f)


def output_format(as_json: bool, given: str | None) -> str:
    """The format a command prints: `--format`, or json under `--json`; both must agree."""
    if as_json and given not in (None, "json"):
        raise UsageError(f"--json and --format {given} ask for two formats: give one (--json is --format json)")
    return "json" if as_json else given or "text"


def error_kind(e: OwnershipError) -> str:
    """The `kind` of an error object: which rule the input broke."""
    if isinstance(e, SpecError):
        return "spec-error"
    if isinstance(e, TraceFormatError):
        return "trace-format"
    if isinstance(e, ConfigError):
        return "config"
    if isinstance(e, UsageError):
        return "usage"
    return "bad-input"


def error_doc(message: str, kind: str, code: int, *, file: str | None = None, line: int | None = None,
              **extra: Any) -> dict[str, Any]:
    """The JSON object of an error (ownership/schemas/error.json)."""
    return {"error": message, "kind": kind, "file": file, "line": line, **extra, "exit_code": code}


def report_bad_input(e: OwnershipError, ctx: click.Context | None, *, as_json: bool | None = None) -> None:
    """Print bad input: one `error:` line on stderr (and the steps that reached it), or under
    --json one error object on stdout."""
    steps = list(getattr(e, "steps", None) or [])
    if isinstance(e, OutputError):  # standard output failed: the error goes to stderr, never there
        as_json = False
    if as_json if as_json is not None else wants_json(ctx):
        extra: dict[str, Any] = {"steps": steps} if steps else {}
        message = getattr(e, "message", None) if isinstance(e, SpecError) else None
        emit_json(error_doc(message or str(e), error_kind(e), EXIT_BAD_INPUT,
                            file=getattr(e, "file", None), line=getattr(e, "line", None), **extra))
        return
    echo(f"error: {e}", err=True)
    if steps:
        echo(f"reached from the initial state in {len(steps)} step{'s' if len(steps) != 1 else ''}:", err=True)
        for i, label in enumerate(steps, 1):
            echo(f"  {i}  {label}", err=True)


def stopped_doc(spec: str | None, reason: str, doing: str, code: int) -> dict[str, Any]:
    """The JSON object of a command stopped before it had a verdict (exit 3)."""
    return {"spec": spec, "verdict": "inconclusive", "stopped_by": reason, "while": doing,
            "coverage": None, "exit_code": code}


def debugging(ctx: click.Context | None = None) -> bool:
    """Whether to show tracebacks of internal errors: `ownership --debug ...` or OWNERSHIP_DEBUG=1."""
    if os.environ.get("OWNERSHIP_DEBUG", "") not in ("", "0"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


def _command_line(ctx: click.Context) -> str:
    """The command as the user typed it (its arguments as the outermost command parsed them)."""
    argv = ctx.find_root().meta.get("ownership.argv", sys.argv[1:])
    return shlex.join(["ownership", *argv])


def command_line() -> str:
    """The command that runs now, as the user typed it (a SARIF log's invocation)."""
    return _command_line(click.get_current_context())


class RefusedOutput(click.ClickException):
    """Standard output that failed while click itself printed (--help, --version): one
    `error:` line on stderr, exit code 2, as an OutputError anywhere else."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, e: OutputError) -> None:
        super().__init__(str(e))

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.message}", err=True)


class RefusedUsage(click.ClickException):
    """A usage error of click's own (a bad option value, a missing argument, an unknown
    option or command), shown like any bad input of ownership: one `error:` line with a hint
    to --help (or, under --json, one error object on stdout), exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, e: click.UsageError, ctx: click.Context | None) -> None:
        self.ctx = e.ctx or ctx
        self.as_json = wants_json(self.ctx)
        text = " ".join(e.format_message().split())
        text = (text[:1].lower() + text[1:]).rstrip(".").replace(". Did you mean", "; did you mean")
        text = _shorten_values(text)
        path = self.ctx.command_path.split() if self.ctx is not None else []
        self.help_hint = shlex.join(["ownership", *path[1:], "--help"])
        super().__init__(text)

    def show(self, file: Any = None) -> None:
        if self.as_json:
            emit_json(error_doc(self.message, "usage", EXIT_BAD_INPUT, help=self.help_hint))
        else:
            echo(f"error: {self.message} (see '{self.help_hint}')", err=True)


def _shorten_values(text: str) -> str:
    """click's message with each quoted value shortened (ownership.errors.shorten): click
    quotes the value it refuses whole (`--runs` of 5,000 digits was a 5,000-digit line)."""
    return re.sub(r"'([^']{61,})'", lambda m: repr(shorten(m.group(1), 60)), text)


def _refuse_click_usage(e: click.UsageError, ctx: click.Context | None) -> RefusedUsage | click.UsageError:
    # `ownership` alone prints its help (click's NoArgsIsHelpError): that is no mistake to refuse
    if isinstance(e, click.exceptions.NoArgsIsHelpError):
        return e
    return RefusedUsage(e, ctx)


def _run_reporting_errors(invoke: Any, ctx: click.Context) -> Any:
    try:
        return _reporting(invoke, ctx)
    except OutputError as e:  # the report of an outcome (a stop, an internal error) could not be written
        report_bad_input(e, ctx)
        ctx.exit(EXIT_BAD_INPUT)


def _reporting(invoke: Any, ctx: click.Context) -> Any:
    try:
        with limits.command_body():  # NOTE(command-interrupt): Ctrl-C is ignored once it ends
            return invoke(ctx)
    except OwnershipError as e:
        report_bad_input(e, ctx)
        ctx.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        code = Verdict.INCONCLUSIVE.exit_code
        if wants_json(ctx):
            emit_json(stopped_doc(ctx.params.get("spec"), "interrupt", "running", code))
        else:
            echo("interrupted", err=True)
        ctx.exit(code)
    except MemoryError:
        code = Verdict.INCONCLUSIVE.exit_code
        if wants_json(ctx):
            emit_json(stopped_doc(ctx.params.get("spec"), "memory", "running", code))
        else:
            echo("inconclusive: stopped by memory: the machine ran out of memory (give a smaller"
                 " instance, or --max-memory to stop earlier with the coverage so far)", err=True)
        ctx.exit(code)
    except click.UsageError as e:
        raise _refuse_click_usage(e, ctx) from None
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise
    except Exception as e:  # a bug of ownership: never exit 0 or 1 (result.EXIT_INTERNAL)
        if debugging(ctx):
            traceback.print_exc()
        where = "" if debugging(ctx) else " (the traceback: add --debug)"
        what = f"this is a bug of ownership, not of your spec or input: {type(e).__name__}: {e}"
        if wants_json(ctx):
            emit_json(error_doc(what + where, "internal", EXIT_INTERNAL, command=_command_line(ctx)))
        else:
            echo(f"internal error: {what}. Please report it with the command: {_command_line(ctx)}{where}",
                 err=True)
        ctx.exit(EXIT_INTERNAL)


def _merge_release_alias(ctx: click.Context) -> None:
    """`--version RELEASE`, the old spelling of `--release RELEASE`, lands in `release`."""
    if "version_alias" not in ctx.params:
        return
    alias = ctx.params.pop("version_alias")
    if alias is None:
        return
    given = ctx.params.get("release")
    if given is not None and given != alias:
        raise UsageError(f"--release {given} and --version {alias} (the old spelling of --release)"
                         " name different releases: give one --release")
    ctx.params["release"] = alias


class _OurSettings:
    """What a command and the group share: -h, and click's usage errors as our `error:` line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["context_settings"] = {**CONTEXT_SETTINGS, **(kwargs.get("context_settings") or {})}
        super().__init__(*args, **kwargs)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)  # type: ignore[misc]
        except click.UsageError as e:
            raise _refuse_click_usage(e, e.ctx or parent) from None
        except OSError as e:  # while printing --help or --version (parsing writes nothing else)
            raise RefusedOutput(output_failed(e)) from None
        except KeyboardInterrupt:  # (click would say "Aborted!" and exit 1: a verdict's code)
            echo("interrupted", err=True)
            raise click.exceptions.Exit(Verdict.INCONCLUSIVE.exit_code) from None


class OwnershipCommand(_OurSettings, click.Command):
    """A click command that turns bad input into `error: ...` and exit code 2."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # (run alone, as the tests do, the command's own name comes first; under the group the
        # group has recorded the whole command line already)
        ctx.meta.setdefault("ownership.argv", [ctx.info_name or "", *args])
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        def run(c: click.Context) -> Any:
            _merge_release_alias(c)
            return click.Command.invoke(self, c)

        return _run_reporting_errors(run, ctx)


class OwnershipGroup(_OurSettings, click.Group):
    """A click group that turns bad input into `error: ...` and exit code 2."""

    command_class = OwnershipCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta.setdefault("ownership.argv", list(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        return _run_reporting_errors(super().invoke, ctx)


def release_option(help: str) -> Any:
    """`--release RELEASE` (an engine release whose fixes to turn on), and its old spelling
    `--version RELEASE`, hidden, so that it is not confused with `ownership --version`."""
    def decorate(f: Any) -> Any:
        f = click.option("--version", "version_alias", metavar="RELEASE", hidden=True,
                         help="The old spelling of --release.", shell_complete=complete_release)(f)
        return click.option("--release", "release", metavar="RELEASE", help=help,
                            shell_complete=complete_release)(f)
    return decorate


def release_spelling(command: str) -> str:
    """A reproduce command with today's spelling of an engine release: --release, not --version.

    (ownership.api writes the old spelling, which still works as a hidden alias.)"""
    if " --version " not in command:
        return command
    return shlex.join("--release" if word == "--version" else word for word in shlex.split(command))


# --------------------------------------------------------------------------- shell completion


def _first_argument(ctx: click.Context) -> str | None:
    """The name of the command's first positional argument (spec, trace_file), or None."""
    return next((p.name for p in ctx.command.params if isinstance(p, click.Argument)), None)


def _typed_argument(ctx: click.Context) -> str | None:
    """The command's first positional argument as typed on the shell's line so far.

    While an option's value is being completed (`check sglang_pd --fix d<TAB>`), click 8.5
    leaves the arguments before it out of ctx.params; the shell's words (COMP_WORDS, which
    click's bash, zsh and fish scripts all set) still hold them."""
    try:
        words = shlex.split(os.environ.get("COMP_WORDS", ""))
        upto = int(os.environ.get("COMP_CWORD", len(words)))
    except ValueError:
        return None
    with_value = {o for p in ctx.command.params if isinstance(p, click.Option) and not p.is_flag
                  for o in p.opts}
    if ctx.info_name not in words:
        return None
    i = words.index(ctx.info_name) + 1
    while i < min(upto, len(words)):
        word = words[i]
        if word in with_value:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word
    return None


def _spec_class(ctx: click.Context) -> Any:
    """The spec class the command line names so far (for completing its names), or None.

    A trace file (replay) only says which shipped spec it is of: a spec file is loaded only
    when the user typed its path."""
    from ..lang.loader import load_spec

    ref = ctx.params.get("spec") or (_typed_argument(ctx) if _first_argument(ctx) == "spec" else None)
    trace_file = ctx.params.get("trace_file") or (_typed_argument(ctx) if _first_argument(ctx) == "trace_file" else None)
    if ref is None and trace_file:
        try:
            with open(trace_file, encoding="utf-8") as f:
                ours = json.load(f).get("#meta", {}).get("ownership", {})
            ref = ours.get("spec") if isinstance(ours.get("spec"), str) else None
            shipped_only = True
        except (OSError, ValueError, AttributeError):
            return None
    else:
        shipped_only = False
    if ref is None and ctx.command.name == "config-check":
        ref = "sglang_pd"
    if not ref:
        return None
    try:
        return load_spec(ref, shipped_only=shipped_only)
    except Exception:  # completion never fails a shell: no names then
        return None


def _items(names: Any, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_spec(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """SPEC: the shipped spec names, and files (a path to a .py file)."""
    from click.shell_completion import CompletionItem

    from ..lang.loader import shipped_specs

    names = _items(sorted(shipped_specs()), incomplete)
    return names + [CompletionItem(incomplete, type="file")]


def complete_fix(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--fix NAME: the fixes of the spec named on the command line."""
    cls = _spec_class(ctx)
    return _items(list(cls._fixes) if cls is not None else [], incomplete.replace("_", "-"))


def complete_param(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--param NAME=VALUE: the parameters of the spec, as `NAME=` (its default after it)."""
    cls = _spec_class(ctx)
    if cls is None:
        return []
    if "=" in incomplete:
        name = incomplete.partition("=")[0]
        p = cls._params.get(name)
        return _items([f"{name}={cls.default_env()[name]}"] if p is not None else [], incomplete)
    return _items([f"{n}=" for n in cls._params], incomplete)


def complete_symbolic(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--symbolic NAME[=LO..HI]: the parameters of the spec."""
    cls = _spec_class(ctx)
    return _items(list(cls._params) if cls is not None else [], incomplete)


def complete_property(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--skip PROPERTY: the kernel's properties and the spec's own."""
    from ..kernel import PROPERTIES

    cls = _spec_class(ctx)
    own = [n for n, p in cls._properties.items() if p.kind != "lemma"] if cls is not None else []
    return _items([*PROPERTIES, *own], incomplete)


def complete_release(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--release RELEASE: the engine releases the spec names."""
    cls = _spec_class(ctx)  # config-check: the releases of sglang_pd, the spec of its --spec run
    return _items(list(cls.releases) if cls is not None else [], incomplete)


class Report(Protocol):
    """What a progress line prints: an engine's report (ownership.progress.Progress), or the
    monitor's reading of a log."""

    @property
    def seconds(self) -> float: ...

    def describe(self) -> str: ...


class Progress:
    """Prints a progress line on stderr once a run has lasted a second: in place on a
    terminal, every 10 s otherwise (CI logs): an engine's report (ownership.progress.Progress)
    in its own words, `describe()`."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.printed = False
        self.last = 0.0

    def __call__(self, p: Report) -> None:
        if p.seconds < 1.0:
            return
        now = time.monotonic()
        if not self.tty and now - self.last < 10.0:
            return
        self.last = now
        line = printable(f"  {p.describe()}")
        write_out(lambda: click.echo(("\r" + line) if self.tty else line, err=True, nl=not self.tty), err=True)
        self.printed = True

    def close(self) -> None:
        if self.printed and self.tty:
            write_out(lambda: click.echo("", err=True), err=True)


#: The most digits of a `--param` value: more than any parameter can use (a pool or a slot has
#: at most 134,217,728 values; a state is 64-bit words), and far below the 4,300 digits past
#: which Python refuses to read a number (an internal error, issue 29).
MAX_PARAM_DIGITS = 18


def parse_params(pairs: tuple[str, ...]) -> dict[str, int]:
    """`--param NAME=VALUE` options as a dict (every command that takes parameters)."""
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        shown = shorten(repr(pair), 60)
        if not sep or not name:
            raise UsageError(f"--param {shown}: expected NAME=VALUE, e.g. --param decode_pool=8")
        if not name.strip().isidentifier() or len(name.strip()) > 60:
            raise UsageError(f"--param {shown}: {shorten(repr(name.strip()), 40)} is not a parameter's name (a Python"
                             " name); see the parameters with `ownership list SPEC`")
        digits = value.strip().replace("_", "").replace(",", "")
        if not (digits.lstrip("+-").isascii() and digits.lstrip("+-").isdigit() and len(digits) - len(digits.lstrip("+-")) <= 1):
            # (int() also reads other scripts' digits: "٣" was taken as 3)
            raise UsageError(f"--param {shown}: {shorten(repr(value), 40)} is not an integer: write it in the digits"
                             " 0-9, e.g. --param decode_pool=8")
        if len(digits.lstrip("+-0")) > MAX_PARAM_DIGITS:
            raise UsageError(f"--param {shorten(name.strip(), 40)}={shorten(digits, 30)}: a parameter has at most"
                             f" {MAX_PARAM_DIGITS} digits (no pool or slot holds more than 134,217,728 values);"
                             " give a smaller value, e.g. --param decode_pool=8")
        out[name.strip()] = int(digits)
    return out


@contextmanager
def limited(max_seconds: float | None, max_memory: int | None, progress: Any, *, as_json: bool = False,
            spec: str | None = None, unexplored: str = "nothing was explored",
            fmt: str = "text") -> Iterator[limits.Guard]:
    """Run a command's block under its whole-command limits (ownership.limits). A limit or
    Ctrl-C outside an engine (which reports its own coverage) ends the command here: exit 3,
    one line saying what stopped it, while doing what, and what was not done (`fmt` sarif: a
    SARIF log without results that says so)."""
    guard: limits.Guard | None = None
    try:
        with limits.armed(max_seconds=max_seconds, max_memory=max_memory, reporter=progress) as guard:
            yield guard
    except KeyboardInterrupt:  # LimitReached too (the block has closed its progress line)
        reason = (guard.tripped if guard is not None else None) or "interrupt"
        doing = (guard.stopped_in if guard is not None else None) or "starting"
        code = Verdict.INCONCLUSIVE.exit_code
        if as_json:
            emit_json(stopped_doc(spec, reason, doing, code))
        elif fmt == "sarif":
            from ..render.sarif import stopped_log

            emit_sarif(stopped_log(reason, doing, code))
        else:
            echo(f"inconclusive: stopped by {reason} while {doing}; {unexplored}")
        sys.exit(code)


#: The exit-code table at the foot of every command's --help (from the one table in ownership.result).
EXIT_TABLE = "\b\nExit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


def check_out(out: str | None, option: str = "--out", what: str = "trace") -> None:
    """Refuse an output file (--out, --html, --dot) that cannot be one before the run, not
    after it: an empty name, a folder, a path in a folder that does not exist."""
    if out is None:
        return
    if not out:
        raise UsageError(f"{option} '': an empty file name; give {option} the name of a file for the {what},"
                         " or leave the option out")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write the {what} to {out}: the folder {folder} does not exist;"
                         f" create it first, or give {option} a path in an existing folder")
    if os.path.isdir(out):
        raise UsageError(f"cannot write the {what} to {out}: it is a folder; give {option} the name of a file")


def write_trace(trace: Any, out: str, narrative: list[str | None] | None = None) -> None:
    """Write the trace as ITF JSON, each state's narrative in its `#meta` (for `ownership show`)."""
    doc = to_itf(trace)
    for state, text in zip(doc["states"], narrative or []):
        if text:
            state["#meta"]["narrative"] = text
    try:
        # whole or not at all (trace.write_output); a UsageError if it fails
        write_output(out, json.dumps(doc, indent=1) + "\n", "trace")
    except OSError as e:
        raise UsageError(f"cannot write the trace to {out}: {e.strerror or e}") from None
