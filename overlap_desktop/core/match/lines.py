"""Segment matching: from frame matches to lines in the query-time x corpus-time plane.

Copied footage forms straight lines in the (query seconds, corpus seconds) plane.
The slope is the playback speed of the offered copy relative to the owned original
(corpus seconds advanced per offered second: 0.5 for a copy slowed to half speed,
negative for reversed playback), and the offset says where in the owned file the
copy starts. Everything here works in real seconds, never in frame numbers, so a
manifest sampled at 1 fps compares against an index sampled at 2, 4 or 8 fps.

Line candidates come from Hough voting over (slope, offset): every point (a seed from the
candidate search, :mod:`.candidates`) votes for every slope on a logarithmic grid (0.2x..5x,
both signs); points of one query frame share one vote, so a static shot matching many corpus
frames cannot outvote a real line. The winning bin is refined by least squares on its
inliers. Each line is then verified along the full fingerprints (:mod:`.verify`); the order of
the stages for one stream pair is in :mod:`.pair`.
"""


from __future__ import annotations

import math

import numpy as np

from overlap_desktop.core.match.geometry import fit_line

__all__ = ["find_lines"]


# --------------------------------------------------------------------------- line fitting


def _slope_grid(min_speed: float, max_speed: float, step: float = 0.025) -> np.ndarray:
    mags = np.exp(np.arange(math.log(min_speed), math.log(max_speed) + step, step))
    return np.concatenate([mags, -mags])


def find_lines(q: np.ndarray, c: np.ndarray, *, min_speed: float = 0.2, max_speed: float = 5.0,
               min_votes: float = 2.0, bin_seconds: float = 0.6, tol_seconds: float = 0.75,
               max_lines: int = 32, weights: np.ndarray | None = None) -> list[tuple[float, float, np.ndarray]]:
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
        weights: Each point's vote (default: one vote per distinct query time, shared among
            its points).

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
    weight = 1.0 / counts[inv] if weights is None else np.asarray(weights, float)
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
