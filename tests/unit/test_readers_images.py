"""Image decoding helpers shared by the recording readers (raw layouts, compressed stills,
size validation before allocation, message field extraction)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.readers._decoders import (
    ImageError,
    VideoDecoder,
    compressed_format,
    compressed_size,
    compressed_to_rgb,
    raw_to_rgb,
    validate_raw,
)
from overlap_desktop.core.ingest.readers._images import (
    ImageMessage,
    LazyImageFrame,
    frame_for_message,
    image_kind,
    message_fields,
    reader_settings,
)
from overlap_desktop.core.ingest.readers._mcap_messages import ProtobufSchema, decompress_payload
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError
from tests.fixtures_recordings import (
    encode_raw,
    encode_still,
    foxglove_descriptor_set,
    foxglove_proto_msg,
)

RNG = np.random.default_rng(3)
IMG = RNG.integers(0, 256, (6, 8, 3), dtype=np.uint8)


def _decode(img: np.ndarray, encoding: str, **kw: object) -> np.ndarray:
    data, step = encode_raw(img, encoding, **kw)  # type: ignore[arg-type]
    layout = validate_raw(width=img.shape[1], height=img.shape[0], encoding=encoding, step=step,
                          data_len=len(data), is_bigendian=bool(kw.get("bigendian", False)))
    return raw_to_rgb(data, layout)


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8"])
def test_colour_encodings_round_trip_exactly(encoding: str) -> None:
    assert np.array_equal(_decode(IMG, encoding), IMG)


@pytest.mark.parametrize("encoding", ["rgb16", "bgr16", "rgba16", "bgra16"])
@pytest.mark.parametrize("bigendian", [False, True])
def test_16_bit_colour_encodings(encoding: str, bigendian: bool) -> None:
    assert np.array_equal(_decode(IMG, encoding, bigendian=bigendian), IMG)


def test_rows_are_sliced_by_step() -> None:
    out = _decode(IMG, "bgr8", pad=5)
    assert np.array_equal(out, IMG)


def test_mono8_and_mono16_both_byte_orders_agree() -> None:
    m8 = _decode(IMG, "mono8")
    assert m8.shape == (6, 8, 3) and np.array_equal(m8[:, :, 0], m8[:, :, 2])
    le = _decode(IMG, "mono16")
    be = _decode(IMG, "mono16", bigendian=True)
    # 16-bit samples are v*257, so the high byte is v in either byte order.
    assert np.array_equal(le, m8) and np.array_equal(be, m8)


def test_mono16_byte_order_matters() -> None:
    data = np.array([[0x1234]], ">u2").view(np.uint8).tobytes()
    be = raw_to_rgb(data, validate_raw(width=1, height=1, encoding="mono16", step=2, data_len=2, is_bigendian=True))
    le = raw_to_rgb(data, validate_raw(width=1, height=1, encoding="mono16", step=2, data_len=2))
    assert be[0, 0, 0] == 0x12 and le[0, 0, 0] == 0x34


@pytest.mark.parametrize("encoding", ["yuv422", "uyvy", "yuyv"])
def test_yuv422_variants_decode_close_to_source(encoding: str) -> None:
    smooth = np.repeat(np.repeat(IMG[:3, :4], 2, axis=0), 2, axis=1)  # chroma subsampling friendly
    out = _decode(smooth, encoding)
    assert out.shape == smooth.shape
    assert np.abs(out.astype(int) - smooth).mean() < 12


@pytest.mark.parametrize("pattern", ["rggb", "bggr", "gbrg", "grbg"])
def test_bayer_patterns_bin_to_half_resolution(pattern: str) -> None:
    flat = np.zeros((4, 6, 3), np.uint8)
    flat[:] = (200, 100, 30)
    out = _decode(flat, f"bayer_{pattern}8")
    assert out.shape == (2, 3, 3)
    assert np.array_equal(out[0, 0], [200, 100, 30])


def test_data_shorter_than_step_times_height_is_refused_before_allocation() -> None:
    with pytest.raises(ImageError, match="shorter than step x height"):
        validate_raw(width=8, height=6, encoding="rgb8", step=24, data_len=24 * 5)


def test_step_smaller_than_width_is_refused() -> None:
    with pytest.raises(ImageError, match="row step"):
        validate_raw(width=8, height=6, encoding="rgb8", step=20, data_len=1000)


def test_huge_declared_size_is_refused() -> None:
    with pytest.raises(ImageError, match="over the"):
        validate_raw(width=100_000, height=100_000, encoding="rgb8", step=300_000, data_len=10)
    small = ReaderLimits(max_pixels=100)
    with pytest.raises(ImageError, match="over the limit"):
        validate_raw(width=20, height=20, encoding="mono8", step=20, data_len=400, limits=small)


def test_unknown_encoding_is_named() -> None:
    with pytest.raises(ImageError, match="'32FC1'"):
        validate_raw(width=2, height=2, encoding="32FC1", step=8, data_len=32)


def test_empty_size_is_refused() -> None:
    with pytest.raises(ImageError, match="empty"):
        validate_raw(width=0, height=4, encoding="rgb8", step=0, data_len=0)


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_compressed_stills_decode_and_declare_their_size(fmt: str) -> None:
    img = np.repeat(np.repeat(IMG, 8, axis=0), 8, axis=1)  # 64x48
    data = encode_still(img, fmt)
    assert compressed_format(data) == fmt
    assert compressed_size(data, fmt) == (64, 48)
    out = compressed_to_rgb(data)
    assert out.shape == (48, 64, 3)
    tol = 0 if fmt == "png" else 25
    assert np.abs(out.astype(int) - img).mean() <= tol


def test_compressed_size_over_the_cap_is_refused_without_decoding() -> None:
    # A PNG header declaring 60000x60000 followed by nothing.
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 60000, 60000) + b"\x08\x02\0\0\0"
    with pytest.raises(ImageError, match="over the"):
        compressed_to_rgb(png)


def test_unknown_and_corrupt_compressed_data() -> None:
    with pytest.raises(ImageError, match="unsupported compressed image format 'tiff'"):
        compressed_to_rgb(b"II*\0" + bytes(40), "tiff")
    jpeg = encode_still(IMG, "jpeg")
    with pytest.raises(ImageError):
        compressed_to_rgb(jpeg[:3] + b"\0" * 20)


def test_lazy_frame_reports_corrupt_data_as_media_error_naming_file() -> None:
    def boom() -> np.ndarray:
        raise ImageError("corrupt jpeg image")

    frame = LazyImageFrame(5, boom, path="rec.mcap", describe="topic /cam at 0.100 s")
    assert frame.t_ns == 5
    with pytest.raises(MediaError, match=r"rec.mcap: topic /cam at 0.100 s: corrupt jpeg"):
        frame.to_rgb(4, 4)


def test_frame_for_message_validates_eagerly_and_decodes_lazily() -> None:
    calls = []
    data, step = encode_raw(IMG, "rgb8")
    msg = ImageMessage("raw", data, width=8, height=6, encoding="rgb8", step=step)
    frame = frame_for_message(msg, 7, limits=ReaderLimits())
    calls.append(frame.to_rgb(8, 6))
    assert np.array_equal(calls[0], IMG)
    short = ImageMessage("raw", data[:-30], width=8, height=6, encoding="rgb8", step=step)
    with pytest.raises(ImageError, match="shorter"):
        frame_for_message(short, 0, limits=ReaderLimits())


@pytest.mark.parametrize(("name", "kind"), [
    ("sensor_msgs/msg/Image", "raw"), ("sensor_msgs/Image", "raw"),
    ("sensor_msgs/msg/CompressedImage", "compressed"), ("foxglove.RawImage", "raw"),
    ("foxglove.CompressedImage", "compressed"), ("foxglove.CompressedVideo", "video"),
    ("foxglove_msgs/msg/CompressedVideo", "video"), ("std_msgs/msg/String", None),
    ("sensor_msgs/msg/PointCloud2", None),
])
def test_image_kind(name: str, kind: str | None) -> None:
    assert image_kind(name) == kind


def test_message_fields_from_dicts_and_json_base64() -> None:
    m = message_fields({"timestamp": {"sec": 2, "nsec": 5}, "width": 1, "height": 1, "encoding": "mono8",
                        "step": 1, "data": "AA=="}, "raw")
    assert m.stamp_ns == 2_000_000_005 and bytes(m.data) == b"\0"
    with pytest.raises(ImageError, match="base64"):
        message_fields({"data": "!!notbase64"}, "compressed")


def test_protobuf_schema_decodes_foxglove_raw_image() -> None:
    schema = ProtobufSchema(foxglove_descriptor_set("RawImage"), "foxglove.RawImage")
    payload = foxglove_proto_msg("RawImage", 3_000_000_007, width=8, height=6, encoding="rgb8", step=24,
                                 data=b"xyz", frame_id="cam")
    out = schema.decode(payload)
    assert out["width"] == 8 and out["encoding"] == "rgb8" and bytes(out["data"]) == b"xyz"
    assert out["timestamp"] == {"seconds": 3, "nanos": 7}
    with pytest.raises(ImageError):
        schema.decode(payload[:-2])


def test_zstd_payloads_are_capped() -> None:
    import zstandard

    raw = bytes(1000)
    packed = zstandard.ZstdCompressor().compress(raw)
    assert decompress_payload(packed, ReaderLimits()) == raw
    with pytest.raises(ImageError, match="over the limit|past the limit"):
        decompress_payload(packed, ReaderLimits(max_message_bytes=500))
    # A frame that does not declare its size is still capped while streaming.
    hidden = zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    with pytest.raises(ImageError, match="past the limit"):
        decompress_payload(hidden, ReaderLimits(max_message_bytes=500))
    assert decompress_payload(b"plain", ReaderLimits()) == b"plain"


def test_video_decoder_rejects_unknown_format() -> None:
    with pytest.raises(ImageError, match="mpeg2"):
        VideoDecoder("mpeg2", ReaderLimits())


def test_reader_settings_follow_config() -> None:
    cfg = load_config({"readers.mcap_time": "header", "readers.image_fps": 12.5, "readers.max_pixels": 1000})
    s = reader_settings(cfg)
    assert s.time_source == "header" and s.image_fps == 12.5 and s.limits.max_pixels == 1000
    d = reader_settings()
    assert d.time_source == "log" and d.image_fps == 30.0
