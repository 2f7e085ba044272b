"""Worker processes on this machine: a spawn-started pool that survives a dying worker.

Processes are started with ``spawn`` on every platform: the GUI calls this from a thread of
a Qt process, where ``fork`` could copy a held lock; the frozen bundle needs
``multiprocessing.freeze_support()`` in its entry points for the same reason. A worker
process that dies (decoder crash, out of memory) breaks the pool; the pool is started again
and the calls that were in flight are retried, up to :data:`MAX_ATTEMPTS` times each.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_mod
import signal
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from overlap_desktop.core.engines.base import Done, Task, WorkerDied, throttled, where

__all__ = ["MAX_ATTEMPTS", "ProcessEngine"]

#: A worker process reports a call's progress at most this often (seconds).
PROGRESS_INTERVAL = 0.2
#: A call whose worker process died this many times fails with :class:`WorkerDied` (it probably
#: crashes the decoder or exhausts memory) instead of being retried for ever.
MAX_ATTEMPTS = 3
#: Seconds a worker waits for room in the queue to hand over a report (:attr:`Task.report`).
REPORT_TIMEOUT = 5.0


@dataclass(frozen=True)
class _Shared:
    """Stands for a value each worker process received once at start-up (:meth:`ProcessEngine.share`)."""

    number: int


# Worker process state, set once by _init_worker.
_progress_queue: Any = None
_cancel_event: Any = None
_threads = 0
_shared: tuple[Any, ...] = ()


def _init_worker(progress_queue: Any, cancel_event: Any, threads: int, shared: tuple[Any, ...]) -> None:
    """Start-up of a pool process: remember the shared queue, event, thread share and values,
    ignore Ctrl-C, die with the parent."""
    global _progress_queue, _cancel_event, _threads, _shared
    _progress_queue, _cancel_event, _threads, _shared = progress_queue, cancel_event, threads, shared
    # Ctrl-C reaches the whole process group; the parent handles it and stops workers through
    # the cancel event, so a worker must not die half-way on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        def watch() -> None:
            # If the parent is killed outright, nobody will collect our work: exit instead of
            # working on as an orphan.
            from multiprocessing.connection import wait

            wait([parent.sentinel])
            os._exit(0)

        threading.Thread(target=watch, name="overlap-parent-watch", daemon=True).start()


def _call(key: Hashable, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Runs in a worker process: ``func(*args, task=...)`` with this process's progress and cancel."""

    def put(value: float) -> None:
        if _progress_queue is not None:
            try:
                _progress_queue.put_nowait((key, value))
            except queue_mod.Full:  # progress is best effort
                pass

    def report(value: Any) -> bool:
        if _progress_queue is None:
            return False
        try:
            # Unlike progress, a report must arrive: wait a little for room in the queue.
            _progress_queue.put(("report", key, value), timeout=REPORT_TIMEOUT)
        except queue_mod.Full:
            return False
        return True

    task = Task(progress=throttled(put, PROGRESS_INTERVAL),
                cancelled=_cancel_event.is_set if _cancel_event is not None else None,
                threads=_threads, where=where(), report=report)
    args = tuple(_shared[a.number] if isinstance(a, _Shared) else a for a in args)
    return func(*args, task=task)


