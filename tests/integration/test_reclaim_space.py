"""Re-scanning a re-muxed file (same frames, new container) gives the old fingerprints' space back.

Seen: one re-muxed 20-min file grew an index from 3.8 to 6.2 MB (SQLite keeps freed pages in the
file). The end of an indexing run now gives them back when they are many (``RECLAIM_SHARE`` of the
file and ``RECLAIM_BYTES``); here the byte threshold is lowered to fit a short test clip.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import av
import pytest

from overlap_desktop import api
from overlap_desktop.core.index import store
from tests.footage import make_clip


def _remux(src: Path, dst: Path) -> None:
    """The same packets in a Matroska container (no decoding: the frames are unchanged)."""
    with av.open(str(src)) as inp, av.open(str(dst), "w", format="matroska") as out:
        stream = inp.streams.video[0]
        copy = out.add_stream_from_template(stream)
        for packet in inp.demux(stream):
            if packet.dts is None:
                continue
            packet.stream = copy
            out.mux(packet)


def _pages(db: Path) -> tuple[int, int]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return (int(conn.execute("PRAGMA freelist_count").fetchall()[0][0]),
                int(conn.execute("PRAGMA page_count").fetchall()[0][0]))
    finally:
        conn.close()


def test_a_remuxed_file_rescanned_leaves_no_free_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "RECLAIM_BYTES", 64 * 1024)
    lib = tmp_path / "lib"
    clip = make_clip(lib / "clip.mp4", 7, duration=240.0, fps=12.0, size=(160, 120))
    index = tmp_path / "index"
    cfg = api.load_config({"index.path": str(index)}, cwd=tmp_path, environ={}, user_file=tmp_path / "none.toml")
    api.index_paths([lib], index=index, config=cfg)
    db = index / "index.sqlite3"
    _free, first_pages = _pages(db)
    remuxed = tmp_path / "remuxed.mkv"
    _remux(clip, remuxed)
    remuxed.replace(clip)
    summary = api.index_paths([lib], index=index, config=cfg)
    assert summary.indexed == 1  # new bytes: fingerprinted again
    free, pages = _pages(db)
    assert free == 0 and pages <= first_pages * 1.05, (free, pages, first_pages)
    with api.open_index(index, config=cfg) as idx:
        assert [f.status for f in idx.files()] == ["ok"]
        # The look-alike: with nothing replaced there is nothing to give back.
        assert idx.reclaim_free_space() == 0
