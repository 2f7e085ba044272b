"""Delivery verification wizard: quoted manifest → delivery folder → hashing → verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from overlap_desktop import api
from overlap_desktop.gui.common import (
    SavedNote,
    SealField,
    count_of,
    error_text,
    fit_to_screen,
    fmt_size,
    headline_label,
    read_only_table,
    show_error,
    start_folder,
)
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.verify_audit import AuditOptions, AuditPage, AuditPanel
from overlap_desktop.gui.workers import Job

__all__ = ["VerifyWizard", "verdict_text"]

PAGE_MANIFEST, PAGE_FOLDER, PAGE_HASH, PAGE_RESULT = range(4)

STATUS_WORDS = {"matched": "As quoted", "altered": "Altered", "missing": "Missing", "extra": "Not quoted",
                "unreadable": "Could not be read"}
STATUS_COLOURS = {"matched": "#1a9850", "altered": "#d73027", "missing": "#d73027", "extra": "#f46d43",
                  "unreadable": "#d73027"}


def verdict_text(result: api.VerifyResult) -> str:
    """The delivery's verdict in one sentence: the core's words, as the CLI and the HTML report say it."""
    return api.verify_verdict(result)


class _PathPage(QWizardPage):
    """One path with a Browse button; complete when it exists."""

    def __init__(self, title: str, subtitle: str, *, folder: bool, placeholder: str) -> None:
        super().__init__()
        self.folder = folder
        self.setTitle(title)
        self.setSubTitle(subtitle)
        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(placeholder)
        self.edit.setAccessibleName(title)
        self.edit.textChanged.connect(self._changed)
        browse = QPushButton("Browse…")
        browse.setAccessibleName("Browse for " + ("folder" if folder else "file"))
        browse.clicked.connect(self._browse)
        row.addWidget(self.edit, 1)
        row.addWidget(browse)
        lay.addLayout(row)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # shows error text naming files
        lay.addWidget(self.note)
        lay.addStretch(1)

    def _browse(self) -> None:
        start = start_folder(self.edit.text().strip() or None)
        if self.folder:
            p = QFileDialog.getExistingDirectory(self, self.title(), start)
        else:
            p, _ = QFileDialog.getOpenFileName(self, self.title(), start, "Manifests (*.ovlm);;All files (*)")
        if p:
            self.edit.setText(p)

    def _changed(self) -> None:
        if self.folder:
            self.note.setText(self.folder_problem())
        self.completeChanged.emit()

    def folder_problem(self) -> str:
        """Why a typed folder path cannot be used (Next stays grey), or ``""``."""
        p = self.path()
        if not self.edit.text().strip() or p.is_dir():
            return ""
        if p.exists():
            return f"{p} is a file, not a folder: choose the folder the footage was delivered in."
        return f"The folder {p} does not exist. Check the path, or choose the folder with Browse…."

    def path(self) -> Path:
        return Path(self.edit.text().strip()).expanduser()

    def isComplete(self) -> bool:
        t = self.edit.text().strip()
        if not t:
            return False
        p = self.path()
        return p.is_dir() if self.folder else p.is_file()


class _ManifestPage(_PathPage):
    """The quoted manifest; its label and seal are shown as soon as it is chosen (read in a worker).

    Signals:
        described(object): the manifest's facts (a dict) were read and shown, or ``None`` (unusable).
    """

    described = Signal(object)

    def __init__(self, recent: list[str] | None = None) -> None:
        super().__init__("Which manifest was quoted?",
                         "Choose the .ovlm file the seller sent with the offer you bought.",
                         folder=False, placeholder="quoted-offer.ovlm")
        self.info: dict[str, Any] | None = None
        self.job: Job | None = None
        self._seq = 0
        lay = self.layout()
        assert isinstance(lay, QVBoxLayout)
        self.quote = QLabel("")
        self.quote.setWordWrap(True)
        self.quote.setTextFormat(Qt.TextFormat.PlainText)  # the seller's label
        self.quote.setAccessibleName("The quoted offer")
        self.seal = SealField()
        self.seal.hide()
        lay.insertWidget(1, self.quote)
        lay.insertWidget(2, self.seal)
        # Opened from Home the wizard knows no offer: the offers screened before are the likely
        # quotes. Listed by name only; whether each still exists is found out when one is chosen
        # (a file on a disconnected drive must not stall the page).
        self.recent = QListWidget()
        self.recent.setAccessibleName("Offers you screened recently")
        self.recent.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        for p in recent or []:
            item = QListWidgetItem(f"{Path(p).name}  —  {Path(p).parent}")
            item.setData(Qt.ItemDataRole.UserRole, p)
            item.setToolTip(p)
            self.recent.addItem(item)
        rows = min(5, self.recent.count())
        self.recent.ensurePolished()
        line = max(self.recent.sizeHintForRow(0), self.recent.fontMetrics().height()) + 4
        self.recent.setFixedHeight(line * rows + 2 * self.recent.frameWidth() + 4 if rows else 0)
        self.recent.itemClicked.connect(lambda it: self.edit.setText(str(it.data(Qt.ItemDataRole.UserRole))))
        self.recent_label = QLabel("Or pick an offer you screened before:")
        self.recent_label.setBuddy(self.recent)
        for w in (self.recent_label, self.recent):
            w.setVisible(bool(recent))
        lay.insertWidget(1, self.recent_label)
        lay.insertWidget(2, self.recent)

    def _changed(self) -> None:
        super()._changed()
        self.info = None
        self._seq += 1
        self.quote.setText("")
        self.note.setText("")
        self.seal.hide()
        if not self.isComplete():
            picked = self.recent.currentItem()
            if picked is not None and picked.data(Qt.ItemDataRole.UserRole) == self.edit.text():
                self.note.setText(f"{self.edit.text()} is no longer there (moved, deleted or on a drive that "
                                  "is not connected). Choose the manifest with Browse….")
            return
        seq = self._seq
        job = Job(api.inspect_manifest, self.path(), parent=self, with_progress=False, with_cancel=False)
        job.succeeded.connect(lambda info: self._described(seq, info))
        job.failed.connect(lambda exc: self._not_described(seq, exc))
        self.job = job
        job.start()

    def _described(self, seq: int, info: dict[str, Any]) -> None:
        if seq != self._seq:
            return
        self.info = info
        label = api.safe_text(info.get("label") or "", max_len=120) or "(no label)"
        files = info.get("files")
        self.quote.setText(f"Quote: {label}" + (f" — {count_of(files, 'file')}" if isinstance(files, int) else "")
                           + "\nSeal of the quote (compare it with the one in your purchase order):")
        self.seal.set_seal(str(info.get("root") or "–"))
        self.seal.show()
        self.described.emit(info)

    def _not_described(self, seq: int, exc: BaseException) -> None:
        if seq != self._seq:
            return
        self.quote.setText(error_text(exc)[0])
        self.described.emit(None)

    def validatePage(self) -> bool:
        # Reading a manifest is quick (it is small); a bad one is refused here, in plain words.
        if self.info is not None:  # already read (in a worker) when it was chosen
            return True
        try:
            self.info = api.inspect_manifest(self.path())
        except Exception as exc:
            self.note.setText(error_text(exc)[0])
            show_error(self, "This manifest cannot be used", exc)
            return False
        return True


class _ResultPage(QWizardPage):
    def __init__(self, wizard: VerifyWizard) -> None:
        super().__init__()
        self.wiz = wizard
        self.setTitle("Result")
        lay = QVBoxLayout(self)
        self.verdict = headline_label("")
        self.verdict.setAccessibleName("Verdict")
        lay.addWidget(self.verdict)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.PlainText)  # shows the manifest label
        lay.addWidget(self.info)
        self.seal = SealField()
        lay.addWidget(self.seal)
        # Who signed the quote (issue 37): signer, key fingerprint and signed root, for a dispute.
        self.signature = QLabel("")
        self.signature.setWordWrap(True)
        self.signature.setTextFormat(Qt.TextFormat.PlainText)  # the vendor's name is the vendor's text
        self.signature.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.signature.setAccessibleName("Signature of the quote")
        lay.addWidget(self.signature)
        # OS clutter (Thumbs.db, .DS_Store...) is never a failure: listed apart, in one line.
        self.ignored = QLabel("")
        self.ignored.setWordWrap(True)
        self.ignored.setTextFormat(Qt.TextFormat.PlainText)
        self.ignored.setAccessibleName("System files ignored")
        self.ignored.hide()
        lay.addWidget(self.ignored)
        self.table = read_only_table(["File", "Result", "Details"], "Delivered files")
        lay.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.again_button = QPushButton("Verify another folder…")
        self.again_button.setAccessibleName("Verify another folder against the same quote")
        self.again_button.setToolTip("Check another delivery folder against the same manifest")
        self.again_button.clicked.connect(self.verify_another)
        row.addWidget(self.again_button)
        self.export_button = QPushButton("Save report…")
        self.export_button.setAccessibleName("Save verification report")
        self.export_button.setToolTip("A readable report (HTML) to file with the purchase; JSON for machines")
        self.export_button.clicked.connect(self._choose_export)
        row.addWidget(self.export_button)
        self.saved_note = SavedNote()
        row.addWidget(self.saved_note, 1)
        row.addStretch()  # the buttons keep their size while no file is saved yet
        lay.addLayout(row)
        self.setFinalPage(True)
        self.rows: list[tuple[str, str, str]] = []

    def initializePage(self) -> None:
        r = self.wiz.verify_result()
        if r is None:
            return
        self.verdict.setText(verdict_text(r))
        pal = "#1a9850" if r.ok else "#d73027"
        self.verdict.setStyleSheet(f"color: {pal};")
        label = api.safe_text(r.label) if r.label else Path(r.manifest).name
        self.info.setText(f"Quote: {label}\nDelivery folder: {r.data_dir}"
                          + ("\nThe manifest hides file names, so files were matched by size and checksum."
                             if r.anonymized else "") + "\nSeal of the quote:")
        self.seal.set_seal(str(r.root))
        sig = dict(getattr(r, "signature", {}) or {})
        text = "Signature: " + api.signature_sentence(sig)
        if sig.get("status") == "signed":
            text += (f"\nSigned {sig.get('signed_at')}, key fingerprint {sig.get('fingerprint')}, "
                     f"content root {sig.get('signed_root')}")
        self.signature.setText(text)
        self.signature.setStyleSheet("color: #d73027; font-weight: bold;" if api.signature_changed(sig) else "")
        ignored = list(getattr(r, "ignored", []) or [])
        names = ", ".join(api.safe_text(str(x.get("path", "")), max_len=60) for x in ignored[:6])
        self.ignored.setText(f"System files ignored ({len(ignored)}): {names}"
                             + (", …" if len(ignored) > 6 else "")
                             + ". Files such as Thumbs.db or .DS_Store are made by the computer, not the "
                               "seller."
                             if ignored else "")
        self.ignored.setVisible(bool(ignored))
        self.saved_note.hide()
        rows: list[tuple[str, str, str]] = []
        for e in r.entries:
            detail = e.reason or ""
            if e.delivered and (e.renamed or r.anonymized or e.delivered != e.name):
                # With hidden names the quoted name is a number: say which delivered file it is.
                detail = (detail + "; " if detail else "") + f"delivered as {api.safe_text(e.delivered)}"
            if e.status == "missing" and not detail:
                detail = (f"not in the delivery folder: quoted as {fmt_size(e.size)}, checksum "
                          f"{e.sha256[:12]}…")
            if e.status == "matched" and not detail:
                detail = fmt_size(e.size)
            rows.append((api.safe_text(e.name), e.status, detail))
        for x in r.extra:
            rows.append((api.safe_text(x.get("path", "")), "extra",
                         f"{fmt_size(x.get('size'))}, not in the quote"))
        for x in r.unreadable:
            rows.append((api.safe_text(x.get("path", "")), "unreadable", str(x.get("error", ""))))
        self.rows = rows
        self.table.setRowCount(len(rows))
        for i, (name, status, detail) in enumerate(rows):
            a = QTableWidgetItem(name)
            b = QTableWidgetItem(STATUS_WORDS.get(status, status))
            b.setForeground(QColor(STATUS_COLOURS.get(status, "#000000")))
            b.setData(Qt.ItemDataRole.UserRole, status)
            c = QTableWidgetItem(detail)
            for col, it in enumerate((a, b, c)):
                it.setToolTip(it.text())
                self.table.setItem(i, col, it)
        self.table.resizeColumnsToContents()

    def verify_another(self) -> None:
        """Back to "Where is the delivery?" with the same quote (the folder field emptied)."""
        wiz = self.wiz
        while wiz.currentId() not in (PAGE_FOLDER, PAGE_MANIFEST, -1):
            wiz.back()
        if wiz.currentId() == PAGE_FOLDER:
            wiz.folder_page.edit.clear()
            wiz.folder_page.edit.setFocus()

    def suggested_path(self) -> Path:
        """The Documents folder and a name from the quote's label."""
        r = self.wiz.verify_result()
        label = (r.label if r is not None and r.label else "delivery")
        return api.documents_dir() / api.file_name_for(str(label), "-verification.html", fallback="delivery")

    def _choose_export(self) -> None:
        p, chosen = QFileDialog.getSaveFileName(self, "Save the verification report",
                                                str(self.suggested_path()),
                                                "Report for people (*.html);;Report for machines (*.json)")
        if p:
            self.export(Path(p), "json" if ("json" in chosen or p.lower().endswith(".json")) else "html")

    def export(self, path: Path, kind: str | None = None) -> Path | None:
        """Write the verification report: HTML for people (default) or JSON (``overlap.verify``)."""
        r = self.wiz.verify_result()
        if r is None:
            return None
        kind = kind or ("json" if path.suffix.lower() == ".json" else "html")
        if path.suffix.lower() != "." + kind:
            path = path.with_name(path.name + "." + kind)
        try:
            writer = api.write_verify_html if kind == "html" else api.write_verify_json
            path = Path(writer(r, path))
        except (OSError, api.OverlapError) as exc:  # the writers name the file and the problem
            show_error(self, "The report could not be saved", exc)
            return None
        self.saved_note.set_saved(path, "Saved")
        return path


