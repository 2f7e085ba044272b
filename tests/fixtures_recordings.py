"""Robotics recordings written by the tests: MCAP (ROS 2, ROS 1, foxglove JSON/protobuf),
ROS 1 bags, rosbag2 folders (sqlite3 and mcap storage), LeRobot-style folders and image
sequences, all carrying the same synthetic footage (:mod:`tests.footage`).

Plain functions write one recording each; the session-scoped fixtures at the bottom
cache the common ones; they are registered once in tests/conftest.py (``pytest_plugins``), so a
test names them as arguments (never star-import them: each importing module would build them again).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from tests.footage import Scene, render_frames, write_video

# The shared footage: 8 s of scene 11 at 10 fps, 160x120 (small and fast).
FOOTAGE_SEED = 11
FOOTAGE_FPS = 10.0
FOOTAGE_SECONDS = 8.0
FOOTAGE_SIZE = (160, 120)
#: Log time of the first message (recordings rarely start at 0).
T0_NS = 1_700_000_000_000_000_000

REAL_MCAP = Path(__file__).resolve().parent / "data" / "mcap" / "soccer_goal_12.mcap"


def footage(seed: int = FOOTAGE_SEED, *, seconds: float = FOOTAGE_SECONDS, fps: float = FOOTAGE_FPS,
            size: tuple[int, int] = FOOTAGE_SIZE) -> list[np.ndarray]:
    """The RGB frames every fixture wraps."""
    return list(render_frames(Scene(seed), duration=seconds, fps=fps, size=size))


def frame_times(n: int, fps: float = FOOTAGE_FPS) -> list[int]:
    return [T0_NS + int(round(i * 1e9 / fps)) for i in range(n)]


# --------------------------------------------------------------------------- encodings


def encode_raw(img: np.ndarray, encoding: str, *, pad: int = 0, bigendian: bool = False) -> tuple[bytes, int]:
    """Encode RGB ``img`` as a raw ROS image buffer; returns (data, step). ``pad`` adds
    bytes at the end of every row (step > width * bpp)."""
    h, w = img.shape[:2]
    if encoding == "rgb8":
        px = img
    elif encoding == "bgr8":
        px = img[:, :, ::-1]
    elif encoding == "rgba8":
        px = np.concatenate([img, np.full((h, w, 1), 255, np.uint8)], axis=2)
    elif encoding == "bgra8":
        px = np.concatenate([img[:, :, ::-1], np.full((h, w, 1), 255, np.uint8)], axis=2)
    elif encoding == "mono8":
        px = _gray(img)
    elif encoding == "mono16":
        g16 = _gray(img).astype(np.uint16) * 257
        px = g16.astype(">u2" if bigendian else "<u2").view(np.uint8).reshape(h, w * 2)
    elif encoding in ("rgb16", "bgr16", "rgba16", "bgra16"):
        c = img[:, :, ::-1] if encoding.startswith("bgr") else img
        if encoding.endswith("a16"):
            c = np.concatenate([c, np.full((h, w, 1), 255, np.uint8)], axis=2)
        px = (c.astype(np.uint16) * 257).astype(">u2" if bigendian else "<u2").view(np.uint8).reshape(h, -1)
    elif encoding in ("yuv422", "uyvy", "yuyv"):
        yuyv = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24").reformat(
            format="yuyv422").to_ndarray().reshape(h, w, 2)
        px = yuyv[:, :, ::-1] if encoding in ("yuv422", "uyvy") else yuyv
    elif encoding.startswith("bayer_"):
        pattern = encoding[len("bayer_"):len("bayer_") + 4]
        px = np.zeros((h, w), np.uint8)
        chan = {"r": 0, "g": 1, "b": 2}
        for k, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            px[dy::2, dx::2] = img[dy::2, dx::2, chan[pattern[k]]]
    else:
        raise ValueError(encoding)
    rows = np.ascontiguousarray(px).reshape(h, -1)
    if pad:
        rows = np.concatenate([rows, np.zeros((h, pad), np.uint8)], axis=1)
    return rows.tobytes(), rows.shape[1]


def _gray(img: np.ndarray) -> np.ndarray:
    return (img.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).round().astype(np.uint8)


def encode_still(img: np.ndarray, fmt: str = "jpeg", *, quality: int = 2) -> bytes:
    """JPEG / PNG / WebP bytes of ``img`` made with PyAV (no Pillow)."""
    name, pix, opts = {
        "jpeg": ("mjpeg", "yuvj444p", {"qmin": str(quality), "qmax": str(quality)}),
        "png": ("png", "rgb24", {}),
        "webp": ("libwebp", "yuv420p", {"lossless": "0", "quality": "95"}),
    }[fmt]
    ctx = av.CodecContext.create(name, "w")
    ctx.width, ctx.height, ctx.pix_fmt = img.shape[1], img.shape[0], pix
    ctx.time_base = Fraction(1, 25)
    ctx.options = opts
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24").reformat(format=pix)
    packets = list(ctx.encode(frame)) + list(ctx.encode(None))
    return b"".join(bytes(p) for p in packets)


def encode_video_packets(frames: Sequence[np.ndarray], fmt: str = "h264", fps: float = FOOTAGE_FPS,
                         keyint: int = 250) -> list[bytes]:
    """One encoded access unit per frame (no B-frames), as foxglove CompressedVideo carries."""
    name, opts = {"h264": ("libx264", {"preset": "ultrafast", "tune": "zerolatency", "crf": "18",
                                       "x264-params": f"keyint={keyint}:min-keyint={keyint}"}),
                  "h265": ("libx265", {"preset": "ultrafast", "x265-params": "bframes=0:log-level=none"}),
                  "vp9": ("libvpx-vp9", {"lag-in-frames": "0", "deadline": "realtime"})}[fmt]
    ctx = av.CodecContext.create(name, "w")
    ctx.width, ctx.height, ctx.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv420p"
    ctx.time_base = Fraction(1, int(fps))
    ctx.framerate = Fraction(int(fps))
    ctx.options = opts
    out: list[bytes] = []
    for i, img in enumerate(frames):
        f = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24").reformat(format="yuv420p")
        f.pts = i
        out += [bytes(p) for p in ctx.encode(f)]
    out += [bytes(p) for p in ctx.encode(None)]
    return out


# --------------------------------------------------------------------------- ROS 2 MCAP

ROS2_IMAGE_DEF = """std_msgs/Header header
uint32 height
uint32 width
string encoding
uint8 is_bigendian
uint32 step
uint8[] data
================================================================================
MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""

