"""`ownership new NAME` (issue 33, item 6): a spec and its docs page to start from, which
check at once, and from which the matrix and a SARIF file follow."""

from __future__ import annotations

import json
import os
import re
import subprocess

from conftest import OWNERSHIP, one_error_line, run_cli


def _run(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([OWNERSHIP, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_new_spec_checks_at_once_and_its_page_holds_the_checkers_outputs(tmp_path):
    made = _run(tmp_path, "new", "handoff")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "violated: free-in-flight without the fix; verified with --fix free-after-land" in made.stdout
    spec, page = tmp_path / "handoff.py", tmp_path / "handoff.md"
    assert "class Handoff(Spec):" in spec.read_text() and "ownership check handoff.py" in spec.read_text()
    bug = _run(tmp_path, "check", "handoff.py")
    assert bug.returncode == 1 and "violated: free-in-flight" in bug.stdout
    fixed = _run(tmp_path, "check", "handoff.py", "--fix", "free-after-land")
    assert fixed.returncode == 0 and "verified: no violation in all 43 reachable states" in fixed.stdout
    text = page.read_text()
    assert "    violated: free-in-flight" in text and "    verified: no violation in all 43 reachable states" in text
    table = re.search(r"<!-- ownership matrix handoff.py --markdown -->\n(.*?)\n<!-- end of the matrix -->", text, re.S)
    assert table is not None and table.group(1) == _run(tmp_path, "matrix", "handoff.py", "--markdown").stdout.strip()
    sarif = json.loads(_run(tmp_path, "check", "handoff.py", "--format", "sarif").stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["free-in-flight"]


def test_a_folder_is_made_and_nothing_is_written_over(tmp_path):
    folder = tmp_path / "specs" / "mine"
    first = run_cli("new", "kv_handoff", "--dir", str(folder))
    assert first.code == 0, first.out + first.err
    assert "class KvHandoff(Spec):" in (folder / "kv_handoff.py").read_text()
    before = (folder / "kv_handoff.py").read_text()
    one_error_line(run_cli("new", "kv_handoff", "--dir", str(folder)), "exists already", "never writes over")
    assert (folder / "kv_handoff.py").read_text() == before
    one_error_line(run_cli("new", "Bad-Name", "--dir", str(folder)), "'Bad-Name'", "lower case")
    one_error_line(run_cli("new", "../escape", "--dir", str(folder)), "'../escape'")
    assert sorted(os.listdir(folder)) == ["kv_handoff.md", "kv_handoff.py"]
