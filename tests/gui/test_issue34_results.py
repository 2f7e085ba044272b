"""Issue 34, the results view: two offers one after the other, the owned frame following the
selection, the analyst's plot (owned files told apart, bands in the legend, a stretch row
highlighting its line, the marker kept through zoom), the laptop layout, and the words the
window shares with the HTML report.

Footage: the session's generated clips (tests/gui/conftest.py). A 3-file offer holds a trimmed
copy of owned-a, a byte-identical duplicate of it and new footage; a 1-file offer holds a
stretch of owned-b. A second library keeps owned-a twice (a backup folder), so one offered
stretch matches two owned files.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from overlap_desktop import api
from overlap_desktop.core.types import Span
from overlap_desktop.gui.main_window import MainWindow
from overlap_desktop.gui.results import PREVIEW_NOTE, ResultsView
from tests.footage import make_clip
from tests.gui.conftest import FPS, SIZE, isolated_config


def _manifest(folder: Path, home: Path, label: str) -> Path:
    idx = home / "index"
    api.index_paths([folder], index=idx, config=isolated_config(idx, home))
    out = home / "offer.ovlm"
    api.export_manifest(idx, out, label=label)
    return out


@pytest.fixture(scope="module")
def offers(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 3-file offer (copy, byte-identical duplicate, new) and a 1-file offer (part of owned-b)."""
    three = tmp_path_factory.mktemp("three") / "offer"
    three.mkdir()
    shutil.copy(footage["offer"] / "offer-copy.mp4", three / "a-copy.mp4")
    shutil.copy(footage["offer"] / "offer-copy.mp4", three / "b-duplicate.mp4")  # same bytes
    shutil.copy(footage["offer"] / "offer-new.mp4", three / "c-new.mp4")
    one = tmp_path_factory.mktemp("one") / "offer"
    make_clip(one / "only.mp4", 12, duration=10.0, fps=FPS, size=SIZE, t0=1.0)
    return {"three": _manifest(three, three.parent, "Three files"),
            "one": _manifest(one, one.parent, "One file")}


