"""Small shared pieces of the GUI: human messages, number formatting, file opening.

Errors reach the user as a plain sentence with the technical detail behind a
"Show Details..." button: never a traceback dialog.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QLabel, QMessageBox, QWidget

from overlap_desktop.errors import OverlapError

__all__ = ["error_text", "fmt_duration", "fmt_hours", "fmt_size", "headline_label", "open_local_file",
           "show_error", "show_info"]


def error_text(exc: BaseException) -> tuple[str, str]:
    """The sentence to show for ``exc`` and the technical detail behind it.

    Args:
        exc: Any exception that reached the UI.

    Returns:
        ``(message, detail)``: ``message`` is written for a person; ``detail`` is the
        error's own detail and the traceback, for "Show Details...".
    """
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, OverlapError):
        detail = (exc.detail + "\n\n" if exc.detail else "") + tb
        return str(exc), detail
    if isinstance(exc, MemoryError):
        return "The computer ran out of memory for this task. Close other programs and try again.", tb
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return f"{where}{exc.strerror or exc}", tb
    if isinstance(exc, (ImportError, AttributeError)) and "overlap_desktop" in tb:
        return ("This part of overlap desktop is not available in this build. "
                "Please report it to the developers."), tb
    return ("Something went wrong inside overlap desktop (this is a bug, not a problem with your "
            f"files): {type(exc).__name__}: {exc}"), tb


def show_error(parent: QWidget | None, title: str, exc: BaseException) -> QMessageBox:
    """Show ``exc`` as a human message with the detail available on request.

    The box is opened window-modal without a nested event loop (``open()``), so
    workers keep running and tests are not blocked.

    Args:
        parent: Window the message belongs to.
        title: What the user was doing ("Could not open the manifest").
        exc: The error.

    Returns:
        The message box (already shown); its ``text()`` is the human sentence.
    """
    message, detail = error_text(exc)
    box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)  # messages can quote names a seller chose
    box.setDetailedText(detail)
    box.setAccessibleName(title)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    if parent is not None:
        parent.setProperty("last_message", message)
    return box


def show_info(parent: QWidget | None, title: str, message: str) -> QMessageBox:
    """Show a plain information message without blocking the event loop."""
    box = QMessageBox(QMessageBox.Icon.Information, title, message, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setAccessibleName(title)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    if parent is not None:
        parent.setProperty("last_message", message)
    return box


def fmt_hours(seconds: float | None) -> str:
    """``"3.2 h"``, ``"45 min"`` or ``"12 s"`` for a duration in seconds."""
    if seconds is None:
        return "–"
    if seconds >= 3600:
        return f"{seconds / 3600.0:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60.0:.0f} min"
    return f"{seconds:.0f} s"


def fmt_duration(seconds: float | None) -> str:
    """A clock time ``"1:02:03"`` / ``"2:03.5"`` for a position in seconds (the report's wording)."""
    if seconds is None:
        return "–"
    from overlap_desktop import api

    return str(api.format_clock(seconds))


def fmt_size(n: float | None) -> str:
    """Bytes as ``"1.2 GB"``."""
    if n is None:
        return "–"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TB"  # pragma: no cover


#: Replaced in tests so nothing opens a real browser or file manager.
def open_local_file(path: str | os.PathLike[str]) -> bool:
    """Open ``path`` with the system's default application (report viewer, file manager)."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(path).resolve()))))


def headline_label(text: str = "") -> QLabel:
    """A large, wrapping label for a page's main sentence."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # headlines can include offer labels
    label.setWordWrap(True)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 1.35)
    font.setBold(True)
    label.setFont(font)
    return label
