"""The reported speed interval spans every speed the frames fit as well (core/match/geometry.py)."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.geometry import profile_speed_interval
from overlap_desktop.core.types import StreamFingerprints, Variant

RNG = np.random.default_rng(11)


def fp(codes: np.ndarray, fps: float) -> StreamFingerprints:
    n = codes.shape[0]
    return StreamFingerprints((np.arange(n) * 1e9 / fps).astype(np.int64), np.full(n, 90, np.uint8),
                              codes[:, None, :], (Variant(),), np.ones(n, bool), [], fps, n / fps)


def _copy(owned: np.ndarray, speed: float, seconds: int) -> np.ndarray:
    """The owned footage (4 samples a second) played at ``speed``, sampled once a second."""
    return np.stack([owned[int(round(4 * speed * t))] for t in range(seconds)])


def test_a_slope_fitted_a_little_off_still_holds_the_true_speed() -> None:
    owned = RNG.integers(0, 256, (80, 32), dtype=np.uint8)  # 20 s, every sample distinct
    q = fp(_copy(owned, 1.0, 12), 1.0)
    lo, hi = profile_speed_interval(q, fp(owned, 4.0), np.arange(12), 1.01, 0.0)
    assert lo <= 1.0 <= hi and hi - lo < 0.1


def test_a_slowed_copy_is_not_said_to_fit_normal_speed() -> None:
    owned = RNG.integers(0, 256, (80, 32), dtype=np.uint8)
    q = fp(_copy(owned, 0.5, 16), 1.0)
    lo, hi = profile_speed_interval(q, fp(owned, 4.0), np.arange(16), 0.5, 0.0)
    assert lo <= 0.5 <= hi < 0.9
