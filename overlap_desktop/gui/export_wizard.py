"""Vendor wizard: folders → fingerprint → internal duplicates → options → save the manifest.

The offered footage is fingerprinted into a workspace of its own (``api.vendor_workspace``:
one index per offer in the user data folder, named after the offer), never into the
lab's library: a library holding the offer would later screen it as "already owned".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
    QWizard,
    QWizardPage,
)

from overlap_desktop import api
from overlap_desktop.gui.common import SealField, compact_rows, fit_to_screen, fmt_hours, fmt_size, open_local_file
from overlap_desktop.gui.signing import SigningBlock
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.wizard_pages import FolderListPage, RunPage
from overlap_desktop.gui.workers import Job
from overlap_desktop.gui.workspaces_dialog import WorkspacesDialog, workspaces_summary

__all__ = ["ExportWizard", "run_self_dedupe"]

PAGE_FOLDERS, PAGE_FINGERPRINT, PAGE_DEDUPE, PAGE_OPTIONS, PAGE_SAVE = range(5)


def run_self_dedupe(index_path: Path, folders: list[str], config: Any, *, progress: Any = None,
                    cancel: Any = None) -> Any:
    """``api.self_dedupe`` restricted to the chosen folders (runs in a worker thread)."""
    return api.self_dedupe(index_path, config=config, paths=[Path(f) for f in folders],
                           progress=progress, cancel=cancel)


class _OfferFoldersPage(FolderListPage):
    """The offered folders and the offer's name (which names its private workspace)."""

    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Which footage are you offering?",
                         "Choose the folders that hold the offer. Videos, ROS bags, MCAP recordings, "
                         "LeRobot datasets and image folders are recognised.")
        self.wiz = wizard
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Name of this offer")
        self.name.setPlaceholderText("e.g. Q3 kitchen teleoperation")
        self.name.textChanged.connect(self._name_changed)
        form.addRow("Name of this offer:", self.name)
        self.lay.insertLayout(0, form)
        self.where = QLabel("")
        self.where.setWordWrap(True)
        self.where.setTextFormat(Qt.TextFormat.PlainText)  # a path
        self.where.setAccessibleName("Where the fingerprints are kept")
        self.lay.addWidget(self.where)
        earlier = QHBoxLayout()
        self.earlier = QLabel("")
        self.earlier.setWordWrap(True)
        self.earlier.setAccessibleName("Earlier offers on this computer")
        self.manage = QPushButton("Manage earlier offers…")
        self.manage.setAccessibleName("Manage earlier offers' fingerprints")
        self.manage.clicked.connect(self.manage_workspaces)
        earlier.addWidget(self.earlier, 1)
        earlier.addWidget(self.manage)
        self.lay.addLayout(earlier)
        self._name_changed()
        self.refresh_earlier()

    def add_folder(self, folder: str | Path) -> None:
        super().add_folder(folder)
        if not self.name.text().strip() and self.folders():
            self.name.setText(Path(self.folders()[0]).name)

    def offer_name(self) -> str:
        return self.name.text().strip()

    def _name_changed(self) -> None:
        name = self.offer_name()
        if name:
            self.where.setText("Fingerprints of this offer are kept in its own workspace, "
                               f"{self.wiz.workspace_for(name)}. Your library is not touched.")
        else:
            self.where.setText("Give the offer a name: its fingerprints are kept in a workspace of their "
                               "own, "
                               "never in your library.")
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        return super().isComplete() and bool(self.offer_name())

    def refresh_earlier(self) -> None:
        """Say how much earlier offers' workspaces keep (hidden when there are none)."""
        text = workspaces_summary(api.list_vendor_workspaces())
        self.earlier.setText(text)
        self.earlier.setVisible(bool(text))
        self.manage.setVisible(bool(text))

    def manage_workspaces(self) -> WorkspacesDialog:
        """Open the list of earlier offers' workspaces (modal to the wizard, no nested loop)."""
        current = self.wiz.workspace() if self.offer_name() else None
        dialog = WorkspacesDialog(self, current=current)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _r: self.refresh_earlier())
        dialog.open()
        return dialog


class _FingerprintPage(RunPage):
    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Fingerprinting your footage",
                         "Each video is read once and summarised as small fingerprints. Files already "
                         "fingerprinted and unchanged are skipped.")
        self.wiz = wizard

    def running_text(self) -> str:
        return "Fingerprinting…"

    def make_job(self) -> Job:
        return Job(api.index_paths, [Path(f) for f in self.wiz.folders()], parent=self,
                   index=self.wiz.workspace(), config=self.wiz.config)

    def on_result(self, s: Any) -> None:
        text = (f"Done: {s.files_seen} files found, {s.indexed} fingerprinted, {s.skipped} already up to "
                f"date ({fmt_hours(s.hours_indexed * 3600.0)} of footage).")
        if s.failed:
            names = "; ".join(f"{Path(str(p)).name}: {why}" for p, why in list(s.failed)[:5])
            text += (f"\n{len(s.failed)} file{'s' if len(s.failed) != 1 else ''} could not be read and "
                     f"will not be in the manifest: {names}")
        self.status.setText(text)


