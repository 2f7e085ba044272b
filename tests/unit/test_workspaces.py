"""Offer workspaces: listed with their size, removed only when safe (services/workspaces.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.core.index.lock import WriterLock
from overlap_desktop.services import workspaces as ws


def _workspace(root: Path, name: str, size: int, mtime: float) -> Path:
    folder = root / name
    (folder / "shards").mkdir(parents=True)
    (folder / "index.sqlite3").write_bytes(b"x" * size)
    (folder / "shards" / "codes.npy").write_bytes(b"y" * 10)
    for p in (folder / "index.sqlite3", folder / "shards" / "codes.npy"):
        os.utime(p, (mtime, mtime))
    return folder


def test_the_root_is_where_the_wizard_puts_offers() -> None:
    assert api.vendor_workspace("Q3 kitchen").parent == api.vendor_workspaces_root()


def test_listing_is_newest_first_with_sizes_and_skips_other_entries(tmp_path: Path) -> None:
    assert ws.list_vendor_workspaces(tmp_path / "missing") == []
    old = _workspace(tmp_path, "old-offer", 100, 1_000_000.0)
    new = _workspace(tmp_path, "new-offer", 5, 2_000_000.0)
    (tmp_path / "stray.txt").write_text("not a folder")
    (tmp_path / ".hidden").mkdir()
    listed = ws.list_vendor_workspaces(tmp_path)
    assert [w.path for w in listed] == [new, old]
    assert [w.size_bytes for w in listed] == [15, 110]
    assert listed[1].modified == pytest.approx(1_000_000.0)


def test_remove_frees_the_space_and_only_that_workspace(tmp_path: Path) -> None:
    keep = _workspace(tmp_path, "keep", 10, 1.0)
    gone = _workspace(tmp_path, "gone", 1000, 1.0)
    assert ws.remove_vendor_workspace(gone, root=tmp_path) == 1010
    assert not gone.exists() and keep.is_dir()
    assert [w.name for w in ws.list_vendor_workspaces(tmp_path)] == ["keep"]
    # Nothing left behind beside it (the renamed-aside copy is removed too).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]


def test_an_empty_workspace_folder_can_be_removed(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert ws.remove_vendor_workspace(tmp_path / "empty", root=tmp_path) == 0
    assert not (tmp_path / "empty").exists()


@pytest.mark.parametrize("where", ["outside", "root", "dotdot", "not-an-index", "missing", "hidden"])
def test_remove_refuses_anything_but_a_workspace(tmp_path: Path, where: str) -> None:
    root = tmp_path / "vendor-workspaces"
    root.mkdir()
    target = {
        "outside": _workspace(tmp_path, "elsewhere", 10, 1.0),
        "root": root,
        "dotdot": root / "x" / ".." / ".." / "outside-too",
        "not-an-index": root / "photos",
        "missing": root / "never-made",
        "hidden": root / ".removing-old",
    }[where]
    if where == "dotdot":
        (root / "x").mkdir()
        _workspace(tmp_path, "outside-too", 10, 1.0)
    if where == "not-an-index":
        target.mkdir()
        (target / "holiday.jpg").write_bytes(b"jpeg")
    if where == "hidden":
        target.mkdir()
    with pytest.raises(api.UsageError) as info:
        ws.remove_vendor_workspace(target, root=root)
    assert str(target.name) in str(info.value) or str(target) in str(info.value)
    if where != "missing":
        assert target.exists(), "a refused removal deletes nothing"


def test_remove_refuses_a_workspace_being_written(tmp_path: Path) -> None:
    busy = _workspace(tmp_path, "busy", 10, 1.0)
    lock = WriterLock(busy / "index.lock")
    lock.acquire()
    try:
        with pytest.raises(api.IndexBusyError, match="writing to this index"):
            ws.remove_vendor_workspace(busy, root=tmp_path)
    finally:
        lock.release()
    assert (busy / "index.sqlite3").exists()
    assert ws.remove_vendor_workspace(busy, root=tmp_path) == 20


def test_a_removal_cut_short_is_finished_by_the_next_listing(tmp_path: Path) -> None:
    _workspace(tmp_path, "kept", 1, 1.0)
    leftover = _workspace(tmp_path, ".removing-old-1234abcd", 50, 1.0)
    assert [w.name for w in ws.list_vendor_workspaces(tmp_path)] == ["kept"]
    assert not leftover.exists()
