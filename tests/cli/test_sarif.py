"""`--format sarif` and `--format github` of check and prove (ownership/render/sarif.py): the
SARIF log validates against the official SARIF 2.1.0 schema (tests/data/sarif/, with its
source and licence), a violation is one result at the `def` line of its action with its
trace as a code flow, a pass is no result and says its verdict and coverage, and the
GitHub workflow commands escape whatever a spec or a trace puts in them."""

from __future__ import annotations

import hashlib
import json
import re
import textwrap

import jsonschema
import pytest
from conftest import ROOT, run_cli, spec_path

from ownership.lang.properties import PROPERTIES
from ownership.render.sarif import annotation, escape_data, escape_property

SCHEMA = ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
#: the sha256 of the OASIS file as copied (tests/data/sarif/README.md)
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(doc: dict) -> list[str]:
    return sorted(e.message for e in _validator().iter_errors(doc))


def _sarif(*args: str, code: int) -> dict:
    """The SARIF log that `ownership ARGS --format sarif` prints, validated; exit code `code`."""
    run = run_cli(*args, "--format", "sarif")
    assert run.code == code, run.out + run.err
    doc = json.loads(run.out)
    assert not _errors(doc), _errors(doc)[:5]
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    return doc


def _def_line(path, name: str) -> int:
    """The line of `def NAME(` in a file, counted from 1."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if re.match(rf"\s*def {name}\(", line))


def test_the_schema_is_the_official_oasis_file():
    """The file is the one copied from oasis-tcs/sarif-spec (its sha256), a valid draft-04
    schema with the errata's id."""
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_the_schema_refuses_a_broken_log():
    """The validation can fail: a log without a version, or with a level SARIF lacks."""
    doc = _sarif("check", "sglang_pd", code=1)
    del doc["version"]
    assert _errors(doc)
    doc = _sarif("check", "sglang_pd", code=1)
    doc["runs"][0]["results"][0]["level"] = "fatal"
    assert _errors(doc)


def test_a_violation_is_one_result_at_the_def_line_of_its_action():
    """sglang_pd is violated (stale-read at step 6, decode_commit): one result, its rule, the
    spec file and the line of `def decode_commit`, the trace as a code flow."""
    doc = _sarif("check", "sglang_pd", code=1)
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ownership" and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert ids == ["stale-read", "read-unowned", "write-unowned", "free-in-flight", "double-free", "leak"]
    stale = driver["rules"][0]
    assert stale["shortDescription"]["text"] == f"Violated when {PROPERTIES['stale-read'].when}"

    [result] = run["results"]
    assert result["ruleId"] == "stale-read" and ids[result["ruleIndex"]] == "stale-read"
    assert result["level"] == "error"
    assert result["message"]["text"].startswith("step 6, decode_commit(r=r1): request r1 read decode pages 1, 2")
    assert result["message"]["text"].endswith("Reproduce: ownership check sglang_pd")
    [location] = result["locations"]
    physical = location["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "specs/sglang_pd.py"
    line = _def_line(ROOT / "specs" / "sglang_pd.py", "decode_commit")
    assert physical["region"]["startLine"] == line

    [flow] = result["codeFlows"]
    steps = flow["threadFlows"][0]["locations"]
    assert len(steps) == 7  # the initial state and 6 steps
    assert steps[1]["location"]["message"]["text"] == \
        "step 1, [router] arrive(r=r1, n=3): prefill rejects 3 pages; its placeholder is 1 page"
    assert steps[1]["location"]["physicalLocation"]["region"]["startLine"] == \
        _def_line(ROOT / "specs" / "sglang_pd.py", "arrive")
    assert steps[6]["location"]["physicalLocation"]["region"]["startLine"] == line
    assert steps[6]["importance"] == "essential"

    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is True and invocation["exitCode"] == 1
    assert invocation["properties"]["verdict"] == "violated"


def test_a_verified_check_has_no_result_and_says_its_coverage():
    """--fix door-retire: verified, exit 0, no result; the verdict and the coverage in words."""
    doc = _sarif("check", "sglang_pd", "--fix", "door-retire", code=0)
    run = doc["runs"][0]
    assert run["results"] == []
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is True and invocation["exitCode"] == 0
    assert invocation["properties"]["verdict"] == "verified"
    assert invocation["properties"]["coverage"] == \
        "no violation in all 903 reachable states (1,394 transitions, depth 14)"


def test_a_bounded_check_claims_no_more_than_its_bound():
    """--max-states: bounded, exit 0, no result, and its coverage says what was not explored."""
    doc = _sarif("check", "sglang_pd", "--fix", "door-retire", "--max-states", "50", code=0)
    props = doc["runs"][0]["invocations"][0]["properties"]
    assert doc["runs"][0]["results"] == []
    assert props["verdict"] == "bounded"
    assert "not every reachable state was explored" in props["coverage"]


def test_a_spec_invariant_has_its_docstring_and_its_definition_line():
    """A spec's own invariant: its rule in its docstring's words, the result at the violating
    action's `def`, and the invariant's `def` as a related location."""
    path = ROOT / spec_path("counter.py")
    doc = _sarif("check", spec_path("counter.py"), "--param", "limit=1", code=1)
    run = doc["runs"][0]
    rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "at-most-limit-running")
    assert rule["shortDescription"]["text"] == "No more than `limit` requests run at once."
    [result] = run["results"]
    assert result["ruleId"] == "at-most-limit-running"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "tests/specs/counter.py"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == _def_line(path, "start")
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == _def_line(path, "at_most_limit_running")


