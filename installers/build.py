"""Build the PyInstaller onedir bundle (``dist/overlap/``), report its size, smoke-test it.

Usage (Linux, macOS or Windows, from the repository root, with ``pip install ".[bundle]"``)::

    python installers/build.py              # build, print the size and what dominates it
    python installers/build.py --smoke      # ... then run the frozen app's smoke tests
    python installers/build.py --smoke-only # smoke-test an existing dist/overlap/

The smoke tests run the bundled CLI (``--version``, ``doctor``, ``key create``, ``demo``) and the bundled
GUI (``--self-test`` with ``QT_QPA_PLATFORM=offscreen``); each must exit 0. The same
functions are used by ``tests/integration/test_bundle.py`` (``python -m pytest -m bundle``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "installers" / "pyinstaller" / "overlap.spec"
IS_WIN = sys.platform == "win32"
EXE_SUFFIX = ".exe" if IS_WIN else ""

__all__ = ["BuildResult", "SmokeResult", "build", "cli_exe", "gui_exe", "largest_parts", "smoke", "tree_size"]


@dataclass
class BuildResult:
    """A finished build: where it is, how long it took, how big it is."""

    folder: Path
    seconds: float
    size_bytes: int


@dataclass
class SmokeResult:
    """One smoke-test command and how it ended."""

    name: str
    argv: list[str]
    returncode: int
    seconds: float
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def cli_exe(folder: Path) -> Path:
    """The console executable inside a built bundle folder."""
    return folder / f"overlap{EXE_SUFFIX}"


def gui_exe(folder: Path) -> Path:
    """The windowed executable inside a built bundle folder."""
    return folder / f"overlap-desktop{EXE_SUFFIX}"


def tree_size(folder: Path) -> int:
    """Bytes in all files under ``folder`` (unpacked size)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _part_of(rel: tuple[str, ...]) -> str:
    """The size-report group of a file inside ``_internal`` (path parts).

    PySide6 is split further, as it is most of the bundle; its wheels lay Qt out per
    platform: ``PySide6/Qt/{lib,plugins,translations}/`` on Linux and macOS, and on Windows
    the Qt DLLs directly in ``PySide6/`` with ``plugins/`` and ``translations/`` beside them.
    """
    if len(rel) == 1:
        return "(top-level files)"
    if rel[0] != "PySide6":
        return rel[0]
    if rel[1] == "Qt" and len(rel) > 3:  # Linux/macOS: PySide6/Qt/lib/..., PySide6/Qt/plugins/...
        return f"PySide6/Qt/{rel[2]}"
    if len(rel) > 2:  # Windows: PySide6/plugins/..., PySide6/translations/...
        return f"PySide6/{rel[1]}"
    # Files directly in PySide6/: the Qt DLLs on Windows (Qt6Core.dll ...), bindings elsewhere.
    return "PySide6/(libraries and bindings)"


def largest_parts(folder: Path, n: int = 12) -> list[tuple[str, int]]:
    """The ``n`` biggest components of a bundle, grouping files by their first folder
    inside ``_internal`` (``PySide6``, ``av.libs``, ``scipy``...) or their own name."""
    inner = folder / "_internal"
    base = inner if inner.is_dir() else folder
    sizes: dict[str, int] = {}
    for p in base.rglob("*"):
        if p.is_file() and not p.is_symlink():
            rel = p.relative_to(base).parts
            key = _part_of(rel)
            sizes[key] = sizes.get(key, 0) + p.stat().st_size
    for p in folder.iterdir():
        if p.is_file():
            sizes[p.name] = p.stat().st_size
    return sorted(sizes.items(), key=lambda kv: -kv[1])[:n]


