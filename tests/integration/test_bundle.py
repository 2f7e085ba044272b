"""The frozen app: PyInstaller bundle, Windows installer script and CI workflow.

Two kinds of tests:

- Fast consistency checks (run in the default suite): the Inno Setup script, the
  workflow and the spec agree with each other (executable names, paths, the per-user
  install, the .ovlm association), licence staging ships the GPL/LGPL texts and the
  FFmpeg note, and the reader registry works without entry points (as in a frozen app).
- ``@pytest.mark.bundle`` tests build the bundle (one to a few minutes) and run the frozen
  CLI (``--version``, ``doctor``, ``demo``) and GUI (``--self-test``). They are part of the
  default suite, which CI runs (it fits the time budget); ``-m "not bundle"`` leaves them out,
  ``-m bundle`` runs only them (set ``OVERLAP_BUNDLE_DIR=dist/overlap`` to test an existing
  build instead of building).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path, PureWindowsPath
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLERS = ROOT / "installers"
ISS = INSTALLERS / "windows" / "overlap.iss"
WORKFLOW = ROOT / ".github" / "workflows" / "windows-installer.yml"
SPEC = INSTALLERS / "pyinstaller" / "overlap.spec"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_py() -> ModuleType:
    return _load("overlap_build", INSTALLERS / "build.py")


@pytest.fixture(scope="module")
def support() -> ModuleType:
    return _load("bundle_support", INSTALLERS / "pyinstaller" / "bundle_support.py")


def _iss_sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            current = m.group(1)
            sections.setdefault(current, [])
        else:
            sections.setdefault(current, []).append(line)
    return sections


def _iss_defines(text: str) -> dict[str, str]:
    return dict(re.findall(r'^\s*#define\s+(\w+)\s+"([^"]*)"', text, re.M))


def _entries(lines: list[str]) -> list[dict[str, str]]:
    """Parse ``Key: value; Key: "value"`` lines of an Inno Setup section."""
    out = []
    for line in lines:
        entry = {}
        for key, value in re.findall(r'(\w+):\s*("(?:[^"]|"")*"|[^;]*)', line):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1].replace('""', '"')  # Inno Setup's quoting
            entry[key] = value
        out.append(entry)
    return out


def _expand(value: str, defines: dict[str, str]) -> str:
    return re.sub(r"\{#(\w+)\}", lambda m: defines[m.group(1)], value)


# --------------------------------------------------------------------------- fast checks


def test_iss_is_a_per_user_upgradeable_installer() -> None:
    text = ISS.read_text(encoding="utf-8")
    setup = dict(line.split("=", 1) for line in _iss_sections(text)["Setup"])
    assert setup["PrivilegesRequired"] == "lowest"
    assert "PrivilegesRequiredOverridesAllowed" not in setup
    assert re.fullmatch(r"\{\{[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\}", setup["AppId"])
    assert setup["AppVersion"] == "{#Version}"
    assert setup["CloseApplications"] in ("yes", "force")
    assert setup["ChangesAssociations"] == "yes"
    # The default folder is the per-user Programs folder; the InstallDir define exists only
    # so the wine lane can name a folder ({autopf} does not expand there).
    defines = _iss_defines(text)
    assert setup["DefaultDirName"] == "{#InstallDir}"
    assert defines["InstallDir"] == "{autopf}\\" + defines["AppName"]
    # The version must be passed (/DVersion=...), never silently defaulted.
    assert re.search(r"#ifndef Version\s+#error", text)
    # Files the [Setup] section points at exist in the repository.
    for key in ("SetupIconFile", "LicenseFile"):
        assert (ISS.parent / setup[key].replace("\\", "/")).resolve().is_file(), key
    # A clean upgrade removes the previous version's libraries first.
    assert any("{app}\\_internal" in line for line in _iss_sections(text)["InstallDelete"])


def test_iss_registers_ovlm_under_hkcu_opening_the_gui() -> None:
    text = ISS.read_text(encoding="utf-8")
    defines = _iss_defines(text)
    reg = _entries(_iss_sections(text)["Registry"])
    assert all(e["Root"] == "HKCU" for e in reg)
    by_key = {(_expand(e["Subkey"], defines), _expand(e.get("ValueName", ""), defines)): e for e in reg}
    assert _expand(by_key[("Software\\Classes\\.ovlm", "")]["ValueData"], defines) == defines["ProgId"]
    cmd = by_key[(f"Software\\Classes\\{defines['ProgId']}\\shell\\open\\command", "")]["ValueData"]
    assert _expand(cmd, defines) == '"{app}\\overlap-desktop.exe" "%1"'
    # Uninstalling removes the ProgId (and so the association).
    assert "uninsdeletekey" in by_key[(f"Software\\Classes\\{defines['ProgId']}", "")]["Flags"]


def test_iss_ships_what_the_spec_builds() -> None:
    text = ISS.read_text(encoding="utf-8")
    defines = _iss_defines(text)
    spec = SPEC.read_text(encoding="utf-8")
    # Executable names in the spec (EXE(..., name="...")) and in the installer agree.
    exe_names = set(re.findall(r'EXE\(.*?name="([^"]+)"', spec, re.S))
    assert exe_names == {"overlap-desktop", "overlap"}
    assert defines["AppExe"] == "overlap-desktop.exe" and defines["CliExe"] == "overlap.exe"
    sources = [_expand(e["Source"], defines) for e in _entries(_iss_sections(text)["Files"])]
    assert all(s.startswith(defines["BundleDir"] + "\\") for s in sources)
    rel = {s[len(defines["BundleDir"]) + 1:] for s in sources}
    assert rel == {"overlap-desktop.exe", "overlap.exe", "LICENSE.txt", "NOTICE.txt", "VERSION.txt",
                   "_internal\\*"}
    # The spec writes the top-level files the installer copies.
    for name in ("LICENSE.txt", "NOTICE.txt", "VERSION.txt"):
        assert f'"{name}"' in spec
    icons = _entries(_iss_sections(text)["Icons"])
    assert any(_expand(i["Filename"], defines) == "{app}\\overlap-desktop.exe" and "Tasks" not in i
               for i in icons), "Start-menu shortcut"
    assert any(i.get("Tasks") == "desktopicon" for i in icons), "optional desktop shortcut"


def _load_yaml(path: Path) -> Any:
    try:
        import yaml

        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except ImportError:
        from ruamel.yaml import YAML

        return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def test_workflow_builds_installs_and_smoke_tests_on_windows() -> None:
    wf = _load_yaml(WORKFLOW)
    job = wf["jobs"]["installer"]
    assert job["runs-on"] == "windows-latest"
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    script = "\n".join(s.get("run", "") for s in steps)
    for needle in ('pip install ".[bundle', "python installers/build.py --smoke", "choco install innosetup",
                   "ISCC.exe", "/DVersion=", "/VERYSILENT", "--self-test", "--smoke-only --bundle",
                   "unins000.exe", "HKCU:\\Software\\Classes\\.ovlm"):
        assert needle in script, needle
    offscreen = [s for s in steps if "--self-test" in s.get("run", "")]
    assert all(s.get("env", {}).get("QT_QPA_PLATFORM") == "offscreen" for s in offscreen)


def test_spec_excludes_unused_qt_and_names_every_command_and_reader(support: ModuleType) -> None:
    excludes = set(support.excludes(ROOT))
    for mod in ("PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtWebEngineCore", "PySide6.Qt3DCore",
                "PySide6.QtMultimedia", "PySide6.QtPdf"):
        assert mod in excludes
    for mod in ("PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "av", "numpy", "overlap_desktop"):
        assert mod not in excludes
    spec = SPEC.read_text(encoding="utf-8")
    assert 'collect_submodules("overlap_desktop")' in spec
    assert "collect-all" not in spec and "collect_all(" not in spec
    assert "noarchive=True" in spec


_BLOCKED_IMPORT_CHECK = r"""
import importlib, importlib.abc, os, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import bundle_support as bs
from pathlib import Path
blocked = tuple(bs.excludes(Path(sys.argv[2])))

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ImportError("excluded from the bundle: " + name)
        return None

