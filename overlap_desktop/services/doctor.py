"""Environment check: ``overlap doctor`` and the GUI's About / diagnostics page.

Reports library versions, which readers loaded, where the index lives, free disk and
whether SQLite's write-ahead log works there. Never imports Qt: the Qt version comes
from package metadata.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import platform
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config

__all__ = ["DoctorCheck", "DoctorReport", "doctor"]

#: Decoders the video reader needs (name -> why). h264 is required; the rest are reported.
_DECODERS = {"h264": True, "hevc": False, "vp9": False, "vp8": False, "mpeg4": False, "av1": False}
#: Below this many free bytes at the index location doctor warns.
LOW_DISK_BYTES = 1 << 30


@dataclass
class DoctorCheck:
    """One line of the report.

    Attributes:
        name: What was checked ("PyAV", "index location"...).
        ok: Whether it is fine.
        value: What was found (a version, a path).
        detail: Extra facts or the reason for a failure.
        required: A failure makes the product unusable (doctor exits non-zero).
    """

    name: str
    ok: bool
    value: str
    detail: str = ""
    required: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "value": self.value, "detail": self.detail,
                "required": self.required}


@dataclass
class DoctorReport:
    """All checks; :attr:`ok` is False when any required check failed."""

    checks: list[DoctorCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks if c.required)

    @property
    def problems(self) -> list[DoctorCheck]:
        return [c for c in self.checks if c.required and not c.ok]

    @property
    def warnings(self) -> list[DoctorCheck]:
        return [c for c in self.checks if not c.required and not c.ok]

    def get(self, name: str) -> DoctorCheck | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.to_dict() for c in self.checks]}


def _dist_version(*names: str) -> str | None:
    for n in names:
        try:
            return md.version(n)
        except md.PackageNotFoundError:
            continue
    return None


def _module_check(name: str, module: str, dists: tuple[str, ...], *, required: bool = True,
                  detail: str = "") -> DoctorCheck:
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        return DoctorCheck(name, False, "missing", f"cannot import {module}: {exc}", required)
    version = getattr(mod, "__version__", None) or _dist_version(*dists) or "unknown"
    return DoctorCheck(name, True, str(version), detail, required)


def _pdqhash_check() -> DoctorCheck:
    """pdqhash, and whether the batched hashing reproduces it here (else it hashes image by image)."""
    check = _module_check("pdqhash", "pdqhash", ("pdqhash",))
    if not check.ok:
        return check
    from overlap_desktop.core.ingest.pdq_batch import matches_pdqhash

    detail = ("hashes in batches, checked bit for bit against it" if matches_pdqhash()
              else "hashes image by image: this build rounds differently from the batched DCT")
    return DoctorCheck(check.name, True, check.value, detail, check.required)


def _pyav_checks() -> list[DoctorCheck]:
    try:
        import av
    except Exception as exc:
        return [DoctorCheck("PyAV", False, "missing", f"cannot import av: {exc}")]
    libs = getattr(av, "library_versions", {}) or {}
    lib_text = ", ".join(f"{k} {'.'.join(map(str, v))}" for k, v in sorted(libs.items()))
    ffmpeg = getattr(av, "ffmpeg_version_info", "") or ""
    out = [DoctorCheck("PyAV", True, str(av.__version__), f"FFmpeg {ffmpeg}".strip())]
    out.append(DoctorCheck("FFmpeg libraries", bool(libs), lib_text or "unknown", "", False))
    have: list[str] = []
    missing_required: list[str] = []
    missing: list[str] = []
    for name, needed in _DECODERS.items():
        try:
            av.codec.Codec(name, "r")
            have.append(name)
        except Exception:
            (missing_required if needed else missing).append(name)
    detail = f"missing: {', '.join(missing_required + missing)}" if (missing or missing_required) else ""
    out.append(DoctorCheck("video decoders", not missing_required, ", ".join(have) or "none", detail,
                           True))
    return out


def _sqlite_check() -> DoctorCheck:
    try:
        import apsw
    except Exception as exc:
        return DoctorCheck("APSW / SQLite", False, "missing", f"cannot import apsw: {exc}")
    return DoctorCheck("APSW / SQLite", True, f"{apsw.apsw_version()} / SQLite {apsw.sqlite_lib_version()}")


def _qt_check() -> DoctorCheck:
    # Package metadata only: importing QtWidgets would load the GUI stack into the CLI.
    pyside = _dist_version("PySide6-Essentials", "PySide6")
    graph = _dist_version("pyqtgraph")
    if pyside is None:
        return DoctorCheck("Qt (PySide6)", False, "missing",
                           "the desktop GUI needs PySide6-Essentials; the CLI works without it", False)
    detail = f"pyqtgraph {graph}" if graph else "pyqtgraph missing (report plots need it)"
    return DoctorCheck("Qt (PySide6)", graph is not None, pyside, detail, False)


def _display_libraries_check() -> DoctorCheck | None:
    """On Linux: the X11 libraries Qt's window needs (the GUI cannot start without them)."""
    from overlap_desktop.services.display_libs import (
        XCB_LIBRARIES,
        display_libraries_message,
        missing_display_libraries,
    )

    if not sys.platform.startswith("linux"):
        return None
    missing = missing_display_libraries()
    if not missing:
        return DoctorCheck("window libraries (X11)", True, "found", ", ".join(p for _s, p in XCB_LIBRARIES), False)
    return DoctorCheck("window libraries (X11)", False, "missing: " + ", ".join(missing),
                       display_libraries_message(missing), False)


