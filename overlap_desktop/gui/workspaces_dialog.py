"""The vendor wizard's "Manage earlier offers" dialog: what each offer's workspace keeps, and removal.

Each prepared offer keeps a private index (its workspace) so preparing it again skips
unchanged files. This dialog lists them with their size and last use and removes the ones
the seller no longer needs. Saved manifests are separate files and are never touched.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import compact_rows, fmt_size, show_error

__all__ = ["WorkspacesDialog", "state_words", "workspaces_summary"]


def workspaces_summary(workspaces: list[api.VendorWorkspace]) -> str:
    """One line for the wizard: how many earlier offers keep how much, or "" when none."""
    if not workspaces:
        return ""
    total = sum(w.size_bytes for w in workspaces)
    n = len(workspaces)
    unfinished = sum(1 for w in workspaces if w.finished is False)
    return (f"{n} offer{'s' if n != 1 else ''} prepared on this computer keep{'s' if n == 1 else ''} "
            f"{fmt_size(total)} of fingerprints" + (f" ({unfinished} unfinished)." if unfinished else "."))


def state_words(w: api.VendorWorkspace) -> str:
    """Whether the offer's manifest was saved ("unfinished" when fingerprinting began but no manifest was)."""
    if w.finished is True:
        return "manifest saved"
    if w.finished is False:
        return "unfinished: no manifest saved yet"
    return "not known (prepared by an earlier version)"


class WorkspacesDialog(QDialog):
    """Lists offer workspaces (newest first) and removes the selected ones after a confirmation."""

    def __init__(self, parent: QWidget | None = None, *, current: Path | None = None) -> None:
        super().__init__(parent)
        self.current = current
        self.setWindowTitle("Earlier offers on this computer")
        self.setAccessibleName("Earlier offers on this computer")
        lay = QVBoxLayout(self)
        intro = QLabel("Each offer you prepared keeps its fingerprints here, so preparing it again only reads "
                       "new or changed files. Removing an offer's fingerprints frees the space; manifests you "
                       "saved are separate files and stay as they are.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Offer", "State", "Size", "Last used"])
        self.table.setAccessibleName("Earlier offers")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        compact_rows(self.table)
        lay.addWidget(self.table)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # offer names are chosen by sellers
        lay.addWidget(self.status)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.remove_button = QPushButton("Remove selected…")
        self.remove_button.setAccessibleName("Remove the selected offers' fingerprints")
        buttons.addButton(self.remove_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.remove_button.clicked.connect(self.remove_selected)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        lay.addWidget(buttons)
        self.workspaces: list[api.VendorWorkspace] = []
        self.refresh()
        self.resize(620, 380)

    def refresh(self) -> None:
        """Read the workspaces folder again and fill the table."""
        self.workspaces = api.list_vendor_workspaces()
        self.table.setRowCount(len(self.workspaces))
        for row, w in enumerate(self.workspaces):
            used = _dt.datetime.fromtimestamp(w.modified).strftime("%Y-%m-%d %H:%M")
            # The offer's name as the seller typed it (not the folder name made from it).
            name = w.title + ("  (this offer)" if self.current is not None and w.path == self.current else "")
            for col, text in enumerate((name, state_words(w), fmt_size(w.size_bytes), used)):
                item = QTableWidgetItem(text)
                item.setToolTip(str(w.path))
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.status.setText(workspaces_summary(self.workspaces) or "No offer keeps fingerprints on this computer.")
        self._selection_changed()

    def selected(self) -> list[api.VendorWorkspace]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        return [self.workspaces[r] for r in rows if r < len(self.workspaces)]

    def _selection_changed(self) -> None:
        self.remove_button.setEnabled(bool(self.selected()))

    def confirm(self, text: str) -> bool:
        """Ask before deleting (replaced in tests)."""
        answer = QMessageBox.question(self, "Remove fingerprints?", text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                                      QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Yes

    def remove_selected(self) -> None:
        chosen = self.selected()
        if not chosen:
            return
        names = ", ".join(w.title for w in chosen[:5]) + (", …" if len(chosen) > 5 else "")
        size = fmt_size(sum(w.size_bytes for w in chosen))
        if not self.confirm(f"Remove the fingerprints of {names} ({size})? Preparing "
                            f"{'this offer' if len(chosen) == 1 else 'these offers'} again will read "
                            "all of its footage again. Saved manifests are not affected."):
            return
        freed = 0
        for w in chosen:
            try:
                freed += api.remove_vendor_workspace(w.path)
            except api.OverlapError as exc:
                show_error(self, f"Could not remove {w.title}", exc)
                break
        self.refresh()
        self.status.setText(f"Freed {fmt_size(freed)}. " + self.status.text())
