"""The evidence floor: a floor of evidence, not a cliff (issue 33, item 6).

``match.floor_seconds`` (``F``, 10 s by default) is the shortest evidence that counts at the
ordinary strength, a chance count at most ``MatchParams.max_chance``. It exists because the
chance count (:mod:`.evidence`) is an extrapolation far out in a tail, least trustworthy on
short lines. Two rules make it a floor of *evidence* (docs/architecture.md, "The floor is a
floor of evidence"):

1. **A line is one piece of evidence.** Its length is the offered time its pieces speak for
   together: each piece's span plus the unjudged time it runs into
   (:func:`~overlap_desktop.core.match.verdicts.evidence_seconds`), summed over the pieces of
   one line (same offered stream, same owned stream, the same speed and position, at most the
   verifier's 5 s gap apart): trimming
   that cut a copy at one unsupported frame (a flash, a scene change) leaves two pieces of
   one copy, not two stretches below the floor. Only their own time is summed, never the gap.
2. **Short evidence must be strong in proportion.** Evidence shorter than ``F`` counts when
   its chance count makes up for the missing time: the threshold falls by a factor of ten for
   every :data:`FLOOR_GRACE` / :data:`FLOOR_DECADES` of the floor missing (a quarter second at
   10 s), to ``max_chance * 10**-FLOOR_DECADES`` (1e-12) at ``(1 - FLOOR_GRACE) * F`` (7.5 s).
   Shorter evidence never counts, however strong: the floor still means what the user set,
   and a user who raises it gets fewer short matches. 1e-12 is a thousand times below the
   strongest coincidental line ever measured with the ridge gate off (8.5e-9, the same-rig
   suite) and no look-alike line of any suite reaches 1e-9 (bench/bench_verdicts.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from overlap_desktop.core.match.accounting import union_seconds
from overlap_desktop.core.match.verdicts import evidence_spans, owned_at
from overlap_desktop.core.types import Segment, Span

__all__ = ["FLOOR_DECADES", "FLOOR_GRACE", "LINE_SPEED_TOLERANCE", "clears_floor", "floor_chance",
           "line_evidence_seconds"]

#: Evidence may fall short of the floor by at most this share of it (7.5 s of a 10 s floor).
FLOOR_GRACE = 0.25
#: Decades of chance the whole grace band costs: at the bottom of the band a stretch needs a
#: chance count this many powers of ten below ``max_chance`` (1e-12 at the default 0.01).
FLOOR_DECADES = 10.0
#: Pieces of one line play at the same speed within this relative tolerance ...
LINE_SPEED_TOLERANCE = 0.08
#: ... and put the same offered second within this many owned seconds (times the speed).
LINE_OFFSET_S = 1.5


def floor_chance(evidence_s: float, floor_s: float, max_chance: float) -> float | None:
    """The chance count a stretch with ``evidence_s`` seconds of evidence must reach to count.

    ``max_chance`` at or above the floor; below it, ten times smaller for each
    ``FLOOR_GRACE / FLOOR_DECADES`` of the floor missing; ``None`` below
    ``(1 - FLOOR_GRACE) * floor_s`` (never counted).
    """
    if floor_s <= 0 or evidence_s >= floor_s - 1e-9:
        return max_chance
    short = (floor_s - evidence_s) / floor_s
    if short > FLOOR_GRACE + 1e-9:
        return None
    return max_chance * 10.0 ** (-FLOOR_DECADES * short / FLOOR_GRACE)


def clears_floor(s: Segment, evidence_s: float, floor_s: float, max_chance: float) -> bool:
    """Does the segment, with ``evidence_s`` seconds of evidence, count (rule 2 above)?

    At or above the floor the segment clears it whatever its chance count (weak evidence is
    judged apart); below it, only with a chance count at most :func:`floor_chance`.
    """
    need = floor_chance(evidence_s, floor_s, max_chance)
    if need is None:
        return False
    if evidence_s >= floor_s - 1e-9:
        return True
    return s.chance is not None and s.chance <= need


def _same_line(a: Segment, b: Segment, gap_s: float) -> bool:
    """Are ``a`` and ``b`` pieces of one line (same streams, speed and position, at most
    ``gap_s`` offered seconds apart)?"""
    if max(a.query_start, b.query_start) - min(a.query_end, b.query_end) > gap_s:
        return False
    if (a.query_file, a.query_stream, a.corpus_file, a.corpus_stream) != (
            b.query_file, b.query_stream, b.corpus_file, b.corpus_stream):
        return False
    if a.speed == 0 or b.speed == 0 or (a.speed > 0) != (b.speed > 0):
        return False
    if abs(abs(a.speed) / abs(b.speed) - 1.0) > LINE_SPEED_TOLERANCE:
        return False
    mid = 0.5 * (b.query_start + b.query_end)
    return abs(owned_at(a, mid) - owned_at(b, mid)) <= LINE_OFFSET_S * max(1.0, abs(a.speed))


def line_evidence_seconds(segments: Sequence[Segment], unjudged: Sequence[Span], gap_s: float) -> list[float]:
    """Seconds of evidence of each segment's line (rule 1 above), in the order given.

    Args:
        segments: Counted-strength segments of one offered file.
        unjudged: Its unjudged offered time (static, featureless, still matches).
        gap_s: Offered seconds between two pieces of one line at most (``MatchParams.gap_seconds``,
            the rejected time the verifier tolerates inside one segment).
    """
    n = len(segments)
    group = list(range(n))

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if _same_line(segments[i], segments[j], gap_s) and _same_line(segments[j], segments[i], gap_s):
                group[root(j)] = root(i)
    spans = [evidence_spans(s, unjudged) for s in segments]
    pooled: dict[int, list[tuple[float, float]]] = {}
    for i in range(n):
        pooled.setdefault(root(i), []).append(spans[i])
    return [union_seconds(pooled[root(i)]) for i in range(n)]
