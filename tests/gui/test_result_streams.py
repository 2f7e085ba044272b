"""The results screen breaks the selected file down per camera and episode, and names a camera the
lab does not own of an episode it owns; a file of one stream shows no breakdown.

The report is the per-stream answer an ALOHA episode gets (cam_high owned, cam_low still,
cam_right_wrist not owned; tests/integration/test_episode_time.py makes it from real files).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from overlap_desktop.core.report.model import FileResult, Report, StreamResult


def _report() -> Report:
    cams = [StreamResult("observations/images/cam_high", 15.0, owned_seconds=15.0, episode=1, camera="cam_high"),
            StreamResult("observations/images/cam_low", 15.0, indeterminate_seconds=15.0, episode=1,
                         camera="cam_low"),
            StreamResult("observations/images/cam_right_wrist", 15.0, new_seconds=15.0, episode=1,
                         camera="cam_right_wrist")]
    aloha = FileResult("aloha/episode_1.hdf5", 15.0, matched_seconds=15.0, real_footage_seconds=15.0, streams=cams)
    clip = FileResult("clip.mp4", 10.0, new_seconds=10.0, streams=[StreamResult("v:0", 10.0, new_seconds=10.0)])
    return Report(kind="compare", offered_seconds=25.0, matched_seconds=15.0, real_footage_seconds=15.0,
                  new_seconds=10.0, files=[aloha, clip])


def _click_row(qtbot: Any, table: Any, row: int) -> None:
    rect = table.visualRect(table.model().index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_the_selected_file_is_broken_down_per_camera(qtbot: Any) -> None:
    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1366, 900)
    view.show()
    view.set_report(_report())
    names = [view.file_table.item(r, 0).text() for r in range(view.file_table.rowCount())]
    _click_row(qtbot, view.file_table, names.index("clip.mp4"))
    qtbot.waitUntil(lambda: view.selected_file() is not None and view.selected_file().query_file == "clip.mp4")
    assert not view.streams_view.isVisible()  # one stream: nothing more to say

    _click_row(qtbot, view.file_table, names.index("aloha/episode_1.hdf5"))
    qtbot.waitUntil(lambda: view.streams_view.isVisible())
    table = view.streams_view.table
    rows = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert rows == [["episode 1, cam_high", "15 s", "15 s", "–", "–", "–"],
                    ["episode 1, cam_low", "15 s", "–", "–", "–", "15 s"],
                    ["episode 1, cam_right_wrist", "15 s", "–", "15 s", "–", "–"]]
    assert view.streams_view.note.isVisible()
    assert view.streams_view.note.text() == "New camera view of owned episodes: cam_right_wrist, 15 s"
