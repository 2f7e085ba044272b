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

__all__ = ["ENGINES", "CloseInBackground", "Done", "Engine", "Task", "WorkerDied", "default_workers", "engine_for",
           "engine_named", "run_each", "where"]


#: The engines by name: ``serial`` (this process), ``processes`` (worker processes on this
#: machine), ``dask`` (the workers of a Dask cluster).
ENGINES = ("serial", "processes", "dask")


def engine_for(*, cluster: str | None, workers: int) -> str:
    """The usual choice: a cluster when an address is given, worker processes when more than one
    is asked for, else this process."""
    return "dask" if cluster else "processes" if workers > 1 else "serial"


def engine_named(name: str, *, workers: int = 1, threads: int = 0, address: str = "", label: str = "call",
                 facts: Callable[[], tuple[str, ...]] | None = None,
                 on_progress: Callable[[Hashable, float], None] | None = None,
                 cancel: CancelCallback | None = None) -> Engine:
    """The engine called ``name`` (one of :data:`ENGINES`): the one place engines are made.

    Args:
        name: ``serial``, ``processes`` or ``dask``.
        workers: Worker processes (``processes``).
        threads: Decoder threads per call in worker processes (0: as configured).
        address: The Dask scheduler, ``tcp://HOST:8786`` (``dask``).
        label: A word naming the calls on the cluster's dashboard (``dask``).
        facts: What every cluster worker must agree on besides the version, a module-level function (``dask``).
        on_progress: Receives ``(key, value)`` of each call's progress (``serial``; worker processes
            report through :meth:`Engine.fractions`).
        cancel: Each call's cancel (``serial``; the others are cancelled by ``stop()``).

    Raises:
        ValueError: an unknown name.
        MissingDependencyError, UsageError, ConfigError: see
            :func:`overlap_desktop.core.engines.cluster.connect`.
    """
    if name == "dask":
        from overlap_desktop.core.engines.cluster import DaskEngine

        return DaskEngine(address, name=label, facts=facts)
    if name == "processes":
        from overlap_desktop.core.engines.processes import ProcessEngine

        return ProcessEngine(workers, threads=threads)
    if name == "serial":
        from overlap_desktop.core.engines.serial import SerialEngine

        return SerialEngine(on_progress=on_progress, cancel=cancel)
    raise ValueError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})")
