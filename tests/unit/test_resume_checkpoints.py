"""Checkpoints inside a stream (issue 34, item 6): the sampler continues exactly; saved progress
reads back only when whole."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from overlap_desktop.core.ingest.frames import GridState, sample_on_grid
from overlap_desktop.core.ingest.resume import StreamCheckpoint, load_resume, with_checkpoints
from overlap_desktop.core.types import NS_PER_S


class _Frame:
    """A frame that is only a time (the sampler never looks at pixels)."""

    def __init__(self, t_ns: int) -> None:
        self.t_ns = t_ns


def _times() -> list[int]:
    """30 fps with jitter, a duplicate time, and a 3 s hole (longer than the sampler holds a frame)."""
    rng = np.random.default_rng(5)
    t = [int(i * NS_PER_S / 30 + rng.integers(-3_000_000, 3_000_000)) for i in range(300)]
    t[40] = t[39]
    return sorted(t[:200]) + [x + 3 * NS_PER_S for x in sorted(t[200:])]


def _samples(frames: Iterator[_Frame] | list[_Frame], **kw: object) -> list[tuple[int, int, int]]:
    return [(s.k, s.t_ns, int(s.frame.t_ns)) for s in sample_on_grid(frames, 4.0, duration_s=14.0, **kw)]


@pytest.mark.parametrize("cut", [1, 7, 39, 40, 41, 199, 200, 201, 299])
def test_the_sampler_continues_from_a_saved_state_exactly(cut: int) -> None:
    """Stopped after reading frame ``cut`` and continued with the frames from it on, the grid
    samples are those of one uninterrupted pass: same indexes, times and frames."""
    frames = [_Frame(t) for t in _times()]
    whole = _samples(frames)
    state = GridState()
    taken: list[tuple[int, int, int]] = []
    it = sample_on_grid(iter(frames[:cut]), 4.0, state=state)
    for s in it:  # every sample before the last frame read is handed out before the next frame is asked for
        taken.append((s.k, s.t_ns, int(s.frame.t_ns)))
    saved = dataclasses.replace(state)
    assert saved.taken == cut and saved.last_t_ns == frames[cut - 1].t_ns - frames[0].t_ns
    # The stopped pass also emitted the samples after its last frame (the stream's end as it saw it);
    # keep only those before that frame's time, as a checkpoint does.
    before = [s for s in taken if s[1] < saved.last_t_ns]
    rest = _samples(frames[cut - 1:], resume=saved)
    assert before + rest == whole


def _checkpoint(seq: int, first_sample: int, n: int, hashed_before: int, variants: int = 2) -> StreamCheckpoint:
    rng = np.random.default_rng(seq)
    times = (np.arange(first_sample, first_sample + n, dtype=np.int64) * 250_000_000)
    grid = GridState(0, int(times[-1]) + 100, first_sample + n, int(times[-1]) + 250_000_000, 10 * (seq + 1))
    return StreamCheckpoint(grid, times, np.arange(hashed_before, hashed_before + n, dtype=np.int64),
                            rng.integers(0, 256, (n, variants, 32), dtype=np.uint8),
                            rng.integers(0, 100, n, dtype=np.uint8), np.zeros(n, bool), fraction=0.1 * (seq + 1),
                            seq=seq, samples=first_sample + n, hashed=hashed_before + n)


def test_saved_chunks_join_into_the_progress_they_were_cut_from() -> None:
    a, b = _checkpoint(0, 0, 16, 0), _checkpoint(1, 16, 32, 16)
    r = load_resume(b.state(), [a.chunk(), b.chunk()], variants=2)
    assert np.array_equal(r.times_ns, np.concatenate([a.times_ns, b.times_ns]))
    assert np.array_equal(r.codes, np.concatenate([a.codes, b.codes]))
    assert np.array_equal(r.sample_of, np.arange(48)) and r.chunks == 2 and r.grid == b.grid
    assert r.fraction == pytest.approx(0.2)


@pytest.mark.parametrize(("damage", "why"), [
    ("missing part", "1 of 2 parts present"),
    ("truncated part", "a part is unreadable"),
    ("other variants", "hashed images do not match"),
    ("other version", "another version"),
    ("not json", "unreadable"),
    ("state ahead of samples", "sample count does not match"),
])
def test_damaged_progress_is_refused_with_a_reason(damage: str, why: str) -> None:
    a, b = _checkpoint(0, 0, 16, 0), _checkpoint(1, 16, 32, 16)
    state, chunks, variants = b.state(), [a.chunk(), b.chunk()], 2
    if damage == "missing part":
        chunks = chunks[1:]
    elif damage == "truncated part":
        chunks[1] = chunks[1][:200]
    elif damage == "other variants":
        variants = 3
    elif damage == "other version":
        state = state.replace('"version": 1', '"version": 99')
    elif damage == "not json":
        state = state[:-5]
    else:
        state = state.replace('"samples": 48', '"samples": 60')
    with pytest.raises(ValueError, match=why):
        load_resume(state, chunks, variants=variants)


def test_checkpoints_come_every_so_much_footage_and_only_when_the_moment_suits() -> None:
    grid = GridState()
    frames = [_Frame(i * NS_PER_S // 10) for i in range(1000)]  # 100 s at 10 fps
    calls: list[int] = []
    ok = iter([False, True] * 10)

    def save() -> bool:
        calls.append(grid.last_t_ns)
        return next(ok)

    for _ in sample_on_grid(with_checkpoints(frames, grid, 30.0, save), 4.0, state=grid):
        pass
    # Refused once (a batch half full), taken at the next frame; then 30 s later.
    assert calls == [30 * NS_PER_S, 30_100_000_000, 60_100_000_000, 60_200_000_000, 90_200_000_000,
                     90_300_000_000]
