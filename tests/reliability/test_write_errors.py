"""Issue 36, kind 1: a write that fails for a reason other than a full disk.

A file-size limit (``ulimit -f``: EFBIG), a quota or a failing disk surfaces from SQLite
as ``apsw.IOError`` ("disk I/O error") and from Python as ``OSError``; before this round
``overlap index`` reported either as an internal error (exit 1). Every command that
writes must instead name the file and the cause and exit 2, keep finished work, and
leave no hidden temporary file. The limit is real (``RLIMIT_FSIZE`` in a subprocess,
SIGXFSZ ignored) where the command writes outside the index; the export path, whose
index must be readable first, gets the errno injected.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.reliability.capped import overlap
from tests.reliability.lab21 import Lab, copy_lab, lab21, run_cli

__all__ = ["lab21"]

_FILE_TOO_LARGE = r"file too large: a file-size limit applies to this process \(ulimit -f\)"


def _integrity(index: Path) -> str:
    import apsw

    conn = apsw.Connection(str(index / "index.sqlite3"))
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_index_under_a_file_size_limit_is_a_plain_error_and_resumes(small_corpus: Path, tmp_path: Path) -> None:
    """``overlap index`` whose database outgrows ``ulimit -f``: exit 2 naming the database and
    the limit (was: internal error, exit 1); the index stays consistent and a rerun without
    the limit finishes the job."""
    idx = tmp_path / "idx"
    ran = overlap("index", small_corpus, "--index", idx, "-q", cwd=tmp_path, fsize=90_000)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(rf"index\.sqlite3: cannot write the index \({_FILE_TOO_LARGE}", ran.err), ran.err
    assert re.search(r"\d+ file\(s\) finished in this run were kept; fix the cause", ran.err), ran.err
    assert _integrity(idx) == "ok"
    again = overlap("index", small_corpus, "--index", idx, "-q", cwd=tmp_path)
    assert again.code == 0, again.text
    assert "Indexed" in again.out


def test_opening_an_index_under_a_tiny_limit_names_the_limit(small_corpus: Path, tmp_path: Path) -> None:
    """Creating the index itself (its first pages, SQLite's -shm file) past the limit."""
    ran = overlap("index", small_corpus / "clip_0.mp4", "--index", tmp_path / "idx", "-q", cwd=tmp_path,
                  fsize=20_000)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(_FILE_TOO_LARGE, ran.err), ran.err


def test_merge_under_a_file_size_limit_is_a_plain_error(small_corpus: Path, tmp_path: Path) -> None:
    """``merge`` of five clips into an existing destination (61 KB empty) under a 64 KB limit:
    the limit is met while merging; exit 2 naming the destination, the cause and what was kept."""
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.index.store import open_index

    cfg = load_config({"index.path": str(tmp_path / "src")}, cwd=tmp_path, environ={},
                      user_file=tmp_path / "none.toml")
    assert index_paths([small_corpus], config=cfg).indexed == 5
    open_index(tmp_path / "dest").close()
    ran = overlap("merge", tmp_path / "src", "--index", tmp_path / "dest", "-q", cwd=tmp_path, fsize=64_000)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(rf"dest: cannot write while merging into this index \({_FILE_TOO_LARGE}.*the \d+ file\(s\) "
                     r"merged before were kept; fix the cause and run the same merge again", ran.err), ran.err
    assert _integrity(tmp_path / "dest") == "ok"


@pytest.mark.parametrize(("fsize", "names"), [(4_000, r"overlap-corpus-\w+: cannot write the temporary search "
                                                     r"table of this comparison \(in the system's temporary folder"),
                                             (12_000, r"r\.html: cannot write")])
def test_reports_under_a_file_size_limit_name_the_file_and_leave_nothing(lab21: Lab, tmp_path: Path, fsize: int,
                                                                          names: str) -> None:
    """``compare-offers --html`` (no index involved) past the limit, met by the temporary
    search table (4 KB) or by the report (12 KB): exit 2 naming the file and the cause
    (was: internal error); no ``.NAME.<hex>.tmp`` left beside the report."""
    out = tmp_path / "out"
    out.mkdir()
    ran = overlap("compare-offers", lab21.manifest, lab21.manifest, "--html", out / "r.html", "-q",
                  cwd=tmp_path, fsize=fsize)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(rf"{names}[^\n]*: {_FILE_TOO_LARGE}", ran.err), ran.err
    assert _leftovers(out) == [] and not (out / "r.html").exists()


def _text_job(root: Path) -> tuple[Path, Path]:
    import json

    root.mkdir()
    line = "the quick brown fox number {} jumps over the lazy dog again and again today"
    test = root / "test.jsonl"
    test.write_text("".join(json.dumps({"text": line.format(i)}) + "\n" for i in range(50)))
    train = root / "train"
    train.mkdir()
    (train / "a.txt").write_text("".join(line.format(i) + "\n" for i in range(0, 50, 3)))
    return test, train


@pytest.mark.parametrize("fsize", [100, 600, 6_000])
def test_text_overlap_output_under_a_file_size_limit(tmp_path: Path, fsize: int) -> None:
    """``text-overlap -o`` where the limit stops the checkpoint's first copy (100 B), its
    records (600 B) or the result (6 KB): exit 2 naming the file and the limit; the hidden
    ``.NAME.checkpoint.tmp`` is never left behind (was: left by the first case), and a
    checkpoint that is kept is named in the message as what a rerun resumes from."""
    test, train = _text_job(tmp_path / "job")
    ran = overlap("text-overlap", "--test", test, "--train", train, "-o", tmp_path / "job" / "out.json", "-q",
                  cwd=tmp_path, fsize=fsize)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(_FILE_TOO_LARGE, ran.err), ran.err
    left = sorted(p.name for p in (tmp_path / "job").iterdir() if p.name.startswith("."))
    assert not [n for n in left if n.endswith(".tmp")], left
    if ".out.json.checkpoint" in left:
        assert ".out.json.checkpoint: cannot write the checkpoint (this hidden file keeps the finished part" \
            in ran.err, ran.err
    else:
        assert re.search(r"(\.out\.json\.checkpoint: cannot write the checkpoint \(a hidden file that lets an "
                         r"interrupted scan resume; nothing was left behind\)|out\.json: cannot write the result): ",
                         ran.err), ran.err


def test_export_with_a_write_error_injected(lab21: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``export`` whose manifest write fails with EFBIG, EDQUOT or EIO (injected at the
    fsync; the index must stay readable): exit 2 naming the manifest and the cause in plain
    words, the previous manifest intact, no temporary file left."""
    lab = copy_lab(lab21, tmp_path / "lab")
    out = tmp_path / "offer.ovlm"
    shutil.copy2(lab.manifest, out)
    before = out.read_bytes()
    for code, words in ((errno.EFBIG, "file too large"), (errno.EDQUOT, "disk quota exceeded"),
                        (errno.EIO, "input/output error")):
        def fail(fd: int, _code: int = code) -> None:
            raise OSError(_code, os.strerror(_code))

        with monkeypatch.context() as m:
            m.setattr(os, "fsync", fail)
            status, _, err = run_cli(["export", "--index", lab.index, "-o", out, "-q"], capsys)
        assert status == 2, err
        assert "internal error" not in err and "Traceback" not in err
        assert f"offer.ovlm: cannot write manifest: {words}" in err, err
        assert out.read_bytes() == before
        assert _leftovers(tmp_path) == []
