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
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(InputError, match="cannot write: No space left on device"):
        atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"old" and sorted(x.name for x in tmp_path.iterdir()) == ["keep.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_mode(tmp_path: Path) -> None:
    atomic_write_bytes(tmp_path / "secret", b"x", mode=0o600)
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
