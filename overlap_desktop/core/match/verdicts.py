"""The verdict of every offered second: owned, new, or "can't tell".

The rule (docs/architecture.md, "Evidence rules"): offered time is **owned** only with
evidence that this footage, not another moment or another episode of the same rig, was
copied; it is **new** only where it has been shown not to be owned; everything else is
**can't tell**. So offered time whose best evidence is

- a match shorter than the evidence floor,
- a weak match (its chance of being a coincidence is above the counting threshold),
- near-identical frames on a line that verifies, too still or too few to place in time
  (the owned side marked static, or the offered side still but not marked),
- a match to several owned episodes about equally (a scripted repeat, the rig's home pose), or
- offered frames near-identical to owned frames that no line explains (a dim, near-static
  room looks the same at every moment),

is "can't tell", never new. This module settles the last case (:func:`settle_episodes`),
turns the uncounted evidence of a file into "can't tell" spans (:func:`cant_tell_spans`),
and checks that a report keeps the rule (:func:`verdict_problems`, asserted by every
suite).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.accounting import union_seconds, union_seconds_excluding
from overlap_desktop.core.report.model import FileResult, Report, offered_pieces, repeats_checked
from overlap_desktop.core.types import Segment, Span, StreamFingerprints

__all__ = [
    "AMBIGUITY_MARGIN_BITS",
    "AMBIGUITY_RATIO",
    "REASON_AMBIGUOUS",
    "REASON_BELOW_FLOOR",
    "REASON_SAME_MOTION",
    "REASON_STILL",
    "REASON_WEAK",
    "SAME_FOOTAGE_BITS",
    "cant_tell_spans",
    "evidence_seconds",
    "evidence_spans",
    "owned_at",
    "settle_episodes",
    "verdict_problems",
]

#: One owned episode is *clearly closer* than the next when its mean distance over the
#: shared offered stretch is at least this many bits smaller ...
AMBIGUITY_MARGIN_BITS = 4.0
#: ... and at most this share of the next one's. Measured on rendered rigs (issue 33): a
#: true copy sits 4.7 bits from its source and 9.9 from its scripted twin (0.47); a new
#: scripted repeat 9.5-16.5 bits from every owned episode.
AMBIGUITY_RATIO = 0.6
#: Two owned streams whose frames along the two lines are this close on average are one
#: footage held twice (the library's own duplicates): a match to both proves ownership.
#: Re-encodes of one recording sit 0-6 bits apart; scripted twins 9.5 bits and more.
SAME_FOOTAGE_BITS = 8.0
#: Samples compared along two lines for :data:`SAME_FOOTAGE_BITS`.
_SAME_FOOTAGE_SAMPLES = 32

REASON_BELOW_FLOOR = "below the evidence floor"
REASON_WEAK = "weak evidence"
REASON_AMBIGUOUS = "the same motion as several owned episodes"
REASON_STILL = "near-identical to owned footage, too still or too short to place in time"
#: A verified line to an owned stream whose frames are distinctly closer than their background
#: but not one moment (an evidence-model "rival"): evidence of ownership, not proof of it.
REASON_SAME_MOTION = "the same motion as owned footage, not shown to be the same moment"

#: Seconds of slack in :func:`verdict_problems` (reports round times to milliseconds).
_SLACK = 0.05


def owned_at(s: Segment, t: float) -> float:
    """The owned second the segment's line puts at offered second ``t``."""
    if s.query_end <= s.query_start:
        return s.corpus_start
    return s.corpus_start + (t - s.query_start) * (s.corpus_end - s.corpus_start) / (s.query_end - s.query_start)


def _mean_distance_over(s: Segment, a: float, b: float) -> float:
    """Mean distance of the segment's matched frames inside offered ``[a, b]`` (its mean if none)."""
    p = s.pairs
    if p is not None and len(p):
        arr = np.asarray(p, float)
        inside = (arr[:, 0] >= a - 1e-6) & (arr[:, 0] <= b + 1e-6) & np.isfinite(arr[:, 2])
        if inside.any():
            return float(arr[inside, 2].mean())
    return float(s.mean_distance)


