"""Decoding MCAP messages into :class:`~overlap_desktop.core.ingest.readers._images.ImageMessage`.

One decoder per topic, chosen by the channel's message encoding: ``cdr`` (ROS 2, via
mcap-ros2-support), ``ros1`` (mcap-ros1-support), ``json``, and ``protobuf`` through a
small wire-format reader driven by the schema's FileDescriptorSet (no protobuf runtime
needed). Payloads compressed per message with zstd (rosbag2's ``compression_mode:
MESSAGE``) are decompressed first, capped in size. rosbag2 bags use the same decoding.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers._images import ImageMessage, message_fields
from overlap_desktop.core.ingest.readers.base import ReaderLimits

__all__ = ["ProtobufSchema", "TopicDecoder", "decompress_payload"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20


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
            value: int | memoryview
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


class TopicDecoder:
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