sys.meta_path.insert(0, Block())
# As in the bundle, where the real module is absent: the runtime hook's stand-in answers first.
exec(compile(Path(sys.argv[1], "rthook_no_qtopengl.py").read_text(), "rthook", "exec"), {})
sys.meta_path.insert(0, sys.meta_path.pop())
os.environ["QT_QPA_PLATFORM"] = "offscreen"
import overlap_desktop
failed = []
for m in pkgutil.walk_packages(overlap_desktop.__path__, "overlap_desktop."):
    if m.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(m.name)
    except Exception as exc:
        failed.append(m.name + ": " + repr(exc))
from PySide6.QtWidgets import QApplication
app = QApplication([])
from overlap_desktop.gui.plot import MatchPlot
plot = MatchPlot()
plot.resize(300, 200)
plot.grab()
print("FAILED" if failed else "OK", *failed, sep="\n")
"""


def test_excluded_modules_are_not_needed_by_the_product() -> None:
    """Import every module of the product (and draw a match plot) with the spec's excluded
    modules blocked: what the bundle leaves out must not be something the app loads."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _BLOCKED_IMPORT_CHECK, str(INSTALLERS / "pyinstaller"),
                           str(ROOT)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[:1] == ["OK"], proc.stdout


def test_reader_registry_works_without_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frozen app has no distribution metadata, so no entry points: the built-in readers
    must still all load (the spec collects their modules)."""
    import overlap_desktop.core.ingest.readers as readers

    monkeypatch.setattr(readers, "entry_points", lambda **kw: [])
    monkeypatch.setattr(readers, "_cache", None)
    found, failed = readers.available_readers(refresh=True)
    names = {r.name for r in found}
    assert not failed, [(f.name, f.error) for f in failed]
    assert names == set(readers.BUILTIN_READERS)
    monkeypatch.setattr(readers, "_cache", None)


def test_licence_staging_ships_gpl_texts_and_the_ffmpeg_note(support: ModuleType, tmp_path: Path) -> None:
    out = support.stage_licences(tmp_path, ROOT, {"av", "numpy", "PySide6", "shiboken6", "pdqhash"})
    names = {p.name for p in out.iterdir()}
    assert {"overlap-desktop-LICENSE.txt", "overlap-desktop-NOTICE.txt", "GPL-2.0.txt", "GPL-3.0.txt",
            "LGPL-3.0.txt", "THIRD-PARTY.md", "FFmpeg-PyAV.txt"} <= names
    assert "Apache License" in (out / "overlap-desktop-LICENSE.txt").read_text(encoding="utf-8")
    note = (out / "FFmpeg-PyAV.txt").read_text(encoding="utf-8")
    import av

    assert av.__version__ in note
    assert "GPL" in note and "https://github.com/PyAV-Org/pyav-ffmpeg" in note
    table = (out / "THIRD-PARTY.md").read_text(encoding="utf-8")
    for dist in ("av", "numpy", "pdqhash"):
        assert re.search(rf"^\| {dist} \| ", table, re.M | re.I), dist
    assert "LGPL" in table  # Qt's terms
    assert (out / "av").is_dir() and any((out / "av").iterdir())


def test_iss_path_entry_never_writes_an_empty_entry_and_uninstall_leaves_no_empty_keys() -> None:
    r"""Bug 4: ``{olddata};{app}`` wrote ``;C:\...`` for a user without a PATH; uninstall left
    an empty Path value and empty .ovlm\OpenWithProgids and Applications\<exe> keys."""
    text = ISS.read_text(encoding="utf-8")
    defines = _iss_defines(text)
    sections = _iss_sections(text)
    reg = _entries(sections["Registry"])
    assert "{olddata}" not in "\n".join(sections["Registry"])
    (path_entry,) = [e for e in reg if e["Subkey"] == "Environment"]
    assert path_entry["ValueData"] == "{code:PathWithApp}"
    assert path_entry["Tasks"] == "addtopath"
    code = "\n".join(sections["Code"])
    path_fn = re.search(r"function PathWithApp\(Param: string\): string;(.*?)\nend;", code, re.S)
    assert path_fn, "PathWithApp in [Code]"
    # Only joins with ';' when something is there, after trimming trailing separators.
    assert "if Paths <> '' then" in path_fn.group(1) and "Paths + ';' + Result" in path_fn.group(1)
    remove_fn = re.search(r"procedure RemoveFromPath\(Dir: string\);(.*?)\nend;", code, re.S)
    assert remove_fn and "RegDeleteValue(HKEY_CURRENT_USER, 'Environment', 'Path')" in remove_fn.group(1)
    by_key: dict[str, list[dict[str, str]]] = {}
    for e in reg:
        by_key.setdefault(_expand(e["Subkey"], defines), []).append(e)
    for key in ("Software\\Classes\\.ovlm", "Software\\Classes\\.ovlm\\OpenWithProgids"):
        for e in by_key[key]:
            flags = e["Flags"].split()
            assert "uninsdeletevalue" in flags and "uninsdeletekeyifempty" in flags, (key, flags)
    apps = by_key[f"Software\\Classes\\Applications\\{defines['AppExe']}"]
    assert any("uninsdeletekey" in e.get("Flags", "").split() for e in apps)


def test_iss_licences_shortcut_opens_a_file_stock_windows_can_open(support: ModuleType, tmp_path: Path) -> None:
    """Bug 5: the Start-menu "licences" entry opened THIRD-PARTY.md (no program for .md on a
    stock Windows); it opens the HTML copy that licence staging writes."""
    text = ISS.read_text(encoding="utf-8")
    defines = _iss_defines(text)
    icons = [i for i in _entries(_iss_sections(text)["Icons"]) if "licences" in _expand(i["Name"], defines)]
    assert [i["Filename"] for i in icons] == ["{app}\\_internal\\licenses\\THIRD-PARTY.html"]
    out = support.stage_licences(tmp_path, ROOT, {"av", "numpy", "rich"})
    page = (out / "THIRD-PARTY.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for dist in ("av", "numpy", "rich", "Python"):
        assert re.search(rf"<tr><td>{dist}</td>", page, re.I), dist
    for href in re.findall(r'href="([^"]+)"', page):
        assert (out / href).exists(), href


def test_licence_names_come_from_all_collected_files_with_noarchive(support: ModuleType, tmp_path: Path) -> None:
    """Bug 1: with noarchive=True ``a.pure`` is empty and pure-Python modules arrive as
    ``.pyc`` data files; the licence list must still name every pure-Python dependency."""
    spec = SPEC.read_text(encoding="utf-8")
    assert "bs.collected_top_level(a.pure, a.binaries, a.datas)" in spec
    pure: list[tuple[str, str, str]] = []  # what PyInstaller 6 leaves in a.pure with noarchive=True
    datas = [("rich/console.pyc", "x", "DATA"), ("platformdirs/__init__.pyc", "x", "DATA"),
             ("typing_extensions.pyc", "x", "DATA"), ("ruamel\\yaml\\main.pyc", "x", "DATA"),
             ("pygments/lexer.pyc", "x", "DATA"), ("rich-15.0.0.dist-info/METADATA", "x", "DATA")]
    binaries = [("av.libs/avcodec-61.dll", "x", "BINARY"), ("numpy/_core/_multiarray_umath.pyd", "x", "BINARY")]
    names = support.collected_top_level(pure, binaries, datas)
    assert names == {"rich", "platformdirs", "typing_extensions", "ruamel", "pygments", "av", "numpy"}
    assert support.collected_top_level([("rich.console", "x", "PYMODULE")]) == {"rich"}
    table = (support.stage_licences(tmp_path, ROOT, names) / "THIRD-PARTY.md").read_text(encoding="utf-8")
    for dist in ("rich", "platformdirs", "typing_extensions", "ruamel.yaml", "Pygments", "av", "numpy"):
        assert re.search(rf"^\| {re.escape(dist)} \| ", table, re.M | re.I), dist


def test_python_licence_is_found_next_to_python_exe(support: ModuleType, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug 2: Windows keeps Python's LICENSE.txt next to python.exe, not in the stdlib folder."""
    prefix = tmp_path / "python"
    (prefix / "Lib").mkdir(parents=True)
    (prefix / "python.exe").write_bytes(b"MZ")
    (prefix / "LICENSE.txt").write_text("PSF LICENSE AGREEMENT", encoding="utf-8")
    found = support.python_licence(prefix / "Lib", prefix, prefix / "python.exe")
    assert found == prefix / "LICENSE.txt"
    # A Linux layout keeps it in the stdlib folder, which is preferred when both exist.
    (prefix / "Lib" / "LICENSE.txt").write_text("PSF", encoding="utf-8")
    assert support.python_licence(prefix / "Lib", prefix, prefix / "python.exe") == prefix / "Lib" / "LICENSE.txt"
    # None found: the table must not claim a Python/ folder that is not there.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert support.python_licence(empty, empty, empty / "python.exe") is None
    monkeypatch.setattr(support, "python_licence", lambda: None)
    out = support.stage_licences(tmp_path / "stage", ROOT, set())
    assert not (out / "Python").exists()
    assert re.search(r"^\| Python \| [^|]+ \| PSF-2.0 \| \(the build Python ships no licence text\) \|",
                     (out / "THIRD-PARTY.md").read_text(encoding="utf-8"), re.M)


