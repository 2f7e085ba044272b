"""How long the window freezes when comparison results appear (issue 34: 578 ms measured).

Each run is a fresh process (so pyqtgraph is not yet imported, as in the app): it opens
"Screen an offer" offscreen on generated footage, clicks Compare and records the gaps between
the ticks of a 10 ms timer on the UI thread until the results are shown. ``--no-preload``
turns off the background import of the plot library to show what it saves.

Usage::

    python bench/bench_results_ui.py [--runs 3] [--no-preload]

No assertions: tests/gui/test_issue34_results.py checks the structural condition (the import
starts in a background thread when the comparison starts); this prints milliseconds.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-preload", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("LIB", "MANIFEST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
