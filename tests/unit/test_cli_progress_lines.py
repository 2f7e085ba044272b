"""Progress in logs and pipelines (stderr not a terminal): one readable line now and then."""

from __future__ import annotations

import io

from overlap_desktop.api import Progress
from overlap_desktop.cli.framework import CliContext


def _lines(*events: Progress) -> list[str]:
    err = io.StringIO()  # not a terminal
    ctx = CliContext(err=err)
    with ctx.progress("    ") as report:
        for p in events:
            report(p)
    return [line for line in err.getvalue().splitlines() if line.strip()]


def test_nothing_is_said_before_any_work_is_done() -> None:
    assert _lines(Progress(stage="export", done=0, total=None, unit="files")) == []


def test_bytes_read_as_megabytes_and_one_item_is_singular() -> None:
    assert _lines(Progress(stage="index", done=261_169, total=2_023_240, unit="bytes")) == ["    : 0.3/2.0 MB"]
    assert _lines(Progress(stage="export", done=1, total=None, unit="files")) == ["    : 1 file"]
    assert _lines(Progress(stage="scan", done=1200, total=7000, unit="files")) == ["    : 1,200/7,000 files"]