@pytest.mark.parametrize(("dest", "kept"), [
    ("PySide6/translations/qtbase_de.qm", False),
    ("PySide6\\translations\\qt_fr.qm", False),
    ("PySide6/Qt/translations/qtbase_de.qm", False),
    ("PySide6/opengl32sw.dll", False),
    ("PySide6/plugins/tls/qschannelbackend.dll", False),
    ("PySide6/plugins/platforms/qdirect2d.dll", False),
    ("PySide6/plugins/platforms/qwindows.dll", True),
    ("PySide6/plugins/platforms/qoffscreen.dll", True),
    ("PySide6/plugins/styles/qmodernwindowsstyle.dll", True),
    ("PySide6/plugins/imageformats/qico.dll", True),
    ("PySide6/plugins/imageformats/qjpeg.dll", True),
    ("PySide6/plugins/imageformats/qtiff.dll", False),
    ("PySide6/Qt/plugins/imageformats/libqwebp.so", False),
    ("PySide6/plugins/generic/qtuiotouchplugin.dll", False),
    ("PySide6/Qt6Network.dll", False),
    ("PySide6/Qt6Core.dll", True),
    ("PySide6/Qt6OpenGL.dll", True),
    ("PySide6/Qt/lib/libQt6Core.so.6", True),
    ("PySide6/Qt/plugins/platforms/libqxcb.so", True),
])
def test_drop_list_covers_the_windows_qt_layout(support: ModuleType, dest: str, kept: bool) -> None:
    """Bug 3: the drop list named only Linux paths (PySide6/Qt/...): on Windows the
    translations (7 MB) and the software OpenGL DLL (20 MB) shipped."""
    assert support.keep(dest) is kept


