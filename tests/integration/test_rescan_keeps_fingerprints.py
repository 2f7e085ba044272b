"""Re-scan keeps fingerprints until new ones replace them, and says when the library is incomplete (issue 34, 3).

A copy to a new disk or a backup restore gives every file a new date with the same bytes:
the re-scan hashes them, finds the SHA-256 it stored, and keeps the fingerprints. A Cancel
midway (or during the re-read of a file whose bytes did change) must not shrink the library,
and while a run is unfinished every comparison is told the library may be incomplete.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import Progress
from overlap_desktop.errors import Cancelled


def _cfg(ix: Path) -> api.Config:
    return load_config({"index.path": str(ix)}, environ={})


def _statuses(ix: Path) -> dict[str, str]:
    with open_index(ix, readonly=True) as idx:
        return {os.path.basename(f.path): f.status for f in idx.files()}


def _new_dates(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))


@pytest.fixture()
def library(clip_folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    folder = shutil.copytree(clip_folder, tmp_path / "footage")
    ix = tmp_path / "ix"
    s = api.index_paths([folder], index=ix, config=_cfg(ix))
    assert s.indexed == 3
    return folder, ix


def test_same_bytes_new_date_cancel_midway_keeps_every_fingerprint(library: tuple[Path, Path]) -> None:
    folder, ix = library
    assert api.library_completeness(ix, config=_cfg(ix)).complete
    _new_dates(folder)
    checked: list[str] = []

    def progress(p: Progress) -> None:
        if p.message and "same bytes" in p.message:
            checked.append(p.current or "")

    with pytest.raises(Cancelled) as info:
        api.index_paths([folder], index=ix, config=_cfg(ix), forget_missing=True, progress=progress,
                        cancel=lambda: bool(checked))
    assert info.value.summary.skipped == 1 and info.value.summary.indexed == 0  # type: ignore[attr-defined]
    assert set(_statuses(ix).values()) == {"ok"}  # nothing dropped by the Cancel
    done = api.library_completeness(ix, config=_cfg(ix))
    assert not done.complete and done.files_ready == 3 and done.unfinished_runs == (str(folder),)
    assert "incomplete" in done.note and "stopped" in done.note

    # Finishing the re-scan re-reads nothing: the bytes are the same.
    s = api.index_paths([folder], index=ix, config=_cfg(ix), forget_missing=True)
    assert (s.indexed, s.skipped) == (0, 3)
    assert api.library_completeness(ix, config=_cfg(ix)).complete


def test_changed_bytes_are_fingerprinted_again_and_kept_until_replaced(library: tuple[Path, Path]) -> None:
    """The look-alike of a new date: same size and a new date, different bytes. It must be read
    again (a hash match only with the same SHA-256); a Cancel during that read keeps the old
    fingerprints (and the old date, so the next run still redoes it)."""
    folder, ix = library
    target = folder / "a.mp4"
    data = bytearray(target.read_bytes())
    data[len(data) // 3] ^= 0xFF  # same size, other bytes (inside the picture data)
    target.write_bytes(bytes(data))
    with open_index(ix, readonly=True) as idx:
        before = [fp.codes.copy() for f, _k, fp in idx.streams() if f.path == str(target)]
    checking: list[str] = []
    polls = [0]

    def progress(p: Progress) -> None:
        if p.message and "checking" in p.message:
            checking.append(p.current or "")

    def cancel() -> bool:
        # Somewhere inside the re-read's frames: the hash (a few polls) is long done by then.
        polls[0] += bool(checking)
        return polls[0] > 30

    with pytest.raises(Cancelled):
        api.index_paths([target], index=ix, config=_cfg(ix), progress=progress, cancel=cancel)
    assert checking == [str(target)]
    assert _statuses(ix)["a.mp4"] == "ok"
    with open_index(ix, readonly=True) as idx:
        kept = [fp.codes for f, _k, fp in idx.streams() if f.path == str(target)]
    assert len(kept) == len(before) and all((k == b).all() for k, b in zip(kept, before, strict=True))
    assert not api.library_completeness(ix, config=_cfg(ix)).complete
    s = api.index_paths([target], index=ix, config=_cfg(ix))
    assert s.indexed == 1 and s.skipped == 0  # really read again, not waved through
    assert api.library_completeness(ix, config=_cfg(ix)).complete


def test_cli_compare_says_when_the_library_is_incomplete(library: tuple[Path, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder, ix = library
    manifest = tmp_path / "offer.ovlm"
    api.export_manifest(ix, manifest, label="offer")
    assert main(["--index", str(ix), "compare", str(manifest)]) == 0
    assert "incomplete" not in capsys.readouterr().err
    _new_dates(folder)
    with pytest.raises(Cancelled):
        api.index_paths([folder], index=ix, config=_cfg(ix), cancel=lambda: True)
    assert main(["--index", str(ix), "compare", str(manifest)]) == 0
    assert "may be incomplete" in capsys.readouterr().err


def test_cancel_with_worker_processes_leaves_no_file_running(tmp_path: Path) -> None:
    """A file waiting for a free worker when Cancel comes was marked "running": it must be
    "pending" afterwards (a stale "running" row was listed as being read, issue 34 item 7)."""
    from tests.footage import make_clip

    folder = tmp_path / "many"
    for i in range(7):
        make_clip(folder / f"clip-{i}.mp4", 70 + i, duration=1.5, fps=8.0, size=(64, 48))
    ix = tmp_path / "ix"
    # Two worker processes: four files in flight, the fifth waits for a slot when one finishes.
    config = load_config({"index.path": str(ix), "index.workers": 2}, environ={})
    polls = [0]

    def cancel() -> bool:
        # The writer polls once per file handed out and once after it (8 for the first four);
        # the fifth file's 2nd poll is while it waits for a free slot.
        polls[0] += 1
        return polls[0] >= 10

    with pytest.raises(Cancelled):
        api.index_paths([folder], index=ix, config=config, cancel=cancel)
    statuses = _statuses(ix)
    assert "running" not in statuses.values()
    assert set(statuses.values()) <= {"ok", "pending"} and len(statuses) == 5
    left = api.library_completeness(ix, config=config)
    assert left.files_unfinished == sum(1 for v in statuses.values() if v == "pending")


def test_restore_with_new_identity_keeps_fingerprints_and_a_swap_is_read_again(
        library: tuple[Path, Path]) -> None:
    """A backup restore keeps the dates but gives every file a new inode (issue 36's identity):
    the same bytes keep their fingerprints and the new identity is recorded, while the
    look-alike (same size and date, other bytes under a new inode) is fingerprinted again."""
    folder, ix = library
    with open_index(ix, readonly=True) as idx:
        ids_before = {f.path: f.id for f in idx.files()}
    for name in ids_before:
        p = Path(name)
        shutil.copy2(p, p.with_name("restore.tmp"))  # new inode, same bytes and mtime
        os.replace(p.with_name("restore.tmp"), p)
    messages: list[str] = []
    s = api.index_paths([folder], index=ix, config=_cfg(ix),
                        progress=lambda p: messages.append(p.message or ""))
    assert (s.indexed, s.skipped) == (0, 3)
    assert sum("same bytes" in m for m in messages) == 3
    # The identity was recorded: the next run needs no hash at all.
    messages.clear()
    s = api.index_paths([folder], index=ix, config=_cfg(ix), progress=lambda p: messages.append(p.message or ""))
    assert (s.indexed, s.skipped) == (0, 3) and not any("checking" in m for m in messages)
    with open_index(ix, readonly=True) as idx:
        assert {f.path: f.id for f in idx.files()} == ids_before

    target = folder / "sub" / "b.mkv"
    st = target.stat()
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.unlink()
    target.write_bytes(bytes(data))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and date, other bytes
    s = api.index_paths([folder], index=ix, config=_cfg(ix))
    assert (s.indexed, s.skipped) == (1, 2)
    with open_index(ix, readonly=True) as idx:
        assert idx.indexed_sha256(target) == hashlib.sha256(bytes(data)).hexdigest()


def test_a_file_swapped_while_its_bytes_are_checked_is_not_vouched_for(
        library: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile timing (issue 36): the hash says "same bytes", but the file was replaced (same size
    and date, other bytes) while it was hashed. Its old fingerprints must not be kept as if they
    described the new file; it is refused for this run and read again by the next."""
    import overlap_desktop.core.index.run as run_mod

    folder, ix = library
    target = folder / "a.mp4"
    _new_dates(folder)
    real = run_mod.sha256_item
    other = bytearray(target.read_bytes())
    other[len(other) // 3] ^= 0xFF

    def hash_then_swap(path: Path, stop: object = None) -> str:
        digest = real(path, stop)  # type: ignore[arg-type]
        if path == target:
            st = path.stat()
            path.with_name("swap.tmp").write_bytes(bytes(other))
            os.utime(path.with_name("swap.tmp"), ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(path.with_name("swap.tmp"), path)
        return digest

    monkeypatch.setattr(run_mod, "sha256_item", hash_then_swap)
    s = api.index_paths([folder], index=ix, config=_cfg(ix))
    monkeypatch.undo()
    with open_index(ix, readonly=True) as idx:
        row = next(f for f in idx.files() if f.path == str(target))
    assert row.status != "ok" and s.skipped == 2  # not "unchanged (same bytes)"
    s = api.index_paths([folder], index=ix, config=_cfg(ix))
    with open_index(ix, readonly=True) as idx:
        row = next(f for f in idx.files() if f.path == str(target))
    assert row.status == "ok" and row.sha256 == hashlib.sha256(bytes(other)).hexdigest()
