"""McapReader on MCAP files written by the tests (every message type and encoding) and on
a real rosbag2-written recording with per-message zstd payloads."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.ingest.readers._images import ReaderSettings
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.ingest.readers.mcap import McapReader
from overlap_desktop.core.types import CancelToken
from overlap_desktop.errors import Cancelled, MediaError
from tests.fixtures_recordings import (
    FOOTAGE_FPS,
    REAL_MCAP,
    T0_NS,
    encode_video_packets,
    foxglove_descriptor_set,
    foxglove_proto_msg,
    frame_times,
    mcap_foxglove_json,
    mcap_foxglove_proto,
    mcap_jpeg_footage,
    mcap_raw_footage,
    mcap_ros1_footage,
    ros2_image_msg,
    write_mcap_generic,
    write_mcap_ros2,
)

N = 6  # frames per small file
STEP_NS = int(1e9 / FOOTAGE_FPS)


@pytest.fixture(scope="module")
def few(footage_frames: list[np.ndarray]) -> list[np.ndarray]:
    return footage_frames[:N]


def _all(reader: McapReader, path: Path) -> tuple[list, list]:
    streams = reader.streams(path)
    frames = list(reader.frames(path, streams[0]))
    return streams, frames


def _err(frames: list, originals: list[np.ndarray], k: int = 3) -> float:
    h, w = originals[0].shape[:2]
    return float(np.abs(frames[k].to_rgb(w, h).astype(int) - originals[k]).mean())


@pytest.mark.parametrize(("encoding", "tol"), [
    ("rgb8", 0), ("bgr8", 0), ("rgba8", 0), ("bgra8", 0), ("yuv422", 6), ("yuyv", 6),
])
def test_ros2_raw_encodings(tmp_path: Path, few: list[np.ndarray], encoding: str, tol: float) -> None:
    p = mcap_raw_footage(tmp_path / "x.mcap", encoding, frames=few)
    streams, frames = _all(McapReader(), p)
    assert [s.key for s in streams] == ["/camera/image_raw"]
    s = streams[0]
    assert (s.width, s.height, s.codec) == (160, 120, encoding)
    assert s.extra["messages"] == N and s.rate_hint == pytest.approx(FOOTAGE_FPS)
    assert s.duration_s == pytest.approx(N / FOOTAGE_FPS)
    assert [f.t_ns for f in frames] == [i * STEP_NS for i in range(N)]
    assert _err(frames, few) <= tol


@pytest.mark.parametrize("encoding", ["mono8", "mono16", "bayer_rggb8", "bayer_grbg8"])
def test_ros2_gray_and_bayer_encodings(tmp_path: Path, few: list[np.ndarray], encoding: str) -> None:
    p = mcap_raw_footage(tmp_path / "x.mcap", encoding, frames=few)
    streams, frames = _all(McapReader(), p)
    assert len(frames) == N
    out = frames[2].to_rgb(160, 120)
    ref = few[2].astype(np.float32).mean(axis=2)
    # Structure survives: strongly correlated with the source luminance.
    assert np.corrcoef(out.astype(np.float32).mean(axis=2).ravel(), ref.ravel())[0, 1] > 0.9


def test_compressed_jpeg_and_png(tmp_path: Path, few: list[np.ndarray]) -> None:
    for fmt, tol in (("jpeg", 6), ("png", 0)):
        p = mcap_jpeg_footage(tmp_path / f"{fmt}.mcap", frames=few, fmt=fmt)
        streams, frames = _all(McapReader(), p)
        assert streams[0].codec == fmt and streams[0].extra["kind"] == "compressed"
        assert (streams[0].width, streams[0].height) == (160, 120)
        assert len(frames) == N and _err(frames, few) <= tol


def test_ros1_mcap(tmp_path: Path, few: list[np.ndarray]) -> None:
    streams, frames = _all(McapReader(), mcap_ros1_footage(tmp_path / "r1.mcap", few))
    assert streams[0].extra["message_encoding"] == "ros1"
    assert len(frames) == N and _err(frames, few) == 0


@pytest.mark.parametrize(("kind", "tol"), [("RawImage", 0), ("CompressedImage", 0)])
def test_foxglove_json(tmp_path: Path, few: list[np.ndarray], kind: str, tol: float) -> None:
    streams, frames = _all(McapReader(), mcap_foxglove_json(tmp_path / "j.mcap", kind, few))
    assert streams[0].extra["message_type"] == f"foxglove.{kind}"
    assert len(frames) == N and _err(frames, few) <= tol


@pytest.mark.parametrize(("kind", "tol"), [("RawImage", 0), ("CompressedImage", 6)])
def test_foxglove_protobuf_images(tmp_path: Path, few: list[np.ndarray], kind: str, tol: float) -> None:
    streams, frames = _all(McapReader(), mcap_foxglove_proto(tmp_path / "p.mcap", kind, few))
    assert streams[0].extra["message_encoding"] == "protobuf"
    assert len(frames) == N and _err(frames, few) <= tol


@pytest.mark.parametrize("fmt", ["h264", "h265", "vp9"])
def test_foxglove_compressed_video(tmp_path: Path, footage_frames: list[np.ndarray], fmt: str) -> None:
    src = footage_frames[:12]
    p = mcap_foxglove_proto(tmp_path / "v.mcap", "CompressedVideo", src, video_format=fmt)
    streams, frames = _all(McapReader(), p)
    assert streams[0].codec == fmt and streams[0].extra["kind"] == "video"
    assert [f.t_ns for f in frames] == [i * STEP_NS for i in range(12)]
    assert _err(frames, src, k=8) < 8


def test_compressed_video_starting_mid_gop_waits_for_a_keyframe(tmp_path: Path,
                                                                 footage_frames: list[np.ndarray]) -> None:
    src = footage_frames[:20]
    packets = encode_video_packets(src, "h264", keyint=5)
    times = frame_times(20)
    # The recording starts at packet 2 (mid-GOP): packets 2-4 cannot be decoded, 5.. can.
    msgs = [(t, foxglove_proto_msg("CompressedVideo", t, data=p, format="h264"))
            for t, p in zip(times[2:], packets[2:])]
    path = write_mcap_generic(tmp_path / "mid.mcap", schema_name="foxglove.CompressedVideo",
                              schema_encoding="protobuf", schema_data=foxglove_descriptor_set("CompressedVideo"),
                              message_encoding="protobuf", messages=msgs)
    reader = McapReader()
    frames = list(reader.frames(path, reader.streams(path)[0]))
    assert frames and len(frames) <= 18
    first_k = round(frames[0].t_ns / STEP_NS) + 2
    assert first_k >= 2
    assert _err(frames, src[first_k:], k=0) < 8


@pytest.mark.parametrize("compression", ["lz4", "none"])
def test_chunk_compressions(tmp_path: Path, few: list[np.ndarray], compression: str) -> None:
    p = mcap_raw_footage(tmp_path / "c.mcap", frames=few, chunk_compression=compression)
    streams, frames = _all(McapReader(), p)
    assert len(frames) == N and _err(frames, few) == 0


def test_zstd_per_message_payloads(tmp_path: Path, few: list[np.ndarray]) -> None:
    p = mcap_raw_footage(tmp_path / "z.mcap", frames=few, zstd_messages=True)
    streams, frames = _all(McapReader(), p)
    assert len(frames) == N and _err(frames, few) == 0


def test_real_rosbag2_mcap_with_zstd_messages() -> None:
    assert REAL_MCAP.is_file()
    reader = reader_for(REAL_MCAP)
    assert reader.name == "mcap"
    streams = reader.streams(REAL_MCAP)
    assert len(streams) == 1
    s = streams[0]
    assert (s.key, s.width, s.height, s.codec) == ("/camera/image_raw", 640, 480, "rgb8")
    assert s.extra["messages"] == 2
    frames = list(reader.frames(REAL_MCAP, s))
    assert [f.t_ns for f in frames] == [0, 8331088888 - 8297777777]
    img = frames[0].to_rgb(64, 48)
    # A soccer goal on a green floor: the bottom rows are green-dominant.
    bottom = img[-8:].reshape(-1, 3).astype(int).mean(axis=0)
    assert bottom[1] > bottom[0] + 20 and bottom[1] > bottom[2] + 20


def test_several_topics_are_separate_streams_and_non_image_topics_ignored(tmp_path: Path,
                                                                          few: list[np.ndarray]) -> None:
    times = frame_times(N)
    left = [(t, ros2_image_msg(img, "rgb8", t)) for t, img in zip(times, few)]
    right = [(t, ros2_image_msg(img[:, ::-1].copy(), "bgr8", t)) for t, img in zip(times, few)]
    p = write_mcap_ros2(tmp_path / "multi.mcap", {"/left/image": left, "/right/image": right},
                        extra_topics=[("/chatter", "std_msgs/msg/String", "string data", {"data": "hi"})])
    reader = McapReader()
    streams = reader.streams(p)
    assert sorted(s.key for s in streams) == ["/left/image", "/right/image"]
    right_stream = next(s for s in streams if s.key == "/right/image")
    frames = list(reader.frames(p, right_stream))
    assert np.array_equal(frames[1].to_rgb(160, 120), few[1][:, ::-1])


def test_header_time_option(tmp_path: Path, few: list[np.ndarray]) -> None:
    # Log times arrive with jitter; header stamps are the true capture times, 0.25 s apart.
    stamps = [T0_NS + i * 250_000_000 for i in range(N)]
    logs = [T0_NS + 5_000_000_000 + i * 100_000_000 + (7_000_000 if i % 2 else 0) for i in range(N)]
    msgs = [(lt, ros2_image_msg(img, "rgb8", st)) for lt, st, img in zip(logs, stamps, few)]
    p = write_mcap_ros2(tmp_path / "h.mcap", {"/cam": msgs})
    by_log = McapReader()
    assert [f.t_ns for f in by_log.frames(p, by_log.streams(p)[0])] == [lt - logs[0] for lt in logs]
    by_header = McapReader(config=load_config({"readers.mcap_time": "header"}))
    assert [f.t_ns for f in by_header.frames(p, by_header.streams(p)[0])] == [i * 250_000_000 for i in range(N)]


def test_no_image_topic(tmp_path: Path) -> None:
    p = write_mcap_ros2(tmp_path / "none.mcap", {},
                        extra_topics=[("/chatter", "std_msgs/msg/String", "string data", {"data": "hi"})])
    with pytest.raises(MediaError, match="no image topic") as info:
        McapReader().streams(p)
    assert str(p) in str(info.value)


def test_unknown_encoding_names_topic_and_encoding(tmp_path: Path) -> None:
    msg = {"header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""}, "height": 2, "width": 2,
           "encoding": "32FC1", "is_bigendian": 0, "step": 8, "data": bytes(16)}
    p = write_mcap_ros2(tmp_path / "f.mcap", {"/depth": [(T0_NS, msg)]})
    with pytest.raises(MediaError, match=r"/depth: unsupported image encoding '32FC1'"):
        McapReader().streams(p)


def test_huge_declared_size_is_refused(tmp_path: Path) -> None:
    msg = {"header": {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""}, "height": 200_000, "width": 200_000,
           "encoding": "rgb8", "is_bigendian": 0, "step": 600_000, "data": bytes(64)}
    p = write_mcap_ros2(tmp_path / "huge.mcap", {"/cam": [(T0_NS, msg)]})
    with pytest.raises(MediaError, match=r"/cam: declared size 200000x200000 .*limit"):
        McapReader().streams(p)


def test_configured_pixel_cap(tmp_path: Path, few: list[np.ndarray]) -> None:
    p = mcap_raw_footage(tmp_path / "x.mcap", frames=few[:2])
    tight = McapReader(settings=ReaderSettings(limits=ReaderLimits(max_pixels=100 * 100)))
    with pytest.raises(MediaError, match="over the limit"):
        tight.streams(p)


def test_short_messages_are_skipped_and_counted(tmp_path: Path, few: list[np.ndarray],
                                                caplog: pytest.LogCaptureFixture) -> None:
    times = frame_times(N)
    msgs = [(t, ros2_image_msg(img, "rgb8", t)) for t, img in zip(times, few)]
    msgs[2][1]["data"] = msgs[2][1]["data"][:1000]  # shorter than step * height
    p = write_mcap_ros2(tmp_path / "short.mcap", {"/cam": msgs})
    reader = McapReader()
    with caplog.at_level(logging.WARNING, logger="overlap_desktop.core.ingest.readers.mcap"):
        frames = list(reader.frames(p, reader.streams(p)[0]))
    assert len(frames) == N - 1
    assert "skipped 1 undecodable message" in caplog.text and "shorter than step x height" in caplog.text


def test_all_messages_short_is_a_clear_error(tmp_path: Path, few: list[np.ndarray]) -> None:
    times = frame_times(N)
    msgs = [(t, ros2_image_msg(img, "rgb8", t)) for t, img in zip(times, few)]
    for _, m in msgs:
        m["data"] = m["data"][:100]
    p = write_mcap_ros2(tmp_path / "short.mcap", {"/cam": msgs})
    with pytest.raises(MediaError, match="shorter than step x height"):
        McapReader().streams(p)
    from overlap_desktop.core.types import StreamInfo

    with pytest.raises(MediaError, match=r"/cam: none of its 6 messages could be decoded"):
        list(McapReader().frames(p, StreamInfo(key="/cam")))


def test_corrupt_chunk_is_a_media_error(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    p = mcap_raw_footage(tmp_path / "c.mcap", frames=footage_frames[:30])
    data = bytearray(p.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 4000] = bytes(4000)
    bad = tmp_path / "corrupt.mcap"
    bad.write_bytes(bytes(data))
    reader = McapReader()
    with pytest.raises(MediaError, match="corrupt") as info:
        streams = reader.streams(bad)
        list(reader.frames(bad, streams[0]))
    assert str(bad) in str(info.value)


def test_truncated_recording_keeps_what_was_written(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    p = mcap_raw_footage(tmp_path / "t.mcap", frames=footage_frames[:40])
    data = p.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    reader = McapReader()
    try:
        streams = reader.streams(cut)
        frames = list(reader.frames(cut, streams[0]))
    except MediaError as exc:
        assert str(cut) in str(exc)  # refused clearly is acceptable too
        return
    assert 0 < len(frames) < 40


def test_not_an_mcap(tmp_path: Path) -> None:
    p = tmp_path / "fake.mcap"
    p.write_bytes(b"hello world")
    with pytest.raises(MediaError, match="not an MCAP file"):
        McapReader().streams(p)


def test_cancel_between_frames(mcap_raw: Path) -> None:
    reader = McapReader()
    token = CancelToken()
    it = reader.frames(mcap_raw, reader.streams(mcap_raw)[0], cancel=token)
    next(it)
    token.cancel()
    with pytest.raises(Cancelled):
        next(it)


def test_can_open_claims_mcap_files_only(tmp_path: Path, mcap_raw: Path) -> None:
    reader = McapReader()
    assert reader.can_open(mcap_raw)
    assert not reader.can_open(tmp_path)
    other = tmp_path / "x.mp4"
    other.write_bytes(b"\0" * 32)
    assert not reader.can_open(other)


def test_unknown_video_format_is_refused_at_listing(tmp_path: Path) -> None:
    from tests.fixtures_recordings import foxglove_descriptor_set, foxglove_proto_msg, write_mcap_generic

    msgs = [(T0_NS, foxglove_proto_msg("CompressedVideo", T0_NS, data=b"\0\0\1", format="mpeg2"))]
    p = write_mcap_generic(tmp_path / "m2.mcap", schema_name="foxglove.CompressedVideo", schema_encoding="protobuf",
                           schema_data=foxglove_descriptor_set("CompressedVideo"), message_encoding="protobuf",
                           messages=msgs)
    with pytest.raises(MediaError, match="unsupported video format 'mpeg2'"):
        McapReader().streams(p)


def test_indexer_passes_its_config_to_the_reader(tmp_path: Path, few: list[np.ndarray]) -> None:
    """``readers.mcap_time`` given to the API (not in any file or variable) reaches the reader."""
    from overlap_desktop import api

    stamps = [T0_NS + i * 1_000_000_000 for i in range(N)]  # header: 1 s apart
    logs = [T0_NS + i * 100_000_000 for i in range(N)]  # log: 0.1 s apart
    p = write_mcap_ros2(tmp_path / "rec" / "h.mcap",
                        {"/cam": [(lt, ros2_image_msg(img, "rgb8", st)) for lt, st, img in zip(logs, stamps, few)]})
    durations = {}
    for mode in ("log", "header"):
        cfg = api.load_config({"readers.mcap_time": mode, "index.path": str(tmp_path / f"idx_{mode}")})
        summary = api.index_paths([p], config=cfg)
        assert not summary.failed, summary.failed
        with api.open_index(config=cfg) as idx:
            (f,) = idx.files()
            durations[mode] = f.duration_s
    assert durations["log"] == pytest.approx(N * 0.1, abs=0.15)
    assert durations["header"] == pytest.approx(N * 1.0, abs=0.3)


def test_chunk_declaring_a_huge_size_is_refused_before_decompression(tmp_path: Path, few: list[np.ndarray]) -> None:
    p = mcap_raw_footage(tmp_path / "x.mcap", frames=few)
    tight = McapReader(settings=ReaderSettings(limits=ReaderLimits(max_chunk_bytes=10_000)))
    with pytest.raises(MediaError, match="chunk at byte .* declares .* over the limit"):
        tight.streams(p)
