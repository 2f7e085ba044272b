"""Shared by the tests of in-file resume (issue 34, item 6): a long clip, a reader spy, the saved rows.

The clip is generated (PyAV + numpy, :mod:`tests.footage`): 90 s of a moving scene at 24 fps,
H.264 with B-frames and 2 s GOPs, about 3 MB -- long enough for three checkpoints
(:data:`~overlap_desktop.core.ingest.resume.CHECKPOINT_S` is 30 s), short enough to index in
about two seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.ingest.readers.video import VideoReader
from overlap_desktop.core.types import StreamFingerprints
from tests.footage import Scene, render_frames, write_video

__all__ = ["DURATION_S", "Reads", "assert_same", "cfg", "chunks_saved", "saved_rows", "stored", "write_long_clip"]

DURATION_S = 90.0
_FRAMES = VideoReader.frames


def write_long_clip(path: Path) -> Path:
    """The :data:`DURATION_S` clip at ``path``."""
    return write_video(path, render_frames(Scene(7), duration=DURATION_S, fps=24.0), fps=24.0,
                       options={"preset": "veryfast", "g": "48"})


def cfg(ix: Path, **extra: Any) -> Any:
    """Settings with the index at ``ix`` (one process unless ``extra`` says otherwise)."""
    return load_config({"index.path": str(ix), "index.workers": 1, **extra}, environ={})


def stored(ix: Path) -> StreamFingerprints:
    """The fingerprints of the only stream in the index at ``ix``."""
    with open_index(ix, readonly=True) as idx:
        (sid, _fid, _key), = idx.stream_ids()
        return idx.stream_fingerprints(sid)


def saved_rows(ix: Path) -> tuple[int, int]:
    """Rows of saved progress and their chunks, read from the database file itself."""
    import apsw

    db = apsw.Connection(str(ix / "index.sqlite3"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return (db.execute("SELECT count(*) FROM checkpoints").fetchone()[0],
                db.execute("SELECT count(*) FROM checkpoint_chunks").fetchone()[0])
    finally:
        db.close()


def chunks_saved(ix: Path) -> int:
    """Checkpoint chunks the writer has committed so far (0 while the tables are not there yet)."""
    import apsw

    try:
        return saved_rows(ix)[1]
    except apsw.Error:
        return 0


def assert_same(a: StreamFingerprints, b: StreamFingerprints) -> None:
    """Exactly equal fingerprints: times, every variant's codes, quality, usable, spans, duration."""
    assert np.array_equal(a.times_ns, b.times_ns)
    assert np.array_equal(a.codes, b.codes)
    assert np.array_equal(a.quality, b.quality) and np.array_equal(a.usable, b.usable)
    assert a.indeterminate == b.indeterminate and a.duration_s == b.duration_s


class Reads:
    """Counts what :meth:`VideoReader.frames` is asked for (``start_ns``) and hands out, in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.starts: list[int] = []
        self.first_ns: list[int] = []
        self.frames = 0
        original = _FRAMES  # not an earlier spy's wrapper: each counts its own run
        reads = self

        def frames(self_: VideoReader, path: Path, stream: Any, **kw: Any) -> Iterator[Any]:
            reads.starts.append(int(kw.get("start_ns", 0)))
            first = True
            for f in original(self_, path, stream, **kw):
                if first:
                    reads.first_ns.append(int(f.t_ns))
                    first = False
                reads.frames += 1
                yield f

        monkeypatch.setattr(VideoReader, "frames", frames)
