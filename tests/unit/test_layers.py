"""The layers hold: import-linter's contracts (pyproject.toml) pass, and would catch a breach.

The core never imports Qt, the api, the app helpers or the shells; the CLI and the GUI import
``overlap_desktop.api`` only. These tests run import-linter itself with the project's own
configuration, then run it on a copy of the package with one forbidden import planted in each
layer to show the check is not vacuous. The api's typing mirror (the ``TYPE_CHECKING`` imports
at its end) is kept in step with its lazy ``_EXPORTS`` table here too.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "overlap_desktop"

# The console script's own code, run with this interpreter (a PATH lookup could find another one).
_LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint(project: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on ``project`` (its pyproject.toml, its copy of the package), no cache."""
    env = {**os.environ, "PYTHONPATH": str(project), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", _LINT, "--no-cache", "--no-logo"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def _contracts() -> list[dict[str, Any]]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        contracts: list[dict[str, Any]] = tomllib.load(fh)["tool"]["importlinter"]["contracts"]
    return contracts


def test_contracts_cover_the_core_and_both_shells() -> None:
    by_source: dict[str, set[str]] = {}
    for c in _contracts():
        if c["type"] != "forbidden":
            continue
        for src in c["source_modules"]:
            by_source.setdefault(src, set()).update(c["forbidden_modules"])
    assert {"overlap_desktop.api", "overlap_desktop.cli", "overlap_desktop.gui", "overlap_desktop.services",
            "PySide6"} <= by_source["overlap_desktop.core"]
    for shell in ("overlap_desktop.cli", "overlap_desktop.gui"):
        assert {"overlap_desktop.core", "overlap_desktop.services", "overlap_desktop.config",
                "overlap_desktop.paths", "overlap_desktop.errors"} <= by_source[shell], shell
    # Issue 35: the whole order written down, and no circles anywhere.
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers" and "containers" not in c]
    assert layers[0] == "overlap_desktop.cli | overlap_desktop.gui" and layers[-1].startswith("overlap_desktop.errors")
    assert "overlap_desktop.core.engines" in layers
    # ... and the stages of a comparison, one way, inside core/match.
    (stages,) = [c["layers"] for c in _contracts() if c.get("containers") == ["overlap_desktop.core.match"]]
    assert stages[0] == "compare" and stages[-1] == "segments"
    assert any(c["type"] == "acyclic_siblings" and c["ancestors"] == ["overlap_desktop"] for c in _contracts())
    assert not any(c.get("ignore_imports") for c in _contracts())


def test_the_layer_contracts_hold() -> None:
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken" in proc.stdout, proc.stdout


@pytest.mark.parametrize(("module", "planted"), [
    ("cli/commands/files.py", "from overlap_desktop.core.index.store import DB_NAME"),
    ("gui/state.py", "from overlap_desktop.errors import OverlapError"),
    ("core/types.py", "import overlap_desktop.api"),
    # Within the core: an upward import (index beneath match) breaks the layers contract.
    ("core/index/plan.py", "import overlap_desktop.core.match.compare"),
])
def test_a_forbidden_import_breaks_a_contract(tmp_path: Path, module: str, planted: str) -> None:
    shutil.copytree(PACKAGE, tmp_path / "overlap_desktop", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "overlap_desktop" / module
    # Appended at the end: a module-level import the package never runs here, only parses.
    text = target.read_text(encoding="utf-8").rstrip("\n") + f"\n{planted}  # planted by test_layers\n"
    target.write_text(text, encoding="utf-8")
    line = text.count("\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert " 0 broken" not in proc.stdout, proc.stdout
    # The report names the planted import by its line: the copy was checked, not an installed package.
    source = "overlap_desktop." + module.removesuffix(".py").replace("/", ".")
    imported = planted.split()[1]
    assert f"{source} -> {imported} (l.{line})" in proc.stdout, proc.stdout


def _typing_mirror() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` at the end of api.py."""
    tree = ast.parse((PACKAGE / "api.py").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    out.update({alias.name: imp.module for alias in imp.names})
    return out


def test_the_api_typing_mirror_matches_its_export_table() -> None:
    from overlap_desktop import api

    # A name moved in _EXPORTS but not in the mirror leaves the shells type-checked against the old module.
    mirror = _typing_mirror()
    wrong = {name: module for name, module in api._EXPORTS.items() if mirror.get(name) != module}
    extra = sorted(set(mirror) - set(api._EXPORTS))
    assert not wrong and not extra, (
        f"api.py: run `python tools/sync_api_typing.py`; import these under `if TYPE_CHECKING:` "
        f"from the module _EXPORTS names: {wrong}; "
        f"imported there but not exported: {extra}")


@pytest.mark.parametrize("name", ["library_status", "LibraryStatus", "library_files", "check_offer", "OfferCheck",
                                  "ExitCode", "OverlapError", "Cancelled", "Progress", "user_config_file",
                                  "MAX_THREADS", "default_demo_dir", "atomic_write_bytes"])
def test_what_the_shells_need_is_in_the_api(name: str) -> None:
    from overlap_desktop import api

    assert name in api.__all__
    assert getattr(api, name) is not None
