"""Stage 5 of a comparison: from the found segments to per-file results (owned, below the floor,
weak, ambiguous, can't tell) and the flags that say how the offer was altered."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from overlap_desktop.core.index.search import Corpus
from overlap_desktop.core.match.accounting import real_footage_seconds, union_seconds, union_seconds_excluding
from overlap_desktop.core.match.floor import clears_floor, line_evidence_seconds
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.match.stillmatch import STILL_MATCH_BITS, near_hits, row_spans
from overlap_desktop.core.match.streamtime import combine_streams
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.match.verdicts import cant_tell_spans, settle_episodes
from overlap_desktop.core.report.model import FileResult, NearFrame, offered_pieces, thin_near_frames
from overlap_desktop.core.types import Segment, Span, StreamFingerprints, Variant

__all__ = ["SPEED_TOLERANCE", "audit_files", "file_results", "speed_change"]

#: Speed factors within this relative distance of 1 are "normal speed".
SPEED_TOLERANCE = 0.03


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


_FLAG_ORDER = ("slowdown", "speedup", "reversed", "mirror", "crop", "edge-crop", "rotation", "splice")


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
        if v.crop < 1.0 or v.aspect < 1.0:
            flags.add("crop")
        if v.edge is not None and v.edge_depth > 0:
            flags.add("edge-crop")
        if v.rotation:
            flags.add("rotation")
    # A splice is pieces following each other in offered time, not one stretch matching
    # several owned copies of the same footage.
    if len(offered_pieces(segments)) > 1:
        flags.add("splice")
    return [f for f in _FLAG_ORDER if f in flags]


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


def file_results(queries: Sequence[QueryStream], found: Sequence[tuple[int, int, RawSegment]],
                  corpus: Corpus, params: MatchParams) -> list[FileResult]:
    """Per offered file: owned, below-floor, weak and ambiguous matches, and the "can't tell"
    time they leave (core/match/verdicts.py)."""
    by_file: OrderedDict[str, list[int]] = OrderedDict()
    for i, q in enumerate(queries):
        by_file.setdefault(q.file, []).append(i)
    segs_of: dict[int, list[Segment]] = {}
    rivals_of: dict[int, list[Segment]] = {}
    still_of: dict[int, list[tuple[float, float]]] = {}
    near_of: dict[int, list[tuple[float, float]]] = {}
    frames_of: dict[int, list[NearFrame]] = {}  # per offered stream: its near-identical frame pairs
    related: dict[int, list[int]] = {}  # per offered stream: owned streams it has a line or a near hit to
    names: dict[int, tuple[str, str]] = {}
    sid_of: dict[tuple[str, str], int] = {}
    for qi, sid, s in found:
        if sid not in related.setdefault(qi, []):
            related[qi].append(sid)
        if sid not in names:
            names[sid] = corpus.describe(sid)
            sid_of[names[sid]] = sid
        if (s.near or s.unjudged) and s.pairs is not None and len(s.pairs):
            frames_of.setdefault(qi, []).extend(_near_frames(s.pairs, *names[sid]))
        if s.near:
            # Near-identical to owned frames, on no line: "can't tell", and no line's evidence.
            near_of.setdefault(qi, []).append((s.query_start, s.query_end))
            continue
        if s.unjudged:
            # A line over footage too still to place in time: "can't tell", never new.
            still_of.setdefault(qi, []).append((s.query_start, s.query_end))
            continue
        cf, ck = names[sid]
        into = rivals_of if s.rival else segs_of
        into.setdefault(qi, []).append(_to_segment(queries[qi], cf, ck, corpus.fingerprints(sid), s))

    def owned_fp(seg: Segment) -> StreamFingerprints | None:
        sid = sid_of.get((seg.corpus_file, seg.corpus_stream))
        return None if sid is None else corpus.fingerprints(sid)

    g = _Gathered(segs_of, rivals_of, still_of, near_of, related, owned_fp, frames_of, names)
    results: list[FileResult] = []
    for name, idxs in by_file.items():
        if len(idxs) == 1:
            f = _judge(name, idxs, queries[idxs[0]].file_duration, queries, g, corpus, params)
            f.streams = combine_streams(name, queries, {idxs[0]: f}).streams
        else:
            # Each camera of each episode is judged on its own, then counted in episode time.
            parts = {i: _judge(name, [i], queries[i].fp.duration_s or queries[i].file_duration, queries, g, corpus,
                               params) for i in idxs}
            f = combine_streams(name, queries, parts)
            # A splice is pieces of one stream's time, never two episodes or cameras side by side.
            flags = {x for part in parts.values() for x in part.flags}
            f.flags = [x for x in _FLAG_ORDER if x in flags]
        results.append(f)
    return results


@dataclass(slots=True)
class _Gathered:
    """The found segments of a comparison sorted per offered stream (see :func:`file_results`)."""

    segs_of: dict[int, list[Segment]]
    rivals_of: dict[int, list[Segment]]
    still_of: dict[int, list[tuple[float, float]]]
    near_of: dict[int, list[tuple[float, float]]]
    related: dict[int, list[int]]
    owned_fp: Callable[[Segment], StreamFingerprints | None]
    frames_of: dict[int, list[NearFrame]]
    names: dict[int, tuple[str, str]]


def _near_frames(pairs: np.ndarray, corpus_file: str, corpus_stream: str) -> list[NearFrame]:
    """Frame pairs ``(offered s, owned s, bits)`` of near-identical evidence as report entries (the
    near-identical ones: a frame between owned samples that changed is "can't tell" without one)."""
    return [NearFrame(round(float(q), 3), corpus_file, corpus_stream, round(float(c), 3), int(round(float(d))))
            for q, c, d in np.asarray(pairs, float)[:, :3].tolist() if d <= STILL_MATCH_BITS]


def _judge(name: str, idxs: Sequence[int], duration: float, queries: Sequence[QueryStream], g: _Gathered,
           corpus: Corpus, params: MatchParams) -> FileResult:
    """The verdicts over offered streams ``idxs`` sharing one timeline of ``duration`` seconds."""
    all_segs = [s for i in idxs for s in g.segs_of.get(i, [])]
    weak = _dedupe([s for s in all_segs if _is_weak(s, params)])
    segs = _dedupe([s for s in all_segs if not _is_weak(s, params)])
    ind: list[Span] = []
    for i in idxs:
        ind.extend(queries[i].fp.indeterminate)
    ind.sort(key=lambda sp: (sp.start_s, sp.end_s))
    # Unjudged time (marked static, or a still match) a line runs into speaks for it too.
    still = [sp for i in idxs for sp in g.still_of.get(i, [])]
    around = ind + [Span(a, b, "still") for a, b in still]
    # The floor is a floor of evidence (core/match/floor.py): a line's pieces together, and
    # short evidence counted when it is overwhelming in proportion to the time it lacks.
    ev = line_evidence_seconds(segs, around, params.gap_seconds)
    clear = [clears_floor(s, e, params.floor_seconds, params.max_chance) for s, e in zip(segs, ev, strict=True)]
    above = [s for s, ok in zip(segs, clear, strict=True) if ok]
    below = [s for s, ok in zip(segs, clear, strict=True) if not ok]
    # Several owned episodes matched about equally prove none of them copied. A match to
    # another episode that does not count itself (below the floor, weak) still shows the
    # same motion there, so it competes like a rival.
    competing = [r for i in idxs for r in g.rivals_of.get(i, [])] + below + weak
    above, ambiguous = settle_episodes(above, g.owned_fp, competing)
    settled = {id(s) for s in ambiguous}
    below = [s for s in below if id(s) not in settled]
    weak = [s for s in weak if id(s) not in settled]
    spans = [(s.query_start, s.query_end) for s in above]
    # Indeterminate time inside a matched stretch is reported, never counted.
    ind_spans = [(sp.start_s, sp.end_s) for sp in ind]
    f = FileResult(
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
        ambiguous=ambiguous,
    )
    rivals = [(r.query_start, r.query_end) for i in idxs for r in g.rivals_of.get(i, [])]
    near = [sp for i in idxs for sp in g.near_of.get(i, [])]
    f.cant_tell = cant_tell_spans(f, still, rivals, near)
    # What is left would be new: only where no frame of a related owned stream looks like it.
    frames = [n for i in idxs for n in g.frames_of.get(i, [])]
    more: list[tuple[float, float]] = []
    for i in idxs:
        spans, found = _near_related(queries[i].fp, f, g.related.get(i, []), corpus, g.names)
        more += spans
        frames += found
    if more:
        f.cant_tell = cant_tell_spans(f, still, rivals, near + more)
    f.near_frames = thin_near_frames(frames, [(sp.start_s, sp.end_s) for sp in f.cant_tell])
    return f


def _near_related(fp: StreamFingerprints, f: FileResult, sids: Sequence[int], corpus: Corpus,
                  names: dict[int, tuple[str, str]]) -> tuple[list[tuple[float, float]], list[NearFrame]]:
    """Offered seconds of one stream that would be new (judged, no verdict yet) whose frames sit
    near a frame of the owned streams ``sids`` it has lines to (:func:`~.stillmatch.near_hits`;
    they are loaded only when such seconds are left), and those frames' pairs."""
    if len(fp) == 0:
        return [], []
    t = fp.times_ns / 1e9
    # Still (unusable) samples too: their half-sample spans can reach past the still time.
    free = np.ones(len(fp), bool)
    for a, b in [(s.query_start, s.query_end) for s in f.segments] + [
            (sp.start_s, sp.end_s) for sp in [*f.indeterminate, *f.cant_tell]]:
        free &= ~((t >= a - 1e-6) & (t <= b + 1e-6))
    rows = np.flatnonzero(free)
    if rows.size == 0:
        return [], []
    near, which, when, dist = near_hits(fp, rows, (corpus.fingerprints(sid) for sid in sids))
    frames = [NearFrame(round(float(t[r]), 3), *names.get(sids[k], corpus.describe(sids[k])), round(float(c), 3),
                        int(d)) for r, k, c, d in zip(rows[near].tolist(), which[near].tolist(),
                                                       when[near].tolist(), dist[near].tolist(), strict=True)]
    return row_spans(fp, rows[near]), frames