@pytest.fixture(scope="module")
def twin_lab(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library holding owned-a.mp4 twice: in owned/ and in backup/."""
    home = tmp_path_factory.mktemp("twin")
    (home / "backup").mkdir()
    shutil.copy(footage["owned"] / "owned-a.mp4", home / "backup" / "owned-a.mp4")
    shutil.copytree(footage["owned"], home / "owned")
    idx = home / "index"
    api.index_paths([home / "owned", home / "backup"], index=idx, config=isolated_config(idx, home))
    return idx


@pytest.fixture(scope="module")
def reports(offers: dict[str, Path], lab_index: Path, twin_lab: Path,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("cmp34")
    cfg = isolated_config(lab_index, home)
    return {"three": api.compare(offers["three"], lab_index, config=cfg),
            "one": api.compare(offers["one"], lab_index, config=cfg),
            "twin": api.compare(offers["three"], twin_lab, config=isolated_config(twin_lab, home))}


def _view(qtbot: Any, size: tuple[int, int] = (1200, 800)) -> ResultsView:
    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    return view


def _row_of(view: ResultsView, name: str) -> int:
    return next(r for r in range(view.file_table.rowCount()) if view.file_table.item(r, 0).text() == name)


# --------------------------------------------------------------------------- item 1: two offers


def test_a_one_file_offer_after_a_three_file_offer_is_plotted(qtbot: Any, lab_state: Any,
                                                             offers: dict[str, Path]) -> None:
    """The buyer's second offer: its only row is selected *and* plotted (the row number did not
    change, so no selection signal came; the plot kept the first offer's file)."""
    w = MainWindow(lab_state)
    qtbot.addWidget(w)
    w.show()
    screen = w.screen
    for key in ("three", "one"):
        with qtbot.waitSignal(screen.inspected, timeout=120_000):
            w.open_manifest(offers[key])
        if key == "three":
            with qtbot.waitSignal(screen.compared, timeout=120_000) as first:
                screen.compare_button.click()
            view = screen.results
            assert first.args[0].files[0].query_file == "a-copy.mp4"
            view.file_table.selectRow(0)  # the first offer's row 0 is the one shown
            assert view.plot._file is first.args[0].files[0]
    with qtbot.waitSignal(screen.compared, timeout=120_000) as second:
        screen.compare_button.click()
    report = second.args[0]
    only = report.files[0]
    assert [f.query_file for f in report.files] == ["only.mp4"] and only.segments
    view = screen.results
    assert view.selected_file() is only
    assert view.plot._file is only and view.plot.point_count > 0
    assert view.seg_table.rowCount() == len(view.segment_rows(only)) > 0
    assert view.seg_table.item(0, 1).text() == "yours: owned-b.mp4"
    assert "only.mp4" in view.plot_title.text()


def test_a_new_report_with_no_files_clears_everything(qtbot: Any, reports: dict[str, Any]) -> None:
    view = _view(qtbot)
    view.set_report(reports["three"])
    assert view.seg_table.rowCount() > 0
    view.set_report(dataclasses.replace(reports["three"], files=[]))
    assert view.selected_file() is None and view.plot._file is None
    assert view.seg_table.rowCount() == 0 and view.plot.point_count == 0


# --------------------------------------------------------------------------- item 2 + analyst story


def test_analyst_plot_and_frame_follow_the_selection(qtbot: Any, reports: dict[str, Any]) -> None:
    """Click a dot, change file, come back, click a stretch row, zoom: the frame, the highlighted
    line and the marker always belong to what is selected."""
    report = reports["twin"]
    view = _view(qtbot)
    view.set_report(report)
    copy = view.selected_file()
    assert copy.query_file == "a-copy.mp4"

    # Two owned files behind the lines: the axis does not say "your file".
    assert len({s.corpus_file for s in copy.segments}) == 2
    assert view.plot.y_axis_words() == "Each file (s)"
    assert view.plot.plot.getAxis("left").labelText == "Each file (s)"

    # A dot: its frame and a ring on it.
    seg = copy.segments[0]
    q, c, d = (float(v) for v in seg.pairs[len(seg.pairs) // 2])
    with qtbot.waitSignal(view.preview_ready, timeout=120_000):
        view.plot.click_point(q, c, (0, d))
    assert view.preview.has_frame()
    assert view.plot.selected_point == (q, c)
    # Zoom and pan keep the ring on its dot (it lives in data coordinates).
    view.plot.plot.getViewBox().scaleBy((0.3, 0.3), center=(q, c))
    view.plot.plot.getViewBox().translateBy(x=0.5)
    xs, ys = view.plot.marker.getData()
    assert list(xs) == [q] and list(ys) == [c] and view.plot.marker.isVisible()
    # The labelled button replaces pyqtgraph's "A" glyph.
    assert view.fit_button.text() == "Show all" and not view.plot.plot.autoBtn.isVisible()
    view.fit_button.click()
    assert view.plot.plot.getViewBox().autoRangeEnabled()[0]

    # Another file: no frame, no caption, no ring of the previous file.
    view.file_table.selectRow(_row_of(view, "c-new.mp4"))
    assert not view.preview.has_frame() and view.preview_caption.text() == PREVIEW_NOTE
    assert view.plot.selected_point is None and view.plot.highlighted is None
    assert "no match" in view.plot_title.text()

    # A frame still being decoded when the file changes never lands beside the new plot.
    view.file_table.selectRow(_row_of(view, "a-copy.mp4"))
    job = view.show_owned_frame(seg, q, c, d)
    view.file_table.selectRow(_row_of(view, "c-new.mp4"))
    qtbot.waitUntil(lambda: not job.running, timeout=120_000)
    assert not view.preview.has_frame()

    # A stretch row: its line is highlighted and its owned frame shown.
    view.file_table.selectRow(_row_of(view, "a-copy.mp4"))
    rows = view.segment_rows(view.selected_file())
    k = next(i for i, (_s, kind) in enumerate(rows) if kind == "owned")
    with qtbot.waitSignal(view.preview_ready, timeout=120_000):
        view.seg_table.selectRow(k)
    assert view.plot.highlighted is rows[k][0]
    hx, hy = view.plot.highlight.getData()
    assert list(hx) == [rows[k][0].query_start, rows[k][0].query_end]
    assert view.preview.has_frame() and Path(rows[k][0].corpus_file).name in view.preview_caption.text()


def test_owned_file_colouring_tells_two_copies_apart(qtbot: Any, reports: dict[str, Any]) -> None:
    view = _view(qtbot)
    view.set_report(reports["twin"])
    view.colour_combo.setCurrentIndex(1)
    f = view.selected_file()
    owned = sorted({s.corpus_file for s in f.segments})
    assert len(owned) == 2
    shapes = {view.plot.group_symbol(s.corpus_file, s.variant) for s in f.segments}
    assert len(shapes) == 2  # a cross over a circle, not one dot hiding the other
    items = view.plot.legend_items()[:-1]
    names = [words for _c, words, _g in items]
    assert len({g for _c, _w, g in items}) == 2
    # Same file name in two folders: the folder tells them apart, in the legend and the table.
    assert any(n.startswith("backup/owned-a.mp4") for n in names)
    assert any(n.startswith("owned/owned-a.mp4") for n in names)
    matches = {view.seg_table.item(r, 1).text() for r in range(view.seg_table.rowCount())}
    assert {"yours: backup/owned-a.mp4", "yours: owned/owned-a.mp4"} <= matches
    # One owned file: "your file".
    view2 = _view(qtbot)
    view2.set_report(reports["one"])
    assert view2.plot.y_axis_words() == "Your file (s)"


def test_could_not_be_judged_bands_are_in_the_legend(qtbot: Any, reports: dict[str, Any]) -> None:
    report = reports["one"]
    view = _view(qtbot)
    view.set_report(report)
    assert "could not be judged" not in view.legend.text()  # no bands, no legend entry
    banded = dataclasses.replace(report.files[0], indeterminate=[Span(2.0, 4.0, "static")])
    view.set_report(dataclasses.replace(report, files=[banded]))
    assert view.plot.has_bands()
    assert "could not be judged" in view.legend.text() and "&#9632;" in view.legend.text()


# --------------------------------------------------------------------------- item 9: laptop layout


def _contrast(a: QColor, b: QColor) -> float:
    def lum(c: QColor) -> float:
        ch = [x / 255.0 for x in (c.red(), c.green(), c.blue())]
        lin = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in ch]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("width", [1350, 1024])
def test_results_fit_a_laptop_screen(qtbot: Any, lab_state: Any, reports: dict[str, Any], width: int) -> None:
    """1366x768 with a 40 px task bar leaves 1366x728; the window frame takes about 16x40 of it."""
    w = MainWindow(lab_state)
    qtbot.addWidget(w)
    w.resize(width, 728 - 40)
    w.show()
    w.go("screen")
    w.screen.stack.setCurrentIndex(1)
    w.screen.show_report(reports["twin"])
    view = w.screen.results
    qtbot.waitUntil(lambda: view.seg_table.viewport().width() > 100)
    qtbot.wait(50)
    st = view.seg_table
    rows_in_view = st.viewport().height() / st.verticalHeader().defaultSectionSize()
    assert rows_in_view >= 2
    # The plot's third of the results' height comes first (it was 80 px at 1366x768).
    assert view.plot.height() >= view.split.height() / 3 - 2, (view.plot.height(), view.split.height())
    files_in_view = view.file_table.viewport().height() / view.file_table.verticalHeader().defaultSectionSize()
    assert files_in_view >= 3
    # Every column, "Counted" last, inside the table: no horizontal scroll bar.
    last = st.columnCount() - 1
    assert st.horizontalHeaderItem(last).text() == "Counted"
    assert st.columnViewportPosition(last) + st.columnWidth(last) <= st.viewport().width() + 1
    assert not st.horizontalScrollBar().isVisible()
    assert st.columnWidth(last) >= 56
    # A narrowed cell is elided: its full text is in its tip.
    assert all(st.item(r, c).toolTip() for r in range(st.rowCount()) for c in range(st.columnCount()))
    # The help text: full contrast and all of its lines shown.
    hint = view.hint
    assert hint.isEnabled()
    fg = hint.palette().color(hint.foregroundRole())
    bg = hint.palette().color(hint.backgroundRole())
    assert _contrast(fg, bg) >= 4.5
    assert hint.height() >= hint.heightForWidth(hint.width())


# --------------------------------------------------------------------------- items 10, 11, 15: same words


def test_repeats_read_alike_in_the_window_and_the_html(qtbot: Any, reports: dict[str, Any],
                                                       tmp_path: Path) -> None:
    report = reports["three"]
    view = _view(qtbot)
    view.set_report(report)
    view.file_table.selectRow(_row_of(view, "b-duplicate.mp4"))
    rows = view.segment_rows(view.selected_file())
    r = next(i for i, (_s, kind) in enumerate(rows) if kind == "repeat")
    seg = rows[r][0]
    assert seg.corpus_file == "a-copy.mp4"
    # Same bytes: certain, not "about 1 in 5,000".
    assert view.seg_table.item(r, 5).text() == "none: same checksum"
    assert "1 in" not in view.seg_table.item(r, 5).text()
    speed = view.seg_table.item(r, 3).text()
    assert speed == api.speed_cell(seg) and speed.startswith("normal")
    out = view.export("html", tmp_path / "r.html")
    assert out is not None
    page = out.read_text(encoding="utf-8")
    assert speed in page
    assert "byte-identical files (same checksum)" in page
    # The new file's empty amounts read "–" in both.
    row = _row_of(view, "a-copy.mp4")
    assert view.file_table.item(row, 3).text() == "–"
    assert not re.search(r"<td[^>]*>0\.0 s</td>", page)


def test_saved_reports_can_leave_out_my_folder_names(qtbot: Any, reports: dict[str, Any], footage: dict[str, Path],
                                                     tmp_path: Path) -> None:
    view = _view(qtbot)
    view.set_report(reports["three"])
    folder = str(footage["owned"])
    shown = view.export("html", tmp_path / "full.html")
    assert shown is not None and folder in shown.read_text(encoding="utf-8")  # the look-alike: full paths
    view.hide_folders.setChecked(True)
    for kind in ("html", "json", "csv"):
        out = view.export(kind, tmp_path / f"hidden.{kind}")
        assert out is not None
        text = out.read_text(encoding="utf-8")
        assert folder not in text and str(footage["root"]) not in text
        assert "owned-a.mp4" in text  # the file names stay
    # The window itself keeps the full paths.
    assert view.report.files[0].segments[0].corpus_file.startswith(folder)
    assert view.seg_table.item(0, 1).toolTip().startswith(folder)
    assert api.load_report_json(tmp_path / "hidden.json").settings["folder_names_hidden"] is True


def test_save_report_asks_where(qtbot: Any, reports: dict[str, Any], monkeypatch: Any, tmp_path: Path) -> None:
    """The public save (File > Save report, Ctrl+S in the main window) asks for an HTML path."""
    from overlap_desktop.gui import results as results_mod

    view = _view(qtbot)
    view.set_report(reports["one"])
    asked: list[str] = []

    def fake_dialog(_parent: Any, _title: str, start: str, filt: str) -> tuple[str, str]:
        asked.append(filt)
        return str(tmp_path / "saved.html"), filt

    monkeypatch.setattr(results_mod.QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    view.save_report()
    assert asked and "html" in asked[0] and (tmp_path / "saved.html").is_file()
    assert view.last_export == tmp_path / "saved.html"


def test_keyboard_reaches_the_stretch_rows(qtbot: Any, reports: dict[str, Any]) -> None:
    view = _view(qtbot)
    view.set_report(reports["one"])
    view.seg_table.setFocus()
    qtbot.keyClick(view.seg_table, Qt.Key.Key_Down)
    assert view.plot.highlighted is not None


def test_the_plot_library_loads_off_the_ui_thread_while_comparing(qtbot: Any, lab_state: Any,
                                                                   offers: dict[str, Path], monkeypatch: Any) -> None:
    """pyqtgraph's import (about a second) froze the window when results appeared: it now starts
    in a background thread when the comparison starts."""
    import subprocess
    import sys

    from overlap_desktop.gui import screen as screen_mod

    calls: list[int] = []
    monkeypatch.setattr(screen_mod, "preload_plot_library", lambda: calls.append(1))
    w = MainWindow(lab_state)
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.screen.inspected, timeout=120_000):
        w.open_manifest(offers["one"])
    with qtbot.waitSignal(w.screen.compared, timeout=120_000):
        w.screen.compare_button.click()
    assert calls == [1]
    # In a fresh process: the thread imports the plot module, with no warning from Qt or Python.
    code = ("import os, sys; os.environ['QT_QPA_PLATFORM'] = 'offscreen'\n"
            "from PySide6.QtWidgets import QApplication\napp = QApplication([])\n"
            "from overlap_desktop.gui.screen import preload_plot_library\n"
            "assert 'pyqtgraph' not in sys.modules\n"
            "t = preload_plot_library(); t.join(120)\n"
            "assert not t.is_alive() and 'overlap_desktop.gui.plot' in sys.modules and 'pyqtgraph' in sys.modules\n"
            "assert preload_plot_library() is t\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
