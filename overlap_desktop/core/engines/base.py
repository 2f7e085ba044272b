"""The engine interface: where a picklable module-level function runs, and what it is told.

An engine runs *functions*, not jobs (joblib's ``submit(func, ...)``, dask's executors): the
work stays with its owner -- fingerprinting a file in :mod:`overlap_desktop.core.index`, a scan
of text in :mod:`overlap_desktop.core.text`, a shard search -- as a module-level function, and
this layer only decides where it runs (this process, worker processes, a Dask cluster) and how
many are in flight. Every engine calls ``func(*args, task=Task(...))``: :class:`Task` carries
the progress, cancel and thread-share facts of wherever the call landed.
"""

from __future__ import annotations

import logging
import os
import platform
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from overlap_desktop.core.types import CancelCallback, check_cancel

log = logging.getLogger(__name__)

__all__ = ["CloseInBackground", "Done", "Engine", "Task", "WorkerDied", "default_workers", "run_each", "where"]


def default_workers() -> int:
    """The number of cores this process may run on (the ``workers = 0`` default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def where() -> str:
    """``host:pid`` of this process, for error messages that name the worker."""
    # platform.node() reads uname(): no socket call (the product opens none; see test_no_network).
    return f"{platform.node()}:{os.getpid()}"


@dataclass(frozen=True)
class Task:
    """What a work function is told about the call it runs as (its ``task=`` keyword).

    Attributes:
        progress: Receives the work's own measure of progress (a file's fraction, bytes read);
            the engine hands the latest value per key to :meth:`Engine.fractions`.
        cancelled: True once the run is cancelled (polled between frames or blocks).
        threads: Decoder threads for this call: the machine's cores shared among the engine's
            concurrent calls (0: leave the configured count).
        remote: The call runs on another machine (a cluster worker): paths must be checked there.
        where: ``host:pid`` of the process running the call.
        report: Hands the caller a small picklable value during the call (progress saved inside
            a file), in order; returns False once one could not be delivered (send no more). The
            engine gives them out from its ``reports()``. ``None`` where the engine has no way back
            during a call (a Dask cluster).
    """

    progress: Callable[[float], None] | None = None
    cancelled: CancelCallback | None = None
    threads: int = 0
    remote: bool = False
    where: str = ""
    report: Callable[[Any], bool] | None = None

    def check(self) -> None:
        """Raise :class:`Cancelled` if the run was cancelled."""
        check_cancel(self.cancelled)


@dataclass
class Done:
    """A finished call: its key and either its value or the exception it raised."""

    key: Hashable
    value: Any = None
    error: BaseException | None = None

    def result(self) -> Any:
        """The value, or raise what the call raised."""
        if self.error is not None:
            raise self.error
        return self.value


class WorkerDied(Exception):
    """The process running a call died (a decoder crash, out of memory) ``attempts`` times."""

    def __init__(self, attempts: int) -> None:
        super().__init__(f"the worker process died {attempts} times")
        self.attempts = attempts


class Engine(Protocol):
    """Where calls run. Created by :func:`overlap_desktop.core.engines.engine_named` (or directly)."""

    #: Calls to keep in flight (submitted, not yet collected): bounds the caller's memory.
    capacity: int
    #: Shown to the user ("4 worker processes", "Dask cluster tcp://...: 8 workers").
    description: str
    #: Decoder threads each call gets (0: as configured), as passed in :attr:`Task.threads`.
    threads: int

    def share(self, value: Any) -> Any:
        """A handle for ``value`` to pass as an argument of many calls; each call receives ``value``
        (sent to each worker once, not once per call). Call before the first :meth:`submit`."""
        ...

    def submit(self, key: Hashable, func: Callable[..., Any], *args: Any) -> None:
        """Run ``func(*args, task=...)`` somewhere; its outcome comes back from :meth:`wait` under ``key``."""
        ...

    def wait(self, timeout: float) -> list[Done]:
        """Calls that finished within ``timeout`` seconds (possibly none)."""
        ...

    def fractions(self) -> dict[Hashable, float]:
        """The latest progress value of each call in flight, where the engine can see it."""
        ...

    def stop(self) -> list[Done]:
        """Cancel: stop every running call, drop queued ones; return what finished anyway."""
        ...

    def close(self) -> None: ...


def run_each(engine: Engine, func: Callable[..., Any], calls: Iterable[tuple[Hashable, tuple[Any, ...]]], *,
             cancel: CancelCallback | None, poll: float = 0.5) -> Iterator[Done]:
    """``func`` on every ``(key, args)`` of ``calls``, at most ``engine.capacity`` in flight; each
    :class:`Done` in completion order. ``calls`` is consumed lazily, so memory stays flat.

    Raises:
        Cancelled: ``cancel()`` turned true (the calls in flight are dropped).
    """
    in_flight = 0
    try:
        for key, args in calls:
            engine.submit(key, func, *args)
            in_flight += 1
            while in_flight >= engine.capacity:
                for done in engine.wait(poll):
                    in_flight -= 1
                    yield done
                check_cancel(cancel)
        while in_flight:
            for done in engine.wait(poll):
                in_flight -= 1
                yield done
            check_cancel(cancel)
    except GeneratorExit:
        raise  # the caller stopped reading (it owns the engine and closes it)
    except BaseException:
        if in_flight:
            engine.stop()
        raise


class CloseInBackground:
    """Close an engine in a helper thread and collect the outcome later with :meth:`join`.

    Closing a pool waits for its processes to exit (each tears down Python, FFmpeg and
    numpy); the index writer seals the search shards meanwhile instead of waiting first.
    """

    def __init__(self, engine: Any) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._close, args=(engine,), name="overlap-engine-close",
                                        daemon=True)
        self._thread.start()

    def _close(self, engine: Any) -> None:
        try:
            engine.close()
        except BaseException as exc:  # handed to join(): a thread's exception would be lost
            self._error = exc

    def join(self, *, raise_error: bool = True) -> None:
        """Wait until the engine is closed; re-raise what closing it raised (unless another
        error is already on its way: then it is only logged)."""
        self._thread.join()
        if self._error is None:
            return
        if raise_error:
            raise self._error
        log.warning("closing the workers failed too: %s", self._error)


def throttled(report: Callable[[float], None], interval: float) -> Callable[[float], None]:
    """``report`` called at most every ``interval`` seconds (progress across processes is best effort)."""
    last = [0.0]

    def progress(value: float) -> None:
        now = time.monotonic()
        if now - last[0] >= interval:
            last[0] = now
            report(value)

    return progress
