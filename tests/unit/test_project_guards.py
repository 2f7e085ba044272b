"""Architecture guards: the core never imports Qt; the product never does network I/O."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "overlap_desktop"

QT = ("PySide6", "pyqtgraph", "shiboken6", "PyQt5", "PyQt6", "PySide2")
NETWORK = ("socket", "ssl", "socketserver", "urllib", "urllib3", "http", "requests", "httpx", "aiohttp",
           "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "nntplib", "xmlrpc", "asyncio",
           "websocket", "websockets", "paramiko", "grpc", "zmq", "PySide6.QtNetwork", "PySide6.QtWebEngineCore",
           "PySide6.QtWebEngineWidgets", "PySide6.QtWebSockets", "PySide6.QtHttpServer")


def _py_files(exclude: tuple[str, ...] = ()) -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if not any(part in exclude for part in p.relative_to(PKG).parts))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names (also inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.append((node.lineno, str(node.args[0].value)))
    return out


def _matches(module: str, banned: tuple[str, ...]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


def test_no_qt_import_outside_gui_static() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line}: {mod}" for p in _py_files(exclude=("gui",))
           for line, mod in _imports(p) if _matches(mod, QT)]
    assert bad == [], "Qt imported outside overlap_desktop/gui:\n" + "\n".join(bad)


def test_no_network_module_anywhere_static() -> None:
    assert _py_files(), "no sources found"
    bad = [f"{p.relative_to(ROOT)}:{line}: {mod}" for p in _py_files()
           for line, mod in _imports(p) if _matches(mod, NETWORK)]
    assert bad == [], "network modules imported in the product:\n" + "\n".join(bad)


_IMPORT_ALL = r"""
import importlib, json, pkgutil, sys
import overlap_desktop, overlap_desktop.core, overlap_desktop.api as api
failed = {}
for info in pkgutil.walk_packages(overlap_desktop.core.__path__, "overlap_desktop.core."):
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("overlap_desktop"):
            failed[info.name] = repr(exc)
    except Exception as exc:
        failed[info.name] = repr(exc)
for name in api.__all__:
    try:
        getattr(api, name)
    except (ImportError, AttributeError):
        pass  # a name whose module is not written yet
importlib.import_module("overlap_desktop.cli.main").build_parser()
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6", "PyQt5", "PyQt6"))
print(json.dumps({"qt": qt, "failed": failed}))
"""


def test_core_api_and_cli_import_no_qt_at_runtime() -> None:
    proc = subprocess.run([sys.executable, "-c", _IMPORT_ALL], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["qt"] == [], f"Qt loaded by core/api/cli: {result['qt']}"
    assert result["failed"] == {}, f"core modules that do not import: {result['failed']}"


_NO_SOCKETS = r"""
import json, socket, sys
calls = []
def refuse(name):
    def f(*a, **k):
        calls.append(name)
        raise OSError("network access attempted: " + name)
    return f
socket.socket.connect = refuse("connect")
socket.socket.connect_ex = refuse("connect_ex")
socket.socket.bind = refuse("bind")
socket.socket.sendto = refuse("sendto")
socket.getaddrinfo = refuse("getaddrinfo")
socket.create_connection = refuse("create_connection")
from overlap_desktop.cli.main import main
codes = [main(["config"]), main(["doctor", "--json"]), main(["files", "--json"])]
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6"))
print(json.dumps({"calls": calls, "codes": codes, "qt": qt}))
"""


def test_cli_makes_no_network_calls_and_loads_no_qt_at_runtime(tmp_path: Path) -> None:
    env = {"PATH": "", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CONFIG_HOME": str(tmp_path / "c"), "OVERLAP_INDEX": str(tmp_path / "ix"),
           "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _NO_SOCKETS], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["calls"] == []
    assert result["qt"] == []  # doctor reads the Qt version from metadata, never imports it
    assert result["codes"][0] == 0 and result["codes"][2] == 0