def _is_weak(s: Segment, params: MatchParams) -> bool:
    """Weak evidence: a chance count above what is counted (see core/evidence.py)."""
    return s.chance is not None and s.chance > params.max_chance


def audit_files(samples: Sequence[tuple[str, str, StreamFingerprints]], durations: dict[str, float],
                 queries: Sequence[QueryStream], found: Sequence[tuple[int, int, RawSegment]],
                 params: MatchParams) -> list[FileResult]:
    """Per sample file, which of its seconds the manifest covers (``audit_sample``'s answer).

    The engine matched manifest streams (queries) against sample streams (corpus); the
    answer is turned around so ``query_*`` fields are sample times.
    """
    swapped: dict[str, list[Segment]] = {}
    for qi, sid, s in found:
        name, key, fp = samples[sid]
        q = queries[qi]
        variant = fp.variants[s.variant_idx] if 0 <= s.variant_idx < len(fp.variants) else Variant()
        c0, c1 = sorted((s.corpus_start, s.corpus_end))
        pairs = s.pairs[:, [1, 0, 2]] if s.pairs is not None and s.pairs.size else s.pairs
        swapped.setdefault(name, []).append(Segment(
            query_file=name, query_stream=key, query_start=round(c0, 3), query_end=round(c1, 3),
            corpus_file=q.file, corpus_stream=q.key, corpus_start=round(_query_at(s, c0), 3),
            corpus_end=round(_query_at(s, c1), 3), speed=round(1.0 / s.speed, 4) if s.speed else 0.0,
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
    return files


def _query_at(s: RawSegment, corpus_s: float) -> float:
    """The query second the segment's line puts at ``corpus_s`` (its start when flat)."""
    return (corpus_s - s.offset) / s.speed if s.speed else s.query_start
