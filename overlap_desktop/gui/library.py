""""My library": the owned footage in the index, and indexing with progress, cancel and resume."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import count_of, fmt_hours, fmt_size, headline_label, show_error, start_folder
from overlap_desktop.gui.frame_rate_ask import FrameRateAsk
from overlap_desktop.gui.library_data import forget_files, load_library, plain_problem
from overlap_desktop.gui.library_words import INDEXING_TEXT, done_words, resume_text, status_cell, summary_text
from overlap_desktop.gui.shard_upgrade import ShardUpgradeBanner
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.workers import EtaEstimator, Job

__all__ = ["LibraryPage"]

COLUMNS = ("File", "Folder", "Length", "Status", "Could not be judged", "Problem")
INDET_TIP = "Static or featureless time that cannot be matched"
#: While indexing, the list is re-read after files finish, at most this often (seconds) and
#: never more than 1/LIVE_REFRESH_SHARE of the time: a big library takes long to fill.
LIVE_REFRESH_S = 2.0
#: Rows measured when columns are sized to their contents (Qt's default is 1000).
RESIZE_SAMPLE_ROWS = 300
LIVE_REFRESH_SHARE = 20.0


def _item(text: str, sort_value: Any = None, tip: str = "") -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if sort_value is not None:
        it.setData(Qt.ItemDataRole.UserRole, sort_value)
    if tip:
        it.setToolTip(tip)
    return it


class LibraryPage(QWidget):
    """The index's files, plus "Add folder…", "Re-scan", "Remove" and indexing progress.

    Signals:
        stats_changed(dict): the index's totals after a refresh (for the status bar).
        unfinished_found(int): the index has unfinished work (offer to resume).
        indexing_finished(object): an indexing job ended (its ``IndexSummary``, or ``None``
            if it was cancelled or failed).
    """

    stats_changed = Signal(dict)
    unfinished_found = Signal(int)
    indexing_finished = Signal(object)
    refreshed = Signal()

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.index_job: Job | None = None
        self.load_job: Job | None = None
        self.files: list[Any] = []
        #: Ready files a stopped re-scan had not checked again (see library_data.changed_on_disk).
        self.not_checked: set[str] = set()
        #: What the last finished job did, kept in the summary line: the progress panel closes when a
        #: job finishes, and a re-scan that found nothing new otherwise showed no answer at all.
        self.done_note = ""
        self.last_summary: Any = None
        self._job_paths: list[str] = []
        self._refresh_again = False
        self._last_live_refresh = 0.0
        self._eta = EtaEstimator()
        #: The "did not finish last time" question belongs to start-up only: never after a
        #: Cancel in this session (the user knows; the banner offers to resume).
        self._startup_load = True
        self._shown_once = False
        self._scan_total = 0
        #: Seconds the last table fill took on the UI thread (spaces out live refreshes).
        self._fill_cost = 0.0

        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 18, 24, 18)
        lay.addWidget(headline_label("My library"))
        intro = QLabel("The footage you own. Every offer is checked against it. Add the folders where "
                       "your videos and recordings live; only fingerprints are stored, never the video.")
        intro.setWordWrap(True)
        lay.addWidget(intro)

        row = QHBoxLayout()
        self.add_button = QPushButton("Add folder…")
        self.add_button.setAccessibleName("Add folder to library")
        self.add_button.clicked.connect(self.choose_folder)
        self.rescan_button = QPushButton("Re-scan")
        self.rescan_button.setAccessibleName("Re-scan library folders")
        self.rescan_button.setToolTip("Look for new, changed and removed files in your library folders")
        self.rescan_button.clicked.connect(self.rescan)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setAccessibleName("Remove selected files from library")
        self.remove_button.setToolTip("Forget the selected files (the files on disk are not touched)")
        self.remove_button.clicked.connect(self.remove_selected)
        self.remove_folder_button = QPushButton("Remove folder…")
        self.remove_folder_button.setAccessibleName("Remove a folder from library")
        self.remove_folder_button.setToolTip("Forget every file of a folder at once (the files on disk are "
                                             "not touched)")
        self.folder_menu = QMenu(self.remove_folder_button)
        self.folder_menu.aboutToShow.connect(self._fill_folder_menu)
        self.remove_folder_button.setMenu(self.folder_menu)
        self.remove_job: Job | None = None
        for b in (self.add_button, self.rescan_button, self.remove_button, self.remove_folder_button):
            row.addWidget(b)
        row.addStretch(1)
        lay.addLayout(row)

        self._build_panels(lay)

        self.summary_label = QLabel("")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextFormat(Qt.TextFormat.PlainText)
        self.summary_label.setAccessibleName("Library summary")
        lay.addWidget(self.summary_label)

        self._build_table(lay)

        self.update_buttons()
        self.refresh()

    def _build_panels(self, lay: QVBoxLayout) -> None:
        """The resume banner and the indexing progress panel (both hidden until needed)."""
        # Resume banner: shown when an earlier indexing job did not finish.
        self.resume_frame = QFrame()
        self.resume_frame.setFrameShape(QFrame.Shape.StyledPanel)
        rl = QHBoxLayout(self.resume_frame)
        self.resume_label = QLabel()
        self.resume_label.setWordWrap(True)
        self.resume_button = QPushButton("Resume indexing")
        self.resume_button.setAccessibleName("Resume indexing")
        self.resume_button.clicked.connect(self.resume)
        rl.addWidget(self.resume_label, 1)
        rl.addWidget(self.resume_button)
        self.resume_frame.hide()
        lay.addWidget(self.resume_frame)

        # Offer to rebuild search shards an earlier version wrote (hidden unless there are any).
        self.shard_banner = ShardUpgradeBanner(self.state)
        self.shard_banner.rebuilt.connect(lambda _n: self.refresh())
        lay.addWidget(self.shard_banner)

        # Progress panel.
        self.progress_frame = QFrame()
        self.progress_frame.setFrameShape(QFrame.Shape.StyledPanel)
        pl = QVBoxLayout(self.progress_frame)
        self.overall_label = QLabel("Indexing…")
        self.overall_bar = QProgressBar()
        self.overall_bar.setAccessibleName("Overall indexing progress")
        self.file_label = QLabel("")
        self.file_label.setTextFormat(Qt.TextFormat.PlainText)  # file names and reasons, never markup
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.file_bar = QProgressBar()
        self.file_bar.setAccessibleName("Progress of the current file")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Cancel indexing")
        self.cancel_button.setToolTip("Stop indexing; files already finished are kept")
        self.cancel_button.clicked.connect(self.cancel_indexing)
        top = QHBoxLayout()
        top.addWidget(self.overall_label, 1)
        top.addWidget(self.cancel_button)
        pl.addLayout(top)
        pl.addWidget(self.overall_bar)
        pl.addWidget(self.file_label)
        pl.addWidget(self.file_bar)
        self.progress_frame.hide()
        lay.addWidget(self.progress_frame)
        self.rate_ask = FrameRateAsk()
        self.rate_ask.chosen.connect(self._rates_chosen)
        lay.addWidget(self.rate_ask)
        for label in (self.overall_label, self.file_label, self.resume_label):
            label.setTextFormat(Qt.TextFormat.PlainText)  # file names and error text

    def _build_table(self, lay: QVBoxLayout) -> None:
        """The file table, sorted A to Z by name."""
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Files in your library")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        # One line per file (rows with a problem sentence grow to fit it when filled).
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 10)
        # Problems can be long sentences: wrap them in their cell instead of cutting them off.
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        hh.setResizeContentsPrecision(RESIZE_SAMPLE_ROWS)
        # A to Z by name unless the user clicks another header (Qt's default indicator is Z to A).
        hh.setSortIndicator(0, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.itemSelectionChanged.connect(self.update_buttons)
        lay.addWidget(self.table, 1)

    def jobs(self) -> list[Job | None]:
        return [self.index_job, self.load_job, self.shard_banner.job, self.remove_job]

    def update_buttons(self) -> None:
        """Re-scan and Remove only when there is something to re-scan or remove; nothing while indexing."""
        busy = self.indexing or (self.remove_job is not None and self.remove_job.running)
        has_files = bool(self.files)
        self.add_button.setEnabled(not busy)
        self.rescan_button.setEnabled(not busy and (has_files or bool(self.state.library_folders())))
        self.remove_button.setEnabled(not busy and has_files and bool(self.selected_paths()))
        self.remove_folder_button.setEnabled(not busy and has_files)

    def showEvent(self, event: Any) -> None:
        # Coming back to the page shows what the library holds now (another window, the CLI
        # or a finished job may have changed it since).
        super().showEvent(event)
        if self._shown_once:
            self.refresh()
        self._shown_once = True

    @property
    def indexing(self) -> bool:
        return self.index_job is not None and self.index_job.running

    # ------------------------------------------------------------------ listing
    def refresh(self) -> Job | None:
        """Reload the file list in a worker; returns the job (``None`` if one is running)."""
        if self.load_job is not None and self.load_job.running:
            self._refresh_again = True
            return None
        try:
            config = self.state.config()
        except Exception as exc:
            self.summary_label.setText("Your settings have a problem: " + str(exc))
            return None
        # After a stopped job, say which ready files its re-scan had not checked again (a stat each,
        # in the worker).
        check_disk = not self.indexing and bool(self.state.unfinished_job())
        job = Job(load_library, self.state.index_path, config, check_disk, parent=self, with_progress=False)
        job.succeeded.connect(self._on_loaded)
        job.failed.connect(self._on_load_failed)
        job.finished.connect(self._after_load)
        self.load_job = job
        job.start()
        return job

    def _after_load(self) -> None:
        self.refreshed.emit()
        if self._refresh_again:
            self._refresh_again = False
            self.refresh()

    def _on_load_failed(self, exc: BaseException) -> None:
        self.summary_label.setText("Your library could not be read: " + str(exc))

    def _on_loaded(self, data: dict[str, Any]) -> None:
        self.files = data["files"]
        self.not_checked = set(data.get("not_checked", ()))
        self._fill_table(self.files)
        stats = data["stats"]
        self.stats_changed.emit(stats)
        self.shard_banner.update_from(stats, indexing=self.indexing)
        pending = [f for f in self.files if f.status == "pending"]
        unfinished = self.state.unfinished_job()
        text = summary_text(self.files, indexing=self.indexing, unfinished=bool(unfinished))
        if self.done_note and not self.indexing:
            text += " " + self.done_note
        self.summary_label.setText(text)
        self.update_buttons()
        startup, self._startup_load = self._startup_load, False
        if (pending or unfinished) and not self.indexing:
            left = self.files_left(unfinished, pending)
            self.resume_label.setText(resume_text(left, len(self.not_checked), startup=startup))
            self.resume_frame.show()
            self.progress_frame.hide()  # one panel: the banner replaces the stopped job's progress
            if startup and not self.state.resume_quiet():
                self.unfinished_found.emit(max(left, 1))
        else:
            self.resume_frame.hide()

    def files_left(self, job_paths: list[str], pending: list[Any]) -> int:
        """Files of the unfinished job not yet done: as the stopped job counted them, else found by
        its scan minus those the index holds."""
        counted = self.state.unfinished_left()
        if counted is not None:
            return max(counted, len(pending))
        total = self.state.unfinished_total()
        if not total:
            return len(pending)
        roots = [Path(p) for p in job_paths]

        def in_job(path: str) -> bool:
            p = Path(path)
            return any(p == r or r in p.parents for r in roots)

        done = sum(1 for f in self.files if f.status != "pending" and in_job(f.path))
        return max(total - done, len(pending))

    def _fill_table(self, files: list[Any]) -> None:
        started = time.perf_counter()
        self.table.setUpdatesEnabled(False)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(files))
        for r, f in enumerate(files):
            folder, base = os.path.split(f.path)
            name = _item(base, tip=f.path)
            name.setData(Qt.ItemDataRole.UserRole, f.path)  # the full path, for "Remove"
            self.table.setItem(r, 0, name)
            self.table.setItem(r, 1, _item(folder, tip=folder))
            self.table.setItem(r, 2, _item(fmt_hours(f.duration_s) if f.duration_s else "–"))
            words, tip = status_cell(f.status, f.path, self.not_checked)
            self.table.setItem(r, 3, _item(words, tip=tip))
            indet = f.indeterminate_s or 0.0
            self.table.setItem(r, 4, _item(fmt_hours(indet) if indet > 0.5 else "–", tip=INDET_TIP))
            problem = plain_problem(f.error) if f.error else ""
            tip = (problem + "\n\nDetails: " + f.error) if f.error else ""
            self.table.setItem(r, 5, _item(problem, tip=tip))
        self.table.setSortingEnabled(True)
        # Widths from at most RESIZE_SAMPLE_ROWS rows (set on the header): measuring every cell
        # of a big library was the slow part of a refresh.
        self.table.resizeColumnsToContents()
        for c in (0, 1):
            if self.table.columnWidth(c) > 320:
                self.table.setColumnWidth(c, 320)
        # Only a row with a problem sentence wraps onto more lines.
        for r in range(self.table.rowCount()):
            cell = self.table.item(r, 5)
            if cell is not None and cell.text():
                self.table.resizeRowToContents(r)
        self.table.setUpdatesEnabled(True)
        self._fill_cost = time.perf_counter() - started

    def selected_paths(self) -> list[str]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        items = [self.table.item(r, 0) for r in rows]
        return [str(it.data(Qt.ItemDataRole.UserRole)) for it in items if it is not None]

    # ------------------------------------------------------------------ indexing
    def choose_folder(self) -> None:
        kept = self.state.library_folders()  # beside the last folder added, else home
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of footage to your library",
                                                  start_folder(Path(kept[-1]).parent if kept else None))
        if folder:
            self.add_folders([folder])

    def add_folders(self, folders: list[str]) -> Job | None:
        """Remember ``folders`` as library folders and index them."""
        self.state.add_library_folders(folders)
        return self.start_indexing(folders)

    def rescan(self) -> Job | None:
        """Index every library folder again (new and changed files; removed files are forgotten)."""
        folders = self.state.library_folders()
        if not folders:
            folders = sorted({str(Path(f.path).parent) for f in self.files})
        if not folders:
            self.summary_label.setText("Nothing to re-scan yet: add a folder first.")
            return None
        return self.start_indexing(folders, forget_missing=True)

    def resume(self) -> Job | None:
        """Continue an unfinished job: its folders plus files the index marks as not finished."""
        paths = list(self.state.unfinished_job())
        paths += [f.path for f in self.files if f.status == "pending" and f.path not in paths]
        if not paths:
            self.resume_frame.hide()
            return None
        return self.start_indexing(paths)

    def start_indexing(self, paths: list[str], *, forget_missing: bool = False) -> Job | None:
        """Index ``paths`` in a worker thread with progress and cancel."""
        if self.indexing:
            self.summary_label.setText("Indexing is already running; wait for it or cancel it first.")
            return None
        try:
            config = self.state.config()
        except Exception as exc:
            show_error(self, "Your settings have a problem", exc)
            return None
        self._job_paths = [str(p) for p in paths]
        # Written before starting, cleared on success: a crash or quit leaves it for "Resume".
        self.state.set_unfinished_job(self._job_paths)
        self.state.set_unfinished_left(None)
        self.state.set_resume_quiet(False)  # a crash in this job is asked about at the next start
        self.rate_ask.hide()
        rates = self.state.folder_frame_rates()  # given for robot datasets that store none
        run, extra = (api.index_with_frame_rates, (rates,)) if rates else (api.index_paths, ())
        job = Job(run, [Path(p) for p in paths], *extra, parent=self, index=self.state.index_path, config=config,
                  forget_missing=forget_missing)
        job.progress.connect(self._on_progress)
        job.succeeded.connect(self._on_indexed)
        job.cancelled.connect(self._on_cancelled)
        job.failed.connect(self._on_failed)
        job.finished.connect(self._on_job_finished)
        self.index_job = job
        self._eta = EtaEstimator()
        self._scan_total = 0
        self.state.set_unfinished_total(None)
        self.resume_frame.hide()
        self.progress_frame.show()
        self.overall_label.setText("Looking for footage…")
        if not any(f.status == "ok" for f in self.files):
            # Never "Your library is empty" under a running progress bar.
            self.summary_label.setText(INDEXING_TEXT)
        self.overall_bar.setRange(0, 0)
        self.file_bar.setRange(0, 100)
        self.file_bar.setValue(0)
        self.file_label.setText("")
        self.cancel_button.setEnabled(True)
        self.last_summary = None
        self.done_note = ""
        job.start()
        self.update_buttons()
        return job

    def cancel_indexing(self) -> None:
        if self.index_job is not None:
            self.index_job.cancel()
            self.cancel_button.setEnabled(False)
            self.overall_label.setText("Cancelling… (finished files are kept)")

    def _on_progress(self, p: Any) -> None:
        if p.stage == "scan" and p.unit == "files" and p.total:
            # How many files this job covers: "N files left" after a stop is counted from it.
            self._scan_total = int(p.total)
            self.state.set_unfinished_total(self._scan_total)
        fraction: float | None = None
        if p.total:
            fraction = max(0.0, min(1.0, float(p.done) / float(p.total)))
            self.overall_bar.setRange(0, 1000)
            self.overall_bar.setValue(int(fraction * 1000))
        else:
            self.overall_bar.setRange(0, 0)
        if p.stage == "seal":
            # After the files: the fingerprints are stored; the search index is built from them.
            self.overall_label.setText("Building the search index from the new fingerprints…")
            msg = p.message or ""
            self.file_label.setText(msg[:1].upper() + msg[1:])
            self.file_bar.setRange(0, 0)
            return
        if p.unit == "files" and p.total:
            what = f"Indexing file {min(int(p.done) + 1, int(p.total))} of {int(p.total)}"
        elif p.unit == "bytes" and p.total:
            n = self._scan_total
            files = f" {count_of(n, 'file')}" if n else ""
            what = f"Indexing{files}: {fmt_size(p.done)} of {fmt_size(p.total)} read"
        else:
            what = "Indexing…"
        eta = self._eta.update(fraction) if p.stage != "scan" else ""
        self.overall_label.setText(what + (f" — {eta}" if eta else ""))
        # Show finished files as they come, without re-reading the list more than every 2 s (on any
        # progress: the one that says a file finished may be thinned out by the job's throttle).
        if p.stage != "scan" and time.monotonic() - self._last_live_refresh > max(LIVE_REFRESH_S,
                                                                         LIVE_REFRESH_SHARE * self._fill_cost):
            self._last_live_refresh = time.monotonic()
            self.refresh()
        if p.current:
            name = Path(p.current).name
            self.file_label.setText("Now reading: " + name + (f" — {p.message}" if p.message else ""))
            self.file_label.setToolTip(str(p.current))
        elif p.message:
            self.file_label.setText(p.message)
        if p.current_done is not None:
            self.file_bar.setRange(0, 100)
            self.file_bar.setValue(int(max(0.0, min(1.0, p.current_done)) * 100))

    def _on_indexed(self, summary: Any) -> None:
        self.last_summary = summary
        self.state.set_unfinished_job(None)
        self.state.set_unfinished_total(None)
        failed = list(getattr(summary, "failed", []) or [])
        text = (f"Done: {count_of(summary.indexed, 'file')} indexed "
                f"({fmt_hours(summary.hours_indexed * 3600.0)}), {summary.skipped} unchanged.")
        if failed:
            text += f" {len(failed)} could not be read — see the Problem column."
        for w in list(getattr(summary, "warnings", []) or [])[:3]:
            text += " " + str(w)
        self.overall_label.setText(text)
        self.overall_label.setWordWrap(True)
        self.done_note = done_words(summary)
        self.rate_ask.show_needs(api.frame_rate_needs(failed, self._job_paths), self.state.folder_frame_rates())
        self.indexing_finished.emit(summary)

    def _rates_chosen(self, rates: dict[str, float]) -> None:
        self.state.set_folder_frame_rates(rates)
        job = self.index_job
        if job is not None and job.running:  # the run that asked is still closing its thread
            job.finished.connect(lambda: self.start_indexing(list(rates)))
            return
        self.start_indexing(list(rates))

    def _on_cancelled(self, exc: BaseException) -> None:
        self.overall_label.setText("Indexing stopped. Files already finished are kept; "
                                   "click \"Resume indexing\" to do the rest.")
        summary = getattr(exc, "summary", None)
        seen = int(getattr(summary, "files_seen", 0) or 0)
        if seen:
            # The job's own count: a file being read when it stopped is still to do, and files
            # a re-scan had not checked yet are too, although the library lists them as ready.
            done = summary.indexed + summary.skipped + len(summary.failed)  # type: ignore[union-attr]
            self.state.set_unfinished_left(max(0, seen - done))
        self.state.set_resume_quiet(True)  # stopped on purpose: no "did not finish last time" question
        self.progress_frame.hide()
        self.resume_label.setText("Indexing was stopped. Files already finished are kept; resume to do "
                                  "the rest.")
        self.resume_frame.show()
        self.indexing_finished.emit(None)

    def _on_failed(self, exc: BaseException) -> None:
        self.overall_label.setText("Indexing stopped because of a problem.")
        show_error(self, "Indexing stopped", exc)
        self.indexing_finished.emit(None)

    def _on_job_finished(self) -> None:
        self.cancel_button.setEnabled(False)
        self.update_buttons()
        if self.last_summary is not None and not self.state.unfinished_job():
            self.progress_frame.hide()
        self.refresh()

    # ------------------------------------------------------------------ removing
    def _confirm_remove(self, title: str, text: str, paths: list[str], folders: list[str]) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Question, title, text,
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # folder names as they are on disk
        box.setDefaultButton(QMessageBox.StandardButton.No)  # forgetting hours of indexing needs a deliberate Yes
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda r: self.remove_paths(paths, folders=folders)
                             if r == QMessageBox.StandardButton.Yes else None)
        box.open()
        return box

    def remove_selected(self) -> QMessageBox | None:
        """Forget the selected files after confirmation (files on disk are untouched)."""
        paths = self.selected_paths()
        if not paths:
            self.summary_label.setText("Select the files to remove first.")
            return None
        return self._confirm_remove(
            "Remove from library?",
            f"Forget {count_of(len(paths), 'file')} from your library? Offers will no longer "
            "be checked against them. The files on disk are not touched.", paths, [])

    def folders(self) -> list[str]:
        """Folders whose files can be removed at once: the ones added, and those holding files."""
        out = list(self.state.library_folders())
        for f in self.files:
            parent = str(Path(f.path).parent)
            if parent not in out and not any(Path(parent).is_relative_to(o) for o in out):
                out.append(parent)
        return sorted(out)

    def _fill_folder_menu(self) -> None:
        self.folder_menu.clear()
        for folder in self.folders():
            act = self.folder_menu.addAction(folder)
            act.triggered.connect(lambda _=False, f=folder: self.remove_folder(f))

    def remove_folder(self, folder: str) -> QMessageBox:
        """Forget every file at or under ``folder`` after confirmation, and stop re-scanning it."""
        n = sum(1 for f in self.files if Path(f.path) == Path(folder) or Path(folder) in Path(f.path).parents)
        return self._confirm_remove(
            "Remove this folder from your library?",
            f"Forget the {count_of(n, 'file')} in\n\n{folder}\n\nfrom your library? Offers will no "
            "longer be checked against them and Re-scan leaves the folder alone. The files on disk are not "
            "touched.", [], [folder])

    def remove_paths(self, paths: list[str], *, folders: Sequence[str] = ()) -> Job | None:
        """Forget ``paths`` and the files under ``folders`` in the index, in a worker."""
        try:
            config = self.state.config()
        except Exception as exc:
            show_error(self, "Your settings have a problem", exc)
            return None
        folders = list(folders)
        job = Job(forget_files, self.state.index_path, config, list(paths), folders, parent=self,
                  with_progress=False)
        job.failed.connect(lambda exc: show_error(self, "Could not remove the files", exc))
        # Re-scan must not bring them back: the folders (and folders inside them) stop being library folders.
        gone = [Path(p).resolve() for p in list(paths) + folders]
        for kept in self.state.library_folders():
            if any(Path(kept) == g or g in Path(kept).parents for g in gone):
                self.state.remove_library_folder(kept)
        job.finished.connect(self.refresh)
        job.finished.connect(self.update_buttons)
        self.remove_job = job
        job.start()
        self.update_buttons()
        return job
