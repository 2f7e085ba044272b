"""Issue 38 item 6: a result of 10,000 offered files shows every row, sorts and selects correctly.

The table formats a row only when it is drawn (gui/result_table.py); these tests read every row
back and check it against the report, so a row made lazily must say what the report says. How
long the window freezes is measured in bench/bench_results_ui.py --files 10000, not here.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from overlap_desktop import api
from overlap_desktop.gui.common import fmt_hours
from overlap_desktop.gui.result_table import SHOWN_S, file_words
from tests.large_report import large_report

N_FILES = 10_000


@pytest.fixture(scope="module")
def big_report() -> Any:
    return large_report(N_FILES)


@pytest.fixture
def view(qtbot: Any, big_report: Any) -> Any:
    from overlap_desktop.gui.results import ResultsView

    v = ResultsView()
    qtbot.addWidget(v)
    v.resize(1366, 768)
    v.show()
    v.set_report(big_report)
    return v


def _column(view: Any, c: int) -> list[str]:
    ft = view.file_table
    return [ft.item(r, c).text() for r in range(ft.rowCount())]


def _shown_files(view: Any) -> list[Any]:
    """The report's files in the order the table shows them (each row's own file)."""
    ft = view.file_table
    return [view.report.files[ft.item(r, 0).data(Qt.ItemDataRole.UserRole)] for r in range(ft.rowCount())]


def _click_title(view: Any, column: int) -> None:
    head = view.file_table.horizontalHeader()
    x = head.sectionViewportPosition(column) + head.sectionSize(column) // 2
    QTest.mouseClick(head.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, head.height() // 2))


def test_every_file_has_its_row_with_the_reports_words(view: Any, big_report: Any) -> None:
    ft = view.file_table
    assert ft.rowCount() == N_FILES
    # Before any title is clicked, the report's order; every file once.
    assert _shown_files(view) == big_report.files
    assert _column(view, 0) == [api.safe_text(f.query_file) for f in big_report.files]
    owned = _column(view, 2)
    for f, text, length, new, what in zip(big_report.files, owned, _column(view, 1), _column(view, 4),
                                          _column(view, 7), strict=True):
        assert text.startswith(api.format_percent(f.matched_percent))
        assert ("below floor" in text) == bool(f.below_floor)
        assert length == fmt_hours(f.duration_s)
        assert new == (fmt_hours(f.new_seconds) if f.new_seconds > SHOWN_S else "–")
        assert what == file_words(f)
    kinds = set(_column(view, 7))
    assert {"copied as is", "no match", "only a match below the evidence floor (not counted)"} <= kinds
    assert any(w.startswith("repeats another offered file") for w in kinds)
    assert ft.horizontalHeaderItem(2).text() == "You own"
    # Tooltips carry what a narrowed cell hides.
    f0 = big_report.files[0]
    assert ft.item(0, 0).toolTip() == api.safe_text(f0.query_file)
    assert ft.item(0, 2).toolTip().endswith("match footage you own")


def test_the_first_file_with_a_match_is_selected_and_shown(view: Any, big_report: Any) -> None:
    first = next(f for f in big_report.files if f.segments or f.below_floor or f.repeats)
    assert view.selected_file() is first
    assert api.safe_text(first.query_file, max_len=70) in view.plot_title.text()
    assert view.seg_table.rowCount() == len(view.segment_rows(first))


def test_clicking_a_title_sorts_every_row_and_keeps_the_selection(view: Any, big_report: Any) -> None:
    chosen = view.selected_file()
    _click_title(view, 2)  # "You own": largest first
    shown = _shown_files(view)
    assert len(shown) == N_FILES and {id(f) for f in shown} == {id(f) for f in big_report.files}
    keys = [f.matched_percent for f in shown]
    assert keys == sorted(keys, reverse=True)
    # Equal amounts keep the report's order (a stable sort), as the table sorted before.
    position = {id(f): i for i, f in enumerate(big_report.files)}
    for a, b in zip(shown, shown[1:]):
        if a.matched_percent == b.matched_percent:
            assert position[id(a)] < position[id(b)]
    assert view.selected_file() is chosen  # the selection follows its file, not its row number
    assert view.file_table.horizontalHeader().sortIndicatorSection() == 2
    _click_title(view, 2)  # again: smallest first
    keys = [f.matched_percent for f in _shown_files(view)]
    assert keys == sorted(keys)
    _click_title(view, 0)  # names A to Z
    assert _column(view, 0) == sorted(api.safe_text(f.query_file) for f in big_report.files)
    _click_title(view, 7)
    assert _column(view, 7) == sorted(file_words(f) for f in big_report.files)
    assert view.selected_file() is chosen


def test_moving_the_selection_shows_each_files_stretches(view: Any) -> None:
    ft = view.file_table
    _click_title(view, 4)  # "New for you", largest first
    ft.selectRow(0)
    shown = _shown_files(view)
    assert view.selected_file() is shown[0]
    ft.setFocus()
    for row in range(1, 6):
        QTest.keyClick(ft, Qt.Key.Key_Down)
        assert view.selected_file() is shown[row]
        assert view.seg_table.rowCount() == len(view.segment_rows(shown[row]))
    QTest.keyClick(ft, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)  # the last row
    assert view.selected_file() is shown[-1]
    assert api.safe_text(shown[-1].query_file, max_len=70) in view.plot_title.text()
    QTest.keyClick(ft, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    assert view.selected_file() is shown[0]


def test_a_new_report_replaces_every_row_in_the_chosen_order(view: Any) -> None:
    _click_title(view, 0)  # names A to Z
    _click_title(view, 0)  # Z to A
    small = large_report(40, seed=7)
    view.set_report(small)
    assert view.file_table.rowCount() == 40
    assert _column(view, 0) == sorted((api.safe_text(f.query_file) for f in small.files), reverse=True)
    first = next(f for f in small.files if f.segments or f.below_floor or f.repeats)
    assert view.selected_file() is first
