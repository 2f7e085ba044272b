"""Image-sequence folders: numbered JPEG / PNG / WebP stills played at a stated rate.

A folder is claimed when it holds at least two numbered stills, nothing but stills and
small sidecar/text files, and no sub-folders (so claiming it never hides other media
from the indexer, which does not descend into claimed folders).

Order is natural (``frame_2`` before ``frame_10``). A frame's time is its number
relative to the first number, divided by the frame rate, so gaps in the numbering
(dropped frames) keep real time; when the numbers are not unique and increasing the
position in the sorted list is used instead.

Frame rate: ``fps.txt`` in the folder (a single number), or ``image_fps`` under
``[readers]`` in an ``overlap.toml`` in the folder, else the ``readers.image_fps``
setting (default 30).

Only regular files are read: a FIFO or device in the folder (or a still symlinked to
``/dev/zero``) would block or never end. Such entries are left out of the sequence
and named in ``StreamInfo.extra["not_regular_files"]`` and a logged warning.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import is_regular_file, read_regular
from overlap_desktop.core.ingest.frames import noting_gaps
from overlap_desktop.core.ingest.readers._decoders import (
    ImageError,
    check_dimensions,
    compressed_format,
    compressed_size,
    compressed_to_rgb,
)
from overlap_desktop.core.ingest.readers._images import ConfigurableReader, LazyImageFrame
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ImageSequenceReader", "IMAGE_SUFFIXES", "natural_key", "sequence_files"]

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
#: Files that may sit beside the stills without stopping the folder being a sequence.
SIDECAR_SUFFIXES = (".txt", ".json", ".toml", ".yaml", ".yml", ".csv", ".md")
STREAM_KEY = "images"
_DIGITS = re.compile(r"(\d+)")
_MAX_SIDECAR = 64 * 1024


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key putting ``frame_2`` before ``frame_10``."""
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p.lower()) for p in _DIGITS.split(name) if p)
    return (parts, name)  # the exact name only breaks ties


def _number(name: str) -> int | None:
    found = _DIGITS.findall(Path(name).stem)
    return int(found[-1]) if found else None


def sequence_files(folder: Path) -> list[Path]:
    """The numbered stills of ``folder`` in natural order (empty if it is not a sequence)."""
    return _scan(folder)[0]


def _scan(folder: Path) -> tuple[list[Path], list[str]]:
    """Numbered stills in natural order, and the names of entries that are not regular files."""
    stills: list[Path] = []
    odd: list[str] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return [], []
    for p in entries:
        if p.name.startswith("."):
            continue
        if p.is_dir():
            return [], []  # sub-folders may hold other media: leave the folder to the walker
        if not is_regular_file(p):
            odd.append(p.name)  # FIFO, device, socket, dangling link: never read
            continue
        suffix = p.suffix.lower()
        if suffix in IMAGE_SUFFIXES:
            if _number(p.name) is None:
                return [], []
            stills.append(p)
        elif suffix not in SIDECAR_SUFFIXES:
            return [], []
    if len(stills) < 2:
        return [], []
    return sorted(stills, key=lambda p: natural_key(p.name)), sorted(odd)


def _times_ns(files: list[Path], fps: float) -> list[int]:
    numbers = [_number(p.name) for p in files]
    usable = all(n is not None for n in numbers) and all(
        b > a for a, b in zip(numbers, numbers[1:]))  # type: ignore[operator]
    if usable:
        first = numbers[0]
        return [int(round((n - first) * 1e9 / fps)) for n in numbers]  # type: ignore[operator]
    return [int(round(i * 1e9 / fps)) for i in range(len(files))]


