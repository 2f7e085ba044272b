"""MCAP recordings: every image topic is a stream.

Supported message types (schema names of ROS 2, ROS 1, foxglove protobuf / JSON / ROS):

* ``sensor_msgs/Image`` and foxglove ``RawImage``: rgb8, bgr8, rgba8, bgra8, mono8,
  mono16 (16UC1), rgb16/bgr16/rgba16/bgra16, yuv422 (UYVY), yuyv,
  bayer_rggb8/bggr8/gbrg8/grbg8 (2x2-binned to half resolution). Float depth images
  (32FC1) are refused: they are not camera pictures.
* ``sensor_msgs/CompressedImage`` and foxglove ``CompressedImage``: JPEG, PNG, WebP
  (recognised by their magic bytes; the declared format is free text in ROS).
* foxglove ``CompressedVideo``: H.264, H.265, VP9, AV1, decoded statefully from the
  first keyframe, one frame per message.

Message encodings: ``cdr`` (ROS 2, via mcap-ros2-support), ``ros1`` (mcap-ros1-support),
``json`` and ``protobuf`` (a small built-in wire-format reader driven by the schema's
FileDescriptorSet, so no protobuf runtime is needed). Payloads compressed per message
with zstd, as rosbag2 writes them with ``compression_mode: MESSAGE``, are decompressed
first (size-capped).

Time: ``t_ns`` is the message log time relative to the topic's first message, or the
header stamp relative to the first stamp when ``readers.mcap_time = "header"``.

Bad messages: a message that cannot be decoded (unknown encoding, data shorter than
``step * height``, a size over the caps, corrupt compressed data) is *skipped and
counted*; the count is logged when the topic ends, and a topic where no message
decodes raises :class:`~overlap_desktop.errors.MediaError` naming the file, the topic
and the first problem. A corrupt chunk or truncated file raises ``MediaError``.

Chunks: the ``mcap`` library only parses the file's structure; every chunk is
decompressed here under the caps of :mod:`overlap_desktop.core.ingest.readers._bounded` (per
chunk, per file, records walked), so a few kilobytes that expand to gigabytes are refused
instead of allocated. Messages are located through the chunks' message indexes when they
are sound (the chunk is walked otherwise).
"""

from __future__ import annotations

import heapq
import io
import json
import logging
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.ingest.frames import noting_gaps
from overlap_desktop.core.ingest.readers._bounded import Budget, BudgetBook
from overlap_desktop.core.ingest.readers._images import (
    ConfigurableReader,
    ImageError,
    ImageMessage,
    ReaderSettings,
    VideoDecoder,
    describe_codec,
    image_kind,
    image_size,
    message_fields,
    topic_frames,
)
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError

__all__ = ["McapReader", "MCAP_MAGIC", "decompress_payload", "ProtobufSchema"]

log = logging.getLogger(__name__)

MCAP_MAGIC = b"\x89MCAP0\r\n"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20
#: Messages tried per topic when listing streams before the topic is declared undecodable.
_PEEK = 5


def decompress_payload(data: bytes | memoryview, limits: ReaderLimits) -> bytes | memoryview:
    """Undo rosbag2's per-message zstd compression, if present (capped in size).

    Raises:
        ImageError: the payload is corrupt or decompresses past the message-size cap.
    """
    if bytes(data[:4]) != ZSTD_MAGIC:
        return data
    import zstandard

    try:
        declared = zstandard.frame_content_size(bytes(data[:18]))
    except zstandard.ZstdError:
        declared = -1
    if declared > limits.max_message_bytes:
        raise ImageError(f"compressed message declares {declared} bytes, over the limit of "
                         f"{limits.max_message_bytes}")
    # Stream in bounded pieces: a frame that hides its size cannot make us allocate more
    # than the cap.
    parts: list[bytes] = []
    total = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data))) as reader:
            while True:
                piece = reader.read(_CHUNK)
                if not piece:
                    break
                total += len(piece)
                if total > limits.max_message_bytes:
                    raise ImageError(f"compressed message expands past the limit of "
                                     f"{limits.max_message_bytes} bytes")
                parts.append(piece)
    except zstandard.ZstdError as exc:
        raise ImageError(f"corrupt zstd-compressed message: {exc}") from exc
    return b"".join(parts)


# --------------------------------------------------------------------------- protobuf


