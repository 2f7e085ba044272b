"""Fingerprinting and shard search on a Dask distributed cluster (the optional ``cluster`` extra).

``overlap index --cluster tcp://HOST:8786`` hands each file to the workers of a running
Dask cluster (:class:`DaskEngine`); the computer running the command stays the index's
single writer and commits one file per transaction, so the index format, resume and
``overlap merge`` are unchanged. Workers read the footage from storage they share with
that computer, at the same paths: each task checks the size and modification time it
sees against the writer's and refuses a path it cannot see, naming it.

Worker loss is Dask's business: a task whose worker dies is rerun on another worker (up
to the scheduler's ``allowed-failures``); nothing was written for it, so there is
nothing to undo. ``overlap compare --cluster`` fans the search of the index's sealed
shards out the same way (:func:`collect_hits`); the matching after it stays local.

Nothing here is imported unless a cluster address is given, so the desktop bundle does
not need Dask.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.index.parallel import FileJob, FileOutcome, _where, run_job
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import Cancelled, ConfigError, MissingDependencyError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.shards import Hits
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.match.lines import MatchParams

log = logging.getLogger(__name__)

__all__ = ["ClusterCorpus", "DaskEngine", "collect_hits", "connect"]

#: A task polls the cluster-wide cancel flag at most this often (seconds): each poll is a
#: round trip to the scheduler.
_CANCEL_POLL_S = 1.0
#: Seconds to wait for the scheduler to answer and for at least one worker.
CONNECT_TIMEOUT_S = 30.0


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise MissingDependencyError(
            "--cluster needs Dask distributed, which is not installed here; install the optional extra with "
            "`pip install \"overlap-desktop[cluster]\"` (on this computer and on every worker)") from exc
    return distributed


def _facts() -> tuple[str, str, str]:
    """What must agree between the writer and every worker: version and fingerprint ids."""
    from overlap_desktop import __version__
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID
    from overlap_desktop.core.ingest.prep import PREP_ID

    return __version__, ALGO_ID, PREP_ID


def connect(address: str, *, timeout: float = CONNECT_TIMEOUT_S) -> Any:
    """A ``distributed.Client`` for the scheduler at ``address``, checked for use by overlap.

    Raises:
        MissingDependencyError: Dask distributed is not installed.
        UsageError: the scheduler cannot be reached or has no workers.
        ConfigError: a worker runs another overlap version or fingerprint pipeline, or cannot
            import overlap desktop at all.
    """
    distributed = _distributed()
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({exc}); check the address "
                         "(tcp://HOST:8786), that `dask scheduler` is running there, and the firewall") from exc
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as exc:
            raise UsageError(f"the Dask scheduler at {address} has no workers; start some with "
                             f"`dask worker {address}`") from exc
        try:
            facts = client.run(_facts)
        except (ImportError, ModuleNotFoundError) as exc:
            raise ConfigError(f"a worker of {address} cannot import overlap desktop ({exc}); install the "
                              "same version with the 'cluster' extra on every worker") from exc
        mine = _facts()
        for worker, theirs in sorted(facts.items()):
            if tuple(theirs) != mine:
                raise ConfigError(
                    f"worker {worker} runs overlap {theirs[0]} (fingerprints {theirs[1]}, {theirs[2]}), this "
                    f"computer runs {mine[0]} ({mine[1]}, {mine[2]}); install the same version on every "
                    "worker")
    except BaseException:
        client.close()
        raise
    return client


def _n_threads(client: Any) -> int:
    return max(1, sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()))


def _host(address: str) -> str:
    """``tcp://10.0.0.5:40123`` -> ``10.0.0.5`` (the machine a worker runs on)."""
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


def _slots_by_host(client: Any) -> dict[str, int]:
    """Task slots (worker threads) per machine of the cluster: files fingerprinted at once there."""
    slots: dict[str, int] = {}
    for address, w in client.scheduler_info()["workers"].items():
        slots[_host(address)] = slots.get(_host(address), 0) + max(1, int(w.get("nthreads", 1)))
    return slots


