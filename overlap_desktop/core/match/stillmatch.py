"""Still matches: near-identical frames a verified line holds that cannot be counted.

A copy of a near-static stretch (a car park, an idle workcell) matches its source frame for
frame, yet the evidence model (:mod:`.evidence`) cannot judge it: every moment of the stretch
looks like every other, so no frame is closer to its own moment than to the rest. And owned
time the ingest marked static is not searched at all, so a line stops where it begins. Such
offered time has shown no sign of being new; it is "can't tell" (core/match/verdicts.py), and
it speaks for the length of the evidence next to it (the floor is a floor of evidence).

Both functions return :class:`~overlap_desktop.core.match.segments.RawSegment` pieces marked
``unjudged`` (never counted as owned).

Offered frames near-identical to owned footage that no line holds are not shown to be new
either ("can't tell", speaking for no line's length): frames a search hit puts near an owned
frame (:func:`near_pieces`), and frames near any frame of an owned stream the offered stream
has a line to (:func:`near_rows`; the search is approximate and skips owned still time). A dim
room looks the same at every moment: re-encoded, a copy's first frames sat 18-28 bits from the
frame on their line and 12-16 from other moments of the same owned file, and read "new" for
up to 4 s of a 14 s copy (issue 33; which seconds depended on the encoder's settings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.types import StreamFingerprints

__all__ = ["NEAR_BUDGET", "STILL_MATCH_BITS", "UNSEEN_CHANGE_BITS", "into_owned_still", "near_hits", "near_pieces",
           "near_rows", "row_spans", "still_pieces", "unseen_pieces"]

#: Frames this close to their owned match (re-encodes and grades of one recording sit 0-10 bits
#: apart) are a still match. Coincidences of one rig's look-alike frames sit 20-50 bits apart.
STILL_MATCH_BITS = 16
#: Misses tolerated in a row while following a line into owned still time.
_MISSES = 2


def _times(fp: StreamFingerprints) -> np.ndarray:
    return fp.times_ns / 1e9


def _end(fp: StreamFingerprints, t: np.ndarray) -> float:
    return fp.duration_s if fp.duration_s > 0 else (float(t[-1]) if t.size else 0.0)


def code_distance(query: StreamFingerprints, corpus: StreamFingerprints, rows: np.ndarray,
                  seg: RawSegment) -> np.ndarray:
    """Distance of each offered row to the owned frame nearest the segment's line, usable or not
    (owned frames marked static are not searched, but their codes are kept)."""
    ct = _times(corpus)
    if ct.size == 0 or rows.size == 0:
        return np.full(rows.size, 256, np.int64)
    c = seg.speed * _times(query)[rows] + seg.offset
    j = np.clip(np.searchsorted(ct, c), 1, max(1, ct.size - 1))
    j = np.where(np.abs(ct[j - 1] - c) <= np.abs(ct[np.minimum(j, ct.size - 1)] - c), j - 1, j)
    j = np.clip(j, 0, ct.size - 1)
    variant = int(seg.variant_idx) if 0 <= seg.variant_idx < corpus.codes.shape[1] else 0
    return popcount_xor(query.codes[rows, 0], corpus.codes[j, variant]).astype(np.int64)


def _sample_span(query: StreamFingerprints, first: int, last: int) -> tuple[float, float]:
    """Offered seconds samples ``first..last`` stand for: half a sample around them, and the first
    and last sample reach the stream's edges (as in verify.py): the tail after the last sample is
    nobody's "new"."""
    qt = _times(query)
    half = 0.5 / query.fps if query.fps > 0 else 0.5
    q0 = 0.0 if first <= 0 else max(0.0, float(qt[first]) - half)
    q1 = float(qt[last]) + half
    if last >= qt.size - 1 and query.duration_s > 0:
        q1 = max(q1, query.duration_s)
    if query.duration_s > 0:
        q1 = min(q1, query.duration_s)
    # Still time is marked at the ingest's finer rate: a sample's span reaches the edge of still
    # time less than a sample away, so no sliver between the two is left "new".
    for sp in query.indeterminate:
        if q0 - 2 * half - 1e-6 <= sp.end_s < q0:
            q0 = sp.end_s
        if q1 < sp.start_s <= q1 + 2 * half + 1e-6:
            q1 = sp.start_s
    return q0, q1


