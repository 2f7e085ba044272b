"""First indexing: finished files appear in My library while the others are still being read.

Seen under Xvfb: the table said "files appear here as they are finished" and stayed empty, and the
status bar said "0 files", while 4 files were done. The list was re-read only on the progress
report that says a file finished, and the job's throttle (10 reports a second) often drops it.
A handshake, not a clock: the second file's reading waits (reporting its progress, as a long
file does) until the first file is listed as ready, or gives up after a guard time.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer

from overlap_desktop import api
from overlap_desktop.gui import library as library_module
from overlap_desktop.gui.library import LibraryPage
from tests.footage import make_clip


def test_finished_files_appear_while_the_next_is_read(qtbot: Any, state: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "first footage"
    for i in range(3):
        make_clip(folder / f"take-{i}.mp4", 40 + i, duration=4.0, fps=12.0, size=(160, 120))
    monkeypatch.setattr(library_module, "LIVE_REFRESH_S", 0.0)  # the throttle of re-reading, not the fix
    page = LibraryPage(state)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    qtbot.waitUntil(lambda: page.load_job is not None and not page.load_job.running, timeout=60_000)
    listed = threading.Event()
    handshake: list[bool] = []
    real = api.index_paths

    def index_paths(paths: Any, *, progress: Any = None, **kw: Any) -> Any:
        started: list[str] = []

        def spy(p: Any) -> None:
            if p.current and p.current not in started:
                started.append(p.current)
                if len(started) == 2:
                    # The first file is finished: report the second file's progress (as a long file
                    # does) until the first one is listed; 1,200 reports (60 s) guard the suite.
                    for _ in range(1200):
                        if listed.wait(0.05):
                            break
                        progress(p)
                    handshake.append(listed.is_set())
            progress(p)

        return real(paths, progress=spy, **kw)

    monkeypatch.setattr(api, "index_paths", index_paths)

    def check() -> None:
        if any(f.status == "ok" for f in page.files) and page.table.rowCount() >= 1 and page.indexing:
            listed.set()

    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(check)
    timer.start()
    try:
        with qtbot.waitSignal(page.indexing_finished, timeout=120_000):
            page.add_folders([str(folder)])
    finally:
        timer.stop()
    assert handshake == [True]
