"""Searching an index's shards: the corpus interface, the per-frame cap, and the shard search
sent to an engine (``overlap compare --cluster``).

A comparison looks query codes up shard by shard in a *corpus* (:class:`Corpus`: the owned
index, or a temporary shard built from a manifest or sample). How the shards are searched is a
:class:`HitSearch` handed to the matcher (:mod:`overlap_desktop.core.match.candidates`):
:class:`ShardSearch` walks the corpus's shards here; with ``--cluster`` :class:`ClusterSearch`
sends each sealed shard to :func:`search_shard` on a worker of a Dask cluster (which must see
the index folder at the same path) and returns the same hits, in the same order, as the local
loop finds. The matching after the search stays local.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from overlap_desktop.core.engines.base import Engine, Task, where
from overlap_desktop.core.index.plan import QueryPlan
from overlap_desktop.core.index.sealing import LiveShard
from overlap_desktop.core.index.shards import Hits, Shard
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, StreamFingerprints, check_cancel
from overlap_desktop.errors import ConfigError, OverlapError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.store import Index

log = logging.getLogger(__name__)

__all__ = ["MAX_HITS_PER_FRAME", "QUERY_BATCH", "ClusterSearch", "Corpus", "CorpusView", "HitSearch", "ShardSearch",
           "cap_per_frame", "search_on", "search_shard"]

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


class HitSearch(Protocol):
    """How a comparison finds its candidate hits: query codes looked up in every shard of a corpus.

    :class:`ShardSearch` (here) and :class:`ClusterSearch` (a Dask cluster) implement it; so do
    the per-pass views of :func:`overlap_desktop.core.match.candidates.one_trip`.
    """

    def hits(self, codes: np.ndarray, *, max_distance: int, probe: int,
             progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
        """Hits of ``codes`` (uint8 (M, 32)) within ``max_distance`` bits, capped per query frame
        and shard, shard by shard in the corpus's order."""
        ...


class ShardSearch:
    """The shard search of this process: every shard of ``corpus`` in turn, the query plans
    cut and sorted once per query batch and chunk layout."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    def hits(self, codes: np.ndarray, *, max_distance: int, probe: int,
             progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
        parts: list[Hits] = []
        n_shards = 0
        # Probes are cut and sorted once per query batch and chunk layout, not once per shard
        # (at 10,000 hours there are hundreds of shards; see bench/RESULTS.md).
        plans: dict[tuple[int, tuple[tuple[int, int], ...]], QueryPlan] = {}
        for shard in self.corpus.shards():
            check_cancel(cancel)
            layout = tuple(shard.chunks)
            for b0 in range(0, codes.shape[0], QUERY_BATCH):
                plan = plans.get((b0, layout))
                if plan is None:
                    plan = plans[(b0, layout)] = QueryPlan.make(codes[b0:b0 + QUERY_BATCH], list(layout),
                                                                probe=probe)
                h = shard.search(plan, max_distance=max_distance)
                if len(h):
                    h.q_idx = h.q_idx + b0
                    parts.append(cap_per_frame(h, MAX_HITS_PER_FRAME))
                check_cancel(cancel)
            n_shards += 1
            if progress is not None:
                progress(Progress(stage="search", done=n_shards, total=None, unit="shards"))
        return Hits.concat(parts)


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
    plan: list[tuple[LiveShard | None, Hashable | None, list[Hits] | None]] = []
    for shard in index.shards():  # seals first when it may write, as a local compare does
        check_cancel(cancel)
        if isinstance(shard, LiveShard):
            directory = str(shard.directory)
            engine.submit(directory, search_shard, directory, shared, QUERY_BATCH, max_distance, probe)
            plan.append((shard, directory, None))
        else:
            plan.append((None, None, [shard.search(codes[b0:b0 + QUERY_BATCH], max_distance=max_distance,
                                                    probe=probe)
                                       for b0 in range(0, codes.shape[0], QUERY_BATCH)]))
    arrived: dict[Hashable, Any] = {}
    parts: list[Hits] = []
    for n, (live, key, found) in enumerate(plan, 1):
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
            if live is not None:
                h = live.live(h)
            if len(h):
                h.q_idx = h.q_idx + b
                parts.append(cap_per_frame(h, MAX_HITS_PER_FRAME))
        if progress is not None:
            progress(Progress(stage="search", done=n, total=len(plan), unit="shards"))
    return Hits.concat(parts)


class ClusterSearch:
    """The shard search of a comparison sent to a Dask cluster (``overlap compare --cluster``).

    Fingerprints and names still come from the local index; only the shard search runs on the
    cluster's workers.
    """

    def __init__(self, index: Index, address: str) -> None:
        if not address:
            raise ConfigError("--cluster needs a scheduler address such as tcp://HOST:8786")
        self.index = index
        self.address = address

    def hits(self, codes: np.ndarray, *, max_distance: int, probe: int,
             progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
        """The shard search of ``codes`` on the cluster."""
        from overlap_desktop.core.engines import engine_named
        from overlap_desktop.core.index.fingerprinting import pipeline_facts

        engine = engine_named("dask", address=self.address, label="search", facts=pipeline_facts)
        try:
            return search_on(engine, self.index, codes, max_distance=max_distance,
                             probe=probe, progress=progress, cancel=cancel)
        finally:
            engine.close()