ROS2_COMPRESSED_DEF = """std_msgs/Header header
string format
uint8[] data
================================================================================
MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""


def _header(t_ns: int) -> dict[str, Any]:
    return {"stamp": {"sec": t_ns // 1_000_000_000, "nanosec": t_ns % 1_000_000_000}, "frame_id": "cam"}


def ros2_image_msg(img: np.ndarray, encoding: str, t_ns: int, **kw: Any) -> dict[str, Any]:
    data, step = encode_raw(img, encoding, **kw)
    return {"header": _header(t_ns), "height": img.shape[0], "width": img.shape[1], "encoding": encoding,
            "is_bigendian": int(kw.get("bigendian", False)), "step": step, "data": data}


def write_mcap_ros2(path: Path, topics: dict[str, list[tuple[int, dict[str, Any]]]], *,
                    kinds: dict[str, str] | None = None, extra_topics: Iterable[tuple[str, str, str, Any]] = (),
                    zstd_messages: bool = False, chunk_compression: str = "zstd") -> Path:
    """Write a ROS 2 MCAP. ``topics``: topic -> [(log_time, message dict)]; ``kinds``: topic ->
    "raw"|"compressed" (default raw). ``zstd_messages`` compresses every payload like rosbag2's
    ``compression_mode: MESSAGE``; ``chunk_compression`` is "zstd", "lz4" or "none"."""
    from mcap_ros2.writer import Writer

    path.parent.mkdir(parents=True, exist_ok=True)
    kinds = kinds or {}
    if zstd_messages:
        return _write_mcap_ros2_zstd(path, topics, kinds)
    from mcap.writer import CompressionType

    with open(path, "wb") as fh:
        writer = Writer(fh, compression=CompressionType[chunk_compression.upper()])
        image = writer.register_msgdef("sensor_msgs/msg/Image", ROS2_IMAGE_DEF)
        comp = writer.register_msgdef("sensor_msgs/msg/CompressedImage", ROS2_COMPRESSED_DEF)
        for topic, msgs in topics.items():
            schema = comp if kinds.get(topic) == "compressed" else image
            for t, msg in msgs:
                writer.write_message(topic, schema, msg, log_time=t, publish_time=t)
        for topic, name, text, msg in extra_topics:
            schema = writer.register_msgdef(name, text)
            writer.write_message(topic, schema, msg, log_time=T0_NS, publish_time=T0_NS)
        writer.finish()
    return path


def _write_mcap_ros2_zstd(path: Path, topics: dict[str, list[tuple[int, dict[str, Any]]]],
                          kinds: dict[str, str]) -> Path:
    import zstandard
    from mcap.writer import CompressionType
    from mcap.writer import Writer as RawWriter
    from mcap_ros2._dynamic import serialize_dynamic

    with open(path, "wb") as fh:
        writer = RawWriter(fh, compression=CompressionType.NONE)
        writer.start(profile="ros2", library="overlap-tests")
        for topic, msgs in topics.items():
            name, text = (("sensor_msgs/msg/CompressedImage", ROS2_COMPRESSED_DEF)
                          if kinds.get(topic) == "compressed" else ("sensor_msgs/msg/Image", ROS2_IMAGE_DEF))
            sid = writer.register_schema(name=name, encoding="ros2msg", data=text.encode())
            cid = writer.register_channel(topic=topic, message_encoding="cdr", schema_id=sid)
            encoder = serialize_dynamic(name, text)[name]
            for seq, (t, msg) in enumerate(msgs):
                payload = zstandard.ZstdCompressor().compress(encoder(msg))
                writer.add_message(channel_id=cid, log_time=t, publish_time=t, data=payload, sequence=seq)
        writer.finish()
    return path


def mcap_raw_footage(path: Path, encoding: str = "rgb8", *, frames: list[np.ndarray] | None = None,
                     topic: str = "/camera/image_raw", **kw: Any) -> Path:
    frames = footage() if frames is None else frames
    msgs = [(t, ros2_image_msg(img, encoding, t)) for t, img in zip(frame_times(len(frames)), frames)]
    return write_mcap_ros2(path, {topic: msgs}, **kw)


def mcap_jpeg_footage(path: Path, *, frames: list[np.ndarray] | None = None, fmt: str = "jpeg",
                      topic: str = "/camera/image/compressed") -> Path:
    frames = footage() if frames is None else frames
    msgs = [(t, {"header": _header(t), "format": f"rgb8; {fmt} compressed bgr8", "data": encode_still(img, fmt)})
            for t, img in zip(frame_times(len(frames)), frames)]
    return write_mcap_ros2(path, {topic: msgs}, kinds={topic: "compressed"})


def write_mcap_images(path: Path, frames: Iterable[np.ndarray], *, fps: float, encoding: str = "rgb8",
                      topic: str | None = None) -> Path:
    """Re-wrap RGB frames as a ROS 2 MCAP camera topic, one message per frame at ``i / fps``.

    Args:
        path: The ``.mcap`` to write.
        frames: RGB ``uint8`` frames.
        fps: Frame rate (log times and header stamps are ``T0_NS + i / fps``).
        encoding: A raw ``sensor_msgs/Image`` encoding (``rgb8``, ``bgr8``, ``mono8``...) or
            ``"jpeg"`` / ``"png"`` for ``sensor_msgs/CompressedImage``.
        topic: Topic name (default ``/camera/image_raw`` or ``/camera/image/compressed``).
    """
    frames = list(frames)
    times = [T0_NS + int(round(i * 1e9 / fps)) for i in range(len(frames))]
    if encoding in ("jpeg", "png", "webp"):
        topic = topic or "/camera/image/compressed"
        msgs = [(t, {"header": _header(t), "format": encoding, "data": encode_still(img, encoding)})
                for t, img in zip(times, frames)]
        return write_mcap_ros2(path, {topic: msgs}, kinds={topic: "compressed"})
    topic = topic or "/camera/image_raw"
    return write_mcap_ros2(path, {topic: [(t, ros2_image_msg(img, encoding, t)) for t, img in zip(times, frames)]})


# --------------------------------------------------------------------------- ROS 1 MCAP, JSON, protobuf


def write_mcap_generic(path: Path, *, schema_name: str, schema_encoding: str, schema_data: bytes,
                       message_encoding: str, messages: list[tuple[int, bytes]], topic: str = "/cam",
                       profile: str = "") -> Path:
    """Write an MCAP with one channel of pre-serialized messages."""
    from mcap.writer import Writer as RawWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        writer = RawWriter(fh)
        writer.start(profile=profile, library="overlap-tests")
        sid = writer.register_schema(name=schema_name, encoding=schema_encoding, data=schema_data)
        cid = writer.register_channel(topic=topic, message_encoding=message_encoding, schema_id=sid)
        for seq, (t, data) in enumerate(messages):
            writer.add_message(channel_id=cid, log_time=t, publish_time=t, data=data, sequence=seq)
        writer.finish()
    return path


def mcap_ros1_footage(path: Path, frames: list[np.ndarray] | None = None, encoding: str = "rgb8") -> Path:
    from rosbags.typesys import Stores, get_typestore

    frames = footage() if frames is None else frames
    ts = get_typestore(Stores.ROS1_NOETIC)
    msgdef, _ = ts.generate_msgdef("sensor_msgs/msg/Image", ros_version=1)
    msgs = [(t, ts.serialize_ros1(_rosbags_image(ts, img, encoding, t), "sensor_msgs/msg/Image"))
            for t, img in zip(frame_times(len(frames)), frames)]
    return write_mcap_generic(path, schema_name="sensor_msgs/Image", schema_encoding="ros1msg",
                              schema_data=msgdef.encode(), message_encoding="ros1", messages=msgs, profile="ros1")


def mcap_foxglove_json(path: Path, kind: str = "RawImage", frames: list[np.ndarray] | None = None) -> Path:
    import base64

    frames = footage() if frames is None else frames
    msgs = []
    for t, img in zip(frame_times(len(frames)), frames):
        stamp = {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000}
        if kind == "RawImage":
            data, step = encode_raw(img, "rgb8")
            m = {"timestamp": stamp, "frame_id": "cam", "width": img.shape[1], "height": img.shape[0],
                 "encoding": "rgb8", "step": step, "data": base64.b64encode(data).decode()}
        else:
            m = {"timestamp": stamp, "frame_id": "cam", "format": "png",
                 "data": base64.b64encode(encode_still(img, "png")).decode()}
        msgs.append((t, json.dumps(m).encode()))
    schema = json.dumps({"type": "object", "title": f"foxglove.{kind}"}).encode()
    return write_mcap_generic(path, schema_name=f"foxglove.{kind}", schema_encoding="jsonschema",
                              schema_data=schema, message_encoding="json", messages=msgs)


# A minimal protobuf writer, so fixtures need no protobuf runtime.
def _pb_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _pb_field(num: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _pb_varint(num << 3) + _pb_varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _pb_varint((num << 3) | 2) + _pb_varint(len(data)) + data


# field name -> (number, type, type_name); protobuf type codes: 9 string, 12 bytes, 13 uint32, 11 message
FOXGLOVE_PROTO = {
    "RawImage": {"timestamp": (1, 11, ".google.protobuf.Timestamp"), "frame_id": (7, 9, ""),
                 "width": (2, 13, ""), "height": (3, 13, ""), "encoding": (4, 9, ""), "step": (5, 13, ""),
                 "data": (6, 12, "")},
    "CompressedImage": {"timestamp": (1, 11, ".google.protobuf.Timestamp"), "frame_id": (4, 9, ""),
                        "data": (2, 12, ""), "format": (3, 9, "")},
    "CompressedVideo": {"timestamp": (1, 11, ".google.protobuf.Timestamp"), "frame_id": (2, 9, ""),
                        "data": (3, 12, ""), "format": (4, 9, "")},
}


def foxglove_descriptor_set(kind: str) -> bytes:
    """A serialized FileDescriptorSet defining ``foxglove.<kind>`` and google.protobuf.Timestamp."""
    def message(name: str, fields: dict[str, tuple[int, int, str]]) -> bytes:
        body = _pb_field(1, name)
        for fname, (num, typ, tname) in fields.items():
            f = _pb_field(1, fname) + _pb_field(3, num) + _pb_field(4, 1) + _pb_field(5, typ)
            if tname:
                f += _pb_field(6, tname)
            body += _pb_field(2, f)
        return body

    ts_file = (_pb_field(1, "google/protobuf/timestamp.proto") + _pb_field(2, "google.protobuf")
               + _pb_field(4, message("Timestamp", {"seconds": (1, 3, ""), "nanos": (2, 5, "")})))
    fg_file = (_pb_field(1, f"foxglove/{kind}.proto") + _pb_field(2, "foxglove")
               + _pb_field(3, "google/protobuf/timestamp.proto") + _pb_field(4, message(kind, FOXGLOVE_PROTO[kind])))
    return _pb_field(1, ts_file) + _pb_field(1, fg_file)


def foxglove_proto_msg(kind: str, t_ns: int, **values: Any) -> bytes:
    spec = FOXGLOVE_PROTO[kind]
    out = _pb_field(spec["timestamp"][0], _pb_field(1, t_ns // 1_000_000_000) + _pb_field(2, t_ns % 1_000_000_000))
    for name, value in values.items():
        out += _pb_field(spec[name][0], value)
    return out


def mcap_foxglove_proto(path: Path, kind: str = "RawImage", frames: list[np.ndarray] | None = None,
                        video_format: str = "h264") -> Path:
    frames = footage() if frames is None else frames
    times = frame_times(len(frames))
    msgs: list[tuple[int, bytes]] = []
    if kind == "CompressedVideo":
        packets = encode_video_packets(frames, video_format)
        assert len(packets) == len(frames)
        msgs = [(t, foxglove_proto_msg(kind, t, data=p, format=video_format, frame_id="cam"))
                for t, p in zip(times, packets)]
    for t, img in zip(times, frames):
        if kind == "RawImage":
            data, step = encode_raw(img, "bgr8")
            msgs.append((t, foxglove_proto_msg(kind, t, frame_id="cam", width=img.shape[1], height=img.shape[0],
                                               encoding="bgr8", step=step, data=data)))
        elif kind == "CompressedImage":
            msgs.append((t, foxglove_proto_msg(kind, t, frame_id="cam", format="jpeg",
                                               data=encode_still(img, "jpeg"))))
    return write_mcap_generic(path, schema_name=f"foxglove.{kind}", schema_encoding="protobuf",
                              schema_data=foxglove_descriptor_set(kind), message_encoding="protobuf",
                              messages=msgs)


# --------------------------------------------------------------------------- rosbags


def _rosbags_image(ts: Any, img: np.ndarray, encoding: str, t_ns: int) -> Any:
    Image = ts.types["sensor_msgs/msg/Image"]
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    data, step = encode_raw(img, encoding)
    kw: dict[str, Any] = {}
    if "seq" in Header.__dataclass_fields__:
        kw["seq"] = 0
    header = Header(stamp=Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000), frame_id="cam", **kw)
    return Image(header=header, height=img.shape[0], width=img.shape[1], encoding=encoding, is_bigendian=0,
                 step=step, data=np.frombuffer(data, np.uint8))


def _rosbags_compressed(ts: Any, img: np.ndarray, t_ns: int) -> Any:
    Msg = ts.types["sensor_msgs/msg/CompressedImage"]
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    kw: dict[str, Any] = {}
    if "seq" in Header.__dataclass_fields__:
        kw["seq"] = 0
    header = Header(stamp=Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000), frame_id="cam", **kw)
    return Msg(header=header, format="jpeg", data=np.frombuffer(encode_still(img, "jpeg"), np.uint8))


def write_rosbag1(path: Path, frames: list[np.ndarray] | None = None, *, encoding: str = "rgb8",
                  with_jpeg: bool = True, with_other: bool = True) -> Path:
    """A ROS 1 bag with /camera/image_raw (raw), /camera/compressed (JPEG) and a non-image topic."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    frames = footage() if frames is None else frames
    ts = get_typestore(Stores.ROS1_NOETIC)
    path.parent.mkdir(parents=True, exist_ok=True)
    with Writer(path) as writer:
        raw = writer.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        comp = writer.add_connection("/camera/compressed", "sensor_msgs/msg/CompressedImage",
                                     typestore=ts) if with_jpeg else None
        other = writer.add_connection("/chatter", "std_msgs/msg/String", typestore=ts) if with_other else None
        for t, img in zip(frame_times(len(frames)), frames):
            writer.write(raw, t, ts.serialize_ros1(_rosbags_image(ts, img, encoding, t), "sensor_msgs/msg/Image"))
            if comp is not None:
                writer.write(comp, t, ts.serialize_ros1(_rosbags_compressed(ts, img, t),
                                                        "sensor_msgs/msg/CompressedImage"))
            if other is not None:
                String = ts.types["std_msgs/msg/String"]
                writer.write(other, t, ts.serialize_ros1(String(data="hi"), "std_msgs/msg/String"))
    return path


