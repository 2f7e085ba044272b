"""Render every screen of the desktop app at laptop and desktop sizes to ``docs/assets/*.png``.

Usage::

    python docs/screenshots.py [--out docs/assets] [--sizes 1366x768,1920x1080] [--work DIR]

The library, the offer and the delivery live in ``--work`` and their paths show on the screens
(status bar, wizards): for the published pictures pass a neutral folder, e.g. ``--work
/home/lab``, not a temporary one.

Each size runs in a child process with a fresh application. When no display is set and
``xvfb-run`` is installed (``apt-get install xvfb``), each child runs under a real X server
(Xvfb) of exactly that screen size, so the window is placed and sized as on such a screen;
otherwise Qt's offscreen platform is used with the same screen size assumed. Files are
named ``<screen>-<width>x<height>.png``.

The screens show a real run: the bundled demo (``api.run_demo``) generates owned
footage and a planted offer, indexes, exports and compares them; the wizards then
run on the same footage. Nothing touches the user's own library or settings:
settings, the index and vendor workspaces live in a temporary folder, which stands in for the
home folder: the footage and the library sit in ``~/Robot footage``, and the paths on screen
are shown from ``~`` so the pictures name no folder of the machine that rendered them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SIZES = ("1366x768", "1920x1080")
#: The screen size of this child process (set by ``--size``).
SCREEN = [1366, 768]


def _wait(cond: Callable[[], bool], timeout: float = 120.0) -> None:
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("screen did not get ready in time")
        QApplication.processEvents()
        time.sleep(0.01)


def _settle(ms: int = 150) -> None:
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


SUFFIX = [""]


#: The stand-in home folder of this child (set in main): shown as ``~`` on screen.
HOME: list[str] = []


def _from_home(widget: object) -> list[tuple[Callable[[str], None], str]]:
    """Show every path under the stand-in home from ``~`` in ``widget``'s labels, fields and tables;
    returns how to put the real texts back (the app keeps working on its real paths)."""
    from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QTableWidget, QWidget

    undo: list[tuple[Callable[[str], None], str]] = []
    if not HOME or not isinstance(widget, QWidget):
        return undo

    def swap(text: str, setter: Callable[[str], None]) -> None:
        if HOME[0] in text:
            undo.append((setter, text))
            setter(text.replace(HOME[0], "~"))

    for label in [*widget.findChildren(QLabel)]:
        swap(label.text(), label.setText)
    for edit in widget.findChildren(QLineEdit):
        swap(edit.text(), edit.setText)
    for table in widget.findChildren(QTableWidget):
        for r in range(table.rowCount()):
            for c in range(table.columnCount()):
                item = table.item(r, c)
                if item is not None:
                    swap(item.text(), item.setText)
    # The vendor wizard's folder list showed the machine's path (seen in export-folders).
    for lst in widget.findChildren(QListWidget):
        for r in range(lst.count()):
            entry = lst.item(r)
            swap(entry.text(), entry.setText)
    swap(widget.windowTitle(), widget.setWindowTitle)
    return undo


def _save(widget: object, out: Path, name: str, *, settle: bool = True) -> Path:
    """Grab ``widget`` with paths shown from ``~``. ``settle=False`` grabs at once: a screen that
    changes by itself (indexing) would otherwise move on, or put its paths back, before the grab."""
    if settle:
        _settle()
    undo = _from_home(widget)
    if settle:
        _settle()
    path = out / f"{name}-{SCREEN[0]}x{SCREEN[1]}{SUFFIX[0]}.png"
    widget.grab().save(str(path))  # type: ignore[attr-defined]
    for setter, text in reversed(undo):
        try:
            setter(text)
        except RuntimeError:
            pass  # the widget was rebuilt meanwhile (the library table refreshes while indexing)
    print(f"wrote {path}", flush=True)
    return path


def _fit(window: object, wanted: tuple[int, int]) -> None:
    """Size a window as it would be on this screen (offscreen: assume the screen given by --size)."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QGuiApplication

    from overlap_desktop.gui.common import fit_to_screen

    avail = None
    if QGuiApplication.platformName() == "offscreen":
        avail = QRect(0, 0, SCREEN[0], SCREEN[1])
    fit_to_screen(window, wanted, avail)  # type: ignore[arg-type]
    window.move(0, 0)  # type: ignore[attr-defined]


