"""The comparison engine: query streams looked up shard by shard in a corpus.

A corpus is the owned index, or a temporary shard built from a manifest or sample
footage. Seed matches are grouped per (query stream, corpus stream) and
:func:`~overlap_desktop.core.match.lines.match_streams` turns them into segments.
:mod:`.compare` builds the four public comparisons on top of :func:`compare_streams`.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from overlap_desktop.core.index.search import MAX_HITS_PER_FRAME, QUERY_BATCH, Corpus, cap_per_frame
from overlap_desktop.core.index.shards import Hits, QueryPlan, Shard, build_shard
from overlap_desktop.core.match.lines import match_streams
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    StreamFingerprints,
    check_cancel,
)
from overlap_desktop.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = [
    "IndexCorpus",
    "MemoryCorpus",
    "QueryStream",
    "compare_streams",
    "emit_progress",
    "match_params",
    "one_trip",
    "query_codes",
]

# --------------------------------------------------------------------------- plumbing


@dataclass(slots=True)
class QueryStream:
    """One offered stream: the file it belongs to and its fingerprints."""

    file: str
    file_duration: float
    key: str
    fp: StreamFingerprints
    #: Index stream id when the query comes from the index (self-dedupe), else -1.
    stream_id: int = -1


class IndexCorpus:
    """The owned index as a corpus (shards from :meth:`Index.shards`)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._cache: OrderedDict[int, StreamFingerprints] = OrderedDict()

    def shards(self) -> Iterator[Shard]:
        return self.index.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        fp = self._cache.get(stream_id)
        if fp is None:
            fp = self.index.stream_fingerprints(stream_id)
            self._cache[stream_id] = fp
            while len(self._cache) > 64:  # a few dozen streams: bounded memory
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(stream_id)
        return fp

    def describe(self, stream_id: int) -> tuple[str, str]:
        f, key = self.index.stream_info(stream_id)
        return f.path, key

    def searched_seconds(self) -> float:
        """Footage seconds in the whole index: how many places a chance line could land."""
        return float(self.index.stats().get("hours") or 0.0) * 3600.0


class MemoryCorpus:
    """Streams held in memory (a manifest, fingerprinted sample footage) as a corpus.

    One temporary shard is built on disk on first use and removed by :meth:`close`.
    """

    def __init__(self, streams: Sequence[tuple[str, str, StreamFingerprints]]) -> None:
        self.streams = list(streams)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def shards(self) -> Iterator[Shard]:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="overlap-corpus-")
            codes_l, sid_l, f_l, v_l = [], [], [], []
            for sid, (_, _, fp) in enumerate(self.streams):
                rows = np.flatnonzero(fp.usable).astype(np.int32)
                v = fp.codes.shape[1]
                if rows.size == 0:
                    continue
                codes_l.append(fp.codes[rows].reshape(-1, 32))
                f_l.append(np.repeat(rows, v))
                v_l.append(np.tile(np.arange(v, dtype=np.int16), rows.size))
                sid_l.append(np.full(rows.size * v, sid, np.int64))
            if codes_l:
                try:
                    build_shard(Path(self._tmp.name) / "shard", np.concatenate(codes_l), np.concatenate(sid_l),
                                np.concatenate(f_l), np.concatenate(v_l))
                except OSError as exc:
                    # The temporary search table of an offer (a full temp disk, a file-size limit).
                    from overlap_desktop.core.fsutil import os_write_error

                    raise os_write_error(exc, self._tmp.name, "cannot write the temporary search table of "
                                         "this comparison (in the system's temporary folder; set TMPDIR "
                                         "to use another disk)") from exc
        shard_dir = Path(self._tmp.name) / "shard"
        if shard_dir.exists():
            shard = Shard.open(shard_dir)
            try:
                yield shard
            finally:
                shard.close()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.streams[stream_id][2]

    def describe(self, stream_id: int) -> tuple[str, str]:
        name, key, _ = self.streams[stream_id]
        return name, key

    def searched_seconds(self) -> float:
        return float(sum(max(fp.duration_s, 0.0) for _, _, fp in self.streams))

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def match_params(config: Config | None = None, floor_seconds: float | None = None) -> MatchParams:
    """Matcher thresholds from the configuration (``match.*`` keys) and an explicit floor."""
    kw: dict[str, Any] = {}
    if config is not None:
        kw["floor_seconds"] = float(config["match.floor_seconds"])
        md = int(config["match.max_distance"])
        if md > 0:
            kw["accept_distance"] = md
            kw["seed_distance"] = min(MatchParams().seed_distance, md)
    if floor_seconds is not None:
        if floor_seconds < 0:
            raise UsageError(f"the evidence floor must not be negative (got {floor_seconds})")
        kw["floor_seconds"] = float(floor_seconds)
    return MatchParams(**kw)