def _piece(query: StreamFingerprints, seg: RawSegment, lo_t: float, hi_t: float, frames: int,
           mean_d: float) -> RawSegment:
    qt = _times(query)
    q0, q1 = _sample_span(query, int(np.searchsorted(qt, lo_t - 1e-9)), int(np.searchsorted(qt, hi_t + 1e-9)) - 1)
    return replace(seg, query_start=q0, query_end=q1, corpus_start=seg.speed * q0 + seg.offset,
                   corpus_end=seg.speed * q1 + seg.offset, unjudged=True, weak=True, score=0.0,
                   frames=frames, judged=0, mean_distance=mean_d, pairs=np.zeros((0, 3)), chance=None)


def still_pieces(query: StreamFingerprints, corpus: StreamFingerprints, seg: RawSegment, rows: np.ndarray,
                 counted: list[tuple[float, float]]) -> list[RawSegment]:
    """Runs of the segment's rows whose offered frames are near-identical to the owned frame on
    the line (within :data:`STILL_MATCH_BITS`) outside the ``counted`` offered spans."""
    if rows.size == 0:
        return []
    qt = _times(query)
    d = code_distance(query, corpus, rows, seg)
    free = d <= STILL_MATCH_BITS
    for a, b in counted:
        free &= ~((qt[rows] >= a - 1e-6) & (qt[rows] <= b + 1e-6))
    edges = np.flatnonzero(np.diff(np.r_[0, free.astype(np.int8), 0]))
    out = []
    for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
        piece = _piece(query, seg, float(qt[rows[a]]), float(qt[rows[b - 1]]), b - a, float(d[a:b].mean()))
        q = qt[rows[a:b]]
        out.append(replace(piece, query_start=max(seg.query_start, piece.query_start),
                           query_end=min(seg.query_end, piece.query_end),
                           pairs=np.column_stack([q, seg.speed * q + seg.offset, d[a:b]]).astype(float)))
    return out


def into_owned_still(query: StreamFingerprints, corpus: StreamFingerprints, seg: RawSegment) -> list[RawSegment]:
    """The segment's line followed past its ends while offered frames stay near-identical to owned
    frames: through owned time marked static or featureless (where the search cannot see; such
    pieces speak for the line's length), or through searched owned time (``near`` pieces: not
    shown new, but speaking for no line's length)."""
    spans = [(sp.start_s, sp.end_s) for sp in corpus.indeterminate]
    qt, ct = _times(query), _times(corpus)
    if ct.size == 0 or qt.size == 0:
        return []
    c_end = _end(corpus, ct)
    first = int(np.searchsorted(qt, seg.query_start - 1e-6))
    last = int(np.searchsorted(qt, seg.query_end + 1e-6)) - 1
    out: list[RawSegment] = []
    for step, start in ((1, last + 1), (-1, first - 1)):
        hit: list[int] = []
        dist: list[int] = []
        misses, r, inside = 0, start, 0
        while 0 <= r < qt.size and misses <= _MISSES:
            c = seg.speed * float(qt[r]) + seg.offset
            if not 0.0 <= c <= c_end:
                break
            inside += int(any(a <= c <= b for a, b in spans))
            d = int(code_distance(query, corpus, np.array([r]), seg)[0])
            if d <= STILL_MATCH_BITS:
                hit.append(r)
                dist.append(d)
                misses = 0
            else:
                misses += 1
            r += step
        if not hit:
            continue
        piece = _piece(query, seg, float(qt[min(hit)]), float(qt[max(hit)]), len(hit), float(np.mean(dist)))
        if not inside:
            # The line goes on through searched owned time whose frames it holds near-identical:
            # not shown new, but the search saw this time, so it speaks for no line's length.
            piece = replace(piece, near=True)
        if step > 0:
            piece = replace(piece, query_start=max(piece.query_start, seg.query_end))
        else:
            piece = replace(piece, query_end=min(piece.query_end, seg.query_start))
        out.append(piece)
    return out


