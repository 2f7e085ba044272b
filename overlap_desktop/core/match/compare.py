"""Comparisons: an offer against the owned index, the index against itself, two offers
against each other, and a manifest against the sample footage a buyer was shown.

All four share one engine: query streams (identity codes, usually from a manifest)
are looked up shard by shard in a corpus (the index, or a temporary shard built from
a manifest or sample), seed matches are grouped per (query stream, corpus stream),
and :func:`~overlap_desktop.core.match.lines.match_streams` turns them into segments. The
result is a :class:`~overlap_desktop.core.report.model.Report`.
"""

from __future__ import annotations

import os
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from overlap_desktop.core.index.shards import Hits, Shard, build_shard
from overlap_desktop.core.ingest.orient import search_orientations
from overlap_desktop.core.match.annotations import (
    annotation_overlap,
    fill_episodes,
    index_episode_lookup,
    manifest_episode_lookup,
)
from overlap_desktop.core.match.evidence import EVIDENCE_ID
from overlap_desktop.core.match.lines import (
    MatchParams,
    RawSegment,
    match_streams,
    real_footage_seconds,
    union_seconds,
    union_seconds_excluding,
)
from overlap_desktop.core.match.repeats import fill_repeats
from overlap_desktop.core.report.model import FileResult, Report, offered_pieces
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    Segment,
    Span,
    StreamFingerprints,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import ManifestError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.manifest.format import Manifest

__all__ = [
    "MAX_HITS_PER_FRAME",
    "QueryStream",
    "audit_sample",
    "compare",
    "compare_offers",
    "compare_streams",
    "match_params",
    "self_dedupe",
]

#: Seeds kept per query frame and shard (best first): a featureless or repetitive frame
#: can match thousands of corpus frames, and beyond a few dozen they add no evidence.
MAX_HITS_PER_FRAME = 48
#: Query codes looked up per pass (bounds memory of the candidate arrays).
QUERY_BATCH = 250_000
#: Speed factors within this relative distance of 1 are "normal speed".
SPEED_TOLERANCE = 0.03


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


class _Corpus(Protocol):
    def shards(self) -> Iterator[Shard]: ...

    def fingerprints(self, stream_id: int) -> StreamFingerprints: ...

    def describe(self, stream_id: int) -> tuple[str, str]: ...

    def searched_seconds(self) -> float: ...


class _IndexCorpus:
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


class _MemoryCorpus:
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
                build_shard(Path(self._tmp.name) / "shard", np.concatenate(codes_l), np.concatenate(sid_l),
                            np.concatenate(f_l), np.concatenate(v_l))
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


def _emit(progress: ProgressCallback | None, stage: str, done: float, total: float | None,
          unit: str, message: str | None = None) -> None:
    if progress is not None:
        progress(Progress(stage=stage, done=done, total=total, unit=unit, message=message))


def _collect_hits(codes: np.ndarray, corpus: _Corpus, params: MatchParams,
                  progress: ProgressCallback | None, cancel: CancelCallback | None) -> Hits:
    """Search every shard, keeping the best seeds per query frame and shard."""
    fan_out = getattr(corpus, "collect_hits", None)
    if fan_out is not None:  # `compare --cluster`: the same search on Dask workers (core/cluster.py)
        return fan_out(codes, params, progress, cancel)  # type: ignore[no-any-return]
    parts: list[Hits] = []
    n_shards = 0
    for shard in corpus.shards():
        check_cancel(cancel)
        for b0 in range(0, codes.shape[0], QUERY_BATCH):
            h = shard.search(codes[b0:b0 + QUERY_BATCH], max_distance=params.seed_distance,
                             probe=params.probe)
            if len(h):
                h.q_idx = h.q_idx + b0
                parts.append(_cap_per_frame(h, MAX_HITS_PER_FRAME))
            check_cancel(cancel)
        n_shards += 1
        _emit(progress, "search", n_shards, None, "shards")
    return Hits.concat(parts)


