"""A verdict for CI: one SARIF 2.1.0 log (`--format sarif`) and GitHub Actions workflow
commands (`--format github`), for `ownership check` and `ownership prove`.

The SARIF log has one run: the tool `ownership` with its version and one rule per property
the model checks (its id the property's name; its words the kernel's from lang/properties.py,
NOTE(one-voice), or the first paragraph of the spec's docstring for its own), and one result
per violation, at the line of the `def` of the action whose step violates the property in
the spec's file, its trace as a code flow (a location per step, on its action's `def` line,
with the step's narrative). A run without a violation (verified, bounded, inconclusive) has
no result; its invocation holds the verdict and the coverage in words (`properties`), never
more than the coverage. Paths are relative to the working directory where the spec lies
under it (`uriBaseId` %SRCROOT%: run it from the repository's root), else absolute `file:` URIs.

The workflow commands are one `::error file=...,line=...,title=ownership PROPERTY::MESSAGE`
line per violation, each field escaped as GitHub's runner reads them (`escape_data`,
`escape_property`), so that no text of a spec or a trace can end the line or start a command.

Nothing here prints: the commands (cli/check.py, cli/prove.py) print what these build.
"""

from __future__ import annotations

import ast
import inspect
import os
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

#: The SARIF version written, and the $schema it names (the OASIS errata 01 schema).
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

#: The base of relative paths: the working directory of the command (SARIF's usual name).
SRCROOT = "%SRCROOT%"


def tool_version() -> str:
    """The installed version of ownership."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ownership")
    except PackageNotFoundError:  # (run from a source tree that was never installed)
        return "unknown"


# --------------------------------------------------------------------------- where in the spec


def def_line(obj: Any) -> int | None:
    """The line of the `def` (or `class`) of a function or class of a spec: after its
    decorators, which `co_firstlineno` and `inspect` start at. None when its source is gone."""
    try:
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    # (not textwrap.dedent: a docstring's line at column 0 would keep the whole block indented)
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())] if lines else ""
    try:
        tree = ast.parse("".join(line.removeprefix(indent) for line in lines))
    except SyntaxError:
        return start
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return start + node.lineno - 1
    return start


def artifact(path: str) -> dict[str, Any]:
    """The artifactLocation of a file: relative to the working directory (%SRCROOT%) where it
    lies under it, else an absolute `file:` URI."""
    full = Path(os.path.abspath(path))
    try:
        rel = full.relative_to(Path(os.getcwd()))
    except (ValueError, OSError):
        return {"uri": full.as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": SRCROOT}


def _spec_file(model: Any) -> str | None:
    path = model.spec_cls.source_file()
    return None if path == "<unknown>" else path


def display_path(model: Any) -> str | None:
    """The spec's file as a workflow command names it: relative to the working directory
    where it lies under it."""
    path = _spec_file(model)
    if path is None:
        return None
    full = os.path.abspath(path)
    try:
        return Path(full).relative_to(Path(os.getcwd())).as_posix()
    except (ValueError, OSError):
        return full


def _physical(path: str, line: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactLocation": artifact(path)}
    if line is not None:
        out["region"] = {"startLine": line}
    return out


def step_line(model: Any, action: str | None) -> int | None:
    """The `def` line of an action of the spec (the class line for the initial state)."""
    cls = model.spec_cls
    decl = cls._actions.get(action) if action is not None else None
    return _def_line_of(decl.fn if decl is not None else cls)


@cache
def _def_line_of(obj: Any) -> int | None:
    return def_line(obj)


# --------------------------------------------------------------------------- rules


def _paragraph(doc: str) -> str:
    return " ".join(doc.split("\n\n")[0].split())


def _property_decl(model: Any, name: str) -> Any:
    return model.spec_cls._properties.get(name)


def rule(model: Any, name: str) -> dict[str, Any]:
    """The reportingDescriptor of one property: the kernel's words, or the spec's docstring."""
    from ..lang.properties import LIVENESS, PROPERTIES

    words = PROPERTIES.get(name)
    if words is not None:
        short = f"Violated when {words.when}"
        full = f"{short}. In a real engine: {words.hazard}."
    elif name in LIVENESS:
        short = full = LIVENESS[name]
    else:
        decl = _property_decl(model, name)
        doc = decl.doc if decl is not None else ""
        what = decl.kind if decl is not None else "property"
        short = _paragraph(doc) or f"{what} {name} of {model.spec_cls.__name__}"
        full = " ".join(doc.split()) or short
    return {"id": name, "shortDescription": {"text": short}, "fullDescription": {"text": full},
            "defaultConfiguration": {"level": "error"}}


def rule_names(model: Any, extra: Any = ()) -> list[str]:
    """The properties the model checks, in report order: safety, then liveness, then `extra`
    (prove's lemmas)."""
    return list(dict.fromkeys([*model.checked(), *model.liveness_checked(), *extra]))


# --------------------------------------------------------------------------- the log


def _code_flow(model: Any, trace: Any, narrative: list[str | None] | None, path: str) -> dict[str, Any]:
    """The trace as one thread flow: a location per state, on its action's `def` line."""
    viol = trace.violation
    told = narrative or []
    locations = []
    for i, step in enumerate(trace.steps):
        actor = f"[{step.actor}] " if step.actor else ""
        text = f"step {i}, {actor}{step.label()}" if i else "initial state"
        said = told[i] if i < len(told) else None
        if said:
            text += f": {said}"
        if viol is not None and i == viol.step:
            text += f"  <-- violation ({viol.property})"
        location = {"physicalLocation": _physical(path, step_line(model, step.action)), "message": {"text": text}}
        locations.append({"location": location, "executionOrder": i,
                          "importance": "essential" if viol is not None and i == viol.step else "important"})
    n = len(trace.steps) - 1
    if trace.loop is None:
        what = f"a counterexample of {n} step{'' if n == 1 else 's'} from the initial state"
    elif trace.loop == n:
        what = f"a behaviour of {n} steps that then stops (no action is enabled at step {n})"
    else:
        what = f"a lasso of {n} steps, whose steps {trace.loop + 1}..{n} repeat forever"
    return {"message": {"text": what}, "threadFlows": [{"locations": locations}]}


def _result(model: Any, trace: Any, narrative: list[str | None] | None, reproduce: str,
            rules: list[str]) -> dict[str, Any]:
    viol = trace.violation
    path = _spec_file(model)
    out: dict[str, Any] = {
        "ruleId": viol.property,
        "ruleIndex": rules.index(viol.property),
        "level": "error",
        "message": {"text": f"{viol.message} Reproduce: {reproduce}"},
    }
    if path is not None:
        action = trace.steps[viol.step].action if 0 <= viol.step < len(trace.steps) else None
        label = trace.steps[viol.step].label() if 0 <= viol.step < len(trace.steps) else "the violation"
        out["locations"] = [{"physicalLocation": _physical(path, step_line(model, action)),
                             "message": {"text": f"step {viol.step}: {label}"}}]
        decl = _property_decl(model, viol.property)
        if decl is not None:
            out["relatedLocations"] = [{"id": 1, "physicalLocation": _physical(path, _def_line_of(decl.fn)),
                                        "message": {"text": f"{decl.kind} {viol.property} is defined here"}}]
        out["codeFlows"] = [_code_flow(model, trace, narrative, path)]
    out["properties"] = {"step": viol.step, "requests": list(viol.requests),
                         "pages": [{"pool": pool, "page": p} for pool, p in viol.pages],
                         "also": list(viol.also), "reproduce": reproduce}
    return out


def _invocation(verdict: str, coverage: str, code: int, command_line: str | None,
                extra: dict[str, Any] | None) -> dict[str, Any]:
    from ..result import EXIT_CODES

    out: dict[str, Any] = {"executionSuccessful": True, "exitCode": code,
                           "exitCodeDescription": EXIT_CODES.get(code, "")}
    if command_line:
        out["commandLine"] = command_line
    out["properties"] = {"verdict": verdict, "coverage": coverage, **(extra or {})}
    return out


def _log(driver_rules: list[dict[str, Any]], results: list[dict[str, Any]],
         invocation: dict[str, Any]) -> dict[str, Any]:
    driver = {"name": "ownership", "version": tool_version(), "rules": driver_rules}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION,
            "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": results}]}


