"""Raw frames scaled through one kept picture, and their luma from the scaler (issue 38 item 5).

The robot-dataset readers hand raw arrays to the fingerprint through a per-stream
:class:`ArrayScaler`: its RGB is :func:`scale_rgb`'s bit for bit, and when indexing the frames
hand out swscale's luma (``LumaArrayFrame``) instead of RGB that PDQ then weights. That luma may
differ from the exact weighting by rounding only: here it is bounded per pixel and in PDQ bits,
and each bound is checked against a control (another moment of the same footage) that breaks it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.frames import ArrayFrame, ArrayScaler, LumaArrayFrame, scale_rgb
from tests.rig import RigEpisode

#: Mean and largest absolute difference (levels of 255) allowed between the scaler's luma and PDQ's
#: weighting of the scaled RGB. swscale weights in fixed point before scaling, PDQ in float after:
#: measured 0.16-0.30 mean at 84x84 to 1280x720, on the rig, saturated colours and noise; at most
#: 1.1 but 3.5 on saturated colours at 640x480 (the scaled RGB clips there, its luma does not).
#: (The video reader's luma, which also undoes YUV, is allowed 2.5 levels mean.)
MEAN_LEVELS = 0.5
MAX_LEVELS = 4.0
#: PDQ bits (every variant of every informative sample) allowed between the two ways; measured
#: 0.7 mean, at most 4 on the generated rig (bench/bench_rawframes.py drift: 1.16 / 4 / 20 pooled
#: over real clips), less than the video reader's luma (1.36 / 4 / 82) and far under one grid step.
MEAN_BITS = 2.0
MAX_BITS = 12

SIZES = [(640, 480), (84, 84), (427, 241), (192, 192), (1280, 720)]


def _rig(t: float, size: tuple[int, int]) -> np.ndarray:
    return RigEpisode(5, 1).frame(t, size)


def _close(y: np.ndarray, ref: np.ndarray) -> bool:
    d = np.abs(y.astype(np.float32) - ref)
    return float(d.mean()) <= MEAN_LEVELS and float(d.max()) <= MAX_LEVELS


@pytest.mark.parametrize("size", SIZES)
def test_the_scalers_rgb_is_scale_rgb_bit_for_bit(size: tuple[int, int]) -> None:
    rng = np.random.default_rng(1)
    scaler = ArrayScaler()
    a, b = _rig(1.0, size), rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    chw = np.ascontiguousarray(np.moveaxis(a, -1, 0))
    for img in (a, b, np.moveaxis(chw, 0, -1), a.astype(np.float32) / 255.0, a[:, :, 1]):
        for w, h in ((192, 192), (64, 48)):
            assert np.array_equal(scaler.rgb(img, w, h), scale_rgb(img, w, h))
    # One picture serves every frame of a stream, in any order: the first frame again is unchanged.
    first = np.array(scaler.rgb(a, 192, 192))
    scaler.rgb(b, 192, 192)
    assert np.array_equal(scaler.rgb(a, 192, 192), first)


@pytest.mark.parametrize("size", SIZES)
def test_the_scalers_luma_is_within_rounding_of_pdq_weighting(size: tuple[int, int]) -> None:
    rng = np.random.default_rng(2)
    scaler = ArrayScaler()
    w = h = prep.WORK_SIZE
    saturated = rng.integers(0, 2, (size[1], size[0], 3), dtype=np.uint8) * 255
    for img in (_rig(1.0, size), saturated, rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)):
        y = scaler.luma(img, w, h)
        assert y.dtype == np.uint8 and y.shape == (h, w)
        assert _close(y, prep.luma(scale_rgb(img, w, h)))
    # Control: the luma of the next grid sample (0.25 s later) of the same camera is not within them.
    assert not _close(scaler.luma(_rig(1.25, size), w, h), prep.luma(scale_rgb(_rig(1.0, size), w, h)))


def _codes(frames: list[Any]) -> Any:
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.fingerprint import fingerprint_stream, variants_from_config

    return fingerprint_stream(frames, fps=4.0, variants=variants_from_config(load_config()), duration_s=10.0)


def _bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.unpackbits(np.bitwise_xor(a, b), axis=-1).sum(axis=-1).ravel()


@pytest.mark.parametrize("size", [(640, 480), (128, 128)])
def test_fingerprints_from_the_scalers_luma_stay_within_a_few_bits_of_the_exact_path(size: tuple[int, int]) -> None:
    ep = RigEpisode(5, 1)
    times = [i / 4 for i in range(40)]
    pixels = [ep.frame(t, size) for t in times]
    ns = [int(round(t * 1e9)) for t in times]
    scaler = ArrayScaler()
    exact = _codes([ArrayFrame(t, p) for t, p in zip(ns, pixels)])
    fast = _codes([LumaArrayFrame(t, p, scaler) for t, p in zip(ns, pixels)])
    ok = exact.quality >= 50
    assert ok.sum() >= 30
    d = _bits(exact.codes[ok], fast.codes[ok])
    assert d.mean() <= MEAN_BITS and d.max() <= MAX_BITS, (d.mean(), d.max())
    # Control: the same luma one grid step late (each sample showing the next sample's frame).
    late = _codes([LumaArrayFrame(t, p, scaler) for t, p in zip(ns, pixels[1:] + pixels[-1:])])
    c = _bits(exact.codes[ok], late.codes[ok])
    assert c.mean() > MEAN_BITS and c.max() > MAX_BITS, (c.mean(), c.max())


def _robot_files(root: Path) -> list[Path]:
    from tests.robotdata import write_aloha, write_robomimic, write_zarr

    a = np.stack([_rig(i / 30, (96, 72)) for i in range(45)])
    return [write_aloha(root / "episode_0.hdf5", {"cam_high": a}),
            write_robomimic(root / "demo.hdf5", [{"agentview_image": a}], control_freq=30.0, chw=True),
            write_zarr(root / "buffer.zarr", [{"cam": a}])]


@pytest.mark.parametrize(("sample_fps", "exact", "luma"), [(4.0, False, True), (4.0, True, False),
                                                          (None, False, False)])
def test_raw_readers_hand_out_luma_only_when_indexing(tmp_path: Path, sample_fps: float | None, exact: bool,
                                                     luma: bool) -> None:
    """Indexing (a sampling rate, not ``exact``) gets the scaler's luma; an exact reader and a reader
    for the eye (previews) get RGB only, the pixels of :func:`scale_rgb`."""
    pytest.importorskip("h5py")
    pytest.importorskip("zarr")
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.readers.hdf5.aloha import AlohaReader
    from overlap_desktop.core.ingest.readers.hdf5.robomimic import RobomimicReader
    from overlap_desktop.core.ingest.readers.zarrbuf.reader import ZarrReader

    config = load_config(overrides={"index.frame_rate": 30.0})
    for cls, path in zip((AlohaReader, RobomimicReader, ZarrReader), _robot_files(tmp_path)):
        reader = cls(config=config, sample_fps=sample_fps, exact=exact)
        [info] = reader.streams(path)
        frames = list(reader.frames(path, info))
        assert frames and all(hasattr(f, "to_luma") == luma for f in frames), cls.__name__
        f = frames[-1]
        assert np.array_equal(f.to_rgb(192, 192), scale_rgb(f.rgb, 192, 192)), cls.__name__
        if luma:
            assert _close(f.to_luma(192, 192), prep.luma(scale_rgb(f.rgb, 192, 192))), cls.__name__


@pytest.mark.parametrize(("zarr_format", "compressor", "chunk_steps", "missing", "direct"), [
    (2, "default", 1, False, True),  # blosc, one step a chunk: what diffusion policy writes
    (2, None, 1, False, True),  # stored raw
    (3, "blosc", 1, False, True),
    (2, "default", 4, False, True),  # several steps a chunk, episodes not on chunk boundaries
    (2, "default", 1, True, True),  # a chunk not stored: zarr fills it
    (3, "default", 1, False, False),  # zstd: left to zarr
    (2, None, 4, False, False),  # raw chunks of several steps: left to zarr
])
def test_zarr_rows_decoded_by_the_reader_are_zarrs_own_pixels(tmp_path: Path, zarr_format: int, compressor: str | None,
                                                              chunk_steps: int, missing: bool, direct: bool) -> None:
    """The zarr reader decodes blosc and raw chunk rows itself (zarr's per-call machinery cost 4x the
    decompression): the steps it hands out are the ones zarr reads, in every layout it takes on."""
    zarr = pytest.importorskip("zarr")
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.readers.zarrbuf.layout import array_spec
    from overlap_desktop.core.ingest.readers.zarrbuf.reader import ZarrReader
    from tests.robotdata import write_zarr

    frames = np.stack([_rig(i / 30, (64, 48)) for i in range(40)])
    codec = zarr.codecs.BloscCodec() if compressor == "blosc" else compressor
    path = write_zarr(tmp_path / "b.zarr", [{"cam": frames[:25]}, {"cam": frames[25:]}], zarr_format=zarr_format,
                      compressor=codec, chunk_steps=chunk_steps)
    if missing:
        (path / "data" / "cam" / "1.0.0.0").unlink()
    spec = array_spec(path / "data" / "cam")
    assert spec is not None and spec.direct() == direct
    stored = np.asarray(zarr.open_group(str(path), mode="r")["data"]["cam"][:])
    assert not missing or not stored[1].any()  # the fill value, not the frame written
    for sample_fps in (None, 4.0):
        reader = ZarrReader(config=load_config(overrides={"index.frame_rate": 30.0}), sample_fps=sample_fps)
        for info in reader.streams(path):
            start = info.extra["steps"][0]
            got = {round(f.t_ns * 30 / 1e9): np.asarray(f.rgb) for f in reader.frames(path, info)}
            assert len(got) == info.extra["frames"] if sample_fps is None else 3 <= len(got) < info.extra["frames"]
            for k, px in got.items():
                assert np.array_equal(px, stored[start + k]), (info.key, k)
