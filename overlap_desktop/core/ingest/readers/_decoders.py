"""Pixel decoders for the recording readers: raw buffers, compressed images, compressed video.

Raw ``sensor_msgs/Image``-style buffers (every layout in :data:`RAW_ENCODINGS`), JPEG,
PNG and WebP images, and foxglove ``CompressedVideo`` packets become ``uint8`` RGB.
Every size read out of a file is checked against
:class:`~overlap_desktop.core.ingest.readers.base.ReaderLimits` *before* anything is
allocated from it, and a buffer shorter than ``step * height`` is refused. Problems
with one image raise :class:`ImageError`; which decoder a message needs is decided in
:mod:`overlap_desktop.core.ingest.readers._images`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from overlap_desktop.core.ingest.readers.base import ReaderLimits

if TYPE_CHECKING:
    import av

__all__ = [
    "AvFrame",
    "COMPRESSED_FORMATS",
    "ImageError",
    "RAW_ENCODINGS",
    "RawLayout",
    "VideoDecoder",
    "check_dimensions",
    "compressed_format",
    "compressed_size",
    "compressed_to_rgb",
    "nbytes",
    "normalize_encoding",
    "raw_to_rgb",
    "validate_raw",
]


class ImageError(ValueError):
    """One image cannot be decoded; the message says why in plain words."""


# encoding -> (bytes per pixel, kind). Kinds are decoded in raw_to_rgb.
RAW_ENCODINGS: dict[str, tuple[int, str]] = {
    "rgb8": (3, "rgb"),
    "bgr8": (3, "bgr"),
    "rgba8": (4, "rgba"),
    "bgra8": (4, "bgra"),
    "mono8": (1, "mono8"),
    "8uc1": (1, "mono8"),
    "mono16": (2, "mono16"),
    "16uc1": (2, "mono16"),
    "rgb16": (6, "rgb16"),
    "bgr16": (6, "bgr16"),
    "rgba16": (8, "rgba16"),
    "bgra16": (8, "bgra16"),
    "uyvy": (2, "uyvy"),
    "yuv422": (2, "uyvy"),  # ROS names UYVY "yuv422" (sensor_msgs/image_encodings.h)
    "yuyv": (2, "yuyv"),
    "yuv422_yuy2": (2, "yuyv"),
    "bayer_rggb8": (1, "bayer_rggb8"),
    "bayer_bggr8": (1, "bayer_bggr8"),
    "bayer_gbrg8": (1, "bayer_gbrg8"),
    "bayer_grbg8": (1, "bayer_grbg8"),
}

#: Compressed still-image formats we decode (through PyAV).
COMPRESSED_FORMATS = ("jpeg", "png", "webp")

_CODEC_FOR_FORMAT = {"jpeg": "mjpeg", "png": "png", "webp": "webp"}


def normalize_encoding(encoding: str) -> str:
    """Lower-case and trim an encoding name (``"RGB8 "`` -> ``"rgb8"``)."""
    return encoding.strip().lower()


def check_dimensions(width: int, height: int, limits: ReaderLimits) -> None:
    """Refuse sizes that are empty, negative or over the caps.

    Raises:
        ImageError: the size is unusable.
    """
    if width <= 0 or height <= 0:
        raise ImageError(f"empty image ({width}x{height})")
    if width > limits.max_dimension or height > limits.max_dimension:
        raise ImageError(f"declared size {width}x{height} is over the {limits.max_dimension}-pixel "
                         "limit per side")
    if width * height > limits.max_pixels:
        raise ImageError(f"declared size {width}x{height} ({width * height} pixels) is over the limit "
                         f"of {limits.max_pixels} pixels")


# --------------------------------------------------------------------------- raw images


@dataclass(frozen=True, slots=True)
class RawLayout:
    """A validated raw image layout (nothing allocated yet)."""

    width: int
    height: int
    step: int
    bpp: int
    kind: str
    bigendian: bool


def validate_raw(*, width: int, height: int, encoding: str, step: int, data_len: int,
                 is_bigendian: bool = False, limits: ReaderLimits | None = None) -> RawLayout:
    """Check a raw image's declared layout against its buffer and the caps.

    Args:
        width, height: Declared size in pixels.
        encoding: ROS / foxglove encoding name (``rgb8``, ``mono16``, ``bayer_rggb8``...).
        step: Declared bytes per row (0 means tightly packed, as foxglove allows).
        data_len: Length of the pixel buffer in bytes.
        is_bigendian: Byte order of 16-bit samples.
        limits: Caps (defaults if ``None``).

    Returns:
        The layout to pass to :func:`raw_to_rgb`.

    Raises:
        ImageError: unknown encoding, size over the caps, a step too small for the
            width, or a buffer shorter than ``step * height``.
    """
    limits = limits or ReaderLimits()
    enc = normalize_encoding(encoding)
    if enc not in RAW_ENCODINGS:
        raise ImageError(f"unsupported image encoding {encoding!r} (supported: "
                         f"{', '.join(sorted(RAW_ENCODINGS))})")
    bpp, kind = RAW_ENCODINGS[enc]
    width, height, step = int(width), int(height), int(step)
    check_dimensions(width, height, limits)
    if step == 0:
        step = width * bpp
    if step < width * bpp:
        raise ImageError(f"row step {step} is smaller than width x bytes per pixel ({width} x {bpp})")
    if step * height > limits.max_message_bytes:
        raise ImageError(f"declared image of {step * height} bytes is over the limit of "
                         f"{limits.max_message_bytes} bytes")
    # The last row only needs width*bpp bytes, but ROS requires step*height; accept the
    # looser bound so a tightly cut final row is not refused.
    needed = step * (height - 1) + width * bpp
    if data_len < needed:
        raise ImageError(f"image data is {data_len} bytes, shorter than step x height "
                         f"({step} x {height} = {step * height})")
    if kind in ("uyvy", "yuyv") and width % 2:
        raise ImageError(f"{enc} needs an even width, got {width}")
    return RawLayout(width, height, step, bpp, kind, bool(is_bigendian))


def raw_to_rgb(data: bytes | bytearray | memoryview | np.ndarray, layout: RawLayout) -> np.ndarray:
    """Decode a validated raw buffer to ``uint8`` RGB (height, width, 3).

    Rows are sliced by ``step`` (padding dropped); 16-bit samples honour the byte order
    and are scaled to 8 bits by their high byte.
    """
    buf = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1)
    if buf.dtype != np.uint8:
        buf = buf.view(np.uint8)
    w, h, step, bpp = layout.width, layout.height, layout.step, layout.bpp
    # Pad a short final row virtually: take exactly step*h bytes when present, else the rows
    # we validated (the last one may be cut to width*bpp).
    if buf.size >= step * h:
        rows = buf[: step * h].reshape(h, step)[:, : w * bpp]
    else:
        rows = np.empty((h, w * bpp), np.uint8)
        for y in range(h):
            rows[y] = buf[y * step: y * step + w * bpp]
    kind = layout.kind
    if kind == "rgb":
        return np.ascontiguousarray(rows.reshape(h, w, 3))
    if kind == "bgr":
        return np.ascontiguousarray(rows.reshape(h, w, 3)[:, :, ::-1])
    if kind == "rgba":
        return np.ascontiguousarray(rows.reshape(h, w, 4)[:, :, :3])
    if kind == "bgra":
        return np.ascontiguousarray(rows.reshape(h, w, 4)[:, :, 2::-1])
    if kind == "mono8":
        return np.repeat(rows.reshape(h, w, 1), 3, axis=2)
    if kind == "mono16":
        pairs = rows.reshape(h, w, 2)
        high = pairs[:, :, 0] if layout.bigendian else pairs[:, :, 1]
        return np.repeat(high[:, :, None], 3, axis=2)
    if kind in ("rgb16", "bgr16", "rgba16", "bgra16"):
        channels = bpp // 2
        samples = rows.reshape(h, w, channels, 2)
        high = samples[:, :, :3, 0] if layout.bigendian else samples[:, :, :3, 1]
        return np.ascontiguousarray(high[:, :, ::-1] if kind.startswith("bgr") else high)
    if kind in ("uyvy", "yuyv"):
        return _yuv422_to_rgb(rows.reshape(h, w * 2), w, h, uyvy=kind == "uyvy")
    if kind.startswith("bayer_"):
        return _bayer_to_rgb(rows.reshape(h, w), kind[len("bayer_"):len("bayer_") + 4])
    raise ImageError(f"unsupported image encoding kind {kind!r}")  # pragma: no cover - table-driven


def _yuv422_to_rgb(rows: np.ndarray, w: int, h: int, *, uyvy: bool) -> np.ndarray:
    import av

    packed = rows.reshape(h, w, 2)
    if uyvy:
        # UYVY -> YUYV is a byte swap within each 16-bit pair; swscale then does the colour maths
        # exactly as it does for video.
        packed = packed[:, :, ::-1]
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(packed), format="yuyv422")
    return frame.to_ndarray(format="rgb24")


def _bayer_to_rgb(mosaic: np.ndarray, pattern: str) -> np.ndarray:
    """Demosaic by 2x2 binning (half resolution): enough for perceptual fingerprints."""
    h, w = mosaic.shape
    h2, w2 = h // 2, w // 2
    if h2 == 0 or w2 == 0:
        raise ImageError(f"Bayer image {w}x{h} is too small to demosaic")
    m = mosaic[: h2 * 2, : w2 * 2].astype(np.uint16)
    if pattern in ("rggb", "bggr"):
        cells = {pattern[0]: m[0::2, 0::2], pattern[3]: m[1::2, 1::2]}
        g = (m[0::2, 1::2] + m[1::2, 0::2]) // 2
        r, b = cells["r"], cells["b"]
    else:  # gbrg / grbg: greens on the diagonal
        g = (m[0::2, 0::2] + m[1::2, 1::2]) // 2
        r = m[0::2, 1::2] if pattern[1] == "r" else m[1::2, 0::2]
        b = m[0::2, 1::2] if pattern[1] == "b" else m[1::2, 0::2]
    return np.stack([r, g, b], axis=2).astype(np.uint8)


# --------------------------------------------------------------------------- compressed images


def compressed_format(data: bytes | memoryview, declared: str = "") -> str:
    """Identify a compressed still image by its magic bytes (the declared format of a
    ROS CompressedImage is free text like ``"rgb8; jpeg compressed bgr8"``).

    Raises:
        ImageError: not a JPEG, PNG or WebP.
    """
    head = bytes(data[:16])
    if head[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    what = declared.strip() or "unknown"
    if not head:
        raise ImageError("empty image (0 bytes)")
    # A declared format we support with data that does not look like it is damage, not an
    # unsupported format ("unsupported format '.png' (supported: ... png ...)" misleads).
    named = next((f for f in ("jpeg", "jpg", "png", "webp") if f in what.lower()), None)
    if named is not None:
        raise ImageError(f"not a valid {named.replace('jpg', 'jpeg').upper()} image ({len(data)} bytes that do "
                         "not start with its signature): damaged, truncated or misnamed")
    raise ImageError(f"unsupported compressed image format {what!r} (supported: jpeg, png, webp)")


def compressed_size(data: bytes | memoryview, fmt: str) -> tuple[int, int] | None:
    """Width and height declared in a compressed image's header, read without decoding.

    Returns ``None`` when the header does not say (the decoder's own limits then apply).

    Raises:
        ImageError: the header is cut short.
    """
    # A JPEG's frame header may follow large APP segments (EXIF, ICC): hop through the
    # whole buffer (segment lengths only; cheap) rather than giving up after 64 KiB, so the
    # size is always checked before the decoder allocates a picture.
    b = bytes(data) if fmt == "jpeg" else bytes(data[:64])
    try:
        if fmt == "png":
            w, h = struct.unpack(">II", b[16:24])
            return int(w), int(h)
        if fmt == "webp":
            chunk = b[12:16]
            if chunk == b"VP8X":
                w = 1 + int.from_bytes(b[24:27], "little")
                h = 1 + int.from_bytes(b[27:30], "little")
                return w, h
            if chunk == b"VP8L":
                bits = int.from_bytes(b[21:25], "little")
                return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", b[26:30])
                return w & 0x3FFF, h & 0x3FFF
            return None
        if fmt == "jpeg":
            i = 2
            while i + 9 < len(b):
                if b[i] != 0xFF:
                    return None
                marker = b[i + 1]
                if marker == 0xFF:  # fill byte
                    i += 1
                    continue
                seg_len = struct.unpack(">H", b[i + 2:i + 4])[0]
                # SOF0..SOF15 except DHT (C4), JPG (C8), DAC (CC) carry the frame size.
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", b[i + 5:i + 9])
                    return int(w), int(h)
                i += 2 + seg_len
            return None
    except struct.error as exc:
        raise ImageError(f"{fmt} header is cut short") from exc
    return None


def compressed_to_rgb(data: bytes | memoryview, declared: str = "", *,
                      limits: ReaderLimits | None = None) -> np.ndarray:
    """Decode a JPEG / PNG / WebP image to ``uint8`` RGB through PyAV.

    Raises:
        ImageError: unknown format, a declared size over the caps, or undecodable data.
    """
    import av

    limits = limits or ReaderLimits()
    if len(data) > limits.max_message_bytes:
        raise ImageError(f"compressed image of {len(data)} bytes is over the limit of "
                         f"{limits.max_message_bytes} bytes")
    fmt = compressed_format(data, declared)
    size = compressed_size(data, fmt)
    if size is not None:
        check_dimensions(size[0], size[1], limits)
    # create() is typed as the base class; a decoder of a video codec is a VideoCodecContext.
    ctx = cast("av.VideoCodecContext", av.CodecContext.create(_CODEC_FOR_FORMAT[fmt], "r"))
    # FFmpeg refuses a picture over the cap before allocating it (a header we could not read).
    ctx.options = {"max_pixels": str(int(limits.max_pixels))}
    try:
        frames = list(ctx.decode(av.Packet(bytes(data))))
        if not frames:
            frames = list(ctx.decode(None))
    except (av.FFmpegError, ValueError) as exc:
        raise ImageError(f"corrupt {fmt} image: {exc}") from exc
    if not frames:
        raise ImageError(f"corrupt {fmt} image: the decoder returned no picture")
    frame = frames[0]
    check_dimensions(frame.width, frame.height, limits)
    return frame.to_ndarray(format="rgb24")


class AvFrame:
    """A :class:`~overlap_desktop.core.types.TimedFrame` wrapping a decoded ``av.VideoFrame``
    (used for foxglove CompressedVideo topics)."""

    __slots__ = ("_t_ns", "_frame")

    def __init__(self, t_ns: int, frame: av.VideoFrame) -> None:
        self._t_ns = int(t_ns)
        self._frame = frame

    @property
    def t_ns(self) -> int:
        return self._t_ns

    @property
    def width(self) -> int:
        return int(self._frame.width)

    @property
    def height(self) -> int:
        return int(self._frame.height)

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        from overlap_desktop.core.ingest.frames import scale_options

        return self._frame.to_ndarray(format="rgb24", width=width, height=height, **scale_options())


def nbytes(data: Any) -> int:
    if isinstance(data, np.ndarray):
        return int(data.nbytes)
    return len(data)


# --------------------------------------------------------------------------- compressed video

_VIDEO_CODECS = {"h264": "h264", "avc": "h264", "h265": "hevc", "hevc": "hevc", "vp9": "vp9",
                 "av1": "libdav1d"}


class VideoDecoder:
    """Stateful decoder for a foxglove ``CompressedVideo`` topic (one access unit per message).

    Messages before the first keyframe cannot be decoded and are counted as skipped by
    the caller; frames keep the time of the message that carried them.

    Args:
        fmt: The topic's declared format (``h264``, ``h265``, ``vp9``, ``av1``).
        limits: Size caps; a decoded picture over them is refused.

    Raises:
        ImageError: the format is not one we decode.
    """

    def __init__(self, fmt: str, limits: ReaderLimits) -> None:
        import av

        name = _VIDEO_CODECS.get(fmt.strip().lower())
        if name is None:
            raise ImageError(f"unsupported video format {fmt!r} (supported: h264, h265, vp9, av1)")
        # create() is typed as the base class; a decoder of a video codec is a VideoCodecContext.
        try:
            self._ctx = cast("av.VideoCodecContext", av.CodecContext.create(name, "r"))
        except (av.FFmpegError, ValueError):
            if name != "libdav1d":
                raise
            self._ctx = av.CodecContext.create("av1", "r")
        # Every picture, not only the first: FFmpeg refuses one over the cap before allocating it.
        self._ctx.options = {"max_pixels": str(int(limits.max_pixels))}
        self._limits = limits
        self.decoded = 0

    def _frames(self, packet: Any) -> list[AvFrame]:
        import av

        try:
            frames = self._ctx.decode(packet)
        except (av.FFmpegError, ValueError) as exc:
            raise ImageError(f"undecodable video data: {exc}") from exc
        out = []
        for frame in frames:
            check_dimensions(frame.width, frame.height, self._limits)
            out.append(AvFrame(int(frame.pts) if frame.pts is not None else 0, frame))
        self.decoded += len(out)
        return out

    def decode(self, data: Any, t_ns: int) -> list[AvFrame]:
        """Feed one message; return the frames that came out (with their message times).

        Raises:
            ImageError: the data could not be decoded (e.g. no keyframe seen yet).
        """
        import av

        if nbytes(data) > self._limits.max_message_bytes:
            raise ImageError(f"video packet of {nbytes(data)} bytes is over the limit")
        packet = av.Packet(bytes(data))
        packet.pts = int(t_ns)
        packet.dts = int(t_ns)
        return self._frames(packet)

    def flush(self) -> list[AvFrame]:
        """Drain frames still held by the decoder at the end of the topic."""
        try:
            return self._frames(None)
        except ImageError:
            return []