class _DedupePage(RunPage):
    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Checking for internal duplicates",
                         "Footage that appears twice in your own offer (copied, slowed down, mirrored) "
                         "would be billed twice. Review it before quoting.")
        self.wiz = wizard
        self.dupes = QTableWidget(0, 5)
        self.dupes.setAccessibleName("Internal duplicates")
        self.dupes.setHorizontalHeaderLabels(["File", "At", "Repeats footage of", "At", "Changes"])
        compact_rows(self.dupes)
        self.dupes.verticalHeader().setVisible(False)
        self.dupes.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.dupes.horizontalHeader().setStretchLastSection(True)
        self.lay.addWidget(self.dupes, 1)
        self.duplicates = 0

    def running_text(self) -> str:
        return "Looking for footage that appears more than once…"

    def make_job(self) -> Job:
        self.dupes.setRowCount(0)
        return Job(run_self_dedupe, self.wiz.workspace(), self.wiz.folders(), self.wiz.config,
                   parent=self)

    def _short(self, path: str) -> str:
        # Names relative to the chosen folder are what the vendor recognises.
        for folder in self.wiz.folders():
            try:
                return api.safe_text(Path(path).relative_to(folder).as_posix())
            except ValueError:
                continue
        return api.safe_text(path)

    def on_result(self, report: Any) -> None:
        rows: list[tuple[str, ...]] = []
        for f in report.files:
            for s in f.segments:
                changes = [s.variant.describe()] if s.variant.describe() else []
                speed = api.speed_words(s)
                if speed:
                    changes.insert(0, speed)
                rows.append((self._short(f.query_file),
                             f"{api.format_clock(s.query_start)}–{api.format_clock(s.query_end)}",
                             self._short(s.corpus_file),
                             f"{api.format_clock(s.corpus_start)}–{api.format_clock(s.corpus_end)}",
                             ", ".join(changes) or "identical copy"))
        self.duplicates = len(rows)
        self.dupes.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                it = QTableWidgetItem(text)
                it.setToolTip(text)
                self.dupes.setItem(r, c, it)
        self.dupes.resizeColumnsToContents()
        self.dupes.setVisible(bool(rows))
        if rows:
            # The core's self-dedupe headline speaks of "this library"; here it is the offer.
            share = (f"{api.format_percent(report.overlap_percent)} of this offer's footage "
                     f"({fmt_hours(report.matched_seconds)} of {fmt_hours(report.offered_seconds)}) repeats "
                     "other footage in the same offer.")
            self.status.setText(f"{len(rows)} internal duplicate{'s' if len(rows) != 1 else ''} — review "
                                f"before quoting. {share}")
        else:
            self.status.setText("No internal duplicates: no footage appears twice in this offer.")


class _OptionsPage(QWizardPage):
    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__()
        self.wiz = wizard
        self.setTitle("What goes into the manifest")
        self.setSubTitle("The buyer sees the label and, unless you hide them, the file names.")
        form = QFormLayout(self)
        self.label = QLineEdit()
        self.label.setAccessibleName("Label")
        self.label.setPlaceholderText("e.g. Q3 kitchen teleoperation")
        self.label.textChanged.connect(self.completeChanged)
        form.addRow("Label:", self.label)
        self.anonymize = QCheckBox("Hide file and folder names (replace them by numbers)")
        self.anonymize.setAccessibleName("Hide file names")
        form.addRow("", self.anonymize)
        self.fps = QDoubleSpinBox()
        self.fps.setAccessibleName("Fingerprints per second")
        self.fps.setRange(0.1, 10.0)
        self.fps.setDecimals(1)
        self.fps.setSingleStep(0.5)
        self.fps.setSuffix(" per second")
        self.fps.setToolTip("More fingerprints per second make a bigger manifest and a more precise "
                            "comparison. 1 per second is plenty for most offers.")
        form.addRow("Fingerprints kept:", self.fps)
        row = QHBoxLayout()
        self.out = QLineEdit()
        self.out.setAccessibleName("Save manifest as")
        self.out.textChanged.connect(self.completeChanged)
        browse = QPushButton("Browse…")
        browse.setAccessibleName("Choose where to save the manifest")
        browse.clicked.connect(self._browse)
        row.addWidget(self.out, 1)
        row.addWidget(browse)
        w = QWidget()
        w.setLayout(row)
        row.setContentsMargins(0, 0, 0, 0)
        form.addRow("Save as:", w)
        # Issue 37: signed by the vendor's key (made here if there is none yet).
        self.signing = SigningBlock()
        form.addRow("Signature:", self.signing)

    def initializePage(self) -> None:
        self.signing.refresh()
        c = self.wiz.config
        folders = self.wiz.folders()
        name = self.wiz.folders_page.offer_name()
        if not self.label.text() and (name or folders):
            self.label.setText(name or Path(folders[0]).name)
        self.anonymize.setChecked(bool(c["export.anonymize_paths"]))
        self.fps.setValue(float(c["export.fps"]))
        if not self.out.text():
            self.out.setText(str(api.documents_dir() / api.file_name_for(self.label.text(), ".ovlm",
                                                                         fallback="offer")))

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the manifest", self.out.text(),
                                              "Manifests (*.ovlm)")
        if path:
            self.out.setText(path if path.lower().endswith(".ovlm") else path + ".ovlm")

    def out_path(self) -> Path:
        p = Path(self.out.text().strip()).expanduser()
        return p if p.suffix.lower() == ".ovlm" else p.with_name(p.name + ".ovlm")

    def isComplete(self) -> bool:
        return bool(self.label.text().strip()) and bool(self.out.text().strip())