def _cap_per_frame(h: Hits, cap: int) -> Hits:
    """Keep at most ``cap`` hits per query row (hits arrive sorted by row, then distance)."""
    if len(h) == 0:
        return h
    starts = np.flatnonzero(np.r_[True, h.q_idx[1:] != h.q_idx[:-1]])
    rank = np.arange(len(h)) - np.repeat(starts, np.diff(np.r_[starts, len(h)]))
    keep = rank < cap
    if keep.all():
        return h
    return Hits(h.q_idx[keep], h.stream_id[keep], h.frame_idx[keep], h.variant_idx[keep], h.distance[keep])


def compare_streams(queries: Sequence[QueryStream], corpus: _Corpus, params: MatchParams, *,
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
    q_codes, q_stream, q_row = [], [], []
    for i, qs in enumerate(queries):
        rows = np.flatnonzero(qs.fp.usable)
        q_codes.append(qs.fp.codes[rows, 0])
        q_stream.append(np.full(rows.size, i, np.int64))
        q_row.append(rows.astype(np.int64))
    if not q_codes or sum(c.shape[0] for c in q_codes) == 0:
        return []
    codes = np.ascontiguousarray(np.concatenate(q_codes))
    qs_of = np.concatenate(q_stream)
    row_of = np.concatenate(q_row)
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
            _emit(progress, "match", k + 1, len(groups), "pairs")
    _emit(progress, "match", len(groups), len(groups), "pairs")
    return out


# --------------------------------------------------------------------------- reports


def _to_segment(q: QueryStream, corpus_file: str, corpus_key: str, cfp: StreamFingerprints,
                s: RawSegment) -> Segment:
    variant = cfp.variants[s.variant_idx] if 0 <= s.variant_idx < len(cfp.variants) else Variant()
    return Segment(
        query_file=q.file, query_stream=q.key,
        query_start=round(s.query_start, 3), query_end=round(s.query_end, 3),
        corpus_file=corpus_file, corpus_stream=corpus_key,
        corpus_start=round(s.corpus_start, 3), corpus_end=round(s.corpus_end, 3),
        speed=round(s.speed, 4), variant=variant, frames=s.frames,
        mean_distance=round(s.mean_distance, 2), score=s.score, pairs=s.pairs,
        chance=None if s.chance is None else float(f"{s.chance:.3g}"),
        speed_low=None if s.speed_low is None else round(s.speed_low, 4),
        speed_high=None if s.speed_high is None else round(s.speed_high, 4))


def speed_change(s: Segment) -> str | None:
    """``"slowdown"``, ``"speedup"`` or ``None`` (normal speed, or not measurably different).

    With a speed interval (assessed segments) a change is claimed only when the
    interval excludes normal speed; a 4 s identical copy measured at 0.97x is not
    "slowed". Without one, the fixed tolerance of older reports applies.
    """
    sp = abs(s.speed)
    if s.speed_low is not None and s.speed_high is not None:
        lo, hi = sorted((abs(s.speed_low), abs(s.speed_high)))
        if lo <= 1.0 <= hi:
            return None
        return "slowdown" if hi < 1.0 else "speedup"
    if sp < 1 - SPEED_TOLERANCE:
        return "slowdown"
    if sp > 1 + SPEED_TOLERANCE:
        return "speedup"
    return None


def _flags(segments: Sequence[Segment]) -> list[str]:
    flags: set[str] = set()
    for s in segments:
        if s.speed < 0:
            flags.add("reversed")
        change = speed_change(s)
        if change is not None:
            flags.add(change)
        v = s.variant
        if v.mirrored:
            flags.add("mirror")
        if v.crop < 1.0:
            flags.add("crop")
        if v.edge is not None and v.edge_depth > 0:
            flags.add("edge-crop")
        if v.rotation:
            flags.add("rotation")
    # A splice is pieces following each other in offered time, not one stretch matching
    # several owned copies of the same footage.
    if len(offered_pieces(segments)) > 1:
        flags.add("splice")
    order = ["slowdown", "speedup", "reversed", "mirror", "crop", "edge-crop", "rotation", "splice"]
    return [f for f in order if f in flags]


def _dedupe(segs: list[Segment]) -> list[Segment]:
    """Drop segments that repeat another (same corpus stream, same stretch, same line)."""
    segs = sorted(segs, key=lambda s: (-s.frames, s.mean_distance))
    kept: list[Segment] = []
    for s in segs:
        dup = False
        for k in kept:
            if (k.corpus_file, k.corpus_stream, k.query_stream) != (s.corpus_file, s.corpus_stream, s.query_stream):
                continue
            ov = min(k.query_end, s.query_end) - max(k.query_start, s.query_start)
            if ov < 0.5 * min(k.query_duration, s.query_duration):
                continue
            mid = 0.5 * (max(k.query_start, s.query_start) + min(k.query_end, s.query_end))

            def at(x: Segment, t: float) -> float:
                if x.query_end == x.query_start:
                    return x.corpus_start
                return x.corpus_start + (t - x.query_start) * (x.corpus_end - x.corpus_start) / (
                    x.query_end - x.query_start)

            if abs(at(k, mid) - at(s, mid)) <= 1.5 * max(1.0, abs(k.speed)):
                dup = True
                break
        if not dup:
            kept.append(s)
    kept.sort(key=lambda s: (s.query_start, s.corpus_file, s.corpus_start))
    return kept


def _file_results(queries: Sequence[QueryStream], found: Sequence[tuple[int, int, RawSegment]],
                  corpus: _Corpus, params: MatchParams) -> list[FileResult]:
    by_file: OrderedDict[str, list[int]] = OrderedDict()
    for i, q in enumerate(queries):
        by_file.setdefault(q.file, []).append(i)
    segs_of: dict[int, list[Segment]] = {}
    names: dict[int, tuple[str, str]] = {}
    for qi, sid, s in found:
        if sid not in names:
            names[sid] = corpus.describe(sid)
        cf, ck = names[sid]
        segs_of.setdefault(qi, []).append(_to_segment(queries[qi], cf, ck, corpus.fingerprints(sid), s))
    results: list[FileResult] = []
    for name, idxs in by_file.items():
        all_segs = [s for i in idxs for s in segs_of.get(i, [])]
        weak = _dedupe([s for s in all_segs if _is_weak(s, params)])
        segs = _dedupe([s for s in all_segs if not _is_weak(s, params)])
        above = [s for s in segs if s.query_duration >= params.floor_seconds - 1e-9]
        below = [s for s in segs if s.query_duration < params.floor_seconds - 1e-9]
        spans = [(s.query_start, s.query_end) for s in above]
        ind: list[Span] = []
        for i in idxs:
            ind.extend(queries[i].fp.indeterminate)
        ind.sort(key=lambda sp: (sp.start_s, sp.end_s))
        duration = queries[idxs[0]].file_duration
        # Indeterminate time inside a matched stretch is reported, never counted.
        ind_spans = [(sp.start_s, sp.end_s) for sp in ind]
        results.append(FileResult(
            query_file=name,
            duration_s=duration,
            matched_seconds=round(union_seconds_excluding(spans, ind_spans), 3),
            real_footage_seconds=round(real_footage_seconds(
                [(s.query_start, s.query_end, s.speed) for s in above], ind_spans), 3),
            segments=above,
            below_floor=below,
            indeterminate=ind,
            flags=_flags(above),
            weak=weak,
        ))
    return results


def _is_weak(s: Segment, params: MatchParams) -> bool:
    """Weak evidence: a chance count above what is counted (see core/evidence.py)."""
    return s.chance is not None and s.chance > params.max_chance


def _report(kind: str, files: list[FileResult], *, manifest: dict[str, Any],
            settings: dict[str, Any]) -> Report:
    ind_total = sum(union_seconds([(sp.start_s, sp.end_s) for sp in f.indeterminate]) for f in files)
    return Report(
        kind=kind,
        offered_seconds=round(sum(f.duration_s for f in files), 3),
        matched_seconds=round(sum(f.matched_seconds for f in files), 3),
        real_footage_seconds=round(sum(f.real_footage_seconds for f in files), 3),
        indeterminate_seconds=round(ind_total, 3),
        files=files,
        manifest=manifest,
        settings=settings,
        created=datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    )


def _settings(params: MatchParams, *, algo: str, prep: str, index: Index | None = None,
              extra: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "algo": algo,
        "prep": prep,
        "floor_seconds": params.floor_seconds,
        "thresholds": {
            "seed_distance": params.seed_distance,
            "accept_distance": params.accept_distance,
            "extend_distance": params.extend_distance,
            "gap_seconds": params.gap_seconds,
            "min_frames": params.min_frames,
            "min_accept_ratio": params.min_accept_ratio,
            "speed_range": [params.min_speed, params.max_speed],
            "speed_tolerance": SPEED_TOLERANCE,
        },
        "search": {"method": "multi-index hashing, 10 x 24-bit chunks", "probe": params.probe,
                   "max_hits_per_frame": MAX_HITS_PER_FRAME},
        "evidence": {"model": EVIDENCE_ID, "max_chance": params.max_chance,
                     "list_chance": params.list_chance},
    }
    if index is not None:
        out["index"] = {"identity": index.identity, "path": str(index.path),
                        "schema_version": index.schema_version}
    if extra:
        out.update(extra)
    return out


def _manifest_facts(m: Manifest) -> dict[str, Any]:
    secs = sum(float(f.duration_s or 0.0) for f in m.files)
    return {
        "label": getattr(m, "label", None),
        "root": getattr(m, "root", None),
        "algo_id": m.algo_id,
        "prep_id": m.prep_id,
        "created": getattr(m, "created", None),
        "creator": getattr(m, "creator", None),
        "files": len(m.files),
        "streams": sum(len(f.streams) for f in m.files),
        "hours": round(secs / 3600.0, 4),
    }


def _manifest_queries(m: Manifest) -> list[QueryStream]:
    out: list[QueryStream] = []
    for f in m.files:
        dur = float(f.duration_s) if f.duration_s is not None else max(
            (s.fingerprints.duration_s for s in f.streams), default=0.0)
        for s in f.streams:
            out.append(QueryStream(f.name, dur, s.key, s.fingerprints))
        if not f.streams:
            empty = StreamFingerprints(np.zeros(0, np.int64), np.zeros(0, np.uint8),
                                       np.zeros((0, 1, 32), np.uint8), (Variant(),), np.zeros(0, bool),
                                       [], 1.0, dur)
            out.append(QueryStream(f.name, dur, "", empty))
    return out


def _load_manifest(manifest: Manifest | Path | str, *, expect_algo: str | None = None,
                   expect_prep: str | None = None) -> tuple[Manifest, str | None]:
    if isinstance(manifest, (str, os.PathLike)):
        from overlap_desktop.core.manifest.format import read_manifest

        path = Path(manifest)
        return read_manifest(path, expect_algo=expect_algo, expect_prep=expect_prep), str(path)
    return manifest, None


def _check_ids(m: Manifest, algo: str, prep: str, *, what: str, path: str | None) -> None:
    if m.algo_id != algo or m.prep_id != prep:
        raise ManifestError(
            f"incompatible fingerprints: the manifest uses algo {m.algo_id!r} / prep {m.prep_id!r}, "
            f"{what} uses algo {algo!r} / prep {prep!r}; both sides must use the same hash and "
            f"normalisation", path=path)


# --------------------------------------------------------------------------- public API


def compare(manifest: Manifest | Path | str, index: Index | Path | str | None = None, *,
            config: Config | None = None, floor_seconds: float | None = None,
            eval_files: Sequence[str | os.PathLike[str]] | None = None,
            eval_fields: Sequence[str] | None = None,
            progress: ProgressCallback | None = None, cancel: CancelCallback | None = None,
            cluster: str | None = None) -> Report:
    """How much of an offer (a manifest) matches footage the index holds.

    Args:
        manifest: A :class:`Manifest` or the path of a ``.ovlm`` file.
        index: An open :class:`Index`, an index folder, or ``None`` for the configured one.
        config: Settings (``match.*``, ``index.path``); default: loaded.
        floor_seconds: Evidence floor overriding ``match.floor_seconds``.
        eval_files: The lab's evaluation set, checked against the manifest's annotation
            n-gram hashes (``Report.text_overlap``; see core/annotations.py).
        eval_fields: JSON fields of ``eval_files`` holding the text.
        progress: Receives :class:`Progress` (stages ``search`` then ``match``).
        cancel: Polled between shards and stream pairs.
        cluster: A Dask scheduler address: search the shards on its workers (core/cluster.py).

    Returns:
        A ``compare`` :class:`Report` (``FileResult.episodes`` filled for LeRobot streams).

    Raises:
        ManifestError: the manifest is malformed or uses another algo/prep than the index.
        IndexError_: the index is missing or unusable.
        Cancelled: ``cancel()`` turned true.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.store import Index as _Index
    from overlap_desktop.core.index.store import open_index

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    own = not isinstance(index, _Index)
    idx = open_index(index, config=config, create=False) if own else index  # type: ignore[arg-type]
    try:
        m, mpath = _load_manifest(manifest, expect_algo=idx.algo_id, expect_prep=idx.prep_id)
        _check_ids(m, idx.algo_id, idx.prep_id, what="this index", path=mpath)
        # Before the long footage search, so a bad evaluation file fails fast.
        text_block = None if eval_files is None else annotation_overlap(m, eval_files, fields=eval_fields)
        queries = _manifest_queries(m)
        corpus: Any = _IndexCorpus(idx)
        if cluster:
            from overlap_desktop.core.index.cluster import ClusterCorpus

            corpus = ClusterCorpus(corpus, cluster)
        # Issue 19: rotated and flipped offers, found by turning the offered codes (core/ingest/orient.py).
        found, corpus = search_orientations(compare_streams, queries, corpus, params, progress=progress, cancel=cancel)
        files = _file_results(queries, found, corpus, params)
        fill_episodes(files, manifest_episode_lookup(m), index_episode_lookup(idx))
        facts = _manifest_facts(m)
        if mpath:
            facts["path"] = mpath
        report = _report("compare", files, manifest=facts,
                         settings=_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx))
        report.text_overlap = text_block
        # The offer against itself: internal repeats and the new footage a buyer would get.
        fill_repeats(report, queries, params, progress=progress, cancel=cancel)
        return report
    finally:
        if own:
            idx.close()


def self_dedupe(index: Index | Path | str | None = None, *, config: Config | None = None,
                floor_seconds: float | None = None, paths: Sequence[str | os.PathLike[str]] | None = None,
                progress: ProgressCallback | None = None, cancel: CancelCallback | None = None) -> Report:
    """Internal duplicates within the index.

    Each indexed stream is compared against every other; a stream against itself only
    counts off the trivial identity line (a file that repeats its own footage). A pair
    of duplicates is reported once, on the later-indexed file, so the matched hours are
    the hours that could be removed without losing footage.

    Args:
        index: An open :class:`Index`, an index folder, or ``None`` for the configured one.
        config: Settings; default: loaded.
        floor_seconds: Evidence floor overriding ``match.floor_seconds``.
        paths: Only files at or under these paths are checked (against the whole index).
        progress: Progress callback.
        cancel: Cancel callback.

    Returns:
        A ``self-dedupe`` :class:`Report` (query files are index paths).
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.store import Index as _Index
    from overlap_desktop.core.index.store import open_index

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    own = not isinstance(index, _Index)
    idx = open_index(index, config=config, create=False) if own else index  # type: ignore[arg-type]
    try:
        corpus = _IndexCorpus(idx)
        queries: list[QueryStream] = []
        sid_by_key = {(fid, key): sid for sid, fid, key in idx.stream_ids()}
        for f, key, fp in idx.streams(paths):
            # Only the identity codes are queried; keep memory to that.
            q_fp = StreamFingerprints(fp.times_ns, fp.quality, np.ascontiguousarray(fp.codes[:, :1]),
                                      fp.variants[:1], fp.usable, fp.indeterminate, fp.fps, fp.duration_s)
            queries.append(QueryStream(f.path, float(f.duration_s or fp.duration_s), key, q_fp,
                                       stream_id=sid_by_key.get((f.id, key), -1)))

        def pair_filter(qi: int, sid: int) -> str:
            own_sid = queries[qi].stream_id
            if sid == own_sid:
                return "diagonal"
            # Report each duplicate pair once: on the later stream (the redundant copy).
            return "keep" if sid < own_sid else "skip"

        # Batches of query streams bound the size of the query code array.
        batches: list[list[int]] = []
        n_codes = 0
        for i, q in enumerate(queries):
            if not batches or n_codes + len(q.fp) > QUERY_BATCH:
                batches.append([])
                n_codes = 0
            batches[-1].append(i)
            n_codes += len(q.fp)
        found: list[tuple[int, int, RawSegment]] = []
        for batch in batches:
            part = compare_streams([queries[j] for j in batch], corpus, params,
                                   pair_filter=lambda a, s, b=batch: pair_filter(b[a], s),
                                   progress=progress, cancel=cancel)
            found.extend((batch[a], s, seg) for a, s, seg in part)
        files = _file_results(queries, found, corpus, params)
        fill_episodes(files, index_episode_lookup(idx), index_episode_lookup(idx))
        st = idx.stats()
        facts = {"label": f"index {idx.path}", "files": st.get("files_ok"), "hours": st.get("hours"),
                 "algo_id": idx.algo_id, "prep_id": idx.prep_id}
        return _report("self-dedupe", files, manifest=facts,
                       settings=_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx))
    finally:
        if own:
            idx.close()


