"""A repeat row's "Counted" words agree with the file's Repeated column, and a file that repeats
itself says so (seen under Xvfb: "yes: repeats other offered footage" beside Repeated "–")."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.core.match.repeats import new_and_repeated_seconds
from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.gui.results import ResultsView
from tests.gui.test_issue16 import _segment

LEFT = Qt.MouseButton.LeftButton


def _report() -> Report:
    loop = FileResult("loop.mp4", 40.0, repeats=[_segment("loop.mp4", "loop.mp4", 20, 40, 0, 20)])
    owned = _segment("both.mp4", "/lab/owned.mp4", 0, 20, 0, 20)
    both = FileResult("both.mp4", 20.0, 20.0, segments=[owned],
                      repeats=[_segment("both.mp4", "take.mp4", 0, 20, 0, 20)])
    take = FileResult("take.mp4", 20.0, 20.0, segments=[_segment("take.mp4", "/lab/owned.mp4", 0, 20, 0, 20)])
    for f in (loop, both, take):
        f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    return Report("compare", 80.0, 40.0, 40.0, files=[loop, both, take], settings={"offer_repeats": {"checked": True}},
                  repeated_seconds=20.0, new_seconds=20.0)


def _click(qtbot: Any, view: ResultsView, name: str) -> int:
    ft = view.file_table
    row = next(r for r in range(ft.rowCount()) if ft.item(r, 0).text() == name)
    qtbot.mouseClick(ft.viewport(), LEFT, pos=ft.visualRect(ft.rows.index(row, 0)).center())
    qtbot.waitUntil(lambda: view.selected_file() is not None and view.selected_file().query_file == name,
                    timeout=5_000)
    return row


def test_a_file_that_repeats_itself_says_so_and_agrees_with_its_column(qtbot: Any) -> None:
    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1366, 768)
    view.show()
    view.set_report(_report())
    row = _click(qtbot, view, "loop.mp4")
    assert view.file_table.item(row, 3).text() == api.format_duration(20.0)
    assert view.file_table.item(row, 7).text().startswith("repeats itself")
    assert view.seg_table.item(0, 6).text() == "yes: repeats itself (20 s counted as repeated)"

    # The look-alike: a repeat over time already owned adds nothing to Repeated, and says "no".
    row = _click(qtbot, view, "both.mp4")
    assert view.file_table.item(row, 3).text() == "–"
    st = view.seg_table
    counted = next(st.item(r, 6).text() for r in range(st.rowCount()) if "repeats" in st.item(r, 6).text())
    assert counted.startswith("no: repeats other offered footage") and "already counted as owned" in counted
