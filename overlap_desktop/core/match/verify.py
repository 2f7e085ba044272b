"""Verification of a candidate line along the full fingerprints (step 3 of :mod:`.lines`).

Every query frame's predicted corpus time is looked up in the corpus stream (nearest
frames, every variant); frames within the per-frame threshold are accepted, runs of
accepted frames form segments, and the line is refined on the accepted pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.geometry import fit_line, line_neighbours
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.types import StreamFingerprints

__all__ = ["verify_line"]


def _line_distances(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                    slope: float, offset: float, variants: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`line_neighbours` with the corpus *times* of the frames instead of their rows."""
    dist, rows = line_neighbours(query, corpus, q_rows, slope, offset, variants)
    return dist, (corpus.times_ns / 1e9)[rows]


#: A refined speed within this share of 1x is snapped to 1x when 1x costs at most
#: :data:`UNIT_SPEED_SLACK` more bits of mean distance (noise, not a speed change).
UNIT_SPEED_SNAP = 0.08
UNIT_SPEED_SLACK = 1.0


def _refine(query: StreamFingerprints, corpus: StreamFingerprints, rows: np.ndarray, v: np.ndarray,
            slope: float, offset: float, params: MatchParams) -> tuple[float, float]:
    """Refine (slope, offset) by direct search on the alignment cost along the line.

    The cost is the mean of ``min(distance, accept_distance)`` to the *nearest*
    corpus frame of each query frame; summed over many query frames at different
    sampling phases it resolves the line far finer than the corpus grid, which a
    least-squares fit on best-neighbour times cannot (neighbouring frames of slow
    footage are nearly as close as the right one).
    """
    if rows.size < 2:
        return slope, offset
    if rows.size > 240:
        rows = rows[np.linspace(0, rows.size - 1, 240).round().astype(np.int64)]
    qt = query.times_ns[rows] / 1e9
    qc = query.codes[rows, 0]
    ctimes = corpus.times_ns / 1e9
    cc = corpus.codes[:, np.atleast_1d(v)]  # (nc, k, 32): the segment's variant family
    cu = corpus.usable
    nc = ctimes.size
    qm = float(qt.mean())
    cm = slope * qm + offset
    cap = params.accept_distance
    span = max(float(qt.max() - qt.min()), 1.0)

    def cost(slopes: np.ndarray, centres: np.ndarray) -> np.ndarray:
        ss, cs = np.meshgrid(slopes, centres, indexing="ij")
        pred = cs.ravel()[:, None] + ss.ravel()[:, None] * (qt - qm)[None, :]
        pos = np.clip(np.searchsorted(ctimes, pred), 1, nc - 1)
        left = ctimes[pos - 1]
        pos = np.where(np.abs(pred - left) <= np.abs(ctimes[pos] - pred), pos - 1, pos)
        d = popcount_xor(qc[None, :, None, :], cc[pos]).min(axis=-1).astype(float)
        d[~cu[pos] | (pred < -0.5) | (pred > ctimes[-1] + 0.5)] = cap
        return np.minimum(d, cap).mean(axis=1).reshape(ss.shape)

    step_c = 0.25 / max(corpus.fps, 0.25)
    sign = 1.0 if slope > 0 else -1.0
    best_s, best_c = abs(slope), cm
    # Coarse then fine: slope steps relative to the slope's magnitude, offsets in
    # corpus seconds around the centre of the evidence.
    for s_rel, n_s, c_step, n_c in ((2.0 / span, 6, max(step_c, 0.05), 8), (0.4 / span, 5, 0.02, 6)):
        s_rel = min(s_rel, 0.01)
        slopes = best_s * np.exp(np.arange(-n_s, n_s + 1) * s_rel)
        centres = best_c + np.arange(-n_c, n_c + 1) * c_step
        cst = cost(sign * slopes, centres)
        k = np.unravel_index(int(cst.argmin()), cst.shape)
        best_s, best_c = float(slopes[k[0]]), float(centres[k[1]])
    s = sign * best_s
    return s, best_c - s * qm


