"""The reader plugin interface.

A reader turns one kind of media (video files, MCAP recordings, ROS bags, image
folders...) into timed frames. Readers are found through the ``overlap.readers``
entry-point group; the built-in ones register there exactly like third-party
plugins (see ``pyproject.toml``). An entry point names a class implementing
:class:`Reader`; it is instantiated with no arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame

__all__ = ["Reader", "ReaderLimits"]


class ReaderLimits:
    """Caps a reader checks before allocating anything from a size read out of a file.

    Attributes:
        max_pixels: Largest accepted frame (width x height).
        max_message_bytes: Largest accepted single message / packet payload.
        max_dimension: Largest accepted width or height.
        max_chunk_bytes: Largest accepted decompressed chunk of a recording (MCAP, ROS bag).
            A chunk holds at least one whole message, so by default this is the message
            cap plus 64 MiB for the small messages beside it.
    """

    def __init__(self, *, max_pixels: int = 8192 * 8192, max_message_bytes: int = 256 * 1024 * 1024,
                 max_dimension: int = 16384, max_chunk_bytes: int | None = None) -> None:
        self.max_pixels = max_pixels
        self.max_message_bytes = max_message_bytes
        self.max_dimension = max_dimension
        self.max_chunk_bytes = (max_chunk_bytes if max_chunk_bytes is not None
                                else max_message_bytes + 64 * 1024 * 1024)


@runtime_checkable
class Reader(Protocol):
    """What a reader plugin provides.

    Attributes:
        name: Short unique name (``"video"``, ``"mcap"``...), shown by ``overlap doctor``.
        description: One line for humans.
        extensions: Lower-case file suffixes the reader claims (``(".mp4", ...)``); a
            reader that opens folders lists none and answers through :meth:`can_open`.
    """

    name: str
    description: str
    extensions: tuple[str, ...]

    def can_open(self, path: Path) -> bool:
        """Cheap check (suffix, a few magic bytes, a marker file) that ``path`` is ours."""
        ...

    def streams(self, path: Path) -> list[StreamInfo]:
        """List the fingerprintable streams in ``path``.

        Raises:
            MediaError: The file cannot be opened or has no usable stream; the message
                names the problem in plain words.
        """
        ...

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        """Yield every decoded frame of ``stream`` in presentation order.

        Times are nanoseconds from the stream's first frame. The caller (the sampler)
        converts only the frames it keeps, via :meth:`TimedFrame.to_rgb`.

        Raises:
            MediaError: on undecodable data.
            Cancelled: when ``cancel()`` turns true (checked between frames).
        """
        ...
