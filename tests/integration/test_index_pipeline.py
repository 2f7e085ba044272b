"""``index_paths`` on generated footage: resumable, deterministic, robust to bad files."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index.fingerprinting import fingerprint_file
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.shards import seed_frames
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import Progress, Variant
from overlap_desktop.errors import Cancelled, UsageError
from tests.fixtures_index import CLIP_S, seed_codes

EXPECTED = ("a.mp4", "sub/b.mkv", "sub/deeper/c.mp4")


def cfg(**over: object):  # type: ignore[no-untyped-def]
    return load_config({k.replace("_", ".", 1): v for k, v in over.items()}, environ={})


def rel(paths: list[str], root: Path) -> list[str]:
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p in paths)


def fingerprints(ix: Path) -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    out: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    with open_index(ix, readonly=True) as idx:
        for f, key, fp in idx.streams():
            out.setdefault(os.path.basename(f.path), []).append((key, fp.times_ns, fp.codes))
    return out


def test_index_folder_then_noop_then_changed(clip_folder: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    events: list[Progress] = []
    s = index_paths([clip_folder], index=ix, config=cfg(), progress=events.append)
    assert (s.files_seen, s.indexed, s.skipped, s.failed) == (3, 3, 0, [])
    assert s.hours_indexed == pytest.approx(3 * CLIP_S / 3600, rel=0.05)
    assert s.hours_indeterminate >= 0 and not s.missing and not s.warnings
    # Progress: the item count first, then bytes, monotone, ending at the total, one message per file.
    assert events[0].stage == "scan" and events[0].total == 3
    assert events[-1].stage == "seal"
    # Sealing counts the new streams' fingerprints as they are read, up to the total, and names
    # each shard while it is built.
    seal = [e for e in events if e.stage == "seal"]
    assert all(e.unit == "codes" and e.total for e in seal)
    assert [e.done for e in seal] == sorted(e.done for e in seal) and seal[-1].done == seal[-1].total
    assert seal[0].done == 0 and any("building search shard 1" in (e.message or "") for e in seal)
    events = [e for e in events if e.stage == "index"]
    assert all(e.unit == "bytes" for e in events)
    done = [e.done for e in events]
    assert done == sorted(done) and done[-1] == pytest.approx(events[-1].total)
    assert rel([e.current for e in events if e.message], clip_folder) == sorted(EXPECTED)
    with open_index(ix, readonly=True) as idx:
        files = idx.files()
        assert rel([f.path for f in files], clip_folder) == sorted(EXPECTED)
        for f in files:
            assert f.status == "ok" and f.reader == "video" and f.streams and f.fps == 4.0
            assert f.sha256 == hashlib.sha256(Path(f.path).read_bytes()).hexdigest()
            assert f.duration_s == pytest.approx(CLIP_S, abs=0.2)
        st = idx.stats()
        assert st["files_ok"] == 3 and st["shards"] >= 1 and st["pending_codes"] == 0
        # Every variant of every usable sample on the seed grid is searchable (verification
        # reads the other samples from the database).
        seeds = sum(seed_frames(fp.times_ns, fp.usable, idx.seed_fps).size * len(fp.variants)
                    for _, _, fp in idx.streams())
        assert st["shard_codes"] == seeds > 0 and seeds * 3 < st["codes"]
        n_var = len(next(idx.streams())[2].variants)
        assert n_var > 1
    before = fingerprints(ix)

    # Re-index: a no-op.
    s = index_paths([clip_folder], index=ix, config=cfg())
    assert (s.indexed, s.skipped, s.failed) == (0, 3, [])

    # A touched file is re-hashed and, its bytes unchanged, kept as it is (issue 34); a rewritten
    # one gets new fingerprints and sha256.
    a = clip_folder / "a.mp4"
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    shutil.copy(clip_folder / "sub" / "deeper" / "c.mp4", clip_folder / "sub" / "b.mkv")
    s = index_paths([clip_folder], index=ix, config=cfg())
    assert (s.indexed, s.skipped) == (1, 2)
    after = fingerprints(ix)
    np.testing.assert_array_equal(after["a.mp4"][0][2], before["a.mp4"][0][2])
    assert not np.array_equal(after["b.mkv"][0][2], before["b.mkv"][0][2])
    with open_index(ix, readonly=True) as idx:
        b = idx.file(clip_folder / "sub" / "b.mkv")
        assert b is not None and b.sha256 == hashlib.sha256((clip_folder / "sub" / "b.mkv").read_bytes()).hexdigest()
        assert idx.stats()["shards_stale"] == 0 and idx.stats()["pending_codes"] == 0


def test_same_folder_twice_gives_identical_fingerprints(clip_folder: Path, tmp_path: Path) -> None:
    index_paths([clip_folder], index=tmp_path / "one", config=cfg())
    index_paths([clip_folder], index=tmp_path / "two", config=cfg())
    one, two = fingerprints(tmp_path / "one"), fingerprints(tmp_path / "two")
    assert one.keys() == two.keys() == {"a.mp4", "b.mkv", "c.mp4"}
    for name in one:
        for (k1, t1, c1), (k2, t2, c2) in zip(one[name], two[name]):
            assert k1 == k2
            np.testing.assert_array_equal(t1, t2)
            np.testing.assert_array_equal(c1, c2)
    # fingerprint_file (no index) gives the same upright codes.
    direct = fingerprint_file(clip_folder / "a.mp4", config=cfg())
    np.testing.assert_array_equal(direct[0][1].codes[:, 0], one["a.mp4"][0][2][:, 0])
    assert direct[0][1].variants == (Variant(),)


def test_forget_missing(clip_folder: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    index_paths([clip_folder], index=ix, config=cfg())
    (clip_folder / "sub" / "b.mkv").unlink()
    s = index_paths([clip_folder], index=ix, config=cfg())
    assert rel(s.missing, clip_folder) == ["sub/b.mkv"] and s.forgotten == 0
    with open_index(ix, readonly=True) as idx:
        assert len(idx.files()) == 3
    # Forgetting is scoped to the given roots.
    s = index_paths([clip_folder / "sub" / "deeper"], index=ix, config=cfg(), forget_missing=True)
    assert s.forgotten == 0
    s = index_paths([clip_folder], index=ix, config=cfg(), forget_missing=True)
    assert s.forgotten == 1 and s.skipped == 2
    with open_index(ix) as idx:
        assert rel([f.path for f in idx.files()], clip_folder) == ["a.mp4", "sub/deeper/c.mp4"]
        assert sum(len(sh) for sh in idx.shards()) == seed_codes(idx)


def test_cancel_keeps_finished_files_and_resumes(clip_folder: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    finished: list[str] = []

    def progress(p: Progress) -> None:
        if p.message:
            finished.append(p.current or "")

    with pytest.raises(Cancelled) as info:
        index_paths([clip_folder], index=ix, config=cfg(), progress=progress, cancel=lambda: bool(finished))
    partial = info.value.summary  # type: ignore[attr-defined]
    assert partial.cancelled and partial.indexed == 1
    with open_index(ix, readonly=True) as idx:
        assert [f.status for f in idx.files()] == ["ok"]
    s = index_paths([clip_folder], index=ix, config=cfg())
    assert (s.indexed, s.skipped) == (2, 1)


def test_cancel_mid_file_leaves_it_pending(clip_folder: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    calls = [0]

    def cancel() -> bool:
        calls[0] += 1
        return calls[0] > 30  # somewhere inside the first file's frames

    with pytest.raises(Cancelled):
        index_paths([clip_folder / "a.mp4"], index=ix, config=cfg(), cancel=cancel)
    with open_index(ix, readonly=True) as idx:
        assert [f.status for f in idx.files()] == ["pending"]
    s = index_paths([clip_folder / "a.mp4"], index=ix, config=cfg())
    assert s.indexed == 1


def test_bad_files_are_recorded_and_the_rest_indexed(bad_folder: tuple[Path, dict[str, Path]],
                                                     tmp_path: Path) -> None:
    root, bad = bad_folder
    s = index_paths([root], index=tmp_path / "ix", config=cfg())
    assert s.indexed == 1 and s.files_seen == 6
    reasons = dict(s.failed)
    assert set(reasons) == {str(p) for p in bad.values()}
    assert all(r and "Traceback" not in r for r in reasons.values())
    assert "empty" in reasons[str(bad["zero"])] or "0 bytes" in reasons[str(bad["zero"])]
    assert "video" in reasons[str(bad["audio"])].lower()
    with open_index(tmp_path / "ix", readonly=True) as idx:
        rows = {os.path.basename(f.path): f for f in idx.files()}
        assert rows["good.mp4"].status == "ok"
        for p in bad.values():
            assert rows[p.name].status == "error" and rows[p.name].error == reasons[str(p)]
    # Bad files are retried (and fail again); the good one is skipped.
    s = index_paths([root], index=tmp_path / "ix", config=cfg())
    assert s.skipped == 1 and len(s.failed) == 5


def test_explicit_paths_and_warnings(clip_folder: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        index_paths([clip_folder / "nope"], index=tmp_path / "ix", config=cfg())
    # An explicitly named hidden file is indexed; one no reader claims is reported.
    s = index_paths([clip_folder / ".hidden.mp4", clip_folder / "notes.txt"], index=tmp_path / "ix",
                    config=cfg(index_fps=2.0))
    assert s.indexed == 1 and s.failed == [(str(clip_folder / "notes.txt"), "no reader supports this kind of file")]
    assert any("below 4" in w for w in s.warnings)
    # Different settings re-fingerprint a file.
    s = index_paths([clip_folder / ".hidden.mp4"], index=tmp_path / "ix", config=cfg())
    assert s.indexed == 1


def test_symlink_loops_and_the_index_folder_are_not_walked(clip_folder: Path, tmp_path: Path) -> None:
    if not hasattr(os, "symlink"):
        pytest.skip("no symlinks")
    try:
        os.symlink(clip_folder, clip_folder / "sub" / "loop", target_is_directory=True)
    except OSError:
        pytest.skip("symlinks not permitted")
    ix = clip_folder / "my-index"
    s = index_paths([clip_folder], index=ix, config=cfg())
    assert s.files_seen == 3 and s.indexed == 3
