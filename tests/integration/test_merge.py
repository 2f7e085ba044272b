"""Merging indexes from several machines: provenance, deduplication, refusals, CLI.

Uses synthetic fingerprints stored through the Index API (no footage needed): the merge
copies fingerprints as they are, so their content does not matter, only that they
arrive intact.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import numpy as np
import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.index.merge import merge_indexes
from overlap_desktop.core.index.store import Index, open_index
from overlap_desktop.core.types import CancelToken, Span, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import Cancelled, ExitCode, IndexError_, UsageError


def fake_fp(seed: int, n: int = 40, fps: float = 4.0) -> StreamFingerprints:
    rng = np.random.default_rng(seed)
    usable = np.ones(n, dtype=bool)
    usable[5:8] = False
    return StreamFingerprints(
        times_ns=np.arange(n, dtype=np.int64) * int(1e9 / fps),
        quality=rng.integers(50, 101, n).astype(np.uint8),
        codes=rng.integers(0, 256, (n, 2, 32)).astype(np.uint8),
        variants=(Variant(), Variant(mirrored=True)),
        usable=usable, indeterminate=[Span(1.25, 2.0, "static")], fps=fps, duration_s=n / fps)


def add(idx: Index, path: str, seed: int, *, sha: str | None = None, size: int = 1000) -> None:
    with idx.writer():
        idx.record_file(Path(path), size=size, mtime_ns=1, sha256=sha or f"{seed:064x}", reader="fake",
                        streams=[(StreamInfo("v:0", 320, 240, codec="h264"), fake_fp(seed))],
                        settings='{"fps": 4}')


@pytest.fixture()
def machines(tmp_path: Path) -> tuple[Path, Path]:
    """Two machines' indexes: a has files 1, 2 and a failed file; b has 3 and a copy of 2."""
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    with open_index(a) as ia:
        add(ia, "/data/a/one.mp4", 1)
        add(ia, "/data/shared/two.mp4", 2)
        with ia.writer():
            ia.record_failure("/data/a/broken.mp4", size=5, mtime_ns=1, error="truncated: no moov atom")
    with open_index(b) as ib:
        add(ib, "/data/b/three.mp4", 3)
        add(ib, "/mnt/b/copy-of-two.mp4", 2)  # same sha256 + size as machine a's two.mp4
    return a, b


def test_merge_copies_fingerprints_with_provenance_and_dedupes(tmp_path: Path,
                                                              machines: tuple[Path, Path]) -> None:
    a, b = machines
    dest = tmp_path / "lab"
    seen: list[str] = []
    summary = merge_indexes([a, b], dest, progress=lambda p: seen.append(p.stage))
    assert summary.merged == 3
    assert summary.duplicates == [("/mnt/b/copy-of-two.mp4", "/data/shared/two.mp4")]
    assert [s["merged"] for s in summary.sources] == [2, 1]
    assert summary.skipped == [("/data/a/broken.mp4", "truncated: no moov atom")]
    assert seen and set(seen) == {"merge"}
    with open_index(a, readonly=True) as ia:
        a_identity = ia.identity
    with open_index(dest, readonly=True) as idx:
        files = {f.path: f for f in idx.files()}
        assert sorted(files) == ["/data/a/one.mp4", "/data/b/three.mp4", "/data/shared/two.mp4"]
        prov = json.loads(files["/data/a/one.mp4"].provenance or "")
        assert prov["source_index"] == a_identity and prov["original_path"] == "/data/a/one.mp4"
        assert prov["source_path"] == str(a)
        # Fingerprints arrive intact, all variants included.
        ((_, key, fp),) = list(idx.streams(paths=["/data/a/one.mp4"]))
        want = fake_fp(1)
        assert key == "v:0"
        np.testing.assert_array_equal(fp.codes, want.codes)
        np.testing.assert_array_equal(fp.times_ns, want.times_ns)
        np.testing.assert_array_equal(fp.usable, want.usable)
        assert fp.variants == want.variants and fp.indeterminate == want.indeterminate
        assert idx.file_state("/data/a/one.mp4")[3] == '{"fps": 4}'
        # Search shards were built: every variant of the usable samples on the seed grid
        # (one a second: 10 per 10-second stream) is searchable.
        assert idx.stats()["pending_codes"] == 0
        assert sum(len(s) for s in idx.shards()) == 3 * 10 * 2


