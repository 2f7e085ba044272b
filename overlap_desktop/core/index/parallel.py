"""Fingerprinting outside the writer: the per-file task and the local process pool.

The index keeps exactly one writer (the process that called
:func:`~overlap_desktop.core.index.indexer.index_paths`). Everything slow about a file --
decoding, sampling, hashing, the SHA-256 of its bytes -- is a pure function of the
file's bytes and the settings, so it can run anywhere: in this process, in a worker
process on this machine (:class:`ProcessEngine`), or on a Dask worker elsewhere
(:mod:`overlap_desktop.core.index.cluster`). Workers never touch the index; they send back
one :class:`FileOutcome` per file (fingerprints, hash, or the reason it failed), and the
writer commits it in one transaction, exactly as a serial run does. A worker that dies
therefore loses only the file it was on, and that file is simply done again.

Memory stays bounded: a worker holds one file's frames at a time and sends back only
its fingerprints (about 1 kB per second of footage at the default preset); the writer
keeps at most :attr:`ProcessEngine.capacity` files in flight.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import platform
import queue as queue_mod
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from overlap_desktop.core.types import CancelCallback, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import Cancelled, OverlapError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config

log = logging.getLogger(__name__)

__all__ = ["CloseInBackground", "Engine", "FileJob", "FileOutcome", "ProcessEngine", "default_workers", "run_job"]

#: A worker process reports a file's fraction done at most this often (seconds).
_WORKER_PROGRESS_INTERVAL = 0.2
#: A file whose worker process died this many times is recorded as failed (it probably
#: crashes the decoder or exhausts memory) instead of being retried for ever.
MAX_ATTEMPTS = 3


def default_workers() -> int:
    """The number of cores this process may run on (the ``index.workers = 0`` default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class FileJob:
    """One file (or recording folder) to fingerprint, as the writer saw it.

    Attributes:
        path: Absolute path; a remote worker must see the same file at the same path.
        reader: Name of the reader that claimed it (workers look it up by name).
        size: Size in bytes seen by the writer (a folder: total of its files).
        mtime_ns: Modification time seen by the writer (a folder: newest file).
        config: The run's settings (fps, quality floor, reader options...).
        variants: The variants to hash.
        remote: Runs on another machine (a cluster worker): check first that the file is there
            as the writer saw it, and say so in worker terms if not.
    """

    path: str
    reader: str
    size: int
    mtime_ns: int
    config: Config
    variants: tuple[Variant, ...]
    remote: bool = False
    #: The item's identity seen by the writer (:func:`~overlap_desktop.core.index.walk.item_state`);
    #: checked after fingerprinting on the writer's machine.
    stat_key: str = ""


@dataclass
class FileOutcome:
    """What fingerprinting one file produced.

    Exactly one of ``streams`` (success) and ``error`` (a sentence) is set. ``sha256``
    may be set on failure too (the index records it for bad files).
    """

    path: str
    streams: list[tuple[StreamInfo, StreamFingerprints]] | None = None
    sha256: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: Stopped by a cancel before finishing (nothing to commit; the file stays pending).
    cancelled: bool = False
    #: Where it ran (``host:pid``), for error messages.
    where: str = ""
    #: Wall seconds the worker spent on the file (the bench derives scheduling overhead from it).
    seconds: float = 0.0


def _where() -> str:
    # platform.node() reads uname(): no socket call (the product opens none; see test_no_network).
    return f"{platform.node()}:{os.getpid()}"


def run_job(job: FileJob, *, progress: Callable[[float], None] | None = None,
            cancel: CancelCallback | None = None, decoder_threads: int = 0) -> FileOutcome:
    """Fingerprint one file; the task every engine runs (in-process, pool or cluster).

    On a remote worker the file is checked first: it must exist there with the size and
    modification time the writer saw, otherwise the outcome is an error naming the path
    (a cluster worker that does not mount the footage, or mounts something else at that
    path). Locally the file system is the writer's own, so a file deleted or changed
    meanwhile is reported as such, as in a one-process run.

    ``decoder_threads`` (0: as configured) caps the decoder's threads when the
    configuration leaves them automatic: a pool of N workers gives each its share of
    the cores.

    Raises:
        Cancelled: ``cancel()`` turned true (KeyboardInterrupt passes through too).
    """
    started = time.perf_counter()
    out = _run_job(job, progress, cancel, decoder_threads)
    out.seconds = time.perf_counter() - started
    return out


def _run_job(job: FileJob, progress: Callable[[float], None] | None, cancel: CancelCallback | None,
             decoder_threads: int) -> FileOutcome:
    from overlap_desktop.core.index.indexer import _describe, _fingerprint_item
    from overlap_desktop.core.index.walk import changed_since, sha256_item
    from overlap_desktop.core.ingest.readers import available_readers

    where = _where()
    path = Path(job.path)
    if job.remote:
        refused = _check_visible(job, where)
        if refused is not None:
            return FileOutcome(job.path, where=where, error=refused)
    readers, _ = available_readers()
    reader = next((r for r in readers if r.name == job.reader), None)
    if reader is None:
        return FileOutcome(job.path, where=where,
                           error=f"this worker ({where}) has no {job.reader!r} reader; install the same "
                                 "overlap desktop version and extras on every worker")
    stop = threading.Event()
    sha: list[str | None] = [None]
    sha_error: list[BaseException | None] = [None]

    def hash_bytes() -> None:
        # hashlib releases the GIL: hashing runs beside decoding at almost no wall cost.
        try:
            sha[0] = sha256_item(path, stop)
        except OSError as exc:
            sha_error[0] = exc

    hasher = threading.Thread(target=hash_bytes, name="overlap-sha256", daemon=True)
    hasher.start()
    out = FileOutcome(job.path, where=where)
    try:
        out.streams = _fingerprint_item(path, reader, config=job.config, variants=job.variants,
                                        on_fraction=progress, cancel=cancel, warnings_out=out.warnings,
                                        decoder_threads=decoder_threads)
    except (Cancelled, KeyboardInterrupt):
        stop.set()
        hasher.join()
        raise
    except Exception as exc:
        if not isinstance(exc, OverlapError):
            log.debug("unexpected error on %s", path, exc_info=True)
        hasher.join()
        out.error, out.sha256 = _describe(exc), sha[0]
        return out
    hasher.join()
    if sha_error[0] is not None:
        out.streams, out.error = None, _describe(sha_error[0])
        return out
    out.sha256 = sha[0]
    # Inode numbers are the writer's file system's: a cluster worker's mount may number them otherwise.
    changed = changed_since(path, job.size, job.mtime_ns, None if job.remote else job.stat_key or None)
    if changed is not None:
        # Fingerprints and hash would describe a mix of old and new bytes: refuse the file
        # now; the next run sees a different size/mtime (or identity) and does it again.
        out.streams, out.sha256, out.error = None, None, changed
    return out


def _check_visible(job: FileJob, where: str) -> str | None:
    """Why a cluster worker cannot use ``job.path`` (not there, or not the writer's file), or None."""
    from overlap_desktop.core.index.walk import item_stat

    try:
        seen = item_stat(Path(job.path))
    except OSError as exc:
        return (f"this worker ({where}) cannot see the file ({exc.strerror or exc}); every worker must "
                "see the footage at the same path as the computer running `overlap index` (shared storage mounted at "
                "the same place)")
    if seen != (job.size, job.mtime_ns):
        return (f"this worker ({where}) sees a different file at this path (size {seen[0]} bytes instead of "
                f"{job.size}, or another modification time); the file changed, or the worker mounts other "
                "storage there; run the index again once storage is consistent")
    return None


class Engine(Protocol):
    """Where :func:`run_job` runs for a parallel indexing run (driven by
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


# --------------------------------------------------------------------------- worker processes

_progress_queue: Any = None
_cancel_event: Any = None
_decoder_threads = 0


def _init_worker(progress_queue: Any, cancel_event: Any, decoder_threads: int = 0) -> None:
    """Start-up of a pool process: remember the shared queue/event and this worker's share of
    decoder threads, ignore Ctrl-C, die with the parent."""
    global _progress_queue, _cancel_event, _decoder_threads
    _progress_queue, _cancel_event, _decoder_threads = progress_queue, cancel_event, decoder_threads
    # Ctrl-C reaches the whole process group; the writer handles it and stops workers through
    # the cancel event, so a worker must not die half-way on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        def watch() -> None:
            # If the writer is killed outright, nobody will collect our work: exit instead of
            # decoding on as an orphan.
            from multiprocessing.connection import wait

            wait([parent.sentinel])
            os._exit(0)

        threading.Thread(target=watch, name="overlap-parent-watch", daemon=True).start()


def _worker_task(job: FileJob) -> FileOutcome:
    last = [0.0]

    def progress(frac: float) -> None:
        now = time.monotonic()
        if now - last[0] >= _WORKER_PROGRESS_INTERVAL and _progress_queue is not None:
            last[0] = now
            try:
                _progress_queue.put_nowait((job.path, frac))
            except queue_mod.Full:  # progress is best effort
                pass

    try:
        return run_job(job, progress=progress, cancel=_cancel_event.is_set if _cancel_event else None,
                       decoder_threads=_decoder_threads)
    except Cancelled:
        return FileOutcome(job.path, cancelled=True, where=_where())


class ProcessEngine:
    """A pool of worker processes on this machine (``index.workers``).

    Processes are started with ``spawn`` on every platform: the GUI calls this from a
    thread of a Qt process, where ``fork`` could copy a held lock; the frozen bundle
    needs ``multiprocessing.freeze_support()`` in its entry points for the same reason.
    A worker process that dies (decoder crash, out of memory) breaks the pool; the pool
    is started again and the files that were in flight are retried, up to
    :data:`MAX_ATTEMPTS` times each.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))
        self.capacity = 2 * self.workers
        #: Decoder threads per worker (when ``index.threads`` is automatic): the cores shared out,
        #: so serial and parallel runs use the machine alike (see bench/bench_index.py scale).
        self.decoder_threads = max(1, default_workers() // self.workers)
        self.description = f"{self.workers} worker processes"
        self._ctx = multiprocessing.get_context("spawn")
        self._queue: Any = self._ctx.Queue(maxsize=10_000)
        self._cancel: Any = self._ctx.Event()
        self._pool = self._new_pool()
        self._futures: dict[Future[FileOutcome], FileJob] = {}
        #: Jobs the pool refused because it already knew a worker had died (see :meth:`submit`).
        self._parked: list[FileJob] = []
        self._attempts: dict[str, int] = {}
        self._fractions: dict[str, float] = {}

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx, initializer=_init_worker,
                                   initargs=(self._queue, self._cancel, self.decoder_threads))

    def submit(self, job: FileJob) -> None:
        try:
            fut = self._pool.submit(_worker_task, job)
        except BrokenProcessPool:
            # A worker died and the pool knew before wait() collected the files that died with it:
            # the job never ran, so it is not an attempt; the next wait() restarts the pool and runs it.
            self._parked.append(job)
            return
        self._attempts[job.path] = self._attempts.get(job.path, 0) + 1
        self._futures[fut] = job

    def _drain_progress(self) -> None:
        while True:
            try:
                path, frac = self._queue.get_nowait()
            except (queue_mod.Empty, OSError, EOFError):
                return
            self._fractions[path] = float(frac)

    def fractions(self) -> dict[str, float]:
        self._drain_progress()
        return {j.path: self._fractions.get(j.path, 0.0) for j in self._futures.values()}

    def wait(self, timeout: float) -> list[tuple[FileJob, FileOutcome]]:
        if self._parked:
            parked, self._parked = self._parked, []
            return self._restart(parked, attempted=False)
        if not self._futures:
            return []
        done, _ = wait_futures(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        out: list[tuple[FileJob, FileOutcome]] = []
        broken: list[FileJob] = []
        for fut in done:
            job = self._futures.pop(fut)
            self._fractions.pop(job.path, None)
            try:
                out.append((job, fut.result()))
            except BrokenProcessPool:
                broken.append(job)
            except Exception as exc:
                out.append((job, FileOutcome(job.path, error=f"worker process failed ({type(exc).__name__}: "
                                                             f"{exc})")))
        if broken:
            out.extend(self._restart(broken))
        return out

    def _restart(self, broken: list[FileJob], *, attempted: bool = True) -> list[tuple[FileJob, FileOutcome]]:
        """A worker process died: every file in flight failed with it. Retry them in a fresh pool.

        ``attempted=False``: ``broken`` are parked jobs that never ran (they are retried whatever
        their count); the files in flight are retried as usual.
        """
        fresh = [] if attempted else broken
        broken = (broken if attempted else []) + list(self._futures.values())
        self._futures.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._new_pool()
        for job in fresh:
            self.submit(job)
        failed: list[tuple[FileJob, FileOutcome]] = []
        for job in broken:
            if self._attempts.get(job.path, 0) >= MAX_ATTEMPTS:
                failed.append((job, FileOutcome(job.path, error=(
                    f"the worker process died {MAX_ATTEMPTS} times while this file was being fingerprinted "
                    "(out of memory or a decoder crash)"))))
            else:
                self.submit(job)
        return failed

    def stop(self) -> list[tuple[FileJob, FileOutcome]]:
        self._cancel.set()
        for fut in list(self._futures):
            if fut.cancel():  # still queued: never started
                job = self._futures.pop(fut)
                self._fractions.pop(job.path, None)
        out: list[tuple[FileJob, FileOutcome]] = []
        while self._futures:
            # Running files notice the event between frames and come back as cancelled.
            out.extend(self.wait(1.0))
        return out

    def close(self) -> None:
        self._cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._queue.close()
        self._queue.join_thread()


class CloseInBackground:
    """Close an engine in a helper thread and collect the outcome later with :meth:`join`.

    Closing a pool waits for its processes to exit (each tears down Python, FFmpeg and
    numpy); the writer seals the search shards meanwhile instead of waiting first.
    """

    def __init__(self, engine: Engine) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._close, args=(engine,), name="overlap-engine-close",
                                        daemon=True)
        self._thread.start()

    def _close(self, engine: Engine) -> None:
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

