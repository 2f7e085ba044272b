"""Pieces of the results view: owner words, table items, the scaled frame label, extra lines.

Kept apart from :mod:`overlap_desktop.gui.results` so each module stays a page or two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QTableWidgetItem

from overlap_desktop import api

__all__ = ["DEMO_WORDS", "MAX_EXTRA_LINES", "YOUR_WORDS", "FrameLabel", "OwnerWords", "extra_lines",
           "owner_words", "rgb_to_pixmap", "short_names", "table_item"]


@dataclass(frozen=True)
class OwnerWords:
    """How the results name the owned side: the user's own footage, or the demo's sample library
    (the demo's report is shown in an empty profile, where "you own" would be untrue)."""

    frame_title: str
    prompt: str
    note: str
    caption_file: str
    caption_copy: str
    column: str
    counted: str
    owns: str
    axis: str
    side: str
    click: str
    no_match: str
    footage: str


YOUR_WORDS = OwnerWords(
    frame_title="Your owned frame",
    prompt="Click a dot in the plot (or a row of the table below it) to see the frame of your own footage it matched.",
    note="The manifest carries no pictures: frames are shown from your own copy of the footage.",
    caption_file="Your file", caption_copy="your own copy", column="You own", counted="yes: footage you own",
    owns="match footage you own", axis="Your file (s)", side="yours", click="Click to see your own frame",
    no_match="No match: none of this file matches your footage", footage="your footage")

DEMO_WORDS = OwnerWords(
    frame_title="Demo library frame",
    prompt=("Click a dot in the plot (or a row of the table below it) to see the frame of the demo's sample "
            "library it matched."),
    note=("The manifest carries no pictures: frames are shown from the demo's sample library (generated "
          "footage, not yours)."),
    caption_file="Demo library file", caption_copy="the demo's sample library", column="In the demo library",
    counted="yes: in the demo library", owns="match the demo's sample library", axis="Demo file (s)",
    side="demo library", click="Click to see the demo library's frame",
    no_match="No match: none of this file matches the demo's sample library",
    footage="the demo's sample library")


def owner_words(report: Any) -> OwnerWords:
    """:data:`DEMO_WORDS` for a report made against the demo's sample library, else :data:`YOUR_WORDS`."""
    return DEMO_WORDS if getattr(report, "demo_library", False) else YOUR_WORDS


def rgb_to_pixmap(rgb: Any) -> QPixmap:
    """Convert an RGB ``uint8 (h, w, 3)`` array to a pixmap (UI thread only)."""
    h, w = rgb.shape[:2]
    img = QImage(rgb.data, w, h, int(rgb.strides[0]), QImage.Format.Format_RGB888)
    return QPixmap.fromImage(img.copy())  # copy: the array may be freed after return


def table_item(text: str, tip: str = "", sort: Any = None) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    # The full text in a tip when no other is given: narrowed columns elide their cells.
    it.setToolTip(tip or text)
    if sort is not None:
        it.setData(Qt.ItemDataRole.UserRole, sort)
    return it


#: Lines of evaluation examples and episode matches shown under the details (all are in the reports).
MAX_EXTRA_LINES = 8


def extra_lines(report: Any) -> list[str]:
    """Matched evaluation examples and episode matches, one plain line each (capped)."""
    out: list[str] = []
    block = getattr(report, "text_overlap", None) or {}
    examples = [e for e in block.get("matched_examples", []) if isinstance(e, dict)]
    if block.get("status") == "checked" and examples:
        out.append("Your evaluation examples sharing an n-gram with the vendor's annotations:")
        out += [f"  • {api.safe_text(e.get('locator', ''), max_len=40)}: "
                f"{api.safe_text(e.get('text', ''), max_len=160)}" for e in examples[:MAX_EXTRA_LINES]]
    labels = [e.get("label", "") for f in report.files for e in f.episodes
              if isinstance(e, dict) and not e.get("below_floor")]
    if labels:
        out.append("Episodes:")
        out += [f"  • {api.safe_text(x, max_len=160)}" for x in labels[:MAX_EXTRA_LINES]]
    more = max(0, len(examples) - MAX_EXTRA_LINES) + max(0, len(labels) - MAX_EXTRA_LINES)
    if more:
        out.append(f"  … {more} more in the saved reports")
    return out


class FrameLabel(QLabel):
    """Shows a frame scaled to fit, re-scaled when the label is resized."""

    def __init__(self, text: str = "") -> None:
        super().__init__(text)
        self._frame: QPixmap | None = None

    def set_frame(self, pm: QPixmap) -> None:
        self._frame = pm
        self._rescale()

    def clear_frame(self, text: str) -> None:
        """Drop the frame and show ``text`` instead."""
        self._frame = None
        self.clear()
        self.setText(text)

    def has_frame(self) -> bool:
        return self._frame is not None

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self._frame is not None:
            self._rescale()

    def _rescale(self) -> None:
        assert self._frame is not None
        # Scale in device pixels so the frame stays sharp on high-DPI screens.
        dpr = self.devicePixelRatioF()
        box = self.contentsRect().size() * dpr
        pm = self._frame.scaled(box, Qt.AspectRatioMode.KeepAspectRatio,
                                Qt.TransformationMode.SmoothTransformation)
        pm.setDevicePixelRatio(dpr)
        self.setPixmap(pm)

    def sizeHint(self) -> Any:
        # Never ask for the pixmap's size: the frame follows the layout, not the other way round.
        return super().minimumSizeHint()


def short_names(paths: list[str], *, max_len: int = 40) -> dict[str, str]:
    """The shortest tail of each path that tells it apart from the others: ``a.mp4``, or
    ``kitchen/a.mp4`` and ``backup/a.mp4`` when two owned files share a name."""
    parts = {p: api.safe_text(p).replace("\\", "/").split("/") for p in paths}
    out: dict[str, str] = {}
    for p, bits in parts.items():
        k = 1
        while k < len(bits) and any(q != p and parts[q][-k:] == bits[-k:] for q in parts):
            k += 1
        text = "/".join(bits[-k:])
        # Cut at the front: the end of a name (its number, its extension) is what tells files apart.
        out[p] = text if len(text) <= max_len else "…" + text[-(max_len - 1):]
    return out
