"""An interrupted run continues inside a long file instead of re-reading it from 0% (issue 34, item 6).

A generated 90 s H.264 clip with B-frames and 2 s GOPs is indexed, cancelled after the
checkpoint at 60 s was saved, and indexed again: the second run must decode only from
near the checkpoint, and the stored fingerprints must equal those of an uninterrupted
run exactly. The controls: a file replaced in place (same size and date, new identity),
other settings, and damaged saved progress all read the file from the start; an index
of schema 3 is upgraded to hold the progress.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import NS_PER_S, Progress, StreamFingerprints
from overlap_desktop.errors import Cancelled
from tests.footage import Scene, render_frames, write_video
from tests.resume_clips import (
    DURATION_S,
    Reads,
    assert_same,
    cfg,
    chunks_saved,
    saved_rows,
    stored,
    write_long_clip,
)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_long_clip(tmp_path_factory.mktemp("resume") / "long.mp4")


@pytest.fixture(scope="module")
def reference(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> StreamFingerprints:
    """The clip's fingerprints from one uninterrupted run."""
    ix = tmp_path_factory.mktemp("ref") / "idx"
    assert index_paths([clip], config=cfg(ix)).indexed == 1
    return stored(ix)


def _interrupt(clip: Path, ix: Path, chunks: int = 2, paths: list[Path] | None = None, **extra: Any) -> None:
    """Index ``clip`` (or ``paths``) and cancel once the index holds ``chunks`` checkpoints of it
    (2: the checkpoints after 30 s and 60 s of footage)."""
    with pytest.raises(Cancelled):
        index_paths(paths or [clip], config=cfg(ix, **extra), cancel=lambda: chunks_saved(ix) >= chunks)
    assert saved_rows(ix) == (1, chunks)


