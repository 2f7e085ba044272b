"""Code gates (issue 20): ruff, mypy and import-linter, run with the pinned tools.

Each gate runs the tool the way a contributor runs it (CONTRIBUTING.md), with the settings in
pyproject.toml, as a subprocess of this interpreter so the pinned versions installed with
``pip install -e ".[dev]"`` are the ones used, never whatever is first on PATH. A failing gate
fails with the tool's own output, so the message says what to fix and where. The same three
run as pre-commit hooks (.pre-commit-config.yaml).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
#: What ruff checks: the product and everything shipped or run next to it.
RUFF_PATHS = ("overlap_desktop", "tests", "bench", "installers", "docs", "tools")
#: A gate that takes longer than this is hung, not slow (a guard, never a pass condition).
HANG_GUARD_S = 900


def _pins() -> dict[str, str]:
    """Tool name -> version pinned with ``==`` in the dev extra of pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for req in project["optional-dependencies"]["dev"]:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^;\s]+)\s*", req)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


def _report(name: str, proc: subprocess.CompletedProcess[str]) -> str:
    out = (proc.stdout + proc.stderr).strip()
    return f"{name} failed (exit {proc.returncode}); fix what it reports:\n{out[-20000:]}"


@pytest.mark.parametrize("tool", ["ruff", "mypy", "import-linter"])
def test_the_installed_gate_tools_are_the_pinned_ones(tool: str) -> None:
    """A newer ruff or mypy finds new things; the gates must mean the same on every machine."""
    pins = _pins()
    assert tool in pins, f"{tool} is not pinned with == in pyproject.toml's dev extra"
    installed = metadata.version(tool)
    assert installed == pins[tool], (
        f"{tool} {installed} is installed but pyproject.toml pins {pins[tool]}; "
        f'run `python -m pip install -e ".[dev]"`')


def test_ruff_finds_nothing() -> None:
    proc = _run("-m", "ruff", "check", "--no-cache", *RUFF_PATHS)
    if proc.returncode != 0:
        pytest.fail(_report("ruff check " + " ".join(RUFF_PATHS), proc), pytrace=False)


def test_mypy_is_clean_with_the_project_config() -> None:
    # Files, strictness and the Python version come from [tool.mypy]; the cache (.mypy_cache,
    # git-ignored) keeps a re-run to seconds.
    proc = _run("-m", "mypy")
    if proc.returncode != 0:
        pytest.fail(_report("mypy", proc), pytrace=False)


def test_import_layers_hold() -> None:
    """The contracts in [tool.importlinter]: the core is Qt-free and below the api; the shells
    (cli, gui) use the public api only."""
    proc = _run("-c", "import sys; from importlinter.cli import lint_imports_command; "
                      "sys.exit(lint_imports_command())")
    if proc.returncode != 0:
        pytest.fail(_report("lint-imports", proc), pytrace=False)
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", proc.stdout)
    assert kept and int(kept.group(1)) >= 2, f"the layer contracts were not all checked:\n{proc.stdout}"


