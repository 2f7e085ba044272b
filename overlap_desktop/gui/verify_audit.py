"""The verify wizard's audit: "check the footage is what was quoted", then quote against delivery.

The wizard audits by default: the run page decodes each delivered file the way indexing does
and checks the quoted fingerprints against it, screens the delivered footage against My library
as it stood before, and can add the delivery to My library in the same pass. The result page
then shows the quote against the delivery per file, a changed verdict standing out, and offers
adding the delivery afterwards when it was not added in the pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import error_text, fmt_size, headline_label, read_only_table, show_error
from overlap_desktop.gui.wizard_pages import RunPage
from overlap_desktop.gui.workers import Job

__all__ = ["AuditOptions", "AuditPage", "AuditPanel", "run_audit"]

_GOOD, _BAD, _CHANGED = "#1a9850", "#d73027", "#f46d43"
_COLUMNS = ["File", "Bytes", "Footage", "Quoted", "Delivered", "What it is"]


def run_audit(manifest: Path, folder: Path, *, config: api.Config, audit: bool, add: bool, threads: int,
              progress: Any = None, cancel: Any = None) -> Any:
    """The wizard's job: the audit (``audit``) or the bytes check alone. Runs in a worker thread."""
    if not audit:
        return api.verify_delivery(manifest, folder, threads=threads, progress=progress, cancel=cancel)
    status = api.library_status(config=config)
    idx = api.open_index(config.index_path, config=config, readonly=not add) if (status.ready or add) else None
    try:
        return api.audit_delivery(manifest, folder, index=idx, config=config, add=add, threads=threads,
                                  progress=progress, cancel=cancel)
    finally:
        if idx is not None:
            idx.close()


