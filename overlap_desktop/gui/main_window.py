"""The main window: home, library and "Screen an offer" pages, menus, drag and drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import __version__
from overlap_desktop.gui.common import count_of, fit_to_screen, fmt_hours, fmt_size, show_error, show_info, start_folder
from overlap_desktop.gui.home import HomePage
from overlap_desktop.gui.notice import DEMO_NOTE, INDEXING_NOTE, NoticeBar
from overlap_desktop.gui.state import AppState

__all__ = ["MainWindow", "MANIFEST_SUFFIX"]

MANIFEST_SUFFIX = ".ovlm"
MANIFEST_FILTER = "Manifests (*.ovlm);;All files (*)"


class MainWindow(QMainWindow):
    """The application window.

    Pages are created on first use so the window appears quickly; pyqtgraph and
    the core load only when a page needs them.

    Args:
        state: Shared configuration and recent files.
    """

    def __init__(self, state: AppState | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state or AppState(parent=self)
        self.setWindowTitle("overlap desktop")
        self.setAcceptDrops(True)
        self.setMinimumSize(760, 520)
        self._pages: dict[str, QWidget] = {}
        self._dialogs: list[QWidget] = []
        self.stack = QStackedWidget(self)
        central = QWidget(self)
        cl = QVBoxLayout(central)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(0)
        self.notice = NoticeBar(central)
        self.notice_label, self.notice_button = self.notice.label, self.notice.button
        self.notice_button.clicked.connect(lambda: self.go("library"))
        cl.addWidget(self.notice)
        cl.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        #: What the notice says on "Screen an offer" (demo results, an incomplete library).
        self._library_note = ""
        self._showing_demo = False
        self._quit_confirmed = False
        self.quit_box: QMessageBox | None = None
        self.completeness_job: Any = None
        self.home = HomePage(self)
        self.home.chosen.connect(self.go)
        self.home.demo_requested.connect(lambda: self.start_demo())
        self.home.add_footage_requested.connect(self._add_folder_dialog)
        self.stack.addWidget(self.home)
        self._pages["home"] = self.home
        self._build_actions()
        self._build_menus()
        self._build_toolbar()
        self.index_label = QLabel()
        self.index_label.setAccessibleName("Library location and size")
        self.index_label.setTextFormat(Qt.TextFormat.PlainText)
        self.statusBar().addPermanentWidget(self.index_label, 1)
        self.state.recent_changed.connect(self._fill_recent_menu)
        self.state.config_changed.connect(self._on_config_changed)
        self._fill_recent_menu()
        self._restore_window_state()
        self._show_index_location()
        self._resume_offered = False
        self.resume_box: QMessageBox | None = None
        # After the window is on screen: read the library (status bar size, unfinished work).
        QTimer.singleShot(250, self.startup_checks)
        # Meanwhile load the indexing and plotting code in the background: imported on the UI
        # thread when results first appear (pyqtgraph, ~0.5 s) or beside it when indexing starts,
        # it froze the window.
        from overlap_desktop.gui.workers import warm_up_imports

        self.warm_up = warm_up_imports()

    # ------------------------------------------------------------------ pages
    def page(self, key: str) -> QWidget:
        """The page ``key`` (``home``, ``library``, ``screen``), created on first use."""
        if key not in self._pages:
            if key == "library":
                from overlap_desktop.gui.library import LibraryPage

                page: QWidget = LibraryPage(self.state, self)
                page.stats_changed.connect(self._on_stats)  # type: ignore[attr-defined]
                page.unfinished_found.connect(self.offer_resume)  # type: ignore[attr-defined]
                page.indexing_finished.connect(self._on_indexing_finished)  # type: ignore[attr-defined]
            elif key == "screen":
                from overlap_desktop.gui.screen import ScreenOfferPage

                page = ScreenOfferPage(self.state, self)
                page.inspected.connect(self._on_inspected)
                page.compared.connect(self._on_compared)
            else:
                raise KeyError(key)
            self._pages[key] = page
            self.stack.addWidget(page)
        return self._pages[key]

    @property
    def library(self) -> Any:
        return self.page("library")

    @property
    def screen(self) -> Any:
        return self.page("screen")

    def go(self, key: str) -> None:
        """Show a page, or open the wizard for ``export`` / ``verify``."""
        if key == "export":
            self.open_export_wizard()
            return
        if key == "verify":
            self.open_verify_wizard()
            return
        page = self.page(key)
        self.stack.setCurrentWidget(page)
        self.act_home.setEnabled(key != "home")
        for k, act in (("screen", self.act_screen), ("library", self.act_library)):
            act.setCheckable(True)
            act.setChecked(k == key)
        self._update_notice()

    def current_page_key(self) -> str:
        w = self.stack.currentWidget()
        return next(k for k, p in self._pages.items() if p is w)

    # ------------------------------------------------------------------ actions and menus
    def _action(self, text: str, slot: Any, shortcut: Any = None, tip: str = "") -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setStatusTip(tip)
            act.setToolTip(tip)
        # Drop the "checked" argument so slots with optional parameters are called plainly.
        act.triggered.connect(lambda _checked=False: slot())
        self.addAction(act)
        return act

    def _build_actions(self) -> None:
        S = QKeySequence.StandardKey
        self.act_open = self._action("&Open manifest…", self.choose_manifest, S.Open,
                                     "Open a seller's manifest (.ovlm) and screen it")
        self.act_export = self._action("&Prepare a manifest for a buyer…", self.open_export_wizard,
                                       "Ctrl+E", "Fingerprint your footage into a manifest file")
        self.act_verify = self._action("&Verify a delivery…", self.open_verify_wizard, "Ctrl+Shift+V",
                                       "Check delivered files against the quoted manifest")
        self.act_save_report = self._action("&Save report…", self.save_report, S.Save,
                                            "Save the comparison shown in \"Screen an offer\" as a report")
        self.act_save_report.setEnabled(False)
        self.act_settings = self._action("&Settings…", self.open_settings, S.Preferences)
        if self.act_settings.shortcut().isEmpty():
            self.act_settings.setShortcut(QKeySequence("Ctrl+,"))
        self.act_quit = self._action("&Quit", self.close, S.Quit)
        if self.act_quit.shortcut().isEmpty():
            self.act_quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.act_home = self._action("&Home", lambda: self.go("home"), "Ctrl+1", "Back to the start page")
        self.act_home.setEnabled(False)
        self.act_screen = self._action("&Screen an offer", lambda: self.go("screen"), "Ctrl+2")
        self.act_library = self._action("My &library", lambda: self.go("library"), "Ctrl+3")
        self.act_add_folder = self._action("&Add folder to library…", self._add_folder_dialog,
                                           "Ctrl+Shift+A")
        self.act_rescan = self._action("&Re-scan library", self._rescan, "F5",
                                       "Look for new, changed or removed files in your library folders")
        self.act_demo = self._action("Try the &demo", self.start_demo)
        self.act_about = self._action("&About overlap desktop", self._about)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        m = mb.addMenu("&File")
        m.addAction(self.act_open)
        self.recent_menu = m.addMenu("Open &recent")
        m.addAction(self.act_save_report)
        m.addSeparator()
        m.addAction(self.act_export)
        m.addAction(self.act_verify)
        m.addSeparator()
        m.addAction(self.act_settings)
        m.addSeparator()
        m.addAction(self.act_quit)
        g = mb.addMenu("&Go")
        for a in (self.act_home, self.act_screen, self.act_library):
            g.addAction(a)
        lib = mb.addMenu("&Library")
        lib.addAction(self.act_add_folder)
        lib.addAction(self.act_rescan)
        h = mb.addMenu("&Help")
        h.addAction(self.act_demo)
        h.addAction(self.act_about)
        self.act_demo.setEnabled(self.home.demo_button.isEnabled())

    def _build_toolbar(self) -> None:
        # A visible way home and between pages (the Go menu alone is easy to miss).
        bar = QToolBar("Navigation", self)
        bar.setObjectName("navigation")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        bar.setAccessibleName("Navigation")
        for a in (self.act_home, self.act_screen, self.act_library):
            bar.addAction(a)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.nav_bar = bar
        self.act_home.setText("⌂ Home")

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = self.state.recent_manifests()
        for p in items:
            act = self.recent_menu.addAction(Path(p).name)
            act.setToolTip(p)
            act.setStatusTip(p)
            act.triggered.connect(lambda _=False, p=p: self.open_manifest(p))
        if items:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self.state.clear_recent)
        self.recent_menu.setEnabled(bool(items))

    # ------------------------------------------------------------------ commands
    def choose_manifest(self) -> None:
        recent = self.state.recent_manifests()  # beside the last offer, else home (never the program's folder)
        path, _ = QFileDialog.getOpenFileName(self, "Open a manifest", start_folder(recent[0] if recent else None),
                                              MANIFEST_FILTER)
        if path:
            self.open_manifest(path)

    def open_manifest(self, path: str | Path) -> None:
        """Show "Screen an offer" for the manifest at ``path`` (file association, drop, menu)."""
        self.go("screen")
        self.screen.open_manifest(Path(path))

    def _add_folder_dialog(self) -> None:
        self.go("library")
        self.library.choose_folder()

    def _rescan(self) -> None:
        self.go("library")
        self.library.rescan()

    def open_export_wizard(self) -> Any:
        """Open the vendor wizard (non-modal so progress keeps the window alive)."""
        from overlap_desktop.gui.export_wizard import ExportWizard

        try:
            wiz = ExportWizard(self.state, self)
        except Exception as exc:  # e.g. a bad value in overlap.toml
            show_error(self, "Your settings have a problem", exc)
            return None
        self._keep(wiz)
        # The library is never written by the wizard, but show its current state when it closes.
        wiz.finished.connect(lambda _r: self.library.refresh() if "library" in self._pages else None)
        wiz.show()
        return wiz

    def open_verify_wizard(self, manifest: str | Path | None = None) -> Any:
        """Open the delivery verification wizard (pre-filled with the manifest open in "Screen an offer")."""
        from overlap_desktop.gui.verify_wizard import VerifyWizard

        if manifest is None and "screen" in self._pages:
            manifest = self.screen.manifest_path

        try:
            wiz = VerifyWizard(self.state, self, manifest=manifest)
        except Exception as exc:
            show_error(self, "Your settings have a problem", exc)
            return None
        self._keep(wiz)
        wiz.show()
        return wiz

    def open_settings(self) -> Any:
        from overlap_desktop.gui.settings_dialog import SettingsDialog

        try:
            dlg = SettingsDialog(self.state, self)
        except Exception as exc:
            show_error(self, "Your settings have a problem", exc)
            return None
        self._keep(dlg)
        dlg.open()
        return dlg

    def _keep(self, w: QWidget) -> None:
        self._dialogs = [d for d in self._dialogs if d.isVisible()]
        self._dialogs.append(w)

    def start_demo(self, out_dir: str | Path | None = None) -> None:
        """Run the bundled demo and show its comparison in "Screen an offer".

        Args:
            out_dir: Folder for the demo's files (default: the demo's own data folder).
        """
        self.go("screen")
        self.screen.run_demo(None if out_dir is None else Path(out_dir))

    def startup_checks(self) -> None:
        """Load the library in the background (status bar, resume offer)."""
        if not self.isVisible():
            return
        try:
            self.state.config()
        except Exception as exc:
            show_error(self, "Your settings have a problem", exc)
            return
        self.page("library")

    def offer_resume(self, files_left: int) -> QMessageBox | None:
        """Once per session, offer to finish indexing that an earlier run left unfinished
        (not after a deliberate Cancel, and a No is remembered)."""
        if self._resume_offered or self.library.indexing or self.state.resume_quiet():
            return None
        self._resume_offered = True
        box = QMessageBox(QMessageBox.Icon.Question, "Finish indexing?",
                          "Adding footage to your library did not finish last time. Files already done "
                          "are kept. Continue with the rest now?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setAccessibleName("Finish indexing?")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def done(result: int) -> None:
            self.resume_box = None
            if result == QMessageBox.StandardButton.Yes:
                self.go("library")
                self.library.resume()
            else:  # asked once: the library page's banner still offers to resume
                self.state.set_resume_quiet(True)

        box.finished.connect(done)
        self.resume_box = box
        box.open()
        return box

    def _about(self) -> None:
        QMessageBox.about(self, "About overlap desktop",
                          f"<b>overlap desktop {__version__}</b><p>Find out how much of a video dataset "
                          "on offer you already own, without exchanging footage.</p>"
                          "<p>This program contains FFmpeg libraries built with GPL options.</p>")

    # ------------------------------------------------------------------ status bar
    def _show_index_location(self) -> None:
        try:
            path = self.state.index_path
        except Exception as exc:  # a bad config must not stop the window from opening
            self.index_label.setText("Settings problem: " + str(exc))
            return
        self.index_label.setText(f"Library: {path}")
        self.index_label.setToolTip(str(path))

    def _on_stats(self, stats: dict[str, Any]) -> None:
        path = stats.get("path") or self.state.index_path
        parts = [f"Library: {path}"]
        if stats.get("files") is not None:
            parts.append(count_of(int(stats["files"]), "file"))
        if stats.get("hours") is not None:
            parts.append(fmt_hours(float(stats["hours"]) * 3600.0) + " of footage")
        if stats.get("bytes"):
            parts.append(fmt_size(float(stats["bytes"])) + " on disk")
        empty = not stats.get("files")
        self.home.set_library_empty(empty)
        self.act_rescan.setEnabled(not empty or bool(self.state.library_folders()))
        self.index_label.setText(" — ".join(parts[:1]) + ("  (" + ", ".join(parts[1:]) + ")"
                                                          if len(parts) > 1 else ""))

    def _on_config_changed(self) -> None:
        self._show_index_location()
        if "library" in self._pages:
            self.library.refresh()

    # ------------------------------------------------------------------ drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: Any) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        self.handle_dropped(paths)

    def handle_dropped(self, paths: list[Path]) -> QMessageBox | None:
        """Act on dropped paths: a manifest opens in "Screen an offer"; folders are
        offered for the library (after confirmation).

        Returns:
            The confirmation or message box shown, if any (tests answer it).
        """
        manifests = [p for p in paths if p.is_file() and p.suffix.lower() == MANIFEST_SUFFIX]
        folders = [p for p in paths if p.is_dir()]
        others = [p for p in paths if p not in manifests and p not in folders]
        if manifests:
            self.open_manifest(manifests[0])
            return None
        if folders:
            return self.confirm_add_folders(folders)
        if others:
            names = ", ".join(p.name for p in others[:3])
            return show_info(self, "Not a manifest",
                             f"{names}: overlap desktop opens manifest files (.ovlm) and folders of "
                             "footage. To check a video against your library, add its folder to "
                             "My library.")
        return None

    def confirm_add_folders(self, folders: list[Path]) -> QMessageBox:
        names = "\n".join(str(f) for f in folders[:5]) + ("\n…" if len(folders) > 5 else "")
        box = QMessageBox(QMessageBox.Icon.Question, "Add to your library?",
                          f"Add these folders to your library and fingerprint the footage in them?\n\n"
                          f"{names}\n\nThis can take a while for large folders; you can cancel and "
                          "resume later.",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # folder names as typed
        box.setAccessibleName("Add to your library?")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def done(result: int) -> None:
            if result == QMessageBox.StandardButton.Yes:
                self.go("library")
                self.library.add_folders([str(f) for f in folders])

        box.finished.connect(done)
        box.open()
        return box

    # ------------------------------------------------------------------ window state
    def _restore_window_state(self) -> None:
        s = self.state.settings()
        geo = s.value("window/geometry")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
            # A geometry saved on a bigger monitor must not overflow a laptop screen.
            fit_to_screen(self, (self.width(), self.height()))
        else:
            fit_to_screen(self, (1180, 800))
        st = s.value("window/state")
        if isinstance(st, QByteArray) and not st.isEmpty():
            self.restoreState(st)

    def save_window_state(self) -> None:
        s = self.state.settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.sync()

    def running_jobs(self) -> list[Any]:
        jobs: list[Any] = []
        for p in list(self._pages.values()) + self._dialogs:
            jobs.extend(getattr(p, "jobs", lambda: [])())
        return [j for j in jobs if j is not None and j.running]

    def closeEvent(self, event: QCloseEvent) -> None:
        if "library" in self._pages and self.library.indexing and not self._quit_confirmed:
            # Quitting stops indexing: say what is kept and let the user keep it running.
            event.ignore()
            self.confirm_quit()
            return
        self.save_window_state()
        # Cancelling keeps finished work; the unfinished job is offered again at next start.
        for job in self.running_jobs():
            job.cancel()
        from overlap_desktop.gui.workers import wait_all

        wait_all(30_000)
        for d in self._dialogs:
            d.close()
        super().closeEvent(event)

    def _on_indexing_finished(self, _summary: Any) -> None:
        if self.quit_box is not None:
            # The user asked to quit and indexing ended meanwhile: nothing is lost by quitting now.
            self.quit_box.done(QMessageBox.StandardButton.Yes)
            return
        self.check_library()

    def confirm_quit(self) -> QMessageBox:
        """Ask before quitting while the library is being indexed (No keeps it running)."""
        if self.quit_box is not None:
            return self.quit_box
        box = QMessageBox(QMessageBox.Icon.Question, "Stop indexing and quit?",
                          "Your footage is still being added to the library. If you quit now, indexing "
                          "stops: files already finished are kept, and the rest is done when you resume "
                          "(My library > Resume indexing). Quit anyway?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.button(QMessageBox.StandardButton.Yes).setText("Stop and quit")
        box.button(QMessageBox.StandardButton.No).setText("Keep indexing")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setAccessibleName("Stop indexing and quit?")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def done(result: int) -> None:
            self.quit_box = None
            if result == QMessageBox.StandardButton.Yes:
                self._quit_confirmed = True
                self.close()

        box.finished.connect(done)
        self.quit_box = box
        box.open()
        return box

    # ------------------------------------------------------------------ save report (Ctrl+S)
    def _results(self) -> Any:
        if "screen" not in self._pages:
            return None
        results = getattr(self.screen, "results", None)
        return results if results is not None and getattr(results, "report", None) is not None else None

    def save_report(self) -> None:
        """File > Save report… (Ctrl+S): the results' own save dialog, when a comparison is shown."""
        results = self._results()
        if results is None:
            self.statusBar().showMessage("Compare an offer first: there is no report to save yet.", 6000)
            return
        results.choose_export("html")

    # ------------------------------------------------------------------ notice on "Screen an offer"
    def _update_notice(self) -> None:
        on_screen = "screen" in self._pages and self.stack.currentWidget() is self._pages["screen"]
        texts = []
        if self._showing_demo:
            texts.append(DEMO_NOTE)
        note = self._library_note
        if "library" in self._pages and self.library.indexing:
            note = INDEXING_NOTE
        if note and not self._showing_demo:
            texts.append(note)
        self.notice_label.setText(" ".join(texts))
        self.notice_button.setVisible(bool(note) and not self._showing_demo)
        self.notice.setVisible(on_screen and bool(texts))

    def _on_inspected(self, summary: Any) -> None:
        self._showing_demo = False
        self._library_note = getattr(summary, "library_note", "") or ""
        compat = getattr(self.screen, "fields", {}).get("compat")
        done = getattr(summary, "completeness", None)
        if self._library_note and done is not None and compat is not None and summary.compatible is True:
            # "Can be compared: yes" must not hide that the library is still missing footage (the
            # bar above says what that means).
            compat.setText(compat.text() + f" But your library may be incomplete ({done.why}).")
        self._update_notice()

    def _on_compared(self, report: Any) -> None:
        used = getattr(self.screen, "report_index", None)
        self._showing_demo = used is not None and Path(used) != self.state.index_path
        self.act_save_report.setEnabled(True)
        self._update_notice()
        if not self._showing_demo:
            self.check_library()

    def check_library(self) -> Any:
        """Ask (in a worker) whether the library is complete; the notice follows the answer."""
        from overlap_desktop import api
        from overlap_desktop.gui.workers import Job

        try:
            config = self.state.config()
        except Exception:
            return None
        job = Job(api.library_completeness, self.state.index_path, parent=self, with_progress=False,
                  config=config)
        job.succeeded.connect(self._on_completeness)
        self.completeness_job = job
        job.start()
        return job

    def _on_completeness(self, done: Any) -> None:
        self._library_note = done.note
        self._update_notice()