def sarif_log(model: Any, *, verdict: str, coverage: str, exit_code: int, trace: Any = None,
              narrative: list[str | None] | None = None, reproduce: str = "", command_line: str | None = None,
              extra_rules: Any = (), properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """The SARIF log of a check or proof of `model`: its rules, a result for the violation of
    `trace` (if any), and the verdict and `coverage` (in words) in the invocation's properties."""
    names = rule_names(model, extra_rules)
    viol = trace.violation if trace is not None else None
    if viol is not None and viol.property not in names:
        names.append(viol.property)
    results = [_result(model, trace, narrative, reproduce, names)] if viol is not None else []
    return _log([rule(model, n) for n in names], results,
                _invocation(verdict, coverage, exit_code, command_line, {"reproduce": reproduce, **(properties or {})}))


def stopped_log(reason: str, doing: str, code: int, *, command_line: str | None = None) -> dict[str, Any]:
    """The SARIF log of a command stopped before its engine ran: no rule, no result."""
    return _log([], [], _invocation("inconclusive", f"nothing was explored (stopped by {reason} while {doing})",
                                    code, command_line, {"stopped_by": reason, "while": doing}))


# --------------------------------------------------------------------------- GitHub workflow commands


def escape_data(text: str) -> str:
    """A workflow command's message, as GitHub's runner unescapes it: %, CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title): the message's escapes, `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(*, path: str | None, line: int | None, prop: str, message: str) -> str:
    """One `::error` workflow command."""
    fields = []
    if path is not None:
        fields.append(f"file={escape_property(path)}")
        if line is not None:
            fields.append(f"line={line}")
    fields.append(f"title={escape_property(f'ownership {prop}')}")
    return f"::error {','.join(fields)}::{escape_data(message)}"


def github_annotations(model: Any, trace: Any, reproduce: str) -> list[str]:
    """The `::error` line of the violation of `trace` (none without one)."""
    viol = trace.violation if trace is not None else None
    if viol is None:
        return []
    action = trace.steps[viol.step].action if 0 <= viol.step < len(trace.steps) else None
    return [annotation(path=display_path(model), line=step_line(model, action), prop=viol.property,
                       message=f"{viol.message} Reproduce: {reproduce}")]


__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "annotation", "artifact", "def_line", "escape_data",
           "escape_property", "github_annotations", "rule", "rule_names", "sarif_log", "step_line",
           "stopped_log", "tool_version"]
