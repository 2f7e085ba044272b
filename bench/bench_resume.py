"""Finishing a long file after an interruption: resumed from its checkpoint vs from the start (issue 34, 6).

Run from the repository root::

    python bench/bench_resume.py                   # 8 min of 1280x720 footage, stopped at ~60 %
    python bench/bench_resume.py --minutes 4 --at 0.6

A long clip is generated once (a smooth scene panned with numpy, H.264 with B-frames and 2 s GOPs)
and indexed in this process (``index.workers = 1``, what a single long file gets by default):

1. ``full``: from scratch into a fresh index, progress saved every 30 s of footage (the default);
2. ``full, no checkpoints``: the same with the reader's ``resumable`` switched off, so no progress
   is saved (the cost of saving it is the difference);
3. an interrupted run, cancelled once the index holds a checkpoint at ``--at`` of the file, then
   ``resumed``: the run that finishes the file from that checkpoint.

Before this change every interruption cost the whole file again, i.e. ``full``; the figure is
``resumed / full``. The resumed index's fingerprints are compared with the uninterrupted one's
(they must be equal). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.footage import write_video  # noqa: E402
from tests.resume_clips import assert_same, cfg, chunks_saved, stored  # noqa: E402


def _frames(seconds: float, fps: float, size: tuple[int, int]) -> Iterator[np.ndarray]:
    """A smooth random landscape panned and zoomed slowly: cheap to render, realistic to encode."""
    w, h = size
    rng = np.random.default_rng(34)
    small = rng.uniform(0, 255, (h // 8 + 40, w // 8 + 400, 3)).astype(np.float32)
    big = np.repeat(np.repeat(small, 8, axis=0), 8, axis=1)  # blocky texture, panned below
    for i in range(int(seconds * fps)):
        x = int(i * 2.5) % (big.shape[1] - w)
        y = int(40 * (1 + np.sin(i / 90.0)))
        frame = big[y:y + h, x:x + w]
        yield np.clip(frame + 20 * np.sin(i / 15.0), 0, 255).astype(np.uint8)


def _saved_fraction(ix: Path) -> float:
    """Fraction of the file the newest checkpoint covers (0 while none)."""
    import apsw

    if chunks_saved(ix) == 0:
        return 0.0
    db = apsw.Connection(str(ix / "index.sqlite3"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (state,), = db.execute("SELECT state FROM checkpoints").fetchall()
        return float(json.loads(state)["fraction"])
    finally:
        db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--at", type=float, default=0.6, help="stop once a checkpoint covers this fraction")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the clip in between runs")
    args = ap.parse_args()
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.ingest.readers.video import VideoReader
    from overlap_desktop.errors import Cancelled

    work = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    folder = args.keep or work
    w, h = (int(x) for x in args.size.split("x"))
    clip = folder / f"long-{args.minutes:g}min-{args.size}.mp4"
    if not clip.exists():
        t = time.perf_counter()
        write_video(clip, _frames(args.minutes * 60, 24.0, (w, h)), fps=24.0,
                    options={"preset": "veryfast", "g": "48", "crf": "18"})
        print(f"generated {clip.name}: {clip.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s")
    size_mb = clip.stat().st_size / 1e6
    try:
        def timed(ix: Path, **kw: object) -> float:
            t = time.perf_counter()
            index_paths([clip], config=cfg(ix), **kw)  # type: ignore[arg-type]
            return time.perf_counter() - t

        full = timed(work / "full")
        VideoReader.resumable = False  # type: ignore[misc]
        plain = timed(work / "plain")
        VideoReader.resumable = True  # type: ignore[misc]
        ix = work / "resumed"
        t = time.perf_counter()
        last = [0.0]

        def stop() -> bool:
            # Polled for every frame: look at the database only a few times a second.
            if time.perf_counter() - last[0] < 0.2:
                return False
            last[0] = time.perf_counter()
            return _saved_fraction(ix) >= args.at

        try:
            index_paths([clip], config=cfg(ix), cancel=stop)
        except Cancelled:
            pass
        first = time.perf_counter() - t
        at = _saved_fraction(ix)
        resumed = timed(ix)
        assert_same(stored(ix), stored(work / "full"))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"clip: {args.minutes:g} min {args.size}, {size_mb:.0f} MB; load average {load:.1f}")
        print(f"full run (checkpoints every 30 s of footage): {full:.1f} s; without checkpoints: {plain:.1f} s "
              f"(saving progress costs {100 * (full / plain - 1):+.1f} %)")
        print(f"interrupted run: stopped after {first:.1f} s with progress saved at {at:.0%}")
        print(f"finishing after the interruption: resumed {resumed:.1f} s vs from scratch {full:.1f} s: "
              f"ratio {resumed / full:.2f} (fingerprints equal to the uninterrupted run's)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