def test_prove_prints_sarif_too():
    """prove: a base-case counterexample is a result at its action; a proof has none, nor has
    a counterexample to induction."""
    doc = _sarif("prove", "sglang_pd", code=1)
    [result] = doc["runs"][0]["results"]
    assert result["ruleId"] == "stale-read"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == \
        _def_line(ROOT / "specs" / "sglang_pd.py", "decode_commit")
    doc = _sarif("prove", "sglang_pd", "--fix", "door-retire", code=0)
    assert doc["runs"][0]["results"] == []
    assert doc["runs"][0]["invocations"][0]["properties"]["verdict"] == "verified"
    # a counterexample to induction may be unreachable: no result, said in the properties
    doc = _sarif("prove", "sglang_pd", "--fix", "door-retire", "--k", "1", code=3)
    props = doc["runs"][0]["invocations"][0]["properties"]
    assert doc["runs"][0]["results"] == [] and props["verdict"] == "inconclusive"
    assert props["counterexample_to_induction"]["possibly_unreachable"] is True
    assert "longer executions are not covered" in props["coverage"]


def test_json_is_format_json_and_the_two_must_agree():
    """--format json prints what --json prints; --json beside another --format is exit 2."""
    a = json.loads(run_cli("check", "sglang_pd", "--json").out)
    b = json.loads(run_cli("check", "sglang_pd", "--format", "json").out)
    for doc in (a, b):
        doc["coverage"].pop("seconds")
    assert a == b
    run = run_cli("check", "sglang_pd", "--json", "--format", "sarif")
    assert run.code == 2 and json.loads(run.out)["kind"] == "usage"
    run = run_cli("check", "sglang_pd", "--format", "xml")
    assert run.code == 2 and run.out == ""


@pytest.mark.parametrize("command", ["check", "prove"])
def test_a_stop_before_the_engine_is_a_sarif_log_too(monkeypatch, command):
    """Ctrl-C (or a limit) before the engine reports: exit 3, a valid log without results
    whose verdict is inconclusive and which says that nothing was explored."""
    from ownership import api

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "check", interrupted)
    monkeypatch.setattr(api, "model_for", interrupted)
    run = run_cli(command, "sglang_pd", "--format", "sarif")
    assert run.code == 3
    doc = json.loads(run.out)
    assert not _errors(doc)
    props = doc["runs"][0]["invocations"][0]["properties"]
    assert doc["runs"][0]["results"] == [] and props["verdict"] == "inconclusive"
    assert props["coverage"] == "nothing was explored (stopped by interrupt while starting)"