def write_rosbag2(path: Path, frames: list[np.ndarray] | None = None, *, storage: str = "sqlite3",
                  encoding: str = "rgb8", with_jpeg: bool = True) -> Path:
    """A rosbag2 folder (sqlite3 or mcap storage) with raw and JPEG image topics."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    frames = footage() if frames is None else frames
    ts = get_typestore(Stores.ROS2_HUMBLE)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    path.parent.mkdir(parents=True, exist_ok=True)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        raw = writer.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        comp = writer.add_connection("/camera/compressed", "sensor_msgs/msg/CompressedImage",
                                     typestore=ts) if with_jpeg else None
        for t, img in zip(frame_times(len(frames)), frames):
            writer.write(raw, t, ts.serialize_cdr(_rosbags_image(ts, img, encoding, t), "sensor_msgs/msg/Image"))
            if comp is not None:
                writer.write(comp, t, ts.serialize_cdr(_rosbags_compressed(ts, img, t),
                                                       "sensor_msgs/msg/CompressedImage"))
    return path


# --------------------------------------------------------------------------- folders


def write_image_sequence(folder: Path, frames: list[np.ndarray] | None = None, *, fmt: str = "png",
                         fps: float | None = FOOTAGE_FPS, start: int = 1, digits: int = 0) -> Path:
    """Numbered stills ``frame_1.png`` ... (no zero padding by default, to exercise natural
    sort), with ``fps.txt`` when ``fps`` is given."""
    frames = footage() if frames is None else frames
    folder.mkdir(parents=True, exist_ok=True)
    ext = "jpg" if fmt == "jpeg" else fmt
    for i, img in enumerate(frames, start=start):
        (folder / f"frame_{i:0{digits}d}.{ext}").write_bytes(encode_still(img, fmt))
    if fps is not None:
        (folder / "fps.txt").write_text(f"{fps:g}\n")
    return folder


def write_lerobot(root: Path, *, episodes: Sequence[tuple[int, float]] = ((0, 3.0), (1, 2.0), (2, 3.0)),
                  cameras: Sequence[str] = ("observation.images.top", "observation.images.wrist"),
                  fps: float = FOOTAGE_FPS, size: tuple[int, int] = FOOTAGE_SIZE,
                  episodes_format: str = "jsonl") -> Path:
    """A LeRobot v3-style dataset: every camera's episodes concatenated in one mp4
    (``videos/{key}/chunk-000/file-000.mp4``), episode spans in ``meta/episodes``.

    ``episodes_format``: "jsonl" writes ``meta/episodes.jsonl``-style rows with the v3 column
    names; "parquet" writes ``meta/episodes/chunk-000/file-000.parquet`` (needs pyarrow).
    Each camera shows another scene (seed 20 + camera number); episode e of camera c starts
    at scene time 10 * e.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta").mkdir(exist_ok=True)
    features = {key: {"dtype": "video", "shape": [size[1], size[0], 3],
                      "names": ["height", "width", "channels"]} for key in cameras}
    info = {"codebase_version": "v3.0", "fps": fps, "total_episodes": len(episodes),
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "features": features}
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=1))
    rows: list[dict[str, Any]] = []
    offsets = {key: 0.0 for key in cameras}
    for ep, seconds in episodes:
        row: dict[str, Any] = {"episode_index": ep, "length": int(round(seconds * fps))}
        for key in cameras:
            row[f"videos/{key}/chunk_index"] = 0
            row[f"videos/{key}/file_index"] = 0
            row[f"videos/{key}/from_timestamp"] = offsets[key]
            row[f"videos/{key}/to_timestamp"] = offsets[key] + seconds
            offsets[key] += seconds
        rows.append(row)
    for c, key in enumerate(cameras):
        scene = Scene(20 + c)
        frames: list[np.ndarray] = []
        for ep, seconds in episodes:
            frames += list(render_frames(scene, duration=seconds, fps=fps, size=size, t0=10.0 * ep))
        write_video(root / "videos" / key / "chunk-000" / "file-000.mp4", frames, fps=fps)
    if episodes_format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), out)
    else:
        with open(root / "meta" / "episodes.jsonl", "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return root


# --------------------------------------------------------------------------- session fixtures


def _cached(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]) -> Path:
    base = factory.getbasetemp() / "recordings"
    target = base / name
    if not target.exists():
        base.mkdir(parents=True, exist_ok=True)
        tmp = factory.mktemp("rec-build")
        made = make(tmp / name)
        made.rename(target)
    return target