class _Wire:
    """Minimal protobuf wire-format reader (bounds-checked)."""

    @staticmethod
    def varint(buf: memoryview, i: int) -> tuple[int, int]:
        result = shift = 0
        while True:
            if i >= len(buf):
                raise ImageError("truncated protobuf varint")
            b = buf[i]
            i += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, i
            shift += 7
            if shift > 63:
                raise ImageError("protobuf varint too long")

    @classmethod
    def fields(cls, buf: memoryview) -> Iterator[tuple[int, int, Any]]:
        i = 0
        n = len(buf)
        while i < n:
            key, i = cls.varint(buf, i)
            number, wtype = key >> 3, key & 7
            if wtype == 0:
                value, i = cls.varint(buf, i)
            elif wtype == 1:
                if i + 8 > n:
                    raise ImageError("truncated protobuf field")
                value, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
            elif wtype == 2:
                length, i = cls.varint(buf, i)
                if i + length > n:
                    raise ImageError("protobuf field runs past the end of the message")
                value, i = buf[i:i + length], i + length
            elif wtype == 5:
                if i + 4 > n:
                    raise ImageError("truncated protobuf field")
                value, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
            else:
                raise ImageError(f"unsupported protobuf wire type {wtype}")
            yield number, wtype, value


_PB_MESSAGE = 11
_PB_STRING = 9
_PB_BYTES = 12
_PB_BOOL = 8


class ProtobufSchema:
    """Decodes protobuf messages described by an MCAP schema (a FileDescriptorSet).

    Only what image messages need: scalars, strings, bytes and nested messages; repeated
    fields keep their last value.

    Args:
        descriptor_set: The schema's ``data`` (serialized ``FileDescriptorSet``).
        root: Full message name (the schema name, e.g. ``foxglove.RawImage``).

    Raises:
        ImageError: the descriptor set is malformed or does not define ``root``.
    """

    def __init__(self, descriptor_set: bytes, root: str) -> None:
        self.messages: dict[str, dict[int, tuple[str, int, str]]] = {}
        for num, _, value in _Wire.fields(memoryview(descriptor_set)):
            if num == 1 and isinstance(value, memoryview):
                self._file(value)
        self.root = root.lstrip(".")
        if self.root not in self.messages:
            raise ImageError(f"protobuf schema does not define {root!r}")

    def _file(self, buf: memoryview) -> None:
        package = ""
        messages: list[memoryview] = []
        for num, _, value in _Wire.fields(buf):
            if num == 2:
                package = bytes(value).decode("utf-8", "replace")
            elif num == 4:
                messages.append(value)
        for m in messages:
            self._message(m, package)

    def _message(self, buf: memoryview, prefix: str) -> None:
        name = ""
        fields: dict[int, tuple[str, int, str]] = {}
        nested: list[memoryview] = []
        for num, _, value in _Wire.fields(buf):
            if num == 1:
                name = bytes(value).decode("utf-8", "replace")
            elif num == 2:
                fname, fnum, ftype, tname = "", 0, 0, ""
                for n2, _, v2 in _Wire.fields(value):
                    if n2 == 1:
                        fname = bytes(v2).decode("utf-8", "replace")
                    elif n2 == 3:
                        fnum = int(v2)
                    elif n2 == 5:
                        ftype = int(v2)
                    elif n2 == 6:
                        tname = bytes(v2).decode("utf-8", "replace").lstrip(".")
                fields[fnum] = (fname, ftype, tname)
            elif num == 3:
                nested.append(value)
        full = f"{prefix}.{name}" if prefix else name
        self.messages[full] = fields
        for n in nested:
            self._message(n, full)

    def decode(self, data: bytes | memoryview, message: str | None = None, depth: int = 0) -> dict[str, Any]:
        """Decode ``data`` as ``message`` (default: the root) into a dict keyed by field name."""
        if depth > 16:
            raise ImageError("protobuf message nested too deeply")
        spec = self.messages.get(message or self.root, {})
        out: dict[str, Any] = {}
        for num, _, value in _Wire.fields(memoryview(data)):
            if num not in spec:
                continue
            fname, ftype, tname = spec[num]
            if ftype == _PB_MESSAGE and isinstance(value, memoryview):
                out[fname] = self.decode(value, tname, depth + 1)
            elif ftype == _PB_STRING and isinstance(value, memoryview):
                out[fname] = bytes(value).decode("utf-8", "replace")
            elif ftype == _PB_BOOL:
                out[fname] = bool(value)
            else:
                out[fname] = value
        return out


