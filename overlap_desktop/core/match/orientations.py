"""Orientation search: an offer looked up as given, then all its turned copies in one more pass.

A rotated or flipped offer is found by turning the offered codes
(:func:`~overlap_desktop.core.ingest.orient.orient_fingerprints`), not by storing more
variants. :func:`search_orientations` runs compare's search on the upright codes and then on
every turned copy at once, both passes' codes looked up in one trip over the shards; the
segments of turned passes carry tagged stream ids that :class:`OrientedCorpus` resolves for
the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from overlap_desktop.core.index.search import Corpus, CorpusView
from overlap_desktop.core.ingest.orient import (
    QUERY_ORIENTATIONS,
    Orientation,
    compose,
    inverse,
    orient_fingerprints,
)
from overlap_desktop.core.match.engine import one_trip
from overlap_desktop.core.types import Progress, StreamFingerprints, Variant

__all__ = ["OrientedCorpus", "search_orientations"]


def _as_variant(v: Variant, o: Orientation) -> Variant:
    """``v`` with its orientation replaced by ``o`` (crop and edge kept)."""
    return replace(v, mirrored=o[0], rotation=o[1])


class OrientedCorpus(CorpusView):
    """A corpus seen through query-side orientations, for reporting.

    Segments found with turned query codes carry a tagged stream id; this view maps
    it back to the real stream and reports the variant the *offer* shows: the stored
    variant's crop, and the orientation that leads from the owned picture to the offer.

    Args:
        inner: The corpus searched (anything with ``describe``, ``fingerprints`` and
            ``searched_seconds``, like :class:`~overlap_desktop.core.match.engine.IndexCorpus`).
    """

    #: Stream ids at or above this are tagged (``tag * _TAG + real id``).
    _TAG = 1 << 40

    def __init__(self, inner: Corpus, orientations: Sequence[Orientation] = QUERY_ORIENTATIONS) -> None:
        super().__init__(inner)
        self.orientations = tuple(orientations)
        self._cache: dict[int, StreamFingerprints] = {}

    def tag(self, stream_id: int, k: int) -> int:
        """The id under which pass ``k`` (1-based position in ``orientations``) reports a stream."""
        return k * self._TAG + int(stream_id)

    def _split(self, sid: int) -> tuple[int, int]:
        return sid // self._TAG, sid % self._TAG

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.inner.describe(self._split(stream_id)[1])

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        k, sid = self._split(stream_id)
        fp: StreamFingerprints = self.inner.fingerprints(sid)
        if k == 0:
            return fp
        if stream_id not in self._cache:
            # The query was turned by q; it then matched the stored variant v: the offer is
            # the owned picture turned by q^-1 . v.
            q_inv = inverse(self.orientations[k - 1])
            variants = tuple(_as_variant(v, compose(q_inv, (v.mirrored, v.rotation % 360)))
                             for v in fp.variants)
            self._cache[stream_id] = replace(fp, variants=variants)
        return self._cache[stream_id]


class _PassCorpus(CorpusView):
    """The corpus for one query-orientation pass: the same shards, a larger search space.

    Every extra pass is another chance for unrelated footage to line up, so its evidence
    is judged as if it had searched the footage once per extra pass (the identity pass
    keeps exactly the judgement it had before orientations were searched).
    """

    def __init__(self, inner: Corpus, factor: int) -> None:
        super().__init__(inner)
        self.factor = factor
        # The matcher still finds a fanned-out search by this method (core/match/engine.py).
        fan_out = getattr(inner, "collect_hits", None)
        if fan_out is not None:
            self.collect_hits = fan_out

    def searched_seconds(self) -> float:
        return float(self.inner.searched_seconds()) * self.factor


def search_orientations(search: Callable[..., list[tuple[int, int, Any]]], queries: Sequence[Any],
                        corpus: Any, params: Any, *, orientations: Sequence[Orientation] = QUERY_ORIENTATIONS,
                        **kw: Any) -> tuple[list[tuple[int, int, Any]], OrientedCorpus]:
    """Run ``search`` on the offered codes as given, then on all their turned copies at once.

    Args:
        search: compare's engine, ``search(queries, corpus, params, **kw)`` returning
            ``(query position, corpus stream id, segment)`` triples.
        queries: Query streams (objects with an ``fp`` field holding their fingerprints).
        corpus: The corpus to search.
        params: Matcher parameters, passed through.
        orientations: Query-side orientations besides the identity.
        **kw: Passed to ``search`` (progress, cancel...).

    Returns:
        ``(found, view)``: all triples, the ones of turned passes with tagged stream ids,
        and the :class:`OrientedCorpus` that resolves those ids for reporting.
    """
    view = OrientedCorpus(corpus, orientations)
    extra = len(view.orientations)
    two_passes = bool(extra and queries)
    progress = kw.pop("progress", None)
    if not two_passes:
        return list(search(queries, corpus, params, progress=progress, **kw)), view
    # All turned copies go through one search, not one per turn. Segments are found per
    # (query, owned stream), so this finds what separate searches would.
    n = len(queries)
    turned = [replace(q, fp=orient_fingerprints(q.fp, o)) for o in view.orientations for q in queries]
    # Both passes' codes are looked up in one trip over the shards (each shard mapped once);
    # each pass then matches and judges its own hits as before (core/match/engine.py).
    upright, turned_corpus = one_trip(corpus, [queries, turned])
    found = list(search(queries, upright, params, progress=_pass_progress(progress, 0, two_passes), **kw))
    for qi, sid, seg in search(turned, _PassCorpus(turned_corpus, extra), params,
                               progress=_pass_progress(progress, 1, two_passes), **kw):
        found.append((qi % n, view.tag(sid, qi // n + 1), seg))
    return found, view


def _pass_progress(progress: Callable[[Progress], None] | None, index: int,
                   two_passes: bool) -> Callable[[Progress], None] | None:
    """Progress of one of the two passes as part of the whole: a bar never runs twice.

    Counted stages of the first pass fill the first half (``done`` of ``2 * total``), those of
    the turned pass the second half, which also says what it is searching.
    """
    if progress is None or not two_passes:
        return progress

    def report(p: Progress) -> None:
        if p.total:
            p = replace(p, done=p.done + index * p.total, total=2 * p.total)
        if index and not p.message:
            p = replace(p, message="Searching turned and flipped copies of the offer")
        progress(p)

    return report