class _SavePage(RunPage):
    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Saving the manifest", "")
        self.wiz = wizard
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Manifest summary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.lay.addWidget(self.summary)
        self.seal_label = QLabel("<b>Quote this seal in your offer</b>: the buyer's copy must show the same "
                                 "one, and the delivery can later be verified against it.")
        self.seal_label.setWordWrap(True)
        self.seal_label.hide()
        self.lay.addWidget(self.seal_label)
        self.seal = SealField()
        self.seal.hide()
        self.lay.addWidget(self.seal)
        self.contains = QLabel(
            "<b>The manifest contains</b> fingerprints (32 bytes per sampled frame), file names (unless "
            "hidden), sizes, checksums and the seal that binds them.<br><b>It does not contain</b> any "
            "video, pictures or audio. Fingerprints still reveal coarse visual structure: treat the "
            "manifest as a confidential business document.")
        self.contains.setWordWrap(True)
        self.lay.addWidget(self.contains)
        self.show_button = QPushButton("Show in folder")
        self.show_button.setAccessibleName("Show the manifest in its folder")
        self.show_button.clicked.connect(lambda: open_local_file(self.wiz.options_page.out_path().parent))
        self.show_button.hide()
        self.lay.addWidget(self.show_button)
        self.lay.addStretch(1)
        self.setFinalPage(True)

    def running_text(self) -> str:
        return "Writing the manifest…"

    def make_job(self) -> Job:
        o = self.wiz.options_page
        out = o.out_path()
        out.parent.mkdir(parents=True, exist_ok=True)
        return Job(api.export_manifest, self.wiz.workspace(), out, parent=self,
                   paths=[Path(f) for f in self.wiz.folders()], label=o.label.text().strip(),
                   anonymize=o.anonymize.isChecked(), fps=float(o.fps.value()), created=True,
                   **o.signing.export_arguments())

    def on_result(self, s: Any) -> None:
        self.setSubTitle("Send this file to the buyer. They can check it against their own library "
                         "without receiving any footage.")
        self.status.setText(f"Saved {s.path}")
        self.summary.setText(
            f"{s.files} files, {fmt_hours(s.hours * 3600.0)} of footage; manifest size {fmt_size(s.bytes)}."
            + (f"\nSigned by {api.safe_text(s.signed_by)}, key {s.key_fingerprint}." if s.signed_by else
               "\nNot signed."))
        self.seal.set_seal(str(s.root))
        self.seal_label.show()
        self.seal.show()
        self.show_button.show()


class ExportWizard(QWizard):
    """Prepare a manifest for a buyer, step by step.

    Args:
        state: Shared configuration (its library is never written: each offer has its own workspace).
    """

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.config = state.config()
        self.setWindowTitle("Prepare a manifest for a buyer")
        self.setAccessibleName("Prepare a manifest for a buyer")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, True)
        self.folders_page = _OfferFoldersPage(self)
        self.fingerprint = _FingerprintPage(self)
        self.dedupe = _DedupePage(self)
        self.options_page = _OptionsPage(self)
        self.save = _SavePage(self)
        pages: tuple[tuple[int, QWizardPage], ...] = (
            (PAGE_FOLDERS, self.folders_page), (PAGE_FINGERPRINT, self.fingerprint), (PAGE_DEDUPE, self.dedupe),
            (PAGE_OPTIONS, self.options_page), (PAGE_SAVE, self.save))
        for pid, page in pages:
            self.setPage(pid, page)
        self.setStartId(PAGE_FOLDERS)
        fit_to_screen(self, (760, 600))

    def folders(self) -> list[str]:
        return self.folders_page.folders()

    def workspace_for(self, name: str) -> Path:
        """The private index for the offer called ``name`` (never the library)."""
        return api.vendor_workspace(name, library=self.state.index_path)

    def workspace(self) -> Path:
        """The private index of the offer being prepared."""
        return self.workspace_for(self.folders_page.offer_name())

    def jobs(self) -> list[Job | None]:
        return [self.fingerprint.job, self.dedupe.job, self.save.job]

    def reject(self) -> None:
        for j in self.jobs():
            if j is not None and j.running:
                j.cancel()
        super().reject()