def _rows_at(fp: StreamFingerprints, seconds: np.ndarray) -> np.ndarray:
    t = fp.times_ns / 1e9
    if t.size == 0:
        return np.zeros(0, np.int64)
    i = np.clip(np.searchsorted(t, seconds), 1, max(1, t.size - 1))
    left = np.clip(i - 1, 0, t.size - 1)
    right = np.clip(i, 0, t.size - 1)
    return np.where(np.abs(t[left] - seconds) <= np.abs(t[right] - seconds), left, right).astype(np.int64)


def _same_footage(a: Segment, fa: StreamFingerprints, b: Segment, fb: StreamFingerprints,
                  t0: float, t1: float) -> bool:
    """Do two owned streams show the same footage along the two lines over offered ``[t0, t1]``?"""
    ts = np.linspace(t0, t1, _SAME_FOOTAGE_SAMPLES)
    ra = _rows_at(fa, np.array([owned_at(a, t) for t in ts]))
    rb = _rows_at(fb, np.array([owned_at(b, t) for t in ts]))
    if ra.size == 0 or rb.size == 0:
        return False
    ok = fa.usable[ra] & fb.usable[rb]
    if not ok.any():
        return False
    d = popcount_xor(fa.codes[ra[ok], 0], fb.codes[rb[ok], 0])
    return float(np.mean(d)) <= SAME_FOOTAGE_BITS


def evidence_seconds(s: Segment, indeterminate: Sequence[Span], gap: float = 1.5) -> float:
    """How much offered time a segment's evidence speaks for, measured against the floor.

    Its own span, plus unjudged (static, featureless) offered time it runs into at either
    end: a line cannot be seen through a still stretch, and the still stretch cannot
    contradict it, so a 15 s copy of which 9 s show an empty room is one piece of evidence of
    15 s, not a 6 s piece below the floor (issue 33: the floor is a floor of evidence, not a
    cliff). The unjudged time itself is still never counted as owned. ``gap``: seconds between
    the two that do not break the run (a trimmed piece ends half a sample after its last
    judged frame; a still stretch starts where a sample first finds no background).
    """
    a, b = evidence_spans(s, indeterminate, gap)
    return b - a


def evidence_spans(s: Segment, indeterminate: Sequence[Span], gap: float = 1.5) -> tuple[float, float]:
    """The offered ``(start, end)`` a segment's evidence speaks for (see :func:`evidence_seconds`)."""
    a, b = s.query_start, s.query_end
    grown = True
    while grown:
        grown = False
        for sp in indeterminate:
            if sp.end_s >= a - gap and sp.start_s < a:
                a, grown = sp.start_s, True
            if sp.start_s <= b + gap and sp.end_s > b:
                b, grown = sp.end_s, True
    return a, b


