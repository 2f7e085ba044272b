"""Real third-party files (tests/data/video, see tests/data/SOURCES.md) all index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index

VIDEO = Path(__file__).resolve().parents[1] / "data" / "video"

# name -> what it covers (see tests/data/SOURCES.md)
FILES = {
    "av1_video.mkv": "AV1 in Matroska",
    "sample_av1.mp4": "AV1 in MP4",
    "h265_bframes.mp4": "HEVC with B-frames",
    "trim-buck-bunny.webm": "VP9 in WebM",
    "cursed-vfr.mp4": "variable frame rate, odd size",
    "no-correct-videoframe-format.mov": "HEVC 10-bit, rotated, truncated",
    "nasa_13013.mp4": "two video streams",
    "sample.avi": "MPEG-4 Part 2 in AVI",
    "bt601.mov": "audio track first",
}


@pytest.mark.slow
def test_every_real_file_indexes(tmp_path: Path) -> None:
    missing = [n for n in FILES if not (VIDEO / n).is_file()]
    assert not missing, f"test data missing: {missing}"
    ix = tmp_path / "ix"
    s = index_paths([VIDEO / n for n in FILES], index=ix, config=load_config(environ={}))
    assert s.failed == [] and s.indexed == len(FILES)
    with open_index(ix, readonly=True) as idx:
        rows = {os.path.basename(f.path): f for f in idx.files()}
        assert set(rows) == set(FILES)
        for name, f in rows.items():
            assert f.status == "ok", (name, f.error)
            assert f.duration_s and f.duration_s > 0, name
            assert f.streams, name
        # Each stream was sampled on the 4 fps grid over its duration.
        for f, key, fp in idx.streams():
            assert len(fp) >= 1 and fp.fps == 4.0
            assert len(fp) <= int(fp.duration_s * 4) + 2, (f.path, key)
        assert idx.stats()["pending_codes"] == 0
