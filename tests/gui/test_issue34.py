"""Issue 34, "The app, round three": items 3, 6, 7, 8, 12, 14, the UI freeze, and the buyer's story end
to end (library, re-scan cancelled midway, two offers one after the other, verify)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QMessageBox

from overlap_desktop import api
from overlap_desktop.gui import verify_wizard as vw
from overlap_desktop.gui.main_window import MainWindow
from overlap_desktop.gui.notice import DEMO_NOTE, INDEXING_NOTE
from overlap_desktop.gui.state import AppState
from tests.footage import make_clip


def _window(qtbot: Any, state: Any) -> MainWindow:
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.resize(1366, 728)
    w.show()
    w.startup_checks()
    qtbot.waitUntil(lambda: w.library.load_job is not None and not w.library.load_job.running, timeout=120_000)
    return w


def _index(qtbot: Any, w: MainWindow, start: Any) -> Any:
    with qtbot.waitSignal(w.library.indexing_finished, timeout=120_000) as got:
        start()
    qtbot.waitUntil(lambda: not w.library.indexing and not w.library.load_job.running, timeout=120_000)
    return got.args[0]


def _new_dates(folder: Path) -> None:
    """A copy to a new disk / a backup restore: same bytes, new modification times."""
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _statuses(state: Any) -> dict[str, str]:
    return {Path(f.path).name: f.status for f in api.library_files(state.index_path, config=state.config())}


def _cancel_when(monkeypatch: pytest.MonkeyPatch, page: Any, stop: Any) -> None:
    """Run the real indexing, cancelling from inside it when ``stop(progress)`` first says so."""
    real = api.index_paths

    def index_paths(paths: Any, *, progress: Any = None, cancel: Any = None, **kw: Any) -> Any:
        def spy(p: Any) -> None:
            if stop(p):
                cancel.cancel()
            progress(p)

        return real(paths, progress=spy, cancel=cancel, **kw)

    monkeypatch.setattr(api, "index_paths", index_paths)


def _blocking_index(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """``api.index_paths`` that runs until the returned event is set (or it is cancelled)."""
    release = threading.Event()

    def index_paths(paths: Any, *, progress: Any = None, cancel: Any = None, **kw: Any) -> Any:
        while not release.wait(0.02):
            if cancel is not None and cancel():
                raise api.Cancelled()
        return api.IndexSummary()

    monkeypatch.setattr(api, "index_paths", index_paths)
    return release


@pytest.fixture()
def owned_copy(footage: dict[str, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(footage["owned"], tmp_path / "owned"))


# ---------------------------------------------------------------------------- item 3
def test_rescan_cancelled_keeps_fingerprints_and_screen_warns(qtbot: Any, state: Any, owned_copy: Path,
                                                              offer_manifest: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    _index(qtbot, w, lambda: w.library.add_folders([str(owned_copy)]))
    assert set(_statuses(state).values()) == {"ok"} and len(_statuses(state)) == 2
    _new_dates(owned_copy)
    _cancel_when(monkeypatch, w.library, lambda p: bool(p.message and "same bytes" in p.message))
    assert _index(qtbot, w, w.library.rescan) is None  # cancelled after the first file was checked
    # Nothing was dropped: both files keep their fingerprints, the table says Ready for both (one
    # of them "not checked again": see the test below).
    assert _statuses(state) == {"owned-a.mp4": "ok", "owned-b.mp4": "ok"}
    qtbot.waitUntil(lambda: w.library.table.rowCount() == 2, timeout=60_000)
    assert all(w.library.table.item(r, 3).text().startswith("Ready") for r in range(2))
    assert "1 file left" in w.library.resume_label.text()

    # "Can be compared" and the results say the library may be incomplete.
    screen = w.screen
    with qtbot.waitSignal(screen.inspected, timeout=120_000) as got:
        w.open_manifest(offer_manifest)
    assert not got.args[0].library_complete
    compat = screen.fields["compat"].text()
    assert compat.startswith("Yes") and "may be incomplete" in compat and "stopped" in compat
    assert w.notice.isVisible() and "may be incomplete" in w.notice_label.text()
    with qtbot.waitSignal(screen.compared, timeout=120_000):
        screen.compare_button.click()
    qtbot.waitUntil(lambda: w.completeness_job is not None and not w.completeness_job.running, timeout=60_000)
    assert w.notice.isVisible() and "may be incomplete" in w.notice_label.text()
    assert screen.results.isVisible()

    # Finishing the re-scan re-reads nothing (same bytes) and the warning goes.
    monkeypatch.undo()
    summary = _index(qtbot, w, w.library.resume)
    assert summary.indexed == 0 and summary.skipped == 2
    with qtbot.waitSignal(screen.inspected, timeout=120_000) as got:
        w.open_manifest(offer_manifest)
    assert got.args[0].library_complete and "incomplete" not in screen.fields["compat"].text()
    assert not w.notice.isVisible()


def test_a_cancelled_rescan_says_which_ready_files_it_had_not_checked(qtbot: Any, state: Any, owned_copy: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen under Xvfb: after a cancelled re-scan the banner said "1 file left" while every row said
    Ready. The file the re-scan had not reached says so in its row, and the banner says why it is
    listed as ready."""
    w = _window(qtbot, state)
    lib = w.library
    _index(qtbot, w, lambda: lib.add_folders([str(owned_copy)]))
    _new_dates(owned_copy)
    checked: list[str] = []

    def stop(p: Any) -> bool:
        if p.message and "same bytes" in p.message and p.current:
            checked.append(Path(p.current).name)
        return bool(checked)

    _cancel_when(monkeypatch, lib, stop)
    assert _index(qtbot, w, lib.rescan) is None
    qtbot.waitUntil(lambda: lib.table.rowCount() == 2 and lib.resume_frame.isVisibleTo(lib), timeout=60_000)
    rows = {lib.table.item(r, 0).text(): lib.table.item(r, 3) for r in range(2)}
    (not_reached,) = set(rows) - set(checked)
    assert rows[checked[0]].text() == "Ready"
    assert rows[not_reached].text() == "Ready, not checked again"
    assert "earlier fingerprints" in rows[not_reached].toolTip() and "Resume" in rows[not_reached].toolTip()
    banner = lib.resume_label.text()
    assert "1 file left" in banner and "not checked again" in banner and "earlier fingerprints" in banner

    # Resumed to the end: every row is plainly Ready again.
    monkeypatch.undo()
    _index(qtbot, w, lib.resume)
    qtbot.waitUntil(lambda: not lib.load_job.running and lib.table.rowCount() == 2, timeout=60_000)
    assert {lib.table.item(r, 3).text() for r in range(2)} == {"Ready"}
    assert not lib.resume_frame.isVisibleTo(lib)


