"""Stage 1 of a comparison: candidate hits.

The offered codes are looked up in the corpus's shards by a
:class:`~overlap_desktop.core.index.search.HitSearch` (this process, or a Dask cluster) and the
hits are grouped per (query stream, corpus stream) pair: the :class:`~.types.PairSeeds` each
pair's matching starts from (:mod:`.pair`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from overlap_desktop.core.index.search import HitSearch
from overlap_desktop.core.index.shards import Hits
from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.match.types import PairSeeds, QueryStream
from overlap_desktop.core.types import CancelCallback, ProgressCallback

__all__ = ["TripSearch", "find_candidates", "one_trip", "query_codes"]


def query_codes(queries: Sequence[QueryStream]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The codes searched for a list of query streams: the one place they are prepared.

    Every usable frame of every query stream contributes its identity code.

    Returns:
        ``(codes uint8 (M, 32), query position int64 (M,), frame row int64 (M,))``, or
        ``None`` when no query stream has a usable frame.
    """
    q_codes, q_stream, q_row = [], [], []
    for i, qs in enumerate(queries):
        rows = np.flatnonzero(qs.fp.usable)
        q_codes.append(qs.fp.codes[rows, 0])
        q_stream.append(np.full(rows.size, i, np.int64))
        q_row.append(rows.astype(np.int64))
    if not q_codes or sum(c.shape[0] for c in q_codes) == 0:
        return None
    return np.ascontiguousarray(np.concatenate(q_codes)), np.concatenate(q_stream), np.concatenate(q_row)


def find_candidates(queries: Sequence[QueryStream], search: HitSearch, params: MatchParams, *,
                    progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> list[PairSeeds]:
    """The seeds of every (query stream, corpus stream) pair the search found, strongest first.

    Args:
        queries: Query streams (identity codes of usable frames are searched).
        search: How the corpus's shards are searched.
        params: ``seed_distance`` and ``probe`` of the search.
        progress: Receives the search's ``"search"`` stage.
        cancel: Polled between shards.

    Returns:
        One :class:`PairSeeds` per pair with hits, the pairs with most seeds first (so a cancel
        during matching keeps the most useful work).
    """
    prepared = query_codes(queries)
    if prepared is None:
        return []
    codes, qs_of, row_of = prepared
    hits = search.hits(codes, max_distance=params.seed_distance, probe=params.probe, progress=progress,
                       cancel=cancel)
    if len(hits) == 0:
        return []
    hq = qs_of[hits.q_idx]
    order = np.lexsort((hits.stream_id, hq))
    hq = hq[order]
    hs = hits.stream_id[order]
    hr = row_of[hits.q_idx[order]]
    hf = hits.frame_idx[order].astype(np.int64)
    hv = hits.variant_idx[order].astype(np.int64)
    hd = hits.distance[order].astype(np.int64)
    bounds = np.flatnonzero(np.r_[True, (hq[1:] != hq[:-1]) | (hs[1:] != hs[:-1]), True])
    groups = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    groups.sort(key=lambda g: -(g[1] - g[0]))
    return [PairSeeds(int(hq[a]), int(hs[a]), hr[a:b], hf[a:b], hv[a:b], hd[a:b]) for a, b in groups]


class _OneTrip:
    """The query codes of several passes looked up in one trip over a corpus's shards.

    compare's turned pass searches the same shards as the upright pass with other codes;
    searched apart, every shard is mapped (its pages faulted in again) and looked up twice,
    which cost about a third of the per-shard time at 10,000 hours (bench/RESULTS.md). Here the
    first pass to ask for hits searches the codes of every pass at once and each pass gets its
    own rows back: the same hits in the same order as separate searches, because a hit depends
    only on its query row and the shard, and the shards come in the same order.
    """

    def __init__(self, inner: HitSearch, passes: Sequence[Sequence[QueryStream]]) -> None:
        self.inner = inner
        prepared = [query_codes(p) for p in passes]
        self.codes = [np.zeros((0, 32), np.uint8) if c is None else c[0] for c in prepared]
        self.split: list[Hits | None] | None = None
        self.asked: tuple[int, int] | None = None

    def hits(self, k: int, codes: np.ndarray, max_distance: int, probe: int, progress: ProgressCallback | None,
             cancel: CancelCallback | None) -> Hits:
        """Hits of pass ``k``'s codes; anything but the codes announced for it is searched apart."""
        mine = self.codes[k]
        if self.split is None and mine.shape == codes.shape and np.array_equal(mine, codes):
            ends = np.cumsum([c.shape[0] for c in self.codes])
            every = self.inner.hits(np.concatenate(self.codes), max_distance=max_distance, probe=probe,
                                    progress=progress, cancel=cancel)
            self.split = [_rows(every, a, b) for a, b in zip(np.r_[0, ends[:-1]].tolist(), ends.tolist())]
            self.asked = (max_distance, probe)
        got = None
        if self.split is not None and self.asked == (max_distance, probe) and np.array_equal(mine, codes):
            got, self.split[k] = self.split[k], None  # served once: the memory goes with it
        if got is not None:
            return got
        return self.inner.hits(codes, max_distance=max_distance, probe=probe, progress=progress, cancel=cancel)


class TripSearch:
    """The search as pass ``k`` of a :func:`one_trip` sees it (a :class:`HitSearch`)."""

    def __init__(self, trip: _OneTrip, k: int) -> None:
        self.trip, self.k = trip, k

    def hits(self, codes: np.ndarray, *, max_distance: int, probe: int,
             progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
        return self.trip.hits(self.k, codes, max_distance, probe, progress, cancel)


def one_trip(search: HitSearch, passes: Sequence[Sequence[QueryStream]]) -> list[TripSearch]:
    """One search per pass of a comparison, all passes' codes looked up together.

    The first pass to search looks up the codes of every pass while each shard is mapped once;
    later passes get their share of those hits. Searched in any other way (other codes or
    search settings, a second time), a pass's search asks ``search`` itself.

    Args:
        search: The search every pass uses.
        passes: The query streams of each pass, in any order of searching.

    Returns:
        A :class:`TripSearch` per pass.
    """
    trip = _OneTrip(search, passes)
    return [TripSearch(trip, k) for k in range(len(passes))]


def _rows(h: Hits, a: int, b: int) -> Hits:
    """The hits of query rows ``a <= q < b``, renumbered from 0 (order kept)."""
    keep = (h.q_idx >= a) & (h.q_idx < b)
    return Hits(h.q_idx[keep] - a, h.stream_id[keep], h.frame_idx[keep], h.variant_idx[keep], h.distance[keep])