def emit_progress(progress: ProgressCallback | None, stage: str, done: float, total: float | None,
          unit: str, message: str | None = None) -> None:
    if progress is not None:
        progress(Progress(stage=stage, done=done, total=total, unit=unit, message=message))


def _collect_hits(codes: np.ndarray, corpus: Corpus, params: MatchParams,
                  progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
    """Search every shard, keeping the best seeds per query frame and shard."""
    fan_out = getattr(corpus, "collect_hits", None)
    if fan_out is not None:  # `compare --cluster`: the same search on Dask workers (core/index/search.py)
        return cast(Hits, fan_out(codes, params, progress, cancel))
    parts: list[Hits] = []
    n_shards = 0
    # Probes are cut and sorted once per query batch and chunk layout, not once per shard
    # (at 10,000 hours there are hundreds of shards; see bench/RESULTS.md).
    plans: dict[tuple[int, tuple[tuple[int, int], ...]], QueryPlan] = {}
    for shard in corpus.shards():
        check_cancel(cancel)
        layout = tuple(shard.chunks)
        for b0 in range(0, codes.shape[0], QUERY_BATCH):
            plan = plans.get((b0, layout))
            if plan is None:
                plan = plans[(b0, layout)] = QueryPlan.make(codes[b0:b0 + QUERY_BATCH], list(layout),
                                                            probe=params.probe)
            h = shard.search(plan, max_distance=params.seed_distance)
            if len(h):
                h.q_idx = h.q_idx + b0
                parts.append(cap_per_frame(h, MAX_HITS_PER_FRAME))
            check_cancel(cancel)
        n_shards += 1
        emit_progress(progress, "search", n_shards, None, "shards")
    return Hits.concat(parts)


class _OneTrip:
    """The query codes of several passes looked up in one trip over a corpus's shards.

    compare's turned pass searches the same shards as the upright pass with other codes;
    searched apart, every shard is mapped (its pages faulted in again) and looked up twice,
    which cost about a third of the per-shard time at 10,000 hours (bench/RESULTS.md). Here the
    first pass to ask for hits searches the codes of every pass at once and each pass gets its
    own rows back: the same hits in the same order as separate searches, because a hit depends
    only on its query row and the shard, and the shards come in the same order.
    """

    def __init__(self, inner: Corpus, passes: Sequence[Sequence[QueryStream]]) -> None:
        self.inner = inner
        prepared = [query_codes(p) for p in passes]
        self.codes = [np.zeros((0, 32), np.uint8) if c is None else c[0] for c in prepared]
        self.split: list[Hits | None] | None = None
        self.params: MatchParams | None = None

    def hits(self, k: int, codes: np.ndarray, params: MatchParams, progress: ProgressCallback | None,
             cancel: CancelCallback | None) -> Hits:
        """Hits of pass ``k``'s codes; anything but the codes announced for it is searched apart."""
        mine = self.codes[k]
        if self.split is None and mine.shape == codes.shape and np.array_equal(mine, codes):
            ends = np.cumsum([c.shape[0] for c in self.codes])
            every = _collect_hits(np.concatenate(self.codes), self.inner, params, progress, cancel)
            self.split = [_rows(every, a, b) for a, b in zip(np.r_[0, ends[:-1]].tolist(), ends.tolist())]
            self.params = params
        got = None
        if self.split is not None and self.params == params and np.array_equal(mine, codes):
            got, self.split[k] = self.split[k], None  # served once: the memory goes with it
        return got if got is not None else _collect_hits(codes, self.inner, params, progress, cancel)


class _TripView:
    """The corpus as pass ``k`` of a :class:`_OneTrip` sees it (hits through ``collect_hits``)."""

    def __init__(self, trip: _OneTrip, k: int) -> None:
        self.trip, self.k = trip, k

    def collect_hits(self, codes: np.ndarray, params: MatchParams, progress: ProgressCallback | None,
                     cancel: CancelCallback | None) -> Hits:
        return self.trip.hits(self.k, codes, params, progress, cancel)

    def shards(self) -> Iterator[Shard]:
        return self.trip.inner.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.trip.inner.fingerprints(stream_id)

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.trip.inner.describe(stream_id)

    def searched_seconds(self) -> float:
        return self.trip.inner.searched_seconds()


def one_trip(corpus: Any, passes: Sequence[Sequence[QueryStream]]) -> list[Any]:
    """One view of ``corpus`` per pass of :func:`compare_streams`, all passes' codes looked up together.

    The first pass to search looks up the codes of every pass while each shard is mapped once;
    later passes get their share of those hits. Searched in any other way (other codes or
    parameters, a second time), a view searches the corpus itself.

    Args:
        corpus: The corpus every pass searches.
        passes: The query streams of each pass, in any order of searching.

    Returns:
        A corpus view per pass (forwarding everything else to ``corpus``).
    """
    trip = _OneTrip(corpus, passes)
    return [_TripView(trip, k) for k in range(len(passes))]


def _rows(h: Hits, a: int, b: int) -> Hits:
    """The hits of query rows ``a <= q < b``, renumbered from 0 (order kept)."""
    keep = (h.q_idx >= a) & (h.q_idx < b)
    return Hits(h.q_idx[keep] - a, h.stream_id[keep], h.frame_idx[keep], h.variant_idx[keep], h.distance[keep])


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


def compare_streams(queries: Sequence[QueryStream], corpus: Corpus, params: MatchParams, *,
                    pair_filter: Callable[[int, int], str] | None = None,
                    progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> list[tuple[int, int, RawSegment]]:
    """The engine: segments between query streams and corpus streams.

    Args:
        queries: Query streams (identity codes of usable frames are searched).
        corpus: Where to search.
        params: Matcher thresholds.
        pair_filter: ``(query position, corpus stream id) -> "keep" | "skip" | "diagonal"``;
            ``"diagonal"`` drops the trivial identity line (a stream against itself).
        progress: Progress callback.
        cancel: Cancel callback.

    Returns:
        ``(query position, corpus stream id, segment)`` for every verified segment.
    """
    prepared = query_codes(queries)
    if prepared is None:
        return []
    codes, qs_of, row_of = prepared
    hits = _collect_hits(codes, corpus, params, progress, cancel)
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
    # Strongest evidence first, so a cancel keeps the most useful work.
    groups.sort(key=lambda g: -(g[1] - g[0]))
    searched = corpus.searched_seconds()
    out: list[tuple[int, int, RawSegment]] = []
    for k, (a, b) in enumerate(groups):
        check_cancel(cancel)
        qi, sid = int(hq[a]), int(hs[a])
        mode = pair_filter(qi, sid) if pair_filter is not None else "keep"
        if mode == "skip":
            continue
        try:
            cfp = corpus.fingerprints(sid)
        except KeyError:  # removed from the index since the shard was built
            continue
        segs = match_streams(queries[qi].fp, cfp, hr[a:b], hf[a:b], hv[a:b], params, distances=hd[a:b],
                             exclude_diagonal=(mode == "diagonal"),
                             searched_seconds=max(searched, cfp.duration_s))
        out.extend((qi, sid, s) for s in segs)
        if k % 16 == 0:
            emit_progress(progress, "match", k + 1, len(groups), "pairs")
    emit_progress(progress, "match", len(groups), len(groups), "pairs")
    return out
