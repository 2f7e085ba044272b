"""Run long API calls off the UI thread, with throttled progress and cancel.

A :class:`Worker` wraps one call into :mod:`overlap_desktop.api`. It lives in a
``QThread`` and never touches a widget: it only emits signals, which Qt queues
to the UI thread. Cancel goes through a :class:`~overlap_desktop.core.types.CancelToken`
(a ``threading.Event``) set from the UI thread, because a queued slot could not
run while the worker's long ``run`` holds its thread.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from overlap_desktop import api
from overlap_desktop.api import Cancelled

__all__ = ["EtaEstimator", "Job", "Worker", "eta_text", "wait_all", "warm_up_imports"]

#: Minimum seconds between two progress signals (~10 updates per second).
PROGRESS_INTERVAL_S = 0.1


class Worker(QObject):
    """One API call, run by :meth:`run` (in a worker thread, or synchronously in tests).

    Signals:
        progress(object): a throttled :class:`~overlap_desktop.core.types.Progress`.
        succeeded(object): the call's return value.
        failed(object): the exception the call raised (not ``Cancelled``).
        cancelled(object): the ``Cancelled`` exception (finished work was kept).
        finished(): always, last.

    Args:
        fn: The function to call.
        *args: Positional arguments for ``fn``.
        with_progress: Pass a ``progress=`` keyword argument to ``fn``.
        with_cancel: Pass a ``cancel=`` keyword argument (default: same as ``with_progress``).
        **kwargs: Keyword arguments for ``fn``.
    """

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object)
    cancelled = Signal(object)
    finished = Signal()

    def __init__(self, fn: Callable[..., Any], *args: Any, with_progress: bool = True,
                 with_cancel: bool | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._fn = fn
        self._args = args
        self.token = api.CancelToken()
        self._kwargs = dict(kwargs)
        if with_progress:
            self._kwargs["progress"] = self._on_progress
        if with_progress if with_cancel is None else with_cancel:
            self._kwargs["cancel"] = self.token
        self._last_emit = 0.0
        self._pending: Any = None

    def cancel(self) -> None:
        """Ask the call to stop at its next check (thread-safe; called from the UI thread)."""
        self.token.cancel()

    def _on_progress(self, p: Any) -> None:
        # Runs in the worker thread, possibly thousands of times a second: emit at most
        # ~10/s so the UI thread's event queue never floods.
        now = time.monotonic()
        if now - self._last_emit >= PROGRESS_INTERVAL_S:
            self._last_emit = now
            self._pending = None
            self.progress.emit(p)
        else:
            self._pending = p

    @Slot()
    def run(self) -> None:
        """Call the function and report the outcome through signals (runs in the worker thread)."""
        try:
            result = self._fn(*self._args, **self._kwargs)
        except Cancelled as exc:
            self._flush()
            self.cancelled.emit(exc)
        except Exception as exc:  # every failure reaches the UI as a message, never a crash
            self._flush()
            self.failed.emit(exc)
        else:
            self._flush()
            self.succeeded.emit(result)
        finally:
            self.finished.emit()

    def _flush(self) -> None:
        if self._pending is not None:
            p, self._pending = self._pending, None
            self.progress.emit(p)


class Job(QObject):
    """A :class:`Worker` and the ``QThread`` it runs in, wired the standard way.

    Connect to the job's signals (same names as the worker's): they are emitted in
    the UI thread, so any slot, lambdas included, may touch widgets. ``finished``
    comes after the outcome signal.

    Args:
        fn, *args, with_progress, with_cancel, **kwargs: As for :class:`Worker`.
        parent: QObject owning the job.
    """

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object)
    cancelled = Signal(object)
    finished = Signal()

    def __init__(self, fn: Callable[..., Any], *args: Any, parent: QObject | None = None,
                 with_progress: bool = True, with_cancel: bool | None = None, **kwargs: Any) -> None:
        # No Qt parent: a QThread destroyed while running aborts the process, so the job
        # must outlive a page or dialog that is closed mid-run. ``parent`` only ties the
        # job's signals to that object's lifetime.
        super().__init__(None)
        self.worker = Worker(fn, *args, with_progress=with_progress, with_cancel=with_cancel, **kwargs)
        # Relay through slots of this UI-thread object: Qt then queues the calls to the UI
        # thread. (A lambda connected straight to a worker signal would run in the worker.)
        self.worker.progress.connect(self._relay_progress)
        self.worker.succeeded.connect(self._relay_succeeded)
        self.worker.failed.connect(self._relay_failed)
        self.worker.cancelled.connect(self._relay_cancelled)
        self._thread: QThread | None = None
        self.started_at = 0.0
        self._running = False
        if parent is not None:
            parent.destroyed.connect(self._owner_gone)

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> Job:
        """Start the worker thread; returns ``self`` for chaining."""
        _LIVE.add(self)
        thread = QThread()
        self._thread = thread
        self.worker.moveToThread(thread)
        thread.started.connect(self.worker.run)
        # Direct: QThread.quit is thread-safe, and a queued quit could not run while the UI
        # thread blocks in wait() at exit.
        self.worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        thread.finished.connect(self._on_thread_finished)
        self.started_at = time.monotonic()
        self._running = True
        thread.start()
        return self

    def run_sync(self) -> Job:
        """Run the worker in the calling thread (deterministic tests, tiny calls)."""
        self.started_at = time.monotonic()
        self._running = True
        self.worker.run()
        self._running = False
        self.finished.emit()
        return self

    def cancel(self) -> None:
        """Request cancellation; the call stops at its next check and keeps finished work."""
        self.worker.cancel()

    def wait(self, ms: int = 30_000) -> bool:
        """Block until the thread ends (used when the window closes)."""
        if self._thread is None:
            return True
        return bool(self._thread.wait(ms))

    @Slot(object)
    def _relay_progress(self, p: Any) -> None:
        self.progress.emit(p)

    @Slot(object)
    def _relay_succeeded(self, result: Any) -> None:
        self.succeeded.emit(result)

    @Slot(object)
    def _relay_failed(self, exc: Any) -> None:
        self.failed.emit(exc)

    @Slot(object)
    def _relay_cancelled(self, exc: Any) -> None:
        self.cancelled.emit(exc)

    @Slot()
    def _on_thread_finished(self) -> None:
        self._running = False
        self.finished.emit()
        _LIVE.discard(self)

    def _owner_gone(self, *_: Any) -> None:
        # The page that wanted the result is gone: stop the work and drop its slots
        # (lambdas in them would touch deleted widgets).
        self.worker.cancel()
        with warnings.catch_warnings():
            # PySide warns when a signal has no connection left to drop; that is fine here.
            warnings.simplefilter("ignore", RuntimeWarning)
            for sig in (self.progress, self.succeeded, self.failed, self.cancelled, self.finished):
                try:
                    sig.disconnect()
                except (RuntimeError, TypeError, SystemError):
                    pass


#: Jobs whose thread is running; holds them so neither is destroyed mid-run.
_LIVE: set[Job] = set()


def wait_all(ms: int = 30_000) -> None:
    """Cancel and wait for every running job (at exit)."""
    for job in list(_LIVE):
        job.cancel()
    for job in list(_LIVE):
        job.wait(ms)


def eta_text(fraction: float | None, elapsed_s: float) -> str:
    """A human estimate of the time left, e.g. ``"about 3 min left"`` (``""`` if unknown).

    Args:
        fraction: Share of the work done, 0..1, or ``None``.
        elapsed_s: Seconds since the work started.
    """
    if fraction is None or fraction <= 0.01 or elapsed_s < 2.0:
        return ""
    left = elapsed_s * (1.0 - fraction) / fraction
    if left < 10:
        return "a few seconds left"
    if left < 90:
        return f"about {int(round(left / 5.0) * 5)} s left"
    if left < 90 * 60:
        return f"about {int(round(left / 60.0))} min left"
    return f"about {left / 3600.0:.1f} h left"


class EtaEstimator:
    """Time left from the rate of *this* run's progress, not from the share already done.

    A resumed job starts with most of its work counted as done (finished files are
    skipped in a moment), so "elapsed × left / done" would promise "a few seconds"
    at 36%. The rate is measured from the first progress report onwards instead.

    Args:
        clock: Seconds, monotonic (replaced in tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start: tuple[float, float] | None = None

    def update(self, fraction: float | None) -> str:
        """Record ``fraction`` done (0..1) now and return the estimate (``""`` if unknown yet)."""
        if fraction is None:
            return ""
        now = self._clock()
        if self._start is None or fraction < self._start[1]:
            self._start = (now, fraction)
            return ""
        t0, f0 = self._start
        if fraction - f0 <= 0.01:
            return ""
        return eta_text((fraction - f0) / (1.0 - f0) if f0 < 1.0 else 1.0, now - t0)


def warm_up_imports() -> threading.Thread:
    """Load the indexing, comparing and plotting code in a background thread (returns the thread).

    Python code being imported shares the interpreter lock with the UI thread in 5 ms
    slices, so the window stays responsive; imported on the UI thread when results first
    appear (pyqtgraph, about 0.5 s) or beside it in the first seconds of indexing, the
    same code froze the window.
    """
    import importlib

    def run() -> None:
        try:
            for name in ("index_paths", "compare", "fingerprint_file"):
                getattr(api, name)
            api.available_readers()
            for module in ("overlap_desktop.gui.results", "overlap_desktop.gui.plot"):  # plot: pyqtgraph
                importlib.import_module(module)
        except Exception:  # an import problem surfaces where the module is really used
            pass

    thread = threading.Thread(target=run, name="overlap-warm-up", daemon=True)
    thread.start()
    return thread