def _durations_aside(text: str) -> str:
    return re.sub(r"\d+\.\d+ s\b", "T s", text)


def test_github_format_is_one_error_line_then_the_text_report():
    """--format github: the violation's ::error line, then the text report unchanged."""
    run = run_cli("check", "sglang_pd", "--format", "github")
    assert run.code == 1
    first, _, rest = run.out.partition("\n")
    line = _def_line(ROOT / "specs" / "sglang_pd.py", "decode_commit")
    assert first.startswith(f"::error file=specs/sglang_pd.py,line={line},title=ownership stale-read::step 6, ")
    assert first.endswith(" Reproduce: ownership check sglang_pd")
    text = run_cli("check", "sglang_pd")
    assert _durations_aside(rest) == _durations_aside(text.out)
    verified = run_cli("check", "sglang_pd", "--fix", "door-retire", "--format", "github")
    assert verified.code == 0 and "::" not in verified.out


def test_github_escapes_newlines_commas_and_colons():
    """The message escapes %, CR and LF; a property (file, title) also `,` and `:`."""
    assert escape_data("50% done,\r\nnext: ::x") == "50%25 done,%0D%0Anext: ::x"
    assert escape_property("a,b:c\n%") == "a%2Cb%3Ac%0A%25"
    line = annotation(path="specs/a,title=forged:x.py", line=7, prop="stale-read",
                      message="read pages 1, 2\n::error file=x::forged")
    assert line == ("::error file=specs/a%2Ctitle=forged%3Ax.py,line=7,title=ownership stale-read"
                    "::read pages 1, 2%0A::error file=x::forged")
    assert "\n" not in line


HOSTILE = '''
from ownership import Request, Spec, action, invariant, param, per_request


class Hostile(Spec):
    requests = param(1, "requests")
    started = per_request(bool, False)

    @action
    def start(self, s, r: Request):
        """Start,
::error file=evil.py,line=1::forged by the action
        """
        s.started[r] = True

    @invariant
    def nothing_starts(self, s):
        """Nothing starts, %0A::error title=forged::
::error file=evil.py,line=1,title=forged::forged by the invariant
        """
        return s.started[1] == False
'''


def test_hostile_text_in_a_spec_forges_no_annotation(tmp_path):
    """A docstring with `::` and newlines, and a file name with a comma, give one ::error line,
    whose file and title are ours; the SARIF log stays valid, with one result."""
    spec = tmp_path / "evil,title=forged.py"
    spec.write_text(textwrap.dedent(HOSTILE), encoding="utf-8")
    run = run_cli("check", str(spec), "--format", "github")
    assert run.code == 1, run.out + run.err
    commands = [line for line in run.out.splitlines() if line.startswith("::")]
    assert len(commands) == 1
    props, _, message = commands[0][len("::error "):].partition("::")
    fields = dict(field.split("=", 1) for field in props.split(","))
    assert set(fields) == {"file", "line", "title"}
    assert fields["title"] == "ownership nothing-starts"
    assert fields["file"].endswith("evil%2Ctitle=forged.py")
    assert fields["line"] == str(_def_line(spec, "start"))
    assert "%0A::error" not in message and "%250A::error" in message  # (the docstring's own "%0A", escaped)
    run = run_cli("check", str(spec), "--format", "sarif")
    doc = json.loads(run.out)
    assert not _errors(doc) and len(doc["runs"][0]["results"]) == 1


@pytest.mark.parametrize("command", ["check", "prove"])
def test_help_names_the_formats(command):
    """--help lists the four formats."""
    out = run_cli(command, "--help").out
    assert "--format [text|json|sarif|github]" in out
