"""The index's files on an engine: jobs in, outcomes out, for the single writer.

The index keeps exactly one writer (the process that called
:func:`~overlap_desktop.core.index.indexer.index_paths`). Files are fingerprinted by
:func:`~overlap_desktop.core.index.fingerprinting.fingerprint_job` wherever an engine of
:mod:`overlap_desktop.core.engines` runs it -- worker processes on this machine
(:class:`ProcessEngine`) or a Dask cluster (:func:`cluster_engine`) -- and come back here
as one :class:`~overlap_desktop.core.index.fingerprinting.FileOutcome` per file, which
:class:`~overlap_desktop.core.index.run.IndexRun` commits. The writer keeps at most
:attr:`FileEngine.capacity` files in flight, so its memory stays bounded.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from overlap_desktop.core.engines import engine_named
from overlap_desktop.core.engines.base import Done, Engine, WorkerDied, default_workers
from overlap_desktop.core.index.fingerprinting import FileJob, FileOutcome, fingerprint_job, pipeline_facts

__all__ = ["CLUSTER_MIN_BYTES", "MIN_GAIN", "START_BYTES", "EngineChoice", "FileEngine", "JobEngine",
           "ProcessEngine", "choose_engine", "cluster_engine", "estimated_speedup", "free_cores", "machine_load"]


class FileEngine(Protocol):
    """Where files are fingerprinted for a parallel indexing run (driven by
    :class:`~overlap_desktop.core.index.run.IndexRun`)."""

    #: Files to keep in flight (submitted, not yet collected): bounds the writer's memory.
    capacity: int
    #: Shown to the user ("4 worker processes", "Dask cluster tcp://...: 8 workers").
    description: str

    def submit(self, job: FileJob) -> None: ...

    def wait(self, timeout: float) -> list[tuple[FileJob, FileOutcome]]:
        """Outcomes that arrived within ``timeout`` seconds (possibly none)."""
        ...

    def fractions(self) -> dict[str, float]:
        """Fraction done of files in flight, as last reported by the workers."""
        ...

    def reports(self) -> list[tuple[str, Any]]:
        """``(path, (stream key, checkpoint))`` of progress saved inside files since the last call,
        in order (none from engines that cannot send it during a call)."""
        ...

    def stop(self) -> list[tuple[FileJob, FileOutcome]]:
        """Cancel: stop every worker's current file, drop queued ones; return what finished anyway."""
        ...

    def close(self) -> None: ...


class JobEngine:
    """A :class:`FileEngine` over any engine: each job is a call of ``fingerprint_job``, keyed by path.

    Args:
        engine: Where the calls run.
        failed: How a call that raised is described ("worker process failed", "Dask task failed").
    """

    def __init__(self, engine: Engine, *, failed: str = "worker process failed") -> None:
        self.engine = engine
        self.capacity = engine.capacity
        self.description = engine.description
        self._failed = failed
        self._jobs: dict[str, FileJob] = {}

    def submit(self, job: FileJob) -> None:
        self._jobs[job.path] = job
        self.engine.submit(job.path, fingerprint_job, job)

    def _outcomes(self, done: list[Done]) -> list[tuple[FileJob, FileOutcome]]:
        return [(self._jobs.pop(str(d.key)), self._outcome(str(d.key), d)) for d in done]

    def _outcome(self, path: str, d: Done) -> FileOutcome:
        exc = d.error
        if exc is None:
            outcome: FileOutcome = d.value
            return outcome
        if isinstance(exc, WorkerDied):
            return FileOutcome(path, error=(
                f"the worker process died {exc.attempts} times while this file was being fingerprinted "
                "(out of memory or a decoder crash)"))
        name = type(exc).__name__
        if name == "KilledWorker":
            return FileOutcome(path, error=(
                f"the Dask workers fingerprinting this file died too often ({exc}); the file may crash the decoder "
                "or need more memory than a worker has"))
        return FileOutcome(path, error=f"{self._failed} ({name}: {exc})")

    def wait(self, timeout: float) -> list[tuple[FileJob, FileOutcome]]:
        return self._outcomes(self.engine.wait(timeout))

    def fractions(self) -> dict[str, float]:
        return {str(k): v for k, v in self.engine.fractions().items()}

    def reports(self) -> list[tuple[str, Any]]:
        reports = getattr(self.engine, "reports", None)  # a cluster has none
        return [(str(k), v) for k, v in reports()] if reports is not None else []

    def stop(self) -> list[tuple[FileJob, FileOutcome]]:
        return self._outcomes(self.engine.stop())

    def close(self) -> None:
        self.engine.close()


