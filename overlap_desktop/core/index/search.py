"""Searching an index's shards: the corpus interface, the per-frame cap, and the shard search
sent to an engine (``overlap compare --cluster``).

A comparison looks query codes up shard by shard in a *corpus* (:class:`Corpus`: the owned
index, or a temporary shard built from a manifest or sample). Locally the matcher walks the
shards itself (:mod:`overlap_desktop.core.match.engine`); with ``--cluster`` each sealed shard
is searched by :func:`search_shard` on a worker of a Dask cluster (which must see the index
folder at the same path), and :class:`ClusterCorpus` hands the matcher the same hits, in the
same order, as the local loop finds. The matching after the search stays local.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from overlap_desktop.core.engines.base import Engine, Task, where
from overlap_desktop.core.index.sealing import LiveShard
from overlap_desktop.core.index.shards import Hits, Shard
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, StreamFingerprints, check_cancel
from overlap_desktop.errors import ConfigError, OverlapError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.store import Index

log = logging.getLogger(__name__)

__all__ = ["MAX_HITS_PER_FRAME", "QUERY_BATCH", "ClusterCorpus", "Corpus", "CorpusView", "IndexBacked", "cap_per_frame",
           "search_on", "search_shard"]

#: Hits kept per query frame and shard: a frame of a static or repetitive scene can match
#: thousands of corpus frames, and beyond a few dozen they add no evidence.
MAX_HITS_PER_FRAME = 48
#: Query codes looked up per pass (bounds memory of the candidate arrays).
QUERY_BATCH = 250_000


class Corpus(Protocol):
    """Where a comparison looks its query codes up: shards to search, and the streams they name."""

    def shards(self) -> Iterator[Shard]: ...

    def fingerprints(self, stream_id: int) -> StreamFingerprints: ...

    def describe(self, stream_id: int) -> tuple[str, str]: ...

    def searched_seconds(self) -> float: ...


class CorpusView:
    """A corpus seen through a wrapper: forwards the :class:`Corpus` methods to ``inner``; a
    subclass overrides what it changes (explicitly, so a type checker sees every method)."""

    def __init__(self, inner: Corpus) -> None:
        self.inner = inner

    def shards(self) -> Iterator[Shard]:
        return self.inner.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.inner.fingerprints(stream_id)

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.inner.describe(stream_id)

    def searched_seconds(self) -> float:
        return self.inner.searched_seconds()


class IndexBacked(Corpus, Protocol):
    """A corpus backed by an open index."""

    index: Index


def cap_per_frame(h: Hits, cap: int) -> Hits:
    """Keep at most ``cap`` hits per query row (hits arrive sorted by row, then distance)."""
    if len(h) == 0:
        return h
    starts = np.flatnonzero(np.r_[True, h.q_idx[1:] != h.q_idx[:-1]])
    rank = np.arange(len(h)) - np.repeat(starts, np.diff(np.r_[starts, len(h)]))
    keep = rank < cap
    if keep.all():
        return h
    return Hits(h.q_idx[keep], h.stream_id[keep], h.frame_idx[keep], h.variant_idx[keep], h.distance[keep])


def search_shard(directory: str, codes: np.ndarray, batch: int, max_distance: int, probe: int, *,
                 task: Task) -> list[Hits] | str:
    """The engine's work function: search one sealed shard with every query batch (uncapped hits).

    Returns the list of per-batch hits, or a sentence when this worker cannot open the shard
    (the index folder is not on storage it shares with the client).
    """
    try:
        shard = Shard.open(Path(directory))
    except (OSError, OverlapError) as exc:
        return f"worker {task.where or where()} cannot open it ({exc})"
    try:
        return [shard.search(codes[b0:b0 + batch], max_distance=max_distance, probe=probe)
                for b0 in range(0, codes.shape[0], batch)]
    finally:
        shard.close()


def search_on(engine: Engine, index: Index, codes: np.ndarray, *, max_distance: int, probe: int,
              progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
    """The index's shard search with every sealed shard searched on ``engine``: the same hits, in
    the same order, as the matcher's local loop.

    Shards served from temporary files (streams not sealed yet) live in this computer's temp
    folder and are searched here. Hits are filtered to live streams and capped per query frame
    exactly as the local loop does, so the report does not depend on where the search ran.

    Raises:
        UsageError: a worker cannot open the index's shard folder.
        Cancelled: ``cancel()`` turned true.
    """
    shared = engine.share(codes)
    # Per shard, in order: the shard and the key of its call, or the hits of a temporary one.
    plan: list[tuple[Shard, Hashable | None, list[Hits] | None]] = []
    for shard in index.shards():  # seals first when it may write, as a local compare does
        check_cancel(cancel)
        if isinstance(shard, LiveShard):
            directory = str(shard.directory)
            engine.submit(directory, search_shard, directory, shared, QUERY_BATCH, max_distance, probe)
            plan.append((shard, directory, None))
        else:
            plan.append((shard, None, [shard.search(codes[b0:b0 + QUERY_BATCH], max_distance=max_distance,
                                                    probe=probe)
                                       for b0 in range(0, codes.shape[0], QUERY_BATCH)]))
    arrived: dict[Hashable, Any] = {}
    parts: list[Hits] = []
    for n, (shard, key, found) in enumerate(plan, 1):
        if key is not None:
            while key not in arrived:
                check_cancel(cancel)
                arrived.update((d.key, d) for d in engine.wait(0.5))
            found = arrived.pop(key).result()
            if isinstance(found, str):
                raise UsageError(f"the index's shard folder {key} is not visible to the Dask workers: {found}; "
                                 "for --cluster the index folder must be on storage every worker mounts at the "
                                 "same path")
        for b, h in zip(range(0, codes.shape[0], QUERY_BATCH), found or []):
            if key is not None:
                h = shard.live(h)  # type: ignore[attr-defined]
            if len(h):
                h.q_idx = h.q_idx + b
                parts.append(cap_per_frame(h, MAX_HITS_PER_FRAME))
        if progress is not None:
            progress(Progress(stage="search", done=n, total=len(plan), unit="shards"))
    return Hits.concat(parts)


class ClusterCorpus(CorpusView):
    """The index corpus of a comparison, with the shard search sent to a Dask cluster.

    Fingerprints and names still come from the local index (``inner``); the matcher hands its
    shard loop over to :meth:`collect_hits`.
    """

    def __init__(self, inner: IndexBacked, address: str) -> None:
        if not address:
            raise ConfigError("--cluster needs a scheduler address such as tcp://HOST:8786")
        super().__init__(inner)
        self.index = inner.index
        self.address = address

    def collect_hits(self, codes: np.ndarray, params: Any, progress: ProgressCallback | None,
                     cancel: CancelCallback | None) -> Hits:
        """The shard search of ``codes`` with ``params``' seed distance and probe, on the cluster."""
        from overlap_desktop.core.engines import engine_named
        from overlap_desktop.core.index.fingerprinting import pipeline_facts

        engine = engine_named("dask", address=self.address, label="search", facts=pipeline_facts)
        try:
            return search_on(engine, self.index, codes, max_distance=params.seed_distance,
                             probe=params.probe, progress=progress, cancel=cancel)
        finally:
            engine.close()
