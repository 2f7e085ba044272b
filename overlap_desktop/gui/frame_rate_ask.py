"""Asking for the frame rate of robot datasets that store none, and for leaving files out.

ALOHA episodes, RLDS datasets and zarr buffers store no frame rate, and the readers refuse to
guess one (a guess reads as a speed change). :class:`FrameRateAsk` lists such items per folder
after a run, each folder with a rate field filled with its format's usual rate, and a button that
reads them at those rates; the app remembers the rate of each folder (``AppState``).
:class:`LeftOutBlock` lists the files a manifest would not hold and asks before saving without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import count_of

__all__ = ["FrameRateAsk", "LeftOutBlock"]

#: Left-out files named on the page (the rest are counted).
NAMED = 8


class FrameRateAsk(QFrame):
    """Per folder: "N <kind>s here store no frame rate" and a rate field; one button reads them.

    Signals:
        chosen(object): ``{folder: rate in Hz}`` when the user clicks the button.
    """

    chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Frame rates of robot datasets")
        lay = QVBoxLayout(self)
        self.intro = QLabel("")
        self.intro.setWordWrap(True)
        self.intro.setTextFormat(Qt.TextFormat.PlainText)
        lay.addWidget(self.intro)
        self.form = QFormLayout()
        lay.addLayout(self.form)
        self.button = QPushButton("Read them at these rates")
        self.button.setAccessibleName("Read them at these rates")
        self.button.clicked.connect(lambda: self.chosen.emit(self.rates()))
        lay.addWidget(self.button, 0, Qt.AlignmentFlag.AlignLeft)
        self.needs: list[Any] = []
        self.fields: dict[str, QDoubleSpinBox] = {}
        self.hide()

    def show_needs(self, needs: list[Any], remembered: dict[str, float] | None = None) -> None:
        """Show ``needs`` (``api.FrameRateNeed``; none: hidden), each field filled with the rate
        remembered for its folder, else its format's usual rate."""
        while self.form.rowCount():
            self.form.removeRow(0)
        self.needs, self.fields = list(needs), {}
        remembered = remembered or {}
        for need in self.needs:
            n = len(need.files)
            label = QLabel(f"{count_of(n, need.kind)} in “{api.safe_text(Path(need.folder).name)}” "
                           f"{'stores' if n == 1 else 'store'} no frame rate ({need.usual_words}).")
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setToolTip("\n".join(api.safe_text(f) for f in need.files[:20]))
            rate = QDoubleSpinBox()
            rate.setRange(0.1, 1000.0)
            rate.setDecimals(2)
            rate.setSuffix(" Hz")
            rate.setValue(float(remembered.get(need.folder, need.usual_hz)))
            rate.setAccessibleName(f"Frame rate of {Path(need.folder).name}")
            rate.setMaximumWidth(rate.fontMetrics().horizontalAdvance("1000.00 Hz") + 48)
            self.form.addRow(label, rate)
            self.fields[need.folder] = rate
        total = sum(len(n.files) for n in self.needs)
        they = "it stores" if total == 1 else "they store"
        self.intro.setText(f"{count_of(total, 'item')} could not be read because {they} no frame rate, and a "
                           "guessed one would read as a speed change. Give the rate they were recorded at (it "
                           "is remembered for each folder):")
        self.setVisible(bool(self.needs))

    def rates(self) -> dict[str, float]:
        """``{folder: rate}`` as typed."""
        return {folder: float(field.value()) for folder, field in self.fields.items()}


class LeftOutBlock(QWidget):
    """The files the manifest will not hold (they could not be read), and a box to agree.

    Signals:
        changed(): the list or the box changed (the page's completeness may change).
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # file names and reasons
        self.text.setAccessibleName("Files left out of the manifest")
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.text)
        self.agree = QCheckBox("Save the manifest without these files")
        self.agree.setAccessibleName("Save the manifest without these files")
        self.agree.toggled.connect(lambda _on: self.changed.emit())
        lay.addWidget(self.agree)
        self.files: list[tuple[str, str]] = []
        self.set_files([])

    def set_files(self, files: list[tuple[str, str]]) -> None:
        """``(path, reason)`` of the files left out (none: the block is hidden)."""
        self.files = list(files)
        self.agree.setChecked(False)
        lines = [f"{api.safe_text(Path(p).name)}: {self._reason(why)}" for p, why in self.files[:NAMED]]
        more = len(self.files) - NAMED
        if more > 0:
            lines.append(f"… and {count_of(more, 'more file')}")
        n = len(self.files)
        self.text.setText(f"{count_of(n, 'file')} you added could not be read and will not be in the manifest "
                          "(click Back to give a frame rate or fix them):\n" + "\n".join(lines))
        self.setVisible(bool(self.files))
        self.changed.emit()

    @staticmethod
    def _reason(why: str) -> str:
        # The readers' words point at the command line; here the rate is given one page back.
        if api.needs_frame_rate(str(why)):
            return "stores no frame rate (give it on the fingerprinting page)"
        return api.safe_text(why, max_len=160)

    def agreed(self) -> bool:
        """True when nothing is left out, or the user agreed to leave it out."""
        return not self.files or self.agree.isChecked()
