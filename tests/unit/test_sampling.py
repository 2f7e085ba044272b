"""The real-time sampler: the frame *shown* at each grid point k / fps."""

from __future__ import annotations

import bisect
import warnings

import numpy as np
import pytest

from overlap_desktop.core.ingest.frames import (
    ArrayFrame,
    LowSampleRateWarning,
    check_sample_rate,
    grid_time_ns,
    sample_on_grid,
    scale_rgb,
)
from overlap_desktop.core.types import NS_PER_S, CancelToken
from overlap_desktop.errors import Cancelled


class FakeFrame:
    """A frame that counts pixel conversions (the sampler must never convert)."""

    conversions = 0

    def __init__(self, t_ns: int, label: int) -> None:
        self.t_ns = t_ns
        self.label = label

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        FakeFrame.conversions += 1
        return np.full((height, width, 3), self.label % 256, np.uint8)


def frames_at(times_s: list[float], offset_s: float = 0.0) -> list[FakeFrame]:
    return [FakeFrame(int(round((t + offset_s) * NS_PER_S)), i) for i, t in enumerate(times_s)]


def brute_force(times_ns: list[int], fps: float, end_ns: int, *, hold_ns: int | None = None) -> list[int]:
    """Index of the last frame with time <= g for each grid time g <= end (with ``hold_ns``:
    only grid times less than ``hold_ns`` after that frame)."""
    t0 = times_ns[0]
    rel = [t - t0 for t in times_ns]
    out = []
    k = 0
    while grid_time_ns(k, fps) <= end_ns:
        g = grid_time_ns(k, fps)
        i = bisect.bisect_right(rel, g) - 1
        if hold_ns is None or g - rel[i] < hold_ns:
            out.append(i)
        k += 1
    return out


@pytest.mark.parametrize("rate", [29.97, 23.976, 15.0, 30000 / 1001, 60.0, 7.0])
@pytest.mark.parametrize("fps", [4.0, 1.0, 2.5])
def test_constant_odd_rates_match_brute_force(rate: float, fps: float) -> None:
    times = [i / rate for i in range(int(rate * 7.3))]
    frames = frames_at(times)
    got = [s.frame.label for s in sample_on_grid(frames, fps)]
    ns = [f.t_ns for f in frames]
    assert got == brute_force(ns, fps, ns[-1] - ns[0])


def test_vfr_timestamps_pick_frame_on_screen() -> None:
    rng = np.random.default_rng(5)
    gaps = rng.choice([1 / 60, 1 / 30, 1 / 10, 0.7, 2.0], size=80)
    times = np.concatenate(([0.0], np.cumsum(gaps))).tolist()
    frames = frames_at(times)
    gaps_seen: list[tuple[int, int]] = []
    samples = list(sample_on_grid(frames, 4.0, on_gap=lambda a, n: gaps_seen.append((a, n))))
    ns = [f.t_ns for f in frames]
    # A frame is held at most MAX_HOLD_S (1 s): a 2 s gap shows it on 4 grid points, then the
    # grid resumes at the next frame; frame_no tells the caller the held points are one frame.
    assert [s.frame.label for s in samples] == brute_force(ns, 4.0, ns[-1], hold_ns=NS_PER_S)
    held = [s for s in samples if s.frame.label == samples[-1].frame.label]
    assert len({s.frame_no for s in held}) == 1
    assert [s.t_ns for s in samples] == [grid_time_ns(s.k, 4.0) for s in samples]
    assert len(gaps_seen) == int(np.sum(gaps == 2.0))


def test_first_pts_not_zero_is_relative() -> None:
    times = [i / 25 for i in range(100)]
    a = [s.frame.label for s in sample_on_grid(frames_at(times), 4.0)]
    b = [s.frame.label for s in sample_on_grid(frames_at(times, offset_s=3600.123), 4.0)]
    assert a == b
    assert len(a) == int(99 / 25 * 4) + 1


def test_trim_at_arbitrary_phase_lands_within_half_a_grid_step() -> None:
    # The same 30 fps footage cut at 1.37 s: every grid point of the copy shows a frame
    # whose source time is within one source frame of a corpus sample time + phase.
    src = [i / 30 for i in range(300)]
    cut = [t - 1.37 for t in src if t >= 1.37]
    copy = [s.frame.label for s in sample_on_grid(frames_at(cut), 4.0)]
    first = next(i for i, t in enumerate(src) if t >= 1.37)
    for k, label in enumerate(copy):
        source_t = src[first + label]
        assert abs(source_t - (1.37 + k / 4.0)) <= 1 / 30 + 1e-9


def test_duplicates_and_backwards_times_are_tolerated() -> None:
    t = [0.0, 0.1, 0.1, 0.2, 0.15, 0.3, 0.3, 0.3, 1.0]
    frames = frames_at(t)
    samples = list(sample_on_grid(frames, 4.0))
    # Equal times keep the last frame; a frame going back in time replaces its predecessor.
    assert [s.frame.label for s in samples] == [0, 4, 7, 7, 8]
    assert all(b.t_ns > a.t_ns for a, b in zip(samples, samples[1:]))


def test_duration_extends_the_grid_past_the_last_frame() -> None:
    frames = frames_at([0.0, 0.5, 1.0])
    assert len(list(sample_on_grid(frames, 4.0))) == 5
    assert len(list(sample_on_grid(frames_at([0.0, 0.5, 1.0]), 4.0, duration_s=2.0))) == 8
    # A header promising far more than was decoded does not pad with the last frame.
    assert len(list(sample_on_grid(frames_at([0.0, 0.5, 1.0]), 4.0, duration_s=600.0))) == 8


def test_sampler_never_converts_pixels_and_empty_input() -> None:
    FakeFrame.conversions = 0
    list(sample_on_grid(frames_at([i / 30 for i in range(90)]), 4.0))
    assert FakeFrame.conversions == 0
    assert list(sample_on_grid([], 4.0)) == []


def test_bad_rate_and_cancel() -> None:
    with pytest.raises(ValueError):
        list(sample_on_grid(frames_at([0.0]), 0.0))
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        list(sample_on_grid(frames_at([0.0, 1.0]), 4.0, cancel=token))


def test_low_fps_warns_once_per_call() -> None:
    with pytest.warns(LowSampleRateWarning):
        msg = check_sample_rate(2.0)
    assert msg and "2 fps" in msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_sample_rate(4.0) is None
        assert check_sample_rate(1.0, warn=False) is not None
    with pytest.raises(ValueError):
        check_sample_rate(float("nan"))


def test_array_frame_scales_through_swscale() -> None:
    import av

    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(90, 120, 3), dtype=np.uint8)
    f = ArrayFrame(123, rgb)
    out = f.to_rgb(64, 48)
    ref = av.VideoFrame.from_ndarray(rgb, format="rgb24").to_ndarray(
        width=64, height=48, format="rgb24", interpolation="AREA")
    assert out.shape == (48, 64, 3) and out.dtype == np.uint8
    assert np.array_equal(out, ref)
    assert f.t_ns == 123
    # Gray, RGBA and 16-bit inputs are accepted.
    assert scale_rgb(rgb[:, :, 0], 32, 32).shape == (32, 32, 3)
    assert scale_rgb(np.dstack([rgb, rgb[:, :, :1]]), 32, 32).shape == (32, 32, 3)
    assert scale_rgb(rgb.astype(np.uint16) * 257, 120, 90).tolist() == rgb.tolist()
