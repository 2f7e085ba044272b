"""The Windows lane (installers/windows/wine_lane.py): the Windows bundle and installer built,
installed, smoke-tested and uninstalled under wine on Linux.

- Fast checks (default suite): the lane's parsing of PE export/import tables, the proxy and
  stub DLL definitions, the embeddable Python's ``._pth``, the pinned wheels covering every
  requirement, and the preprocessor hooks the lane passes to the installer script.
- ``@pytest.mark.windows``: the whole run (about 20 minutes on 2 cores, cold). It runs only
  when selected (``python -m pytest -m windows``) on a machine with the lane's tools
  (``python installers/windows/wine_lane.py --install-deps`` installs them); ``.ci/run`` does
  both. Its artifacts (lane.json, window.png, logs) are in build/wine-lane/artifacts/.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
LANE = ROOT / "installers" / "windows" / "wine_lane.py"


@pytest.fixture(scope="module")
def lane() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wine_lane", LANE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["wine_lane"] = module
    spec.loader.exec_module(module)
    return module


_OBJDUMP = """
The Export Tables (interpreted .edata section contents)

[Ordinal/Name Pointer] Table
\t[   0] _Cbuild
\t[2137] crealf
\t[2200] sin

The Import Tables (interpreted .idata section contents)
\tDLL Name: KERNEL32.dll
\tvma:  Hint/Ord Member-Name Bound-To
\t998b6c\t  651  GetLastError

\tDLL Name: icuuc.dll
\tvma:  Hint/Ord Member-Name Bound-To
\t9989e8\t  263  ucnv_open
\t9989f4\t  225  ucnv_close

