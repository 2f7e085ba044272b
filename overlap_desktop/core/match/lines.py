"""Segment matching: from frame matches to lines in the query-time x corpus-time plane.

Copied footage forms straight lines in the (query seconds, corpus seconds) plane.
The slope is the playback speed of the offered copy relative to the owned original
(corpus seconds advanced per offered second: 0.5 for a copy slowed to half speed,
negative for reversed playback), and the offset says where in the owned file the
copy starts. Everything here works in real seconds, never in frame numbers, so a
manifest sampled at 1 fps compares against an index sampled at 2, 4 or 8 fps.

The pipeline for one (query stream, corpus stream) pair:

1. **Seeds** come from the candidate search (:mod:`.search`): sparse, noisy frame
   matches ``(query frame, corpus frame, variant, distance)``.
2. **Line candidates** by Hough voting over (slope, offset): every point votes for
   every slope on a logarithmic grid (0.2x..5x, both signs); points of one query
   frame share one vote, so a static shot matching many corpus frames cannot
   outvote a real line. The winning bin is refined by least squares on its inliers.
3. **Verification along the line** with the full fingerprints: every query frame's
   predicted corpus time is looked up in the corpus stream (nearest frames, every
   variant); frames within the per-frame threshold are accepted. Runs of accepted
   frames separated by less than ``gap_seconds`` of rejected frames form segments;
   the speed is refitted on the accepted pairs. This is what makes per-frame recall
   of the search unimportant: one good line reaches every matching frame.
4. Points explained by a segment are removed and the search for lines repeats
   (splices give several segments from one corpus file).
5. Seeds left unexplained (isolated, e.g. a short clip with one or two seeds) are
   **expanded locally**: their neighbourhood is compared densely (query +/- a few
   seconds against every corpus frame reachable at 0.2x..5x) to produce enough
   points for a line, and steps 2-4 run again on those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from overlap_desktop.core.index.shards import popcount_xor
from overlap_desktop.core.match.evidence import Seeds, assess_segment
from overlap_desktop.core.types import StreamFingerprints

__all__ = [
    "MatchParams",
    "RawSegment",
    "find_lines",
    "fit_line",
    "match_streams",
    "split_floor",
    "union_seconds",
    "union_seconds_excluding",
    "verify_line",
]


@dataclass(frozen=True, slots=True)
class MatchParams:
    """Thresholds of the matcher (defaults measured on generated footage; see docs/scale.md).

    Attributes:
        seed_distance: Search radius for seeds (Hamming bits). Unrelated PDQ codes sit
            ~128 +/- 8 bits apart, so 56 admits essentially no random seeds while
            keeping re-encoded, phase-shifted and between-rung-cropped frames.
        accept_distance: Per-frame threshold along a line. Higher than the seed
            radius because a frame on an already-established line needs less evidence.
        extend_distance: Looser threshold for frames inside or at the ends of a run of
            accepted frames (hysteresis): a copy whose distances hover around
            ``accept_distance`` (a crop between two indexed rungs) is not cut into
            pieces, while a segment still needs ``min_frames`` frames within
            ``accept_distance`` to exist at all.
        min_speed, max_speed: Range of |slope| searched (the brief's 0.25x..4x, with margin).
        gap_seconds: Rejected query time tolerated inside one segment.
        min_frames: Fewest accepted frames for a segment to be reported at all.
        min_accept_ratio: Fewest accepted / judged frames inside a segment.
        floor_seconds: Evidence floor; shorter segments are listed as below floor.
        expand_seconds: Half-width (query seconds) of the local dense expansion.
        max_chance: Largest expected chance count (E-value, :mod:`.evidence`) of a
            segment that is counted; weaker segments are listed as weak evidence.
        list_chance: Weak segments with a larger chance count than this are not listed
            at all (chance explains them: a new recording of the same scene).
        probe: Multi-probe level of the candidate search (0 or 1). 0 by default: one
            seed per segment is enough (lines are verified and extended on the full
            fingerprints) and multi-probing costs ~3x more time per 10x corpus
            (bench/bench_compare.py).
    """

    seed_distance: int = 56
    accept_distance: int = 64
    extend_distance: int = 72
    min_speed: float = 0.2
    max_speed: float = 5.0
    gap_seconds: float = 5.0
    min_frames: int = 3
    min_accept_ratio: float = 0.5
    floor_seconds: float = 10.0
    expand_seconds: float = 6.0
    probe: int = 0
    max_lines: int = 32
    max_chance: float = 0.01
    list_chance: float = 1.0

    def as_dict(self) -> dict[str, float | int]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}  # type: ignore[attr-defined]


@dataclass(slots=True)
class RawSegment:
    """A verified line segment between one query stream and one corpus stream.

    Times in seconds. ``corpus_start``/``corpus_end`` are the line's values at
    ``query_start``/``query_end`` (so ``corpus_start > corpus_end`` when reversed).
    """

    query_start: float
    query_end: float
    corpus_start: float
    corpus_end: float
    speed: float
    offset: float
    variant_idx: int
    frames: int
    judged: int
    mean_distance: float
    score: float
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: Corpus variant positions the segment was judged on (its variant family).
    family: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #: Expected chance count (E-value) from :mod:`.evidence`; ``None`` before assessment.
    chance: float | None = None
    speed_low: float | None = None
    speed_high: float | None = None
    #: Assessed and not strong enough to be counted (chance above ``MatchParams.max_chance``).
    weak: bool = False

    @property
    def query_duration(self) -> float:
        return max(0.0, self.query_end - self.query_start)

    @property
    def corpus_duration(self) -> float:
        return abs(self.corpus_end - self.corpus_start)


# --------------------------------------------------------------------------- line fitting


def fit_line(q: np.ndarray, c: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """Weighted least-squares line ``c = slope * q + offset``.

    Returns:
        ``(slope, offset)``; slope 0 when the points do not span any query time.
    """
    q = np.asarray(q, float)
    c = np.asarray(c, float)
    w = np.ones_like(q) if w is None else np.asarray(w, float)
    sw = w.sum()
    if sw <= 0 or q.size == 0:
        return 0.0, 0.0
    qm = (w * q).sum() / sw
    cm = (w * c).sum() / sw
    var = (w * (q - qm) ** 2).sum()
    if var <= 1e-12:
        return 0.0, float(cm)
    slope = float((w * (q - qm) * (c - cm)).sum() / var)
    return slope, float(cm - slope * qm)


def _slope_grid(min_speed: float, max_speed: float, step: float = 0.025) -> np.ndarray:
    mags = np.exp(np.arange(math.log(min_speed), math.log(max_speed) + step, step))
    return np.concatenate([mags, -mags])


def find_lines(q: np.ndarray, c: np.ndarray, *, min_speed: float = 0.2, max_speed: float = 5.0,
               min_votes: float = 2.0, bin_seconds: float = 0.6, tol_seconds: float = 0.75,
               max_lines: int = 32) -> list[tuple[float, float, np.ndarray]]:
    """Find lines through a noisy point set by Hough voting plus least squares.

    Points are (query second, corpus second). Each query time distributes one vote
    over its points, so many matches of one query frame (a slow or repetitive shot)
    count as one. After each line is found its inliers are removed.

    Args:
        q: Query times (seconds).
        c: Corpus times (seconds).
        min_speed, max_speed: Range of |slope|.
        min_votes: Fewest distinct-query-time votes for a line.
        bin_seconds: Offset bin width in corpus seconds.
        tol_seconds: Inlier distance from the line in corpus seconds (scaled up for
            |slope| > 1, where corpus time moves faster than the query grid).
        max_lines: Stop after this many lines.

    Returns:
        ``[(slope, offset, inlier_mask), ...]`` strongest first; masks index the input.
    """
    q = np.asarray(q, float)
    c = np.asarray(c, float)
    n = q.size
    out: list[tuple[float, float, np.ndarray]] = []
    if n < 2:
        return out
    slopes = _slope_grid(min_speed, max_speed)
    alive = np.ones(n, bool)
    # One vote per distinct query time, shared among its points.
    _, inv, counts = np.unique(np.round(q, 3), return_inverse=True, return_counts=True)
    weight = 1.0 / counts[inv]
    while len(out) < max_lines:
        idx = np.flatnonzero(alive)
        if idx.size < 2:
            break
        qa, ca, wa = q[idx], c[idx], weight[idx]
        # (slopes, points) offsets, binned; two staggered binnings so a line near a
        # bin edge is not split in half.
        best = _hough_peak(qa, ca, wa, slopes, bin_seconds)
        if best[0] < min_votes:
            break
        slope, offset = float(slopes[best[1]]), float(best[2])
        inl = np.zeros(n, bool)
        for tol in (2.0 * tol_seconds, tol_seconds, tol_seconds):
            t = tol * max(1.0, abs(slope))
            cand = alive & (np.abs(c - (slope * q + offset)) <= t)
            if np.unique(np.round(q[cand], 3)).size < 2:
                break
            inl = cand
            s2, o2 = fit_line(q[inl], c[inl], weight[inl])
            if min_speed * 0.9 <= abs(s2) <= max_speed * 1.1:
                slope, offset = s2, o2
        if not inl.any():
            inl = alive & (np.abs(c - (slope * q + offset)) <= tol_seconds * max(1.0, abs(slope)))
        if not inl.any():
            # Nothing near the voted bin after refinement: drop the strongest voters of it.
            bins = np.floor((c - slopes[best[1]] * q) / bin_seconds)
            inl = alive & (bins == np.floor(best[2] / bin_seconds))
            if not inl.any():
                break
        out.append((slope, offset, inl))
        alive &= ~inl
    return out


def _hough_peak(q: np.ndarray, c: np.ndarray, w: np.ndarray, slopes: np.ndarray,
                bin_seconds: float) -> tuple[float, int, float]:
    """The (votes, slope index, offset) of the strongest (slope, offset) bin.

    Two staggered binnings, so a line near a bin edge is not split in half. Slopes
    are processed in chunks to bound memory (offset range x chunk).
    """
    best = (0.0, 0, 0.0)
    chunk = max(1, int(2_000_000 // max(q.size, 1)))
    for s0 in range(0, slopes.size, chunk):
        sl = slopes[s0:s0 + chunk]
        b = c[None, :] - sl[:, None] * q[None, :]
        for shift in (0.0, 0.5):
            bins = np.floor(b / bin_seconds + shift).astype(np.int64)
            lo = int(bins.min())
            span = int(bins.max()) - lo + 1
            key = (np.arange(sl.size, dtype=np.int64)[:, None] * span + (bins - lo)).ravel()
            wt = np.broadcast_to(w, bins.shape).ravel()
            if sl.size * span <= 4_000_000:
                votes = np.bincount(key, weights=wt, minlength=sl.size * span)
                k = int(votes.argmax())
                v = float(votes[k])
            else:
                uk, inv = np.unique(key, return_inverse=True)
                votes = np.bincount(inv, weights=wt)
                j = int(votes.argmax())
                k, v = int(uk[j]), float(votes[j])
            if v > best[0] + 1e-9:
                best = (v, s0 + k // span, (k % span + lo - shift + 0.5) * bin_seconds)
    return best


# --------------------------------------------------------------------------- verification


def line_neighbours(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                    slope: float, offset: float, variants: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Distances from query frames to the corpus frames nearest their predicted time.

    Returns:
        ``(dist (n, V) int, c_row (n, V) int)``: per query row and corpus variant, the
        smallest distance among the corpus frames around the prediction, and the
        corpus frame it was measured on. Unusable corpus frames count as 256 (no evidence).
    """
    qt = query.times_ns[q_rows] / 1e9
    pred = slope * qt + offset
    ctimes = corpus.times_ns / 1e9
    nc = ctimes.size
    pos = np.searchsorted(ctimes, pred)
    # Neighbours: the two frames around the prediction plus one more on each side,
    # because the prediction carries sub-frame error and sampling phases differ.
    neigh = np.clip(pos[:, None] + np.arange(-2, 2)[None, :], 0, nc - 1)
    # Keep neighbours within a time tolerance of the prediction.
    dt = np.abs(ctimes[neigh] - pred[:, None])
    tol = max(0.6 / max(corpus.fps, 1e-6), 0.3)
    near = dt <= tol
    vsel = np.arange(corpus.codes.shape[1]) if variants is None else variants
    qc = query.codes[q_rows, 0]
    cc = corpus.codes[neigh][:, :, vsel]  # (n, 4, V, 32)
    d = popcount_xor(qc[:, None, None, :], cc).astype(np.int32)  # (n, 4, V)
    bad = ~(near & corpus.usable[neigh])
    d[bad] = 256
    arg = d.argmin(axis=1)  # (n, V)
    dist = np.take_along_axis(d, arg[:, None, :], axis=1)[:, 0, :]
    rows = np.take_along_axis(neigh, arg, axis=1) if arg.size else np.zeros_like(dist)
    return dist, rows


def _line_distances(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                    slope: float, offset: float, variants: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`line_neighbours` with the corpus *times* of the frames instead of their rows."""
    dist, rows = line_neighbours(query, corpus, q_rows, slope, offset, variants)
    return dist, (corpus.times_ns / 1e9)[rows]


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
    dist, ct = _line_distances(query, corpus, rows, slope, offset, vsel)
    vmap = np.arange(dist.shape[1]) if vsel is None else vsel
    judged = dist.min(axis=1) < 256
    ok_any = dist.min(axis=1) <= params.accept_distance
    qt = qt_all[rows]
    q_step = 1.0 / query.fps if query.fps > 0 else 1.0
    for i, j in _runs(ok_any, judged & ~ok_any, qt, params.gap_seconds):
        sl = slice(i, j + 1)
        # One variant per segment: the one that explains most frames (then lowest mean).
        ok_v = dist[sl] <= params.accept_distance
        cnt = ok_v.sum(axis=0)
        mean_v = np.where(ok_v, dist[sl], 0).sum(axis=0) / np.maximum(cnt, 1)
        rank = np.lexsort((mean_v, -cnt))
        v = int(rank[0])
        if int(cnt[v]) < params.min_frames:
            continue
        # The reported variant is the one explaining most frames; frames are judged on
        # every variant that explains any frame of the run (at most 8), because a
        # manipulation between two indexed rungs (an off-centre crop between anchors)
        # lands on one or the other from frame to frame.
        fam_pos = [int(k) for k in rank[:8] if cnt[k] >= 1]
        fam = np.asarray([int(vmap[k]) for k in fam_pos], dtype=np.int64)
        vi = int(fam[0])
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
        # Judge every frame on every variant (min), as the first pass did. The refined
        # line must not lose frames the voted line had: with distances near the
        # threshold (crops between rungs) the cost minimum can sit on a few very close
        # frames; keep whichever line accepts more frames.
        best_line = None
        for ls, lo_ in ((s2, o2), (slope, offset)):
            dv, cv = _line_distances(query, corpus, rr, ls, lo_, vsel)
            dm = dv.min(axis=1)
            key = (int((dm <= params.accept_distance).sum()), -float(np.minimum(dm, 256).mean()))
            if best_line is None or key > best_line[0]:
                best_line = (key, ls, lo_, dv, cv)
        _, s2, o2, d2v, c2v = best_line  # type: ignore[misc]
        am = d2v.argmin(axis=1)
        d2 = np.take_along_axis(d2v, am[:, None], axis=1)[:, 0]
        c2 = np.take_along_axis(c2v, am[:, None], axis=1)[:, 0]
        jud2 = d2 < 256
        acc2 = d2 <= max(params.extend_distance, params.accept_distance)
        strong2 = d2 <= params.accept_distance
        t2 = qt_all[rr]
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
            vi = int(vmap[int(wins.argmax())])
            s3, o3 = s2, o2
            fit = _plateau_fit(query, corpus, rr[sl2][acc], fam, s2, o2)
            if fit is not None and abs(fit[0] - s2) <= 0.1 * abs(s2):
                s3, o3 = fit
            # A sample stands for the time around it: extend by half a sample, or to
            # the stream edge when the run reaches the first/last sample.
            q0 = 0.0 if first == 0 else max(0.0, float(qt_all[first]) - 0.5 * q_step)
            q1 = (query.duration_s if last == len(query) - 1 and query.duration_s > 0
                  else float(qt_all[last]) + 0.5 * q_step)
            if query.duration_s > 0:
                q1 = min(q1, query.duration_s)
            c0 = float(np.clip(s3 * q0 + o3, 0.0, c_end))
            c1 = float(np.clip(s3 * q1 + o3, 0.0, c_end))
            mean_d = float(da.mean())
            score = float(ratio * max(0.0, 1.0 - mean_d / 128.0))
            pairs = np.column_stack([qa, ca, da.astype(float)])
            out.append(RawSegment(q0, q1, c0, c1, s3, o3, vi, n_acc, n_jud, mean_d,
                                  round(score, 4), pairs, family=fam))
    return out


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
    return order[rank < per_frame]


def _lines_to_segments(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                       c_rows: np.ndarray, v_idx: np.ndarray, params: MatchParams,
                       found: list[RawSegment], dist: np.ndarray | None = None) -> list[RawSegment]:
    keep = _thin(q_rows, c_rows, v_idx, dist)
    qs = query.times_ns[q_rows[keep]] / 1e9
    cs = corpus.times_ns[c_rows[keep]] / 1e9
    new: list[RawSegment] = []
    alive = ~_explained(found, qs, cs, tol=2.0) if found else np.ones(qs.size, bool)
    # One line at a time: verify it, then drop every point the verified segments
    # explain, so the next vote runs on what is left.
    for _ in range(params.max_lines):
        idx = np.flatnonzero(alive)
        if idx.size < 2:
            break
        lines = find_lines(qs[idx], cs[idx], min_speed=params.min_speed, max_speed=params.max_speed,
                           min_votes=3.0, max_lines=1)
        if not lines:
            break
        slope, offset, inl = lines[0]
        segs = verify_line(query, corpus, slope, offset, params)
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
        if not any(_same_segment(s, k) for k in kept):
            kept.append(s)
    return kept


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
    if exclude_diagonal:
        found = [s for s in found if not (abs(s.speed - 1.0) < 0.05 and abs(s.offset) < 2.0)]
    searched = corpus.duration_s if searched_seconds is None else searched_seconds
    seeds = _seed_pairs(query, corpus, q_rows, c_rows, dist, extra)
    found = _dedupe(_assess(query, corpus, found, params, searched, exclude_diagonal, seeds))
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
            if a.chance > params.list_chance:
                continue
            piece.chance = a.chance
            piece.speed_low, piece.speed_high = a.speed_low, a.speed_high
            piece.weak = a.chance > params.max_chance
            out.append(piece)
    return out


# --------------------------------------------------------------------------- accounting


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
    cur_s = cur_e = None
    for s, e in sorted((min(a, b), max(a, b)) for a, b in spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s  # type: ignore[operator]
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s  # type: ignore[operator]
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