def _snap_unit_speed(query: StreamFingerprints, corpus: StreamFingerprints, rows: np.ndarray, v: np.ndarray,
                     slope: float, offset: float, params: MatchParams) -> tuple[float, float]:
    """``(slope, offset)``, or the 1x line through the same frames when that fits them as well.

    1x is the prior's speed (most resold copies play at normal speed). On noisy codes (a dim
    camera) or over a still stretch every neighbouring owned frame is about as close, and the
    fit wanders a few percent off 1x, which would be read as a speed change. Within
    :data:`UNIT_SPEED_SNAP` of 1x, the 1x line is kept when its mean distance to the nearest
    owned frame (capped at the accept distance) is at most :data:`UNIT_SPEED_SLACK` bits worse.
    """
    mag = abs(slope)
    if rows.size < 2 or mag == 1.0 or abs(mag - 1.0) > UNIT_SPEED_SNAP:
        return slope, offset
    qt = query.times_ns[rows] / 1e9
    qc = query.codes[rows, 0]
    ct = corpus.times_ns / 1e9
    cc = corpus.codes[:, np.atleast_1d(v)]
    cap = params.accept_distance
    sign = 1.0 if slope > 0 else -1.0
    qm = float(qt.mean())
    cm = slope * qm + offset

    def cost(sl: float, centre: float) -> float:
        pred = centre + sl * (qt - qm)
        pos = np.clip(np.searchsorted(ct, pred), 1, ct.size - 1)
        pos = np.where(np.abs(pred - ct[pos - 1]) <= np.abs(ct[pos] - pred), pos - 1, pos)
        d = popcount_xor(qc[:, None, :], cc[pos]).min(axis=-1).astype(float)
        d[~corpus.usable[pos] | (pred < -0.5) | (pred > ct[-1] + 0.5)] = cap
        return float(np.minimum(d, cap).mean())

    centres = cm + np.arange(-8, 9) * 0.05
    at_one = [cost(sign, c) for c in centres]
    k = int(np.argmin(at_one))
    if at_one[k] <= cost(slope, cm) + UNIT_SPEED_SLACK:
        return sign, float(centres[k]) - sign * qm
    return slope, offset


def _plateau_fit(query: StreamFingerprints, corpus: StreamFingerprints, rows: np.ndarray, v: np.ndarray,
                 slope: float, offset: float) -> tuple[float, float] | None:
    """Least-squares line through the centres of each query frame's best-match plateau.

    Smooth footage gives runs of corpus frames that are all about equally close to a
    query frame; the nearest one is a biased estimate of where the frame sits, the
    centre of the run is not. Returns ``None`` when there is too little evidence.
    """
    if rows.size < 3:
        return None
    if rows.size > 240:
        # Enough for the fit; bounds memory (the look-around grows with the owned frame rate).
        rows = rows[np.linspace(0, rows.size - 1, 240).round().astype(np.int64)]
    ctimes = corpus.times_ns / 1e9
    nc = ctimes.size
    qt = query.times_ns[rows] / 1e9
    pred = slope * qt + offset
    half = max(1.5, 3.0 / max(corpus.fps, 1e-6)) * max(1.0, abs(slope))
    n_side = int(np.ceil(half * corpus.fps)) + 1
    pos = np.searchsorted(ctimes, pred)
    neigh = np.clip(pos[:, None] + np.arange(-n_side, n_side + 1)[None, :], 0, nc - 1)
    cc = corpus.codes[:, np.atleast_1d(v)][neigh]  # (n, w, k, 32)
    d = popcount_xor(query.codes[rows, 0][:, None, None, :], cc).min(axis=-1).astype(float)
    d[~corpus.usable[neigh] | (np.abs(ctimes[neigh] - pred[:, None]) > half)] = np.inf
    dmin = d.min(axis=1, keepdims=True)
    w = np.where(d <= dmin + 3.0, np.exp(-(d - dmin) / 2.0), 0.0)
    sw = w.sum(axis=1)
    ok = np.isfinite(dmin[:, 0]) & (sw > 0)
    if ok.sum() < 3:
        return None
    centre = (w[ok] * ctimes[neigh[ok]]).sum(axis=1) / sw[ok]
    s, o = fit_line(qt[ok], centre)
    # One robust pass: drop points far from the first fit, refit.
    r = np.abs(centre - (s * qt[ok] + o))
    keep = r <= max(3.0 * float(np.median(r)), 0.5 / max(corpus.fps, 1e-6))
    if keep.sum() >= 3:
        s, o = fit_line(qt[ok][keep], centre[keep])
    return s, o


def _runs(accepted: np.ndarray, rejected: np.ndarray, qt: np.ndarray, gap_s: float) -> list[tuple[int, int]]:
    """Runs ``[i, j]`` (inclusive, positions into ``qt``) of accepted frames.

    A run ends when the rejected frames between two accepted ones span ``gap_s``
    seconds or more; frames neither accepted nor rejected (unusable) do not count.
    """
    acc = np.flatnonzero(accepted)
    if acc.size == 0:
        return []
    rej_cum = np.concatenate([[0], np.cumsum(rejected)])
    runs: list[tuple[int, int]] = []
    start = acc[0]
    prev = acc[0]
    step = float(np.median(np.diff(qt))) if qt.size > 1 else 1.0
    for a in acc[1:]:
        n_rej = rej_cum[a] - rej_cum[prev + 1]
        if n_rej * step >= gap_s:
            runs.append((int(start), int(prev)))
            start = a
        prev = a
    runs.append((int(start), int(prev)))
    return runs


