"""Episode time: a file's streams judged one by one, then counted the way labs buy footage.

Robot datasets hold several episodes per file (robomimic demos, RLDS records, zarr episodes),
each seen by several cameras. Vendors quote *episode time*: the sum over episodes, each counted
once however many cameras saw it. So the streams of one episode share a timeline and the
streams of different episodes never do; the file's time lays its episodes back to back.

Each stream is judged on its own (its own owned, "can't tell" and unjudged time, so a still
camera's static time never cancels another camera's match); a moment of an episode then counts

- owned when the footage of any of its cameras there is owned;
- not judged when a counted line of one camera runs through that camera's static time there
  (as for a file of one stream) and no camera's footage there is owned;
- "can't tell" when none is owned and one camera's is "can't tell";
- new when every camera judged there is shown new;
- not judged when no camera could be judged there.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from overlap_desktop.core.match.accounting import real_footage_seconds, union_seconds
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.report.model import FileResult, StreamResult, thin_near_frames
from overlap_desktop.core.types import Span

__all__ = ["combine_streams", "episode_groups"]

_OWNED, _CANT_TELL, _NEW, _UNJUDGED = 0, 1, 2, 3


def episode_groups(queries: Sequence[QueryStream], idxs: Sequence[int]) -> list[list[int]]:
    """The streams ``idxs`` of one file grouped by episode, in the order they first appear.

    Streams without an episode (video tracks, recording topics, old manifests) share one
    timeline, as before.
    """
    groups: dict[int | None, list[int]] = {}
    for i in idxs:
        groups.setdefault(queries[i].episode, []).append(i)
    return list(groups.values())


@dataclass(slots=True)
class _Spans:
    """Sorted, merged spans with their reasons, asked "what covers t?" by bisection."""

    starts: list[float]
    ends: list[float]
    reasons: list[str]

    @classmethod
    def of(cls, spans: Sequence[tuple[float, float, str]]) -> _Spans:
        merged: list[list[object]] = []
        for a, b, r in sorted((min(a, b), max(a, b), r) for a, b, r in spans):
            if b <= a:
                continue
            if merged and a <= float(merged[-1][1]):  # type: ignore[arg-type]
                merged[-1][1] = max(float(merged[-1][1]), b)  # type: ignore[arg-type]
            else:
                merged.append([a, b, r])
        return cls([float(m[0]) for m in merged], [float(m[1]) for m in merged],  # type: ignore[arg-type]
                   [str(m[2]) for m in merged])

    def at(self, t: float) -> str | None:
        k = bisect.bisect_right(self.starts, t) - 1
        return self.reasons[k] if k >= 0 and t < self.ends[k] else None


def _classify(parts: Sequence[FileResult], length: float) -> list[tuple[float, float, int, str]]:
    """The moments of one episode ``[0, length)`` as ``(start, end, class, reason)`` runs."""
    owned, cant, unjudged = [], [], []
    cuts = {0.0, length}
    for p in parts:
        ind = [(sp.start_s, sp.end_s, sp.reason) for sp in p.indeterminate]
        owned.append(_Spans.of([(s.query_start, s.query_end, "") for s in p.segments]))
        cant.append(_Spans.of([(sp.start_s, sp.end_s, sp.reason) for sp in p.cant_tell]))
        # A stream has no footage after its end: there it is as good as not judged.
        unjudged.append(_Spans.of([*ind, (p.duration_s, max(length, p.duration_s) + 1.0, "")]))
        for sp in (owned[-1], cant[-1], unjudged[-1]):
            cuts.update(x for x in sp.starts + sp.ends if 0.0 < x < length)
    edges = sorted(cuts)
    runs: list[tuple[float, float, int, str]] = []
    for a, b in zip(edges[:-1], edges[1:], strict=False):
        mid = 0.5 * (a + b)
        judged = [unjudged[i].at(mid) is None for i in range(len(parts))]
        kind, reason = _UNJUDGED, next((r for u in unjudged if (r := u.at(mid))), "")
        lines = [owned[i].at(mid) is not None for i in range(len(parts))]
        if any(j and o for j, o in zip(judged, lines, strict=True)):
            kind, reason = _OWNED, ""
        elif any(lines):
            # A counted line runs through its camera's static time: not judged, as in one stream.
            kind, reason = _UNJUDGED, next(u.at(mid) or "" for u, o in zip(unjudged, lines, strict=True) if o)
        elif (r := next((c.at(mid) for c in cant if c.at(mid) is not None), None)) is not None:
            kind, reason = _CANT_TELL, r
        elif any(judged):
            kind, reason = _NEW, ""
        if runs and runs[-1][2] == kind and runs[-1][3] == reason and abs(runs[-1][1] - a) < 1e-9:
            runs[-1] = (runs[-1][0], b, kind, reason)
        else:
            runs.append((a, b, kind, reason))
    return runs


def combine_streams(name: str, queries: Sequence[QueryStream], parts: dict[int, FileResult]) -> FileResult:
    """One file's result from its streams' own results (``parts``: query position -> result).

    Segments keep their stream times; the file's ``indeterminate`` and ``cant_tell`` spans are
    in the file's time (episodes back to back, each stream's ``offset_s``).
    """
    idxs = list(parts)
    f = FileResult(query_file=name, duration_s=0.0)
    offset = 0.0
    for group in episode_groups(queries, idxs):
        length = max(parts[i].duration_s for i in group)
        runs = _classify([parts[i] for i in group], length)
        owned = sum(b - a for a, b, k, _ in runs if k == _OWNED)
        ind = [(a, b) for a, b, k, _ in runs if k == _UNJUDGED]
        f.matched_seconds += owned
        segs = [s for i in group for s in parts[i].segments]
        f.real_footage_seconds += real_footage_seconds([(s.query_start, s.query_end, s.speed) for s in segs], ind)
        f.indeterminate += [Span(round(a + offset, 3), round(b + offset, 3), r) for a, b, k, r in runs
                            if k == _UNJUDGED]
        f.cant_tell += [Span(round(a + offset, 3), round(b + offset, 3), r) for a, b, k, r in runs
                        if k == _CANT_TELL]
        for i in group:
            p, q = parts[i], queries[i]
            f.segments += p.segments
            f.below_floor += p.below_floor
            f.weak += p.weak
            f.ambiguous += p.ambiguous
            f.near_frames += [replace(n, query_s=round(n.query_s + offset, 3)) for n in p.near_frames]
            unjudged = [(sp.start_s, sp.end_s) for sp in [*p.indeterminate, *p.cant_tell]]
            ind_s = union_seconds([(sp.start_s, sp.end_s) for sp in p.indeterminate])
            f.streams.append(StreamResult(
                stream=q.key, duration_s=round(p.duration_s, 3), owned_seconds=round(p.matched_seconds, 3),
                cant_tell_seconds=round(p.cant_tell_seconds, 3), indeterminate_seconds=round(ind_s, 3),
                new_seconds=round(max(0.0, p.duration_s - p.matched_seconds - p.cant_tell_seconds - ind_s), 3),
                episode=q.episode, camera=q.key.rsplit("/", 1)[-1], offset_s=round(offset, 3),
                unjudged=unjudged))
        offset += length
    f.duration_s = round(offset, 3)
    f.near_frames = thin_near_frames(f.near_frames, [(sp.start_s, sp.end_s) for sp in f.cant_tell])
    f.matched_seconds = round(f.matched_seconds, 3)
    f.real_footage_seconds = round(f.real_footage_seconds, 3)
    offsets = {s.stream: s.offset_s for s in f.streams}
    f.segments.sort(key=lambda s: (offsets.get(s.query_stream, 0.0) + s.query_start, s.corpus_file, s.corpus_start))
    return f