@pytest.fixture(scope="session")
def footage_frames() -> list[np.ndarray]:
    return footage()


@pytest.fixture(scope="session")
def footage_mp4(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "footage.mp4",
                   lambda p: write_video(p, footage_frames, fps=FOOTAGE_FPS))


@pytest.fixture(scope="session")
def mcap_raw(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "raw.mcap", lambda p: mcap_raw_footage(p, frames=footage_frames))


@pytest.fixture(scope="session")
def mcap_jpeg(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "jpeg.mcap", lambda p: mcap_jpeg_footage(p, frames=footage_frames))


@pytest.fixture(scope="session")
def rosbag1_file(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "footage.bag", lambda p: write_rosbag1(p, footage_frames))


@pytest.fixture(scope="session")
def rosbag2_sqlite(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "bag2_sqlite", lambda p: write_rosbag2(p, footage_frames))


@pytest.fixture(scope="session")
def rosbag2_mcap(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "bag2_mcap", lambda p: write_rosbag2(p, footage_frames, storage="mcap"))


@pytest.fixture(scope="session")
def image_sequence(tmp_path_factory: pytest.TempPathFactory, footage_frames: list[np.ndarray]) -> Path:
    return _cached(tmp_path_factory, "imageseq", lambda p: write_image_sequence(p, footage_frames))


@pytest.fixture(scope="session")
def lerobot_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _cached(tmp_path_factory, "lerobot", lambda p: write_lerobot(p))


__all__ = [
    "footage_frames", "footage_mp4", "mcap_raw", "mcap_jpeg", "rosbag1_file", "rosbag2_sqlite", "rosbag2_mcap",
    "image_sequence", "lerobot_dataset",
]
