"""Vendor wizard: folders → fingerprint → internal duplicates → options → save the manifest.

The offered footage is fingerprinted into a workspace of its own (``api.vendor_workspace``:
one index per offer in the user data folder, named after the offer), never into the
lab's library: a library holding the offer would later screen it as "already owned".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
    QWizard,
    QWizardPage,
)

from overlap_desktop import api
from overlap_desktop.gui.common import (
    SealField,
    compact_rows,
    count_of,
    error_text,
    fit_to_screen,
    fmt_hours,
    fmt_size,
    open_local_file,
)
from overlap_desktop.gui.frame_rate_ask import FrameRateAsk, LeftOutBlock
from overlap_desktop.gui.signing import SigningBlock
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.wizard_pages import FolderListPage, RunPage
from overlap_desktop.gui.workers import Job
from overlap_desktop.gui.workspaces_dialog import WorkspacesDialog, workspaces_summary

__all__ = ["ExportWizard", "fingerprint_offer", "run_self_dedupe", "save_offer"]

PAGE_FOLDERS, PAGE_FINGERPRINT, PAGE_DEDUPE, PAGE_OPTIONS, PAGE_SAVE = range(5)


def run_self_dedupe(index_path: Path, folders: list[str], config: Any, *, progress: Any = None,
                    cancel: Any = None) -> Any:
    """``(report, reused)``: the duplicate check of the chosen folders, or its saved answer when
    nothing changed since (runs in a worker thread)."""
    return api.self_dedupe_reused(index_path, folders, config, progress=progress, cancel=cancel)


def fingerprint_offer(folders: list[str], workspace: Path, label: str, config: Any, *, progress: Any = None,
                      cancel: Any = None, rates: dict[str, float] | None = None) -> Any:
    """Fingerprint the offer into its workspace (worker thread), noting the offer's name there.

    A workspace this run created for folders holding no footage at all is removed again: nothing
    of an offer that cannot be made is left behind.
    """
    existed = workspace.exists()
    api.note_vendor_workspace(workspace, label=label, finished=False)
    # ``rates``: the frame rate given per folder for robot datasets that store none.
    summary = api.index_with_frame_rates(folders, rates or {}, index=workspace, config=config, progress=progress,
                                         cancel=cancel)
    if summary.files_seen == 0 and not existed:
        api.remove_vendor_workspace(workspace)
    return summary


def check_folder(folder: str) -> tuple[bool, str]:
    """Whether ``folder`` holds footage and, when not, what it holds (worker thread)."""
    has = api.folder_has_footage(folder)
    return has, "" if has else api.folder_contents_words(folder)


def save_offer(workspace: Path, out: Path, label: str, **options: Any) -> Any:
    """Write the manifest (worker thread) and note in the workspace that the offer is finished."""
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = api.export_manifest(workspace, out, label=label, **options)
    api.note_vendor_workspace(workspace, label=label, finished=True, manifest=out)
    return summary


#: What the folder page says it recognises (the built-in readers, in words a seller uses).
_RECOGNISED = ("Videos, ROS bags, MCAP recordings, robot datasets (ALOHA and robomimic HDF5, RLDS, zarr, "
               "LeRobot) and image folders are recognised")


class _OfferFoldersPage(FolderListPage):
    """The offered folders and the offer's name (which names its private workspace).

    Signals:
        footage_checked(str, bool): a listed folder was checked: whether it holds footage.
    """

    footage_checked = Signal(str, bool)

    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Which footage are you offering?",
                         f"Choose the folders that hold the offer. {_RECOGNISED}.")
        self.wiz = wizard
        self.checks: dict[str, bool | None] = {}
        self.problems: dict[str, str] = {}  # why a folder could not be checked
        self.found: dict[str, str] = {}  # what a folder without footage holds
        self.check_jobs: list[Job] = []
        self._suggested = ""  # the name last filled in from a folder (not typed)
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Name of this offer")
        self.name.setPlaceholderText("e.g. Q3 kitchen teleoperation")
        self.name.textChanged.connect(self._name_changed)
        form.addRow("Name of this offer:", self.name)
        self.lay.insertLayout(0, form)
        self.empty_note = QLabel("")
        self.empty_note.setWordWrap(True)
        self.empty_note.setTextFormat(Qt.TextFormat.PlainText)  # folder names
        self.empty_note.setAccessibleName("Folders without footage")
        self.empty_note.setStyleSheet("color: #b2182b;")
        self.empty_note.hide()
        self.lay.addWidget(self.empty_note)
        self.where = QLabel("")
        self.where.setWordWrap(True)
        self.where.setTextFormat(Qt.TextFormat.PlainText)  # a path
        self.where.setAccessibleName("Where the fingerprints are kept")
        # Room for three lines from the start, so a longer name does not push the page about.
        self.where.setMinimumHeight(3 * self.where.fontMetrics().lineSpacing() + 4)
        self.where.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
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
        """List ``folder`` and check in a worker that it holds footage (said on this page if not)."""
        before = set(self.folders())
        super().add_folder(folder)
        self._suggest_name()
        for f in self.folders():
            if f not in before:
                self.checks[f] = None
                self._mark(f, "checking for footage…")
                job = Job(check_folder, f, parent=self, with_progress=False, with_cancel=False)
                job.succeeded.connect(lambda got, f=f: self._checked(f, bool(got[0]), "", got[1]))
                job.failed.connect(lambda exc, f=f: self._checked(f, False, error_text(exc)[0]))
                self.check_jobs.append(job)
                job.start()
        self.completeChanged.emit()

    def _mark(self, folder: str, note: str, *, bad: bool = False) -> None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == folder:
                item.setText(folder + (f"  —  {note}" if note else ""))
                item.setForeground(QColor("#b2182b") if bad else self.palette().text().color())

    def _checked(self, folder: str, has_footage: bool, problem: str, found: str = "") -> None:
        self.checks[folder] = has_footage
        self.found[folder] = found
        self.problems[folder] = problem
        if has_footage:
            self._mark(folder, "")
        else:
            self._mark(folder, "could not be read" if problem else "no footage found in this folder", bad=True)
        self._say_empty()
        self.completeChanged.emit()
        self.footage_checked.emit(folder, has_footage)

    def _say_empty(self) -> None:
        bad = [f for f in self.folders() if self.checks.get(f) is False]
        empty = [f for f in bad if not self.problems.get(f)]
        lines = [self.problems[f] for f in bad if self.problems.get(f)]
        if empty:
            names = "; ".join(f"{Path(f).name or f} ({self.found[f]})" if self.found.get(f) else (Path(f).name or f)
                              for f in empty[:3]) + ("; …" if len(empty) > 3 else "")
            lines.append(
                f"No footage found in this folder: {names}. {_RECOGNISED} (hidden and system files are "
                "skipped). Remove it from the list and add the folder that holds the footage.")
        self.empty_note.setText("\n".join(lines))
        self.empty_note.setVisible(bool(bad))

    def remove_selected(self) -> None:
        super().remove_selected()
        self._suggest_name()
        self._say_empty()

    def _suggest_name(self) -> None:
        """Name the offer after its first folder until the seller types a name (seen under Xvfb: a
        name taken from a folder removed again stayed)."""
        if self.name.text().strip() and self.offer_name() != self._suggested:
            return  # typed by the seller
        folders = self.folders()
        self._suggested = Path(folders[0]).name if folders else ""
        self.name.setText(self._suggested)

    def offer_name(self) -> str:
        return self.name.text().strip()

    def _name_changed(self) -> None:
        name = self.offer_name()
        if name and self.wiz.workspace_for(name).is_dir():
            # An earlier offer's workspace: said, since its fingerprints (and files) carry over.
            self.where.setText(f"An earlier offer is named “{name}”: this one reuses its workspace, "
                               f"{self.wiz.workspace_for(name)} (files fingerprinted there and unchanged are not "
                               "read again). Type another name to start a separate offer.")
        elif name:
            self.where.setText("Fingerprints of this offer are kept in its own workspace, "
                               f"{self.wiz.workspace_for(name)}. Your library is not touched.")
        else:
            self.where.setText("Give the offer a name: its fingerprints are kept in a workspace of their "
                               "own, "
                               "never in your library.")
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        # Every listed folder checked and holding footage: an empty one is said here, not at the end.
        return (super().isComplete() and bool(self.offer_name())
                and all(self.checks.get(f) is True for f in self.folders()))

    def validatePage(self) -> bool:
        # Not past this page with a folder unchecked or without footage (Enter, or next() in a script).
        return self.isComplete()

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
        self.ask = FrameRateAsk()
        self.ask.chosen.connect(self._rates_chosen)
        self.add_body(self.ask)

    def running_text(self) -> str:
        return "Fingerprinting…"

    def make_job(self) -> Job:
        self.ask.hide()
        return Job(fingerprint_offer, self.wiz.folders(), self.wiz.workspace(),
                   self.wiz.folders_page.offer_name(), self.wiz.config, parent=self,
                   rates=self.wiz.state.folder_frame_rates())

    def _rates_chosen(self, rates: dict[str, float]) -> None:
        self.wiz.state.set_folder_frame_rates(rates)
        if self.job is not None and self.job.running:  # the run that asked is still closing its thread
            self.job.finished.connect(self.start)
            return
        self.start()

    def isComplete(self) -> bool:
        # Nothing fingerprinted (no footage, or none of it readable): there is nothing to offer.
        s = self.result
        return super().isComplete() and s is not None and (s.indexed + s.skipped) > 0

    def on_result(self, s: Any) -> None:
        if s.files_seen == 0:
            self.status.setText("No footage found in the chosen folders, so there is nothing to put in a "
                                "manifest. Click Back and add the folder that holds the footage.")
            return
        # The footage read in this run (none when every file was up to date: not "(0 s of footage)").
        read = f" ({fmt_hours(s.hours_indexed * 3600.0)} of footage read)" if s.indexed else ""
        text = (f"Done: {count_of(s.files_seen, 'file')} found, {s.indexed} fingerprinted, {s.skipped} already up to "
                f"date{read}.")
        needs = api.frame_rate_needs(s.failed, self.wiz.folders())
        other = [(p, why) for p, why in s.failed if not api.needs_frame_rate(str(why))]
        if other:
            names = "; ".join(f"{Path(str(p)).name}: {why}" for p, why in other[:5])
            text += (f"\n{count_of(len(other), 'file')} could not be read and "
                     f"will not be in the manifest: {names}")
        if needs:
            waiting = sum(len(n.files) for n in needs)
            text += f"\n{count_of(waiting, 'file')} need{'s' if waiting == 1 else ''} a frame rate: see below."
        self.status.setText(text)
        self.ask.show_needs(needs, self.wiz.state.folder_frame_rates())


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
        self.add_body(self.dupes, 1)
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

    def on_result(self, result: Any) -> None:
        report, reused = result
        self.result = report
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
        head = self.dupes.horizontalHeader()
        for c in range(self.dupes.columnCount()):  # a title is never cut ("epeats footage o")
            self.dupes.setColumnWidth(c, max(self.dupes.columnWidth(c), head.sectionSizeFromContents(c).width()))
        self.dupes.setVisible(bool(rows))
        if rows:
            # The core's self-dedupe headline speaks of "this library"; here it is the offer.
            share = (f"{api.format_percent(report.overlap_percent)} of this offer's footage "
                     f"({api.format_duration(report.matched_seconds)} of "
                     f"{api.format_duration(report.offered_seconds)}) repeats other footage in the same offer.")
            listed = sum(s.query_end - s.query_start for f in report.files for s in f.segments)
            if listed > report.matched_seconds + 0.5:
                # The rows overlap: one offered stretch can repeat footage in several places.
                share += (f" The rows below add up to {api.format_duration(listed)} because some overlap "
                          "(the same offered seconds repeat footage in more than one place); counted once, "
                          f"they are {api.format_duration(report.matched_seconds)}.")
            self.status.setText(f"{len(rows)} internal duplicate{'s' if len(rows) != 1 else ''} — review "
                                f"before quoting. {share}")
        else:
            self.status.setText("No internal duplicates: no footage appears twice in this offer.")
        if reused:
            self.status.setText(self.status.text() + " (The files are unchanged since the last check: its "
                                "answer is shown again.)")


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
        self.fps.setAccessibleName("Fingerprints kept in the manifest per second")
        self.fps.setRange(0.1, 10.0)
        self.fps.setDecimals(2)  # as in Settings, so "1.00" and "4.00" read as the same kind of number
        self.fps.setSingleStep(0.5)
        self.fps.setSuffix(" per second")
        self.fps.setToolTip("More fingerprints per second make a bigger manifest and a more precise "
                            "comparison. 1 per second is plenty for most offers.")
        form.addRow("Fingerprints kept in the manifest:", self.fps)
        self.fps_note = QLabel("")
        self.fps_note.setWordWrap(True)
        self.fps_note.setAccessibleName("How fingerprints are kept")
        form.addRow("", self.fps_note)
        row = QHBoxLayout()
        self.replace_ok: Path | None = None
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
        # Files the vendor added that the manifest would not hold: listed, and saved only when agreed.
        self.left_out = LeftOutBlock()
        self.left_out.changed.connect(self.completeChanged)
        form.addRow("", self.left_out)

    def initializePage(self) -> None:
        self.signing.refresh()
        done = self.wiz.fingerprint.result
        self.left_out.set_files(list(getattr(done, "failed", []) or []))
        c = self.wiz.config
        folders = self.wiz.folders()
        name = self.wiz.folders_page.offer_name()
        if not self.label.text() and (name or folders):
            self.label.setText(name or Path(folders[0]).name)
        self.anonymize.setChecked(bool(c["export.anonymize_paths"]))
        # The manifest keeps some of the fingerprints taken while reading (Settings: index.fps).
        taken = float(c["index.fps"])
        self.fps.setMaximum(max(self.fps.minimum(), min(10.0, taken)))
        self.fps.setValue(min(float(c["export.fps"]), self.fps.maximum()))
        self.fps_note.setText(f"Your footage was fingerprinted at {taken:.2f} per second (Settings, "
                              "\u201cFingerprints per second\u201d); the manifest keeps this many of them per "
                              "second of footage.")
        if not self.out.text():
            self.out.setText(str(api.documents_dir() / api.file_name_for(self.label.text(), ".ovlm",
                                                                         fallback="offer")))

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the manifest", self.out.text(),
                                              "Manifests (*.ovlm)")
        if path:
            self.out.setText(path if path.lower().endswith(".ovlm") else path + ".ovlm")
            # The save dialog already asked before replacing this one: not twice.
            self.replace_ok = self.out_path()

    def validatePage(self) -> bool:
        """A typed path to an existing manifest is replaced only when the seller says so."""
        out = self.out_path()
        if out.exists() and out != self.replace_ok:
            if not self.ask_replace(out):
                return False
            self.replace_ok = out
        return True

    def ask_replace(self, path: Path) -> bool:
        """Ask before replacing an existing manifest (a window-modal question)."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Replace the manifest?",
                          f"{path.name} already exists in {path.parent}.\n\nIf you quoted its seal to a "
                          "buyer, replacing it leaves that seal without its manifest. Replace it, or choose "
                          "another name?", QMessageBox.StandardButton.NoButton, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        replace = box.addButton("Replace", QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton("Choose another name", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.exec()
        return box.clickedButton() is replace

    def out_path(self) -> Path:
        p = Path(self.out.text().strip()).expanduser()
        return p if p.suffix.lower() == ".ovlm" else p.with_name(p.name + ".ovlm")

    def isComplete(self) -> bool:
        return bool(self.label.text().strip()) and bool(self.out.text().strip()) and self.left_out.agreed()


class _SavePage(RunPage):
    def __init__(self, wizard: ExportWizard) -> None:
        super().__init__("Saving the manifest", "")
        self.wiz = wizard
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Manifest summary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.add_body(self.summary)
        self.seal_label = QLabel("<b>Quote this seal in your offer</b>: the buyer's copy must show the same "
                                 "one, and the delivery can later be verified against it.")
        self.seal_label.setWordWrap(True)
        self.seal_label.hide()
        self.add_body(self.seal_label)
        self.seal = SealField()
        self.seal.hide()
        self.add_body(self.seal)
        self.contains = QLabel(
            "<b>The manifest contains</b> fingerprints (32 bytes per sampled frame), file names (unless "
            "hidden), sizes, checksums and the seal that binds them.<br><b>It does not contain</b> any "
            "video, pictures or audio. Fingerprints still reveal coarse visual structure: treat the "
            "manifest as a confidential business document.")
        self.contains.setWordWrap(True)
        self.add_body(self.contains)
        self.show_button = QPushButton("Show in folder")
        self.show_button.setAccessibleName("Show the manifest in its folder")
        self.show_button.clicked.connect(lambda: open_local_file(self.wiz.options_page.out_path().parent))
        self.show_button.hide()
        self.add_body(self.show_button)
        self.setFinalPage(True)

    def running_text(self) -> str:
        return "Writing the manifest…"

    def make_job(self) -> Job:
        o = self.wiz.options_page
        return Job(save_offer, self.wiz.workspace(), o.out_path(), o.label.text().strip(), parent=self,
                   paths=[Path(f) for f in self.wiz.folders()], anonymize=o.anonymize.isChecked(),
                   fps=float(o.fps.value()), created=True,
                   **o.signing.export_arguments())

    def initializePage(self) -> None:
        self.wiz.setOption(QWizard.WizardOption.NoCancelButtonOnLastPage, False)
        self.wiz.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, True)
        super().initializePage()

    def on_result(self, s: Any) -> None:
        # Saved: Finish is the only way on (Cancel beside it would suggest the save can be undone).
        self.wiz.setOption(QWizard.WizardOption.NoCancelButtonOnLastPage, True)
        self.setSubTitle("Send this file to the buyer. They can check it against their own library "
                         "without receiving any footage.")
        self.status.setText(f"Saved {s.path}")
        left = self.wiz.options_page.left_out.files
        self.summary.setText(
            f"{count_of(s.files, 'file')}, {fmt_hours(s.hours * 3600.0)} of footage; manifest size {fmt_size(s.bytes)}."
            + (f"\nLeft out (could not be read): {count_of(len(left), 'file')}, "
               + ", ".join(api.safe_text(Path(p).name) for p, _why in left[:5])
               + (" …" if len(left) > 5 else "") + "." if left else "")
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
        return [self.fingerprint.job, self.dedupe.job, self.save.job, *self.folders_page.check_jobs]

    def reject(self) -> None:
        for j in self.jobs():
            if j is not None and j.running:
                j.cancel()
        super().reject()
