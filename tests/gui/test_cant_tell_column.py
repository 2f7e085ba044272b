"""The results table's rows add up, and "can't tell" is shown, never read as "no match".

Real short pieces of fixed-camera footage (tests/verdict_suites.py, the "short" suite): a 15 s
reversed piece whose best evidence is near-identical frames too still to place in time was shown
as "0% owned, 4.0 s new, no match" while the saved report gave its seconds as "can't tell".
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.gui.result_table import FILE_COLUMNS, SHOWN_S, WHAT_COLUMN
from overlap_desktop.gui.results import ResultsView

LEFT = Qt.MouseButton.LeftButton
#: Columns of seconds besides "You own" (a percent whose seconds are shown beside it).
SECONDS = {"Repeated in the offer": 3, "New for you": 4, "Can't tell": 5, "Could not be judged": 6}


@pytest.fixture(scope="module")
def short_report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests import verdict_suites as vs

    return vs.run(vs.short(), tmp_path_factory.mktemp("short-suite"))


def _shown(qtbot: Any, report: Any) -> ResultsView:
    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1366, 768)
    view.show()
    view.set_report(report)
    return view


def _click_row(qtbot: Any, view: ResultsView, name: str) -> Any:
    ft = view.file_table
    row = next(r for r in range(ft.rowCount()) if ft.item(r, 0).text() == name)
    index = ft.rows.index(row, 0)
    ft.scrollTo(index)
    qtbot.mouseClick(ft.viewport(), LEFT, pos=ft.visualRect(index).center())
    qtbot.waitUntil(lambda: view.selected_file() is not None and view.selected_file().query_file == name,
                    timeout=5_000)
    return row


def test_every_row_adds_up_to_its_length(qtbot: Any, short_report: Any) -> None:
    view = _shown(qtbot, short_report)
    ft = view.file_table
    assert tuple(ft.horizontalHeaderItem(c).text() for c in range(ft.columnCount()))[5] == "Can't tell"
    assert [FILE_COLUMNS[c] for c in SECONDS.values()] == list(SECONDS)
    with_cant_tell = 0
    for r in range(ft.rowCount()):
        f = short_report.files[ft.item(r, 0).data(Qt.ItemDataRole.UserRole)]
        length = ft.item(r, 1).data(Qt.ItemDataRole.UserRole + 1)
        owned = ft.item(r, 2).data(Qt.ItemDataRole.UserRole + 1) * length / 100.0
        rest = sum(ft.item(r, c).data(Qt.ItemDataRole.UserRole + 1) for c in SECONDS.values())
        assert owned + rest == pytest.approx(length, abs=0.02), f.query_file
        for c in SECONDS.values():  # every amount is shown: the row adds up as read
            value = ft.item(r, c).data(Qt.ItemDataRole.UserRole + 1)
            assert (ft.item(r, c).text() == "–") == (value <= SHOWN_S), (f.query_file, c, value)
        if f.matched_seconds > SHOWN_S:
            assert f"({api.format_duration(f.matched_seconds)})" in ft.item(r, 2).text()
        if f.cant_tell_seconds > 0.5:
            with_cant_tell += 1
            assert ft.item(r, 5).text() == api.format_duration(f.cant_tell_seconds)
        if f.cant_tell_seconds > 0:
            assert "no match" not in ft.item(r, WHAT_COLUMN).text(), f.query_file
        if f.cant_tell_seconds > 0.5:
            assert "can't tell" in ft.item(r, WHAT_COLUMN).text(), f.query_file
    assert with_cant_tell >= 3  # the suite does hold such files


def test_a_reversed_piece_with_cant_tell_time_is_not_no_match(qtbot: Any, short_report: Any) -> None:
    name = "ctl-room-reversed-15s-phase.mp4"
    f = next(x for x in short_report.files if x.query_file == name)
    assert not f.segments and f.cant_tell_seconds > 1.0  # the case seen: nothing counted owned
    view = _shown(qtbot, short_report)
    row = _click_row(qtbot, view, name)
    words = view.file_table.item(row, WHAT_COLUMN).text()
    assert words.startswith("can't tell: near-identical to owned footage") and "no match" not in words
    assert view.file_table.item(row, 2).text() == "0%"
    assert "no match" not in view.plot_title.text() and "can't tell" in view.plot_title.text()
    assert view.plot.no_match.isVisible()
    assert "No match" not in view.plot.no_match.textItem.toPlainText()
    assert api.format_duration(f.cant_tell_seconds) in view.plot.no_match.textItem.toPlainText()
    # Its near-identical stretches are drawn (shaded where they are), and the legend says what that is.
    assert len(view.plot.cant_tell_regions) == len(f.cant_tell)
    drawn = sorted(tuple(round(v, 3) for v in r.getRegion()) for r in view.plot.cant_tell_regions)
    assert drawn == sorted((round(sp.start_s, 3), round(sp.end_s, 3)) for sp in f.cant_tell)
    assert "some evidence of being owned" in view.legend.text()


def test_a_file_with_nothing_at_all_still_reads_no_match(qtbot: Any, short_report: Any) -> None:
    """The look-alike: a file with no evidence of any kind keeps "no match"."""
    name = "neg-table-later.mp4"
    f = next(x for x in short_report.files if x.query_file == name)
    assert not f.segments and not f.cant_tell and not f.below_floor
    view = _shown(qtbot, short_report)
    row = _click_row(qtbot, view, name)
    assert view.file_table.item(row, WHAT_COLUMN).text() == "no match"
    assert view.file_table.item(row, 5).text() == "–"
    assert view.plot.no_match.textItem.toPlainText().startswith("No match")
    assert not view.plot.cant_tell_regions and "some evidence of being owned" not in view.legend.text()


def test_an_old_report_without_cant_tell_reads_as_before(qtbot: Any, tmp_path: Path, short_report: Any) -> None:
    """A report saved before "can't tell" existed (no such field) shows 0 there and adds up."""
    import json

    path = tmp_path / "r.json"
    api.write_report_json(short_report, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    for f in data["files"]:
        f.pop("cant_tell", None)
        f.pop("cant_tell_seconds", None)
    path.write_text(json.dumps(data), encoding="utf-8")
    old = api.load_report_json(path)
    view = _shown(qtbot, old)
    assert all(view.file_table.item(r, 5).text() == "–" for r in range(view.file_table.rowCount()))


#: Where the reversed piece comes from: offered t shows owned room-owned.mp4 at 35.5 - t (tests/verdict_suites.py).
REVERSED_FROM_S = 35.5


def test_a_reversed_piece_draws_its_near_identical_frames_where_they_lie(qtbot: Any, short_report: Any) -> None:
    """Its can't-tell time is drawn as dots at (offered t, owned t), not only shaded: owned time falls
    as offered time grows (the piece is reversed), and the legend says what the dots are."""
    from overlap_desktop.gui.plot import NEAR_WORDS

    name = "ctl-room-reversed-15s-phase.mp4"
    f = next(x for x in short_report.files if x.query_file == name)
    view = _shown(qtbot, short_report)
    _click_row(qtbot, view, name)
    dots = view.plot.near_dot_positions()
    assert dots and len(dots) == len(f.near_frames)
    # Every dot stands for can't-tell time, in the owned file it resembles.
    assert all(any(sp.start_s - 1e-6 <= x <= sp.end_s + 1e-6 for sp in f.cant_tell) for x, _y in dots)
    assert {n.corpus_file.rsplit("/", 1)[-1] for n in f.near_frames} == {"room-owned.mp4"}
    # The motion samples the line could not be drawn through: each at its true owned time, falling.
    for t in (12.0, 13.0):
        assert any(abs(x - t) < 1e-3 and abs(y - (REVERSED_FROM_S - t)) < 0.05 for x, y in dots), (t, dots)
    assert html.escape(NEAR_WORDS) in view.legend.text()
    assert "dots" in view.plot_title.text() and "amber dots" in view.plot.no_match.textItem.toPlainText()
    # The owned axis shows them (the dots lie above the offered file's own length).
    lo, hi = view.plot.plot.viewRange()[1]
    assert all(lo <= y <= hi for _x, y in dots)


def test_a_look_alike_without_evidence_draws_no_near_identical_dots(qtbot: Any, short_report: Any) -> None:
    """The look-alike (a later moment of the same camera, nothing near-identical): no dots, no legend entry,
    even right after the reversed piece's dots were drawn."""
    from overlap_desktop.gui.plot import NEAR_WORDS

    view = _shown(qtbot, short_report)
    _click_row(qtbot, view, "ctl-room-reversed-15s-phase.mp4")
    assert view.plot.near_dot_positions()
    name = "neg-table-later.mp4"
    f = next(x for x in short_report.files if x.query_file == name)
    assert not f.near_frames
    _click_row(qtbot, view, name)
    assert view.plot.near_dot_positions() == []
    assert html.escape(NEAR_WORDS) not in view.legend.text()