#: Most code comparisons :func:`near_rows` makes for one offered stream: about a second (39M a
#: second measured on 2 cores, 3,000 offered rows against 14,400 owned frames of 4 variants).
NEAR_BUDGET = 40_000_000


def near_rows(query: StreamFingerprints, rows: np.ndarray, owned: Iterable[StreamFingerprints],
              bits: int = STILL_MATCH_BITS, budget: int = NEAR_BUDGET) -> np.ndarray:
    """Which offered ``rows`` are near some owned frame (:func:`near_hits`' first answer)."""
    return near_hits(query, rows, owned, bits, budget)[0]


def near_hits(query: StreamFingerprints, rows: np.ndarray, owned: Iterable[StreamFingerprints],
              bits: int = STILL_MATCH_BITS, budget: int = NEAR_BUDGET
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which offered ``rows`` sit within ``bits`` of some frame (any variant, still time
    included) of the ``owned`` streams, checked stream by stream in the order given while the
    comparisons stay within ``budget`` (rows left unchecked count as not near). ``owned`` is
    consumed lazily: streams are not loaded once every row is near or the budget is spent.

    Returns:
        ``near`` (bool), and per row the position in ``owned`` of the stream it is near, the
        owned time and the distance in bits of that stream's closest frame (-1, nan and 256
        where not near); each ``(len(rows),)``.
    """
    rows = np.asarray(rows, np.int64)
    near = np.zeros(rows.size, bool)
    which = np.full(rows.size, -1, np.int64)
    when = np.full(rows.size, np.nan)
    dist = np.full(rows.size, 256, np.int64)
    spent = 0
    if rows.size == 0:
        return near, which, when, dist
    for k, fp in enumerate(owned):
        todo = np.flatnonzero(~near)
        if todo.size == 0:
            break
        codes = fp.codes.reshape(-1, fp.codes.shape[-1])
        if codes.shape[0] == 0:
            continue
        spent += todo.size * codes.shape[0]
        if spent > budget:
            break
        q = query.codes[rows[todo], 0]
        step = max(1, 1_000_000 // codes.shape[0])  # bounded memory (32 MB): a block of rows at a time
        t = _times(fp)
        per_row = max(1, fp.codes.shape[1]) if fp.codes.ndim == 3 else 1
        for a in range(0, todo.size, step):
            dd = popcount_xor(q[a:a + step, None, :], codes[None, :, :])
            j = dd.argmin(axis=1)
            d = np.take_along_axis(dd, j[:, None], axis=1)[:, 0].astype(np.int64)
            hit = d <= bits
            at = todo[a:a + step][hit]
            near[at] = True
            which[at], when[at], dist[at] = k, t[j[hit] // per_row], d[hit]
    return near, which, when, dist


def row_spans(query: StreamFingerprints, rows: np.ndarray) -> list[tuple[float, float]]:
    """Offered seconds the given rows stand for (half a sample around each, the first and last
    sample reaching the stream's edges), consecutive rows merged."""
    rows = np.unique(np.asarray(rows, np.int64))
    if rows.size == 0:
        return []
    return [_sample_span(query, int(run[0]), int(run[-1]))
            for run in np.split(rows, np.flatnonzero(np.diff(rows) != 1) + 1)]


def near_pieces(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray, c_rows: np.ndarray,
                distances: np.ndarray, bits: int = STILL_MATCH_BITS) -> list[RawSegment]:
    """Runs of offered rows with a search hit within ``bits`` of an owned frame, one piece per
    run of consecutive rows, marked ``near`` (and ``unjudged``: never counted as owned).

    Args:
        query: Offered fingerprints.
        corpus: Owned fingerprints of the hits' stream.
        q_rows, c_rows, distances: The search's hits of the pair (any order, repeats allowed).
        bits: Largest distance that is near-identical.
    """
    close = np.asarray(distances) <= bits
    if not close.any():
        return []
    mean_d = float(np.asarray(distances)[close].mean())
    c0 = float(_times(corpus)[int(np.asarray(c_rows)[close][0])])
    # The hits themselves, kept so a report can show where in owned footage the frames lie.
    hits = np.column_stack([_times(query)[np.asarray(q_rows)[close]], _times(corpus)[np.asarray(c_rows)[close]],
                            np.asarray(distances)[close]]).astype(float)
    out = []
    for q0, q1 in row_spans(query, np.asarray(q_rows)[close]):
        mine = hits[(hits[:, 0] >= q0 - 1e-6) & (hits[:, 0] <= q1 + 1e-6)]
        out.append(RawSegment(query_start=q0, query_end=q1, corpus_start=c0, corpus_end=c0, speed=1.0,
                              offset=c0 - q0, variant_idx=0, frames=0, judged=0, mean_distance=mean_d, score=0.0,
                              weak=True, unjudged=True, near=True, pairs=mine))
    return out


#: Owned samples this far apart (bits) show footage that changed between them faster than the
#: index sampled it: what was filmed between them was never fingerprinted. Unrelated frames sit
#: 98-130 bits apart; a car filling a car park's frame changes 110-140 bits in a quarter second.
UNSEEN_CHANGE_BITS = 64
#: Offered seconds past a line's ends over which :func:`unseen_pieces` follows it.
_REACH_S = 1.5


def unseen_pieces(query: StreamFingerprints, corpus: StreamFingerprints, seg: RawSegment,
                  accept: int) -> list[RawSegment]:
    """Offered frames on the segment's line (and up to :data:`_REACH_S` past its ends) that the
    owned samples cannot show new: the line holds near-identical frames on both sides of them
    (or on one side, at the offered stream's edge), and at their place on the line the owned
    footage changed by at least :data:`UNSEEN_CHANGE_BITS` between two consecutive samples,
    while the offered frame is within ``accept`` bits (the verifier's) of one of the two. A car
    crossing a car park between two owned samples shows in the offered frame at a place neither
    sample shows. Returned as ``near`` pieces: "can't tell", speaking for no line's length."""
    qt, ct = _times(query), _times(corpus)
    if qt.size < 2 or ct.size < 2:
        return []
    variant = int(seg.variant_idx) if 0 <= seg.variant_idx < corpus.codes.shape[1] else 0
    lo, hi = seg.query_start - _REACH_S, seg.query_end + _REACH_S
    rows = np.flatnonzero((qt >= lo - 1e-6) & (qt <= hi + 1e-6) & query.usable)
    c = seg.speed * qt[rows] + seg.offset
    ok = (c >= ct[0] - 1e-6) & (c <= ct[-1] + 1e-6)
    rows, c = rows[ok], c[ok]
    if rows.size == 0:
        return []
    j = np.clip(np.searchsorted(ct, c), 1, ct.size - 1)  # owned samples j-1, j bracket c
    a, b = corpus.codes[j - 1, variant], corpus.codes[j, variant]
    q = query.codes[rows, 0]
    da, db = popcount_xor(q, a).astype(np.int64), popcount_xor(q, b).astype(np.int64)
    near = np.minimum(da, db) <= STILL_MATCH_BITS
    unseen = ~near & (np.minimum(da, db) <= accept) & (popcount_xor(a, b) >= UNSEEN_CHANGE_BITS)
    out: list[RawSegment] = []
    for k in np.flatnonzero(unseen).tolist():
        before = k > 0 and rows[k - 1] == rows[k] - 1 and near[k - 1]
        after = k + 1 < rows.size and rows[k + 1] == rows[k] + 1 and near[k + 1]
        edge_before, edge_after = rows[k] == 0, rows[k] == qt.size - 1
        if (before or edge_before) and (after or edge_after) and (before or after):
            piece = _piece(query, seg, float(qt[rows[k]]), float(qt[rows[k]]), 1, float(min(da[k], db[k])))
            out.append(replace(piece, near=True))
    return out