def _private_imports(source: str, where: str) -> list[str]:
    """``file:line: name from module`` for each ``_name`` imported from an overlap_desktop module.

    A module's ``_private`` names stay inside it (issue 35): what another module needs is part of
    its interface and is named so. Private *modules* (``readers/_mcap_file.py``) are fine: the
    underscore goes on the module, and its public names are what its package uses.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0 and not (node.module or "").startswith("overlap_desktop"):
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.append(f"{where}:{node.lineno}: {alias.name} from {'.' * node.level}{node.module or ''}")
    return found


def test_the_private_import_check_sees_one() -> None:
    planted = "from overlap_desktop.core.index.reading import IndexedFile, _hidden\nfrom .db import _x\n"
    assert _private_imports(planted, "m.py") == ["m.py:1: _hidden from overlap_desktop.core.index.reading",
                                                 "m.py:2: _x from .db"]
    assert _private_imports("from collections import _chain_map\nfrom overlap_desktop import __version__\n",
                            "m.py") == []


def test_no_module_imports_another_modules_private_name() -> None:
    found = [hit for path in sorted((ROOT / "overlap_desktop").rglob("*.py"))
             for hit in _private_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, ("private names imported from another module (make them public, in __all__, or "
                       "move them to the module that uses them):\n" + "\n".join(found))


def _reexports(source: str, where: str) -> list[str]:
    """Names ``source`` hands on without defining them: ``from m import x as x`` (the explicit
    re-export idiom), or an imported name listed in ``__all__``.

    A name is imported from the module that defines it (issue 35); only a package's front (its
    ``__init__.py``, and ``overlap_desktop.api``) gathers names from elsewhere.
    """
    tree = ast.parse(source)
    found, imported, defined = [], set(), set()
    for node in tree.body:
        for n in (node.body + node.orelse) if isinstance(node, ast.If) else [node]:
            if isinstance(n, ast.ImportFrom):
                for alias in n.names:
                    imported.add(alias.asname or alias.name)
                    if alias.asname == alias.name:
                        found.append(f"{where}:{n.lineno}: {alias.name} (import ... as {alias.name})")
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(n.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                for target in n.targets if isinstance(n, ast.Assign) else [n.target]:
                    defined.update(x.id for x in ast.walk(target) if isinstance(x, ast.Name))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))):
            found += [f"{where}:{node.lineno}: {e.value} (in __all__, imported)" for e in node.value.elts
                      if isinstance(e, ast.Constant) and e.value in imported and e.value not in defined]
    return found


#: Re-exports still in place, in code other branches own (issue 35 removed the rest); delete a
#: line when its module stops handing the name on.
_REEXPORTS_LEFT = {
    "overlap_desktop/core/ingest/readers/mcap.py": "MCAP_MAGIC (the readers' split is another branch's)",
    "overlap_desktop/core/text/overlap.py": "tokenizers and n-gram hashing, used through the module by tests",
    "overlap_desktop/gui/results.py": "rgb_to_pixmap (the GUI is another branch's)",
}


def test_the_reexport_check_sees_both_forms() -> None:
    planted = ("from overlap_desktop.core.match.types import QueryStream as QueryStream\n"
               "from overlap_desktop.core.match.results import speed_change\n"
               "def mine() -> None: ...\n"
               "__all__ = ['mine', 'speed_change']\n")
    assert _reexports(planted, "m.py") == ["m.py:1: QueryStream (import ... as QueryStream)",
                                           "m.py:4: speed_change (in __all__, imported)"]
    assert _reexports("from a import b\nfrom c import d as e\n__all__ = ['f']\nf = b\n", "m.py") == []


def test_no_module_hands_on_names_it_does_not_define() -> None:
    found = [hit for path in sorted((ROOT / "overlap_desktop").rglob("*.py"))
             if path.name != "__init__.py" and path != ROOT / "overlap_desktop" / "api.py"
             and path.relative_to(ROOT).as_posix() not in _REEXPORTS_LEFT
             for hit in _reexports(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not found, ("names re-exported by a module that does not define them (import them from the "
                       "module that does):\n" + "\n".join(found))


#: Import name -> distribution, where they differ; imports of the standard library are skipped.
_DIST_OF = {"av": "av", "yaml": "pyyaml", "PySide6": "pyside6-essentials", "shiboken6": "pyside6-essentials",
            "jinja2": "jinja2", "markupsafe": "jinja2", "google_crc32c": "google-crc32c",
            "mcap_ros2": "mcap-ros2-support", "mcap_ros1": "mcap-ros1-support", "dask": "dask",
            "distributed": "dask", "tomli": "tomli"}
#: Imported although not declared, and why that is right.
_UNDECLARED_OK = {
    "lz4": "rosbags' own dependency (the ros extra); read only inside ROS 1 bags rosbags opened",
    "ruamel": "rosbags' own dependency (the ros extra); parses rosbag2 metadata.yaml as rosbags does",
}


def _declared() -> set[str]:
    """Distributions the product may import: runtime dependencies and every extra but dev."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for extra, items in project["optional-dependencies"].items():
        if extra != "dev":
            reqs += items
    return {re.split(r"[\s<>=!~;\[]", r.strip(), maxsplit=1)[0].lower() for r in reqs}


def test_the_product_imports_only_declared_dependencies() -> None:
    # scipy once slipped in through a lazy import: a test-only library that the bundle then had to
    # carry (~35 MB) and that a plain `pip install` would not have installed.
    declared = _declared()
    found = []
    for path in sorted((ROOT / "overlap_desktop").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                top = name.split(".")[0]
                if not top or top in sys.stdlib_module_names or top in ("overlap_desktop", *_UNDECLARED_OK):
                    continue
                if _DIST_OF.get(top, top).lower().replace("_", "-") not in declared:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not found, ("the product imports libraries pyproject.toml does not declare for it (add them to "
                       "dependencies or an extra, with a comment saying why):\n" + "\n".join(found))