def test_merging_again_changes_nothing(tmp_path: Path, machines: tuple[Path, Path]) -> None:
    a, b = machines
    dest = tmp_path / "lab"
    merge_indexes([a, b], dest)
    again = merge_indexes([a, b], dest)
    assert again.merged == 0 and len(again.duplicates) == 4
    with open_index(dest, readonly=True) as idx:
        assert len(idx.files()) == 3


def test_same_path_with_other_content_is_kept_apart(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with open_index(a) as ia:
        add(ia, "/data/x.mp4", 1)
    with open_index(b) as ib:
        add(ib, "/data/x.mp4", 2)  # same path on another machine, different footage
        b_id = ib.identity
    summary = merge_indexes([a, b], tmp_path / "lab")
    assert summary.merged == 2 and summary.renamed == [("/data/x.mp4", f"/data/x.mp4@{b_id[:8]}")]


def _set_meta(index_dir: Path, key: str, value: str) -> None:
    conn = apsw.Connection(str(index_dir / "index.sqlite3"))
    try:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    finally:
        conn.close()


def test_merge_refuses_other_prep_naming_both_values(tmp_path: Path, machines: tuple[Path, Path]) -> None:
    a, b = machines
    _set_meta(b, "prep_id", "prep-from-the-future-v9")
    dest = tmp_path / "lab"
    with pytest.raises(IndexError_) as info:
        merge_indexes([a, b], dest)
    msg = str(info.value)
    with open_index(dest, readonly=True) as idx:
        assert idx.prep_id in msg
        assert idx.files() == []  # checked before anything was written
    assert "prep-from-the-future-v9" in msg and str(b) in msg
    assert info.value.exit_code == ExitCode.INPUT_REFUSED


def test_merge_refuses_itself_and_non_indexes(tmp_path: Path, machines: tuple[Path, Path]) -> None:
    a, _ = machines
    with pytest.raises(UsageError, match="into itself"):
        merge_indexes([a], a)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexError_, match="no index here"):
        merge_indexes([tmp_path / "empty"], tmp_path / "lab")
    with pytest.raises(UsageError):
        merge_indexes([], tmp_path / "lab")


def test_cancel_keeps_finished_files(tmp_path: Path, machines: tuple[Path, Path]) -> None:
    a, b = machines
    token = CancelToken()
    calls = []

    def progress(p: object) -> None:
        calls.append(p)
        if len(calls) == 1:  # cancel while the first file is being copied
            token.cancel()

    with pytest.raises(Cancelled):
        merge_indexes([a, b], tmp_path / "lab", progress=progress, cancel=token)
    with open_index(tmp_path / "lab", readonly=True) as idx:
        assert [f.path for f in idx.files()] == ["/data/a/one.mp4"]


def test_cli_merge(tmp_path: Path, machines: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = machines
    dest = tmp_path / "lab"
    assert main(["merge", str(a), str(b), "--index", str(dest), "-q"]) == 0
    out = capsys.readouterr().out
    assert "Merged 3 files" in out and "1 identical already present" in out
    assert main(["merge", str(a), "--index", str(dest), "-q", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["merged"] == 0 and len(data["duplicates"]) == 2
    _set_meta(b, "algo_id", "other-hash-v2")
    assert main(["merge", str(b), "--index", str(tmp_path / "lab2"), "-q"]) == ExitCode.INPUT_REFUSED
    err = capsys.readouterr().err
    assert "other-hash-v2" in err and "Traceback" not in err
