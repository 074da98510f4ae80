"""Look for disagreements outside pytest, group them by kind, and shrink one spec per kind.

    cd tests && python -m differential.hunt --specs 500 [--shrink] [--without if,negation]

Runs the differential comparison (runner.check_spec) on random generated specs, groups the
disagreements by their *signature* (the reference's verdict and, per disagreeing engine, its
outcome), and prints one spec per signature: the smallest seen, or with --shrink the one
Hypothesis shrinks to while keeping that signature. This is how tests/differential/findings/
was collected; `--without` leaves generator features out (generator.FEATURES) to look past a
known disagreement. Specs are written under the failures directory (runner.failures_dir()).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from .generator import FEATURES, GeneratedSpec, specs
from .runner import ENGINES, STEPS, Report, answers_text, check_spec, finding, unraised_seeded


def signatures(report: Report) -> list[tuple[Any, ...]]:
    """The kinds of disagreement a report shows (empty when everything agrees): one for the
    engines (the reference's verdict and each disagreeing engine's outcome), and one per kind
    of seeded error that the reference ran without raising."""
    if report.skipped or report.oracle is None:
        return []
    verdict = report.oracle.decision().verdict
    parts = set()
    for p in report.problems:
        a = report.answers.get(p.engine)
        if a is None:  # the loader, the reference, a single step: what it says, without values
            text = p.text.rsplit("}: ", 1)[-1]
            parts.add((p.engine, re.sub(r"\d+", "N", re.sub(r"/\S*|\{.*\}", "", text))[:70]))
        elif a.outcome == "crash":
            parts.add((p.engine, "crash " + re.sub(r":.*\(at", " (at", a.message)))
        elif a.outcome == verdict:
            parts.add((p.engine, f"{a.outcome} but: " + re.sub(r"\d+", "N", p.text)[:60]))
        else:
            parts.add((p.engine, a.outcome))
    for exc in report.oracle.raw.values():
        parts.add(("reference", f"raises a raw {exc.split(':')[0]}"))
    out = [(verdict, tuple(sorted(parts)))] if parts else []
    kinds = {text.split("(")[1].split(")")[0] for text in unraised_seeded(report)}
    out += [("seeded", kind) for kind in sorted(kinds)]
    return out


FINDINGS = Path(__file__).parent / "findings"
BEGIN, END = "# Answers at ", "# (end of answers)"


def update_findings() -> int:
    """Re-run every finding and rewrite its answers block (between BEGIN and END)."""
    import subprocess

    warnings.simplefilter("ignore")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=FINDINGS).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "ownership"], capture_output=True, text=True,
                           cwd=FINDINGS.parent.parent.parent).stdout.strip()
    import ownership

    package = Path(ownership.__file__).resolve().parent
    snapshot = package.parent / "REV"   # a checkout of one commit (git archive) says which
    if package.parent == FINDINGS.parent.parent.parent.resolve():
        where = f"{rev}{' + uncommitted changes to ownership/' if dirty else ''}"
    else:
        where = snapshot.read_text().strip() if snapshot.exists() else str(package)
    for path in sorted(FINDINGS.glob("*.py")):
        for _ in range(3):  # the block's length moves the spec's lines: again until it stays
            report = check_spec(finding(path), (*ENGINES, STEPS), path=path)
            block = [f"{BEGIN}{where} (python -m differential.hunt --findings rewrites this block):"]
            # the comment is committed: paths inside the repository, never this machine's
            root = str(FINDINGS.parent.parent.parent.resolve()) + "/"
            block += [f"#   {line.replace(root, '')}" for line in answers_text(report)]
            block.append(END)
            text = path.read_text()
            lines = text.splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith(BEGIN))
            stop = next(i for i, line in enumerate(lines) if line.startswith(END))
            new = "\n".join(lines[:start] + block + lines[stop + 1:]) + "\n"
            if new == text:
                break
            path.write_text(new)
        print(f"{path.name}: {'agrees' if not report.problems and not unraised_seeded(report) else 'disagrees'}")
    return 0


_KINDS: dict[Any, type[Exception]] = {}


def _kind(sig: Any) -> type[Exception]:
    """One exception class per signature: Hypothesis then shrinks each kind on its own."""
    if sig not in _KINDS:
        _KINDS[sig] = type(f"Disagreement{len(_KINDS)}", (Exception,), {})
    return _KINDS[sig]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specs", type=int, default=300)
    parser.add_argument("--shrink", action="store_true", help="let Hypothesis shrink one spec per kind")
    parser.add_argument("--without", default="", help="generator features to leave out, comma-separated")
    parser.add_argument("--engines", default=",".join((*ENGINES, STEPS)))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--findings", action="store_true",
                        help="re-run every spec of findings/ and rewrite the answers in its comment")
    args = parser.parse_args(argv)
    if args.findings:
        return update_findings()
    warnings.simplefilter("ignore")
    features = FEATURES - set(filter(None, args.without.split(",")))
    engines = tuple(args.engines.split(","))
    found: dict[Any, tuple[GeneratedSpec, Report]] = {}
    start = time.monotonic()
    phases = [Phase.generate, Phase.shrink] if args.shrink else [Phase.generate]

    @settings(max_examples=args.specs, deadline=None, phases=phases, database=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=True)
    @given(specs(features))
    def search(spec: GeneratedSpec) -> None:
        report = check_spec(spec, engines)
        sigs = signatures(report)
        if not sigs:
            return
        if args.shrink:
            found[sigs[0]] = (spec, report)   # the last one is the shrunk one
            raise _kind(sigs[0])(str(sigs[0]))
        for sig in sigs:
            if sig not in found or len(spec.source) < len(found[sig][0].source):
                found[sig] = (spec, report)

    if args.seed is not None:
        search = hypothesis_seed(args.seed)(search)
    try:
        search()
    except BaseException as e:  # the disagreements Hypothesis shrank (an ExceptionGroup)
        group = e.exceptions if isinstance(e, BaseExceptionGroup) else [e]
        unexpected = [x for x in group if type(x) not in _KINDS.values()]
        if unexpected:
            raise unexpected[0] from None
    print(f"{args.specs} specs in {time.monotonic() - start:.0f} s: {len(found)} kinds of disagreement")
    for sig, (spec, report) in sorted(found.items(), key=lambda kv: str(kv[0])):
        saved = report.save()
        print("=" * 100)
        print(sig)
        print(report.failure_text(saved))
        for text in unraised_seeded(report):
            print(f"  reference: {text}")
        print(spec.source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