def settle_episodes(segments: Sequence[Segment], owned_fp: Callable[[Segment], StreamFingerprints | None],
                    rivals: Sequence[Segment] = ()) -> tuple[list[Segment], list[Segment]]:
    """Split counted segments into (owned, ambiguous) by the rule of several owned episodes.

    An offered stretch (:func:`~overlap_desktop.core.report.model.offered_pieces`) that
    matches several owned streams is owned only when one of them is clearly closer over
    the shared stretch (:data:`AMBIGUITY_MARGIN_BITS`, :data:`AMBIGUITY_RATIO`); then only
    that stream's segments are kept (the stretch is not attributed to its twins). When the
    owned streams are one footage held twice (:data:`SAME_FOOTAGE_BITS`), every match is
    kept. Otherwise no one of them is proven copied: all the piece's segments are ambiguous.

    Args:
        segments: Counted segments of one offered file.
        owned_fp: Fingerprints of a segment's owned stream (``None`` when unavailable: then
            the owned streams are taken as distinct footage).
        rivals: Lines to other owned streams that are not evidence themselves but show the
            same motion (:mod:`.evidence`, "rival"); one covering most of a piece at a similar
            speed competes with it like a counted match.
    """
    owned: list[Segment] = []
    ambiguous: list[Segment] = []
    # Per offered stream: two cameras of one offered recording are two stretches, not rivals.
    streams: dict[str, list[Segment]] = {}
    for s in segments:
        streams.setdefault(s.query_stream, []).append(s)
    pieces = [p for segs in streams.values() for p in offered_pieces(segs)]
    for piece in pieces:
        by_stream: dict[tuple[str, str], list[Segment]] = {}
        for s in piece:
            by_stream.setdefault((s.corpus_file, s.corpus_stream), []).append(s)
        p0, p1 = min(s.query_start for s in piece), max(s.query_end for s in piece)
        speed = piece[0].speed
        for r in rivals:
            if r.query_stream != piece[0].query_stream:
                continue
            cover = min(p1, r.query_end) - max(p0, r.query_start)
            same_speed = speed * r.speed > 0 and abs(abs(r.speed) / max(abs(speed), 1e-6) - 1.0) <= 0.1
            key = (r.corpus_file, r.corpus_stream)
            if key not in by_stream and same_speed and cover >= 0.5 * (p1 - p0):
                by_stream[key] = [r]
        if len(by_stream) < 2:
            owned.extend(piece)
            continue
        t0 = max(min(s.query_start for s in v) for v in by_stream.values())
        t1 = min(max(s.query_end for s in v) for v in by_stream.values())
        if t1 <= t0:
            t0, t1 = min(s.query_start for s in piece), max(s.query_end for s in piece)
        scored = []
        for key, segs in by_stream.items():
            best = min(segs, key=lambda s: _mean_distance_over(s, t0, t1))
            scored.append((_mean_distance_over(best, t0, t1), key, best))
        scored.sort(key=lambda x: x[0])
        (d0, k0, s0), (d1, _, s1) = scored[0], scored[1]
        counted = {(s.corpus_file, s.corpus_stream) for s in piece}
        if k0 in counted and d1 - d0 >= AMBIGUITY_MARGIN_BITS and d0 <= AMBIGUITY_RATIO * d1:
            owned.extend(by_stream[k0])
            continue
        f0, f1 = owned_fp(s0), owned_fp(s1)
        if k0 in counted and f0 is not None and f1 is not None and _same_footage(s0, f0, s1, f1, t0, t1):
            owned.extend(s for s in piece if (s.corpus_file, s.corpus_stream) in counted)
            continue
        ambiguous.extend(s for segs in by_stream.values() for s in segs)
    return sorted(owned, key=_order), sorted(ambiguous, key=_order)


def _order(s: Segment) -> tuple[float, str, float]:
    return s.query_start, s.corpus_file, s.corpus_start


