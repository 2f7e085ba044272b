"""Builders of small hostile recordings (decompression bombs, timing gaps, pixel bombs).

Every input is a few kilobytes and is written without ever holding its decompressed form
in memory (zeros are fed to streaming compressors), so building a bomb costs no more than
the budget the reader is supposed to keep.
"""

from __future__ import annotations

import base64
import bz2
import functools
import json
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

MiB = 1024 * 1024
GiB = 1024 * MiB

# --------------------------------------------------------------------------- compressed zeros


@functools.cache
def _bz2_zero_stream(size: int) -> bytes:
    return bz2.compress(bytes(size), 9)


def bz2_zeros(total: int, piece: int = 64 * MiB) -> bytes:
    """bz2 data expanding to ``total`` zero bytes (concatenated 64 MiB streams of ~80 bytes)."""
    out = []
    while total > 0:
        n = min(piece, total)
        out.append(_bz2_zero_stream(n))
        total -= n
    return b"".join(out)


@functools.cache
def zstd_zeros(total: int, *, prefix: bytes = b"", declare_size: bool = True) -> bytes:
    """One zstd frame expanding to ``prefix`` + zeros (``total`` bytes in all); the frame
    header states the size when ``declare_size``."""
    import zstandard

    cctx = zstandard.ZstdCompressor(level=1, write_content_size=declare_size)
    obj = cctx.compressobj(size=total if declare_size else -1)
    out = [obj.compress(prefix)]
    left = total - len(prefix)
    block = bytes(16 * MiB)
    while left > 0:
        n = min(left, len(block))
        out.append(obj.compress(block[:n]))
        left -= n
    out.append(obj.flush())
    return b"".join(out)


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (< 16 bytes: an LZ4 frame descriptor), for its header checksum."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rot(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    assert len(data) < 16
    h = (seed + p5 + len(data)) & m
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i:i + 4], "little") * p3) & m
        h = (rot(h, 17) * p4) & m
        i += 4
    while i < len(data):
        h = (h + data[i] * p5) & m
        h = (rot(h, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def lz4_declaring(payload: bytes, declared: int) -> bytes:
    """An LZ4 frame holding ``payload`` whose header claims ``declared`` bytes of content
    (python-lz4's one-shot ``decompress`` allocates the claimed size up front)."""
    import lz4.frame

    frame = lz4.frame.compress(payload, store_size=True, content_checksum=False)
    flg = frame[4]
    assert flg & 0x08, "content size flag expected"
    desc_end = 4 + 2 + 8  # FLG, BD, 8-byte content size (no dictionary id)
    head = bytearray(frame[:desc_end + 1])
    head[6:14] = struct.pack("<Q", declared)
    head[desc_end] = (_xxh32(bytes(head[4:desc_end])) >> 8) & 0xFF
    return bytes(head) + frame[desc_end + 1:]


# --------------------------------------------------------------------------- MCAP by hand


def _rec(op: int, body: bytes) -> bytes:
    return struct.pack("<BQ", op, len(body)) + body


def _s(text: str | bytes) -> bytes:
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<I", len(b)) + b


_SCHEMA = json.dumps({"type": "object", "title": "foxglove.RawImage"}).encode()


def _schema_channel(ros2: bool = False) -> bytes:
    if ros2:  # what rosbag2 writes: a ROS 2 Image topic in CDR
        from tests.fixtures_recordings import ROS2_IMAGE_DEF

        schema = _rec(0x03, struct.pack("<H", 1) + _s("sensor_msgs/msg/Image") + _s("ros2msg") + _s(ROS2_IMAGE_DEF))
        channel = _rec(0x04, struct.pack("<HH", 1, 1) + _s("/camera/image_raw") + _s("cdr") + struct.pack("<I", 0))
        return schema + channel
    schema = _rec(0x03, struct.pack("<H", 1) + _s("foxglove.RawImage") + _s("jsonschema") + _s(_SCHEMA))
    channel = _rec(0x04, struct.pack("<HH", 1, 1) + _s("/camera") + _s("json") + struct.pack("<I", 0))
    return schema + channel


def json_raw_image(width: int, height: int, t_ns: int, data: bytes | None = None) -> bytes:
    """A foxglove RawImage (JSON encoding) of ``width`` x ``height`` rgb8."""
    data = bytes(width * height * 3) if data is None else data
    stamp = {"sec": t_ns // 1_000_000_000, "nsec": t_ns % 1_000_000_000}
    return json.dumps({"timestamp": stamp, "frame_id": "cam", "width": width, "height": height,
                       "encoding": "rgb8", "step": width * 3, "data": base64.b64encode(data).decode()}).encode()


def message_record(log_time: int, data: bytes, *, channel: int = 1) -> bytes:
    return _rec(0x05, struct.pack("<HIQQ", channel, 0, log_time, log_time) + data)


class Chunk:
    """One chunk to write: its compressed bytes and what it claims.

    Attributes:
        compression: ``"zstd"``, ``"lz4"`` or ``""``.
        data: Compressed records.
        uncompressed_size: Declared size.
        messages: ``(log_time, offset)`` of the channel-1 messages (for the message index).
    """

    def __init__(self, compression: str, data: bytes, uncompressed_size: int,
                 messages: Sequence[tuple[int, int]] = ((0, 0),)) -> None:
        self.compression = compression
        self.data = data
        self.uncompressed_size = uncompressed_size
        self.messages = list(messages)


def write_mcap(path: Path, chunks: Sequence[Chunk], *, summary: bool = True, profile: str = "") -> Path:
    """Write an MCAP with the RawImage JSON channel and ``chunks``; ``summary=False`` leaves
    out the summary (readers must then scan the file); ``profile`` goes in the header."""
    out = bytearray(b"\x89MCAP0\r\n")
    out += _rec(0x01, _s(profile) + _s("overlap-hostile-tests"))
    out += _schema_channel(profile == "ros2")
    indexes = []
    total_msgs = 0
    for ch in chunks:
        start = len(out)
        t0 = min((t for t, _ in ch.messages), default=0)
        t1 = max((t for t, _ in ch.messages), default=0)
        body = (struct.pack("<QQQI", t0, t1, ch.uncompressed_size, 0) + _s(ch.compression)
                + struct.pack("<Q", len(ch.data)) + ch.data)
        out += _rec(0x06, body)
        chunk_len = len(out) - start
        mi_start = len(out)
        entries = b"".join(struct.pack("<QQ", t, off) for t, off in ch.messages)
        out += _rec(0x07, struct.pack("<H", 1) + struct.pack("<I", len(entries)) + entries)
        mi_len = len(out) - mi_start
        offsets = struct.pack("<HQ", 1, mi_start)
        indexes.append(struct.pack("<QQQQ", t0, t1, start, chunk_len) + struct.pack("<I", len(offsets)) + offsets
                       + struct.pack("<Q", mi_len) + _s(ch.compression)
                       + struct.pack("<QQ", len(ch.data), ch.uncompressed_size))
        total_msgs += len(ch.messages)
    out += _rec(0x0F, struct.pack("<I", 0))
    summary_start = 0
    if summary:
        summary_start = len(out)
        out += _schema_channel(profile == "ros2")
        for ix in indexes:
            out += _rec(0x08, ix)
        counts = struct.pack("<HQ", 1, total_msgs)
        out += _rec(0x0B, struct.pack("<QHIIIIQQ", total_msgs, 1, 1, 0, 0, len(chunks), 0, 0)
                    + struct.pack("<I", len(counts)) + counts)
    out += _rec(0x02, struct.pack("<QQI", summary_start, 0, 0))
    out += b"\x89MCAP0\r\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def mcap_zstd_bomb(path: Path, expand: int, *, declare_frame_size: bool, summary: bool = True) -> Path:
    """One chunk whose zstd frame expands to ``expand`` bytes (a message record of zeros)
    while the chunk declares 1 KiB."""
    head = struct.pack("<BQHIQQ", 0x05, expand - 9, 1, 0, 0, 0)
    data = zstd_zeros(expand, prefix=head, declare_size=declare_frame_size)
    return write_mcap(path, [Chunk("zstd", data, 1024)], summary=summary)


def mcap_lz4_bomb(path: Path, declared: int, *, summary: bool = True) -> Path:
    """One chunk whose lz4 frame header claims ``declared`` bytes (holding 64 KiB)."""
    payload = message_record(0, bytes(64 * 1024 - 31))
    data = lz4_declaring(payload, declared)
    return write_mcap(path, [Chunk("lz4", data, len(payload))], summary=summary)


def mcap_chunk_flood(path: Path, chunks: int, chunk_bytes: int) -> Path:
    """``chunks`` honest chunks (each one small message plus ``chunk_bytes`` of padding in an
    unknown record) that are each under the chunk cap but add up past the file's budget."""
    msg = message_record(0, json_raw_image(2, 2, 0))
    pad = 0x80
    head = msg + struct.pack("<BQ", pad, chunk_bytes - len(msg) - 9)
    data = zstd_zeros(chunk_bytes, prefix=head)
    return write_mcap(path, [Chunk("zstd", data, chunk_bytes, [(i * 1_000_000, 0)])
                             for i in range(chunks)])


def mcap_record_flood(path: Path, records: int) -> Path:
    """A summary-less MCAP whose one chunk holds ``records`` empty nine-byte records."""
    empty = struct.pack("<BQ", 0x80, 0)
    raw = empty * records
    import zstandard

    data = zstandard.ZstdCompressor(level=3).compress(raw)
    return write_mcap(path, [Chunk("zstd", data, len(raw), [])], summary=False)


def mcap_images(path: Path, frames: Sequence[tuple[int, bytes]], *, summary: bool = True) -> Path:
    """An uncompressed MCAP of JSON RawImage messages ``(log_time, json)``, one per chunk."""
    chunks = []
    for t, payload in frames:
        rec = message_record(t, payload)
        chunks.append(Chunk("", rec, len(rec), [(t, 0)]))
    return write_mcap(path, chunks, summary=summary)


# --------------------------------------------------------------------------- ROS bags


def rosbag1_bomb(path: Path, compression: str, make: Callable[[], bytes]) -> Path:
    """A ROS 1 bag with one small image whose chunk data is replaced by ``make()``."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    Image = ts.types["sensor_msgs/msg/Image"]
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = Writer(path)
    writer.set_compression(Writer.CompressionFormat[compression.upper()])
    with writer:
        writer.compressor = lambda _data: make()
        conn = writer.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        img = Image(header=Header(seq=0, stamp=Time(sec=1, nanosec=0), frame_id="cam"), height=2, width=2,
                    encoding="rgb8", is_bigendian=0, step=6, data=np.zeros(12, np.uint8))
        writer.write(conn, 1_000_000_000, ts.serialize_ros1(img, "sensor_msgs/msg/Image"))
    return path


def rosbag2_mcap_bomb(folder: Path, bomb: Callable[[Path], Path]) -> Path:
    """A rosbag2 folder (mcap storage) whose data file is replaced by ``bomb(path)`` (which
    should write the ``ros2`` profile, or rosbags refuses the file before reading a chunk)."""
    from tests.fixtures_recordings import footage, write_rosbag2

    write_rosbag2(folder, footage(seconds=0.3), storage="mcap", with_jpeg=False)
    (data,) = folder.glob("*.mcap")
    bomb(data)
    return folder


def rosbag2_compressed(folder: Path, mode: str, seconds: float = 1.0) -> Path:
    """An honest rosbag2 folder (sqlite3) written with zstd ``mode`` "MESSAGE" or "FILE"."""
    from rosbags.rosbag2 import Writer
    from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

    from tests.fixtures_recordings import footage, write_rosbag2

    orig = Writer.__init__

    def init(self: Writer, path: Path, *a: object, **k: object) -> None:
        orig(self, path, *a, **k)  # type: ignore[arg-type]
        self.set_compression(CompressionMode[mode], CompressionFormat.ZSTD)

    Writer.__init__ = init  # type: ignore[method-assign]
    try:
        return write_rosbag2(folder, footage(seconds=seconds), with_jpeg=False)
    finally:
        Writer.__init__ = orig  # type: ignore[method-assign]


def rosbag2_message_mode_bomb(folder: Path, data: bytes) -> Path:
    """A rosbag2 folder with ``compression_mode: message`` whose every message is ``data``."""
    import sqlite3

    rosbag2_compressed(folder, "MESSAGE", seconds=0.3)
    (db,) = folder.glob("*.db3")
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE messages SET data = ?", (data,))
    con.close()
    return folder


def rosbag2_file_mode_bomb(folder: Path, data: bytes) -> Path:
    """A rosbag2 folder (sqlite3) saying ``compression_mode: file`` whose one data file is
    ``data`` (rosbags decompresses such files whole into a temporary folder when opening)."""
    from tests.fixtures_recordings import footage, write_rosbag2

    write_rosbag2(folder, footage(seconds=0.3), with_jpeg=False)
    (db,) = folder.glob("*.db3")
    db.unlink()
    name = db.name + ".zstd"
    (folder / name).write_bytes(data)
    meta = folder / "metadata.yaml"
    text = meta.read_text()
    text = text.replace("compression_format: ''", "compression_format: zstd")
    text = text.replace("compression_mode: ''", "compression_mode: FILE")
    text = text.replace(f"- {db.name}", f"- {name}").replace(f"path: {db.name}", f"path: {name}")
    meta.write_text(text)
    return folder


def zstd_declaring(frame: bytes, declared: int) -> bytes:
    """A zstd frame (written with a 4-byte content size field) re-labelled as ``declared``
    bytes: a one-shot ``zstandard.decompress`` allocates the label up front."""
    fhd = frame[4]
    assert fhd >> 6 == 2, "expected a 4-byte frame content size field"
    at = 5 + (0 if fhd & 0x20 else 1)  # the window descriptor is absent in single-segment frames
    return frame[:at] + struct.pack("<I", declared) + frame[at + 4:]


# --------------------------------------------------------------------------- videos


def _mjpeg_packets(n: int, w: int, h: int, shade: int = 0) -> list[bytes]:
    import av

    ctx = av.CodecContext.create("mjpeg", "w")
    ctx.width, ctx.height, ctx.pix_fmt = w, h, "yuvj420p"
    from fractions import Fraction

    ctx.time_base = Fraction(1, 10)
    out: list[bytes] = []
    for i in range(n):
        img = np.full((h, w, 3), (shade + 40 * i) % 256, np.uint8)
        img[: h // 2, : w // 2] = 255 - img[0, 0]
        frame = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format="yuvj420p")
        frame.pts = i
        out += [bytes(p) for p in ctx.encode(frame)]
    out += [bytes(p) for p in ctx.encode(None)]
    return out


def mux_packets(path: Path, codec: str, packets: Sequence[bytes], *, size: tuple[int, int],
                pts_ms: Sequence[int] | None = None, pix_fmt: str = "yuvj420p") -> Path:
    """Mux already-encoded ``packets`` into ``path`` (time base 1 ms; ``pts_ms`` per packet,
    default 100 ms apart)."""
    from fractions import Fraction

    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    tb = Fraction(1, 1000)
    pts = list(pts_ms) if pts_ms is not None else [100 * i for i in range(len(packets))]
    with av.open(str(path), "w") as c:
        st = c.add_stream(codec, rate=10)
        st.width, st.height = size
        st.pix_fmt = pix_fmt
        st.time_base = tb
        for data, t in zip(packets, pts):
            pkt = av.Packet(data)
            pkt.stream = st
            pkt.pts = pkt.dts = t
            pkt.time_base = tb
            c.mux(pkt)
    return path


def mjpeg_size_switch(path: Path, big: tuple[int, int] = (16400, 16)) -> Path:
    """An MJPEG .mkv: ten 64x48 frames, three frames of size ``big``, ten 64x48 frames."""
    small = _mjpeg_packets(10, 64, 48)
    return mux_packets(path, "mjpeg", small + _mjpeg_packets(3, *big) + _mjpeg_packets(10, 64, 48, 100),
                       size=(64, 48))


HOURS_1000_MS = 1000 * 3600 * 1000


def video_time_gap(path: Path) -> Path:
    """A tiny MJPEG .mkv with frames at 0 s, 1 s and 1000 h."""
    return mux_packets(path, "mjpeg", _mjpeg_packets(3, 64, 48), size=(64, 48),
                       pts_ms=[0, 1000, HOURS_1000_MS])


def mcap_time_gap(path: Path) -> Path:
    """An MCAP of three 16x12 RawImage messages at 0 s, 1 s and 1000 h."""
    rng = np.random.default_rng(3)
    ns = [0, 1_000_000_000, HOURS_1000_MS * 1_000_000]
    return mcap_images(path, [(t, json_raw_image(16, 12, t, rng.integers(0, 255, 16 * 12 * 3, np.uint8).tobytes()))
                              for t in ns])


def crc(data: bytes) -> int:
    return zlib.crc32(data)
