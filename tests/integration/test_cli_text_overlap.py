"""``overlap text-overlap`` in-process."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from overlap_desktop.cli.main import main


def test_cli_reports_and_gates(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    train = tmp_path / "train.txt"
    train.write_text("the robot picks up the red block and places it in the blue bin\n", encoding="utf-8")
    test = tmp_path / "test.txt"
    test.write_text("robot picks up the red block and places it in the bin\nsomething else entirely here ok\n",
                    encoding="utf-8")
    out = tmp_path / "r.json"
    rc = main(["text-overlap", "--test", str(test), "--train", str(train), "-o", str(out), "--workers", "1",
               "--min-n", "4", "-q"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "1 of 2 test examples" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["schema"] == "overlap.text-overlap/1" and data["matched_examples"] == [0]
    rc = main(["text-overlap", "--test", str(test), "--train", str(train), "--fail-on-match", "--workers", "1",
               "--min-n", "4", "-q"])
    assert rc == 3


def test_cli_bad_file_exit_4(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"\x00" * 64)
    rc = main(["text-overlap", "--test", str(bad), "--train", str(bad), "-q"])
    assert rc == 4
    assert "bin.txt" in capsys.readouterr().err


def test_cli_output_into_missing_folder_fails_before_the_scan(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    test = tmp_path / "test.txt"
    test.write_text("one two three four five six seven eight nine\n", encoding="utf-8")
    bad_train = tmp_path / "train.txt"
    bad_train.write_bytes(b"\x00" * 64)  # the scan would fail on this: the output check must come first
    out = tmp_path / "missing" / "r.json"
    rc = main(["text-overlap", "--test", str(test), "--train", str(bad_train), "-o", str(out), "--workers", "1",
               "-q"])
    err = capsys.readouterr().err
    assert rc == 4
    assert "does not exist" in err and "missing" in err and "internal error" not in err
    assert not out.parent.exists()


@pytest.mark.parametrize("bad", ["500", "nan", "-3"])
def test_cli_percentile_out_of_range(tmp_path: Path, capsys, bad: str) -> None:  # type: ignore[no-untyped-def]
    test = tmp_path / "test.txt"
    test.write_text("one two three\n", encoding="utf-8")
    rc = main(["text-overlap", "--test", str(test), "--train", str(test), "--percentile", bad, "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--percentile must be a number from 0 to 100" in err and "internal error" not in err


def test_cli_folder_summary_and_atomic_output(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("nothing to see here at all today\n", encoding="utf-8")
    (corpus / "b.txt.gz").write_bytes(gzip.compress(
        b"filler\nthe robot picks up the red block and places it in the blue bin\n"))
    (corpus / "image.jpg").write_bytes(b"\xff\xd8\xff" + bytes(100))
    test = tmp_path / "test.txt"
    test.write_text("robot picks up the red block and places it in the bin\n", encoding="utf-8")
    out = tmp_path / "r.json"
    out.write_text("old", encoding="utf-8")
    rc = main(["text-overlap", "--test", str(test), "--train", str(corpus), "-o", str(out), "--workers", "1",
               "--n", "6"])
    captured = capsys.readouterr()
    assert rc == 0
    assert "Matches are in 1 of 2 training files:" in captured.out
    assert "b.txt.gz: 1 examples" in captured.out and "line 2" in captured.out
    assert "1 files in the training folders were skipped" in captured.out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [s["source"] for s in data["sources"]] == [str(corpus / "b.txt.gz")]
    assert not list(tmp_path.glob(".r.json*"))  # no temporary file or checkpoint left behind
