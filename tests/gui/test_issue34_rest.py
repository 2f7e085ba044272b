"""Issue 34 item 12 in the window: the demo's results name the demo's sample library (an empty
profile owns nothing), and the app rounds a duration as the HTML report and the CLI do."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.gui.common import fmt_hours
from overlap_desktop.gui.main_window import MainWindow
from overlap_desktop.gui.result_parts import DEMO_WORDS, YOUR_WORDS
from overlap_desktop.gui.results import ResultsView
from tests.gui.wizard_steps import fingerprinted_wizard


def _view(qtbot: Any) -> ResultsView:
    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1300, 700)
    return view


def _demo(report: Any) -> Any:
    return dataclasses.replace(report, settings={**report.settings, "owned_library": "demo"})


def _owned_row(view: ResultsView) -> int:
    return next(r for r in range(view.seg_table.rowCount())
                if view.seg_table.item(r, 6).text() in (DEMO_WORDS.counted, YOUR_WORDS.counted))


def test_the_demo_results_name_the_demo_library(qtbot: Any, report: Any) -> None:
    view = _view(qtbot)
    view.set_report(_demo(report))
    assert "demo's sample library (not yours)" in view.headline.text()
    assert "you already own" not in view.headline.text()
    assert view.preview_title.text() == "Demo library frame"
    assert view.file_table.horizontalHeaderItem(2).text() == "In the demo library"
    assert view.preview.text() == DEMO_WORDS.prompt and "not yours" in view.preview_caption.text()
    assert "your own" not in view.preview_caption.text() + view.preview.text() + view.hint.text()
    row = _owned_row(view)
    assert view.seg_table.item(row, 6).text() == "yes: in the demo library"
    assert view.seg_table.item(row, 1).text().startswith("demo library: ")
    assert view.plot_title.text().endswith("matches the demo's sample library")
    # The caption of a shown frame, the plot's axis and its hover tip say the same.
    seg = view.selected_file().segments[0]
    job = view.show_owned_frame(seg, seg.query_start, seg.corpus_start, 2.0)
    assert view.preview_caption.text().startswith("Demo library file ")
    assert "comes from the demo's sample library" in view.preview_caption.text()
    assert view.plot.y_axis_words() == "Demo file (s)"
    tip = view.plot._tip(1.0, 2.0, (0, 3.0))
    assert "demo library" in tip and "your own" not in tip and "yours" not in tip
    qtbot.waitUntil(lambda: not job.running, timeout=60_000)

    # The user's own comparison afterwards: "you own" again, everywhere.
    view.set_report(report)
    assert "you already own" in view.headline.text()
    assert view.preview_title.text() == "Your owned frame"
    assert view.file_table.horizontalHeaderItem(2).text() == "You own"
    assert view.preview_caption.text() == YOUR_WORDS.note
    assert view.seg_table.item(_owned_row(view), 6).text() == "yes: footage you own"
    assert view.seg_table.item(_owned_row(view), 1).text().startswith("yours: ")
    assert view.plot_title.text().endswith("matches your footage")
    assert view.plot.y_axis_words() in ("Your file (s)", "Each file (s)")


def test_the_app_rounds_a_duration_as_the_reports_do() -> None:
    for seconds in (4.24, 42.0, 59.96, 90.0, 120.0, 599.97, 45 * 60.0, 3593.0, 3599.96, 5400.0, 12.4 * 3600):
        assert fmt_hours(seconds) == api.format_duration(seconds), seconds
    assert fmt_hours(45 * 60) == "45 min" and fmt_hours(None) == "–"


@pytest.mark.parametrize("size", [(1180, 728), (1350, 688)])
def test_nothing_overlaps_in_the_laptop_window_with_a_long_summary(qtbot: Any, lab_state: Any, report: Any,
                                                                   size: tuple[int, int]) -> None:
    """Seen under Xvfb at 1366x768: with five sentences of details the plot, its legend and the
    stretches were squeezed below their minimum, and the legend was drawn over the axis title."""
    long = dataclasses.replace(report, real_footage_seconds=report.matched_seconds / 2,
                               indeterminate_seconds=6.0, cant_tell_seconds=9.6, repeated_seconds=3.0)
    w = MainWindow(lab_state)
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    w.go("screen")
    w.screen.stack.setCurrentIndex(1)
    w.screen.show_report(long)
    view = w.screen.results
    qtbot.waitUntil(lambda: view.seg_table.viewport().width() > 100)
    qtbot.wait(50)
    assert len(api.headline_details(long)) >= 5

    def span(widget: Any) -> tuple[int, int]:
        top = widget.mapTo(view, widget.rect().topLeft()).y()
        return top, top + widget.height()

    order = [view.file_table, view.plot, view.legend, view.seg_table]
    spans = [span(x) for x in order]
    for (_a0, a1), (b0, _b1) in zip(spans, spans[1:]):
        assert a1 <= b0, spans
    assert view.plot.height() >= view.plot.minimumHeight()
    assert view.legend.height() >= view.legend.minimumSizeHint().height()
    # The y axis title is read whole, not cut off at the top ("Time in your file (" was shown).
    axis = view.plot.plot.getAxis("left")
    assert axis.label.boundingRect().width() <= axis.geometry().height(), axis.labelText


def test_a_file_matched_only_below_the_floor_is_not_called_no_match(qtbot: Any, report: Any) -> None:
    """Seen under Xvfb: a 9.6 s mirrored copy (chance below 1 in 10^15, under the 10 s floor) read
    "no match" in "What was done to it" while its stretch was listed below."""
    f = next(x for x in report.files if x.segments)
    short = dataclasses.replace(f, segments=[], below_floor=list(f.segments), matched_seconds=0.0, flags=[])
    view = _view(qtbot)
    view.set_report(dataclasses.replace(report, files=[short]))
    words = view.file_table.item(0, 7).text()
    assert words != "no match" and "below the evidence floor" in words


def test_folder_and_file_dialogs_open_at_home_not_in_the_programs_folder(
        qtbot: Any, state: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen under Xvfb: the vendor wizard's "Add folder" opened in the working directory (on
    Windows, the program's own folder). Dialogs open at home, then beside the last choice."""

    from overlap_desktop.gui.verify_wizard import VerifyWizard
    from overlap_desktop.gui.wizard_pages import FolderListPage

    home, footage = tmp_path / "home", tmp_path / "disk" / "footage"
    asked = _record_dialog_starts(tmp_path, monkeypatch, chosen_folder=footage)
    page = FolderListPage("t", "s")
    qtbot.addWidget(page)
    qtbot.mouseClick(page.add_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(page.add_button, Qt.MouseButton.LeftButton)
    assert page.folders() == [str(footage.resolve())]
    assert Path(asked[0]) == home and Path(asked[1]) == footage.parent
    wiz = VerifyWizard(state)
    qtbot.addWidget(wiz)
    asked.clear()
    wiz.manifest_page._browse()
    wiz.folder_page._browse()
    assert [Path(a) for a in asked] == [home, home]


def test_the_compare_hint_is_drawn_at_full_contrast(qtbot: Any, window: Any, offer_manifest: Path) -> None:
    """Seen under Xvfb: "Click 'Compare with my library'..." was a disabled (greyed) label."""
    from PySide6.QtGui import QPalette

    screen = window.screen
    with qtbot.waitSignal(screen.inspected, timeout=120_000):
        window.open_manifest(offer_manifest)
    hint = screen.filler
    assert hint.isEnabled()
    fg = hint.palette().color(QPalette.ColorGroup.Active, hint.foregroundRole())
    assert fg == hint.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText)
    assert fg != hint.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText)


