"""When a stream's picture does not change: static runs of PDQ codes, and dim cameras' noise.

A stretch where the identity code stays within :data:`STATIC_BITS` of the run's first sample
for ``static_seconds`` cannot be placed in time, so it is not used for matching ("static").
A dim camera's samples (contrast-stretched, ``prep.contrast_gains``) jitter with the sensor
noise, which widens "no change" (:func:`static_bits_for`) or, past :data:`DIM_NOISE_BITS`,
leaves the stream featureless (``fingerprint.fingerprint_stream`` applies both).
"""

from __future__ import annotations

import math

import numpy as np

from overlap_desktop.core.ingest.pdq_batch import hamming

__all__ = ["DIM_NOISE_BITS", "STATIC_BITS", "STATIC_JITTER_SPREAD", "quiet_step", "runs", "static_bits_for",
           "static_runs"]

#: Identity codes within this many bits of a run's first frame count as "no change".
STATIC_BITS = 12
#: In a dim camera's footage (mostly contrast-stretched samples: prep.contrast_gains) a still
#: scene's codes jitter with the sensor noise by more than STATIC_BITS. There "no change" is
#: widened to the jitter's upper tail, estimated from the quietest quarter ``q`` of the
#: stream's sample-to-sample steps as ``q + STATIC_JITTER_SPREAD * sqrt(q) + 1``: a dimmed
#: room measured q = 8 and up to 20-25 bits from a run's first sample while nothing moved; its
#: still stretches were otherwise judged moment by moment on their noise (and a copy of them,
#: which cannot be placed in time, would have read "new" rather than "can't tell"). Never wider
#: than twice STATIC_BITS: a moving arm's steps are larger than noise, not a reason to call it still.
STATIC_JITTER_SPREAD = 6.0
#: A dim camera whose quietest tenth of sample-to-sample steps still exceeds this many bits
#: gives codes that are mostly noise (fine texture under heavy sensor noise: a car park at half
#: its range measured 30-32, a dimmed room 6-8, a dimmed robot rig 14-18 while its arm moves):
#: its stretched samples are "featureless", as they were before the stretch.
DIM_NOISE_BITS = 24.0


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` index runs where ``mask`` is true."""
    if mask.size == 0:
        return []
    d = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def quiet_step(codes0: np.ndarray, pct: float = 10.0) -> float:
    """The ``pct`` percentile of the distances between consecutive codes (0 for fewer than 2)."""
    if codes0.shape[0] < 2:
        return 0.0
    return float(np.percentile(hamming(codes0[1:], codes0[:-1]), pct))


def static_bits_for(codes0: np.ndarray) -> int:
    """The "no change" distance of a dim camera's stream (see :data:`STATIC_JITTER_SPREAD`):
    :data:`STATIC_BITS`, or the upper tail of its noise jitter when that is wider."""
    if codes0.shape[0] < 8:
        return STATIC_BITS
    q = quiet_step(codes0, 25.0)
    wide = int(round(q + STATIC_JITTER_SPREAD * math.sqrt(q) + 1))
    return min(max(STATIC_BITS, wide), 2 * STATIC_BITS)


def static_runs(codes0: np.ndarray, min_len: int, static_bits: int = STATIC_BITS) -> list[tuple[int, int]]:
    """Runs of at least ``min_len`` samples whose codes stay within ``static_bits``
    of the run's first sample (anchored, so a slow drift is not called static)."""
    n = codes0.shape[0]
    out: list[tuple[int, int]] = []
    # Where the very next sample already differs no run can start: skip those fast.
    starts = np.flatnonzero(hamming(codes0[1:], codes0[:-1]) <= static_bits)
    i = 0
    while i < n:
        k = int(np.searchsorted(starts, i))
        if k >= starts.size:
            break
        i = int(starts[k])
        # Look ahead in growing chunks: linear in the stream length, not quadratic.
        j, chunk = i + 1, 16
        while j < n:
            d = hamming(codes0[j:j + chunk], codes0[i])
            far = np.flatnonzero(d > static_bits)
            if far.size:
                j += int(far[0])
                break
            j += d.shape[0]
            chunk = min(chunk * 2, 4096)
        if j - i >= min_len:
            out.append((i, j))
        i = j
    return out
