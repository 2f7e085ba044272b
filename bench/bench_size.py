"""Index folder and manifest size per footage hour, measured on the product's own output.

Indexes footage with ``index_paths`` at the default preset (settings resolved with no user
file, no ``overlap.toml`` and no environment, so only the shipped defaults apply), closes
the index, checkpoints SQLite's write-ahead log into the database (``wal_checkpoint
(TRUNCATE)``, what a clean close leaves), then measures the whole index folder split into
SQLite (database + WAL + shared memory), search shards and anything else; then exports a
manifest with ``export_manifest`` (its defaults: 1 sample/s, zstd when smaller) and
divides its bytes by the footage hours it covers.

Two sources, each in its own index:

* ``generated``: clips rendered by ``tests/footage.py`` (moving textured scenes, 426x240,
  30 fps, libx264), ``--clips`` clips of ``--seconds`` each;
* ``real``: the video files under ``../shared/realdata`` beside the checkout (third-party test clips, see
  its SOURCES.md), if that folder exists. They are short (seconds each), so per-file
  overhead (file and stream rows, partial shards) weighs more than on long footage.

Usage::

    python bench/bench_size.py                  # 8 generated clips x 60 s, plus realdata
    python bench/bench_size.py --clips 4 --seconds 30 --no-real

No assertions: this prints figures for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.config import Config, load_config  # noqa: E402

#: The shared real test media, beside the checkout (where the tests reach it).
REALDATA = ROOT / ".." / "shared" / "realdata"
VIDEO_EXT = {".mp4", ".mov", ".mkv", ".webm", ".avi"}
SQLITE_NAMES = ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm")


def default_config(index: Path, overrides: dict[str, object] | None = None) -> Config:
    """Shipped defaults only (no user file, no local overlap.toml, no environment), plus ``overrides``."""
    return load_config({"index.path": str(index), **(overrides or {})}, environ={}, cwd=index.parent,
                       user_file=index.parent / "no-user-config.toml")


def make_generated(folder: Path, clips: int, seconds: float) -> list[Path]:
    """Render ``clips`` distinct generated scenes of ``seconds`` each into ``folder``."""
    from tests.footage import make_clip

    folder.mkdir(parents=True, exist_ok=True)
    return [make_clip(folder / f"clip-{k:02d}.mp4", 100 + k, duration=seconds, fps=30.0, size=(426, 240))
            for k in range(clips)]


def _bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def folder_sizes(index: Path) -> dict[str, int]:
    """Bytes of the index folder: SQLite (db + WAL + shm), shards, other; WAL before checkpoint."""
    db = index / "index.sqlite3"
    wal_before = _bytes([index / "index.sqlite3-wal"])
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    files = [p for p in index.rglob("*") if p.is_file()]
    sql = [p for p in files if p.parent == index and p.name in SQLITE_NAMES]
    shards = [p for p in files if "shards" in p.relative_to(index).parts]
    other = [p for p in files if p not in sql and p not in shards]
    return {"sqlite": _bytes(sql), "shards": _bytes(shards), "other": _bytes(other),
            "total": _bytes(files), "wal_before_checkpoint": wal_before,
            "other_names": sorted(str(p.relative_to(index)) for p in other)[:8]}  # type: ignore[dict-item]


def measure(name: str, inputs: list[Path], work: Path, overrides: dict[str, object] | None = None) -> dict:
    """Index ``inputs`` into a fresh index at the default preset (with ``overrides``), export a
    manifest, measure both."""
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.manifest.export import export_manifest

    index = work / f"index-{name}"
    cfg = default_config(index, overrides)
    w0 = time.perf_counter()
    summary = index_paths(inputs, index=index, config=cfg)
    index_wall = time.perf_counter() - w0
    sizes = folder_sizes(index)
    out = work / f"{name}.ovlm"
    exp = export_manifest(index, out, config=cfg)
    hours = float(summary.hours_indexed)
    mb_h = {k: v / 1e6 / hours for k, v in sizes.items() if isinstance(v, int)}
    return {"source": name, "files": len(inputs), "indexed": summary.indexed, "failed": len(summary.failed),
            "failed_files": [f"{Path(p).name}: {r}" for p, r in summary.failed][:5],
            "footage_s": round(hours * 3600, 1), "index_wall_s": round(index_wall, 1), "bytes": sizes,
            "mb_per_hour": {k: round(v, 2) for k, v in mb_h.items()},
            "preset": cfg["index.preset"] if "index.preset" in cfg else None,
            "manifest_bytes": exp.bytes, "manifest_hours": round(exp.hours, 4),
            "manifest_kb_per_hour": round(exp.bytes / 1e3 / exp.hours, 1) if exp.hours else None}


def real_inputs() -> list[Path]:
    """Video files under the shared real-data folder (none when it is absent)."""
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*") if p.suffix.lower() in VIDEO_EXT)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--no-real", action="store_true", help="skip the shared real clips (../shared/realdata)")
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp folder, removed)")
    ap.add_argument("--aspect-crops", default=None, help='index.aspect_crops for the index, e.g. "0.75,0.5625"')
    a = ap.parse_args(argv)
    overrides: dict[str, object] = {} if a.aspect_crops is None else {"index.aspect_crops": a.aspect_crops}
    tmp = None if a.dir else tempfile.TemporaryDirectory(prefix="bench-size-")
    work = a.dir or Path(tmp.name)  # type: ignore[union-attr]
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}, work {work}", flush=True)
    rows = [measure("generated", make_generated(work / "footage", a.clips, a.seconds), work, overrides)]
    real = [] if a.no_real else real_inputs()
    if real:
        rows.append(measure("real", real, work, overrides))
    for r in rows:
        m = r["mb_per_hour"]
        print(f"{r['source']:9s}: {r['indexed']}/{r['files']} files indexed ({r['failed']} failed), "
              f"{r['footage_s']:.0f} footage-s, preset {r['preset']}, indexed in {r['index_wall_s']} s wall | "
              f"index folder {m['total']:.2f} MB/h = SQLite {m['sqlite']:.2f} + shards {m['shards']:.2f} "
              f"+ other {m['other']:.2f} (WAL before checkpoint {r['bytes']['wal_before_checkpoint'] / 1e6:.2f} MB) | "
              f"manifest {r['manifest_kb_per_hour']} KB/h ({r['manifest_bytes']} B for "
              f"{r['manifest_hours'] * 3600:.0f} s)", flush=True)
        for f in r["failed_files"]:
            print(f"           failed: {f}")
    print(json.dumps(rows))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
