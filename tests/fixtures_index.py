"""Session fixtures for the index tests: small generated clip folders and bad files.

Registered once for the whole suite in tests/conftest.py (``pytest_plugins``): a test uses a
fixture by naming it as an argument. They are session-scoped, so the footage is encoded once
per test session (per xdist worker).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from tests.footage import make_clip

__all__ = ["CLIP_S", "bad_folder", "clip_folder", "copy_tree", "index_clip_master", "make_bad_files",
           "rewrite_shards_as_format_3", "seed_codes"]

#: Duration of each generated clip, seconds.
CLIP_S = 10.0
_SIZE = (160, 120)
_FPS = 15.0


@pytest.fixture(scope="session")
def index_clip_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index-clips")
    make_clip(root / "a.mp4", 11, duration=CLIP_S, fps=_FPS, size=_SIZE)
    make_clip(root / "sub" / "b.mkv", 12, duration=CLIP_S, fps=_FPS, size=_SIZE)
    make_clip(root / "sub" / "deeper" / "c.mp4", 13, duration=CLIP_S, fps=_FPS, size=_SIZE)
    # Never indexed: hidden, or no reader claims them.
    shutil.copy(root / "a.mp4", root / ".hidden.mp4")
    (root / "notes.txt").write_text("not footage\n", encoding="utf-8")
    (root / "Thumbs.db").write_bytes(b"\0" * 16)
    return root


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a fixture folder keeping modification times (so copies are 'unchanged' alike)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


@pytest.fixture
def clip_folder(index_clip_master: Path, tmp_path: Path) -> Path:
    """A private copy of three 10 s clips (a.mp4, sub/b.mkv, sub/deeper/c.mp4) plus files
    that must be skipped (.hidden.mp4, notes.txt, Thumbs.db). Tests may modify it."""
    return copy_tree(index_clip_master, tmp_path / "clips")


def _audio_only(path: Path) -> None:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        stream.layout = "mono"  # type: ignore[union-attr]
        samples = (np.sin(np.arange(16000) / 10.0) * 3000).astype(np.int16)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = 16000
        for packet in stream.encode(frame):  # type: ignore[union-attr]
            out.mux(packet)
        for packet in stream.encode(None):  # type: ignore[union-attr]
            out.mux(packet)


def make_bad_files(root: Path, good: Path) -> dict[str, Path]:
    """Write one file of each kind the indexer must refuse (and keep going)."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    data = good.read_bytes()
    bad = {
        "zero": root / "zero.mp4",
        "random": root / "random.mp4",
        "truncated": root / "truncated.mp4",
        "audio": root / "audio_only.mp4",
        "text": root / "readme.mkv",
    }
    bad["zero"].write_bytes(b"")
    bad["random"].write_bytes(rng.integers(0, 256, 64 * 1024, dtype=np.uint8).tobytes())
    # PyAV writes the moov atom at the end, so the first 40% has none.
    bad["truncated"].write_bytes(data[: int(len(data) * 0.4)])
    _audio_only(bad["audio"])
    bad["text"].write_text("this is a text file, not Matroska\n" * 20, encoding="utf-8")
    return bad


@pytest.fixture(scope="session")
def bad_folder(index_clip_master: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    """A folder with one good clip (good.mp4) and each kind of bad file."""
    root = tmp_path_factory.mktemp("index-bad")
    shutil.copy2(index_clip_master / "a.mp4", root / "good.mp4")
    return root, make_bad_files(root, index_clip_master / "a.mp4")


def seed_codes(idx: Any) -> int:
    """Rows the search shards of an index hold: every variant of each usable sample on the
    index's seed grid (shard format 4; the database keeps every sample)."""
    from overlap_desktop.core.index.shards import seed_frames

    return sum(seed_frames(fp.times_ns, fp.usable, idx.seed_fps).size * len(fp.variants)
               for _, _, fp in idx.streams())


def rewrite_shards_as_format_3(ix: Path) -> int:
    """Rewrite every shard of ``ix`` in format 3 (what an index sealed by an earlier build holds)."""
    return rewrite_shards(ix, 3)


def rewrite_shards(ix: Path, version: int) -> int:
    """Rewrite every shard of ``ix`` in shard format ``version``, same rows (what an index sealed
    by an earlier build holds: format 3 has no seed grid in its meta, format 4 keeps it)."""
    from overlap_desktop.core.index.shards import Shard, build_shard

    dirs = sorted(p for p in (ix / "shards").iterdir() if p.is_dir())
    for d in dirs:
        shard = Shard.open(d)
        rows = np.arange(shard.count, dtype=np.int64)
        codes, sids = np.array(shard.codes), shard.stream_of(rows)
        fidx, vidx = np.array(shard.column("frame_idx")), np.array(shard.column("variant_idx"))
        seed_fps = shard.seed_fps if version >= 4 else None
        shard.close()
        build_shard(d, codes, sids, fidx, vidx, version=version, seed_fps=seed_fps)
    return len(dirs)
