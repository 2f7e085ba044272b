"""Building blocks shared by the wizards: a folder list page and a page that runs a job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from overlap_desktop.gui.common import error_text, show_error, start_folder
from overlap_desktop.gui.workers import EtaEstimator, Job

__all__ = ["FolderListPage", "RunPage"]


class FolderListPage(QWizardPage):
    """Pick one or more folders; complete when at least one is listed."""

    def __init__(self, title: str, subtitle: str, parent: Any = None) -> None:
        super().__init__(parent)
        self.setTitle(title)
        self.setSubTitle(subtitle)
        lay = self.lay = QVBoxLayout(self)
        # The buttons above the list: text that grows below it never moves them.
        row = QHBoxLayout()
        self.add_button = QPushButton("Add folder…")
        self.add_button.setAccessibleName("Add folder")
        self.add_button.clicked.connect(self._choose)
        rem = QPushButton("Remove")
        rem.setAccessibleName("Remove folder from list")
        rem.clicked.connect(self.remove_selected)
        row.addWidget(self.add_button)
        row.addWidget(rem)
        row.addStretch(1)
        lay.addLayout(row)
        self.list = QListWidget()
        self.list.setAccessibleName("Chosen folders")
        lay.addWidget(self.list, 1)

    def _choose(self) -> None:
        chosen = self.folders()
        d = QFileDialog.getExistingDirectory(self, "Choose a folder of footage",
                                             start_folder(Path(chosen[-1]).parent if chosen else None))
        if d:
            self.add_folder(d)

    def add_folder(self, folder: str | Path) -> None:
        """Add ``folder`` to the list (ignored if already there)."""
        f = str(Path(folder).resolve())
        if f not in self.folders():
            item = QListWidgetItem(f)
            item.setData(Qt.ItemDataRole.UserRole, f)
            self.list.addItem(item)
            self.completeChanged.emit()

    def remove_selected(self) -> None:
        """Take the selected folders off the list."""
        for it in self.list.selectedItems():
            self.list.takeItem(self.list.row(it))
        self.completeChanged.emit()

    def folders(self) -> list[str]:
        """The chosen folders (an item's text can carry a note after the path; its data is the path)."""
        return [str(self.list.item(i).data(Qt.ItemDataRole.UserRole) or self.list.item(i).text())
                for i in range(self.list.count())]

    def isComplete(self) -> bool:
        return self.list.count() > 0


class RunPage(QWizardPage):
    """Runs one job when shown; complete when the job succeeded.

    Subclasses implement :meth:`make_job` and :meth:`on_result`.

    Signals:
        done(object): the job's result (UI thread).
        error(str): the job failed (the message shown).
    """

    done = Signal(object)
    error = Signal(str)

    def __init__(self, title: str, subtitle: str, parent: Any = None) -> None:
        super().__init__(parent)
        self.setTitle(title)
        self.setSubTitle(subtitle)
        self.job: Job | None = None
        self.result: Any = None
        self._ok = False
        self._eta = EtaEstimator()
        self.lay = QVBoxLayout(self)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Status")
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Progress")
        self.current = QLabel("")
        self.current.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.bar, 1)
        self.cancel_button = QPushButton("Stop")
        self.cancel_button.setAccessibleName("Stop")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)
        # After a stop or a problem: carry on from here (finished work is kept), no Back/Next dance.
        self.continue_button = QPushButton("Continue")
        self.continue_button.setAccessibleName("Continue")
        self.continue_button.setToolTip("Carry on where it stopped; finished work is kept")
        self.continue_button.clicked.connect(self.start)
        self.continue_button.hide()
        row.addWidget(self.continue_button)
        for label in (self.status, self.current):
            label.setTextFormat(Qt.TextFormat.PlainText)  # file names and error text
        self.lay.addWidget(self.status)
        self.lay.addLayout(row)
        self.lay.addWidget(self.current)
        # Spare height goes below the page's content, so a short result sits under the progress
        # row rather than floating mid-page (subclasses add their widgets with add_body).
        self.lay.addStretch(1)

    def add_body(self, widget: QWidget, stretch: int = 0) -> None:
        """Add ``widget`` below the progress row, above the spare height.

        A widget with a stretch (a table) takes the spare height itself while it is shown.
        """
        end = self.lay.count() - 1
        self.lay.insertWidget(end, widget, stretch)
        if stretch:
            self.lay.setStretch(end + 1, 0)

    # subclass hooks
    def make_job(self) -> Job:
        raise NotImplementedError

    def on_result(self, result: Any) -> None:
        """Show the result (subclasses)."""

    def running_text(self) -> str:
        return "Working…"

    def initializePage(self) -> None:
        self.start()

    def cleanupPage(self) -> None:
        self.cancel()

    def start(self) -> Job | None:
        if self.job is not None and self.job.running:
            return self.job
        self._ok = False
        self.result = None
        self.completeChanged.emit()
        try:
            job = self.make_job()
        except Exception as exc:
            self._failed(exc)
            return None
        job.progress.connect(self._on_progress)
        job.succeeded.connect(self._succeeded)
        job.failed.connect(self._failed)
        job.cancelled.connect(self._cancelled)
        job.finished.connect(lambda: self.cancel_button.setEnabled(False))
        self.job = job
        self._eta = EtaEstimator()
        self.continue_button.hide()
        self.status.setText(self.running_text())
        self.bar.setRange(0, 0)
        self.bar.show()
        self.cancel_button.setEnabled(True)
        self.cancel_button.show()
        job.start()
        return job

    def cancel(self) -> None:
        if self.job is not None and self.job.running:
            self.job.cancel()

    def _on_progress(self, p: Any) -> None:
        frac = None
        if p.total:
            frac = max(0.0, min(1.0, float(p.done) / float(p.total)))
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(frac * 1000))
        eta = self._eta.update(frac)
        text = self.running_text()
        if p.unit == "files" and p.total:
            text += f" file {min(int(p.done) + 1, int(p.total))} of {int(p.total)}"
        if eta:
            text += f" — {eta}"
        self.status.setText(text)
        if p.current:
            self.current.setText(Path(str(p.current)).name + (f" — {p.message}" if p.message else ""))
        elif p.message:
            self.current.setText(p.message)

    def _succeeded(self, result: Any) -> None:
        self.result = result
        self._ok = True
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.cancel_button.hide()
        self.current.setText("")
        self.on_result(result)
        self.completeChanged.emit()
        self.done.emit(result)

    def _failed(self, exc: BaseException) -> None:
        self.bar.hide()
        self.cancel_button.hide()
        wiz = self.wizard()
        if wiz is not None and self.isFinalPage():
            # The last page hides Back once it succeeded; after a problem the way back is needed.
            wiz.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, False)
        self.status.setText("Stopped because of a problem: " + error_text(exc)[0]
                            + "\nClick Back to change your choices, or Continue to try again.")
        self.continue_button.show()
        show_error(self, self.title() or "A problem", exc)
        self.error.emit(error_text(exc)[0])

    def _cancelled(self, _exc: BaseException) -> None:
        self.bar.hide()
        self.status.setText("Stopped. Finished work was kept: click Continue to carry on from here.")
        self.continue_button.setText("Continue")
        self.continue_button.show()

    def isComplete(self) -> bool:
        return self._ok