def _children(args: argparse.Namespace) -> int:
    """Run one child per size, under Xvfb when there is no display and xvfb-run exists."""
    want_x = not os.environ.get("DISPLAY") and args.platform != "offscreen"
    xvfb = shutil.which("xvfb-run") if want_x else None
    status = 0
    for size in args.sizes.split(","):
        w, h = (int(x) for x in size.lower().split("x"))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--size", f"{w}x{h}", "--out", str(args.out)]
        if args.work:
            cmd += ["--work", str(Path(args.work) / f"{w}x{h}")]
        if args.dark:
            cmd.append("--dark")
        env = dict(os.environ)
        if xvfb:
            # -a: a free display number; the screen is exactly the size being shown.
            cmd = [xvfb, "-a", "-s", f"-screen 0 {w}x{h}x24"] + cmd + ["--platform", "xcb"]
            env["QT_QPA_PLATFORM"] = "xcb"
        else:
            cmd += ["--platform", "offscreen"]
            env["QT_QPA_PLATFORM"] = "offscreen"
        print(("under Xvfb: " if xvfb else "offscreen: ") + f"{w}x{h}", flush=True)
        status |= subprocess.call(cmd, env=env)
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "assets")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp folder)")
    ap.add_argument("--dark", action="store_true", help="render with the dark palette (files *-dark.png)")
    ap.add_argument("--sizes", default=",".join(SIZES), help="screen sizes, e.g. 1366x768,1920x1080")
    ap.add_argument("--size", default=None, help=argparse.SUPPRESS)  # one child's screen size
    ap.add_argument("--platform", choices=("auto", "xcb", "offscreen"), default="auto",
                    help="auto: Xvfb when available (no DISPLAY), else offscreen")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.size is None:
        return _children(args)
    SCREEN[:] = [int(x) for x in args.size.lower().split("x")]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if args.platform != "xcb" else "xcb")
    SUFFIX[0] = "-dark" if args.dark else ""
    scratch = args.work or Path(tempfile.mkdtemp(prefix="overlap-screens-"))
    # The scratch folder plays the home folder; the library and footage live in ~/Robot footage.
    home = (scratch / "home").resolve()
    marker = home / ".overlap-screens"
    if home.exists():
        # A rerun into the same --work folder starts from a clean home (the demo refuses to write
        # over its own earlier footage and library); only a folder this script made is removed.
        if not marker.exists():
            raise SystemExit(f"{home} exists and was not made by docs/screenshots.py: pass another --work folder")
        shutil.rmtree(home)
    work = home / "Robot footage"
    work.mkdir(parents=True, exist_ok=True)
    marker.touch()
    HOME[:] = [str(home)]
    os.environ["HOME"] = str(home)
    # Isolate every setting: QSettings, platformdirs (index, user overlap.toml).
    for var, sub in (("XDG_DATA_HOME", ".local/share"), ("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"),
                     ("XDG_DOCUMENTS_DIR", "Documents")):
        os.environ[var] = str(home / sub)
    (home / "Documents").mkdir(parents=True, exist_ok=True)
    for key in [k for k in os.environ if k.startswith("OVERLAP_")]:
        del os.environ[key]

    from PySide6.QtCore import QSettings

    from overlap_desktop.gui.app import create_app

    app = create_app()
    if args.dark:
        from overlap_desktop.gui.app import apply_color_scheme

        apply_color_scheme(app, force="dark")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(home / ".config" / "qsettings"))
    from overlap_desktop.gui import common
    from overlap_desktop.gui.export_wizard import ExportWizard
    from overlap_desktop.gui.main_window import MainWindow
    from overlap_desktop.gui.settings_dialog import SettingsDialog
    from overlap_desktop.gui.state import AppState
    from overlap_desktop.gui.verify_wizard import VerifyWizard

    common.open_local_file = lambda p: True  # type: ignore[assignment]

    print("running the demo through the window (generates footage, indexes, exports, compares)…",
          flush=True)
    state = AppState({"index.path": str(work / "lab-index")})
    win = MainWindow(state)
    _fit(win, (SCREEN[0], SCREEN[1]))  # as large as the screen allows
    win.show()
    screen = win.screen
    win.start_demo(work / "demo")
    _wait(lambda: screen.report is not None, timeout=600)
    demo_dir = work / "demo"
    manifest = demo_dir / "demo-offer.ovlm"
    offer_dir = demo_dir / "offer"
    _save(win, out, "demo-results")

    # From here on the demo's lab index plays the user's library.
    state.overrides["index.path"] = str(demo_dir / "lab-index")
    state.reload()
    state.add_recent(manifest)
    win.go("home")
    _wait(lambda: not win.library.load_job.running and win.library.table.rowCount() > 0)
    _save(win, out, "home")

    win.go("library")
    _save(win, out, "library")

    win.open_manifest(manifest)
    _wait(lambda: screen.summary is not None and screen.summary.info is not None)
    _save(win, out, "screen-offer")
    screen.compare()
    _wait(lambda: screen.report is not None and screen.compare_job is not None
          and not screen.compare_job.running)
    view = screen.results
    # Show the most telling file: the slowed-down copy if there is one.
    files = screen.report.files
    pick = next((i for i, f in enumerate(files) if any(abs(s.speed) < 0.9 for s in f.segments)),
                next((i for i, f in enumerate(files) if f.segments), 0))
    name = files[pick].query_file
    row = next(r for r in range(view.file_table.rowCount()) if view.file_table.item(r, 0).text() == name)
    view.file_table.selectRow(row)
    seg = files[pick].segments[0] if files[pick].segments else None
    if seg is not None and seg.pairs is not None and len(seg.pairs):
        q, c, d = (float(v) for v in seg.pairs[len(seg.pairs) // 2])
        view.plot.click_point(q, c, (0, d))
        _wait(lambda: view.preview.pixmap() is not None and not view.preview.pixmap().isNull())
    _save(win, out, "results")

    # Vendor wizard on the demo's offer folder, with a scratch index.
    wiz = ExportWizard(state, win)
    _fit(wiz, (800, 600))
    wiz.show()
    # The vendor's folder holds one file twice, so the duplicate check has something to show.
    vendor_dir = Path(shutil.copytree(offer_dir, work / "vendor-offer"))
    first = sorted(vendor_dir.glob("*.mp4"))[0]
    shutil.copy(first, vendor_dir / ("copy-of-" + first.name))
    wiz.folders_page.add_folder(vendor_dir)
    wiz.folders_page.name.setText("Q3 bench picking (demo)")
    _wait(wiz.folders_page.isComplete)  # the folder is checked for footage in a worker
    _save(wiz, out, "export-folders")
    wiz.next()
    _wait(wiz.fingerprint.isComplete)
    wiz.next()
    _wait(wiz.dedupe.isComplete)
    _save(wiz, out, "export-duplicates")
    wiz.next()
    _save(wiz, out, "export-options")
    wiz.next()
    _wait(wiz.save.isComplete)
    _save(wiz, out, "export-summary")
    wiz.close()

    # Delivery check: the demo offer folder against its manifest, one file tampered with.
    delivery = Path(shutil.copytree(offer_dir, work / "delivery"))
    victim = sorted(delivery.glob("*.mp4"))[0]
    with open(victim, "r+b") as fh:
        fh.seek(256)
        fh.write(b"\x00\x01\x02")
    (delivery / "Thumbs.db").write_bytes(b"made by the computer, ignored")
    vwiz = VerifyWizard(state, win, manifest=manifest)
    _fit(vwiz, (800, 600))
    vwiz.show()
    vwiz.next()
    vwiz.folder_page.edit.setText(str(delivery))
    vwiz.next()
    _wait(lambda: vwiz.verify_result() is not None and vwiz.currentPage() is vwiz.result_page)
    _save(vwiz, out, "verify")
    vwiz.close()

    dlg = SettingsDialog(state, win)
    dlg.show()
    _save(dlg, out, "settings")
    dlg.close()

    # Indexing in progress (last: it adds the offer to the library shown above).
    win.go("library")
    lib = win.library
    lib.add_folders([str(offer_dir)])
    _wait(lambda: lib.overall_bar.maximum() == 1000 and lib.overall_bar.value() > 50)
    _save(win, out, "library-indexing", settle=False)
    _wait(lambda: not lib.indexing)

    win.close()
    app.processEvents()
    from overlap_desktop.gui.workers import wait_all

    wait_all()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
