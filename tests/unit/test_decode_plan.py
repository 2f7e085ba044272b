"""Deciding which frames the sampler uses before decoding them (core/ingest/decode_plan.py)."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.ingest.decode_plan import SamplePlan
from overlap_desktop.core.ingest.frames import ArrayFrame, sample_on_grid

_PIX = np.zeros((2, 2, 3), np.uint8)


def _chosen(times: list[int], keep: list[bool], fps: float) -> list[tuple[int, int]]:
    frames = [ArrayFrame(t, _PIX) for t, k in zip(times, keep) if k]
    ids = {id(f): t for f, t in zip(frames, [t for t, k in zip(times, keep) if k])}
    return [(s.t_ns, ids[id(s.frame)]) for s in sample_on_grid(frames, fps)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fps", [4.0, 2.5, 10.0])
def test_skipping_unneeded_frames_never_changes_what_the_sampler_picks(seed: int, fps: float) -> None:
    rng = np.random.default_rng(seed)
    # Variable frame rate with jitter, bursts and pauses up to 0.7 s.
    gaps = rng.choice([1 / 60, 1 / 30, 1 / 25, 1 / 12, 0.3, 0.7], size=400, p=[.3, .3, .2, .1, .07, .03])
    times = [0] + [int(x) for x in np.cumsum(gaps * 1e9 + rng.integers(-2_000_000, 2_000_000, gaps.size))]
    plan = SamplePlan(fps)
    keep, last = [], None
    for i, t in enumerate(times):
        nxt = times[i + 1] if i + 1 < len(times) else None
        need = plan.needed(t, nxt, last)
        keep.append(need)
        if need:
            last = t
    assert _chosen(times, keep, fps) == _chosen(times, [True] * len(times), fps)
    assert sum(keep) < len(keep)  # something was skipped


def test_plan_guards() -> None:
    plan = SamplePlan(4.0)
    assert plan.needed(0, 40_000_000, None)  # the first frame
    assert plan.needed(260_000_000, None, 240_000_000)  # next frame unknown
    assert not plan.needed(260_000_000, 300_000_000, 240_000_000)  # no grid point in [0.26, 0.30)
    assert plan.needed(240_000_000, 280_000_000, 200_000_000)  # 0.25 s lies in [0.24, 0.28)
    # Never more than MAX_SKIP_SPAN_S after the last decoded frame.
    assert plan.needed(760_000_000, 780_000_000, 200_000_000)
    with pytest.raises(ValueError):
        SamplePlan(0.0)


def test_integer_packet_times_round_like_fractions() -> None:
    """The reader's integer time arithmetic gives the times ``round(Fraction)`` gave before."""
    from fractions import Fraction

    from overlap_desktop.core.ingest.readers.packet_feed import ns_of as _ns_of

    rng = np.random.default_rng(3)
    bases = [Fraction(1, 90000), Fraction(1, 12288), Fraction(1001, 30000), Fraction(1, 1000), Fraction(1, 2)]
    for tb in bases:
        pts = [0, 1, 3, 5, 7, -3, 2**40 + 1] + rng.integers(-10**9, 10**12, 200).tolist()
        for p in pts:
            assert _ns_of(p, tb.numerator * 1_000_000_000, tb.denominator) == int(round(p * tb * 1_000_000_000))
    # Exact halves go to the even neighbour, as Python's round does.
    assert _ns_of(1, 1, 2) == 0 and _ns_of(3, 1, 2) == 2 and _ns_of(-1, 1, 2) == 0
