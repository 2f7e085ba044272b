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