class ProcessEngine:
    """A pool of ``workers`` processes (an :class:`~overlap_desktop.core.engines.base.Engine`).

    Args:
        workers: Processes to start.
        threads: Decoder threads each call gets (:attr:`Task.threads`); 0: as configured.
    """

    def __init__(self, workers: int, *, threads: int = 0) -> None:
        self.workers = max(1, int(workers))
        self.capacity = 2 * self.workers
        self.threads = threads
        self.description = f"{self.workers} worker processes"
        self._ctx = multiprocessing.get_context("spawn")
        self._queue: Any = self._ctx.Queue(maxsize=10_000)
        self._cancel: Any = self._ctx.Event()
        self._shared: list[Any] = []
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[Future[Any], tuple[Hashable, Callable[..., Any], tuple[Any, ...]]] = {}
        #: Calls the pool refused because it already knew a worker had died (see :meth:`submit`).
        self._parked: list[tuple[Hashable, Callable[..., Any], tuple[Any, ...]]] = []
        self._attempts: dict[Hashable, int] = {}
        self._fractions: dict[Hashable, float] = {}
        self._reports: list[tuple[Hashable, Any]] = []

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx, initializer=_init_worker,
                                   initargs=(self._queue, self._cancel, self.threads, tuple(self._shared)))

    def share(self, value: Any) -> Any:
        if self._pool is not None:
            raise RuntimeError("share() must come before the first submit()")
        self._shared.append(value)
        return _Shared(len(self._shared) - 1)

    def submit(self, key: Hashable, func: Callable[..., Any], *args: Any) -> None:
        if self._pool is None:
            self._pool = self._new_pool()
        try:
            fut = self._pool.submit(_call, key, func, args)
        except BrokenProcessPool:
            # A worker died and the pool knew before wait() collected the calls that died with it:
            # this one never ran, so it is not an attempt; the next wait() restarts the pool and runs it.
            self._parked.append((key, func, args))
            return
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._futures[fut] = (key, func, args)

    def _drain_progress(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except (queue_mod.Empty, OSError, EOFError):
                return
            if len(item) == 3:  # ("report", key, value), see _call
                self._reports.append(item[1:])
                continue
            key, value = item
            self._fractions[key] = float(value)

    def fractions(self) -> dict[Hashable, float]:
        self._drain_progress()
        return {k: self._fractions.get(k, 0.0) for k, _, _ in self._futures.values()}

    def reports(self) -> list[tuple[Hashable, Any]]:
        """``(key, value)`` of the calls' reports (:attr:`Task.report`) since the last call, in order."""
        self._drain_progress()
        out, self._reports = self._reports, []
        return out

    def wait(self, timeout: float) -> list[Done]:
        if self._parked:
            parked, self._parked = self._parked, []
            return self._restart(parked, attempted=False)
        if not self._futures:
            return []
        done, _ = wait_futures(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        out: list[Done] = []
        broken: list[tuple[Hashable, Callable[..., Any], tuple[Any, ...]]] = []
        for fut in done:
            call = self._futures.pop(fut)
            self._fractions.pop(call[0], None)
            try:
                out.append(Done(call[0], fut.result()))
            except BrokenProcessPool:
                broken.append(call)
            except Exception as exc:
                out.append(Done(call[0], error=exc))
        if broken:
            out.extend(self._restart(broken))
        return out

    def _restart(self, broken: list[tuple[Hashable, Callable[..., Any], tuple[Any, ...]]], *,
                 attempted: bool = True) -> list[Done]:
        """A worker process died: every call in flight failed with it. Retry them in a fresh pool.

        ``attempted=False``: ``broken`` are parked calls that never ran (they are retried whatever
        their count); the calls in flight are retried as usual.
        """
        fresh = [] if attempted else broken
        broken = (broken if attempted else []) + list(self._futures.values())
        self._futures.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._new_pool()
        for key, func, args in fresh:
            self.submit(key, func, *args)
        failed: list[Done] = []
        for key, func, args in broken:
            if self._attempts.get(key, 0) >= MAX_ATTEMPTS:
                failed.append(Done(key, error=WorkerDied(MAX_ATTEMPTS)))
            else:
                self.submit(key, func, *args)
        return failed

    def stop(self) -> list[Done]:
        self._cancel.set()
        for fut in list(self._futures):
            if fut.cancel():  # still queued: never started
                key = self._futures.pop(fut)[0]
                self._fractions.pop(key, None)
        out: list[Done] = []
        while self._futures:
            # Running calls notice the event (Task.cancelled) and come back.
            out.extend(self.wait(1.0))
        return out

    def close(self) -> None:
        self._cancel.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._queue.close()
        self._queue.join_thread()