def _minus(a: float, b: float, taken: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """``[a, b]`` without the ``taken`` spans, as disjoint pieces."""
    out = [(a, b)]
    for x, y in sorted(taken):
        nxt = []
        for p, q in out:
            if y <= p or x >= q:
                nxt.append((p, q))
                continue
            if x > p:
                nxt.append((p, x))
            if y < q:
                nxt.append((y, q))
        out = nxt
    return [(p, q) for p, q in out if q - p > 1e-6]


def cant_tell_spans(f: FileResult, still: Sequence[tuple[float, float]] = (),
                    same_motion: Sequence[tuple[float, float]] = (),
                    near: Sequence[tuple[float, float]] = ()) -> list[Span]:
    """Offered time of ``f`` with uncounted evidence, minus owned and indeterminate time.

    Reasons, in order of precedence: ambiguous among episodes, below the floor, weak,
    matching owned footage too still to place in time (``still``: offered spans), the same
    motion as owned footage (``same_motion``: offered spans of rival lines), and last offered
    frames near-identical to owned frames on no line (``near``: reported with the still
    reason, since one frame is too short to place in time).
    """
    dur = max(0.0, f.duration_s)
    taken = [(s.query_start, s.query_end) for s in f.segments]
    taken += [(sp.start_s, sp.end_s) for sp in f.indeterminate]
    out: list[Span] = []
    groups = ((REASON_AMBIGUOUS, [(s.query_start, s.query_end) for s in f.ambiguous]),
              (REASON_BELOW_FLOOR, [(s.query_start, s.query_end) for s in f.below_floor]),
              (REASON_WEAK, [(s.query_start, s.query_end) for s in f.weak]),
              (REASON_STILL, list(still)), (REASON_SAME_MOTION, list(same_motion)), (REASON_STILL, list(near)))
    for reason, spans in groups:
        for a, b in sorted(spans):
            a, b = max(0.0, min(a, b)), min(dur, max(a, b))
            for p, q in _minus(a, b, taken):
                out.append(Span(round(p, 3), round(q, 3), reason))
                taken.append((p, q))
    out.sort(key=lambda sp: (sp.start_s, sp.end_s))
    return out


def verdict_problems(report: Report) -> list[str]:
    """Where a report breaks the verdict rule (empty when it keeps it).

    Checks, per file: no "can't tell" time is also owned or indeterminate; every second of
    uncounted evidence (below floor, weak, ambiguous) is owned, indeterminate or "can't
    tell", never new; owned, indeterminate, can't-tell, repeated and new seconds add up to
    the file's duration (when the offer was checked for repeats); and the report's totals
    are the files' sums.
    """
    problems: list[str] = []
    checked = repeats_checked(report)
    for f in report.files:
        dur = max(0.0, f.duration_s)
        owned = f.file_spans(f.segments)
        ind = [(sp.start_s, sp.end_s) for sp in f.indeterminate]
        ct = [(sp.start_s, sp.end_s) for sp in f.cant_tell]
        name = f.query_file
        overlap = union_seconds(ct) - union_seconds_excluding(ct, owned + ind)
        if overlap > _SLACK:
            problems.append(f"{name}: {overlap:.2f} s of can't-tell time is also owned or not judged")
        evidence = [(max(0.0, a), min(dur, b)) for a, b in f.file_spans([*f.below_floor, *f.weak, *f.ambiguous])
                    if b > a]
        left = union_seconds_excluding(evidence, owned + ind + ct) if evidence else 0.0
        if left > _SLACK:
            problems.append(f"{name}: {left:.2f} s with evidence of ownership is neither owned nor can't tell")
        counted = {(s.query_start, s.query_end, s.corpus_file, s.corpus_start) for s in f.segments}
        if any((s.query_start, s.query_end, s.corpus_file, s.corpus_start) in counted for s in f.ambiguous):
            problems.append(f"{name}: an ambiguous match is also counted owned")
        if checked:
            parts = union_seconds([(max(0.0, a), min(dur, b)) for a, b in owned + ind if b > a])
            total = parts + f.cant_tell_seconds + f.repeated_seconds + f.new_seconds
            if abs(total - dur) > _SLACK + 0.002 * dur:
                problems.append(f"{name}: owned, not judged, can't tell, repeated and new add up to "
                                f"{total:.2f} s of {dur:.2f} s")
            judged_free = dur - union_seconds([(max(0.0, a), min(dur, b)) for a, b in owned + ind + ct if b > a])
            if f.new_seconds > judged_free + _SLACK:
                problems.append(f"{name}: {f.new_seconds:.2f} s new, but only {judged_free:.2f} s were shown unowned")
    sums = {"new_seconds": sum(f.new_seconds for f in report.files),
            "cant_tell_seconds": sum(f.cant_tell_seconds for f in report.files)}
    for key, value in sums.items():
        if abs(getattr(report, key) - value) > _SLACK * max(1, len(report.files)):
            problems.append(f"report {key} {getattr(report, key):.2f} is not the files' sum {value:.2f}")
    return problems