def verify_line(query: StreamFingerprints, corpus: StreamFingerprints, slope: float, offset: float,
                params: MatchParams, *, q_range: tuple[float, float] | None = None,
                variants: Sequence[int] | None = None) -> list[RawSegment]:
    """Verify and extend a line along the full fingerprints; return its segments.

    Args:
        query: The query stream (identity codes used).
        corpus: The corpus stream (all variants).
        slope, offset: The line ``corpus_s = slope * query_s + offset``.
        params: Thresholds.
        q_range: Restrict to query seconds in this range (default: wherever the line
            falls inside the corpus stream).
        variants: Corpus variant positions to consider (default: all).

    Returns:
        Segments (possibly none), refitted on their accepted frames.
    """
    out: list[RawSegment] = []
    if len(query) == 0 or len(corpus) == 0 or slope == 0:
        return out
    qt_all = query.times_ns / 1e9
    c_end = corpus.duration_s if corpus.duration_s > 0 else float(corpus.times_ns[-1]) / 1e9
    # Query times whose predicted corpus time lies inside the corpus stream.
    pred = slope * qt_all + offset
    inside = (pred >= -0.5) & (pred <= c_end + 0.5)
    if q_range is not None:
        inside &= (qt_all >= q_range[0]) & (qt_all <= q_range[1])
    rows = np.flatnonzero(inside & query.usable)
    if rows.size == 0:
        return out
    vsel = None if variants is None else np.asarray(sorted(set(variants)), dtype=np.int64)
    dist, _ = _line_distances(query, corpus, rows, slope, offset, vsel)
    vmap = np.arange(dist.shape[1]) if vsel is None else vsel
    judged = dist.min(axis=1) < 256
    ok_any = dist.min(axis=1) <= params.accept_distance
    qt = qt_all[rows]
    line = _Line(query, corpus, params, vsel, vmap, c_end)
    for i, j in _runs(ok_any, judged & ~ok_any, qt, params.gap_seconds):
        sl = slice(i, j + 1)
        fam_pos = _family(dist[sl], params)
        if fam_pos is None:
            continue
        fam = np.asarray([int(vmap[k]) for k in fam_pos], dtype=np.int64)
        acc_rows = rows[sl][dist[sl][:, fam_pos].min(axis=1) <= params.accept_distance]
        s2, o2 = _refine(query, corpus, acc_rows, fam, slope, offset, params)
        if not (params.min_speed * 0.9 <= abs(s2) <= params.max_speed * 1.1):
            continue
        # Re-verify the run (plus the gap allowance around it) on the refined line.
        lo_t = float(qt[i]) - params.gap_seconds
        hi_t = float(qt[j]) + params.gap_seconds
        rr = rows[(qt >= lo_t) & (qt <= hi_t)]
        p2 = s2 * qt_all[rr] + o2
        rr = rr[(p2 >= -0.5) & (p2 <= c_end + 0.5)]
        if rr.size == 0:
            continue
        out.extend(line.segments(rr, fam, ((s2, o2), (slope, offset))))
    return out


def _family(dist: np.ndarray, params: MatchParams) -> list[int] | None:
    """Positions (into the judged variants) of the variant family of one run, or ``None``.

    One variant per segment: the one that explains most frames (then lowest mean). The
    family is every variant that explains any frame of the run (at most 8), because a
    manipulation between two indexed rungs (an off-centre crop between anchors) lands
    on one or the other from frame to frame; frames are judged on all of them.
    """
    ok_v = dist <= params.accept_distance
    cnt = ok_v.sum(axis=0)
    mean_v = np.where(ok_v, dist, 0).sum(axis=0) / np.maximum(cnt, 1)
    rank = np.lexsort((mean_v, -cnt))
    if int(cnt[int(rank[0])]) < params.min_frames:
        return None
    return [int(k) for k in rank[:8] if cnt[k] >= 1]