def test_a_cancelled_file_continues_from_its_checkpoint_and_ends_identical(
        clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = tmp_path / "idx"
    _interrupt(clip, ix)
    reads = Reads(monkeypatch)
    events: list[Progress] = []
    summary = index_paths([clip], config=cfg(ix), progress=events.append)
    assert summary.indexed == 1 and not summary.warnings
    # Decoding started at the saved frame, not at 0: the first frame read after 60 s of footage once a
    # hashing batch (16 samples, 4 s) was complete; then a third of the clip's frames.
    (start,) = reads.starts
    assert 60 * NS_PER_S <= start <= 64.1 * NS_PER_S and reads.first_ns == [start]
    full = Reads(monkeypatch)
    assert index_paths([clip], config=cfg(tmp_path / "again")).indexed == 1
    assert 0 < reads.frames < 0.4 * full.frames
    # What the user sees: the file's progress starts at the checkpoint, and says so.
    file_events = [e for e in events if e.current == str(clip) and e.current_done is not None]
    at = start / NS_PER_S / DURATION_S
    assert file_events[0].current_done == pytest.approx(at, abs=0.001)
    assert file_events[0].message is not None and f"resuming at {at:.0%}" in file_events[0].message
    assert min(e.current_done or 0.0 for e in file_events) >= at - 0.001
    assert_same(stored(ix), reference)
    assert saved_rows(ix) == (0, 0)  # finished: the saved progress is gone


def test_a_file_replaced_in_place_is_read_from_the_start(
        clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same size and date but rewritten (a new change time): the saved samples may be another file's."""
    local = tmp_path / "long.mp4"
    local.write_bytes(clip.read_bytes())
    ix = tmp_path / "idx"
    _interrupt(local, ix)
    st = local.stat()
    local.write_bytes(local.read_bytes())  # same bytes here, but nothing may vouch for that
    os.utime(local, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (local.stat().st_size, local.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    reads = Reads(monkeypatch)
    assert index_paths([local], config=cfg(ix)).indexed == 1
    assert reads.starts == [0] and reads.first_ns == [0]
    assert_same(stored(ix), reference)


def test_other_settings_do_not_reuse_saved_progress(clip: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ix = tmp_path / "idx"
    _interrupt(clip, ix)
    reads = Reads(monkeypatch)
    assert index_paths([clip], config=cfg(ix, **{"index.quality_floor": 40})).indexed == 1
    assert reads.starts == [0]
    assert saved_rows(ix) == (0, 0)


def test_progress_saved_by_another_overlap_version_is_not_reused(clip: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Another version may decode or sample differently: its samples are not joined with ours."""
    from overlap_desktop.core.index import checkpoints

    ix = tmp_path / "idx"
    _interrupt(clip, ix)
    monkeypatch.setattr(checkpoints, "__version__", "0.0.1-older")
    reads = Reads(monkeypatch)
    summary = index_paths([clip], config=cfg(ix))
    assert summary.indexed == 1 and not summary.warnings and reads.starts == [0]


def test_damaged_saved_progress_is_discarded_with_a_plain_message(
        clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import apsw

    ix = tmp_path / "idx"
    _interrupt(clip, ix)
    conn = apsw.Connection(str(ix / "index.sqlite3"))
    conn.execute("UPDATE checkpoint_chunks SET data = substr(data, 1, 100) WHERE seq = 1")
    conn.close()
    reads = Reads(monkeypatch)
    summary = index_paths([clip], config=cfg(ix))
    assert summary.indexed == 1 and not summary.failed
    assert reads.starts == [0]
    assert any("progress saved inside this file was damaged" in w and "read from the start" in w
               for w in summary.warnings), summary.warnings
    assert_same(stored(ix), reference)


def _edit_state(ix: Path, edit: Any) -> None:
    """Apply ``edit`` to the saved state's JSON (inside its seal when it has one), keeping the seal."""
    import json

    import apsw

    conn = apsw.Connection(str(ix / "index.sqlite3"))
    (raw,), = conn.execute("SELECT state FROM checkpoints").fetchall()
    outer = json.loads(raw)
    inner = json.loads(outer["sealed"]) if "sealed" in outer else outer
    edit(inner)
    if "sealed" in outer:
        outer["sealed"] = json.dumps(inner)
    else:
        outer = inner
    conn.execute("UPDATE checkpoints SET state = ?", (json.dumps(outer),))
    conn.close()


@pytest.mark.parametrize("nudge", ["next_grid_time", "first_time", "fraction"])
def test_saved_progress_nudged_by_one_nanosecond_restarts_the_file_and_ends_identical(
        nudge: str, clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = tmp_path / "idx"
    _interrupt(clip, ix)

    def edit(state: dict[str, Any]) -> None:
        if nudge == "fraction":
            state["fraction"] = state["fraction"] + 1e-6
        else:
            state["grid"][3 if nudge == "next_grid_time" else 0] += 1

    _edit_state(ix, edit)
    reads = Reads(monkeypatch)
    summary = index_paths([clip], config=cfg(ix))
    assert summary.indexed == 1 and not summary.failed
    assert reads.starts == [0]  # the check failed: read from the start
    assert any("progress saved inside this file was damaged" in w and "checksum" in w for w in summary.warnings), \
        summary.warnings
    assert_same(stored(ix), reference)


def test_saved_progress_moved_to_another_file_restarts_it(
        clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import apsw

    ix = tmp_path / "idx"
    other = tmp_path / "copy" / "long.mp4"
    other.parent.mkdir()
    shutil.copy2(clip, other)
    _interrupt(other, ix)
    # The row and its chunks are re-labelled for the original clip, with its size, date and identity.
    from overlap_desktop.core.index.reading import norm_path
    from overlap_desktop.core.index.walk import item_state

    size, mtime, key = item_state(clip)
    conn = apsw.Connection(str(ix / "index.sqlite3"))
    conn.execute("UPDATE checkpoints SET path = ?, size = ?, mtime_ns = ?, stat_key = ?",
                 (norm_path(clip), size, mtime, key))
    conn.execute("UPDATE checkpoint_chunks SET path = ?", (norm_path(clip),))
    conn.execute("DELETE FROM files")
    conn.close()
    reads = Reads(monkeypatch)
    summary = index_paths([clip], config=cfg(ix))
    assert summary.indexed == 1 and reads.starts == [0]
    assert_same(stored(ix), reference)


def test_a_schema_3_index_is_upgraded_and_then_keeps_progress(clip: Path, tmp_path: Path) -> None:
    import apsw

    from overlap_desktop.core.index.schema import SCHEMA_VERSION

    ix = tmp_path / "idx"
    other = tmp_path / "short.mp4"
    write_video(other, render_frames(Scene(3), duration=2.0, fps=12.0), fps=12.0)
    assert index_paths([other], config=cfg(ix)).indexed == 1
    conn = apsw.Connection(str(ix / "index.sqlite3"))
    conn.execute("DROP TABLE checkpoints; DROP TABLE checkpoint_chunks; "
                 "UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    with open_index(ix, readonly=True) as idx:  # read as it is
        assert idx.schema_version == 3 and len(idx.files()) == 1
    _interrupt(clip, ix)  # the writer upgrades, then saves progress in the new tables
    with open_index(ix, readonly=True) as idx:
        assert idx.schema_version == SCHEMA_VERSION == 4
        assert {os.path.basename(f.path): f.status for f in idx.files()}["short.mp4"] == "ok"


def test_worker_processes_send_their_progress_to_the_writer(
        clip: Path, reference: StreamFingerprints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With two worker processes the long file is fingerprinted in a worker, which cannot write the
    index: the worker continues from the saved checkpoint and its next one travels to the writer."""
    from overlap_desktop.core.index.run import IndexRun

    shorts = [tmp_path / f"short{i}.mp4" for i in range(2)]
    for i, path in enumerate(shorts):
        write_video(path, render_frames(Scene(3 + i), duration=2.0, fps=12.0), fps=12.0)
    ix = tmp_path / "idx"
    workers = {"index.workers": 2}
    # Stopped after the checkpoint at 30 s of footage, in this process: with workers the stop can
    # arrive after the worker already sent the next one, so how far it got would depend on timing.
    _interrupt(clip, ix, chunks=1, paths=[clip, shorts[0]])
    saved: list[tuple[int, float]] = []
    save_progress = IndexRun.save_progress

    def spy(self: IndexRun, job: Any, key: str, checkpoint: Any) -> None:
        saved.append((checkpoint.seq, checkpoint.grid.last_t_ns / NS_PER_S))
        save_progress(self, job, key, checkpoint)

    monkeypatch.setattr(IndexRun, "save_progress", spy)
    events: list[Progress] = []
    # A new short file too, so that this run has two files to do and uses the workers again.
    summary = index_paths([clip, *shorts], config=cfg(ix, **workers), progress=events.append)
    assert not summary.failed and summary.engine == "2 worker processes"
    resumed = [e for e in events if e.current == str(clip) and e.message and "resuming at" in e.message]
    assert len(resumed) == 1 and (resumed[0].current_done or 0.0) >= 30 / DURATION_S
    # The resumed worker went on saving: the next chunk, 30 s of footage after the first.
    assert [seq for seq, _ in saved] == [1] and saved[0][1] >= 60
    with open_index(ix, readonly=True) as idx:
        ((_f, _key, fp),) = list(idx.streams([clip]))
    assert_same(fp, reference)
    assert saved_rows(ix) == (0, 0)
