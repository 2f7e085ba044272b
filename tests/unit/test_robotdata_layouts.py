"""Robot-dataset reader rules without files: frame layouts, rates, the Example decoder, chunk checks."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.ingest.readers._bounded import Budget
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import frame_layout, frame_rate
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.ingest.readers.rlds.example import parse_example
from overlap_desktop.core.ingest.readers.rlds.reader import image_features
from overlap_desktop.core.ingest.readers.zarrbuf.layout import ArraySpec
from overlap_desktop.errors import MediaError

LIMITS = ReaderLimits()


def test_frame_layouts() -> None:
    hwc = frame_layout((100, 480, 640, 3), np.uint8, LIMITS)
    assert hwc is not None and (hwc.width, hwc.height, hwc.chw, hwc.frame_bytes) == (640, 480, False, 921600)
    chw = frame_layout((100, 3, 84, 84), np.uint8, LIMITS)
    assert chw is not None and chw.chw and (chw.width, chw.height) == (84, 84)
    assert frame_layout((100, 96, 96, 3), np.float32, LIMITS) is not None  # push-T stores floats
    # Not cameras: depth, low-dimensional state, 5-D arrays, strings.
    for shape, dtype in (((100, 84, 84, 1), np.float32), ((100, 7), np.float64), ((2, 100, 8, 8, 3), np.uint8),
                         ((100, 84, 84, 3), np.int64)):
        assert frame_layout(shape, dtype, LIMITS) is None
    with pytest.raises(ImageError):
        frame_layout((10, 60000, 60000, 3), np.uint8, LIMITS)
    with pytest.raises(ImageError):
        frame_layout((10**9, 64, 64, 3), np.uint8, LIMITS)


def test_a_stored_rate_wins_and_a_missing_one_names_the_option() -> None:
    p = Path("episode_1.hdf5")
    assert frame_rate(20.0, 50.0, path=p, stored_from="x") == (20.0, "stored (x)")
    assert frame_rate(None, 50.0, path=p, stored_from="x") == (50.0, "--frame-rate (index.frame_rate)")
    with pytest.raises(MediaError, match="--frame-rate HZ") as info:
        frame_rate(None, None, path=p, stored_from="x")
    assert info.value.path == "episode_1.hdf5"
    for bad in (0.0, -1.0, float("nan"), float("inf"), 1e6):
        with pytest.raises(MediaError, match="unusable frame rate"):
            frame_rate(bad, 50.0, path=p, stored_from="x")


def test_example_decoder_reads_what_protobuf_writes() -> None:
    from tests.robotdata import encode_example

    data = encode_example({"steps/observation/image": [b"\xff\xd8a", b"", b"\xff\xd8bc"],
                           "steps/is_first": np.array([1, 0, -3], np.int64),
                           "steps/action": np.array([0.5, -2.0], np.float32)})
    feats = parse_example(data)
    img = feats["steps/observation/image"]
    assert img.kind == "bytes" and [bytes(v) for v in img.values] == [b"\xff\xd8a", b"", b"\xff\xd8bc"]
    assert feats["steps/is_first"].values.tolist() == [1, 0, -3]
    assert feats["steps/action"].values.tolist() == [0.5, -2.0]
    only = parse_example(data, want={"steps/action"})
    assert set(only) == {"steps/action"}


def test_image_features_are_found_in_the_tfds_schema() -> None:
    fd = "tensorflow_datasets.core.features.features_dict.FeaturesDict"
    image = {"pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
             "image": {"shape": {"dimensions": ["64", "64", "3"]}, "dtype": "uint8", "encodingFormat": "jpeg"}}
    schema = {"pythonClassName": fd, "featuresDict": {"features": {
        "steps": {"pythonClassName": "tensorflow_datasets.core.features.dataset_feature.Dataset",
                  "sequence": {"feature": {"pythonClassName": fd, "featuresDict": {"features": {
                      "observation": {"pythonClassName": fd, "featuresDict": {"features": {
                          "image": image, "wrist_image": image,
                          "state": {"pythonClassName": "x.Tensor", "tensor": {"shape": {}, "dtype": "float32"}}}}},
                      "action": {"pythonClassName": "x.Tensor", "tensor": {}}}}}}},
        "episode_metadata": {"pythonClassName": fd, "featuresDict": {"features": {}}}}}}
    assert image_features(schema) == ["steps/observation/image", "steps/observation/wrist_image"]


def _spec(tmp_path: Path, codecs: tuple[str, ...]) -> ArraySpec:
    (tmp_path / "img").mkdir(exist_ok=True)
    return ArraySpec(tmp_path / "img", (4, 8, 8, 3), (1, 8, 8, 3), np.dtype("u1"), codecs, 2, ".", "")


def test_zarr_chunk_checks(tmp_path: Path) -> None:
    budget = Budget(tmp_path, LIMITS, 1000)
    raw = bytes(range(192))
    spec = _spec(tmp_path, ())
    (spec.folder / "0.0.0.0").write_bytes(raw)
    spec.check_chunk((0, 0, 0, 0), budget, LIMITS, tmp_path)
    (spec.folder / "0.0.0.0").write_bytes(raw[:-1])
    with pytest.raises(MediaError, match="not the 192"):
        spec.check_chunk((0, 0, 0, 0), budget, LIMITS, tmp_path)
    spec.check_chunk((3, 0, 0, 0), budget, LIMITS, tmp_path)  # absent: the fill value
    z = _spec(tmp_path, ("zlib",))
    (z.folder / "1.0.0.0").write_bytes(zlib.compress(raw))
    z.check_chunk((1, 0, 0, 0), budget, LIMITS, tmp_path)
    (z.folder / "1.0.0.0").write_bytes(zlib.compress(raw * 2))
    with pytest.raises(MediaError, match="expands past"):
        z.check_chunk((1, 0, 0, 0), budget, LIMITS, tmp_path)
    lz = _spec(tmp_path, ("lz4",))
    (lz.folder / "2.0.0.0").write_bytes(struct.pack("<I", 193) + b"x" * 20)
    with pytest.raises(MediaError, match="LZ4 header"):
        lz.check_chunk((2, 0, 0, 0), budget, LIMITS, tmp_path)
    odd = _spec(tmp_path, ("lzma",))
    (odd.folder / "2.0.0.0").write_bytes(b"x")
    with pytest.raises(MediaError, match="'lzma' is not supported"):
        odd.check_chunk((2, 0, 0, 0), budget, LIMITS, tmp_path)
    assert _spec(tmp_path, ()).row_chunks(2) == [(2, 0, 0, 0)]