# --------------------------------------------------------------------------- decoding


def _decoder_for(message_encoding: str, schema: Any) -> Callable[[Any], Any]:
    """A function turning one (decompressed) payload into a message object or dict.

    Raises:
        ImageError: no decoder for this encoding / schema.
    """
    enc = message_encoding.lower()
    if enc == "json":
        return lambda data: json.loads(bytes(data))
    if enc == "protobuf":
        if schema is None:
            raise ImageError("protobuf channel without a schema")
        pb = ProtobufSchema(bytes(schema.data), schema.name)
        return pb.decode
    factory: Any
    if enc == "cdr":
        from mcap_ros2.decoder import DecoderFactory as Ros2Factory

        factory = Ros2Factory()
    elif enc == "ros1":
        from mcap_ros1.decoder import DecoderFactory as Ros1Factory

        factory = Ros1Factory()
    else:
        raise ImageError(f"unsupported message encoding {message_encoding!r}")
    try:
        fn = factory.decoder_for(message_encoding, schema)
    except Exception as exc:  # third-party schema parsers raise assorted types
        raise ImageError(f"cannot parse the message schema: {exc}") from exc
    if fn is None:
        raise ImageError(f"no decoder for message encoding {message_encoding!r}")
    return fn


class _TopicDecoder:
    """Decodes the messages of one topic into :class:`ImageMessage`."""

    def __init__(self, kind: str, message_encoding: str, schema: Any, limits: ReaderLimits) -> None:
        self.kind = kind
        self.limits = limits
        self._decode = _decoder_for(message_encoding, schema)

    def __call__(self, data: bytes | memoryview) -> ImageMessage:
        if len(data) > self.limits.max_message_bytes:
            raise ImageError(f"message of {len(data)} bytes is over the limit of "
                             f"{self.limits.max_message_bytes}")
        payload = decompress_payload(data, self.limits)
        try:
            obj = self._decode(payload)
        except ImageError:
            raise
        except Exception as exc:  # CDR / ROS1 / JSON parsers raise assorted types on bad bytes
            raise ImageError(f"cannot parse message: {type(exc).__name__}: {exc}") from exc
        return message_fields(obj, self.kind)


def _mcap_errors() -> tuple[type[BaseException], ...]:
    import zstandard
    from mcap.exceptions import McapError

    return (McapError, zstandard.ZstdError, EOFError, ValueError, KeyError, OSError, struct.error)


# --------------------------------------------------------------------------- reader


