"""`ownership matrix` (issue 33, item 1): every release and fix of a spec against every
property, each property on its own; the tables of docs/specs are its output."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from conftest import ROOT, one_error_line, run_cli

from ownership import schemas
from ownership.trace import read_itf


def test_each_property_is_checked_on_its_own_so_one_violation_does_not_hide_another():
    """vllm_nixl_pd unfixed: its whole run stops at its first violation; the matrix shows the
    others, each at its own shortest step, and the properties that hold in every state."""
    doc = json.loads(run_cli("matrix", "vllm_nixl_pd", "--json").out)
    jsonschema.validate(doc, schemas.load("matrix"), registry=schemas.registry())
    first = doc["rows"][0]
    assert first["label"] == "no fix" and first["verdict"] == "violated" and not first["complete"]
    cells = first["properties"]
    assert cells["stale-read"]["result"] == "violated" and cells["stale-read"]["steps"] == 5
    assert cells["free-in-flight"]["steps"] == 3 and cells["double-free"]["result"] == "holds"
    for prop, cell in cells.items():  # each cell is what `check --only PROPERTY` answers
        alone = json.loads(run_cli("check", "vllm_nixl_pd", "--only", prop, "--json").out)
        assert (alone["verdict"] == "violated") == (cell["result"] == "violated"), prop
        if cell["result"] == "violated":
            assert len(alone["steps"]) == cell["steps"], prop


def test_rows_the_user_names_and_the_traces_it_writes(tmp_path):
    out = tmp_path / "traces"
    run = run_cli("matrix", "sglang_pd", "--row", "none", "--row", "0.5.21", "--row", "door-retire+coverage-check",
                  "--property", "stale-read", "--property", "double-free", "--markdown", "--out-dir", str(out))
    assert run.code == 0, run.out + run.err
    lines = run.out.strip().splitlines()
    assert lines[0] == "| run | verdict | states | stale-read | double-free | stranded-decode-pages |"
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| no fix", "| 0.5.21", "| --fix door-retire --fix coverage-check"]
    link = re.search(r"\[violated at step 6\]\(([^)]+)\)", lines[2])
    assert link is not None, lines[2]
    trace = read_itf(link.group(1))
    assert trace.violation.property == "stale-read" and len(trace.steps) - 1 == 6
    assert trace.reproduce.startswith("ownership check sglang_pd") and "--only stale-read" in trace.reproduce
    replay = run_cli("replay", link.group(1))
    assert replay.code == 1, replay.out + replay.err  # (the trace still violates on its own spec)


def test_a_bounded_search_is_a_bounded_cell_and_exit_3():
    doc = json.loads(run_cli("matrix", "sglang_pd", "--row", "0.5.21", "--property", "leak", "--max-states", "20",
                             "--json").out)
    assert doc["rows"][0]["properties"]["leak"]["result"] == "bounded" and doc["exit_code"] == 3


def test_bad_rows_and_properties_are_bad_input():
    one_error_line(run_cli("matrix", "sglang_pd", "--row", "door-retyre"), "door-retyre")
    one_error_line(run_cli("matrix", "sglang_pd", "--property", "stale-red"), "stale-red")


SPECS = ["sglang_pd", "vllm_nixl_pd", "vllm_block_pool", "vllm_nixl_load_failure",
         pytest.param("sglang_disagg", marks=pytest.mark.long)]


@pytest.mark.parametrize("spec", SPECS)
def test_the_docs_tables_are_the_matrix(spec):
    """docs/specs/SPEC.md's design review matrix is what `ownership matrix SPEC --markdown`
    prints today (a change to the spec or the engines that changes it fails here)."""
    page = (ROOT / "docs" / "specs" / f"{spec}.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- ownership matrix {spec} --markdown -->\n(.*?)\n<!-- end of the matrix -->", page, re.S)
    assert found is not None, f"docs/specs/{spec}.md has no matrix section"
    made = run_cli("matrix", spec, "--markdown")
    assert made.code == 0, made.err
    assert found.group(1) == made.out.strip()
