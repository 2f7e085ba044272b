"""The matching driver: query streams against a corpus, stage after stage.

``candidate hits`` (:mod:`.candidates`) -> per stream pair ``lines -> refined segments ->
evidence`` (:mod:`.pair`) -> :class:`~.types.Found` segments. :func:`search_orientations` runs
that chain for an offer as given and for its turned copies (:mod:`.orientations`), both passes'
codes looked up in one trip over the shards. The per-file results and the report come after
(:mod:`.results`, :mod:`.reporting`); :mod:`.compare` calls these in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from overlap_desktop.core.index.search import Corpus, HitSearch, ShardSearch
from overlap_desktop.core.ingest.orient import QUERY_ORIENTATIONS, Orientation
from overlap_desktop.core.match.candidates import find_candidates, one_trip
from overlap_desktop.core.match.orientations import OrientedCorpus, as_offered, pass_progress, turn_queries
from overlap_desktop.core.match.pair import match_streams
from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.match.stillmatch import near_pieces
from overlap_desktop.core.match.twins import twin_lines
from overlap_desktop.core.match.types import Found, QueryStream
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel

__all__ = ["compare_streams", "emit_progress", "search_orientations"]


def emit_progress(progress: ProgressCallback | None, stage: str, done: float, total: float | None,
                  unit: str, message: str | None = None) -> None:
    if progress is not None:
        progress(Progress(stage=stage, done=done, total=total, unit=unit, message=message))


def compare_streams(queries: Sequence[QueryStream], corpus: Corpus, params: MatchParams, *,
                    search: HitSearch | None = None, search_space: int = 1,
                    pair_filter: Callable[[int, int], str] | None = None,
                    near: bool = True,
                    progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> list[Found]:
    """Segments between query streams and corpus streams.

    Args:
        queries: Query streams (identity codes of usable frames are searched).
        corpus: Where to search: the streams' fingerprints and names.
        params: Matcher thresholds.
        search: How the corpus's shards are searched (default: here, :class:`ShardSearch`).
        search_space: How many times the corpus's footage the evidence is judged against
            (the turned pass of :func:`search_orientations` searches it once per turn).
        pair_filter: ``(query position, corpus stream id) -> "keep" | "skip" | "diagonal"``;
            ``"diagonal"`` drops the trivial identity line (a stream against itself).
        near: Also return, for ``"keep"`` pairs, the offered frames near-identical to an owned
            frame that no line explains (:func:`~.stillmatch.near_pieces`, "can't tell": an
            offered second is new only when nothing owned looks like it).
        progress: Progress callback.
        cancel: Cancel callback.

    Returns:
        A :class:`Found` for every verified segment (and near piece).
    """
    candidates = find_candidates(queries, search if search is not None else ShardSearch(corpus), params,
                                 progress=progress, cancel=cancel)
    if not candidates:
        return []
    searched = corpus.searched_seconds() * search_space
    out: list[Found] = []
    for k, pair in enumerate(candidates):
        check_cancel(cancel)
        mode = pair_filter(pair.query, pair.stream) if pair_filter is not None else "keep"
        if mode == "skip":
            continue
        try:
            cfp = corpus.fingerprints(pair.stream)
        except KeyError:  # removed from the index since the shard was built
            continue
        segs = match_streams(queries[pair.query].fp, cfp, pair.q_rows, pair.c_rows, pair.variants, params,
                             distances=pair.distances, exclude_diagonal=(mode == "diagonal"),
                             searched_seconds=max(searched, cfp.duration_s))
        out.extend(Found(pair.query, pair.stream, s) for s in segs)
        if near and mode == "keep":
            qfp = queries[pair.query].fp
            out.extend(Found(pair.query, pair.stream, s)
                       for s in near_pieces(qfp, cfp, pair.q_rows, pair.c_rows, pair.distances))
        if k % 16 == 0:
            emit_progress(progress, "match", k + 1, len(candidates), "pairs")
    emit_progress(progress, "match", len(candidates), len(candidates), "pairs")
    return out


def search_orientations(queries: Sequence[QueryStream], corpus: Corpus, params: MatchParams, *,
                        search: HitSearch | None = None,
                        orientations: Sequence[Orientation] = QUERY_ORIENTATIONS,
                        twins: bool = False,
                        progress: ProgressCallback | None = None,
                        cancel: CancelCallback | None = None) -> tuple[list[Found], OrientedCorpus]:
    """The offer matched as given, then all its turned copies in one more pass.

    Args:
        queries: The offered streams.
        corpus: Where to search.
        params: Matcher thresholds.
        search: How the corpus's shards are searched (default: here).
        orientations: Query-side orientations besides the identity.
        twins: Also look for owned episodes replaying the motion of each counted upright match
            (:mod:`.twins`), so the rule of several owned episodes sees them.
        progress: Progress of both passes as one bar.
        cancel: Cancel callback.

    Returns:
        ``(found, view)``: the segments of both passes, the turned pass's under tagged stream
        ids, and the :class:`OrientedCorpus` that resolves those ids for the results.
    """
    view = OrientedCorpus(corpus, orientations)
    search = search if search is not None else ShardSearch(corpus)
    extra = len(view.orientations)
    two_passes = bool(extra and queries)
    turned = turn_queries(queries, view.orientations) if two_passes else []
    # Both passes' codes are looked up in one trip over the shards (each shard mapped once);
    # each pass then matches and judges its own hits.
    upright_search, turned_search = one_trip(search, [queries, turned]) if two_passes else (search, search)
    found = compare_streams(queries, corpus, params, search=upright_search,
                            progress=pass_progress(progress, 0, two_passes), cancel=cancel)
    if twins:
        found += twin_lines(queries, found, corpus, params, search, corpus.searched_seconds(), cancel=cancel)
    if not two_passes:
        return found, view
    # Every extra pass is another chance for unrelated footage to line up, so the turned pass's
    # evidence is judged as if it had searched the footage once per turn (the upright pass
    # keeps exactly the judgement it had before orientations were searched).
    turned_found = compare_streams(turned, corpus, params, search=turned_search, search_space=extra,
                                   progress=pass_progress(progress, 1, True), cancel=cancel)
    return found + as_offered(turned_found, len(queries), view), view
