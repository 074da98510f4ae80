"""What `pip install .` installs: every package of ownership/ with its data files, and every
library the package imports declared as a dependency (a fresh machine has nothing else).

CI installs the package (not an editable checkout), so a subpackage missing from
pyproject.toml's list broke every command there while every test passed here."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib

from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUP = PYPROJECT["tool"]["setuptools"]


def test_every_package_of_the_source_tree_is_installed():
    """Each folder of ownership/ holding an __init__.py is in [tool.setuptools] packages."""
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ownership").rglob("__init__.py")}
    listed = set(SETUP["packages"]) - {"ownership.specs"}
    assert on_disk == listed, (sorted(on_disk - listed), sorted(listed - on_disk))
    assert SETUP["package-dir"]["ownership.specs"] == "specs" and (ROOT / "specs" / "__init__.py").exists()


def test_every_data_file_of_a_package_is_declared():
    """A package's non-Python files (the JSON Schemas) match a package-data pattern."""
    data = SETUP.get("package-data", {})
    for package in SETUP["packages"]:
        folder = ROOT / SETUP.get("package-dir", {}).get(package, package.replace(".", "/"))
        for f in folder.iterdir():
            if f.is_file() and f.suffix not in (".py", ".pyc"):
                assert any(f.match(pattern) for pattern in data.get(package, [])), f


def _imported_top_levels() -> set[str]:
    names = set()
    for path in [*(ROOT / "ownership").rglob("*.py"), *(ROOT / "specs").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"ownership", "__future__"}


#: imported lazily, by a function that only a user of the optional library calls
OPTIONAL = {"referencing": "schemas.registry(), for jsonschema's users; jsonschema brings it"}


def test_every_imported_library_is_a_declared_dependency():
    """Each third-party module the package imports belongs to a distribution in
    [project] dependencies (pytest, for the plugin, and hypothesis are declared too)."""
    declared = {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in PYPROJECT["project"]["dependencies"]}
    declared |= {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower()
                 for d in PYPROJECT["project"]["optional-dependencies"]["test"]}
    owners = importlib.metadata.packages_distributions()
    for module in sorted(_imported_top_levels() - set(OPTIONAL)):
        dists = {d.lower() for d in owners.get(module, [])}
        assert dists & declared, f"ownership imports {module} (from {sorted(dists)}), not a declared dependency"


#: The team's notebook beside the checkout, which users who clone the project never have
#: (written in two parts, so that this file does not point to it either).
NOTEBOOK = ("..", "shared")


def test_no_tracked_file_points_to_the_team_notebook():
    """Code, tests, specs and docs point inside the repository (docs/incident.md, docs/bugs.md,
    docs/protocols/), never to the notebook or its domain folder."""
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 100
    needles = ("/".join(NOTEBOOK), NOTEBOOK[1] + "/domain")
    for rel in files:
        path = ROOT / rel
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (an image)
        for needle in needles:
            assert needle not in text, f"{rel} points to {needle}"