class McapReader(ConfigurableReader):
    """Reader for ``.mcap`` recordings (ROS 1, ROS 2 and foxglove image topics).

    Args:
        config: Configuration to take ``readers.*`` options from; ``None`` reads the
            effective configuration (``load_config()``) when a file is opened.
        settings: Explicit settings (overrides ``config``).
    """

    name = "mcap"
    description = "MCAP recordings: ROS 1/2 Image and CompressedImage, foxglove image and video topics"
    extensions = (".mcap",)

    def __init__(self, *, config: Any | None = None, settings: ReaderSettings | None = None) -> None:
        super().__init__(config=config, settings=settings)
        self._budgets = BudgetBook()

    # ------------------------------------------------------------------ Reader protocol

    def can_open(self, path: Path) -> bool:
        from overlap_desktop.core.fsutil import is_regular_file, read_regular

        path = Path(path)
        if not is_regular_file(path):
            return False
        if path.suffix.lower() == ".mcap":
            return True
        try:
            return read_regular(path, len(MCAP_MAGIC)) == MCAP_MAGIC
        except OSError:
            return False

    def streams(self, path: Path) -> list[StreamInfo]:
        path = Path(path)
        settings = self.settings()
        errors = _mcap_errors()
        problems: list[str] = []
        out: list[StreamInfo] = []
        with _open(path) as fh:
            try:
                reader = _make_reader(fh, settings.limits, path, self._budgets.start(path, settings.limits))
                topics = _image_topics(reader)
            except errors as exc:
                raise MediaError(f"corrupt or truncated MCAP file: {exc}", path=path) from exc
            if not topics:
                raise MediaError("no image topic (sensor_msgs Image/CompressedImage or foxglove "
                                 "RawImage/CompressedImage/CompressedVideo) in this recording", path=path)
            for topic, (kind, schema_name, encoding, count) in topics.items():
                try:
                    info = self._describe(reader, topic, kind, schema_name, encoding, count, settings)
                except ImageError as exc:
                    problems.append(f"{topic}: {exc}")
                    continue
                except errors as exc:
                    raise MediaError(f"corrupt or truncated MCAP file (topic {topic}): {exc}",
                                     path=path) from exc
                if info is not None:
                    out.append(info)
        if not out:
            if problems:
                raise MediaError("no decodable image topic: " + "; ".join(problems), path=path)
            raise MediaError("its image topics hold no messages", path=path)
        for p in problems:
            log.warning("%s: skipped image topic %s", path, p)
        return out

    def _describe(self, reader: Any, topic: str, kind: str, schema_name: str, encoding: str,
                  count: int | None, settings: ReaderSettings) -> StreamInfo | None:
        first = last = None
        first_msg: ImageMessage | None = None
        decoder: _TopicDecoder | None = None
        first_problem: ImageError | None = None
        video: VideoDecoder | None = None
        size: tuple[int, int] | None = None
        # Peek a few messages: one bad message must not hide a good topic.
        for n, (schema, channel, message) in enumerate(reader.iter_messages(topics=[topic])):
            if first is None:
                first = message
            if decoder is None:
                decoder = _TopicDecoder(kind, channel.message_encoding, schema, settings.limits)
            try:
                msg = decoder(message.data)
                if kind == "video":
                    # An unknown codec is the topic's problem, raised at once.
                    video = video or VideoDecoder(msg.format, settings.limits)
                    first_msg = first_msg or msg
                    # Decode up to the first picture for the size; packets before the first
                    # keyframe may fail, which is normal mid-recording.
                    try:
                        out = video.decode(msg.data, 0)
                    except ImageError:
                        out = []
                    if not out:
                        if n + 1 >= _PEEK:
                            break
                        continue
                    size = (out[0].width, out[0].height)
                else:
                    size = image_size(msg, settings.limits)
            except ImageError as exc:
                first_problem = first_problem or exc
                if n + 1 >= _PEEK or (kind == "video" and video is None):
                    break
                continue
            first_msg = msg
            break
        if first_msg is None:
            if first_problem is not None:
                raise first_problem
            return None
        for _, _, message in reader.iter_messages(topics=[topic], reverse=True):
            last = message
            break
        duration = None
        rate = None
        t_first = first.log_time if first is not None else 0
        t_last = last.log_time if last is not None else 0
        if settings.time_source == "header" and last is not None and decoder is not None:
            try:
                last_stamp = decoder(last.data).stamp_ns
            except ImageError:
                last_stamp = None
            if first_msg.stamp_ns is not None and last_stamp is not None:
                # Assumes the first decodable message is the first one, as in healthy recordings.
                t_first, t_last = first_msg.stamp_ns, last_stamp
        if last is not None and first is not None and count and count > 1:
            span = (t_last - t_first) / 1e9
            if span > 0:
                rate = (count - 1) / span
                # Like a video, the last picture stays on screen one frame interval.
                duration = span + 1.0 / rate
        elif count == 1:
            duration = 0.0
        return StreamInfo(
            key=topic,
            width=size[0] if size else None,
            height=size[1] if size else None,
            duration_s=duration,
            codec=describe_codec(first_msg),
            rate_hint=rate,
            extra={"message_type": schema_name, "message_encoding": encoding, "kind": kind,
                   "messages": count, "time_source": settings.time_source},
        )

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        path = Path(path)
        settings = self.settings()
        errors = _mcap_errors()
        topic = stream.key
        with _open(path) as fh:
            try:
                reader = _make_reader(fh, settings.limits, path, self._budgets.get(path, settings.limits))
                topics = _image_topics(reader)
            except errors as exc:
                raise MediaError(f"corrupt or truncated MCAP file: {exc}", path=path) from exc
            if topic not in topics:
                raise MediaError(f"no image topic {topic!r} in this recording", path=path)
            kind = topics[topic][0]
            yield from noting_gaps(_topic_frames(reader, path, topic, kind, settings, cancel, errors),
                                   extra=stream.extra, path=path, what=f"topic {topic}")


