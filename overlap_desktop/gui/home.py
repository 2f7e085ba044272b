"""The first screen: "What do you want to do?" in plain words, no jargon."""

from __future__ import annotations

import importlib.util
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QPainter, QPalette, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop.gui.common import headline_label

__all__ = ["HomePage", "demo_available"]

#: (key, title, one-line explanation) of the four choices.
CHOICES: tuple[tuple[str, str, str], ...] = (
    ("screen", "Screen an offer",
     "A seller sent you a manifest file (.ovlm). Find out how much of their footage you already own."),
    ("export", "Prepare a manifest for a buyer",
     "You sell footage. Make a manifest a buyer can check against their own library, "
     "without sending any video."),
    ("verify", "Verify a delivery",
     "The footage you bought has arrived. Check that it is exactly what was quoted."),
    ("library", "My library",
     "The footage you own. Add folders here once; every offer is checked against them."),
)


def demo_available() -> bool:
    """True when the demo module is part of this build (checked without importing it)."""
    try:
        return importlib.util.find_spec("overlap_desktop.services.demo") is not None
    except (ImportError, ValueError):
        return False


#: Width of the focus ring around a focused card.
FOCUS_RING_PX = 3

#: On the home page while the library is empty: the first step.
START_HERE = ("Start by adding your footage: your library is empty, and every offer is checked against it. "
              "Add the folders where your videos and recordings live.")


class _ChoiceButton(QPushButton):
    """A large button with a bold title and an explanation underneath."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(title)
        self.setAccessibleDescription(text)
        self.setToolTip(text)
        self.setMinimumHeight(110)
        self.setMaximumHeight(170)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(18, 14, 18, 14)
        t = QLabel(title)
        f = t.font()
        f.setPointSizeF(f.pointSizeF() * 1.5)
        f.setBold(True)
        t.setFont(f)
        d = QLabel(text)
        d.setWordWrap(True)
        for w in (t, d):
            # Clicks must reach the button, not the labels on top of it.
            w.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
            lay.addWidget(w)
        lay.addStretch(1)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        # A card is a choice: Enter activates it like Space (a plain QPushButton ignores Enter
        # outside a dialog).
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.isAutoRepeat():
            self.animateClick()
            event.accept()
            return
        super().keyPressEvent(event)

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        if not self.hasFocus():
            return
        # Fusion's focus ring is a faint dotted line: draw a clear 3 px ring in the highlight colour.
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), FOCUS_RING_PX)
        painter.setPen(pen)
        half = FOCUS_RING_PX / 2
        painter.drawRoundedRect(self.rect().adjusted(int(half), int(half), -int(half) - 1, -int(half) - 1), 6, 6)
        painter.end()


class HomePage(QWidget):
    """Four big choices and "Try the demo".

    Signals:
        chosen(str): ``"screen"``, ``"export"``, ``"verify"`` or ``"library"``.
        demo_requested(): the user clicked "Try the demo".
        add_footage_requested(): the user clicked "Add your footage…" (empty library).
    """

    chosen = Signal(str)
    demo_requested = Signal()
    add_footage_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(40, 30, 40, 30)
        title = headline_label("What do you want to do?")
        title.setAccessibleName("What do you want to do?")
        outer.addWidget(title)
        sub = QLabel("overlap desktop tells you, before you pay, how much of a video dataset on offer "
                     "you already own. No footage is exchanged: only small manifest files.")
        sub.setWordWrap(True)
        outer.addWidget(sub)
        outer.addSpacing(12)
        self._build_start_here(outer)
        grid = QGridLayout()
        grid.setSpacing(14)
        self.buttons: dict[str, QPushButton] = {}
        for i, (key, title_text, text) in enumerate(CHOICES):
            b = _ChoiceButton(title_text, text, self)
            b.clicked.connect(lambda _=False, k=key: self.chosen.emit(k))
            grid.addWidget(b, i // 2, i % 2)
            self.buttons[key] = b
        outer.addLayout(grid)
        outer.addSpacing(18)
        row = QHBoxLayout()
        self.demo_button = QPushButton("Try the demo")
        self.demo_button.setAccessibleName("Try the demo")
        self.demo_button.clicked.connect(self.demo_requested)
        row.addWidget(self.demo_button)
        self.demo_note = QLabel()
        self.demo_note.setWordWrap(True)
        row.addWidget(self.demo_note, 1)
        outer.addLayout(row)
        outer.addStretch(1)
        self.set_demo_available(demo_available())

    def _build_start_here(self, outer: QVBoxLayout) -> None:
        """"Start by adding your footage", shown while the library is empty (first start)."""
        self.start_frame = QFrame()
        self.start_frame.setObjectName("startHere")
        self.start_frame.setFrameShape(QFrame.Shape.StyledPanel)
        self.start_frame.setStyleSheet("#startHere { border: 2px solid palette(highlight); }")
        row = QHBoxLayout(self.start_frame)
        self.start_label = QLabel(START_HERE)
        self.start_label.setWordWrap(True)
        self.start_label.setAccessibleName("First step")
        self.start_button = QPushButton("Add your footage…")
        self.start_button.setAccessibleName("Add your footage to the library")
        self.start_button.clicked.connect(self.add_footage_requested)
        row.addWidget(self.start_label, 1)
        row.addWidget(self.start_button)
        self.start_frame.hide()
        outer.addWidget(self.start_frame)
        outer.addSpacing(8)

    def set_library_empty(self, empty: bool) -> None:
        """Show the first step while nothing is in the library."""
        self.start_frame.setVisible(empty)

    def set_demo_available(self, available: bool) -> None:
        """Enable "Try the demo", or disable it with a tooltip saying why."""
        self.demo_button.setEnabled(available)
        if available:
            tip = ("Makes a small set of sample videos (the demo library) and a sample offer, then shows "
                   "what a screening looks like. Your own library is not touched.")
            self.demo_note.setText("New here? The demo shows a complete screening on sample footage "
                                   "in under a minute.")
        else:
            tip = "The demo is not included in this build."
            self.demo_note.setText("")
        self.demo_button.setToolTip(tip)
