"""``overlap text-overlap`` in-process."""

from __future__ import annotations

import json
from pathlib import Path

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
