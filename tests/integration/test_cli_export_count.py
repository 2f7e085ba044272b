"""``overlap export`` in a log (stderr not a terminal) ends with the count of files exported.

Seen: an 80-file export printed only "Exporting: 1 file" (the first item's count; the last was
within the 5 s between lines and never printed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from tests.footage import make_clip


def test_export_says_how_many_files_it_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    footage = tmp_path / "offer"
    for i in range(6):
        make_clip(footage / f"piece-{i:02d}.mp4", 60 + i, duration=1.5, fps=12.0, size=(96, 72))
    index = tmp_path / "index"
    assert main(["index", str(footage), "--index", str(index), "-q"]) == 0
    capsys.readouterr()
    out = tmp_path / "offer.ovlm"
    assert main(["export", "-o", str(out), "--index", str(index)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("Exporting:")]
    assert lines and lines[-1] == "Exporting: 6/6 files", err
    assert api.inspect_manifest(out, record_vendor=False)["files"] == 6