def _readers_checks() -> list[DoctorCheck]:
    from overlap_desktop.core.ingest.readers import available_readers

    readers, failures = available_readers(refresh=True)
    names = [r.name for r in readers]
    out = [DoctorCheck("readers", "video" in names, ", ".join(names) or "none",
                       "" if "video" in names else "the video reader did not load")]
    for f in failures:
        # Optional readers (ROS bags need the `ros` extra) fail softly; the video reader may not.
        out.append(DoctorCheck(f"reader {f.name}", False, "not loaded", f"{f.target}: {f.error}",
                               f.name == "video"))
    return out


def _shards_check(st: dict[str, Any]) -> DoctorCheck:
    """Whether the index's search shards are in the layout a rebuild would write (a warning only:
    older layouts are slower, and older seed grids can miss short copies of fast-moving footage)."""
    n, older = int(st.get("shards", 0)), int(st.get("shards_older_layout", 0))
    if not older:
        return DoctorCheck("search shards", True, f"{n} shard{'s' if n != 1 else ''}", "current layout", False)
    from overlap_desktop.core.report.formats import format_estimate

    took = format_estimate(float(st.get("shards_rebuild_estimate_s", 0.0)))
    return DoctorCheck("search shards", False, f"{older} of {n} written by an earlier version",
                       "they can be slower and can miss short copies of fast-moving footage; run "
                       "`overlap index --rebuild-shards` (rebuilds the shards from the index database, "
                       f"no footage is read; {took} for this library)", False)