class _Line:
    """The per-line context of :func:`verify_line`: turns a run on a line into segments."""

    def __init__(self, query: StreamFingerprints, corpus: StreamFingerprints, params: MatchParams,
                 vsel: np.ndarray | None, vmap: np.ndarray, c_end: float) -> None:
        self.query, self.corpus, self.params = query, corpus, params
        self.vsel, self.vmap, self.c_end = vsel, vmap, c_end
        self.qt_all = query.times_ns / 1e9
        self.q_step = 1.0 / query.fps if query.fps > 0 else 1.0

    def _best(self, rr: np.ndarray, lines: tuple[tuple[float, float], ...],
              ) -> tuple[float, float, np.ndarray, np.ndarray]:
        """The line (of ``lines``) that accepts most frames of ``rr``, with its distances.

        Judge every frame on every variant (min), as the first pass did. The refined
        line must not lose frames the voted line had: with distances near the
        threshold (crops between rungs) the cost minimum can sit on a few very close
        frames; keep whichever line accepts more frames.
        """
        best: tuple[tuple[int, float], float, float, np.ndarray, np.ndarray] | None = None
        for ls, lo_ in lines:
            dv, cv = _line_distances(self.query, self.corpus, rr, ls, lo_, self.vsel)
            dm = dv.min(axis=1)
            key = (int((dm <= self.params.accept_distance).sum()), -float(np.minimum(dm, 256).mean()))
            if best is None or key > best[0]:
                best = (key, ls, lo_, dv, cv)
        assert best is not None  # ``lines`` is never empty
        return best[1], best[2], best[3], best[4]

    def segments(self, rr: np.ndarray, fam: np.ndarray,
                 lines: tuple[tuple[float, float], ...]) -> list[RawSegment]:
        """Segments along the best of ``lines`` over query rows ``rr``."""
        params, query = self.params, self.query
        s2, o2, d2v, c2v = self._best(rr, lines)
        am = d2v.argmin(axis=1)
        d2 = np.take_along_axis(d2v, am[:, None], axis=1)[:, 0]
        c2 = np.take_along_axis(c2v, am[:, None], axis=1)[:, 0]
        jud2 = d2 < 256
        acc2 = d2 <= max(params.extend_distance, params.accept_distance)
        strong2 = d2 <= params.accept_distance
        t2 = self.qt_all[rr]
        out: list[RawSegment] = []
        for a, b in _runs(acc2, jud2 & ~acc2, t2, params.gap_seconds):
            sl2 = slice(a, b + 1)
            acc = acc2[sl2]
            n_acc = int(acc.sum())
            n_jud = int(jud2[sl2].sum())
            ratio = n_acc / max(n_jud, 1)
            if int(strong2[sl2].sum()) < params.min_frames or ratio < params.min_accept_ratio:
                continue
            qa, ca, da = t2[sl2][acc], c2[sl2][acc], d2[sl2][acc]
            first, last = int(rr[a]), int(rr[b])
            # Report the variant that is closest on most accepted frames.
            wins = np.bincount(am[sl2][acc], minlength=d2v.shape[1])
            vi = int(self.vmap[int(wins.argmax())])
            s3, o3 = s2, o2
            fit = _plateau_fit(query, self.corpus, rr[sl2][acc], fam, s2, o2)
            if fit is not None and abs(fit[0] - s2) <= 0.1 * abs(s2):
                s3, o3 = fit
            s3, o3 = _snap_unit_speed(query, self.corpus, rr[sl2][acc], fam, s3, o3, params)
            q0, q1 = self._query_span(first, last)
            c0 = float(np.clip(s3 * q0 + o3, 0.0, self.c_end))
            c1 = float(np.clip(s3 * q1 + o3, 0.0, self.c_end))
            mean_d = float(da.mean())
            score = float(ratio * max(0.0, 1.0 - mean_d / 128.0))
            pairs = np.column_stack([qa, ca, da.astype(float)])
            out.append(RawSegment(q0, q1, c0, c1, s3, o3, vi, n_acc, n_jud, mean_d,
                                  round(score, 4), pairs, family=fam))
        return out

    def _query_span(self, first: int, last: int) -> tuple[float, float]:
        """Query seconds a run of samples stands for.

        A sample stands for the time around it: extend by half a sample, or to the
        stream edge when the run reaches the first/last sample.
        """
        query, qt_all, q_step = self.query, self.qt_all, self.q_step
        q0 = 0.0 if first == 0 else max(0.0, float(qt_all[first]) - 0.5 * q_step)
        q1 = (query.duration_s if last == len(query) - 1 and query.duration_s > 0
              else float(qt_all[last]) + 0.5 * q_step)
        if query.duration_s > 0:
            q1 = min(q1, query.duration_s)
        return q0, q1