def test_smoke_tests_keep_to_their_scratch_folders_on_windows(build_py: ModuleType,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The smoke tests make a signing key and a demo index: on Windows they must land in the
    scratch home, as platformdirs resolves it, never in the user's own profile."""
    import platformdirs.windows

    monkeypatch.setattr(build_py, "IS_WIN", True)
    home = PureWindowsPath("C:\\scratch\\home")
    env = build_py._isolated_env(home)  # type: ignore[arg-type]  # a Windows path, on any host
    for name, value in env.items():
        if "APPDATA" in name:
            monkeypatch.setenv(name, value)
    # As on Windows, where platformdirs asks the shell (ctypes) and reads no APPDATA variable.
    monkeypatch.setattr(platformdirs.windows, "_RESOLVE_WIN_FOLDER",
                        lambda csidl: "C:\\Users\\someone\\AppData\\" + csidl.removeprefix("CSIDL_"))
    dirs = platformdirs.windows.Windows("overlap", "overlap")
    assert PureWindowsPath(dirs.user_data_dir) == home / "Local" / "overlap" / "overlap"
    assert PureWindowsPath(dirs.user_config_dir).is_relative_to(home)


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in bundle is a shell script")
def test_a_smoke_command_that_hangs_is_reported_with_its_output_as_text(build_py: ModuleType,
                                                                       tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for exe in (build_py.cli_exe(bundle), build_py.gui_exe(bundle)):
        exe.write_text("#!/bin/sh\necho started \"$1\"\nexec sleep 30\n", encoding="utf-8")
        exe.chmod(0o755)
    results = build_py.smoke(bundle, scratch=tmp_path / "scratch", timeout=1.0)
    assert results and all(r.returncode == -9 and not r.ok for r in results)
    assert "timed out after 1 s" in results[0].output and "started --version" in results[0].output
    assert "b'" not in results[0].output


def test_size_report_splits_pyside6_on_both_layouts(build_py: ModuleType, tmp_path: Path) -> None:
    """Bug 3 (size report): Windows' PySide6 was one lump; it is split like Linux's."""
    files = {
        "win/_internal/PySide6/Qt6Core.dll": 5, "win/_internal/PySide6/QtCore.pyd": 2,
        "win/_internal/PySide6/plugins/platforms/qwindows.dll": 3,
        "win/_internal/PySide6/translations/qt_de.qm": 7, "win/_internal/av.libs/avcodec.dll": 11,
        "win/overlap.exe": 1,
        "lin/_internal/PySide6/Qt/lib/libQt6Core.so.6": 5, "lin/_internal/PySide6/Qt/plugins/x/y.so": 3,
        "lin/_internal/PySide6/QtCore.abi3.so": 2,
    }
    for rel, n in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x" * n)
    win = dict(build_py.largest_parts(tmp_path / "win", 20))
    assert win == {"av.libs": 11, "PySide6/translations": 7, "PySide6/(libraries and bindings)": 7,
                   "PySide6/plugins": 3, "overlap.exe": 1}
    lin = dict(build_py.largest_parts(tmp_path / "lin", 20))
    assert lin == {"PySide6/Qt/lib": 5, "PySide6/Qt/plugins": 3, "PySide6/(libraries and bindings)": 2}


# --------------------------------------------------------------------------- the real bundle


@pytest.fixture(scope="module")
def bundle(build_py: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    existing = os.environ.get("OVERLAP_BUNDLE_DIR")
    if existing:  # test a bundle built earlier (e.g. by `python installers/build.py`)
        return Path(existing).resolve()
    pytest.importorskip("PyInstaller", reason="pip install '.[bundle]'")
    base = tmp_path_factory.mktemp("bundle")
    result = build_py.build(base / "dist", base / "work")
    print(f"\nbundle built in {result.seconds:.0f} s, {result.size_bytes / 1e6:.1f} MB unpacked")
    for name, size in build_py.largest_parts(result.folder, 8):
        print(f"  {size / 1e6:8.1f} MB  {name}")
    return result.folder


@pytest.mark.bundle
def test_bundle_smoke(bundle: Path, build_py: ModuleType, tmp_path: Path) -> None:
    results = {r.name: r for r in build_py.smoke(bundle, scratch=tmp_path)}
    for r in results.values():
        assert r.ok, f"{r.name} exited {r.returncode}:\n{r.output[-3000:]}"
    from overlap_desktop import __version__

    assert __version__ in results["cli --version"].output
    assert "readers" in results["cli doctor"].output
    for reader in ("video", "mcap", "rosbag", "lerobot", "imageseq"):
        assert reader in results["cli doctor"].output
    assert "fingerprint" in results["cli key create"].output  # made and saved in the scratch home
    demo = tmp_path / "demo"
    assert (demo / "report.html").is_file() and (demo / "report.json").is_file()
    import json

    report = json.loads((demo / "report.json").read_text(encoding="utf-8"))
    assert report["counts"]["matched_files"] == 3


@pytest.mark.bundle
def test_bundle_contents(bundle: Path, build_py: ModuleType) -> None:
    files = [p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()]
    # Unused Qt modules are not shipped.
    for banned in ("Qt6Qml", "Qt6Quick", "Qt6WebEngine", "Qt63D", "Qt6Multimedia", "Qt6Pdf"):
        assert not [f for f in files if banned in f], banned
    # PyAV's FFmpeg libraries are (Linux: av.libs/*.so, Windows: av.libs/*.dll).
    assert [f for f in files if re.search(r"av\.libs/.*avcodec", f)]
    # Qt's OpenGL bindings are left out (pyqtgraph gets a stand-in: rthook_no_qtopengl.py).
    assert not [f for f in files if re.search(r"PySide6/QtOpenGL\.", f)]
    # Every command and reader module is collected (discovered at run time, not imported).
    from overlap_desktop.cli import commands
    from overlap_desktop.core.ingest.readers import BUILTIN_READERS

    internal = {f.removeprefix("_internal/") for f in files}
    for cmd in Path(commands.__file__).parent.glob("*.py"):
        assert f"overlap_desktop/cli/commands/{cmd.stem}.pyc" in internal, cmd.stem
    for target in BUILTIN_READERS.values():
        assert target.split(":")[0].replace(".", "/") + ".pyc" in internal, target
    # Licences and resources (bug 1: pure-Python dependencies are listed too; bug 2: Python's own text).
    table = (bundle / "_internal" / "licenses" / "THIRD-PARTY.md").read_text(encoding="utf-8")
    for dist in ("rich", "pyqtgraph", "platformdirs", "mcap", "mcap-ros2-support", "typing_extensions", "av",
                 "numpy"):
        assert re.search(rf"^\| {re.escape(dist)} \| ", table, re.M | re.I), dist
    for needed in ("_internal/licenses/Python/LICENSE.txt", "_internal/licenses/THIRD-PARTY.html",
                   "_internal/licenses/rich/LICENSE"):
        assert needed in files, needed
    for needed in ("LICENSE.txt", "NOTICE.txt", "VERSION.txt", "_internal/licenses/THIRD-PARTY.md",
                   "_internal/licenses/FFmpeg-PyAV.txt", "_internal/licenses/GPL-3.0.txt",
                   "_internal/resources/icons/overlap.ico"):
        assert needed in files, needed
    # Every path the installer script takes from the bundle exists in it (".exe" only on Windows).
    text = ISS.read_text(encoding="utf-8")
    defines = _iss_defines(text)
    exe = ".exe" if sys.platform == "win32" else ""

    def in_bundle(rel: str) -> Path:
        rel = rel.replace("\\", "/")
        return bundle / (rel[:-4] + exe if rel.endswith(".exe") else rel)

    for entry in _entries(_iss_sections(text)["Files"]):
        rel = _expand(entry["Source"], defines)[len(defines["BundleDir"]) + 1:]
        if rel.endswith("\\*"):
            folder = in_bundle(rel[:-2])
            assert folder.is_dir() and any(folder.iterdir()), rel
        else:
            assert in_bundle(rel).is_file(), rel
    for entry in _entries(_iss_sections(text)["Icons"]):
        target = _expand(entry["Filename"], defines)
        assert target.startswith("{app}\\")
        assert in_bundle(target[len("{app}\\"):]).is_file(), target
    # Linux: no collected library needs one that the spec dropped after analysis.
    import shutil
    import subprocess

    if sys.platform.startswith("linux") and shutil.which("objdump"):
        support = _load("bundle_support", INSTALLERS / "pyinstaller" / "bundle_support.py")
        for lib in bundle.rglob("*.so*"):
            if not lib.is_file() or lib.is_symlink():
                continue
            out = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True).stdout
            needed = re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)
            dropped = [n for n in needed if not support.keep(n)]
            assert not dropped, f"{lib.relative_to(bundle)} needs dropped {dropped}"
    # Size budget: 200 MB unpacked on Windows (measured by the wine lane, docs/windows.md).
    # Linux bundles also carry ICU (38 MB, Qt links it there) and system libraries that
    # Windows provides, hence the larger allowance.
    size = build_py.tree_size(bundle)
    budget = 320e6 if sys.platform.startswith("linux") else 200e6
    assert size <= budget, f"{size / 1e6:.1f} MB"
