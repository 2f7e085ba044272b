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

from typing import Protocol

from overlap_desktop.core.engines import engine_named
from overlap_desktop.core.engines.base import Done, Engine, WorkerDied, default_workers
from overlap_desktop.core.index.fingerprinting import FileJob, FileOutcome, fingerprint_job, pipeline_facts

__all__ = ["FileEngine", "JobEngine", "ProcessEngine", "cluster_engine"]


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
