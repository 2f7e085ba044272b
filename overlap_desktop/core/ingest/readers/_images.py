"""Image messages and frames shared by the recording readers (MCAP, ROS bags, image folders).

A reader turns each message into an :class:`ImageMessage` (:func:`message_fields`), and
:func:`frame_for_message` picks the decoder its kind needs from
:mod:`overlap_desktop.core.ingest.readers._decoders` (raw layouts, JPEG/PNG/WebP, and
:class:`VideoDecoder` for compressed video, driven by :func:`topic_frames`).

Decoding is lazy: readers yield :class:`LazyImageFrame` objects whose pixels are only
decoded when the sampler keeps the frame (typically 4 of every 30), and the final
scaling goes through :class:`~overlap_desktop.core.ingest.frames.ArrayFrame` so every reader
produces the same pixels for the same footage as the video reader.

Problems with one image raise :class:`ImageError` (a plain ``ValueError``); the reader
adds the file, topic and message time and decides whether to skip or abort.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.ingest.readers._decoders import (
    ImageError,
    VideoDecoder,
    check_dimensions,
    compressed_format,
    compressed_size,
    compressed_to_rgb,
    nbytes,
    normalize_encoding,
    raw_to_rgb,
    validate_raw,
)
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.types import CancelCallback, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = [
    "ConfigurableReader",
    "ImageMessage",
    "LazyImageFrame",
    "ReaderSettings",
    "describe_codec",
    "frame_for_message",
    "image_kind",
    "image_size",
    "limits_from_config",
    "message_fields",
    "reader_settings",
    "topic_frames",
]


def limits_from_config(config: Any | None) -> ReaderLimits:
    """Reader limits from a :class:`~overlap_desktop.config.Config` (defaults if ``None``
    or the keys are absent)."""
    if config is None:
        return ReaderLimits()
    kw: dict[str, int] = {}
    for key, name in (("readers.max_pixels", "max_pixels"),
                      ("readers.max_message_bytes", "max_message_bytes")):
        try:
            value = config[key]
        except KeyError:
            continue
        if value:
            kw[name] = int(value)
    return ReaderLimits(**kw)


# --------------------------------------------------------------------------- frames


def _array_frame(t_ns: int, rgb: np.ndarray) -> Any:
    from overlap_desktop.core.ingest.frames import ArrayFrame

    return ArrayFrame(t_ns, rgb)


class LazyImageFrame:
    """A :class:`~overlap_desktop.core.types.TimedFrame` whose pixels are decoded on demand.

    Args:
        t_ns: Time from the stream start, nanoseconds.
        decode: Returns the full-resolution ``uint8`` RGB image; called at most once.
        path: The file the image came from (named in errors).
        describe: Where in the file, for error messages (``"topic /cam at 12.300 s"``).
    """

    __slots__ = ("_t_ns", "_decode", "_frame", "path", "describe")

    def __init__(self, t_ns: int, decode: Callable[[], np.ndarray], *, path: str | os.PathLike[str] = "",
                 describe: str = "") -> None:
        self._t_ns = int(t_ns)
        self._decode = decode
        self._frame: Any = None
        self.path = path
        self.describe = describe

    @property
    def t_ns(self) -> int:
        return self._t_ns

    def _materialize(self) -> Any:
        if self._frame is None:
            try:
                rgb = self._decode()
            except ImageError as exc:
                where = f"{self.describe}: " if self.describe else ""
                raise MediaError(f"{where}{exc}", path=self.path or None) from exc
            self._frame = _array_frame(self._t_ns, rgb)
        return self._frame

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        """Decode (once) and scale through the shared swscale path.

        Raises:
            MediaError: the image data is corrupt (names the file and the message).
        """
        return self._materialize().to_rgb(width, height)


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class ReaderSettings:
    """Options the recording readers take from the configuration.

    Attributes:
        limits: Size caps checked before allocating.
        time_source: ``"log"`` (message log time) or ``"header"`` (header stamp).
        image_fps: Frame rate of image folders that do not state one.
    """

    limits: ReaderLimits
    time_source: str = "log"
    image_fps: float = 30.0


def reader_settings(config: Any | None = None) -> ReaderSettings:
    """Settings from ``config`` (a :class:`~overlap_desktop.config.Config`), or from the
    effective configuration (``load_config()``) when ``None``.

    Raises:
        ConfigError: the configuration has a bad value.
    """
    if config is None:
        from overlap_desktop.config import load_config

        config = load_config()

    def get(key: str, default: Any) -> Any:
        try:
            return config[key]
        except KeyError:
            return default

    return ReaderSettings(limits=limits_from_config(config), time_source=str(get("readers.mcap_time", "log")),
                          image_fps=float(get("readers.image_fps", 30.0)))




class ConfigurableReader:
    """Base of the readers that take ``readers.*`` options (caps, time source, image rate).

    Args:
        config: Configuration to take ``readers.*`` options from; ``None`` reads the
            effective configuration (``load_config()``) when a file is opened.
        settings: Explicit settings (overrides ``config``).
    """

    def __init__(self, *, config: Any | None = None, settings: ReaderSettings | None = None) -> None:
        self._config = config
        self._settings = settings

    def configure(self, config: Any) -> None:
        """Take ``readers.*`` options from ``config`` for the files opened next."""
        self._config = config
        self._settings = None

    def settings(self) -> ReaderSettings:
        return self._settings or reader_settings(self._config)

# --------------------------------------------------------------------------- image messages


@dataclass(slots=True)
class ImageMessage:
    """The fields of an image message, whatever its schema (ROS 1/2, foxglove, JSON).

    Attributes:
        kind: ``"raw"``, ``"compressed"`` or ``"video"``.
        data: Pixel / compressed payload.
        width, height, encoding, step, bigendian: Raw layout (``raw`` only).
        format: Declared format (``compressed`` / ``video``).
        stamp_ns: Header / message timestamp in nanoseconds, if present.
    """

    kind: str
    data: Any
    width: int = 0
    height: int = 0
    encoding: str = ""
    step: int = 0
    bigendian: bool = False
    format: str = ""
    stamp_ns: int | None = None


def image_kind(type_name: str) -> str | None:
    """Which image message a schema / type name is (``None`` for anything else).

    Accepts ROS 2 (``sensor_msgs/msg/Image``), ROS 1 (``sensor_msgs/Image``), foxglove
    protobuf / JSON (``foxglove.RawImage``) and ROS (``foxglove_msgs/msg/RawImage``) names.
    """
    name = type_name.strip().replace("/msg/", "/").replace(".", "/")
    pkg, _, typ = name.rpartition("/")
    if pkg == "sensor_msgs":
        return {"Image": "raw", "CompressedImage": "compressed"}.get(typ)
    if pkg in ("foxglove", "foxglove_msgs"):
        return {"RawImage": "raw", "CompressedImage": "compressed", "CompressedVideo": "video"}.get(typ)
    return None


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return default


def _stamp(obj: Any) -> int | None:
    if obj is None:
        return None
    sec = _get(obj, "sec", "secs", "seconds")
    nsec = _get(obj, "nanosec", "nsec", "nsecs", "nanos", default=0)
    if sec is None:
        return None
    return int(sec) * 1_000_000_000 + int(nsec or 0)


def _data(raw: Any) -> Any:
    if isinstance(raw, str):  # JSON encodes bytes as base64
        try:
            return base64.b64decode(raw, validate=True)
        except ValueError as exc:
            raise ImageError("image data is not valid base64") from exc
    if isinstance(raw, (bytes, bytearray, memoryview, np.ndarray)):
        return raw
    if isinstance(raw, (list, tuple)):
        return bytes(raw)
    raise ImageError("message has no image data")


def message_fields(obj: Any, kind: str) -> ImageMessage:
    """Pull the image fields out of a decoded message (attribute objects or dicts).

    Raises:
        ImageError: a field is missing or has the wrong type.
    """
    try:
        header = _get(obj, "header")
        stamp = _stamp(_get(header, "stamp")) if header is not None else _stamp(_get(obj, "timestamp"))
        data = _data(_get(obj, "data"))
        if kind == "raw":
            return ImageMessage(kind, data, width=int(_get(obj, "width", default=0)),
                                height=int(_get(obj, "height", default=0)),
                                encoding=str(_get(obj, "encoding", default="")),
                                step=int(_get(obj, "step", default=0)),
                                bigendian=bool(_get(obj, "is_bigendian", default=False)), stamp_ns=stamp)
        return ImageMessage(kind, data, format=str(_get(obj, "format", default="")), stamp_ns=stamp)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ImageError):
            raise
        raise ImageError(f"malformed image message: {exc}") from exc


def describe_codec(msg: ImageMessage) -> str:
    """The codec / encoding name shown in :class:`StreamInfo` (``rgb8``, ``jpeg``, ``h264``)."""
    if msg.kind == "raw":
        return normalize_encoding(msg.encoding)
    if msg.kind == "compressed":
        try:
            return compressed_format(msg.data, msg.format)
        except ImageError:
            return msg.format.strip().lower() or "unknown"
    return msg.format.strip().lower()


def image_size(msg: ImageMessage, limits: ReaderLimits) -> tuple[int, int] | None:
    """Width and height of a raw or compressed still image, validated; ``None`` if unknown.

    Raises:
        ImageError: the message cannot be decoded (see :func:`validate_raw`).
    """
    if msg.kind == "raw":
        lay = validate_raw(width=msg.width, height=msg.height, encoding=msg.encoding, step=msg.step,
                           data_len=nbytes(msg.data), is_bigendian=msg.bigendian, limits=limits)
        if lay.kind.startswith("bayer_"):
            return lay.width // 2, lay.height // 2
        return lay.width, lay.height
    if msg.kind == "compressed":
        fmt = compressed_format(msg.data, msg.format)
        size = compressed_size(msg.data, fmt)
        if size is not None:
            check_dimensions(size[0], size[1], limits)
        return size
    return None


def frame_for_message(msg: ImageMessage, t_ns: int, *, limits: ReaderLimits,
                      path: str | os.PathLike[str] = "", describe: str = "") -> LazyImageFrame:
    """Validate a raw or compressed image message now and return a frame that decodes it
    when its pixels are needed.

    Raises:
        ImageError: the declared layout is unusable (checked before any allocation).
    """
    if msg.kind == "raw":
        layout = validate_raw(width=msg.width, height=msg.height, encoding=msg.encoding, step=msg.step,
                              data_len=nbytes(msg.data), is_bigendian=msg.bigendian, limits=limits)
        data = msg.data
        return LazyImageFrame(t_ns, lambda: raw_to_rgb(data, layout), path=path, describe=describe)
    if msg.kind == "compressed":
        if nbytes(msg.data) > limits.max_message_bytes:
            raise ImageError(f"compressed image of {nbytes(msg.data)} bytes is over the limit")
        fmt = compressed_format(msg.data, msg.format)
        size = compressed_size(msg.data, fmt)
        if size is not None:
            check_dimensions(size[0], size[1], limits)
        data, declared = msg.data, msg.format
        return LazyImageFrame(t_ns, lambda: compressed_to_rgb(data, declared, limits=limits),
                              path=path, describe=describe)
    raise ImageError(f"{msg.kind} messages are decoded as video, not as single images")


_log = logging.getLogger(__name__)


def topic_frames(items: Iterator[tuple[int, Callable[[], ImageMessage]]], *, path: Path, topic: str,
                 kind: str, settings: ReaderSettings, cancel: CancelCallback | None,
                 errors: tuple[type[BaseException], ...], corrupt: str) -> Iterator[TimedFrame]:
    """The frames of one image topic of a recording, whatever the container (MCAP, bags).

    Args:
        items: ``(log time in ns, decode)`` per message, in log order; ``decode()`` returns the
            message's image or raises :class:`ImageError` (that message is skipped and counted)
            or :class:`MediaError` (the topic cannot be read at all).
        path, topic: Named in errors.
        kind: ``"video"`` for CompressedVideo topics (stateful decoding), else still images.
        settings: Caps and the time source (log time or header stamp).
        cancel: Polled between messages.
        errors: Exceptions of the container library meaning corrupt data.
        corrupt: How corrupt container data is described ("corrupt recording data"...).

    Times are relative to the topic's first message and never go backwards (header stamps
    can jitter). A topic where nothing decodes is a :class:`MediaError`; skipped messages are
    logged with the first problem.
    """
    use_header = settings.time_source == "header"
    video: VideoDecoder | None = None
    t0: int | None = None
    last_t = 0
    yielded = skipped = 0
    first_problem = ""
    while True:
        check_cancel(cancel)
        try:
            item = next(items, None)
        except errors as exc:
            raise MediaError(f"{corrupt} in topic {topic} after {yielded} images: {exc}", path=path) from exc
        if item is None:
            break
        log_time, decode = item
        try:
            msg = decode()
            stamp = msg.stamp_ns if use_header and msg.stamp_ns is not None else int(log_time)
            if t0 is None:
                t0 = stamp
            t = max(stamp - t0, last_t)
            if kind == "video":
                if video is None:
                    video = VideoDecoder(msg.format, settings.limits)
                frames: list[TimedFrame] = list(video.decode(msg.data, t))
            else:
                frames = [frame_for_message(msg, t, limits=settings.limits, path=path,
                                            describe=f"topic {topic} at {t / 1e9:.3f} s")]
        except ImageError as exc:
            skipped += 1
            first_problem = first_problem or f"{exc} (at {(log_time - (t0 or log_time)) / 1e9:.3f} s)"
            continue
        last_t = t
        for f in frames:
            yielded += 1
            yield f
    if video is not None:
        for f in video.flush():
            yielded += 1
            yield f
    if yielded == 0:
        what = (f"none of its {skipped} messages could be decoded; first problem: {first_problem}"
                if skipped else "it has no messages")
        raise MediaError(f"topic {topic}: {what}", path=path)
    if skipped:
        _log.warning("%s: topic %s: skipped %d undecodable message(s); first problem: %s",
                     path, topic, skipped, first_problem)
