"""Entry point of ``overlap-desktop``: ``run()`` for the launcher, ``main(argv) -> int`` for tests.

Start-up must reach a visible window quickly, so this module imports only Qt
widgets and the light parts of the package; PyAV, pyqtgraph and the
matcher load when a page first needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Qt is imported late so that --version and --help start fast
    from PySide6.QtGui import QPalette

_T0 = time.perf_counter()

__all__ = ["APP_NAME", "ORG_NAME", "apply_color_scheme", "create_app", "dark_palette", "launch", "main",
           "missing_window_libraries", "run"]

ORG_NAME = "overlap"
APP_NAME = "overlap-desktop"


def _parser() -> argparse.ArgumentParser:
    from overlap_desktop import __version__

    p = argparse.ArgumentParser(prog="overlap-desktop",
                                description="Desktop app: screen dataset offers against the footage "
                                            "you own.")
    p.add_argument("--version", action="version", version=f"overlap-desktop {__version__}")
    p.add_argument("--self-test", action="store_true",
                   help="open the main window, process events and exit 0 (used to smoke-test builds)")
    p.add_argument("--index", metavar="DIR", help="index folder to use instead of the configured one")
    p.add_argument("manifest", nargs="?", help="a .ovlm manifest to open in 'Screen an offer'")
    return p


def dark_palette() -> QPalette:
    """A Fusion dark palette, used when the system asks for dark but the style stays light."""
    from PySide6.QtGui import QColor, QPalette

    p = QPalette()
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    colours = {
        role.Window: "#2b2b2b", role.WindowText: "#e6e6e6", role.Base: "#1f1f1f",
        role.AlternateBase: "#2f2f2f", role.ToolTipBase: "#3a3a3a", role.ToolTipText: "#f0f0f0",
        role.Text: "#e6e6e6", role.Button: "#353535", role.ButtonText: "#e6e6e6",
        role.BrightText: "#ff6b6b", role.Link: "#6cb4ff", role.Highlight: "#2f7fd1",
        role.HighlightedText: "#ffffff", role.PlaceholderText: "#9a9a9a", role.Light: "#4a4a4a",
        role.Midlight: "#3e3e3e", role.Mid: "#303030", role.Dark: "#1a1a1a", role.Shadow: "#000000",
    }
    for r, c in colours.items():
        p.setColor(r, QColor(c))
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(group.Disabled, r, QColor("#8a8a8a"))
    return p


def apply_color_scheme(app: object, *, force: str | None = None) -> None:
    """Use Fusion and follow the system light/dark scheme (and its later changes).

    Fusion draws the same on every platform and, from Qt 6.5, derives its palette
    from ``QStyleHints.colorScheme()``; where a platform reports dark but the
    palette stays light, a dark palette is applied so text stays readable.

    Args:
        app: The ``QApplication``.
        force: ``"dark"`` or ``"light"`` to ignore the system (screenshots, tests).
    """
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    assert isinstance(app, QApplication)
    app.setStyle("Fusion")
    hints = app.styleHints()

    def update(*_: object) -> None:
        style = app.style()
        if style is None:
            return
        palette = style.standardPalette()
        dark = (force == "dark") or (force is None and hints.colorScheme() == Qt.ColorScheme.Dark)
        if dark and palette.window().color().lightness() > 128:
            palette = dark_palette()
        app.setPalette(palette)

    update()
    if force is None and hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(update)


def create_app(argv: Sequence[str] | None = None) -> object:
    """Return the running ``QApplication`` or create one with our names and style.

    Organisation and application names are set so ``QSettings()`` finds our
    settings; tests point ``QSettings`` at a temporary ini file instead.
    """
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setOrganizationName(ORG_NAME)
    QCoreApplication.setOrganizationDomain("overlap.invalid")
    QCoreApplication.setApplicationName(APP_NAME)
    app = QApplication.instance()
    if app is None:
        # Qt 6 scales for high DPI by itself (pass-through rounding is the default).
        app = QApplication(list(argv) if argv else [sys.argv[0] if sys.argv else APP_NAME])
    QGuiApplication.setApplicationDisplayName("overlap desktop")
    if hasattr(QGuiApplication, "setDesktopFileName"):
        QGuiApplication.setDesktopFileName(APP_NAME)
    apply_color_scheme(app)
    return app


def missing_window_libraries() -> str:
    """One line naming the system libraries Qt needs to open a window here and cannot find
    (``""``: none missing). Qt itself would abort with a long plugin error instead, before any
    message of ours could appear."""
    from overlap_desktop import api

    if not api.qt_uses_xcb():
        return ""
    missing = api.missing_display_libraries()
    return api.display_libraries_message(missing) if missing else ""


def launch(argv: Sequence[str] | None = None) -> object:
    """Parse arguments and open the main window, without entering the event loop.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The shown :class:`~overlap_desktop.gui.main_window.MainWindow`, or an ``int``
        exit status when no window is wanted (``--version``, ``--help``, bad arguments,
        ``--self-test``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --version / --help / bad arguments: no window is created
        return int(exc.code or 0)
    if args.self_test and not os.environ.get("QT_QPA_PLATFORM"):
        # A frozen build is smoke-tested on machines without a display.
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    missing = missing_window_libraries()
    if missing:
        print(missing, file=sys.stderr, flush=True)
        return 1
    app = create_app()
    from PySide6.QtWidgets import QApplication

    from overlap_desktop.gui.main_window import MainWindow
    from overlap_desktop.gui.state import AppState

    overrides = {"index.path": args.index} if args.index else {}
    state = AppState(overrides)
    window = MainWindow(state)
    window.show()
    assert isinstance(app, QApplication)
    app.processEvents()
    startup_s = time.perf_counter() - _T0
    if args.self_test:
        ok = window.isVisible() and window.home.isVisible()
        # The results plot too: pyqtgraph loads modules a frozen bundle may lack (QtOpenGL's
        # stand-in, rthook_no_qtopengl.py), and the main window creates it only for results.
        from overlap_desktop.gui.plot import MatchPlot

        plot = MatchPlot()
        plot.resize(320, 200)
        ok = ok and not plot.grab().isNull()
        plot.deleteLater()
        for _ in range(3):
            app.processEvents()
        print(f"overlap-desktop self-test: {'ok' if ok else 'FAILED'}; window visible after "
              f"{startup_s * 1000:.0f} ms", flush=True)
        window.close()
        window.deleteLater()
        app.processEvents()
        return 0 if ok else 1
    if args.manifest:
        window.open_manifest(Path(args.manifest))
    return window


def main(argv: Sequence[str] | None = None) -> int:
    """Start the desktop app and run it until the window closes.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 normally, 2 for bad arguments, 1 if ``--self-test`` fails.
    """
    window = launch(argv)
    if isinstance(window, int):
        return window
    from PySide6.QtWidgets import QApplication

    from overlap_desktop.gui.workers import wait_all

    status = int(QApplication.exec())
    wait_all()  # a job started while the window closed must not outlive its thread object
    return status


def run() -> None:
    """Console/GUI-script entry point."""
    __import__("multiprocessing").freeze_support()  # frozen bundle: a worker process starts here (issue 18)
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