class AuditOptions(QWidget):
    """The two choices on the "Where is the delivery?" page."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 8, 0, 0)
        self.audit = QCheckBox("Check the footage is what was quoted (recommended)")
        self.audit.setAccessibleName("Check the footage is what was quoted")
        self.audit.setToolTip("Decode every delivered file and check the quoted fingerprints are those of its "
                              "footage; then screen the delivery against My library again")
        self.audit.setChecked(True)
        self.add = QCheckBox("Add the delivery to My library in the same pass")
        self.add.setAccessibleName("Add the delivery to My library")
        self.add.setToolTip("The fingerprints the check computes go into My library: no second reading")
        self.audit.toggled.connect(self.add.setEnabled)
        lay.addWidget(self.audit)
        lay.addWidget(self.add)


class AuditPage(RunPage):
    """Runs the audit (or the bytes check alone when the audit is switched off)."""

    def __init__(self, wizard: Any) -> None:  # the VerifyWizard (which imports this module)
        super().__init__("Checking the delivery",
                         "Every delivered file is read, its checksum compared with the quote and its footage "
                         "checked against the quoted fingerprints. Stop keeps what is done: Continue carries "
                         "on from there.")
        self.wiz = wizard

    def running_text(self) -> str:
        return ("Checking the footage is what was quoted…" if self.wiz.audit_options.audit.isChecked()
                else "Reading the delivered files…")

    def make_job(self) -> Job:
        opts = self.wiz.audit_options
        return Job(run_audit, self.wiz.manifest_page.path(), self.wiz.folder_page.path(), parent=self,
                   config=self.wiz.config, audit=opts.audit.isChecked(),
                   add=opts.audit.isChecked() and opts.add.isChecked(),
                   threads=int(self.wiz.config["verify.threads"]))

    def on_result(self, result: Any) -> None:
        v = getattr(result, "verify", result)
        self.status.setText(f"Done: {fmt_size(v.bytes_hashed)} checked.")
        self.wiz.next()

    def verify_result(self) -> Any:
        """The bytes check's result (also inside an audit's)."""
        return None if self.result is None else getattr(self.result, "verify", self.result)

    def audit_result(self) -> Any:
        return self.result if hasattr(self.result, "files") else None


def _seconds(s: Any) -> str:
    return "–" if s is None else s.words()


class AuditPanel(QWidget):
    """Quote against delivery per file, on the result page, and "Add to My library"."""

    def __init__(self, wizard: Any) -> None:  # the VerifyWizard (which imports this module)
        super().__init__()
        self.wiz = wizard
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.headline = headline_label("")
        self.headline.setAccessibleName("Footage check")
        lay.addWidget(self.headline)
        self.details = QLabel("")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.PlainText)  # file names
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAccessibleName("Footage check details")
        lay.addWidget(self.details)
        self.table = read_only_table(_COLUMNS, "Quote against delivery")
        lay.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.add_button = QPushButton("Add the delivery to My library")
        self.add_button.setAccessibleName("Add the delivery to My library")
        self.add_button.clicked.connect(self.add_to_library)
        self.receipt_button = QPushButton("Save receipt…")
        self.receipt_button.setAccessibleName("Save the audit receipt")
        self.receipt_button.setToolTip("The signed receipt (JSON) and a page for people (HTML) beside it")
        self.receipt_button.clicked.connect(self._choose_receipt)
        self.add_note = QLabel("")
        self.add_note.setTextFormat(Qt.TextFormat.PlainText)
        self.add_note.setAccessibleName("Library")
        row.addWidget(self.add_button)
        row.addWidget(self.receipt_button)
        row.addWidget(self.add_note, 1)
        lay.addLayout(row)
        self.add_job: Job | None = None
        self.hide()

    def show_result(self, r: Any) -> None:
        """Fill the panel from an audit result (hidden for the bytes check alone)."""
        self.setVisible(r is not None)
        if r is None:
            return
        bad = r.failing()
        self.headline.setText("The footage is what was quoted" if r.ok else
                              "The footage is not what was quoted" if any(
                                  f.check.fingerprints != "reproduced" for f in bad) else
                              "The delivery does not match the quote")
        self.headline.setStyleSheet(f"color: {_GOOD if r.ok else _BAD};")
        words = [f.check.words for f in bad if f.check.fingerprints != "reproduced"]
        words += [f"{f.name}: {f.verdict_words()}" for f in r.files if f.changed]
        if not r.rescreened:
            words.append("My library was not searched again (there is none yet).")
        self.details.setText("\n".join(api.safe_text(w, max_len=400) for w in words))
        self.table.setRowCount(len(r.files))
        for i, f in enumerate(r.files):
            cells = [api.safe_text(f.name), {"matched": "exact"}.get(f.bytes, f.bytes), f.check.fingerprints,
                     _seconds(f.quoted), _seconds(f.final), api.safe_text(f.copy_of)]
            for col, text in enumerate(cells):
                it = QTableWidgetItem(text)
                it.setToolTip(f.check.words if col == 2 else text)
                if col == 1 and f.bytes != "matched" or col == 2 and f.check.fingerprints != "reproduced":
                    it.setForeground(QColor(_BAD))
                if col == 4 and f.changed:  # a verdict the delivery changed stands out
                    it.setForeground(QColor(_CHANGED))
                    font = QFont(it.font())
                    font.setBold(True)
                    it.setFont(font)
                    it.setText(text + " (changed)")
                self.table.setItem(i, col, it)
        self.table.resizeColumnsToContents()
        self.add_button.setVisible(not r.added)
        self.add_note.setText(f"{r.added} delivered files were added to My library." if r.added else "")

    def add_to_library(self) -> None:
        """Index the delivery folder into My library (when it was not added in the audit's pass)."""
        if self.add_job is not None and self.add_job.running:
            return
        folder = self.wiz.folder_page.path()
        job = Job(api.index_paths, [folder], parent=self, config=self.wiz.config)
        job.succeeded.connect(lambda s: self.add_note.setText(
            f"Added to My library: {s.indexed} files indexed" + (f", {len(s.failed)} could not be read"
                                                                 if s.failed else "") + "."))
        job.failed.connect(lambda exc: self.add_note.setText("Not added: " + error_text(exc)[0]))
        self.add_button.setEnabled(False)
        job.finished.connect(lambda: self.add_button.setEnabled(True))
        self.add_note.setText("Adding the delivery to My library…")
        self.add_job = job
        job.start()

    def _choose_receipt(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        start = api.documents_dir() / api.file_name_for(self.wiz.verify_result().label or "delivery",
                                                        "-receipt.json", fallback="delivery")
        p, _ = QFileDialog.getSaveFileName(self, "Save the audit receipt", str(start), "Receipt (*.json)")
        if p:
            self.save_receipt(Path(p))

    def save_receipt(self, path: Path) -> Path | None:
        """Write the receipt (signed with this computer's key when there is one) and its HTML page."""
        r = self.wiz.hash_page.audit_result()
        if r is None:
            return None
        if path.suffix.lower() != ".json":
            path = path.with_name(path.name + ".json")
        try:
            receipt = api.make_receipt(r)
            api.write_receipt(receipt, path)
            api.write_receipt_html(receipt, path.with_suffix(".html"))
        except (OSError, api.OverlapError) as exc:
            show_error(self, "The receipt could not be saved", exc)
            return None
        self.add_note.setText(f"Receipt saved: {path.name} (and {path.with_suffix('.html').name})")
        return path
