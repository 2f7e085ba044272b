"""Twin discovery: owned episodes replaying the motion of a counted match.

The rule of several owned episodes (:func:`~.verdicts.settle_episodes`) can only withhold a
match it can see: when an offered stretch lines up with owned episode X, another owned episode
Y of the same rig replaying the same motion must come back as a line too, or the stretch is
counted as a copy of X although it is as close to Y. The offer's own search finds such a line
only when the offer's once-a-second samples happen to land near Y's search seeds: on the
rendered robot rig a scripted repeat trimmed by half a second was counted a copy of one owned
twin, and the same repeat untrimmed was not (bench/RESULTS.md, "Staggered seeds").

So the owned side is asked directly: X's own samples over the matched stretch (up to
:data:`TWIN_CODES` of them spread over it, at every phase of the index's grid, so some meet Y's
seeds wherever they lie) are searched in the library; each other owned stream they hit is a
candidate twin, and the offered stream is matched against it along the composed line (offered
-> X -> Y) by the ordinary pair matcher and evidence model. A line it finds that chance would
not even list is still the same motion there: it comes back as a *rival* (competes, never
counts, its time can't tell). This only ever adds lines; a stretch becomes owned by a twin only
through a line that is evidence on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from overlap_desktop.core.index.search import Corpus, HitSearch
from overlap_desktop.core.match.pair import match_streams
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.match.types import Found, QueryStream
from overlap_desktop.core.types import CancelCallback, check_cancel

__all__ = ["TWINS_PER_SEGMENT", "TWIN_CODES", "TWIN_CODES_MIN", "TWIN_MATCHES_MIN", "TWIN_SEGMENTS", "twin_lines"]

#: Owned samples searched per counted segment at most (evenly spaced over its stretch, so their
#: phases vary and some fall near a twin's seeds).
TWIN_CODES = 24
#: Counted segments whose twins are looked for at most, longest first, and at most half as many
#: owned samples searched as the offer's own codes (at least :data:`TWIN_CODES_MIN`): on an offer
#: that is mostly owned the lookup costs at most half the upright search.
TWIN_SEGMENTS = 512
TWIN_CODES_MIN = 1024
#: Candidate twins matched per counted segment at most, those the most owned samples hit first: a
#: rig with hundreds of episodes replaying one motion needs only a few of them to show that the
#: offered stretch is not closer to one (the rule compares the two closest).
TWINS_PER_SEGMENT = 8
#: Candidate twins matched in all at most this many, or as many as the stream pairs the offer's own
#: search matched if that is more: the lookup at most doubles the matching work.
TWIN_MATCHES_MIN = 64
#: Fewest composed seeds for a candidate twin to be matched at all.
_MIN_SEEDS = 2


def _counted(s: RawSegment, params: MatchParams) -> bool:
    return not (s.near or s.unjudged or s.rival or s.weak) and s.chance is not None \
        and s.chance <= params.max_chance and s.corpus_end != s.corpus_start and s.query_end > s.query_start


def twin_lines(queries: Sequence[QueryStream], found: Sequence[Found], corpus: Corpus, params: MatchParams,
               search: HitSearch, searched_seconds: float, *,
               cancel: CancelCallback | None = None) -> list[Found]:
    """Lines from offered streams to owned streams that replay the motion of a counted match.

    Args:
        queries: The offered streams ``found`` refers to.
        found: Segments of the offer as searched (upright pass: real corpus stream ids).
        corpus: The library.
        params: Matcher thresholds.
        search: How the library's shards are searched.
        searched_seconds: The footage the offer was searched against (the evidence bar).
        cancel: Polled between candidate twins.

    Returns:
        New :class:`Found` lines to owned streams the offered stream had no line to over that
        stretch; lines chance would not list come back as rivals (``chance`` ``None``).
    """
    work = sorted((f for f in found if _counted(f.segment, params)),
                  key=lambda f: f.segment.query_start - f.segment.query_end)[:TWIN_SEGMENTS]
    if not work:
        return []
    known: dict[tuple[int, int], list[RawSegment]] = {}
    for f in found:
        known.setdefault((f.query, f.stream), []).append(f.segment)
    budget = max(TWIN_CODES_MIN, sum(int(q.fp.usable.sum()) for q in queries) // 2)
    codes, owner, x_times = [], [], []
    for k, f in enumerate(work):
        if budget <= 0:
            break
        s = f.segment
        xfp = corpus.fingerprints(f.stream)
        t = xfp.times_ns / 1e9
        lo, hi = sorted((s.corpus_start, s.corpus_end))
        rows = np.flatnonzero((t >= lo) & (t <= hi) & xfp.usable)
        if rows.size == 0:
            continue
        take = min(TWIN_CODES, rows.size, budget)
        rows = rows[np.unique(np.linspace(0, rows.size - 1, take).round().astype(np.int64))]
        budget -= rows.size
        codes.append(xfp.codes[rows, 0])
        owner.append(np.full(rows.size, k, np.int64))
        x_times.append(t[rows])  # kept, so X is read once (a long list can outgrow the corpus's cache)
    if not codes:
        return []
    hits = search.hits(np.concatenate(codes), max_distance=params.seed_distance, probe=params.probe,
                       progress=None, cancel=cancel)
    if len(hits) == 0:
        return []
    seg_of = np.concatenate(owner)[hits.q_idx]
    x_of = np.concatenate(x_times)[hits.q_idx]
    wide = replace(params, list_chance=float("inf"))
    matches = max(TWIN_MATCHES_MIN, len({(f.query, f.stream) for f in found}))
    out: list[Found] = []
    for k, f in enumerate(work):
        mine = np.flatnonzero((seg_of == k) & (hits.stream_id != f.stream))
        if mine.size == 0:
            continue
        ys, n_hits = np.unique(hits.stream_id[mine], return_counts=True)
        for y in ys[np.argsort(-n_hits, kind="stable")][:TWINS_PER_SEGMENT].tolist():
            if matches <= 0:
                return out
            matches -= 1
            check_cancel(cancel)
            pick = mine[hits.stream_id[mine] == y]
            new = _match_twin(queries[f.query], f, corpus, int(y), x_of[pick], hits.frame_idx[pick],
                              hits.variant_idx[pick], known.get((f.query, int(y)), []), wide, params,
                              searched_seconds)
            for seg in new:
                known.setdefault((f.query, int(y)), []).append(seg)
                out.append(Found(f.query, int(y), seg))
    return out


def _match_twin(query: QueryStream, f: Found, corpus: Corpus, y: int, tx: np.ndarray,
                y_rows: np.ndarray, variants: np.ndarray, known: list[RawSegment], wide: MatchParams,
                params: MatchParams, searched_seconds: float) -> list[RawSegment]:
    """The offered stream matched against candidate twin ``y`` from seeds composed through X
    (``tx``: the times in seconds of X's samples that hit ``y``)."""
    s = f.segment
    if any(min(s.query_end, k.query_end) - max(s.query_start, k.query_start) > 0.5 * (s.query_end - s.query_start)
           for k in known if not k.near):
        return []  # the offer's own search already has a line there
    qfp = query.fp
    # The offered second the counted line puts against each owned sample (the line inverted).
    tq = s.query_start + (tx - s.corpus_start) * (s.query_end - s.query_start) / (s.corpus_end - s.corpus_start)
    qt = qfp.times_ns / 1e9
    if qt.size == 0:
        return []
    q_rows = np.clip(np.searchsorted(qt, tq), 0, qt.size - 1)
    left = np.clip(q_rows - 1, 0, qt.size - 1)
    q_rows = np.where(np.abs(qt[left] - tq) < np.abs(qt[q_rows] - tq), left, q_rows)
    ok = qfp.usable[q_rows] & (tq >= s.query_start - 0.5) & (tq <= s.query_end + 0.5)
    if int(ok.sum()) < _MIN_SEEDS:
        return []
    try:
        yfp = corpus.fingerprints(y)
    except KeyError:  # removed from the index since the shard was built
        return []
    segs = match_streams(qfp, yfp, q_rows[ok], np.asarray(y_rows, np.int64)[ok], np.asarray(variants)[ok], wide,
                         searched_seconds=max(searched_seconds, yfp.duration_s))
    out = []
    for g in segs:
        if g.near:
            continue
        if not (g.rival or g.unjudged) and g.chance is not None and g.chance > params.list_chance:
            # Chance would not list it as evidence, but it is the same motion there: a rival.
            g = replace(g, rival=True, chance=None, weak=False)
        out.append(g)
    return out
