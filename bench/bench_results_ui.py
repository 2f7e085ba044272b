"""How long the window freezes when comparison results appear (issue 34: 578 ms measured).

Each run is a fresh process (so pyqtgraph is not yet imported, as in the app): it opens
"Screen an offer" offscreen on generated footage, clicks Compare and records the gaps between
the ticks of a 10 ms timer on the UI thread until the results are shown. ``--no-preload``
turns off the background import of the plot library to show what it saves.

``--files N`` (issue 38 item 6) shows a report of N offered files instead, made in memory by
tests/large_report.py (owned, slowed, mirrored, spliced, repeated, can't-tell and new files; no
footage), and records the worst gap per step: the result appears (first row with a match
selected), the table is sorted by clicking column titles four times, the first row is selected,
the selection moves (arrow keys, Page Down, Ctrl+End, Ctrl+Home). The plot library is imported
first, as the app does while comparing. As in bench_ui.py, the time the UI thread waited for a
CPU (Linux schedstat) is taken out of each gap.

Usage::

    python bench/bench_results_ui.py [--runs 3] [--no-preload]
    python bench/bench_results_ui.py --files 10000 [--runs 3]

No assertions: tests/gui/test_issue34_results.py checks the structural condition (the import
starts in a background thread when the comparison starts), tests/gui/test_results_large.py
that a 10,000-file result shows, sorts and selects every row; this prints milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _prepare(work: Path) -> tuple[Path, Path]:
    """A small library and an offer of it (generated clips), made once for all runs."""
    from overlap_desktop import api
    from tests.footage import make_clip

    owned, offer = work / "owned", work / "offer"
    make_clip(owned / "a.mp4", 11, duration=30.0, fps=12.0, size=(160, 120))
    make_clip(offer / "copy.mp4", 11, duration=20.0, fps=12.0, size=(160, 120), t0=5.0)
    make_clip(offer / "new.mp4", 12, duration=20.0, fps=12.0, size=(160, 120))
    lib, vendor = work / "lib", work / "vendor"
    api.index_paths([owned], index=lib)
    api.index_paths([offer], index=vendor)
    api.export_manifest(vendor, work / "offer.ovlm", label="bench")
    return lib, work / "offer.ovlm"


def _one_run(lib: Path, manifest: Path, preload: bool) -> dict[str, float]:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from overlap_desktop.gui import screen as screen_mod
    from overlap_desktop.gui.main_window import MainWindow
    from overlap_desktop.gui.state import AppState

    if not preload:
        screen_mod.preload_plot_library = lambda: None  # type: ignore[assignment]
    win = MainWindow(AppState({"index.path": str(lib)}))
    win.show()
    page = win.screen
    page.open_manifest(manifest)
    end = time.monotonic() + 120
    while page.summary is None and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.005)
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()
    page.compare()
    while page.report is None and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.002)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.005)
    timer.stop()
    return {"worst_gap_ms": 1000.0 * max(gaps, default=0.0)}


def _large_run(n_files: int) -> dict[str, float]:
    """Worst UI-thread gap (ms) per step while a report of ``n_files`` files is shown and used."""
    from PySide6.QtCore import QEventLoop, QPoint, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from bench.bench_ui import run_queue_wait_s
    from overlap_desktop.gui.screen import ScreenOfferPage, preload_plot_library
    from overlap_desktop.gui.state import AppState
    from tests.large_report import large_report

    app = QApplication.instance() or QApplication([])
    report = large_report(n_files)  # what the comparison's worker hands over
    page = ScreenOfferPage(AppState())
    page.resize(1366, 768)
    page.show()
    preloading = preload_plot_library()
    if preloading is not None:
        preloading.join()  # imported while the comparison ran (timed by the default mode)
    worst: dict[str, float] = {}
    phase = ["idle"]
    last = [time.perf_counter(), run_queue_wait_s()]

    def tick() -> None:
        now, wait = time.perf_counter(), run_queue_wait_s()
        waited = (wait - last[1]) if wait is not None and last[1] is not None else 0.0
        gap = now - last[0] - waited
        worst[phase[0]] = max(worst.get(phase[0], 0.0), 1000.0 * gap)
        last[0], last[1] = now, wait

    def table() -> Any:
        return page.results.file_table  # type: ignore[union-attr]

    def click_title(column: int) -> Any:
        def click() -> None:
            head = table().horizontalHeader()
            x = head.sectionViewportPosition(column) + head.sectionSize(column) // 2
            QTest.mouseClick(head.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, head.height() // 2))
        return click

    def key(k: Any, mod: Any = Qt.KeyboardModifier.NoModifier) -> Any:
        return lambda: QTest.keyClick(table(), k, mod)

    steps: list[tuple[str, Any]] = [
        ("appear", lambda: page.show_report(report, None)),
        ("sort", click_title(2)),
        ("sort", click_title(6)),  # by words: the costliest key
        ("sort", click_title(0)),
        ("sort", click_title(0)),  # Z to A
        ("select first row", lambda: table().selectRow(0)),
        *[("move selection", key(Qt.Key.Key_Down)) for _ in range(20)],
        *[("move selection", key(Qt.Key.Key_PageDown)) for _ in range(3)],
        ("move selection", key(Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)),
        ("move selection", key(Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)),
    ]
    loop = QEventLoop()

    def run(i: int) -> None:
        if i == len(steps):
            loop.quit()
            return
        phase[0] = steps[i][0]
        steps[i][1]()
        # Every step is followed by a pause, so its repaints and queued work land in its phase.
        QTimer.singleShot(300 if i < 6 else 60, lambda: run(i + 1))

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()
    QTimer.singleShot(200, lambda: run(0))
    loop.exec()
    timer.stop()
    rows = table().model().rowCount()
    if rows != n_files:
        raise SystemExit(f"the table shows {rows} rows, not {n_files}")
    worst.pop("idle", None)
    del app
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-preload", action="store_true")
    ap.add_argument("--files", type=int, default=0, help="show a report of this many files instead")
    ap.add_argument("--child", nargs=2, metavar=("LIB", "MANIFEST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.files and args.child:
        print(json.dumps(_large_run(args.files)))
        return
    if args.files:
        _large_main(args.files, args.runs)
        return
    if args.child:
        print(json.dumps(_one_run(Path(args.child[0]), Path(args.child[1]), not args.no_preload)))
        return
    work = Path(tempfile.mkdtemp(prefix="overlap-bench-results-"))
    os.environ["XDG_DATA_HOME"] = str(work / "data")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    lib, manifest = _prepare(work)
    worst: list[float] = []
    for _ in range(args.runs):
        cmd = [sys.executable, __file__, "--child", str(lib), str(manifest)]
        if args.no_preload:
            cmd.append("--no-preload")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ))
        worst.append(json.loads(out.stdout.strip().splitlines()[-1])["worst_gap_ms"])
    what = "without" if args.no_preload else "with"
    print(f"longest UI-thread block from Compare to results, {what} the background import: "
          + ", ".join(f"{w:.0f} ms" for w in worst))


def _large_main(n_files: int, runs: int) -> None:
    """Each run in a fresh process: the figures are about a result's first appearance."""
    work = Path(tempfile.mkdtemp(prefix="overlap-bench-results-"))
    env = dict(os.environ, XDG_DATA_HOME=str(work / "data"), XDG_CONFIG_HOME=str(work / "config"))
    t0 = time.monotonic()
    per_run: list[dict[str, float]] = []
    for _ in range(runs):
        cmd = [sys.executable, __file__, "--files", str(n_files), "--child", "-", "-"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        per_run.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{n_files} offered files, {runs} runs in {time.monotonic() - t0:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f}; worst UI-thread gap (OS scheduling delay taken out):")
    for name in per_run[0]:
        print(f"  {name}: " + ", ".join(f"{r[name]:.0f} ms" for r in per_run))


if __name__ == "__main__":
    main()
