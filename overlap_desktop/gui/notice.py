"""The bar above a page that says what the page cannot: demo results, an incomplete library."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

__all__ = ["DEMO_NOTE", "INDEXING_NOTE", "NoticeBar"]

#: Above demo results: "you own" there means the demo's sample library.
DEMO_NOTE = ("Demo: this offer was compared with the demo library (sample footage made for the demo), not "
             "with your footage. Where the results say \"you own\", read \"the demo library holds\". Your "
             "own library is not touched.")
#: Above a comparison while the library is being indexed.
INDEXING_NOTE = ("Your library is being indexed right now: a comparison uses only the files finished so far, "
                 "and footage not yet read counts as not owned. Compare again when indexing is done.")


class NoticeBar(QFrame):
    """A framed sentence with one button (hidden until there is something to say)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#notice { background: palette(alternate-base); border: 2px solid palette(highlight); }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 6, 12, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setAccessibleName("Notice")
        self.button = QPushButton("Open My library")
        lay.addWidget(self.label, 1)
        lay.addWidget(self.button)
        self.hide()