def compare_offers(a: Manifest | Path | str, b: Manifest | Path | str, *, config: Config | None = None,
                   floor_seconds: float | None = None, progress: ProgressCallback | None = None,
                   cancel: CancelCallback | None = None) -> Report:
    """Are two sellers offering the same footage? Offer ``a`` is matched against offer ``b``.

    Both manifests carry identity codes only (no crop ladder), so manipulations that
    need corpus variants (crops, mirror) are not detected between two offers; speed
    changes, trims, splices and re-encodes are.

    Returns:
        A ``compare-offers`` :class:`Report` whose files are ``a``'s and whose corpus
        files are ``b``'s; ``settings["other_manifest"]`` describes ``b``.

    Raises:
        ManifestError: either manifest is bad, or they use different algo/prep.
    """
    from overlap_desktop.config import load_config

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    ma, pa = _load_manifest(a)
    mb, pb = _load_manifest(b)
    _check_ids(mb, ma.algo_id, ma.prep_id, what=f"the first manifest ({pa or ma.label})", path=pb)
    corpus = _MemoryCorpus([(f.name, s.key, s.fingerprints) for f in mb.files for s in f.streams])
    try:
        queries = _manifest_queries(ma)
        found = compare_streams(queries, corpus, params, progress=progress, cancel=cancel)
        files = _file_results(queries, found, corpus, params)
        fill_episodes(files, manifest_episode_lookup(ma), manifest_episode_lookup(mb),
                      owned_word="offer B")
    finally:
        corpus.close()
    facts = _manifest_facts(ma)
    other = _manifest_facts(mb)
    if pa:
        facts["path"] = pa
    if pb:
        other["path"] = pb
    return _report("compare-offers", files, manifest=facts,
                   settings=_settings(params, algo=ma.algo_id, prep=ma.prep_id,
                                      extra={"other_manifest": other}))