def _decoder_share(slots_by_host: dict[str, int]) -> int:
    """On a worker: decoder threads for one file, the machine's cores shared among its task slots
    (FFmpeg's automatic count would give every concurrent file all of them)."""
    from distributed import get_worker

    from overlap_desktop.core.index.parallel import default_workers

    try:
        here = slots_by_host.get(_host(get_worker().address), 1)
    except ValueError:  # not inside a worker (a test calling the task directly)
        return 0
    return max(1, default_workers() // here)


# --------------------------------------------------------------------------- indexing


def _dask_task(job: FileJob, cancel_name: str, slots_by_host: dict[str, int] | None = None) -> FileOutcome:
    """Runs on a Dask worker: fingerprint one file, polling the run's cancel flag now and then."""
    from distributed import Event

    flag = Event(cancel_name)
    state = [0.0, False]

    def cancelled() -> bool:
        now = time.monotonic()
        if now - state[0] >= _CANCEL_POLL_S:
            state[0] = now
            state[1] = bool(flag.is_set())
        return bool(state[1])

    try:
        return run_job(job, cancel=cancelled, decoder_threads=_decoder_share(slots_by_host or {}))
    except Cancelled:
        return FileOutcome(job.path, cancelled=True, where=_where())


class DaskEngine:
    """Fingerprint files on the workers of a Dask cluster (an :class:`~overlap_desktop.core.index.parallel.Engine`).

    At most :attr:`capacity` files are in flight (twice the cluster's worker threads),
    so neither the scheduler nor this process piles up results; each result is fetched
    and released as soon as it is done.
    """

    def __init__(self, address: str, *, client: Any = None) -> None:
        distributed = _distributed()
        self._own = client is None
        self.client = connect(address) if client is None else client
        self.address = address
        threads = _n_threads(self.client)
        self._slots = _slots_by_host(self.client)
        self.capacity = 2 * threads
        self.description = f"Dask cluster {address} ({threads} worker threads)"
        self._cancel_name = f"overlap-cancel-{uuid.uuid4().hex}"
        self._cancel = distributed.Event(self._cancel_name, client=self.client)
        self._futures: dict[Any, FileJob] = {}

    def submit(self, job: FileJob) -> None:
        # A worker elsewhere checks first that it sees the writer's file at that path.
        fut = self.client.submit(_dask_task, dataclasses.replace(job, remote=True), self._cancel_name, self._slots,
                                 pure=False, key=f"overlap-fingerprint-{uuid.uuid4().hex}")
        self._futures[fut] = job

    def fractions(self) -> dict[str, float]:
        # Within-file progress would cost a message per file per interval across the network;
        # the writer's aggregate progress moves per finished file instead.
        return {}

    def wait(self, timeout: float) -> list[tuple[FileJob, FileOutcome]]:
        if not self._futures:
            return []
        # Future.done() is local state kept current by the client's connection: polling it is cheap,
        # and unlike distributed.wait it needs no process-wide default client.
        deadline = time.monotonic() + timeout
        while True:
            done = [f for f in self._futures if f.done()]
            if done or time.monotonic() >= deadline:
                break
            time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
        out: list[tuple[FileJob, FileOutcome]] = []
        for fut in done:
            job = self._futures.pop(fut)
            try:
                outcome = fut.result()
            except Exception as exc:
                name = type(exc).__name__
                reason = (f"the Dask workers fingerprinting this file died too often ({exc}); the file may "
                          "crash the decoder or need more memory than a worker has"
                          if name == "KilledWorker" else f"Dask task failed ({name}: {exc})")
                outcome = FileOutcome(job.path, error=reason)
            finally:
                fut.release()
            out.append((job, outcome))
        return out

    def stop(self) -> list[tuple[FileJob, FileOutcome]]:
        # Running tasks see the flag within a second and stop; queued ones are dropped.
        self._cancel.set()
        futures = list(self._futures)
        self._futures.clear()
        self.client.cancel(futures)
        return []

    def close(self) -> None:
        if self._futures:
            self.stop()
        try:
            self._cancel.clear()
        except Exception:
            log.debug("could not clear the cancel flag on %s", self.address, exc_info=True)
        if self._own:
            self.client.close()


# --------------------------------------------------------------------------- shard search


def _search_shard(directory: str, codes: np.ndarray, batch: int, max_distance: int, probe: int) -> Any:
    """Runs on a Dask worker: search one sealed shard with every query batch (uncapped hits).

    Returns the list of per-batch hits, or a sentence when this worker cannot open the
    shard (the index folder is not on storage it shares with the client).
    """
    from overlap_desktop.core.index.shards import Shard
    from overlap_desktop.errors import OverlapError

    try:
        shard = Shard.open(Path(directory))
    except (OSError, OverlapError) as exc:
        return f"worker {_where()} cannot open it ({exc})"
    try:
        return [shard.search(codes[b0:b0 + batch], max_distance=max_distance, probe=probe)
                for b0 in range(0, codes.shape[0], batch)]
    finally:
        shard.close()


class _Found:
    """A shard stand-in whose search returns hits found elsewhere (so the index can filter them)."""

    def __init__(self, hits: Hits) -> None:
        self.hits = hits

    def search(self, *args: Any, **kwargs: Any) -> Hits:
        return self.hits


def collect_hits(index: Index, address: str, codes: np.ndarray, params: MatchParams,
                 progress: ProgressCallback | None, cancel: CancelCallback | None, *,
                 client: Any = None) -> Hits:
    """The cluster version of compare's shard loop: same hits, in the same order.

    Each sealed shard is searched by a worker (which must see the index folder at the
    same path); shards served from temporary files (streams not sealed yet) are searched
    here. Hits are then filtered to live streams and capped per query frame exactly as
    the local loop does, so the report does not depend on where the search ran.
    """
    from overlap_desktop.core.index.sealing import _LiveShard
    from overlap_desktop.core.index.shards import Hits as _Hits
    from overlap_desktop.core.match.compare import MAX_HITS_PER_FRAME, QUERY_BATCH, _cap_per_frame

    own = client is None
    client = connect(address) if client is None else client
    futures: list[Any] = []
    try:
        codes_f = client.scatter(codes, broadcast=False)
        # Per shard, in order: a future for a sealed shard, or the hits of a temporary one.
        plan: list[tuple[str, Any]] = []
        for shard in index.shards():  # seals first when it may write, as a local compare does
            check_cancel(cancel)
            if isinstance(shard, _LiveShard):
                fut = client.submit(_search_shard, str(shard.directory), codes_f, QUERY_BATCH,
                                    params.seed_distance, params.probe, pure=False,
                                    key=f"overlap-search-{uuid.uuid4().hex}")
                futures.append(fut)
                plan.append((str(shard.directory), fut))
            else:  # a temporary shard lives in this computer's temp folder only
                plan.append(("", [shard.search(codes[b0:b0 + QUERY_BATCH], max_distance=params.seed_distance,
                                               probe=params.probe)
                                  for b0 in range(0, codes.shape[0], QUERY_BATCH)]))
        parts: list[Hits] = []
        for n, (directory, found) in enumerate(plan, 1):
            if directory:
                while True:
                    check_cancel(cancel)
                    try:
                        found = found.result(timeout=0.5)
                        break
                    except TimeoutError:
                        continue
                if isinstance(found, str):
                    raise UsageError(f"the index's shard folder {directory} is not visible to the Dask "
                                     f"workers: {found}; for --cluster the index folder must be on storage "
                                     "every worker mounts at the same path")
            for b, h in zip(range(0, codes.shape[0], QUERY_BATCH), found):
                if directory:
                    h = _LiveShard(_Found(h), index).search()  # type: ignore[arg-type]
                if len(h):
                    h.q_idx = h.q_idx + b
                    parts.append(_cap_per_frame(h, MAX_HITS_PER_FRAME))
            if progress is not None:
                progress(Progress(stage="search", done=n, total=len(plan), unit="shards"))
        return _Hits.concat(parts)
    finally:
        if futures:
            client.cancel(futures)
        if own:
            client.close()


class ClusterCorpus:
    """The index corpus of a comparison, with the shard search sent to a Dask cluster.

    Wraps compare's own index corpus (fingerprints and names still come from the local
    index); compare's shard loop hands over to :meth:`collect_hits` when it sees one.
    """

    def __init__(self, inner: Any, address: str) -> None:
        if not address:
            raise ConfigError("--cluster needs a scheduler address such as tcp://HOST:8786")
        self.inner = inner
        self.address = address

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def collect_hits(self, codes: np.ndarray, params: MatchParams, progress: ProgressCallback | None,
                     cancel: CancelCallback | None) -> Hits:
        return collect_hits(self.inner.index, self.address, codes, params, progress, cancel)
