"""A verified line keeps normal speed unless its frames say otherwise (core/match/verify.py, issue 33).

A dim camera's noisy codes or a still stretch leave every neighbouring owned frame about as close,
and the fit wandered a few percent off 1x (read as a speed change, which the chance figure weighs
as rarer). The look-alike of that rule: a real small speed change is still reported as such.
"""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.match.verify import verify_line
from overlap_desktop.core.types import StreamFingerprints, Variant

RNG = np.random.default_rng(33)
OWNED_FPS = 4.0


def fp(codes: np.ndarray, times_s: np.ndarray, fps: float) -> StreamFingerprints:
    n = codes.shape[0]
    return StreamFingerprints((times_s * 1e9).astype(np.int64), np.full(n, 90, np.uint8), codes[:, None, :],
                              (Variant(),), np.ones(n, bool), [], fps, float(times_s[-1]) + 1.0 / fps)


def noisy(code: np.ndarray, bits: int) -> np.ndarray:
    """``code`` with ``bits`` random bits flipped."""
    flat = np.unpackbits(code.copy())
    flat[RNG.choice(flat.size, bits, replace=False)] ^= 1
    return np.packbits(flat)


STILL = RNG.integers(0, 256, 32, dtype=np.uint8)


def owned_moving_then_still(seconds: float = 16.0, still_from: float = 8.0) -> StreamFingerprints:
    """Owned footage at 4 samples/s: moving (a new picture each sample), then still from ``still_from``
    on (one picture, each sample with its own sensor noise, as on a dim camera)."""
    t = np.arange(0.0, seconds, 1.0 / OWNED_FPS)
    codes = np.stack([RNG.integers(0, 256, 32, dtype=np.uint8) if x < still_from else noisy(STILL, 10) for x in t])
    return fp(codes, t, OWNED_FPS)


def offered_at(owned: StreamFingerprints, speed: float, start: float, seconds: float,
               still_from: float = 99.0) -> StreamFingerprints:
    """A copy sampled once a second, owned time ``start + speed * t``, each code a re-encode (6 bits
    off); from owned ``still_from`` on the still picture under its own noise (as far from every
    owned still sample)."""
    t = np.arange(0.0, seconds, 1.0)
    ot = owned.times_ns / 1e9
    rows = [int(np.argmin(np.abs(ot - (start + speed * x)))) for x in t]
    return fp(np.stack([noisy(STILL, 10) if ot[r] >= still_from else noisy(owned.codes[r, 0], 6) for r in rows]),
              t, 1.0)


def test_a_copy_running_into_a_noisy_still_stretch_keeps_normal_speed() -> None:
    owned = owned_moving_then_still()
    offered = offered_at(owned, 1.0, 2.0, 12.0, still_from=8.0)
    [seg] = verify_line(offered, owned, 0.95, 2.0, MatchParams())
    assert seg.speed == 1.0, seg
    assert abs(seg.offset - 2.0) <= 0.25, seg


def test_a_real_small_speed_change_is_still_reported() -> None:
    owned = owned_moving_then_still(seconds=24.0, still_from=99.0)  # moving throughout
    offered = offered_at(owned, 0.94, 2.0, 20.0)
    [seg] = verify_line(offered, owned, 1.0, 2.0, MatchParams())
    assert abs(seg.speed - 0.94) <= 0.01, seg
