"""Engines: where picklable module-level functions run -- here, in worker processes, on a Dask cluster.

The layer beneath index, match and text: their long work (fingerprinting files, searching
shards, scanning text) is written once as module-level functions taking a ``task=``
:class:`~overlap_desktop.core.engines.base.Task`, and an engine chosen by name runs them.
``distributed`` is imported only by :mod:`overlap_desktop.core.engines.cluster`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from overlap_desktop.core.engines.base import (
    CloseInBackground,
    Done,
    Engine,
    Task,
    WorkerDied,
    default_workers,
    run_each,
    where,
)
from overlap_desktop.core.types import CancelCallback

__all__ = ["CloseInBackground", "Done", "Engine", "Task", "WorkerDied", "default_workers", "engine_named",
           "run_each", "where"]


def engine_named(*, cluster: str | None = None, workers: int = 1, threads: int = 0, name: str = "call",
                 facts: Callable[[], tuple[str, ...]] | None = None,
                 on_progress: Callable[[Hashable, float], None] | None = None,
                 cancel: CancelCallback | None = None) -> Engine:
    """The engine for a run, chosen in one place: a Dask cluster when an address is given, else
    ``workers`` processes on this machine, else (``workers <= 1``) this process.

    Args:
        cluster: A Dask scheduler address (``tcp://HOST:8786``), or None.
        workers: Worker processes on this machine (ignored with ``cluster``).
        threads: Decoder threads per call in worker processes (0: as configured).
        name: A word naming the calls on a cluster's dashboard.
        facts: What every cluster worker must agree on besides the version (a module-level function).
        on_progress: In this process: receives ``(key, value)`` of each call's progress.
        cancel: In this process: each call's cancel (other engines are cancelled by ``stop()``).

    Raises:
        MissingDependencyError, UsageError, ConfigError: see
            :func:`overlap_desktop.core.engines.cluster.connect`.
    """
    if cluster:
        from overlap_desktop.core.engines.cluster import DaskEngine

        return DaskEngine(cluster, name=name, facts=facts)
    if workers > 1:
        from overlap_desktop.core.engines.processes import ProcessEngine

        return ProcessEngine(workers, threads=threads)
    from overlap_desktop.core.engines.serial import SerialEngine

    return SerialEngine(on_progress=on_progress, cancel=cancel)
