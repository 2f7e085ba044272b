"""Screen an offer: open a manifest, compare it for real, and read the results view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.gui.main_window import MainWindow


def test_open_compare_and_show_results(qtbot: Any, lab_state: Any, offer_manifest: Path) -> None:
    w = MainWindow(lab_state)
    qtbot.addWidget(w)
    w.show()
    screen = w.screen
    with qtbot.waitSignal(screen.inspected, timeout=120_000) as got:
        w.open_manifest(offer_manifest)
    summary = got.args[0]
    assert summary.compatible is True
    assert summary.library_files == len(api.library_files(lab_state.index_path, status="ok")) > 0
    assert screen.fields["label"].text() == "Test offer"
    assert summary.info["root"] == screen.seal.text()
    assert "2 files" in screen.fields["amount"].text()
    assert screen.compare_button.isEnabled()
    assert str(offer_manifest.resolve()) in lab_state.recent_manifests()
    with qtbot.waitSignal(screen.compared, timeout=60_000) as done:
        screen.compare_button.click()
    report = done.args[0]
    view = screen.results
    assert view.headline.text() == api.headline(report)
    assert view.file_table.rowCount() == len(report.files) == 2
    assert report.overlap_percent > 20  # the copied half of the offer is found


def test_results_view_table_plot_and_preview(qtbot: Any, lab_state: Any, report: Any, lab_index: Path,
                                             tmp_path: Path, _no_external_open: list[str]) -> None:
    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    view.set_report(report)
    assert view.headline.text() == api.headline(report)
    matched = next(f for f in report.files if f.segments)
    f = view.selected_file()
    assert f is matched  # the first file with a match is selected, so the plot is not empty
    assert view.plot.point_count > 0
    assert view.seg_table.rowCount() == len(view.segment_rows(f)) >= len(f.segments) + len(f.below_floor)
    names = [view.file_table.item(r, 0).text() for r in range(view.file_table.rowCount())]
    assert sorted(names) == sorted(x.query_file for x in report.files)
    row = names.index(matched.query_file)
    assert view.file_table.item(row, 2).text().startswith(api.format_percent(matched.matched_percent))
    unmatched_row = next(r for r, n in enumerate(names) if n != matched.query_file)
    assert view.file_table.item(unmatched_row, 7).text() == "no match"

    # Hover text names both times; a click decodes the owned frame from the lab's own file.
    seg = f.segments[0]
    q, c, d = (float(v) for v in seg.pairs[0])
    tip = view.plot._tip(q, c, (0, d))
    assert api.format_clock(q) in tip and api.format_clock(c) in tip
    with qtbot.waitSignal(view.preview_ready, timeout=120_000):
        view.plot.click_point(q, c, (0, d))
    pm = view.preview.pixmap()
    assert pm is not None and not pm.isNull()
    assert "no pictures" in view.preview_caption.text()

    # Colouring by owned file keeps every dot.
    n = view.plot.point_count
    view.colour_combo.setCurrentIndex(1)
    assert view.plot.colour_mode == "group" and view.plot.point_count == n

    # Exports through the report module; "Open report" opens the HTML report (not the CSV saved after it).
    for kind in ("html", "json", "csv"):
        out = view.export(kind, tmp_path / f"r.{kind}")
        assert out is not None and out.stat().st_size > 0
    assert api.load_report_json(tmp_path / "r.json").files[0].query_file == report.files[0].query_file
    opened = view.open_report()
    assert opened == tmp_path / "r.html" and _no_external_open[-1] == str(opened)


def test_preview_of_a_moved_file_says_so(qtbot: Any, report: Any) -> None:
    from dataclasses import replace

    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    seg = next(s for f in report.files for s in f.segments)
    moved = replace(seg, corpus_file="/nonexistent/owned-a.mp4")
    with qtbot.waitSignal(view.preview_failed, timeout=120_000) as got:
        view.show_owned_frame(moved, 1.0, 2.0, 3.0)
    assert "no longer where it was indexed" in got.args[0]


def test_try_the_demo_shows_a_screening(qtbot: Any, window: MainWindow, report: Any, lab_index: Path,
                                       offer_manifest: Path, monkeypatch: Any) -> None:
    """The demo button runs ``api.run_demo`` in a worker and shows its report against the demo's
    own index. (The demo itself is tested in tests/integration/test_demo.py; here a stand-in
    returns this session's real comparison so the test stays fast under load.)"""
    from types import SimpleNamespace

    calls: list[Path] = []

    def run_demo(out_dir: Path, *, progress: Any = None, cancel: Any = None) -> Any:
        calls.append(out_dir)
        progress(api.Progress("demo", 1, 6, "steps", message="Indexing the lab's owned footage"))
        return SimpleNamespace(manifest=offer_manifest, index=lab_index, report=report,
                               report_json=None, headline=api.headline(report))

    monkeypatch.setattr(api, "run_demo", run_demo)
    import threading

    on_ui: list[bool] = []
    real_check = api.check_offer

    def check_offer(*args: Any, **kwargs: Any) -> Any:  # opens the user's library: database work
        on_ui.append(threading.current_thread() is threading.main_thread())
        return real_check(*args, **kwargs)

    monkeypatch.setattr(api, "check_offer", check_offer)
    assert window.home.demo_button.isEnabled()
    screen = window.screen
    with qtbot.waitSignal(screen.compared, timeout=120_000):
        qtbot.mouseClick(window.home.demo_button, Qt.MouseButton.LeftButton)
    assert calls == [api.default_demo_dir()]
    assert window.current_page_key() == "screen"
    assert screen.results.file_table.rowCount() == len(report.files)
    assert screen.results.headline.text() == api.headline(report)
    assert screen.report_index == lab_index
    assert screen.seal.text() == api.inspect_manifest(offer_manifest)["root"]
    assert "own sample library" in screen.fields["compat"].text()
    assert lab_index != window.state.index_path  # the user's library is not touched
    assert on_ui == [False]  # "Compare with my library" was checked in the worker, not on the UI thread


def test_an_offer_cannot_be_compared_before_the_library_has_footage(qtbot: Any, window: MainWindow,
                                                                    offer_manifest: Path) -> None:
    screen = window.screen
    with qtbot.waitSignal(screen.inspected, timeout=120_000) as got:
        window.open_manifest(offer_manifest)
    assert got.args[0].compatible is None and got.args[0].library_empty
    assert "library is empty" in screen.fields["compat"].text()
    assert "overlap index" not in screen.fields["compat"].text()  # no command-line advice in the window
    assert not screen.compare_button.isEnabled()


def test_results_table_says_cant_tell_apart_from_new(qtbot: Any) -> None:
    """Issue 33: the app shows what the report model says: new is only time shown not owned."""
    from overlap_desktop.core.report.model import FileResult, Report
    from overlap_desktop.core.types import Span
    from overlap_desktop.gui.results import ResultsView

    f = FileResult("offer/ep.mp4", 60.0, new_seconds=20.0, cant_tell=[Span(0.0, 40.0, "weak evidence")])
    view = ResultsView()
    qtbot.addWidget(view)
    view.set_report(Report("compare", 60.0, 0.0, 0.0, files=[f], new_seconds=20.0, cant_tell_seconds=40.0))
    item = view.file_table.item(0, 4)
    assert item.text() == "20 s" and "shown not to be owned" in item.toolTip()
    cant = view.file_table.item(0, 5)
    assert cant.text() == "40 s" and "weak evidence" in cant.toolTip() and "counted neither" in cant.toolTip()
