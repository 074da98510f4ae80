"""What the checks say: a verdict per check, the numbers behind it, and the report of a deployment.

`CheckVerdict` maps each outcome to its exit code from ownership.result's one table;
`ConfigReport` gathers every `CheckOutcome` of one deployment, plus the --spec run when one was
asked for (ownership.config_check.spec_run attaches it), and gives the --json document.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ownership.result import Verdict

from .deployment import Deployment


class CheckVerdict(enum.Enum):
    """A check's outcome and the exit code it contributes (from ownership.result's one table)."""

    PASS = ("pass", Verdict.VERIFIED.exit_code)
    FAIL = ("fail", Verdict.VIOLATED.exit_code)
    #: Only a --spec run stopped by a limit: not a pass, not a counterexample.
    INCONCLUSIVE = ("inconclusive", Verdict.INCONCLUSIVE.exit_code)

    def __init__(self, word: str, exit_code: int) -> None:
        self.word = word
        self.exit_code = exit_code


@dataclass(frozen=True)
class CheckOutcome:
    """One check: its name, its verdict, the numbers behind it and a one-line explanation."""

    name: str
    verdict: CheckVerdict
    numbers: dict[str, Any]
    explanation: str

    @property
    def passed(self) -> bool:
        return self.verdict is CheckVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.word,
            "numbers": dict(self.numbers),
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ConfigReport:
    """Every check's outcome for one deployment, plus the --spec run when one was asked for."""

    deployment: Deployment
    checks: tuple[CheckOutcome, ...]
    spec_result: Any = None  # ownership.result.CheckResult of the --spec run
    spec_params: dict[str, int] | None = None
    spec_fixes: tuple[str, ...] = ()
    spec_name: str | None = None  # the shipped spec of the --spec run (set with spec_params)

    @property
    def failed(self) -> tuple[CheckOutcome, ...]:
        return tuple(c for c in self.checks if c.verdict is CheckVerdict.FAIL)

    @property
    def verdict(self) -> CheckVerdict:
        """FAIL if any check fails; else INCONCLUSIVE if the spec run stopped early; else PASS."""
        if self.failed:
            return CheckVerdict.FAIL
        if any(c.verdict is CheckVerdict.INCONCLUSIVE for c in self.checks):
            return CheckVerdict.INCONCLUSIVE
        return CheckVerdict.PASS

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def to_json(self) -> dict[str, Any]:
        spec: dict[str, Any] | None = None
        if self.spec_params is not None:
            spec = {
                "spec": self.spec_name,
                "params": dict(self.spec_params),
                "fixes": list(self.spec_fixes),
            }
            if self.spec_result is not None:
                spec.update(_spec_result_json(self.spec_result))
        return {
            "command": "config-check",
            "verdict": self.verdict.word,
            "exit_code": self.exit_code,
            "deployment": self.deployment.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "spec": spec,
        }


def _spec_result_json(result: Any) -> dict[str, Any]:
    """The --spec run in the report's JSON: verdict, coverage, violation, the trace's steps."""
    out: dict[str, Any] = {
        "verdict": result.verdict.word,
        "coverage": result.coverage.to_json(),
        "violation": result.violation.to_json() if result.violation is not None else None,
        "steps": [step.label() for step in result.trace.steps[1:]]
        if result.trace is not None
        else None,
        "reproduce": getattr(result, "reproduce", None),
    }
    return out