def audit_sample(manifest: Manifest | Path | str, sample_dir: Path | str, *, config: Config | None = None,
                 floor_seconds: float | None = None, progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None) -> Report:
    """Does the manifest describe the sample footage you were shown?

    The sample files are fingerprinted like an index would (``index.fps`` and the
    configured variants), the manifest's streams are matched against them, and the
    answer is given per *sample* file: how much of it the manifest covers. In the
    report, ``files`` are the sample files, ``query_*`` fields of a segment are
    sample times and ``corpus_*`` fields the manifest file and its times; ``speed``
    is manifest seconds per sample second.

    Raises:
        ManifestError: the manifest is bad or made with another algo/prep.
        UsageError: the sample folder does not exist or holds no footage.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import fingerprint_file, walk_candidates
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID, variants_from_config
    from overlap_desktop.core.ingest.prep import PREP_ID

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    m, mpath = _load_manifest(manifest, expect_algo=ALGO_ID, expect_prep=PREP_ID)
    _check_ids(m, ALGO_ID, PREP_ID, what="this program", path=mpath)
    sample_dir = Path(sample_dir)
    if not sample_dir.exists():
        raise UsageError("sample folder does not exist", path=sample_dir)
    variants = tuple(variants_from_config(config))
    samples: list[tuple[str, str, StreamFingerprints]] = []
    durations: dict[str, float] = {}
    items = [(p, r) for p, r in walk_candidates([sample_dir]) if r is not None]
    if not items:
        raise UsageError("no footage found in the sample folder", path=sample_dir)
    for k, (p, _) in enumerate(items):
        check_cancel(cancel)
        for info, fp in fingerprint_file(p, config=config, variants=variants, cancel=cancel):
            samples.append((str(p), info.key, fp))
            durations[str(p)] = max(durations.get(str(p), 0.0), float(info.duration_s or fp.duration_s))
        _emit(progress, "fingerprint", k + 1, len(items), "files")
    corpus = _MemoryCorpus(samples)
    try:
        queries = _manifest_queries(m)
        found = compare_streams(queries, corpus, params, progress=progress, cancel=cancel)
    finally:
        corpus.close()
    # Turn the answer around: per sample file, which of its seconds the manifest covers.
    swapped: dict[str, list[Segment]] = {}
    for qi, sid, s in found:
        name, key, fp = samples[sid]
        q = queries[qi]
        variant = fp.variants[s.variant_idx] if 0 <= s.variant_idx < len(fp.variants) else Variant()
        c0, c1 = sorted((s.corpus_start, s.corpus_end))
        q_at = (lambda c: (c - s.offset) / s.speed) if s.speed else (lambda c: s.query_start)
        pairs = s.pairs[:, [1, 0, 2]] if s.pairs is not None and s.pairs.size else s.pairs
        swapped.setdefault(name, []).append(Segment(
            query_file=name, query_stream=key, query_start=round(c0, 3), query_end=round(c1, 3),
            corpus_file=q.file, corpus_stream=q.key, corpus_start=round(q_at(c0), 3),
            corpus_end=round(q_at(c1), 3), speed=round(1.0 / s.speed, 4) if s.speed else 0.0,
            variant=variant, frames=s.frames, mean_distance=round(s.mean_distance, 2), score=s.score,
            pairs=pairs))
    files: list[FileResult] = []
    for name, dur in durations.items():
        segs = _dedupe(swapped.get(name, []))
        above = [s for s in segs if s.query_duration >= params.floor_seconds - 1e-9]
        below = [s for s in segs if s.query_duration < params.floor_seconds - 1e-9]
        ind = [sp for n2, _, fp in samples if n2 == name for sp in fp.indeterminate]
        files.append(FileResult(
            query_file=name, duration_s=dur,
            matched_seconds=round(union_seconds([(s.query_start, s.query_end) for s in above]), 3),
            real_footage_seconds=round(union_seconds([(s.query_start, s.query_end) for s in above]), 3),
            segments=above, below_floor=below, indeterminate=ind, flags=_flags(above)))
    facts = _manifest_facts(m)
    if mpath:
        facts["path"] = mpath
    return _report("audit", files, manifest=facts,
                   settings=_settings(params, algo=m.algo_id, prep=m.prep_id,
                                      extra={"sample_dir": str(sample_dir)}))
