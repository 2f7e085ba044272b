"""Small shared pieces of the GUI: human messages, number formatting, file opening.

Errors reach the user as a plain sentence with the technical detail behind a
"Show Details..." button: never a traceback dialog.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QWidget,
)

from overlap_desktop.api import ManifestError, MediaError, OverlapError

__all__ = ["SavedNote", "SealField", "compact_rows", "count_of", "error_text", "fit_columns", "fit_to_screen",
           "fmt_duration", "fmt_hours", "fmt_size", "headline_label", "open_local_file", "open_or_explain",
           "read_only_table", "show_error", "show_info", "start_folder"]

#: What a person should read first when a manifest cannot be used (the parser's own words go to Details).
MANIFEST_DAMAGED = ("This manifest file is damaged or incomplete, so it cannot be used. Ask the seller to "
                    "send it again (and check it was not cut short while downloading).")
#: The same for a video or recording that cannot be read.
MEDIA_DAMAGED = ("This file could not be read as footage: it is damaged, incomplete or in a format overlap "
                 "cannot open. Check that it plays in a video player, or ask whoever sent it for a new copy.")


def error_text(exc: BaseException) -> tuple[str, str]:
    """The sentence to show for ``exc`` and the technical detail behind it.

    Args:
        exc: Any exception that reached the UI.

    Returns:
        ``(message, detail)``: ``message`` is written for a person; ``detail`` is the
        error's own detail and the traceback, for "Show Details...".
    """
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    # Damaged inputs: lead with what happened and what to do; the format-level reason
    # ("bad magic bytes", "no moov atom", "section ... runs past the end") is for Details.
    for kind, sentence in ((ManifestError, MANIFEST_DAMAGED), (MediaError, MEDIA_DAMAGED)):
        if isinstance(exc, kind):
            where = f"{Path(exc.path).name}: " if exc.path else ""
            detail = str(exc) + ("\n\n" + exc.detail if exc.detail else "") + "\n\n" + tb
            return where + sentence, detail
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
    """``"3.2 h"``, ``"45 min"`` or ``"12 s"`` for a duration in seconds: the report's rule
    (``api.format_duration``), so the app, the HTML report and the CLI round a duration alike."""
    if seconds is None:
        return "–"
    from overlap_desktop import api

    return str(api.format_duration(seconds))


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


def open_or_explain(parent: QWidget | None, path: str | os.PathLike[str], what: str = "the report") -> bool:
    """Open ``path`` with the system's viewer, or say plainly where it is when nothing can open it."""
    if open_local_file(path):
        return True
    show_info(parent, "Nothing could open the file",
              f"No program on this computer opened {what} (for example, no web browser is set up). "
              f"It is saved here:\n\n{Path(path)}\n\nOpen it with a web browser, or copy it to a "
              "computer that has one.")
    return False


class SealField(QWidget):
    """A seal (Merkle root) the user can select and copy: read-only text plus a "Copy" button."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.edit = QLineEdit()
        self.edit.setReadOnly(True)  # selectable and copyable, never editable
        # Not the first thing keyboard focus lands on (it would show the seal all selected).
        self.edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.edit.setAccessibleName("Seal")
        self.edit.setToolTip("The seal is a checksum over everything in the manifest: the seller cannot "
                             "change "
                             "the offer without it changing. Quote it in the purchase order.")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setAccessibleName("Copy the seal")
        self.copy_button.clicked.connect(self.copy)
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.copy_button)

    def set_seal(self, seal: str) -> None:
        self.edit.setText(seal)
        self.edit.setCursorPosition(0)
        self.copy_button.setEnabled(bool(seal) and seal != "–")

    def text(self) -> str:
        return self.edit.text()

    def copy(self) -> None:
        """Put the seal on the clipboard and say so on the button for a moment."""
        QGuiApplication.clipboard().setText(self.edit.text())
        self.copy_button.setText("Copied")
        # The button as context: the timer is dropped if the page is closed before it fires.
        QTimer.singleShot(1500, self.copy_button, lambda: self.copy_button.setText("Copy"))


class SavedNote(QLabel):
    """"Saved: <link to the file>" after a save; clicking the link opens the file."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)  # the link; the path is escaped
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.setOpenExternalLinks(False)
        self.linkActivated.connect(lambda _href: self.path and open_or_explain(self, self.path))
        self.setAccessibleName("Saved file")
        self.path: Path | None = None
        self.hide()

    def set_saved(self, path: str | os.PathLike[str], what: str = "Saved") -> None:
        import html

        self.path = Path(path)
        self.setText(f'{html.escape(what)}: <a href="{QUrl.fromLocalFile(str(self.path)).toString()}">'
                     f"{html.escape(str(self.path))}</a>")
        self.setToolTip("Click to open the file")
        self.show()


