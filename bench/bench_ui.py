"""Responsiveness of the desktop app while the library indexes (figures for bench/RESULTS.md).

Opens the library page offscreen, indexes a folder of generated clips, and records the gaps
between the ticks of a 10 ms timer on the UI thread. On Linux the time the UI thread was
runnable but not given a CPU by the OS (other processes on a loaded machine) is taken out of
each gap and printed separately: that delay is the machine's, not the app's.

Usage::

    python bench/bench_ui.py [--clips 4] [--seconds 12] [--warm-up] [--results]

``--warm-up`` first lets the main window's background import of the indexing and plotting
code finish (what the app does while the home page shows); ``--results`` then times how long
the UI thread is blocked when a comparison's results first appear. Run each variant in a
fresh process: the figures are about first use.

No assertions: tests/gui/test_library.py checks the structural condition (the event loop turns
while the job runs); this prints the worst gap in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run_queue_wait_s() -> float | None:
    """Seconds this thread spent runnable but waiting for a CPU (Linux schedstat)."""
    try:
        with open(f"/proc/self/task/{__import__('threading').get_native_id()}/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--warm-up", action="store_true", help="import in the background first, as the app does")
    ap.add_argument("--results", action="store_true", help="also time the first display of results")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="overlap-bench-ui-"))
    os.environ["XDG_DATA_HOME"] = str(work / "data")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from overlap_desktop.gui.library import LibraryPage
    from overlap_desktop.gui.state import AppState
    from tests.footage import make_clip

    folder = work / "footage"
    for i in range(args.clips):
        make_clip(folder / f"clip-{i}.mp4", 300 + i, duration=args.seconds)
    app = QApplication.instance() or QApplication([])
    if args.warm_up:
        from overlap_desktop.gui.workers import warm_up_imports

        warm_up_imports().join()
    state = AppState()
    page = LibraryPage(state)
    page.resize(1200, 700)
    page.show()
    gaps: list[float] = []
    sched: list[float] = []
    last = [time.perf_counter(), run_queue_wait_s()]

    at: list[float] = []

    def tick() -> None:
        now, wait = time.perf_counter(), run_queue_wait_s()
        waited = (wait - last[1]) if wait is not None and last[1] is not None else 0.0
        at.append(now)
        gaps.append(now - last[0] - waited)
        sched.append(waited)
        last[0], last[1] = now, wait

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    loop = QEventLoop()
    page.indexing_finished.connect(lambda *_: loop.quit())
    timer.start()
    t0 = time.perf_counter()
    page.add_folders([str(folder)])
    loop.exec()
    timer.stop()
    wall = time.perf_counter() - t0
    print(f"indexed {args.clips} clips of {args.seconds:g} s in {wall:.1f} s; {len(gaps)} ticks")
    print(f"worst event-loop gap: {max(gaps) * 1000:.0f} ms (OS scheduling delay taken out; "
          f"up to {max(sched) * 1000:.0f} ms of it per gap)")
    print(f"99th percentile gap: {sorted(gaps)[int(0.99 * (len(gaps) - 1))] * 1000:.0f} ms")
    first = [g for g, t in zip(gaps, at, strict=True) if t - t0 <= 3.0]
    if first:
        print(f"worst gap in the first 3 s of indexing: {max(first) * 1000:.0f} ms")
    if args.results:
        _time_results(state, work)
    del app


def _time_results(state: object, work: Path) -> None:
    """How long the UI thread is blocked when a comparison's results first appear."""
    from PySide6.QtWidgets import QApplication

    from overlap_desktop import api
    from overlap_desktop.gui.screen import ScreenOfferPage

    index = state.index_path  # type: ignore[attr-defined]
    offer = api.export_manifest(index, work / "offer.ovlm", label="bench")
    report = api.compare(getattr(offer, "path", work / "offer.ovlm"), index)
    page = ScreenOfferPage(state)  # type: ignore[arg-type]
    page.resize(1200, 700)
    page.show()
    QApplication.processEvents()
    t = time.perf_counter()
    page.show_report(report, index)
    QApplication.processEvents()
    print(f"UI thread blocked while results first appear: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
