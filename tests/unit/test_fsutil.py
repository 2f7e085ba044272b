"""atomic_write_bytes: old or new file, never a partial one; the caller's error type."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.errors import InputError, ManifestError


def test_replaces_atomically_and_leaves_no_temp_file(tmp_path: Path) -> None:
    p = tmp_path / "out.bin"
    p.write_bytes(b"old")
    assert atomic_write_bytes(p, b"new") == p
    assert p.read_bytes() == b"new" and sorted(x.name for x in tmp_path.iterdir()) == ["out.bin"]
    deep = tmp_path / "a" / "b" / "r.json"
    atomic_write_bytes(deep, b"{}", make_parents=True)
    assert deep.read_bytes() == b"{}"


def test_errors_keep_the_callers_type_and_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ManifestError, match="cannot write manifest: ") as info:
        atomic_write_bytes(tmp_path / "missing" / "x.ovlm", b"x", error_type=ManifestError,
                           open_message="cannot write manifest", write_message="cannot write manifest")
    assert info.value.path is not None
    p = tmp_path / "keep.json"
    p.write_bytes(b"old")

    def boom(src: object, dst: object) -> None:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(InputError, match="cannot write: Permission denied"):
        atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"old" and sorted(x.name for x in tmp_path.iterdir()) == ["keep.json"]


def test_write_failures_outside_overlap_are_write_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk, a file-size limit, a quota, a failing disk: exit 2 with the cause in plain
    words, whatever the caller's error type (issue 36); the old file is kept, no temporary left."""
    import errno

    from overlap_desktop.errors import DiskFullError, ExitCode, WriteError

    p = tmp_path / "keep.json"
    p.write_bytes(b"old")
    for code, cls, words in ((errno.ENOSPC, DiskFullError, "no space left on the disk"),
                             (errno.EFBIG, WriteError, "file too large: a file-size limit"),
                             (errno.EIO, WriteError, "input/output error")):
        def boom(src: object, dst: object, _code: int = code) -> None:
            raise OSError(_code, os.strerror(_code))

        monkeypatch.setattr(os, "replace", boom)
        with pytest.raises(cls, match=f"cannot write manifest: {words}") as info:
            atomic_write_bytes(p, b"new", error_type=ManifestError, write_message="cannot write manifest")
        assert info.value.exit_code == ExitCode.USAGE
        assert p.read_bytes() == b"old" and sorted(x.name for x in tmp_path.iterdir()) == ["keep.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_mode(tmp_path: Path) -> None:
    atomic_write_bytes(tmp_path / "secret", b"x", mode=0o600)
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600


def test_stale_temp_files_of_killed_writers_are_removed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import time

    from overlap_desktop.core import fsutil

    dest = tmp_path / "offer.ovlm"
    old = tmp_path / ".offer.ovlm.0123456789ab.tmp"
    young = tmp_path / ".offer.ovlm.ba9876543210.tmp"
    other = tmp_path / ".report.json.0123456789ab.tmp"
    for p in (old, young, other):
        p.write_bytes(b"partial")
    past = time.time() - fsutil.STALE_TEMP_SECONDS - 60
    os.utime(old, (past, past))
    os.utime(other, (past, past))
    fsutil.atomic_write_bytes(dest, b"complete")
    assert dest.read_bytes() == b"complete"
    assert not old.exists()  # a killed writer's leftover for this destination
    assert young.exists()  # may belong to a writer still running
    assert other.exists()  # another destination's file is not ours to remove