class VerifyWizard(QWizard):
    """Check a delivery against the quoted manifest.

    Args:
        state: Shared configuration.
        manifest: Optional manifest to pre-fill.
    """

    def __init__(self, state: AppState, parent: QWidget | None = None, *,
                 manifest: str | Path | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.config = state.config()
        self.setWindowTitle("Verify a delivery")
        self.setAccessibleName("Verify a delivery")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, True)
        # The result is final: Finish closes, "Verify another folder" goes back; Cancel would undo nothing.
        self.setOption(QWizard.WizardOption.NoCancelButtonOnLastPage, True)
        self.manifest_page = _ManifestPage(state.recent_manifests())
        self.folder_page = _PathPage("Where is the delivery?",
                                     "Choose the folder the purchased footage was delivered to. "
                                     "Sub-folders are included.", folder=True,
                                     placeholder="delivery folder")
        # The footage is checked against the quote by default (gui/verify_audit.py).
        self.audit_options = AuditOptions()
        folder_lay = self.folder_page.layout()
        assert isinstance(folder_lay, QVBoxLayout)
        folder_lay.insertWidget(2, self.audit_options)
        self.hash_page = AuditPage(self)
        self.result_page = _ResultPage(self)
        self.audit_panel = AuditPanel(self)
        result_lay = self.result_page.layout()
        assert isinstance(result_lay, QVBoxLayout)
        result_lay.insertWidget(result_lay.count() - 1, self.audit_panel, 1)
        self.currentIdChanged.connect(
            lambda pid: self.audit_panel.show_result(self.hash_page.audit_result()) if pid == PAGE_RESULT else None)
        for pid, page in ((PAGE_MANIFEST, self.manifest_page), (PAGE_FOLDER, self.folder_page),
                          (PAGE_HASH, self.hash_page), (PAGE_RESULT, self.result_page)):
            self.setPage(pid, page)
        if manifest is not None:
            self.manifest_page.edit.setText(str(manifest))
        fit_to_screen(self, (800, 600))

    def verify_result(self) -> Any:
        """The :class:`~overlap_desktop.core.manifest.verify.VerifyResult`, once hashing finished."""
        return self.hash_page.verify_result()

    def jobs(self) -> list[Job | None]:
        return [self.hash_page.job, self.manifest_page.job, self.audit_panel.add_job]

    def reject(self) -> None:
        for j in self.jobs():
            if j is not None and j.running:
                j.cancel()
        super().reject()
