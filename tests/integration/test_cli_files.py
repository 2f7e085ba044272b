"""``overlap files`` before anything was indexed: the same answer as the app's (``api.library_status``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main


@pytest.mark.parametrize("kind", ["missing", "empty folder", "folder of other things", "a file"])
def test_files_without_an_index_says_what_to_do(kind: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    where = tmp_path / "ix"
    if kind == "empty folder":
        where.mkdir()
    elif kind == "folder of other things":
        where.mkdir()
        (where / "notes.txt").write_text("not an index")
    elif kind == "a file":
        where.write_text("x")
    assert not api.library_status(where).has_index
    assert main(["files", "--index", str(where)]) == 0
    cap = capsys.readouterr()
    assert "No index at" in cap.err and "yet; run `overlap index PATH` first" in cap.err
    assert main(["files", "--index", str(where), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"index": str(where), "files": []}
    assert not where.is_dir() or not (where / "index.sqlite3").exists()  # looking never creates one
