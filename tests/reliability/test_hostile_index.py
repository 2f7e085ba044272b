"""A damaged, locked, read-only or full index (issue 21, items 7 and 10; issue 17, item 6).

- Flipped bits in the database (a text value that is no longer UTF-8, a b-tree page,
  the header) once gave "internal error (this is a bug)" from files/compare/index/export;
  now every command says the database is damaged and what to do.
- A lock timeout says another copy of overlap is using the index, never "not an overlap
  index database: database is locked".
- A read-only index folder without SQLite's ``-shm`` file is read (immutable open), not
  called "not an overlap index database".
- A damaged search shard names itself and the repair, ``overlap index --rebuild-shards``,
  which rebuilds it from the database.
- A disk that fills during ``merge`` is a one-line error keeping what was merged.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overlap_desktop.core.index import store as index_mod
from overlap_desktop.core.index.db import DB_NAME
from overlap_desktop.core.index.store import open_index
from overlap_desktop.errors import IndexBusyError
from tests.reliability.lab21 import Lab, copy_lab, run_cli

COMMANDS = [["files"], ["compare", "OFFER"], ["export", "-o", "OUT", "--force"], ["index", "CLIP"]]


def _run_all(lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, int, str]]:
    out = []
    for cmd in COMMANDS:
        argv = [{"OFFER": lab.manifest, "OUT": tmp_path / "out.ovlm", "CLIP": lab.clip}.get(a, a) for a in cmd]
        code, _, err = run_cli([*argv, "-q", "--index", lab.index], capsys)
        out.append((cmd[0], code, err))
    return out


def _flip_text(db: Path, needle: bytes) -> None:
    """Make every stored copy of ``needle`` invalid UTF-8 (the row and its index entry)."""
    data = bytearray(db.read_bytes())
    at, hits = data.find(needle), 0
    while at >= 0:
        data[at + len(needle) - 3] = 0xFF
        hits += 1
        at = data.find(needle, at + 1)
    assert hits, "the stored path was not found in the database file"
    db.write_bytes(bytes(data))


# A flipped bit in the schema's own text can make SQLite's error message invalid UTF-8: APSW then
# reports the decoding failure as "unraisable" and still raises its error, which the product turns
# into a clear message (asserted below). The warning is APSW's, not ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("damage", ["text", "page", "header", "random"])
def test_flipped_bits_give_a_clear_error(lab21: Lab, tmp_path: Path, damage: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    db = lab.index / DB_NAME
    if damage == "text":
        _flip_text(db, str(lab.clip).encode())
    elif damage == "page":
        data = bytearray(db.read_bytes())
        data[4096:4096 + 8] = b"\xa5" * 8  # page 2's b-tree header
        db.write_bytes(bytes(data))
    elif damage == "header":
        data = bytearray(db.read_bytes())
        data[0:16] = b"SQLite format 4\x00"
        db.write_bytes(bytes(data))
    seeds = range(6) if damage == "random" else [None]
    pristine = db.read_bytes()
    for seed in seeds:
        if seed is not None:
            rng = random.Random(seed)
            data = bytearray(pristine)
            for _ in range(4):
                data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
            db.write_bytes(bytes(data))
        outcomes = _run_all(lab, tmp_path, capsys)
        for name, code, err in outcomes:
            assert code != 1 and "internal error" not in err, (damage, seed, name, err)
        if damage != "random":
            # Every command that reads the damaged part says so (a listing may not read it).
            refused = [(name, err) for name, code, err in outcomes if code != 0]
            assert len(refused) == len(COMMANDS), outcomes
            for name, err in refused:
                assert "damaged" in err and "backup" in err, (damage, name, err)
    print(f"\nflipped bits ({damage}): {[(n, c) for n, c, _ in outcomes]}; {outcomes[-1][2].strip()[:300]}")


def test_a_lock_timeout_says_another_copy_is_using_the_index(lab21: Lab, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import apsw

    lab = copy_lab(lab21, tmp_path)
    monkeypatch.setattr(index_mod, "BUSY_TIMEOUT_MS", 50)
    holder = apsw.Connection(str(lab.index / DB_NAME))
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE meta SET value = value WHERE key = 'created'")
    try:
        for readonly in (True, False):
            with pytest.raises(IndexBusyError, match="another copy of overlap is using this index") as info:
                with open_index(lab.index, readonly=readonly) as idx:
                    idx.files()
            assert "not an overlap index" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_index(lab.index, readonly=True) as idx:
        assert [f.status for f in idx.files()] == ["ok"]
    print(f"\nlock timeout: {info.value}")


@pytest.fixture
def read_only_copy(lab21: Lab, tmp_path: Path) -> Iterator[Lab]:
    """The index on a read-only bind mount, without -shm/-wal (as copied to a backup disk)."""
    src = tmp_path / "src"
    lab = copy_lab(lab21, src)
    for extra in lab.index.glob(f"{DB_NAME}-*"):
        extra.unlink()
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if sys.platform != "linux" or shutil.which("mount") is None:
        pytest.skip("needs Linux mount to make a read-only folder (root ignores file permissions)")
    proc = subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root / CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], check=True, capture_output=True)
        yield Lab(clip=lab.clip, index=mnt / "index", manifest=mnt / "offer.ovlm")
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_read_only_index_without_shm_is_readable(read_only_copy: Lab, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lab = read_only_copy
    code, out, err = run_cli(["files", "--index", lab.index], capsys)
    assert code == 0 and "1 ok" in out, err
    code, out, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest], capsys)
    assert code == 0 and "100%" in out, err
    code, out, err = run_cli(["export", "-q", "--index", lab.index, "-o", tmp_path / "again.ovlm"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["index", "-q", "--index", lab.index, lab.clip], capsys)
    assert code == 4 and "read-only" in err and "not an overlap index" not in err, err
    assert not (lab.index / f"{DB_NAME}-shm").exists()
    print(f"\nread-only index: files/compare/export work; index says: {err.strip()}")


def _damage_shards(index: Path, how: str) -> None:
    shard = next((index / "shards").glob("shard-*"))
    for f in sorted(shard.glob("*.npy")):
        data = bytearray(f.read_bytes())
        if how == "header":
            data[10] ^= 0xFF
        elif how == "body":
            for k in range(200, len(data), 37):
                data[k] ^= 0x5A
        else:
            data = data[: len(data) // 2]
        f.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["header", "body", "truncated"])
def test_damaged_shard_names_the_repair_which_works(lab21: Lab, tmp_path: Path, how: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    _damage_shards(lab.index, how)
    code, out, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest], capsys)
    assert code == 4 and "is damaged" in err and "overlap index --rebuild-shards" in err, (code, out, err)
    code, out, err = run_cli(["index", "-q", "--index", lab.index, "--rebuild-shards"], capsys)
    assert code == 0 and "Rebuilt the search shards" in out, err
    code, out, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest], capsys)
    assert code == 0 and "100%" in out, (out, err)
    code, _, err = run_cli(["index", "-q", "--index", lab.index, "--rebuild-shards", lab.clip], capsys)
    assert code == 2 and "no PATH" in err


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    if sys.platform != "linux" or shutil.which("mount") is None:
        pytest.skip("needs Linux mount (tmpfs) to make a small disk")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root / CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_during_merge_is_a_clear_error(lab21: Lab, small_disk: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Another machine's index: the same footage under another name, so it is merged.
    other = tmp_path / "other"
    shutil.copytree(lab21.index, other)
    import apsw

    conn = apsw.Connection(str(other / DB_NAME))
    conn.execute("UPDATE meta SET value = 'other-machine-identity' WHERE key = 'identity'")
    conn.execute("UPDATE files SET path = path || '.other', sha256 = 'ab' || substr(sha256, 3)")
    conn.close()
    dest = small_disk / "dest"
    code, out, err = run_cli(["merge", other, "--index", dest, "-q"], capsys)
    assert code == 2 and "disk full" in err and "internal error" not in err, (code, out, err)
    assert len(err.strip().splitlines()) == 1, err
    print(f"\nmerge on a full disk: {err.strip()}")
