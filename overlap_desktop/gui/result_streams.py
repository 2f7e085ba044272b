"""The results screen's per-camera breakdown of the selected file: each camera of each episode
with its own owned, new and "can't tell" time, and the cameras the lab does not own standing out.

Shown only for files of several streams (robot datasets, multi-camera recordings); a file of one
stream has nothing more to say than its row in the files table.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QLabel, QTableWidgetItem, QVBoxLayout, QWidget

from overlap_desktop import api
from overlap_desktop.gui.common import read_only_table

__all__ = ["STREAM_COLUMNS", "StreamBreakdown"]

STREAM_COLUMNS = ("Camera", "Duration", "Owned", "New", "Can't tell", "Not judged")


class StreamBreakdown(QWidget):
    """A note naming new camera views, over a table of the file's streams."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # camera names come from the vendor
        self.note.setAccessibleName("Cameras the lab does not own")
        lay.addWidget(self.note)
        self.table = read_only_table(STREAM_COLUMNS, "Cameras and episodes of the selected file")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        lay.addWidget(self.table)
        self.setVisible(False)

    def set_file(self, f: Any) -> None:
        """Show ``f``'s streams (hidden for ``None`` or a file of one stream)."""
        rows = [] if f is None else api.stream_rows(f)
        lines = [] if f is None else api.new_camera_lines(f)
        self.note.setText("; ".join(lines).capitalize() if lines else "")
        self.note.setVisible(bool(lines))
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        # Every row in view up to six, so a 3-camera episode needs no scrolling.
        shown = min(max(len(rows), 1), 6)
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + shown * self.table.verticalHeader().defaultSectionSize() + 4)
        self.setVisible(bool(rows))
