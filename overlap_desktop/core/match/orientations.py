"""The orientation stage: an offer's turned and flipped copies, and what their matches mean.

A rotated or flipped offer is found by turning the offered codes
(:func:`~overlap_desktop.core.ingest.orient.orient_fingerprints`), not by storing more
variants. This stage does not search: :func:`turn_queries` makes the turned pass's query
streams, the comparison's driver (:func:`~overlap_desktop.core.match.pipeline.search_orientations`)
matches them like the upright ones, and :func:`as_offered` hands their segments back under
tagged stream ids that :class:`OrientedCorpus` resolves for the report (the real stream, and
the variant the *offer* shows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from overlap_desktop.core.index.search import Corpus, CorpusView
from overlap_desktop.core.ingest.orient import (
    QUERY_ORIENTATIONS,
    Orientation,
    compose,
    inverse,
    orient_fingerprints,
)
from overlap_desktop.core.match.types import Found, QueryStream
from overlap_desktop.core.types import Progress, StreamFingerprints, Variant

__all__ = ["OrientedCorpus", "as_offered", "pass_progress", "turn_queries"]


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
            ``searched_seconds``, like :class:`~overlap_desktop.core.match.corpora.IndexCorpus`).
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


def turn_queries(queries: Sequence[QueryStream], orientations: Sequence[Orientation]) -> list[QueryStream]:
    """Every turned copy of every query stream, orientation by orientation (the turned pass).

    All turned copies go through one search, not one per turn: segments are found per
    (query, owned stream), so this finds what separate searches would.
    """
    return [replace(q, fp=orient_fingerprints(q.fp, o)) for o in orientations for q in queries]


def as_offered(turned: Sequence[Found], n_queries: int, view: OrientedCorpus) -> list[Found]:
    """Segments of the turned pass on the offered streams: query position ``k * n + i`` of
    :func:`turn_queries` is stream ``i`` turned by orientation ``k``; its stream id is tagged
    with the orientation so ``view`` reports the variant the offer shows."""
    return [Found(qi % n_queries, view.tag(sid, qi // n_queries + 1), seg) for qi, sid, seg in turned]


def pass_progress(progress: Callable[[Progress], None] | None, index: int,
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
