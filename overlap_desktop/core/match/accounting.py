"""Accounting of matched time: unions of spans, the evidence floor, owned seconds."""

from __future__ import annotations

from collections.abc import Sequence

from overlap_desktop.core.match.segments import RawSegment

__all__ = ["real_footage_seconds", "split_floor", "union_seconds", "union_seconds_excluding"]


def split_floor(segments: Sequence[RawSegment], floor_seconds: float) -> tuple[list[RawSegment], list[RawSegment]]:
    """Split segments into (reported, below floor) by query duration.

    A segment of exactly the floor is reported. Time is query (offered) time.
    """
    above = [s for s in segments if s.query_duration >= floor_seconds - 1e-9]
    below = [s for s in segments if s.query_duration < floor_seconds - 1e-9]
    return above, below


def union_seconds(spans: Sequence[tuple[float, float]]) -> float:
    """Total length of the union of ``(start, end)`` spans."""
    total = 0.0
    cur: tuple[float, float] | None = None
    for s, e in sorted((min(a, b), max(a, b)) for a, b in spans):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = (s, e)
        else:
            cur = (cur[0], max(cur[1], e))
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def _covered(t: float, spans: Sequence[tuple[float, float]]) -> bool:
    return any(min(a, b) <= t <= max(a, b) for a, b in spans)


def union_seconds_excluding(spans: Sequence[tuple[float, float]],
                            exclude: Sequence[tuple[float, float]] = ()) -> float:
    """Length of the union of ``spans`` minus anything inside ``exclude``.

    Used so indeterminate time (static, featureless) inside a matched stretch is
    never counted as matched.
    """
    if not exclude:
        return union_seconds(spans)
    cuts = sorted({x for s, e in list(spans) + list(exclude) for x in (s, e)})
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        mid = 0.5 * (a + b)
        if _covered(mid, spans) and not _covered(mid, exclude):
            total += b - a
    return total


def real_footage_seconds(spans: Sequence[tuple[float, float, float]],
                         exclude: Sequence[tuple[float, float]] = ()) -> float:
    """Owned seconds behind overlapping query spans ``(start, end, |speed|)``.

    Where segments overlap on the query axis, the overlapping stretch counts once,
    at the largest |speed| among them (the most owned footage it can stand for).
    Query time inside ``exclude`` (indeterminate) is not counted.
    """
    if not spans:
        return 0.0
    cuts = sorted({x for s, e, _ in spans for x in (s, e)} | {x for s, e in exclude for x in (s, e)})
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        mid = 0.5 * (a + b)
        if exclude and _covered(mid, exclude):
            continue
        sp = [abs(v) for s, e, v in spans if s <= mid <= e]
        if sp:
            total += (b - a) * max(sp)
    return total