def test_a_rescan_that_finds_nothing_new_says_so(qtbot: Any, state: Any, owned_copy: Path) -> None:
    """Seen under Xvfb: the progress panel closes when a job finishes, so Re-scan with nothing new
    showed no answer at all. The summary line says what the job did."""
    w = _window(qtbot, state)
    lib = w.library
    _index(qtbot, w, lambda: lib.add_folders([str(owned_copy)]))
    assert not lib.progress_frame.isVisibleTo(lib)
    assert "Just now: 2 files added or updated" in lib.summary_label.text()
    _index(qtbot, w, lib.rescan)
    text = lib.summary_label.text()
    assert text.startswith("2 files ready") and "Checked just now: nothing new or changed (2 files unchanged)." in text
    (owned_copy / "owned-b.mp4").unlink()
    _index(qtbot, w, lib.rescan)
    assert "Just now: 1 unchanged, 1 gone from disk and forgotten." in lib.summary_label.text()


def test_screen_warns_while_the_library_is_being_indexed(qtbot: Any, state: Any, owned_copy: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    release = _blocking_index(monkeypatch)
    w.library.add_folders([str(owned_copy)])
    assert "empty" not in w.library.summary_label.text()  # not under a running progress bar
    assert "Indexing" in w.library.summary_label.text()
    w.go("screen")
    assert w.notice.isVisible() and w.notice_label.text() == INDEXING_NOTE
    w.go("library")
    assert not w.notice.isVisible()  # a bar for the comparing page only
    release.set()
    qtbot.waitUntil(lambda: not w.library.indexing, timeout=60_000)


# ---------------------------------------------------------------------------- item 6
def test_closing_while_indexing_asks_and_keep_indexing_keeps_it(qtbot: Any, state: Any, owned_copy: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    release = _blocking_index(monkeypatch)
    job = w.library.add_folders([str(owned_copy)])
    assert job is not None
    w.close()
    box = w.quit_box
    assert box is not None and w.isVisible() and job.running
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.No)
    assert box.defaultButton().text() == "Keep indexing" and "finished are kept" in box.text()
    box.done(QMessageBox.StandardButton.No)
    assert w.isVisible() and job.running
    w.close()
    w.quit_box.done(QMessageBox.StandardButton.Yes)
    assert not w.isVisible()
    qtbot.waitUntil(lambda: not job.running, timeout=60_000)
    assert state.unfinished_job()  # offered again next time
    release.set()


def test_indexing_ending_while_quit_is_asked_quits(qtbot: Any, state: Any, owned_copy: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    release = _blocking_index(monkeypatch)
    w.library.add_folders([str(owned_copy)])
    w.close()
    assert w.quit_box is not None and w.isVisible()
    release.set()  # the job ends while the question is on screen: nothing is lost by quitting
    qtbot.waitUntil(lambda: not w.isVisible(), timeout=60_000)
    assert w.quit_box is None


def test_closing_when_idle_does_not_ask(qtbot: Any, state: Any) -> None:
    w = _window(qtbot, state)
    w.close()
    assert w.quit_box is None and not w.isVisible()


# ---------------------------------------------------------------------------- item 7
@pytest.fixture()
def long_clips(tmp_path: Path) -> Path:
    folder = tmp_path / "long"
    for i in range(4):
        make_clip(folder / f"take-{i}.mp4", 90 + i, duration=20.0, fps=12.0, size=(96, 72))
    return folder


def test_cancel_mid_file_one_panel_file_listed_count_right_and_no_question_later(
        qtbot: Any, state: Any, long_clips: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    lib = w.library
    finished: list[str] = []
    polls = [0]
    real = api.index_paths

    def index_paths(paths: Any, *, progress: Any = None, cancel: Any = None, **kw: Any) -> Any:
        def spy(p: Any) -> None:
            if p.message and p.current:
                finished.append(p.current)
            progress(p)

        def stop() -> bool:
            # Polled between frames: 30 polls into the second file, some of it was read.
            polls[0] += bool(finished)
            return polls[0] > 30 or cancel()

        return real(paths, progress=spy, cancel=stop, **kw)

    monkeypatch.setattr(api, "index_paths", index_paths)
    assert _index(qtbot, w, lambda: lib.add_folders([str(long_clips)])) is None
    assert len(finished) == 1
    being_read = sorted({p.name for p in long_clips.iterdir()} - {Path(finished[0]).name})[0]
    statuses = _statuses(state)
    assert statuses[being_read] == "pending" and "running" not in statuses.values()
    # One panel: the banner, not the stopped job's progress under it.
    assert lib.resume_frame.isVisibleTo(lib) and not lib.progress_frame.isVisibleTo(lib)
    # The file being read stays listed (as not finished), also for `overlap files`.
    rows = {lib.table.item(r, 0).text(): lib.table.item(r, 3).text() for r in range(lib.table.rowCount())}
    assert rows[being_read] == "Not finished"
    assert being_read in {Path(f.path).name for f in api.library_files(state.index_path, status="pending",
                                                                       config=state.config())}
    left = 4 - sum(1 for s in statuses.values() if s == "ok")
    assert left == 3 and f"{left} files left" in lib.resume_label.text()
    assert "empty" not in lib.summary_label.text()

    # A deliberate Cancel: the next start shows the banner and asks nothing.
    w2 = _window(qtbot, state)
    qtbot.waitUntil(lambda: w2.library.resume_frame.isVisibleTo(w2.library), timeout=60_000)
    assert w2.resume_box is None and f"{left} files left" in w2.library.resume_label.text()


def test_stopped_before_any_file_finished_is_not_called_empty(qtbot: Any, state: Any, long_clips: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, state)
    lib = w.library
    real = api.index_paths
    polls = [0]

    def index_paths(paths: Any, *, cancel: Any = None, **kw: Any) -> Any:
        def stop() -> bool:
            polls[0] += 1
            return polls[0] > 30  # inside the first file's frames

        return real(paths, cancel=stop, **kw)

    monkeypatch.setattr(api, "index_paths", index_paths)
    assert _index(qtbot, w, lambda: lib.add_folders([str(long_clips)])) is None
    assert set(_statuses(state).values()) == {"pending"}
    text = lib.summary_label.text()
    assert "empty" not in text and "stopped" in text and "Resume" in text
    assert not lib.progress_frame.isVisibleTo(lib)


def test_after_a_crash_the_question_is_asked_once_and_no_is_remembered(qtbot: Any, state: Any,
                                                                       footage: dict[str, Path]) -> None:
    state.set_unfinished_job([str(footage["owned"])])  # a job that did not end (no Cancel: a crash)
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.resume_box is not None, timeout=120_000)
    w.resume_box.done(QMessageBox.StandardButton.No)
    w2 = _window(qtbot, state)
    qtbot.waitUntil(lambda: w2.library.resume_frame.isVisibleTo(w2.library), timeout=60_000)
    qtbot.wait(50)
    assert w2.resume_box is None  # No was remembered; the banner still offers to resume


# ---------------------------------------------------------------------------- item 8
def test_enter_activates_a_focused_home_card_with_a_visible_focus_ring(qtbot: Any, window: MainWindow) -> None:
    card = window.home.buttons["library"]
    card.setFocus()
    qtbot.waitUntil(card.hasFocus, timeout=5_000)
    focused = card.grab().toImage()
    with qtbot.waitSignal(window.home.chosen, timeout=5_000) as got:
        qtbot.keyClick(card, Qt.Key.Key_Return)
    assert got.args == ["library"]
    window.go("home")
    window.home.buttons["screen"].setFocus()
    qtbot.waitUntil(lambda: not card.hasFocus(), timeout=5_000)
    plain = card.grab().toImage()
    highlight = card.palette().color(card.palette().ColorRole.Highlight)
    y = focused.height() // 2
    ring = focused.pixelColor(1, y)
    assert abs(ring.red() - highlight.red()) + abs(ring.green() - highlight.green()) + \
        abs(ring.blue() - highlight.blue()) < 60
    assert plain.pixelColor(1, y) != ring


def test_ctrl_s_saves_the_report_shown(qtbot: Any, window: MainWindow, report: Any, lab_index: Path,
                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.gui import results as results_module

    act = window.act_save_report
    assert act.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)
    file_menu = window.menuBar().actions()[0].menu()
    assert act in file_menu.actions()
    assert not act.isEnabled()
    window.state.overrides["index.path"] = str(lab_index)
    window.state.reload()
    window.go("screen")
    window.screen.show_report(report, lab_index)
    assert act.isEnabled()
    out = tmp_path / "saved.html"
    monkeypatch.setattr(results_module.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    act.trigger()
    assert out.is_file() and "<html" in out.read_text(encoding="utf-8").lower()


# ---------------------------------------------------------------------------- item 12
def test_demo_results_say_they_come_from_the_demo_library(qtbot: Any, window: MainWindow, report: Any,
                                                           lab_index: Path, offer_manifest: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(api, "run_demo", lambda out, **kw: SimpleNamespace(
        manifest=offer_manifest, index=lab_index, report=report, report_json=None))
    with qtbot.waitSignal(window.screen.compared, timeout=120_000):
        window.start_demo(window.state.index_path.parent / "demo")
    assert window.notice.isVisible() and window.notice_label.text() == DEMO_NOTE
    assert "demo library" in DEMO_NOTE and "not touched" in DEMO_NOTE
    assert "demo library" in window.home.demo_button.toolTip()


# ---------------------------------------------------------------------------- item 14
def test_first_start_says_start_by_adding_footage_and_empty_library_buttons_are_off(
        qtbot: Any, state: Any) -> None:
    w = _window(qtbot, state)
    qtbot.waitUntil(lambda: w.home.start_frame.isVisibleTo(w.home), timeout=60_000)
    assert "Start by adding your footage" in w.home.start_label.text()
    lib = w.library
    assert "start by adding your footage" in lib.summary_label.text()
    assert not lib.rescan_button.isEnabled() and not lib.remove_button.isEnabled()
    assert not lib.remove_folder_button.isEnabled() and lib.add_button.isEnabled()
    assert not w.act_rescan.isEnabled()


def test_remove_defaults_to_no_and_a_folder_is_removed_at_once(qtbot: Any, state: Any, owned_copy: Path,
                                                               footage: dict[str, Path]) -> None:
    w = _window(qtbot, state)
    lib = w.library
    other = Path(shutil.copytree(footage["offer"], owned_copy.parent / "other"))
    _index(qtbot, w, lambda: lib.add_folders([str(owned_copy), str(other)]))
    qtbot.waitUntil(lambda: lib.table.rowCount() == 4, timeout=60_000)
    assert not w.home.start_frame.isVisibleTo(w.home)
    assert lib.rescan_button.isEnabled() and lib.remove_folder_button.isEnabled()
    assert not lib.remove_button.isEnabled()  # nothing selected yet
    lib.table.selectRow(0)
    assert lib.remove_button.isEnabled()
    box = lib.remove_selected()
    assert box is not None and box.defaultButton() is box.button(QMessageBox.StandardButton.No)
    box.done(QMessageBox.StandardButton.No)
    assert lib.remove_job is None and len(_statuses(state)) == 4

    assert str(owned_copy.resolve()) in lib.folders()
    box = lib.remove_folder(str(owned_copy.resolve()))
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.No) and "2 files" in box.text()
    box.done(QMessageBox.StandardButton.Yes)
    qtbot.waitUntil(lambda: lib.remove_job is not None and not lib.remove_job.running, timeout=60_000)
    qtbot.waitUntil(lambda: lib.table.rowCount() == 2, timeout=60_000)
    assert set(_statuses(state)) == {"offer-copy.mp4", "offer-new.mp4"}
    assert state.library_folders() == [str(other.resolve())]
    assert all(f.exists() for f in owned_copy.iterdir())  # files on disk untouched
    # Re-scan leaves the removed folder alone.
    summary = _index(qtbot, w, lib.rescan)
    assert summary.indexed == 0 and set(_statuses(state)) == {"offer-copy.mp4", "offer-new.mp4"}


# ---------------------------------------------------------------------------- UI freeze
def test_heavy_imports_and_removal_run_off_the_ui_thread(qtbot: Any, state: Any, owned_copy: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Structural: the plotting and indexing code is imported by a background thread at start-up
    (on the UI thread it froze the window when results first appeared), and forgetting files
    opens the database in a worker."""
    import importlib

    from overlap_desktop.gui.workers import warm_up_imports

    real_import = importlib.import_module
    where: dict[str, bool] = {}

    def recording(name: str, *a: Any) -> Any:
        where[name] = threading.current_thread() is threading.main_thread()
        return real_import(name, *a)

    monkeypatch.setattr(importlib, "import_module", recording)
    warm_up_imports().join(120)
    ours = {k: v for k, v in where.items() if k.startswith("overlap_desktop.gui.")}
    assert ours == {"overlap_desktop.gui.results": False, "overlap_desktop.gui.plot": False}
    monkeypatch.undo()

    w = _window(qtbot, state)
    _index(qtbot, w, lambda: w.library.add_folders([str(owned_copy)]))
    real_open = api.open_index
    opened_on_ui: list[bool] = []

    def open_index(*a: Any, **k: Any) -> Any:
        opened_on_ui.append(threading.current_thread() is threading.main_thread())
        return real_open(*a, **k)

    monkeypatch.setattr(api, "open_index", open_index)
    job = w.library.remove_paths([str(owned_copy / "owned-b.mp4")])
    assert job is not None
    qtbot.waitUntil(lambda: not job.running, timeout=60_000)
    assert opened_on_ui and not any(opened_on_ui)


# ---------------------------------------------------------------------------- the buyer's story
def test_buyer_story_library_rescan_two_offers_verify(qtbot: Any, state: Any, owned_copy: Path,
                                                      footage: dict[str, Path], offer_manifest: Path,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Add the library; restore it from a backup (same bytes, new dates) and re-scan, cancelled
    midway: nothing is lost and nothing is re-read; screen one offer, then another one; verify the
    second offer's delivery."""
    w = _window(qtbot, state)
    lib = w.library
    _index(qtbot, w, lambda: lib.add_folders([str(owned_copy)]))
    with api.open_index(state.index_path, config=state.config(), readonly=True) as idx:
        before = {Path(f.path).name: f.sha256 for f in idx.files()}

    _new_dates(owned_copy)
    _cancel_when(monkeypatch, lib, lambda p: bool(p.message and "same bytes" in p.message))
    assert _index(qtbot, w, lib.rescan) is None
    monkeypatch.undo()
    assert _statuses(state) == {"owned-a.mp4": "ok", "owned-b.mp4": "ok"}
    summary = _index(qtbot, w, lib.resume)
    assert (summary.indexed, summary.skipped) == (0, 2)
    with api.open_index(state.index_path, config=state.config(), readonly=True) as idx:
        assert {Path(f.path).name: f.sha256 for f in idx.files()} == before

    # A second, one-file offer: the copied stretch only.
    vendor = tmp_path / "vendor2"
    one = vendor / "footage"
    one.mkdir(parents=True)
    shutil.copy(footage["offer"] / "offer-copy.mp4", one / "offer-copy.mp4")
    vcfg = api.load_config({"index.path": str(vendor / "index")}, environ={}, user_file=vendor / "none.toml")
    api.index_paths([one], index=vendor / "index", config=vcfg)
    second = vendor / "second.ovlm"
    api.export_manifest(vendor / "index", second, label="Second offer")

    screen = w.screen
    labels = []
    for manifest in (offer_manifest, second):
        with qtbot.waitSignal(screen.inspected, timeout=120_000) as got:
            w.open_manifest(manifest)
        assert got.args[0].library_complete and not w.notice.isVisible()
        with qtbot.waitSignal(screen.compared, timeout=120_000) as got:
            screen.compare_button.click()
        labels.append(got.args[0].manifest.get("label"))
        assert screen.results.report is got.args[0]
    assert labels == ["Test offer", "Second offer"]
    second_report = screen.results.report
    assert len(second_report.files) == 1 and second_report.overlap_percent > 50

    delivery = shutil.copytree(one, tmp_path / "delivery")
    wiz = w.open_verify_wizard()
    assert wiz.manifest_page.edit.text() == str(second)  # pre-filled with the offer just screened
    wiz.next()
    wiz.folder_page.edit.setText(str(delivery))
    wiz.next()
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=60_000)
    assert wiz.result_page.verdict.text().startswith("Every quoted file is present and exact")
    wiz.close()
    QApplication.processEvents()


def test_state_flags_round_trip(qtbot: Any, tmp_path: Path) -> None:
    s = AppState({"index.path": str(tmp_path / "ix")})
    assert s.unfinished_left() is None and not s.resume_quiet()
    s.set_unfinished_left(0)
    s.set_resume_quiet(True)
    assert s.unfinished_left() == 0 and s.resume_quiet()
    s.set_unfinished_left(None)
    s.set_resume_quiet(False)
    assert s.unfinished_left() is None and not s.resume_quiet()


def test_live_refresh_while_indexing_is_spaced_by_how_long_a_fill_takes(qtbot: Any, state: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A big library takes long to list: while indexing, the page re-reads it at most every
    2 s and never more than 1/20 of the time (a 1 s fill waits 20 s), so the UI thread is free."""
    from overlap_desktop.gui import library as library_module

    page = library_module.LibraryPage(state)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: not page.load_job.running, timeout=60_000)
    refreshed: list[int] = []
    monkeypatch.setattr(page, "refresh", lambda: refreshed.append(1))
    clock = [1000.0]
    monkeypatch.setattr(library_module.time, "monotonic", lambda: clock[0])
    finished = api.Progress(stage="index", done=1, total=10, unit="bytes", current="/x/a.mp4",
                            message="indexed 3.0 s")
    page._fill_cost = 0.02  # a small library: every 2 s
    page._on_progress(finished)
    clock[0] += 2.5
    page._on_progress(finished)
    assert len(refreshed) == 2
    page._fill_cost = 1.0  # a fill that blocks the UI thread for 1 s: 20 s apart
    clock[0] += 10.0
    page._on_progress(finished)
    assert len(refreshed) == 2
    clock[0] += 10.5
    page._on_progress(finished)
    assert len(refreshed) == 3
