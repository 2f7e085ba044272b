"""One (query stream, corpus stream) pair, from its candidate hits to assessed segments.

The stages of one pair, in order (the offer-level driver is :mod:`.pipeline`):

1. **Lines** through the seeds (:func:`~.lines.find_lines`, Hough voting plus least squares).
2. **Refined segments**: each line verified along the full fingerprints and refined
   (:func:`~.verify.verify_line`); the points a segment explains are removed and the search for
   lines repeats (splices give several segments from one corpus file).
3. Seeds left unexplained (a short clip with one or two seeds) are **expanded locally**: their
   neighbourhood is compared densely (query +/- a few seconds against every corpus frame
   reachable at 0.2x..5x) to produce enough points for a line, and steps 1-2 run again on those.
4. **Evidence**: each segment is trimmed to what it proves and gets its chance count
   (:func:`~.evidence.assess_segment`).
"""


from __future__ import annotations

from dataclasses import replace

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.evidence import Seeds, assess_segment
from overlap_desktop.core.match.lines import find_lines
from overlap_desktop.core.match.repeating import repeat_weights
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.match.verify import verify_line
from overlap_desktop.core.types import StreamFingerprints

__all__ = ["match_streams"]


# --------------------------------------------------------------------------- one stream pair


def _expand(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
            c_rows: np.ndarray, v_idx: np.ndarray, params: MatchParams) -> tuple[np.ndarray, ...]:
    """Dense local comparison around seeds; returns extra points (q_row, c_row, v, d)."""
    qt = query.times_ns / 1e9
    ct = corpus.times_ns / 1e9
    e = params.expand_seconds
    done: set[tuple[int, int, int]] = set()
    cell = max(e / 2, 1e-3)
    pq: list[np.ndarray] = []
    pc: list[np.ndarray] = []
    pv: list[np.ndarray] = []
    pd: list[np.ndarray] = []
    for qr, cr, v in zip(q_rows.tolist(), c_rows.tolist(), v_idx.tolist()):
        q0, c0 = qt[qr], ct[cr]
        # Seeds in a neighbourhood already expanded add nothing (grid cells of e/2).
        key = (v, int(q0 // cell), int(c0 // cell))
        if key in done:
            continue
        done.add(key)
        qsel = np.flatnonzero((np.abs(qt - q0) <= e) & query.usable)
        reach = e * params.max_speed + 1.0
        csel = np.flatnonzero((np.abs(ct - c0) <= reach) & corpus.usable)
        if qsel.size == 0 or csel.size == 0:
            continue
        d = popcount_xor(query.codes[qsel, 0][:, None, :], corpus.codes[csel, v][None, :, :])
        # Per query frame keep the corpus frames close to its best match only.
        best = d.min(axis=1, keepdims=True)
        keep = (d <= params.seed_distance) & (d <= best + 6)
        ii, jj = np.nonzero(keep)
        pq.append(qsel[ii])
        pc.append(csel[jj])
        pv.append(np.full(ii.size, v, np.int64))
        pd.append(d[ii, jj])
        if len(done) > 2000:  # pathological seed counts: enough evidence already
            break
    if not pq:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    return (np.concatenate(pq), np.concatenate(pc), np.concatenate(pv), np.concatenate(pd))


def _explained(segs: list[RawSegment], q: np.ndarray, c: np.ndarray, tol: float = 1.0) -> np.ndarray:
    m = np.zeros(q.shape, bool)
    for s in segs:
        near = np.abs(c - (s.speed * q + s.offset)) <= tol * max(1.0, abs(s.speed))
        m |= near & (q >= s.query_start - 1.0) & (q <= s.query_end + 1.0)
    return m


#: Points of one query frame more than this many bits worse than its best are not voted with.
THIN_SLACK_BITS = 12
#: A voted line whose speed is further than this from 1x (either direction) is verified together
#: with the best normal-speed line through the same seeds (:func:`_lines_to_segments`).
UNIT_SPEED_SLACK = 0.05


def _thin(q_rows: np.ndarray, c_rows: np.ndarray, v_idx: np.ndarray, d: np.ndarray | None,
          per_frame: int = 8) -> np.ndarray:
    """Indices of the points worth voting: one per (query frame, corpus frame), at most
    ``per_frame`` per query frame (the closest). Keeps Hough voting cheap on long matches."""
    if q_rows.size == 0:
        return np.zeros(0, np.int64)
    dd = np.zeros(q_rows.size) if d is None else np.asarray(d, float)
    order = np.lexsort((dd, c_rows, q_rows))
    qo, co = q_rows[order], c_rows[order]
    first = np.r_[True, (qo[1:] != qo[:-1]) | (co[1:] != co[:-1])]
    order = order[first]
    # Rank within each query frame by distance.
    order = order[np.lexsort((dd[order], q_rows[order]))]
    qo = q_rows[order]
    starts = np.flatnonzero(np.r_[True, qo[1:] != qo[:-1]])
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    # A frame votes for its clearly best matches only: a match far worse than the frame's best
    # (another crop rung's code of another moment) would take a share of its one vote.
    best = np.repeat(dd[order[starts]], np.diff(np.r_[starts, order.size]))
    return order[(rank < per_frame) & (dd[order] <= best + THIN_SLACK_BITS)]


def _lines_to_segments(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                       c_rows: np.ndarray, v_idx: np.ndarray, params: MatchParams,
                       found: list[RawSegment], dist: np.ndarray | None = None, *,
                       repeats: bool = False) -> list[RawSegment]:
    """Lines through the points no ``found`` segment explains, verified. ``repeats``: vote with
    :func:`~.repeating.repeat_weights` (each repetition of owned footage a whole vote) instead."""
    keep = _thin(q_rows, c_rows, v_idx, dist)
    qs = query.times_ns[q_rows[keep]] / 1e9
    cs = corpus.times_ns[c_rows[keep]] / 1e9
    alive = ~_explained(found, qs, cs, tol=2.0) if found else np.ones(qs.size, bool)
    if not repeats:
        return _vote_rounds(query, corpus, qs, cs, alive, params, None)
    weights = repeat_weights(qs[alive], cs[alive]) if alive.any() else None
    if weights is None:
        return []
    w = np.zeros(qs.size)
    w[alive] = weights
    return _vote_rounds(query, corpus, qs, cs, alive, params, w)


def _vote_rounds(query: StreamFingerprints, corpus: StreamFingerprints, qs: np.ndarray, cs: np.ndarray,
                 alive: np.ndarray, params: MatchParams, weights: np.ndarray | None) -> list[RawSegment]:
    """Lines voted one at a time through the ``alive`` points (cleared as they are explained),
    each verified; ``weights``: the points' votes (default: one per offered frame, shared)."""
    new: list[RawSegment] = []
    # One line at a time: verify it, then drop every point the verified segments
    # explain, so the next vote runs on what is left.
    for _ in range(params.max_lines):
        idx = np.flatnonzero(alive)
        if idx.size < 2:
            break
        lines = find_lines(qs[idx], cs[idx], min_speed=params.min_speed, max_speed=params.max_speed,
                           min_votes=3.0, max_lines=1,
                           weights=None if weights is None else weights[idx])
        if not lines:
            break
        slope, offset, inl = lines[0]
        segs = verify_line(query, corpus, slope, offset, params)
        if abs(abs(slope) - 1.0) > UNIT_SPEED_SLACK:
            # Normal speed, the commonest copy, is tried too: in near-still footage an offered
            # frame seeds several owned frames that all look alike, their shared votes can favour a
            # line of another speed, and that line's verification then takes the real line's seeds.
            unit = find_lines(qs[idx], cs[idx], min_speed=1.0, max_speed=1.0, min_votes=3.0, max_lines=1,
                              weights=None if weights is None else weights[idx])
            if unit:
                segs = segs + verify_line(query, corpus, unit[0][0], unit[0][1], params)
        new.extend(segs)
        alive[idx[inl]] = False
        if segs:
            alive &= ~_explained(segs, qs, cs, tol=2.0)
    return new


def _same_segment(a: RawSegment, b: RawSegment) -> bool:
    """Two segments describing the same stretch: they overlap by half on both axes.

    Slow or static footage lets slightly wrong lines verify too (neighbouring frames
    look alike); such near-duplicates are one match, not a splice.
    """
    ov = min(a.query_end, b.query_end) - max(a.query_start, b.query_start)
    if ov < 0.5 * min(a.query_duration, b.query_duration) or ov <= 0:
        return False
    a0, a1 = sorted((a.corpus_start, a.corpus_end))
    b0, b1 = sorted((b.corpus_start, b.corpus_end))
    cov = min(a1, b1) - max(a0, b0)
    if (a.speed > 0) != (b.speed > 0):
        return False
    return cov >= 0.5 * min(a1 - a0, b1 - b0) - 1.0


def _evidence(s: RawSegment) -> float:
    return s.frames * max(0.0, 1.0 - s.mean_distance / 128.0) * min(1.0, s.frames / max(s.judged, 1))


def _dedupe(segs: list[RawSegment]) -> list[RawSegment]:
    """Keep the strongest of each group of near-duplicate segments (assessed ones by
    their chance count first)."""
    kept: list[RawSegment] = []
    for s in sorted(segs, key=lambda x: (x.weak, x.chance if x.chance is not None else 1.0,
                                         -_evidence(x), x.mean_distance)):
        # A twin's motion (rival) and its near-identical "can't tell" pieces say different things.
        if not any(_same_segment(s, k) and not (s.rival and k.unjudged or s.unjudged and k.rival) for k in kept):
            kept.append(s)
    return kept


#: A seed's owned sample is moved to the closest of its neighbours within this many seconds
#: (:func:`_snap_seeds`): half the search's seed spacing (one seed a second).
SNAP_SECONDS = 0.5


def _snap_seeds(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray, c_rows: np.ndarray,
                v_idx: np.ndarray, dist: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Each seed moved to the owned sample, within :data:`SNAP_SECONDS` of it, closest to its offered frame.

    The shards hold one sample a second at turning phases (core/index/shards.py), so a seed can
    sit up to half a second from the owned moment its offered frame shows. In near-still footage
    that sample is still close enough to be a hit, and seeds scattered up to half a second off
    the line split its votes: a dim room's whole-second copies lost their lines and read new.
    Every sample is in the database, so the seed is put where the frame matches best (ties keep
    it where it was).
    """
    if q_rows.size == 0 or corpus.times_ns.size < 2:
        return c_rows, dist
    step_s = float(np.median(np.diff(corpus.times_ns))) / 1e9
    reach = int(SNAP_SECONDS / step_s) if step_s > 0 else 0
    if reach < 1:
        return c_rows, dist
    # Offsets nearest first, so a tie keeps the nearer sample.
    offsets = np.array([0] + [d for k in range(1, reach + 1) for d in (-k, k)], np.int64)
    cand = np.clip(c_rows[:, None] + offsets[None, :], 0, corpus.times_ns.size - 1)
    near = np.abs(corpus.times_ns[cand] - corpus.times_ns[c_rows][:, None]) <= int(SNAP_SECONDS * 1e9)
    ok = near & corpus.usable[cand]
    ok[:, 0] = True
    d = popcount_xor(query.codes[q_rows, 0][:, None, :], corpus.codes[cand, v_idx[:, None]]).astype(np.int64)
    d = np.where(ok, d, np.iinfo(np.int64).max)
    best = np.argmin(d, axis=1)
    pick = np.arange(q_rows.size)
    return cand[pick, best], (d[pick, best] if dist is not None else None)


def match_streams(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                  c_rows: np.ndarray, v_idx: np.ndarray, params: MatchParams | None = None, *,
                  distances: np.ndarray | None = None, exclude_diagonal: bool = False,
                  searched_seconds: float | None = None) -> list[RawSegment]:
    """Segments between one query stream and one corpus stream, from seed matches.

    Args:
        query: Query fingerprints (identity variant used).
        corpus: Corpus fingerprints (all variants).
        q_rows: Seed query frame positions.
        c_rows: Seed corpus frame positions.
        v_idx: Seed corpus variant positions.
        params: Thresholds (defaults when ``None``).
        distances: Seed distances (optional; used to keep the closest seeds per frame).
        exclude_diagonal: Drop the trivial identity line (a stream against itself).
        searched_seconds: Seconds of footage the query was searched against (the whole
            library); sets how strong evidence must be (:mod:`.evidence`). Default: the
            corpus stream's own duration.

    Returns:
        Verified segments sorted by query start (floor not applied), each assessed:
        ``chance``, ``speed_low``/``speed_high`` and ``weak`` are set; segments chance
        fully explains (above ``params.list_chance``) are dropped.
    """
    params = params or MatchParams()
    q_rows = np.asarray(q_rows, np.int64)
    c_rows = np.asarray(c_rows, np.int64)
    v_idx = np.asarray(v_idx, np.int64)
    dist = None if distances is None else np.asarray(distances, np.int64)
    c_rows, dist = _snap_seeds(query, corpus, q_rows, c_rows, v_idx, dist)
    if exclude_diagonal:
        # A repeat inside one stream lies at least its own length (>= the floor) away from
        # its source; seeds nearer the diagonal are slowly changing footage, and on smooth
        # footage they are nearly all of the seeds (measured: 90% of the self-check's time).
        near_ns = int(max(2.0, params.floor_seconds) * 1e9)
        keep = np.abs(query.times_ns[q_rows] - corpus.times_ns[c_rows]) > near_ns
        q_rows, c_rows, v_idx = q_rows[keep], c_rows[keep], v_idx[keep]
        dist = None if dist is None else dist[keep]
    if q_rows.size == 0:
        return []
    found = _dedupe(_lines_to_segments(query, corpus, q_rows, c_rows, v_idx, params, [], dist))
    # Seeds no segment explains get a local dense expansion, then another round.
    rest = ~_explained(found, query.times_ns[q_rows] / 1e9, corpus.times_ns[c_rows] / 1e9)
    extra: tuple[np.ndarray, ...] | None = None
    if rest.any():
        eq, ec, ev, ed = _expand(query, corpus, q_rows[rest], c_rows[rest], v_idx[rest], params)
        if exclude_diagonal and eq.size:
            keep = np.abs(query.times_ns[eq] - corpus.times_ns[ec]) > near_ns
            eq, ec, ev, ed = eq[keep], ec[keep], ev[keep], ed[keep]
        extra = (eq, ec, ev, ed)
        if eq.size:
            found = _dedupe(found + _lines_to_segments(query, corpus, eq, ec, ev, params, found, ed))
    revoted = not found
    if revoted:
        # No line at all: where owned footage repeats itself, a frame's vote was split among the
        # repetitions, so every point votes again, giving each repetition a whole vote.
        pts = [(q_rows, c_rows, v_idx, dist)] + ([extra] if extra is not None and extra[0].size else [])
        aq, ac, av = (np.concatenate([x[k] for x in pts]) for k in range(3))
        ad = None if any(x[3] is None for x in pts) else np.concatenate([x[3] for x in pts])
        found = _dedupe(_lines_to_segments(query, corpus, aq, ac, av, params, [], ad, repeats=True))
    if exclude_diagonal:
        found = [s for s in found if not (abs(s.speed - 1.0) < 0.05 and abs(s.offset) < 2.0)]
    searched = corpus.duration_s if searched_seconds is None else searched_seconds
    seeds = _seed_pairs(query, corpus, q_rows, c_rows, dist, extra)
    found = _dedupe(_assess(query, corpus, found, params, searched, exclude_diagonal, seeds))
    if revoted:
        # Such a line is kept only as a copy of repeating owned footage, and its near-identical
        # frames as "can't tell" (near: no line's evidence); anything else the ordinary vote would
        # not have drawn is dropped, as before (kept as a rival, it hid the line to a scripted
        # twin that the twin lookup finds, and a new repeat of that motion was owned 8 s).
        found = [x if x.repeated or x.near else replace(x, near=True) for x in found if x.repeated or x.unjudged]
    found.sort(key=lambda s: (s.query_start, s.corpus_start))
    return found


def _seed_pairs(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray, c_rows: np.ndarray,
                dist: np.ndarray | None, extra: tuple[np.ndarray, ...] | None) -> Seeds:
    """Every close pair the search and the local expansion found for this stream pair."""
    qs, cs = [q_rows], [c_rows]
    if dist is None:
        ds = [popcount_xor(query.codes[q_rows, 0], corpus.codes[c_rows, 0]).astype(np.int64)]
    else:
        ds = [dist]
    if extra is not None and extra[0].size:
        qs.append(extra[0])
        cs.append(extra[1])
        ds.append(np.asarray(extra[3], np.int64))
    return Seeds(np.concatenate(qs), np.concatenate(cs), np.concatenate(ds))


def _assess(query: StreamFingerprints, corpus: StreamFingerprints, segs: list[RawSegment],
            params: MatchParams, searched_seconds: float, identity: bool,
            seeds: Seeds | None = None) -> list[RawSegment]:
    """Trim each verified segment to its evidence and attach its chance count."""
    out: list[RawSegment] = []
    for seg in segs:
        for piece, a in assess_segment(query, corpus, seg, seg.family, params,
                                       searched_seconds=searched_seconds, exclude_identity=identity,
                                       seeds=seeds):
            if piece.unjudged or piece.rival or piece.repeated:
                # Too still to judge, a twin's motion, or owned footage that repeats: no chance count.
                out.append(piece)
                continue
            if a.chance > params.list_chance:
                continue
            out.append(replace(piece, chance=a.chance, speed_low=a.speed_low, speed_high=a.speed_high,
                               weak=a.chance > params.max_chance))
    return out
