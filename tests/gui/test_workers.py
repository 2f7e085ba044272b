"""Worker infrastructure: outcome signals, throttled progress, cancel, human error messages."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.errors import Cancelled, ManifestError
from overlap_desktop.gui.common import error_text, show_error
from overlap_desktop.gui.workers import Job, Worker, eta_text


def _collect(obj: Any) -> dict[str, list[Any]]:
    got: dict[str, list[Any]] = {k: [] for k in ("progress", "succeeded", "failed", "cancelled")}
    for k in got:
        getattr(obj, k).connect(got[k].append)
    return got


def test_run_synchronously_reports_result_and_throttles_progress(qapp: Any) -> None:
    def work(n: int, *, progress: Any, cancel: Any) -> int:
        for i in range(n):
            progress(api.Progress("test", i + 1, n))
        return n * 2

    w = Worker(work, 5000)
    got = _collect(w)
    w.run()
    assert got["succeeded"] == [10000] and not got["failed"]
    # 5000 calls in well under a second: a handful of signals, and the last state always arrives.
    assert 1 <= len(got["progress"]) <= 12
    assert got["progress"][-1].done == 5000


def test_errors_and_cancel_become_signals_not_crashes(qapp: Any) -> None:
    def bad(*, progress: Any, cancel: Any) -> None:
        raise ManifestError("truncated: missing root", path="offer.ovlm")

    job = Job(bad).run_sync()
    assert job.running is False
    w = Worker(bad)
    got = _collect(w)
    w.run()
    assert isinstance(got["failed"][0], ManifestError) and not got["succeeded"]

    def loop(*, progress: Any, cancel: Any) -> None:
        while True:
            if cancel():
                raise Cancelled()
            time.sleep(0.001)

    w2 = Worker(loop)
    got2 = _collect(w2)
    t = threading.Timer(0.05, w2.cancel)  # cancel from another thread, as the UI thread does
    t.start()
    w2.run()
    assert len(got2["cancelled"]) == 1 and not got2["failed"]


def test_job_runs_in_a_thread_and_finishes(qtbot: Any) -> None:
    ui_thread = threading.get_ident()
    seen: list[int] = []

    def work(*, progress: Any, cancel: Any) -> str:
        seen.append(threading.get_ident())
        return "done"

    job = Job(work)
    results: list[Any] = []
    # Slots on the job run in the UI thread even when they are lambdas.
    job.succeeded.connect(lambda r: results.append((r, threading.get_ident())))
    with qtbot.waitSignal(job.finished, timeout=120_000):
        job.start()
    assert seen and seen[0] != ui_thread
    assert results == [("done", ui_thread)]


def test_messages_are_plain_with_details_on_request(qtbot: Any) -> None:
    msg, detail = error_text(ManifestError("not a manifest (bad magic)", path="x.ovlm"))
    # What happened and what to do first; the format-level reason only behind "Details".
    assert msg.startswith("x.ovlm: This manifest file is damaged or incomplete") and "send it again" in msg
    assert "magic" not in msg and "Traceback" not in msg
    assert "bad magic" in detail
    try:
        raise ZeroDivisionError("boom")
    except ZeroDivisionError as exc:
        msg, detail = error_text(exc)
        box = show_error(None, "Could not do it", exc)
    assert "bug" in msg and "Traceback" not in msg and "Traceback" in detail
    assert box.detailedText() == detail and box.text() == msg
    box.close()


@pytest.mark.parametrize(("fraction", "elapsed", "expected"), [
    (None, 100.0, ""), (0.5, 1.0, ""), (0.5, 4.0, "a few seconds left"), (0.5, 60.0, "about 60 s left"),
    (0.1, 600.0, "about 1.5 h left"), (0.02, 36.0, "about 29 min left")])
def test_eta_text(fraction: float | None, elapsed: float, expected: str) -> None:
    assert eta_text(fraction, elapsed) == expected
