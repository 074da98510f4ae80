"""The --json outputs of ownership against the JSON Schemas it ships (ownership/schemas/):
each real output of check, prove, replay, list and config-check, and every error and stop
under --json, validates against its command's schema and carries `schema_version`."""

from __future__ import annotations

import json
import tomllib

import jsonschema
import pytest
from conftest import ROOT, run_cli, spec_path

from ownership import schemas

INCIDENT_DEPLOYMENT = ["--context-length", "1048576", "--prefill-pool-tokens", "681280",
                       "--decode-pool-tokens", "2097152", "--page-size", "64"]


def _valid(name: str, out: str) -> dict:
    """The one JSON object of `out`, validated against schema `name`; returns it."""
    doc = json.loads(out)
    validator = jsonschema.Draft202012Validator(schemas.load(name), registry=schemas.registry(),
                                                format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == schemas.SCHEMA_VERSION
    return doc


def test_every_shipped_schema_is_a_valid_draft_2020_12_schema():
    """Each schema file is itself valid, names draft 2020-12 and an $id of its own."""
    ids = set()
    for name in schemas.NAMES:
        schema = schemas.load(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)
        ids.add(schema["$id"])
    assert len(ids) == len(schemas.NAMES)


def test_the_schemas_ship_as_package_data():
    """pyproject.toml installs ownership.schemas and its *.json files with the package."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "ownership.schemas" in setup["packages"]
    assert "*.json" in setup["package-data"]["ownership.schemas"]
    on_disk = {p.stem for p in (ROOT / "ownership" / "schemas").glob("*.json")}
    assert on_disk == set(schemas.NAMES)


CHECKS = {
    "violated": ("check", "sglang_pd", "--json"),
    "verified": ("check", "sglang_pd", "--fix", "door-retire", "--json"),
    "bounded": ("check", "sglang_pd", "--fix", "door-retire", "--max-states", "50", "--json"),
    "released": ("check", "sglang_pd", "--release", "0.5.20", "--json"),
    "bmc-symbolic": ("check", "sglang_pd", "--engine", "bmc", "--symbolic", "prefill_pool=1..3", "--depth", "6", "--json"),
    "fuzz": ("check", "sglang_pd", "--engine", "fuzz", "--runs", "20", "--seed", "1", "--profile", "ci", "--json"),
    "invariant": ("check", spec_path("counter.py"), "--param", "limit=1", "--json"),
    "format-json": ("check", "sglang_pd", "--format", "json"),
}


@pytest.mark.parametrize("case", CHECKS, ids=list(CHECKS))
def test_check_json_validates_against_its_schema(case):
    """Every verdict and engine of `check --json` fits check.json, with the exit code it states."""
    run = run_cli(*CHECKS[case])
    doc = _valid("check", run.out)
    assert doc["exit_code"] == run.code


def test_a_violation_in_json_carries_its_steps_and_narrative():
    """The counterexample's actions and one narrative line per state (the initial one too)."""
    doc = _valid("check", run_cli("check", "sglang_pd", "--json").out)
    assert len(doc["narrative"]) == len(doc["steps"]) + 1 == 7
    assert doc["narrative"][1] == "prefill rejects 3 pages; its placeholder is 1 page"


def test_replay_json_validates_against_its_schema(tmp_path):
    """Still violated (exit 1) and no longer violating (exit 0) both fit replay.json."""
    trace = tmp_path / "t.itf.json"
    assert run_cli("check", "sglang_pd", "--out", str(trace)).code == 1
    for extra, code in (((), 1), (("--fix", "door-retire"), 0), (("--release", "0.5.21"), 0)):
        run = run_cli("replay", str(trace), *extra, "--json")
        assert run.code == code and _valid("replay", run.out)["exit_code"] == code


@pytest.mark.long
def test_prove_json_validates_against_its_schema():
    """A proof, a base-case violation and a counterexample to induction fit prove.json."""
    for args, code in ((("--fix", "door-retire"), 0), ((), 1), (("--fix", "door-retire", "--k", "1"), None)):
        run = run_cli("prove", "sglang_pd", *args, "--json")
        doc = _valid("prove", run.out)
        assert doc["exit_code"] == run.code and (code is None or run.code == code)


def test_list_json_validates_against_its_schema():
    """`list --json` names every shipped spec; `list SPEC --json` its declarations."""
    specs = _valid("list", run_cli("list", "--json").out)
    assert {s["name"] for s in specs["specs"]} >= {"sglang_pd", "sglang_disagg", "vllm_block_pool", "vllm_nixl_pd", "vllm_nixl_load_failure"}
    for name in ("sglang_pd", "vllm_block_pool"):
        doc = _valid("list", run_cli("list", name, "--json").out)
        assert doc["spec"] == name
    pd = _valid("list", run_cli("list", "sglang_pd", "--param", "decode_pool=6", "--json").out)
    pools = {p["name"]: p for p in pd["pools"]}
    assert pools["prefill"]["sized_by"] == "context" and pools["decode"]["pages"] == 6
    assert pd["releases"]["0.5.20"] == ["post-forward-retire"]


def test_config_check_json_validates_against_its_schema():
    """A failing deployment, a passing one and a --spec run fit config-check.json."""
    fail = run_cli("config-check", *INCIDENT_DEPLOYMENT, "--release", "0.5.19", "--json")
    assert fail.code == 1 and _valid("config-check", fail.out)["verdict"] == "fail"
    fixed = ["--context-length", "1048576", "--prefill-pool-tokens", "2097152", "--decode-pool-tokens", "2097152",
             "--page-size", "64"]
    ok = run_cli("config-check", *fixed, "--release", "0.5.21", "--json")
    assert _valid("config-check", ok.out)["exit_code"] == ok.code
    spec = run_cli("config-check", *INCIDENT_DEPLOYMENT, "--release", "0.5.19", "--spec", "--json")
    assert _valid("config-check", spec.out)["spec"]["spec"] == "sglang_pd"


ERRORS = {
    "bad option value": (("check", "sglang_pd", "--max-states", "x", "--json"), "usage", "check"),
    "missing argument": (("check", "--json"), "usage", "check"),
    "unknown option": (("check", "sglang_pd", "--fxi", "door-retire", "--json"), "usage", "check"),
    "under --format json": (("check", "sglang_pd", "--max-states", "x", "--format", "json"), "usage", "check"),
    "under --format=json": (("prove", "sglang_pd", "--k", "x", "--format=json"), "usage", "prove"),
    "json beside sarif": (("check", "sglang_pd", "--json", "--format", "sarif"), "usage", "check"),
    "unknown fix": (("check", "sglang_pd", "--fix", "nope", "--json"), "usage", "check"),
    "unknown release": (("prove", "sglang_pd", "--release", "9.9", "--json"), "usage", "prove"),
    "spec error": (("check", spec_path("bad/python_if.py"), "--json"), "spec-error", "check"),
    "missing spec": (("list", "no/such/spec.py", "--json"), "usage", "list"),
    "unreadable trace": (("replay", "no-such-trace.json", "--json"), "trace-format", "replay"),
    "config figure": (("config-check", "--context-length", "1048576", "--json"), "config", "config-check"),
    "config usage": (("config-check", *INCIDENT_DEPLOYMENT, "--max-states", "5", "--json"), "usage", "config-check"),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_under_json_an_error_is_one_json_object_on_stdout(case):
    """Bad input under --json: exit 2, nothing on stderr, one object on stdout that fits both
    error.json and the command's schema; a spec error names its file and line."""
    args, kind, schema = ERRORS[case]
    run = run_cli(*args)
    assert run.code == 2 and run.err == ""
    doc = _valid("error", run.out)
    _valid(schema, run.out)
    assert doc["kind"] == kind and doc["exit_code"] == 2
    if kind == "spec-error":
        assert doc["file"].endswith("python_if.py") and isinstance(doc["line"], int)
    if kind == "usage" and case in ("bad option value", "missing argument", "unknown option"):
        assert doc["help"] == f"ownership {args[0]} --help"


def test_under_json_an_internal_error_is_a_json_object_with_exit_4(monkeypatch):
    """A bug of ownership under --json: exit 4, kind internal, the command to report it with."""
    from ownership import api

    def broken(*args, **kwargs):
        raise AssertionError("the batch and concrete interpreters disagree")

    monkeypatch.setattr(api, "check", broken)
    run = run_cli("check", "sglang_pd", "--json")
    doc = _valid("error", run.out)
    _valid("check", run.out)
    assert run.code == 4 and doc["kind"] == "internal" and doc["exit_code"] == 4
    assert "AssertionError" in doc["error"] and doc["command"] == "ownership check sglang_pd --json"


@pytest.mark.parametrize("command,schema", [(("check", "sglang_pd"), "check"), (("prove", "sglang_pd"), "prove")])
def test_under_json_a_stop_before_the_verdict_is_a_json_object_with_exit_3(monkeypatch, command, schema):
    """Ctrl-C (or a limit) before the engine reports: exit 3, verdict inconclusive, no coverage."""
    from ownership import api

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "check", interrupted)
    monkeypatch.setattr(api, "model_for", interrupted)
    run = run_cli(*command, "--json")
    doc = _valid(schema, run.out)
    assert run.code == 3 and doc["verdict"] == "inconclusive" and doc["coverage"] is None
    assert doc["stopped_by"] == "interrupt"