class ImageSequenceReader(ConfigurableReader):
    """Reader for folders of numbered stills.

    Args:
        config: Configuration to take ``readers.*`` options from; ``None`` reads the
            effective configuration when a folder is opened.
        settings: Explicit settings (overrides ``config``).
    """

    name = "imageseq"
    description = "Folders of numbered JPEG/PNG/WebP images (rate from fps.txt or readers.image_fps)"
    extensions: tuple[str, ...] = ()

    def can_open(self, path: Path) -> bool:
        path = Path(path)
        if not path.is_dir():
            return False
        # Recording folders belong to their own readers.
        if (path / "metadata.yaml").is_file() or (path / "meta" / "info.json").is_file():
            return False
        return bool(sequence_files(path))

    def frame_rate(self, folder: Path) -> tuple[float, str]:
        """The folder's frame rate and where it came from.

        Raises:
            MediaError: a sidecar states an unusable rate.
        """
        folder = Path(folder)
        fps_txt = folder / "fps.txt"
        if fps_txt.is_file():
            try:
                text = read_regular(fps_txt, _MAX_SIDECAR).decode("utf-8", errors="replace").strip()
                fps = float(text.split()[0]) if text else float("nan")
            except (OSError, ValueError) as exc:
                raise MediaError(f"fps.txt does not hold a frame rate: {exc}", path=folder) from exc
            return _check_fps(fps, folder, "fps.txt"), "fps.txt"
        toml = folder / "overlap.toml"
        if toml.is_file():
            try:
                data = tomllib.loads(read_regular(toml, _MAX_SIDECAR).decode("utf-8", errors="replace"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise MediaError(f"overlap.toml is not readable: {exc}", path=folder) from exc
            value = data.get("readers", {}).get("image_fps") if isinstance(data.get("readers"), dict) else None
            if value is not None:
                try:
                    fps = float(value)
                except (TypeError, ValueError):
                    fps = float("nan")
                return _check_fps(fps, folder, "overlap.toml"), "overlap.toml"
        return self.settings().image_fps, "default (readers.image_fps)"

    def streams(self, path: Path) -> list[StreamInfo]:
        folder = Path(path)
        files, odd = _scan(folder)
        if not files:
            raise MediaError("not an image sequence (needs at least two numbered jpg/png images and no "
                             "sub-folders)", path=folder)
        if odd:
            log.warning("%s: left out %d entr%s that %s not a regular file (FIFO, device or dangling link): %s",
                        folder, len(odd), "y" if len(odd) == 1 else "ies", "is" if len(odd) == 1 else "are",
                        ", ".join(odd[:5]) + (" ..." if len(odd) > 5 else ""))
        settings = self.settings()
        fps, source = self.frame_rate(folder)
        first = files[0]
        try:
            head = _read_head(first)
            fmt = compressed_format(head, first.suffix)
            size = compressed_size(head, fmt)
            if size is not None:
                check_dimensions(size[0], size[1], settings.limits)
        except (ImageError, OSError) as exc:
            raise MediaError(f"{first.name}: {exc}", path=folder) from exc
        times = _times_ns(files, fps)
        return [StreamInfo(
            key=STREAM_KEY,
            width=size[0] if size else None,
            height=size[1] if size else None,
            duration_s=times[-1] / 1e9 + 1.0 / fps,
            codec=fmt,
            rate_hint=fps,
            extra={"images": len(files), "fps_source": source, "first": first.name, "last": files[-1].name,
                   **({"not_regular_files": odd[:100]} if odd else {})},
        )]

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        folder = Path(path)
        files = sequence_files(folder)
        if not files:
            raise MediaError("not an image sequence (no numbered images left)", path=folder)
        settings = self.settings()
        fps, _ = self.frame_rate(folder)
        yield from noting_gaps(self._frames(folder, files, fps, settings.limits, cancel), extra=stream.extra,
                               path=folder)

    @staticmethod
    def _frames(folder: Path, files: list[Path], fps: float, limits: Any,
                cancel: CancelCallback | None) -> Iterator[TimedFrame]:
        for p, t in zip(files, _times_ns(files, fps)):
            check_cancel(cancel)
            try:
                size = p.stat().st_size
            except OSError as exc:
                raise MediaError(f"{p.name}: cannot read: {exc.strerror or exc}", path=folder) from exc
            if size > limits.max_message_bytes:
                raise MediaError(f"{p.name}: {size} bytes is over the limit of {limits.max_message_bytes}",
                                 path=folder)
            yield LazyImageFrame(t, _loader(p, limits), path=folder, describe=p.name)


def _check_fps(fps: float, folder: Path, source: str) -> float:
    if not (math.isfinite(fps) and 0 < fps <= 10_000):
        raise MediaError(f"{source} states an unusable frame rate ({fps})", path=folder)
    return fps


def _read_head(p: Path) -> bytes:
    return read_regular(p, 65536)


def _loader(p: Path, limits: Any) -> Any:
    def load() -> Any:
        try:
            # One byte over the cap is enough to refuse (the file may have grown since listing).
            data = read_regular(p, limits.max_message_bytes + 1)
        except OSError as exc:
            raise ImageError(f"cannot read: {exc.strerror or exc}") from exc
        return compressed_to_rgb(data, p.suffix, limits=limits)

    return load
