"""Raw robot-dataset frames are read only where the sampler uses them (issue 38 item 5).

:func:`used_frames` picks, for a rate-only array, the frames the real-time sampler shows on its
grid; reading only those must give exactly the samples (and so the fingerprints) that reading
every frame gives. Checked against the sampler itself over many rates, grid rates and lengths
(odd rates, grid rates under 2 per second where frames must be filled in, episodes not starting
on a chunk boundary), then end to end on ALOHA (raw and JPEG), robomimic and zarr files with
chunks of one and of several frames, compressed and not: same fingerprints, fewer frames read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.core.ingest.frames import MAX_HOLD_S, sample_on_grid
from overlap_desktop.core.ingest.readers.arraydata import frame_time_ns, read_plan, used_frames


class _Frame:
    def __init__(self, i: int, t_ns: int) -> None:
        self.i = i
        self.t_ns = t_ns

    def to_rgb(self, width: int, height: int) -> np.ndarray:  # pragma: no cover - never converted here
        raise AssertionError


def _samples(frames: list[_Frame], fps: float, duration_s: float) -> list[tuple[int, int, int]]:
    return [(s.k, s.t_ns, s.frame.i) for s in sample_on_grid(frames, fps, duration_s=duration_s)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("n", [3, 7, 30, 301, 1000])
@pytest.mark.parametrize("rate", [2.0, 10.0, 15.0, 20.0, 29.97, 30.0, 50.0, 60.0, 1000.0 / 7])
@pytest.mark.parametrize("fps", [0.1, 0.7, 1.5, 4.0, 5.0, 7.3, 12.0])
def test_the_frames_read_give_exactly_the_samples_of_every_frame(n: int, rate: float, fps: float) -> None:
    every = [_Frame(i, frame_time_ns(i, rate)) for i in range(n)]
    keep = used_frames(n, rate, fps)
    if keep is None:
        assert fps >= rate or n <= 2
        return
    idx = list(keep)
    assert idx == sorted(set(idx)) and idx[0] == 0 and idx[-1] == n - 1
    gaps = np.diff([every[i].t_ns for i in idx])
    assert gaps.max(initial=0) <= MAX_HOLD_S * 1e9  # never a stretch the sampler reads as a gap
    duration = n / rate
    assert _samples([every[i] for i in idx], fps, duration) == _samples(every, fps, duration)
    if rate >= 4 * max(fps, 2.0) and n >= 100:
        assert len(idx) < n * 0.7  # the point: most frames are not read


def test_without_a_grid_rate_or_at_the_frame_rate_every_frame_is_read() -> None:
    assert used_frames(100, 30.0, None) is None  # previews and tools
    assert used_frames(100, 30.0, 30.0) is None
    assert used_frames(100, 1.5, 1.0) is None  # frames over 0.5 s apart: nothing to skip safely


def test_reads_cover_whole_chunk_rows_once_and_stay_bounded() -> None:
    plan = list(read_plan([0, 3, 9, 10, 13, 40], 4, 1000))
    assert plan == [(0, 4, [0, 3]), (8, 16, [9, 10, 13]), (40, 44, [40])]  # rows 2 and 3 in one read
    frame = 32 * 1024 * 1024  # two frames make a slab: adjacent rows are split there
    assert [(a, b) for a, b, _ in read_plan(range(5), 1, frame)] == [(0, 2), (2, 4), (4, 5)]
    assert [(a, b) for a, b, _ in read_plan(range(3), 1, 3 * frame)] == [(0, 1), (1, 2), (2, 3)]


# --------------------------------------------------------------------------- files end to end

RATE = 30.0
SIZE = (96, 72)


def _frames(n: int, seed: int) -> np.ndarray:
    from tests.rig import RigEpisode

    ep = RigEpisode(seed, 1)
    return np.stack([ep.frame(i / RATE, SIZE) for i in range(n)])


def _h5_custom(path: Path, frames: np.ndarray, **kw: Any) -> Path:
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        f.attrs["compress"] = False
        f.create_group("observations").create_group("images").create_dataset("cam", data=frames, **kw)
    return path


def _files(root: Path) -> list[tuple[str, Path]]:
    from tests.robotdata import write_aloha, write_robomimic, write_zarr

    a, b = _frames(97, 81), _frames(83, 82)
    return [
        ("aloha raw, a frame per chunk", write_aloha(root / "episode_1.hdf5", {"cam_high": a})),
        ("aloha jpeg", write_aloha(root / "j" / "episode_2.hdf5", {"cam_high": a}, compress=True)),
        ("hdf5 gzip, 8 frames per chunk", _h5_custom(root / "g" / "episode_3.hdf5", a, chunks=(8, 72, 96, 3),
                                                     compression="gzip")),
        ("hdf5 unfiltered, 5 frames per chunk", _h5_custom(root / "u" / "episode_4.hdf5", a, chunks=(5, 72, 96, 3))),
        ("hdf5 contiguous", _h5_custom(root / "c" / "episode_5.hdf5", a)),
        ("robomimic gzip, channels first", write_robomimic(root / "robomimic.hdf5", [{"agentview_image": a},
                                                                                       {"agentview_image": b}],
                                                           control_freq=RATE, chw=True)),
        ("zarr v2", write_zarr(root / "v2.zarr", [{"cam": a}, {"cam": b}])),
        ("zarr v3", write_zarr(root / "v3.zarr", [{"cam": b}, {"cam": a}], zarr_format=3)),
    ]


def _fingerprints(reader: Any, path: Path, stream: Any, config: Any, sample_fps: float | None) -> tuple[Any, int]:
    """The stream's fingerprints read with ``sample_fps`` (``None``: every frame), and the frames read.

    The reader is ``exact`` (RGB weighted by PDQ, as without a sampling rate), so only the frames
    read differ; the scaler's luma it uses when indexing is bounded by tests/unit/test_raw_luma.py.
    """
    from overlap_desktop.core.ingest.fingerprint import fingerprint_stream, variants_from_config

    reader.sample_fps = sample_fps
    exact, reader.exact = reader.exact, True
    try:
        seen = list(reader.frames(path, stream))
    finally:
        reader.exact = exact
    fp = fingerprint_stream(iter(seen), fps=float(config["index.fps"]), variants=variants_from_config(config),
                            duration_s=stream.duration_s, quality_floor=int(config["index.quality_floor"]),
                            static_seconds=float(config["index.static_seconds"]))
    return fp, len(seen)


def test_raw_datasets_give_the_same_fingerprints_reading_only_the_sampled_frames(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    pytest.importorskip("zarr")
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.readers import reader_for

    config = load_config(overrides={"index.frame_rate": RATE})
    fps = float(config["index.fps"])
    for name, path in _files(tmp_path):
        reader: Any = reader_for(path)
        reader.configure(config)
        assert reader.sample_fps == fps
        for s in reader.streams(path):
            every, n_all = _fingerprints(reader, path, s, config, None)
            sampled, n_read = _fingerprints(reader, path, s, config, fps)
            where = f"{name} {s.key}"
            assert n_all == s.extra["frames"], where
            assert n_read < n_all * 0.4, where  # 4 samples a second of 30 fps footage
            assert np.array_equal(sampled.times_ns, every.times_ns), where
            assert np.array_equal(sampled.codes, every.codes), where
            assert np.array_equal(sampled.quality, every.quality), where
            assert np.array_equal(sampled.usable, every.usable), where
            assert sampled.indeterminate == every.indeterminate and sampled.duration_s == every.duration_s, where


def test_a_preview_after_indexing_still_shows_the_exact_frame_the_sampler_skips(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.frames import scale_rgb
    from overlap_desktop.core.ingest.readers import reader_for
    from overlap_desktop.services.preview import frame_at
    from tests.robotdata import write_aloha

    frames = _frames(60, 83)
    path = write_aloha(tmp_path / "episode_7.hdf5", {"cam_high": frames})
    reader: Any = reader_for(path)  # the shared instance, as an indexing run leaves it
    saved = dict(vars(reader))
    reader.configure(load_config(overrides={"index.frame_rate": RATE}))
    try:
        keep = used_frames(60, RATE, reader.sample_fps)
        assert keep is not None and 33 not in set(keep)  # 1.1 s: between the grid's 1.0 and 1.25 s
        shown = frame_at(path, "observations/images/cam_high", 33 / RATE + 0.001)
        assert np.array_equal(shown, scale_rgb(frames[33], shown.shape[1], shown.shape[0]))
        assert reader.sample_fps == 4.0  # the preview used a copy
    finally:
        vars(reader).clear()
        vars(reader).update(saved)
