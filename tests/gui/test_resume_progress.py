"""My library: a file resumed inside shows its progress from where it stopped (issue 34, item 6)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.gui.library import LibraryPage
from tests.resume_clips import DURATION_S, chunks_saved, write_long_clip


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_long_clip(tmp_path_factory.mktemp("gui-resume") / "long.mp4")


def _index_and_wait(qtbot: Any, page: LibraryPage, start: Any) -> Any:
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000) as got:
        start()
    qtbot.waitUntil(lambda: not page.indexing and not page.load_job.running, timeout=120_000)
    return got.args[0]


def test_a_resumed_file_starts_its_progress_bar_where_it_stopped(qtbot: Any, state: Any, long_clip: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "footage"
    folder.mkdir()
    shutil.copy2(long_clip, folder / "long.mp4")
    page = LibraryPage(state)
    qtbot.addWidget(page)
    page.show()
    qtbot.waitUntil(lambda: page.load_job is not None and not page.load_job.running, timeout=120_000)
    real = api.index_paths
    stopping = {"on": True}

    def index_paths(paths: Any, *, progress: Any = None, cancel: Any = None, **kw: Any) -> Any:
        def spy(p: Any) -> None:
            # The user presses Cancel once two checkpoints (60 s of the 90 s) are saved.
            if stopping["on"] and p.current and chunks_saved(Path(state.index_path)) >= 2:
                page.index_job.cancel()
            progress(p)

        return real(paths, progress=spy, cancel=cancel, **kw)

    monkeypatch.setattr(api, "index_paths", index_paths)
    assert _index_and_wait(qtbot, page, lambda: page.add_folders([str(folder)])) is None  # cancelled
    assert page.resume_frame.isVisible()

    stopping["on"] = False
    page.file_bar.setValue(0)
    shown: list[tuple[int, str]] = []
    # The label is set before the bar in each update: record both as the bar moves. (The "resuming at"
    # note itself may be merged away by the worker's ~10 updates a second; the CLI prints it.)
    page.file_bar.valueChanged.connect(lambda v: shown.append((v, page.file_label.text())))
    summary = _index_and_wait(qtbot, page, page.resume)
    assert summary is not None and summary.indexed == 1
    assert shown, "the file's progress bar never moved"
    # Read from 0% the bar's first update would be a few percent (updates come ~10 times a second).
    first, label = shown[0]
    assert first >= int(60 / DURATION_S * 100) and "long.mp4" in label
    assert min(v for v, _ in shown) >= first  # never back to the start