def test_the_library_and_open_manifest_dialogs_open_at_home_not_in_the_programs_folder(
        qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen under Xvfb: My library's "Add folder…" and File > Open manifest still opened in the
    working directory (the wizards' dialogs were fixed). Home first, then beside the last choice."""

    home, footage, offers = tmp_path / "home", tmp_path / "disk" / "footage", tmp_path / "mail" / "offers"
    offers.mkdir(parents=True)
    asked = _record_dialog_starts(tmp_path, monkeypatch, chosen_folder=None)
    window.library.choose_folder()
    window.choose_manifest()
    assert [Path(a) for a in asked] == [home, home]
    asked.clear()
    window.state.add_library_folders([str(footage)])
    window.state.add_recent(offers / "offer.ovlm")
    window.library.choose_folder()
    window.choose_manifest()
    assert [Path(a) for a in asked] == [footage.parent, offers]


def test_one_file_is_never_called_1_files(qtbot: Any, state: Any, footage: dict[str, Path], offer_manifest: Path,
                                          tmp_path: Path) -> None:
    """Seen under Xvfb: "1 files" in the verify wizard; the library, status bar, offer screen and
    vendor wizard counted the same way."""
    import shutil

    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(footage["owned"] / "owned-b.mp4", one)
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    lib = w.library
    with qtbot.waitSignal(lib.indexing_finished, timeout=120_000):
        lib.add_folders([str(one)])
    qtbot.waitUntil(lambda: not lib.indexing and not lib.load_job.running and lib.table.rowCount() == 1,
                    timeout=60_000)
    assert lib.summary_label.text().startswith("1 file ready,")
    qtbot.waitUntil(lambda: "(1 file, " in w.index_label.text(), timeout=60_000)
    with qtbot.waitSignal(w.screen.inspected, timeout=120_000):
        w.open_manifest(offer_manifest)
    assert "(1 file)." in w.screen.fields["compat"].text()

    wiz = fingerprinted_wizard(qtbot, state, one)
    assert wiz.fingerprint.status.text().startswith("Done: 1 file found,")


def _record_dialog_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen_folder: Path | None) -> list[str]:
    """A home folder (tmp_path/home), a working directory that is the program's folder
    (tmp_path/program) and tmp_path/disk/footage; folder and file dialogs replaced by stand-ins that
    record the folder each opened at (folder dialogs choose ``chosen_folder``, file dialogs nothing)."""
    from PySide6.QtWidgets import QFileDialog

    home, work = tmp_path / "home", tmp_path / "program"
    for d in (home, work, tmp_path / "disk" / "footage"):
        d.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.chdir(work)
    asked: list[str] = []

    def folder(_parent: Any, _title: str, start: str = "", *_a: Any) -> str:
        asked.append(start)
        return "" if chosen_folder is None else str(chosen_folder)

    def file(_parent: Any, _title: str, start: str = "", *_a: Any) -> tuple[str, str]:
        asked.append(start)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(folder))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(file))
    return asked