def build(dist: Path | None = None, work: Path | None = None, *, clean: bool = True) -> BuildResult:
    """Run PyInstaller on ``installers/pyinstaller/overlap.spec``.

    Args:
        dist: Where the ``overlap`` folder goes (default: ``ROOT/dist``).
        work: PyInstaller's scratch folder (default: ``ROOT/build/pyinstaller``).
        clean: Start from an empty PyInstaller cache.

    Returns:
        The bundle folder, build time and unpacked size.

    Raises:
        RuntimeError: PyInstaller failed (its output is in the message).
    """
    dist = (dist or ROOT / "dist").resolve()
    work = (work or ROOT / "build" / "pyinstaller").resolve()
    argv = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
            "--distpath", str(dist), "--workpath", str(work)]
    if clean:
        argv.append("--clean")
    argv.append(str(SPEC))
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(f"PyInstaller failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    folder = dist / "overlap"
    for exe in (cli_exe(folder), gui_exe(folder)):
        if not exe.is_file():
            raise RuntimeError(f"PyInstaller did not produce {exe}")
    return BuildResult(folder, seconds, tree_size(folder))


def _isolated_env(home: Path) -> dict[str, str]:
    """Environment for the smoke tests: headless Qt, and user folders in a scratch place so
    the smoke test never reads or writes the developer's own index and settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERLAP_")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["OVERLAP_INDEX"] = str(home / "index")
    if IS_WIN:
        # platformdirs asks Windows itself for these folders and ignores APPDATA/LOCALAPPDATA;
        # only its WIN_PD_OVERRIDE_* variables move them (under wine the installed copy's smoke
        # test found the key the build's smoke test had made in the real profile).
        for name, sub in (("APPDATA", "Roaming"), ("LOCAL_APPDATA", "Local")):
            env[name.replace("_", "")] = env[f"WIN_PD_OVERRIDE_{name}"] = str(home / sub)
    else:
        env["XDG_DATA_HOME"] = str(home / "data")
        env["XDG_CONFIG_HOME"] = str(home / "config")
        env["XDG_CACHE_HOME"] = str(home / "cache")
    # The frozen app must not lean on the build environment's packages.
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    return env


def smoke(folder: Path, *, scratch: Path | None = None, timeout: float = 300.0) -> list[SmokeResult]:
    """Run the frozen app's smoke tests; every result must be ``ok``.

    Args:
        folder: A built bundle (``dist/overlap``) or an installed copy of it.
        scratch: Folder for the demo's output and the isolated user folders (default: a
            new temporary folder).
        timeout: Seconds allowed per command.

    Returns:
        One result per command (``--version``, ``doctor``, ``key create``, ``demo``, GUI
        ``--version`` and ``--self-test``).
    """
    scratch = Path(scratch or tempfile.mkdtemp(prefix="overlap-smoke-"))
    scratch.mkdir(parents=True, exist_ok=True)
    env = _isolated_env(scratch / "home")
    cli, gui = str(cli_exe(folder)), str(gui_exe(folder))
    runs = [
        ("cli --version", [cli, "--version"]),
        ("cli doctor", [cli, "doctor"]),
        # Signing needs cryptography's compiled part; a bundle without one of its DLLs fails here.
        ("cli key create", [cli, "key", "create", "--name", "Smoke test"]),
        ("cli demo", [cli, "demo", "--out", str(scratch / "demo")]),
        ("gui --version", [gui, "--version"]),
        ("gui --self-test", [gui, "--self-test"]),
    ]
    results: list[SmokeResult] = []
    for name, argv in runs:
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
            code, output = proc.returncode, (proc.stdout or "") + (proc.stderr or "")
        except subprocess.TimeoutExpired as exc:
            # TimeoutExpired carries the output as bytes even with text=True.
            code, output = -9, f"timed out after {timeout:.0f} s\n{_text(exc.stdout)}{_text(exc.stderr)}"
        results.append(SmokeResult(name, argv, code, time.monotonic() - started, output))
    return results


def _text(data: str | bytes | None) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: build (unless ``--smoke-only``), print size, optionally smoke-test."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default: dist/)")
    p.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller",
                   help="PyInstaller work folder")
    p.add_argument("--smoke", action="store_true", help="smoke-test the bundle after building")
    p.add_argument("--smoke-only", action="store_true", help="smoke-test an existing bundle, do not build")
    p.add_argument("--bundle", type=Path, help="with --smoke-only: the bundle folder to test (e.g. an "
                                               "installed copy; default: DIST/overlap)")
    p.add_argument("--max-mb", type=float, help="warn (GitHub annotation) if the bundle is bigger")
    p.add_argument("--no-clean", action="store_true", help="reuse PyInstaller's cache")
    p.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = p.parse_args(argv)

    folder = (args.bundle if args.smoke_only and args.bundle else args.dist / "overlap").resolve()
    facts: dict[str, object] = {"platform": sys.platform}
    if not args.smoke_only:
        if folder.exists():
            shutil.rmtree(folder)
        print(f"building {folder} with PyInstaller (this takes a few minutes)...", flush=True)
        res = build(args.dist, args.work, clean=not args.no_clean)
        facts.update(build_seconds=round(res.seconds, 1), size_bytes=res.size_bytes)
        print(f"built {folder} in {res.seconds:.0f} s")
    size = tree_size(folder)
    facts["size_bytes"] = size
    print(f"bundle size (unpacked): {_mb(size)}")
    if args.max_mb and size > args.max_mb * 1e6:
        # A warning, not a failure: the budget is a target; the numbers are in the log.
        print(f"::warning::bundle is {_mb(size)}, over the {args.max_mb:g} MB target")
    parts = largest_parts(folder)
    facts["largest"] = dict(parts)
    for name, n in parts:
        print(f"  {_mb(n):>10}  {name}")
    status = 0
    if args.smoke or args.smoke_only:
        results = smoke(folder)
        facts["smoke"] = [{**asdict(r), "output": r.output[-2000:]} for r in results]
        for r in results:
            print(f"smoke {r.name}: {'ok' if r.ok else f'FAILED (exit {r.returncode})'} ({r.seconds:.1f} s)")
            if not r.ok:
                print(r.output[-4000:])
                status = 1
    if args.json:
        args.json.write_text(json.dumps(facts, indent=2, default=str), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
