"""Owned footage that repeats itself (a loop): votes per repetition, distinct moments."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.lines import find_lines
from overlap_desktop.core.match.repeating import distinct_states, repeat_weights

RNG = np.random.default_rng(7)


def test_a_moving_picture_passes_through_distinct_moments_and_a_still_one_through_one() -> None:
    moving = RNG.integers(0, 256, (10, 32), dtype=np.uint8)
    still = np.repeat(moving[:1], 10, axis=0)
    assert distinct_states(moving, 12) == 10
    assert distinct_states(still, 12) == 1


def _loop_points(period: float, repetitions: int, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Each offered second t matches owned t + 3.25 + k * period, for every repetition k."""
    q = np.repeat(np.arange(frames, dtype=float), repetitions)
    c = q + 3.25 + np.tile(np.arange(repetitions) * period, frames)
    return q, c


def test_in_a_loop_each_repetition_gets_a_whole_vote_and_lines_are_drawn() -> None:
    """Shared among 8 repetitions, 6 frames give each line 0.75 of the 3 votes it needs; with a
    whole vote per repetition, each line has 6."""
    q, c = _loop_points(6.0, 8, 6)
    assert find_lines(q, c, min_votes=3.0, max_lines=1) == []
    w = repeat_weights(q, c)
    assert w is not None and np.allclose(w, 1.0)
    [(slope, offset, _)] = find_lines(q, c, min_votes=3.0, max_lines=1, weights=w)
    assert abs(slope - 1.0) < 0.05 and min(abs(offset - 3.25 - 6.0 * k) for k in range(8)) < 0.5


def test_a_still_stretch_keeps_one_shared_vote() -> None:
    """An offered frame matching a whole still stretch of owned time (one wide place) is not a
    repetition: its vote stays shared, so it cannot outvote a real line."""
    q = np.repeat(np.arange(6, dtype=float), 12)
    c = np.tile(np.arange(12) * 0.25 + 10.0, 6)  # 3 s of owned still time
    assert repeat_weights(q, c) is None