def _topic_frames(reader: Any, path: Path, topic: str, kind: str, settings: ReaderSettings,
                  cancel: CancelCallback | None, errors: tuple[type[BaseException], ...]) -> Iterator[TimedFrame]:
    state: dict[str, _TopicDecoder] = {}

    def items() -> Iterator[tuple[int, Callable[[], ImageMessage]]]:
        for schema, channel, message in reader.iter_messages(topics=[topic]):
            def decode(schema: Any = schema, channel: Any = channel, data: bytes = message.data) -> ImageMessage:
                if "decoder" not in state:
                    try:
                        state["decoder"] = _TopicDecoder(kind, channel.message_encoding, schema, settings.limits)
                    except ImageError as exc:  # the topic's schema, not one message: give up on it
                        raise MediaError(f"topic {topic}: {exc}", path=path) from exc
                return state["decoder"](data)

            yield message.log_time, decode

    yield from topic_frames(items(), path=path, topic=topic, kind=kind, settings=settings, cancel=cancel,
                            errors=errors, corrupt="corrupt or truncated MCAP data")


class _open:
    """Open a file for reading, turning OS errors into MediaError."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: Any = None

    def __enter__(self) -> Any:
        from overlap_desktop.core.fsutil import open_regular

        try:
            self.fh = open_regular(self.path)  # never a FIFO or device: they block or never end
        except OSError as exc:
            raise MediaError(f"cannot open: {exc.strerror or exc}", path=self.path) from exc
        head = self.fh.read(len(MCAP_MAGIC))
        if head != MCAP_MAGIC:
            self.fh.close()
            raise MediaError("not an MCAP file (bad magic bytes)", path=self.path)
        self.fh.seek(0)
        return self.fh

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


def _record_cap(limits: ReaderLimits) -> int:
    """Largest top-level MCAP record (a compressed chunk) accepted before reading it."""
    return max(limits.max_message_bytes * 4, 64 * 1024 * 1024)


_OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE, _OP_CHUNK, _OP_MESSAGE_INDEX = 0x03, 0x04, 0x05, 0x06, 0x07
_REC = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")  # channel id, sequence, log time, publish time
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")


def _make_reader(fh: Any, limits: ReaderLimits, path: Path, budget: Budget | None = None) -> _McapFile:
    """The messages of an MCAP file, chunks decompressed by us under ``budget``.

    Raises:
        MediaError: a chunk declares an uncompressed size over the cap (checked before
            anything is decompressed).
    """
    return _McapFile(fh, limits, path, budget or Budget(path, limits))


class _McapFile:
    """Reads an MCAP's messages without letting the ``mcap`` library decompress anything.

    The library parses the footer, summary and top-level records; every chunk is
    decompressed by :class:`~overlap_desktop.core.ingest.readers._bounded.Budget` (bounded
    steps, per-chunk and per-file caps) and the messages are cut out of it here.

    With an intact summary (a *seeking* file) only the chunks holding the topic are
    read, and only the messages its message indexes point at are parsed (so a chunk
    stuffed with millions of tiny records of other channels costs nothing to walk);
    chunks overlapping in time are merged in log-time order while the messages held
    stay under one chunk's cap. Without a summary (a truncated recording) the file is
    scanned in file order, records counted against the budget, and whatever precedes
    the truncation point is kept.
    """

    def __init__(self, fh: Any, limits: ReaderLimits, path: Path, budget: Budget) -> None:
        from mcap.reader import SeekingReader

        self.fh = fh
        self.path = path
        self.budget = budget
        self.record_cap = _record_cap(limits)
        self.file_size = os.fstat(fh.fileno()).st_size
        summary = None
        try:
            summary = SeekingReader(fh, validate_crcs=True, record_size_limit=self.record_cap).get_summary()
        except Exception:
            summary = None
        # A summary without chunk indexes cannot say where messages are: scan instead.
        self.summary = summary if summary is not None and summary.chunk_indexes else None
        if self.summary is not None:
            for ci in self.summary.chunk_indexes:
                budget.check_declared(ci.uncompressed_size, f"the chunk at byte {ci.chunk_start_offset}")

    # ------------------------------------------------------------------ topics

    def topics(self) -> dict[str, tuple[Any, Any, int | None]]:
        """topic -> (schema, channel, message count or None) of every channel."""
        out: dict[str, tuple[Any, Any, int | None]] = {}
        if self.summary is None:
            for schema, channel, _ in self._linear(None):
                prev = out.get(channel.topic)
                out[channel.topic] = (schema, channel, ((prev[2] or 0) if prev else 0) + 1)
            return out
        summary = self.summary
        counts = summary.statistics.channel_message_counts if summary.statistics else {}
        for cid, channel in sorted(summary.channels.items()):
            if channel.topic not in out:
                out[channel.topic] = (summary.schemas.get(channel.schema_id), channel, counts.get(cid))
        return out

    # ------------------------------------------------------------------ messages

    def iter_messages(self, topics: list[str], reverse: bool = False) -> Iterator[tuple[Any, Any, Any]]:
        """``(schema, channel, message)`` of ``topics`` in log-time order (file order when
        scanning a summary-less file); ``reverse=True`` yields only the last message."""
        if self.summary is None:
            if reverse:
                last = None
                for item in self._linear(set(topics)):
                    last = item
                if last is not None:
                    yield last
                return
            yield from self._linear(set(topics))
            return
        summary = self.summary
        ids = {cid for cid, ch in summary.channels.items() if ch.topic in topics}
        chunks = [ci for ci in summary.chunk_indexes
                  if not ci.message_index_offsets or ids & set(ci.message_index_offsets)]
        if reverse:
            if not chunks:
                return
            last_chunk = max(chunks, key=lambda ci: (ci.message_end_time, ci.chunk_start_offset))
            best = None
            for item in self._chunk_messages(last_chunk, ids):
                if best is None or item[2].log_time >= best[2].log_time:
                    best = item
            if best is not None:
                yield best
            return
        chunks.sort(key=lambda ci: (ci.message_start_time, ci.chunk_start_offset))
        heap: list[tuple[int, int, tuple[Any, Any, Any]]] = []
        held = 0
        seq = 0
        i = 0
        while i < len(chunks) or heap:
            # Load every chunk that may hold a message older than the oldest one held, as
            # long as what is held stays under one chunk's cap (hostile overlaps then come
            # out in file order; the frame loop never lets time step backwards).
            while i < len(chunks) and (not heap or chunks[i].message_start_time <= heap[0][0]) \
                    and (not heap or held <= self.budget.chunk_cap):
                for item in self._chunk_messages(chunks[i], ids):
                    heapq.heappush(heap, (item[2].log_time, seq, item))
                    held += len(item[2].data)
                    seq += 1
                i += 1
            if not heap:
                continue
            _, _, item = heapq.heappop(heap)
            held -= len(item[2].data)
            yield item

    def validate_all(self) -> None:
        """Decompress and walk every chunk under the budget, keeping nothing (used before
        handing the file to a library that would decompress it without caps).

        Raises:
            MediaError: over a cap.
            McapParseError: damaged structure.
        """
        if self.summary is None:
            for _ in self._linear(set()):
                pass
            return
        for ci in self.summary.chunk_indexes:
            where = f"the chunk at byte {ci.chunk_start_offset}"
            data = self._decompress(self._read_chunk(ci.chunk_start_offset), where)
            for _ in self._walk(memoryview(data), {}, {}, set(), where):
                pass

    def _schema_channel(self, cid: int) -> tuple[Any, Any]:
        assert self.summary is not None
        channel = self.summary.channels.get(cid)
        if channel is None:
            raise McapParseError(f"no channel record found with id {cid}")
        schema = self.summary.schemas.get(channel.schema_id) if channel.schema_id else None
        return schema, channel

    def _read_chunk(self, offset: int, length: int | None = None) -> Any:
        """The Chunk record at ``offset`` (compressed data not yet touched)."""
        from mcap.data_stream import ReadDataStream
        from mcap.records import Chunk

        self.fh.seek(offset)
        head = self.fh.read(9)
        if len(head) < 9:
            raise McapParseError(f"chunk at byte {offset} is cut short")
        op, rec_len = _REC.unpack(head)
        if op != _OP_CHUNK:
            raise McapParseError(f"no chunk record at byte {offset} (opcode {op:#x})")
        if rec_len > min(self.record_cap, self.file_size - offset - 9):
            raise McapParseError(f"chunk at byte {offset} declares {rec_len} bytes, past the end of the file "
                                 "or over the record limit")
        return Chunk.read(ReadDataStream(io.BytesIO(self.fh.read(rec_len))))

    def _decompress(self, chunk: Any, where: str) -> bytes:
        data = self.budget.decompress(chunk.data, chunk.compression, declared=chunk.uncompressed_size,
                                      what=where)
        if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
            raise McapParseError(f"{where}: checksum mismatch (damaged data)")
        return data

    def _chunk_messages(self, ci: Any, ids: set[int]) -> list[tuple[Any, Any, Any]]:
        """Messages of channels ``ids`` in one indexed chunk, in log-time order.

        The chunk's message indexes say where the messages are; when they are missing or
        damaged (the chunk itself may be fine) the chunk is walked instead, as the ``mcap``
        library always does, with its records counted against the budget.
        """
        where = f"the chunk at byte {ci.chunk_start_offset}"
        offsets: list[tuple[int, int]] | None = []
        wanted = [cid for cid in ids if cid in ci.message_index_offsets]
        try:
            for cid in wanted:
                offsets.extend(self._message_index(ci.message_index_offsets[cid], cid))  # type: ignore[union-attr]
        except (McapParseError, struct.error) as exc:
            log.debug("%s: %s: damaged message index (%s); walking the chunk", self.path, where, exc)
            offsets = None
        if ci.message_index_offsets and offsets == []:
            return []
        chunk = self._read_chunk(ci.chunk_start_offset)
        data = self._decompress(chunk, where)
        if offsets is not None and ci.message_index_offsets:
            try:
                return self._indexed(memoryview(data), offsets, ids, where)
            except McapParseError as exc:
                log.debug("%s: %s: %s; walking the chunk", self.path, where, exc)
        return sorted(self._walk(memoryview(data), {}, {}, ids, where), key=lambda m: m[2].log_time)

    def _indexed(self, mv: memoryview, offsets: list[tuple[int, int]], ids: set[int],
                 where: str) -> list[tuple[Any, Any, Any]]:
        """The messages at ``offsets`` (from message indexes) of a decompressed chunk."""
        out = []
        taken = 0
        # One message per offset, and together no more than the chunk holds: indexes pointing
        # many times at one big message (or at overlapping ones) would otherwise multiply it.
        for off, _ in sorted({off: t for t, off in offsets}.items(), key=lambda kv: (kv[1], kv[0])):
            item = self._message_at(mv, off, where)
            if item[2].channel_id not in ids:
                raise McapParseError(f"{where}: its message index points at another channel's message")
            taken += len(item[2].data)
            if taken > len(mv):
                raise McapParseError(f"{where}: its message index points at overlapping messages")
            self.budget.charge(len(item[2].data), where)
            out.append(item)
        return out

    def _message_index(self, offset: int, cid: int) -> list[tuple[int, int]]:
        self.fh.seek(offset)
        head = self.fh.read(9)
        if len(head) < 9:
            raise McapParseError(f"message index at byte {offset} is cut short")
        op, rec_len = _REC.unpack(head)
        if op != _OP_MESSAGE_INDEX or rec_len < 6 or rec_len > self.file_size - offset - 9:
            raise McapParseError(f"no valid message index at byte {offset}")
        body = self.fh.read(rec_len)
        (channel_id,) = _U16.unpack_from(body, 0)
        (n,) = _U32.unpack_from(body, 2)
        if channel_id != cid or n % 16 or 6 + n > len(body):
            raise McapParseError(f"message index at byte {offset} is damaged")
        self.budget.count_records(n // 16)
        return [struct.unpack_from("<QQ", body, 6 + k) for k in range(0, n, 16)]

    def _message_at(self, mv: memoryview, off: int, where: str) -> tuple[Any, Any, Any]:
        from mcap.records import Message

        if off + 9 + _MSG.size > len(mv):
            raise McapParseError(f"{where}: a message index points past the chunk's end")
        op, rec_len = _REC.unpack_from(mv, off)
        end = off + 9 + rec_len
        if op != _OP_MESSAGE or rec_len < _MSG.size or end > len(mv):
            raise McapParseError(f"{where}: a message index points at no message")
        cid, sequence, log_time, publish_time = _MSG.unpack_from(mv, off + 9)
        schema, channel = self._schema_channel(cid)
        return schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                        publish_time=publish_time, data=bytes(mv[off + 9 + _MSG.size:end]))

    def _walk(self, mv: memoryview, schemas: dict[int, Any], channels: dict[int, Any], ids: set[int] | None,
              where: str, topics: set[str] | None = None) -> Iterator[tuple[Any, Any, Any]]:
        """Messages among the records of a decompressed chunk, in file order.

        ``ids`` selects channels by id (seeking files: channels come from the summary);
        ``topics`` selects them by topic (scans: ``schemas``/``channels`` fill up as
        their records go by).
        """
        from mcap.data_stream import ReadDataStream
        from mcap.records import Channel, Message, Schema

        i, n = 0, len(mv)
        while i < n:
            self.budget.count_records()
            if i + 9 > n:
                raise McapParseError(f"{where}: a record is cut short")
            op, rec_len = _REC.unpack_from(mv, i)
            body = i + 9
            end = body + rec_len
            if end > n:
                raise McapParseError(f"{where}: a record runs past the end of its chunk")
            if op == _OP_MESSAGE:
                if rec_len < _MSG.size:
                    raise McapParseError(f"{where}: a message record is too short")
                cid, sequence, log_time, publish_time = _MSG.unpack_from(mv, body)
                if self.summary is not None:
                    if ids is not None and cid in ids:
                        schema, channel = self._schema_channel(cid)
                        yield schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                                       publish_time=publish_time,
                                                       data=bytes(mv[body + _MSG.size:end]))
                else:
                    channel = channels.get(cid)
                    if channel is None:
                        raise McapParseError(f"no channel record found with id {cid}")
                    if topics is None or channel.topic in topics:
                        schema = schemas.get(channel.schema_id) if channel.schema_id else None
                        yield schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                                       publish_time=publish_time,
                                                       data=bytes(mv[body + _MSG.size:end]))
            elif op in (_OP_SCHEMA, _OP_CHANNEL):
                stream = ReadDataStream(io.BytesIO(bytes(mv[body:end])))
                try:
                    if op == _OP_SCHEMA:
                        schema = Schema.read(stream)
                        schemas[schema.id] = schema
                    else:
                        channel = Channel.read(stream)
                        if channel.schema_id and channel.schema_id not in schemas:
                            raise McapParseError(f"no schema record found with id {channel.schema_id}")
                        channels[channel.id] = channel
                except (struct.error, UnicodeDecodeError, EOFError) as exc:
                    raise McapParseError(f"{where}: damaged schema or channel record: {exc}") from exc
            i = end

    def _linear(self, topics: set[str] | None) -> Iterator[tuple[Any, Any, Any]]:
        """Scan the file from the start (summary-less files); a truncated tail ends the scan."""
        from mcap.exceptions import EndOfFile
        from mcap.records import Channel, Chunk, Message, Schema
        from mcap.stream_reader import StreamReader

        self.fh.seek(0)
        schemas: dict[int, Any] = {}
        channels: dict[int, Any] = {}
        reader = StreamReader(self.fh, emit_chunks=True, validate_crcs=False, record_size_limit=self.record_cap)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except EndOfFile:
                return  # truncated recording: keep what was read
            except struct.error:
                return  # cut inside a record header
            self.budget.count_records()
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None:
                    raise McapParseError(f"no channel record found with id {record.channel_id}")
                if topics is None or channel.topic in topics:
                    yield (schemas.get(channel.schema_id) if channel.schema_id else None), channel, record
            elif isinstance(record, Chunk):
                where = "a chunk"
                data = self._decompress(record, where)
                yield from self._walk(memoryview(data), schemas, channels, None, where, topics)


class McapParseError(ValueError):
    """Damaged MCAP structure found while cutting messages out of a chunk."""


def _image_topics(reader: _McapFile) -> dict[str, tuple[str, str, str, int | None]]:
    """topic -> (kind, schema name, message encoding, message count) for image topics."""
    out: dict[str, tuple[str, str, str, int | None]] = {}
    for topic, (schema, channel, count) in reader.topics().items():
        kind = image_kind(schema.name) if schema is not None else None
        if kind:
            out[topic] = (kind, schema.name, channel.message_encoding, count)
    return out
