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

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.ingest.frames import noting_gaps
from overlap_desktop.core.ingest.readers._bounded import BudgetBook
from overlap_desktop.core.ingest.readers._decoders import ImageError, VideoDecoder
from overlap_desktop.core.ingest.readers._images import (
    ConfigurableReader,
    ImageMessage,
    ReaderSettings,
    describe_codec,
    image_size,
    topic_frames,
)
from overlap_desktop.core.ingest.readers._mcap_file import (
    MCAP_MAGIC,
    mcap_errors,
    open_mcap,
    reader_and_topics,
)
from overlap_desktop.core.ingest.readers._mcap_messages import TopicDecoder
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError

__all__ = ["MCAP_MAGIC", "McapReader"]

log = logging.getLogger(__name__)

#: Messages tried per topic when listing streams before the topic is declared undecodable.
_PEEK = 5


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
        errors = mcap_errors()
        problems: list[str] = []
        out: list[StreamInfo] = []
        with open_mcap(path) as fh:
            reader, topics = reader_and_topics(fh, path, settings.limits,
                                                self._budgets.start(path, settings.limits))
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
        decoder: TopicDecoder | None = None
        first_problem: ImageError | None = None
        video: VideoDecoder | None = None
        size: tuple[int, int] | None = None
        # Peek a few messages: one bad message must not hide a good topic.
        for n, (schema, channel, message) in enumerate(reader.iter_messages(topics=[topic])):
            if first is None:
                first = message
            if decoder is None:
                decoder = TopicDecoder(kind, channel.message_encoding, schema, settings.limits)
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
        errors = mcap_errors()
        topic = stream.key
        with open_mcap(path) as fh:
            reader, topics = reader_and_topics(fh, path, settings.limits,
                                                self._budgets.get(path, settings.limits))
            if topic not in topics:
                raise MediaError(f"no image topic {topic!r} in this recording", path=path)
            kind = topics[topic][0]
            yield from noting_gaps(_topic_frames(reader, path, topic, kind, settings, cancel, errors),
                                   extra=stream.extra, path=path, what=f"topic {topic}")


def _topic_frames(reader: Any, path: Path, topic: str, kind: str, settings: ReaderSettings,
                  cancel: CancelCallback | None, errors: tuple[type[BaseException], ...]) -> Iterator[TimedFrame]:
    state: dict[str, TopicDecoder] = {}

    def items() -> Iterator[tuple[int, Callable[[], ImageMessage]]]:
        for schema, channel, message in reader.iter_messages(topics=[topic]):
            def decode(schema: Any = schema, channel: Any = channel, data: bytes = message.data) -> ImageMessage:
                if "decoder" not in state:
                    try:
                        state["decoder"] = TopicDecoder(kind, channel.message_encoding, schema, settings.limits)
                    except ImageError as exc:  # the topic's schema, not one message: give up on it
                        raise MediaError(f"topic {topic}: {exc}", path=path) from exc
                return state["decoder"](data)

            yield message.log_time, decode

    yield from topic_frames(items(), path=path, topic=topic, kind=kind, settings=settings, cancel=cancel,
                            errors=errors, corrupt="corrupt or truncated MCAP data")
