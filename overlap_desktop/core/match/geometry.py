"""Geometry every matching stage shares: a line fitted through (query second, corpus second)
points, and the corpus frames nearest a line. It sits below the stages (lines, verify,
evidence), so none of them needs another for it."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.types import StreamFingerprints

__all__ = ["PROFILE_BITS", "fit_line", "line_neighbours", "profile_speed_interval"]


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


#: Speeds whose line fits the frames this close (mean distance, bits) to the best one are as
#: good an account of them (the same tolerance as keeping a line at normal speed, verify.py).
PROFILE_BITS = 1.0
#: The speeds tried, as factors of the fitted one (both sides, pivoting on the piece's centre).
_PROFILE_FACTORS = np.geomspace(0.8, 1.25, 61)


def profile_speed_interval(query: StreamFingerprints, corpus: StreamFingerprints, q_rows: np.ndarray,
                           slope: float, offset: float, variants: np.ndarray | None = None,
                           accept: int = 64) -> tuple[float, float]:
    """The speeds whose line, pivoting on the frames' centre, fits them within :data:`PROFILE_BITS`
    of the best (mean distance to the owned frames around the line, over the frames within
    ``accept`` bits on the fitted line): the range of speeds the frames cannot tell apart.

    The fit's residuals alone understate it: each frame's owned match is taken on the fitted line,
    so it sits within a sample of it whatever the true speed (a 12 s re-encode measured 1.044x,
    its residual interval 1.021-1.067; 1x fits it as well). Returns ``(low, high)`` in the slope's
    sign; the fitted slope itself when fewer than two frames fit."""
    q_rows = np.asarray(q_rows, np.int64)
    d0 = line_neighbours(query, corpus, q_rows, slope, offset, variants)[0].min(axis=1)
    rows = q_rows[d0 <= accept]
    if rows.size < 2 or slope == 0:
        return slope, slope
    qt = query.times_ns[rows] / 1e9
    tm = float(qt.mean())
    cm = slope * tm + offset
    means = np.array([float(line_neighbours(query, corpus, rows, slope * f, cm - slope * f * tm, variants)[0]
                            .min(axis=1).mean()) for f in _PROFILE_FACTORS])
    ok = means <= means.min() + PROFILE_BITS
    centre = int(np.argmin(np.abs(_PROFILE_FACTORS - 1.0)))
    lo_i = hi_i = centre
    while lo_i > 0 and ok[lo_i - 1]:
        lo_i -= 1
    while hi_i < ok.size - 1 and ok[hi_i + 1]:
        hi_i += 1
    if not ok[centre]:
        return slope, slope
    a, b = slope * float(_PROFILE_FACTORS[lo_i]), slope * float(_PROFILE_FACTORS[hi_i])
    return (a, b) if a <= b else (b, a)
