"""Issue 36, kind 2: a file swapped for another of the same size and modification time.

``cp other t; truncate -s SIZE t; touch -r victim t; mv t victim`` keeps everything the
resume check compared (path, size, mtime). During indexing, the file was recorded as ok with
the digest of bytes no longer there; between runs, the next run called it unchanged, so an
export quoted a digest of the old bytes. The identity of what was read (inode and change
time) is now compared before recording and stored (schema 3) for the next run, where a
changed identity is confirmed by the bytes' SHA-256 before anything is redone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.capped import overlap


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _swap(victim: Path, other: Path) -> None:
    """Replace ``victim`` by ``other``'s bytes padded or cut to its size, with its mtime."""
    tmp = victim.with_name(".swap.tmp")
    shutil.copyfile(other, tmp)
    os.truncate(tmp, victim.stat().st_size)
    st = victim.stat()
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, victim)
    now = victim.stat()
    assert (now.st_size, now.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def _folder(small_corpus: Path, dest: Path) -> tuple[Path, Path, Path]:
    """A copy of two clips: (folder, victim = the larger, other = the smaller)."""
    dest.mkdir()
    clips = sorted(small_corpus.glob("clip_*.mp4"), key=lambda p: p.stat().st_size)
    other, victim = shutil.copy2(clips[0], dest / "other.mp4"), shutil.copy2(clips[-1], dest / "victim.mp4")
    return dest, Path(victim), Path(other)


def _row(index: Path, path: Path) -> tuple[str, str | None]:
    from overlap_desktop.core.index.store import open_index

    with open_index(index, readonly=True) as idx:
        f = next(f for f in idx.files() if Path(f.path) == path)
        return f.status, f.sha256


@pytest.mark.parametrize("remote", [False, True], ids=["checked-by-the-worker", "checked-by-the-writer"])
def test_a_file_swapped_while_indexed_is_refused_then_redone(small_corpus: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch, remote: bool) -> None:
    """Swapped mid-decode (the decoder and the hasher hold the old file open): refused, never
    recorded as ok with the digest of bytes no longer there (was: ok, old digest); the next
    run fingerprints the new bytes. With jobs marked remote (as on a cluster, whose workers
    do not compare inodes) the writer's own check before recording refuses it."""
    import functools

    import overlap_desktop.core.index.fingerprinting as fingerprinting_mod
    import overlap_desktop.core.index.indexer as indexer_mod
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import index_paths

    folder, victim, other = _folder(small_corpus, tmp_path / "f")
    cfg = load_config({"index.path": str(tmp_path / "idx")}, cwd=tmp_path, environ={},
                      user_file=tmp_path / "none.toml")
    old_sha = _sha(victim)
    swapped: list[str] = []

    real = fingerprinting_mod.fingerprint_item

    def fingerprint(path: Path, reader: object, *, on_fraction: Callable[[float], None] | None,
                    **kw: Any) -> Any:
        def fraction(f: float) -> None:
            # Mid-decode of the victim (every frame reports; the progress callback is throttled).
            if path == victim and 0 < f < 1 and not swapped:
                _swap(victim, other)
                swapped.append(str(path))
            if on_fraction is not None:
                on_fraction(f)

        return real(path, reader, on_fraction=fraction, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fingerprinting_mod, "fingerprint_item", fingerprint)
    if remote:
        monkeypatch.setattr(indexer_mod, "FileJob", functools.partial(fingerprinting_mod.FileJob, remote=True))
    summary = index_paths([folder], config=cfg)
    assert swapped
    assert [(Path(p).name, why) for p, why in summary.failed] == [
        ("victim.mp4", "replaced while being indexed (same size and modification time, but another file: its "
                       "inode or change time differ); run the index again once it is complete")]
    status, sha = _row(tmp_path / "idx", victim)
    assert status == "error" and sha != old_sha  # never "ok" with the digest of bytes no longer there
    monkeypatch.undo()
    again = index_paths([folder], config=cfg)
    assert again.indexed == 1 and again.skipped == 1, again.failed
    assert _row(tmp_path / "idx", victim) == ("ok", _sha(victim))


def test_a_file_swapped_between_runs_is_fingerprinted_again(small_corpus: Path, tmp_path: Path) -> None:
    """Through ``overlap index`` (2 GiB cap): a swap keeping size and mtime is redone on the
    next run (was: "unchanged", the old digest kept); the look-alikes (the same bytes with a
    new change time, or copied back under a new inode) are recognised as unchanged and
    nothing is fingerprinted again."""
    folder, victim, other = _folder(small_corpus, tmp_path / "f")
    idx = tmp_path / "idx"
    first = overlap("index", folder, "--index", idx, "-q", cwd=tmp_path)
    assert first.code == 0, first.text
    same_bytes = tmp_path / "copy.mp4"
    shutil.copy2(victim, same_bytes)

    os.chmod(victim, 0o640)  # a new change time, same inode and bytes
    shutil.copy2(same_bytes, victim.with_name(".restored"))  # new inode, same bytes and mtime
    os.replace(victim.with_name(".restored"), victim)
    ran = overlap("index", folder, "--index", idx, "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 0 and "Indexed 0 file(s), 2 unchanged" in ran.out, ran.text

    _swap(victim, other)
    ran = overlap("index", folder, "--index", idx, "-q", cwd=tmp_path)
    ran.assert_plain()
    assert "Indexed 1 file(s), 1 unchanged" in ran.out, ran.text
    assert _row(idx, victim) == ("ok", _sha(victim))
    assert _sha(victim) != _sha(same_bytes)


def test_rows_from_schema_2_are_trusted_once_then_carry_the_identity(small_corpus: Path, tmp_path: Path) -> None:
    """An index written before schema 3 has no identity: upgraded, its files stay unchanged
    (nothing is hashed or fingerprinted again) and their identity is recorded from then on."""
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.index.schema import SCHEMA_VERSION
    from overlap_desktop.core.index.store import open_index

    folder, victim, _ = _folder(small_corpus, tmp_path / "f")
    cfg = load_config({"index.path": str(tmp_path / "idx")}, cwd=tmp_path, environ={},
                      user_file=tmp_path / "none.toml")
    assert index_paths([folder], config=cfg).indexed == 2
    import apsw

    # The index as schema 2 wrote it: no stat_key column, version 2 in meta.
    conn = apsw.Connection(str(tmp_path / "idx" / "index.sqlite3"))
    conn.execute("ALTER TABLE files DROP COLUMN stat_key; DROP TABLE checkpoints; DROP TABLE checkpoint_chunks; "
                 "UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    with open_index(tmp_path / "idx", readonly=True) as idx:
        assert idx.schema_version == 2 and len(idx.files()) == 2  # read as it is
    again = index_paths([folder], config=cfg)
    assert (again.indexed, again.skipped) == (0, 2)
    with open_index(tmp_path / "idx", readonly=True) as idx:
        assert idx.schema_version == SCHEMA_VERSION
        assert all(idx.file_identity(p)[0] for p in (victim, folder / "other.mp4"))