def fit_to_screen(window: QWidget, wanted: tuple[int, int], available: Any = None) -> tuple[int, int]:
    """Resize ``window`` to ``wanted`` (width, height) but never beyond the screen's free area.

    A laptop at 1366x768 has about 1366x720 free once the task bar is taken: a window
    taller than that hides its own status bar and buttons.

    Args:
        window: A top-level widget.
        wanted: The size it would like.
        available: The free area (a ``QRect``); default: that of the window's screen.

    Returns:
        The size given to the window.
    """
    if available is None:
        # QWidget.screen explicitly: MainWindow has its own "screen" (the Screen-an-offer page).
        screen = QWidget.screen(window) or QGuiApplication.primaryScreen()
        available = screen.availableGeometry() if screen is not None else None
    w, h = wanted
    if available is not None and available.width() > 0 and available.height() > 0:
        # Leave room for the window frame and title bar, which the geometry does not include.
        w = min(w, available.width() - 16)
        h = min(h, available.height() - 40)
        w = max(w, min(window.minimumWidth(), available.width()))
        h = max(h, min(window.minimumHeight(), available.height()))
    window.resize(w, h)
    return w, h


def fit_columns(table: QTableWidget, *, keep: tuple[int, ...] = (), min_width: int = 56) -> None:
    """Columns as wide as their text, then narrowed so they all fit the table's width.

    A laptop screen cannot show every column at its full text width; a horizontal scroll bar
    would then hide the last columns (the "Counted" one in the results). The widest columns
    give way first (their text is elided; every cell keeps its full text in a tooltip);
    columns in ``keep`` keep their width; none gets narrower than ``min_width``.
    """
    table.resizeColumnsToContents()
    n = table.columnCount()
    avail = table.viewport().width()
    widths = [table.columnWidth(c) for c in range(n)]
    if avail <= 0:
        return
    if sum(widths) <= avail:
        if n and table.horizontalHeader().stretchLastSection():
            # resizeColumnsToContents undid the stretch: the last column takes the room left.
            table.setColumnWidth(n - 1, avail - sum(widths[:-1]))
        return
    fixed = sum(widths[c] for c in keep)
    free = [c for c in range(n) if c not in keep]
    # The largest cap that fits: columns wider than it are cut to it (binary search on pixels).
    lo, hi = min_width, max([widths[c] for c in free], default=min_width)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fixed + sum(min(widths[c], mid) for c in free) <= avail:
            lo = mid
        else:
            hi = mid - 1
    for c in free:
        table.setColumnWidth(c, min(widths[c], lo))


def compact_rows(table: QTableWidget) -> None:
    """Rows one text line high plus a little air (Fusion's default is much taller)."""
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)


def read_only_table(headers: Sequence[str], name: str) -> QTableWidget:
    """A table the user reads but never edits: ``headers`` as columns, compact rows, no row
    numbers, the last column stretched, ``name`` for screen readers."""
    table = QTableWidget(0, len(headers))
    table.setAccessibleName(name)
    table.setHorizontalHeaderLabels(list(headers))
    compact_rows(table)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def start_folder(near: str | Path | None = None) -> str:
    """Where a file dialog opens: beside ``near`` (the last path chosen) when it exists, else the
    home folder. Qt's default is the working directory: the program's own folder on Windows,
    where no footage lives (seen under Xvfb: the wizard's "Add folder" opened in the checkout)."""
    if near:
        p = Path(near).expanduser()
        for cand in (p, p.parent):
            if str(cand) not in ("", ".") and cand.is_dir():
                return str(cand)
    return str(Path.home())


def count_of(n: int, word: str) -> str:
    """``"1 file"``, ``"2 files"``: a count with its noun (seen under Xvfb: "1 files")."""
    return f"{n} {word}{'' if n == 1 else 's'}"