\tDLL Name: MSVCP140.dll
\tvma:  Hint/Ord Member-Name Bound-To
\t998b6c\t  651  ?_Xbad_alloc@std@@YAXXZ
"""


def test_pe_tables_are_read_from_objdump_output(lane: ModuleType) -> None:
    assert lane.exported_names(_OBJDUMP) == ["_Cbuild", "crealf", "sin"]
    assert lane.imported_names(_OBJDUMP, "ICUUC.dll") == ["ucnv_open", "ucnv_close"]
    assert lane.imported_names(_OBJDUMP, "kernel32.dll") == ["GetLastError"]
    assert lane.imported_names(_OBJDUMP, "dxgi.dll") == []
    assert lane.exported_names("no export table") == []


def test_proxy_ucrtbase_implements_what_wine_stubs_and_numpy_calls(lane: ModuleType) -> None:
    """Wine 8's ucrtbase aborts on these complex-number functions (numpy 2.x imports them all;
    crealf at import time): the proxy must implement each, and forward everything else."""
    own = lane.c_exports((LANE.parent / "wine" / "ucrtbase_complex.c").read_text(encoding="utf-8"))
    numpy_needs = {"cabsf", "cabsl", "carg", "cargf", "cargl", "ccos", "ccosf", "ccosh", "ccoshf", "ccoshl",
                   "ccosl", "cexp", "cexpf", "cexpl", "cimag", "cimagf", "cimagl", "cpow", "cpowf", "cpowl",
                   "crealf", "creall", "csin", "csinf", "csinh", "csinhf", "csinhl", "csinl", "ctan", "ctanf",
                   "ctanh", "ctanhf", "ctanhl", "ctanl"}
    assert numpy_needs <= own, sorted(numpy_needs - own)
    text = lane.proxy_def("ucrtbase.dll", ["_Cbuild", "crealf", "sin"], own, "ucrtwine")
    assert text.splitlines() == ["LIBRARY ucrtbase.dll", "EXPORTS", "  _Cbuild=ucrtwine._Cbuild",
                                 "  crealf=ovl_crealf", "  sin=ucrtwine.sin"]


def test_icu_stub_fails_ucnv_open_with_an_error_code(lane: ModuleType) -> None:
    source = (LANE.parent / "wine" / "icuuc_stub.c").read_text(encoding="utf-8")
    assert lane.c_exports(source) == {"icu_open", "icu_zero"}
    # Qt checks the UErrorCode, never a NULL converter alone: the stub must set one.
    assert re.search(r"\*err = U_MISSING_RESOURCE_ERROR;", source)


def test_prng_stub_implements_what_rust_imports_and_nothing_else(lane: ModuleType) -> None:
    """Wine 8 has no bcryptprimitives.dll; cryptography's _rust.pyd imports ProcessPrng from it
    (Rust's standard library). The stub implements it; a name it lacks must stop the lane, not
    be exported as a function that does nothing."""
    source = (LANE.parent / "wine" / "bcryptprimitives_stub.c").read_text(encoding="utf-8")
    own = lane.c_exports(source)
    assert own == {"ProcessPrng"}
    assert lane.stub_def("bcryptprimitives.dll", ["ProcessPrng"], own).splitlines() == [
        "LIBRARY bcryptprimitives.dll", "EXPORTS", "  ProcessPrng=ovl_ProcessPrng"]
    with pytest.raises(lane.LaneError, match="GetRandomThing"):
        lane.stub_def("bcryptprimitives.dll", ["ProcessPrng", "GetRandomThing"], own)
    # The ICU stub has a catch-all for the names it does not implement.
    icu = lane.c_exports((LANE.parent / "wine" / "icuuc_stub.c").read_text(encoding="utf-8"))
    assert "  ucnv_close=ovl_icu_zero" in lane.stub_def("icuuc.dll", ["ucnv_open", "ucnv_close"], icu)


def test_debian_npm_is_not_installed_over_another_npm(lane: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    # NodeSource's nodejs ships npm and conflicts with Debian's npm package: apt would refuse the
    # whole install, so the lane asks for Debian's npm only where no npm is installed.
    monkeypatch.setattr(lane.shutil, "which", lambda name: None)
    assert lane.apt_packages() == list(lane.APT_PACKAGES) and "npm" in lane.APT_PACKAGES
    monkeypatch.setattr(lane.shutil, "which", lambda name: "/usr/bin/npm" if name == "npm" else None)
    assert lane.apt_packages() == [p for p in lane.APT_PACKAGES if p != "npm"]


def test_embeddable_python_sees_site_packages(lane: ModuleType) -> None:
    assert lane.pth_text("cp311").splitlines() == ["python311.zip", ".", "Lib\\site-packages", "import site"]


def test_path_entries_keep_empty_ones_visible(lane: ModuleType) -> None:
    assert lane.path_entries(None) == []
    assert lane.path_entries(";C:\\x") == ["", "C:\\x"]
    assert lane.path_entries("C:\\a;C:\\x") == ["C:\\a", "C:\\x"]


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")


def test_every_windows_requirement_is_pinned(lane: ModuleType) -> None:
    """A dependency added to pyproject.toml must be pinned for the lane too (else the lane
    silently builds with whatever is newest)."""
    pins = {}
    for line in (LANE.parent / "constraints-win.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_name(name)] = version
    reqs = lane.requirements()
    for needed in ("pefile", "pywin32-ctypes", "pyinstaller", "rosbags", "pyside6-essentials", "numpy"):
        assert needed in {_name(r) for r in reqs}, needed
    for req in reqs:
        if "python_version < '3.11'" in req:  # the lane's Python is 3.11
            continue
        assert _name(req) in pins, req


def test_lane_passes_only_hooks_the_installer_script_defines(lane: ModuleType) -> None:
    iss = (ROOT / "installers" / "windows" / "overlap.iss").read_text(encoding="utf-8")
    source = LANE.read_text(encoding="utf-8")
    passed = set(re.findall(r'"/D(\w+)=', source)) | set(re.findall(r"f\"/D(\w+)=", source))
    assert passed == {"Version", "BundleDir", "OutputDir", "InstallDir", "Compression"}
    for name in passed - {"Version"}:
        assert re.search(rf"#ifndef {name}\s+#define {name} ", iss), name


def test_an_unsigned_python_is_refused(lane: ModuleType, tmp_path: Path) -> None:
    """The lane trusts the downloaded python.exe only with the PSF's Authenticode signature."""
    if shutil.which("osslsigncode") is None:
        pytest.skip("osslsigncode is not installed (the lane installs it)")
    fake = tmp_path / "python.exe"
    fake.write_bytes(b"MZ" + b"\0" * 510)
    with pytest.raises(lane.LaneError, match="not signed by the Python Software Foundation"):
        lane.check_psf_signature(fake)


# --------------------------------------------------------------------------- the whole run


@pytest.fixture(scope="module")
def lane_run(request: pytest.FixtureRequest, lane: ModuleType) -> dict[str, object]:
    if "windows" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the wine lane takes ~20 minutes: run it with -m windows")
    missing = lane.missing_tools()
    if missing:
        pytest.skip(f"the wine lane needs {', '.join(missing)}: "
                    "python installers/windows/wine_lane.py --install-deps")
    work = ROOT / "build" / "wine-lane"
    proc = subprocess.run([sys.executable, str(LANE), "--work", str(work)], cwd=ROOT, text=True,
                          capture_output=True, timeout=3 * 3600)
    print(proc.stdout[-5000:])
    report = work / "artifacts" / "lane.json"
    facts = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
    assert proc.returncode == 0, f"{proc.stderr[-8000:]}\nsteps: {facts.get('steps')}"
    return dict(facts)


@pytest.mark.windows
def test_windows_installer_builds_installs_runs_and_uninstalls_under_wine(lane_run: dict[str, object]) -> None:
    steps = lane_run["steps"]
    assert isinstance(steps, list) and len(steps) == 13 and all(s["ok"] for s in steps), steps
    assert isinstance(lane_run["bundle_bytes"], int) and lane_run["bundle_bytes"] <= 200e6
    assert isinstance(lane_run["installer_bytes"], int) and lane_run["installer_bytes"] > 10e6
    window = lane_run["window"]
    assert isinstance(window, dict) and Path(window["screenshot"]).is_file()
    assert "overlap desktop" in window["title"].lower()