class ProcessEngine(JobEngine):
    """Files fingerprinted by ``workers`` processes on this machine (``index.workers``)."""

    def __init__(self, workers: int) -> None:
        workers = max(1, int(workers))
        #: Decoder threads per worker (when ``index.threads`` is automatic): the cores shared out,
        #: so serial and parallel runs use the machine alike (see bench/bench_index.py scale).
        self.decoder_threads = max(1, default_workers() // workers)
        super().__init__(engine_named("processes", workers=workers, threads=self.decoder_threads))


def cluster_engine(address: str) -> JobEngine:
    """Files fingerprinted on the workers of the Dask cluster at ``address`` (``index.cluster``).

    Workers read the footage from storage they share with the writer, at the same paths: each
    call checks the size and modification time it sees against the writer's and refuses a path
    it cannot see, naming it. A file whose worker dies is rerun elsewhere by Dask.
    """
    return JobEngine(engine_named("dask", address=address, label="fingerprint", facts=pipeline_facts),
                     failed="Dask task failed")


# --------------------------------------------------------------------------- the default engine

#: What starting the worker processes costs (a Python and FFmpeg import each, about 0.3 s of
#: CPU, and the pool's hand-offs: about 0.45 s of wall time on 2 cores), in bytes of footage one
#: process fingerprints in that time. Sizes stand in for work because the writer knows them
#: without opening a file; bytes per second of work vary with the bitrate (2-5 MB/s measured on
#: generated 240p-720p clips, more for high-bitrate camera footage). Set from
#: bench/bench_small_jobs.py on 2 cores with the machine otherwise idle: two workers gained
#: 1.4-1.5x from about 8 MB of footage upward and broke even near 2.6 MB; at 2 MiB the default
#: takes two workers from about 7 MB for two equal halves (8 MiB, before, waited for 29 MB).
#: A busy machine is handled by :func:`free_cores`, not by this figure (bench/RESULTS.md).
START_BYTES = 2 * 1024 * 1024
#: The estimated speed-up a pool must bring before the default uses one: the margin keeps a
#: job whose estimate is a little off from running slower than in one process.
MIN_GAIN = 1.15
#: Cores one process already keeps busy (FFmpeg's frame threads, the SHA-256 thread): the
#: speed-up of N workers is measured against this, not against one core.
SERIAL_CORES = 1.1
#: Below this much new footage a Dask cluster's per-run cost (connecting, shipping each job
#: and result through the scheduler, about 25 ms a file) outweighs its workers, and the job
#: is fingerprinted on this computer instead, saying so.
CLUSTER_MIN_BYTES = 256 * 1024 * 1024


def machine_load() -> float | None:
    """The 1-minute load average (runnable processes), ``None`` where the OS has none (Windows)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def free_cores(cores: int, load: float | None) -> int:
    """The cores the default may give workers when ``load`` (:func:`machine_load`) is already running.

    Workers only gain on cores nothing else wants: measured on 2 cores with other jobs
    keeping the load at 2.7-3.5, two workers were 0.81-1.21x serial (median of the
    8.5-17.6 MB jobs below 1.0x; bench/RESULTS.md). One core's worth of load is tolerated,
    since the load average trails by a minute and still counts a run that just ended
    (back-to-back indexing of a library's folders).
    """
    if load is None or not math.isfinite(load) or load < 0:
        return cores
    return max(1, min(cores, int(cores - load + 1.5)))


@dataclass(frozen=True)
class EngineChoice:
    """Where a run's files are fingerprinted (:func:`choose_engine`).

    Attributes:
        kind: ``"here"`` (the writer's own process), ``"processes"`` or ``"cluster"``.
        workers: Worker processes for ``"processes"`` (else 1, or 0 for a cluster's own count).
        note: A sentence for the user when the choice is not what they asked for, else "".
    """

    kind: Literal["here", "processes", "cluster"]
    workers: int = 1
    note: str = ""


def estimated_speedup(sizes: Sequence[int], workers: int) -> float:
    """How much faster ``workers`` processes should finish files of ``sizes`` bytes than one process.

    The pool's finish time is a longest-first schedule of the sizes over the workers (what
    :func:`~overlap_desktop.core.index.indexer.index_paths` feeds it) plus one worker's start-up
    (:data:`START_BYTES`); one process gets :data:`SERIAL_CORES` of the machine.
    """
    total = float(sum(sizes))
    if workers <= 1 or total <= 0:
        return 1.0
    loads = [0.0] * workers
    for size in sorted(sizes, reverse=True):
        heapq.heapreplace(loads, loads[0] + size)
    return (total / SERIAL_CORES) / (max(loads) + START_BYTES)


def choose_engine(sizes: Sequence[int], *, workers: int, cores: int, cluster: str = "",
                  load: float | None = None) -> EngineChoice:
    """Where files of ``sizes`` bytes (the run's new or changed files) are fingerprinted.

    An explicit worker count (``workers`` > 0) is obeyed, capped at one per file. The default
    (``workers`` = 0) takes the number of processes, up to one per core, that
    :func:`estimated_speedup` says is fastest, and stays in this process unless that beats
    it by :data:`MIN_GAIN`: a few short files are never made slower by starting workers.
    A cluster is used for jobs of at least :data:`CLUSTER_MIN_BYTES`; a smaller one runs on
    this computer (as the default would) with a note saying why. ``load`` (the machine's load
    average, :func:`machine_load`) leaves the default only the :func:`free_cores`.
    """
    if not sizes:
        return EngineChoice("here")
    if cluster:
        total = sum(sizes)
        if total >= CLUSTER_MIN_BYTES:
            return EngineChoice("cluster", 0)
        local = choose_engine(sizes, workers=0, cores=cores, load=load)
        return EngineChoice(local.kind, local.workers, (
            f"the cluster was not used: this job ({len(sizes)} file(s), {total / 1e6:.1f} MB of new footage) "
            f"finishes sooner on this computer than the cluster's start-up and scheduling cost; jobs of "
            f"{CLUSTER_MIN_BYTES / 1e6:.0f} MB or more go to the cluster"))
    if workers > 0:
        n = min(workers, len(sizes))
        return EngineChoice("processes", n) if n > 1 else EngineChoice("here")
    best, gain = 1, MIN_GAIN
    for n in range(2, min(free_cores(cores, load), len(sizes)) + 1):
        g = estimated_speedup(sizes, n)
        if g > gain:
            best, gain = n, g
    return EngineChoice("processes", best) if best > 1 else EngineChoice("here")