def _index_checks(config: Config) -> list[DoctorCheck]:
    from overlap_desktop.core.index.lock import existing_ancestor, wal_support
    from overlap_desktop.core.index.status import library_status

    path = Path(config.index_path)
    src = config.source("index.path")
    exists = library_status(path).has_index
    out = [DoctorCheck("index location", True, str(path),
                       f"{'existing index' if exists else 'no index yet'} (from {src})")]
    if exists:
        try:
            from overlap_desktop.core.index.store import open_index

            with open_index(path, readonly=True) as idx:
                st = idx.stats()
            out.append(DoctorCheck("index contents", True,
                                   f"{st['files_ok']} files, {st['hours']:.2f} h",
                                   f"schema {st['schema_version']}, {st['algo_id']}/{st['prep_id']}, "
                                   f"{st['files_error']} errors, {st['bytes'] / 1e6:.1f} MB"))
            out.append(_shards_check(st))
        except Exception as exc:
            out.append(DoctorCheck("index contents", False, "unreadable", str(exc)))
    where = existing_ancestor(path)
    try:
        usage = shutil.disk_usage(where)
        free = usage.free
        out.append(DoctorCheck("free disk", free >= LOW_DISK_BYTES, f"{free / 1e9:.1f} GB",
                               f"at {where}" + ("" if free >= LOW_DISK_BYTES else "; less than 1 GB free"),
                               False))
    except OSError as exc:
        out.append(DoctorCheck("free disk", False, "unknown", f"{where}: {exc}", False))
    ok, why = wal_support(path)
    out.append(DoctorCheck("WAL support", ok, "yes" if ok else "no", why))
    return out


#: Optional libraries of the robot-dataset readers: (shown name, distributions, what needs it).
_ROBOTDATA = (
    ("h5py (robotdata extra)", ("h5py",), "ALOHA and robomimic / LIBERO HDF5 files"),
    ("zarr (robotdata extra)", ("zarr",), "diffusion-policy / UMI zarr ReplayBuffers"),
    ("numcodecs", ("numcodecs",), "the compressors of zarr buffers (blosc, zstd, lz4, gzip)"),
    ("google-crc32c (robotdata extra)", ("google-crc32c", "google_crc32c"), "RLDS / TFDS TFRecord shards"),
    ("imagecodecs (robotdata extra)", ("imagecodecs",),
     "JPEG 2000 (diffusion policy) and JPEG-XL (UMI) compressed zarr buffers"),
    ("pyarrow (robotdata extra)", ("pyarrow",), "LeRobot image datasets and episode tables"),
)


def _robotdata_checks() -> list[DoctorCheck]:
    """Which optional robot-dataset libraries and codecs are installed (never required)."""
    out = []
    for name, dists, needs in _ROBOTDATA:
        version = _dist_version(*dists)
        hint = "" if version else f"{needs} need it: pip install 'overlap-desktop[robotdata]'"
        if version is None and name == "imagecodecs":
            hint = f"{needs}"
        out.append(DoctorCheck(name, version is not None, version or "not installed", hint or f"reads {needs}",
                               False))
    return out


def doctor(config: Config | None = None) -> DoctorReport:
    """Check the environment.

    Args:
        config: Resolved settings (for the index location); default: loaded.

    Returns:
        A :class:`DoctorReport`; ``report.ok`` is False when something needed is missing.
    """
    from overlap_desktop import __version__
    from overlap_desktop.config import load_config

    config = config if config is not None else load_config()
    checks: list[DoctorCheck] = []
    py_ok = sys.version_info >= (3, 10)
    checks.append(DoctorCheck("overlap", True, __version__, f"{platform.system()} {platform.machine()}"))
    checks.append(DoctorCheck("Python", py_ok, platform.python_version(),
                              sys.executable if py_ok else "Python 3.10 or newer is required"))
    checks.extend(_pyav_checks())
    checks.append(_pdqhash_check())
    checks.append(_sqlite_check())
    checks.append(_module_check("numpy", "numpy", ("numpy",)))
    checks.append(_module_check("zstandard", "zstandard", ("zstandard",)))
    checks.append(_qt_check())
    display = _display_libraries_check()
    if display is not None:
        checks.append(display)
    ros = _dist_version("rosbags")
    checks.append(DoctorCheck("rosbags (ros extra)", ros is not None, ros or "not installed",
                              "" if ros else "ROS1 .bag and rosbag2 need: pip install 'overlap-desktop[ros]'",
                              False))
    checks.extend(_robotdata_checks())
    try:
        checks.extend(_readers_checks())
    except Exception as exc:
        checks.append(DoctorCheck("readers", False, "error", str(exc)))
    checks.extend(_index_checks(config))
    return DoctorReport(checks)
