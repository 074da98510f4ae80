"""docs/CHANGING.md stays true (issue 30, item 6): every file its recipes name exists, and the
files that hold a table a recipe extends are named in that recipe."""

from __future__ import annotations

import re

from conftest import ROOT

TEXT = (ROOT / "docs" / "CHANGING.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return TEXT.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _named(text: str) -> set[str]:
    return {m for m in re.findall(r"`([\w./-]+\.(?:py|md))`", text) if "/" in m or m == "README.md"}


def test_every_file_a_recipe_names_exists():
    missing = sorted(p for p in _named(TEXT) if not (ROOT / p).exists())
    assert not missing, f"docs/CHANGING.md names files that do not exist: {missing}"


def test_every_module_with_a_table_of_operations_is_in_the_recipe_of_an_operation():
    """A module that reads ownership/ir/ops.py or writes operations from a FORMS table is a
    place a new operation must reach."""
    holders = set()
    for path in (ROOT / "ownership").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"from \.+ir(\.ops)? import|from \. import ops|\bFORMS\b.*[=:]", text):
            holders.add(str(path.relative_to(ROOT)))
    assert {"ownership/interpret/batch.py", "ownership/interpret/native_source.py", "ownership/interpret/smt_terms.py",
            "ownership/ir/graph.py"} <= holders, sorted(holders)  # (the scan finds the backends)
    missing = sorted(holders - _named(_section("A new operation of the language")) - {"ownership/ir/__init__.py"})
    assert not missing, f"the recipe of a new operation does not name {missing}"


def test_every_list_of_engines_is_in_the_recipe_of_an_engine():
    """The registry and the differential runner list the engines; api.py runs them."""
    section = _named(_section("A new engine"))
    for path in ("ownership/registry.py", "ownership/api.py", "tests/differential/runner.py",
                 "tests/language/test_semantics.py"):
        assert path in section, path
