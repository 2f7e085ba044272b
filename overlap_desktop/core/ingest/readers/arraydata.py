"""What the robot-dataset readers share: frame rates, frame layouts, episode streams.

Robot-learning containers (ALOHA and robomimic HDF5, RLDS, zarr ReplayBuffers) store a
camera as frames without times: frame ``i`` is at ``i / rate``. Some store the rate
(robomimic's ``control_freq``), most do not; :func:`frame_rate` decides which rate a
stream is read at and says where it came from (a stored rate always wins over
``overlap index --frame-rate`` / ``index.frame_rate``, and with neither the file is
refused, because a guessed rate would read as a speed change).

Every such reader makes one stream per episode and camera whose stream key ends with
the camera (``episode_3/steps/observation/image``, ``data/demo_41/obs/agentview_image``);
:func:`episode_extra` fills the ``StreamInfo.extra`` the reports use to name the episode
and camera of a matched stretch ("episode 41, cam_high, 00:12–00:31").

Raw frames (uint8 arrays) go to the fingerprint as :class:`ArrayFrame` with no encode or
decode step; encoded stills (JPEG, PNG) become lazily decoded frames.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from overlap_desktop.core.ingest.readers._decoders import (
    ImageError,
    check_dimensions,
    compressed_format,
    compressed_size,
    compressed_to_rgb,
)
from overlap_desktop.core.ingest.readers._images import LazyImageFrame, limits_from_config
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = [
    "MAX_EPISODES",
    "MAX_FRAMES",
    "MAX_RATE",
    "ROBOTDATA_HINT",
    "ArrayReaderBase",
    "FrameLayout",
    "NO_FRAME_RATE",
    "configured_frame_rate",
    "encoded_frame",
    "episode_extra",
    "frame_layout",
    "frame_rate",
    "image_size",
    "frame_time_ns",
    "raw_frames",
    "read_plan",
    "require",
    "used_frames",
]

ROBOTDATA_HINT = 'pip install "overlap-desktop[robotdata]"'
#: Highest frame rate a file or the configuration may state (cameras record at 5-120 Hz).
MAX_RATE = 1000.0
#: Most frames one camera array may declare (a day at 1 kHz); a larger shape is damage.
MAX_FRAMES = 100_000_000
#: Most episodes one container may declare.
MAX_EPISODES = 10_000_000
#: Bytes read from an array in one go: whole chunk rows, but never more than this.
SLAB_BYTES = 64 * 1024 * 1024
#: Frames the sampler does not use are skipped only while the frames read stay at most this far
#: apart (ns): the sampler holds a frame for at most ``MAX_HOLD_S`` (1 s) before treating the
#: stretch as a gap, so skipping must never open one.
_SKIP_SPAN_NS = 500_000_000


def require(module: str, *, what: str, path: Path, package: str | None = None) -> ModuleType:
    """Import an optional library, or say in plain words which package to install.

    Raises:
        MediaError: the library is not installed (names ``package`` and the extra).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pkg = package or module
        raise MediaError(f"reading {what} needs the {pkg} library, which is not installed; install it with "
                         f"{ROBOTDATA_HINT}", path=path) from exc


# --------------------------------------------------------------------------- rates

#: How the error of an item with no frame rate begins (the app finds such items by it and asks).
NO_FRAME_RATE = "this dataset does not store its frame rate"


def configured_frame_rate(config: Any | None) -> float | None:
    """``index.frame_rate`` from a configuration (``None`` when unset, 0, or absent)."""
    if config is None:
        return None
    try:
        value = config["index.frame_rate"]
    except KeyError:
        return None
    return float(value) if value else None


def frame_rate(stored: float | None, configured: float | None, *, path: Path,
               stored_from: str, example: str = "e.g. --frame-rate 50 for ALOHA") -> tuple[float, str]:
    """The rate a stream is read at, and where it came from.

    Args:
        stored: The rate the file states, if any (it always wins).
        configured: ``--frame-rate`` / ``index.frame_rate``, if given.
        path: Named in errors.
        stored_from: Where the stored rate is (``"env_args control_freq"``).
        example: The format's own example rate for the refusal (``"e.g. --frame-rate 50 for ALOHA"``).

    Raises:
        MediaError: the stored rate is unusable, or no rate is known.
    """
    if stored is not None:
        if not (math.isfinite(stored) and 0 < stored <= MAX_RATE):
            raise MediaError(f"the file states an unusable frame rate ({stored!r} in {stored_from})", path=path)
        return float(stored), f"stored ({stored_from})"
    if configured is not None:
        return float(configured), "--frame-rate (index.frame_rate)"
    raise MediaError(f"{NO_FRAME_RATE}, and a guessed one would read as a speed "
                     "change; give it with `overlap index --frame-rate HZ` (or index.frame_rate in overlap.toml),"
                     f" {example}", path=path)


# --------------------------------------------------------------------------- layouts


@dataclass(frozen=True, slots=True)
class FrameLayout:
    """How an image array holds its frames.

    Attributes:
        frames: Number of frames (axis 0).
        height, width, channels: One frame's size.
        chw: Frames are stored channels-first ``(3, H, W)`` (robomimic ``(T, 3, H, W)``).
        frame_bytes: Bytes of one decoded frame.
    """

    frames: int
    height: int
    width: int
    channels: int
    chw: bool
    frame_bytes: int


#: Element types accepted as pixels: 8-bit, and floats (0..1 or 0..255, as push-T stores them).
_PIXEL_KINDS = ("u1", "f4", "f8", "f2")


def frame_layout(shape: tuple[int, ...], dtype: Any, limits: ReaderLimits) -> FrameLayout | None:
    """The frame layout of an array of ``shape`` and ``dtype``, or ``None`` when it is not a
    camera (a 4-D array of RGB frames, channels last or first).

    Raises:
        ImageError: it is a camera, but its declared sizes are over the caps.
    """
    dt = np.dtype(dtype)
    if len(shape) != 4 or f"{dt.kind}{dt.itemsize}" not in _PIXEL_KINDS:
        return None
    t, a, b, c = (int(x) for x in shape)
    if c == 3 and a >= 8 and b >= 8:
        h, w, ch, chw = a, b, c, False
    elif a == 3 and b >= 8 and c >= 8:
        h, w, ch, chw = b, c, a, True
    else:
        return None
    if t < 0 or t > MAX_FRAMES:
        raise ImageError(f"declares {t} frames (at most {MAX_FRAMES} are accepted)")
    check_dimensions(w, h, limits)
    frame_bytes = h * w * ch * dt.itemsize
    if frame_bytes > limits.max_message_bytes:
        raise ImageError(f"one frame is {frame_bytes} bytes, over the limit of {limits.max_message_bytes}")
    return FrameLayout(t, h, w, ch, chw, frame_bytes)


# --------------------------------------------------------------------------- streams and frames


def episode_extra(*, camera: str, episode: int | None, frames: int, rate: float, rate_source: str,
                  **more: Any) -> dict[str, Any]:
    """``StreamInfo.extra`` of one episode's camera: the episode span the reports map
    matches to, the camera, and where the frame rate came from."""
    duration = frames / rate
    extra: dict[str, Any] = {"camera": camera, "frames": frames, "frame_rate": rate, "rate_source": rate_source}
    if episode is not None:
        extra["episode"] = episode
        extra["episodes"] = [(int(episode), 0.0, duration)]
    extra.update(more)
    return extra


def frame_time_ns(i: int, rate: float) -> int:
    """Time of frame ``i`` of a rate-only array (``i / rate``), rounded the same way everywhere."""
    return int(round(i * 1e9 / rate))


def raw_frames(frames: Iterable[tuple[int, np.ndarray]], *, rate: float, chw: bool,
               cancel: CancelCallback | None, luma: bool = False) -> Iterator[TimedFrame]:
    """Frames ``(index, pixels)`` of raw pixel arrays at ``index / rate`` (channels-first
    arrays turned to HWC).

    No copy and no encode / decode: the sampler scales only the frames it keeps, through one
    :class:`~overlap_desktop.core.ingest.frames.ArrayScaler` for the stream (the pixels of
    :func:`~overlap_desktop.core.ingest.frames.scale_rgb`, without a fresh picture per frame).

    Args:
        luma: Frames also hand out their luma from the scaler
            (:class:`~overlap_desktop.core.ingest.frames.LumaArrayFrame`), as the video reader's
            H.264 frames do when indexing (:attr:`ArrayReaderBase.fast_luma`).
    """
    from overlap_desktop.core.ingest.frames import ArrayFrame, ArrayScaler, LumaArrayFrame, scaler_gives_luma

    scaler = ArrayScaler()
    frame_type = LumaArrayFrame if luma and scaler_gives_luma() else ArrayFrame
    for i, img in frames:
        check_cancel(cancel)
        yield frame_type(frame_time_ns(i, rate), np.moveaxis(img, 0, -1) if chw else img, scaler)


def used_frames(frames: int, rate: float, fps: float | None) -> Iterator[int] | None:
    """The frames of a rate-only array (frame ``i`` at :func:`frame_time_ns`) that the sampler
    will show on its grid ``k / fps``, in increasing order; ``None`` when every frame must be read.

    The sampler (:func:`~overlap_desktop.core.ingest.frames.sample_on_grid`) shows at grid
    time ``g`` the last frame at or before ``g``, and the last frame until the stream ends.
    Given the first and last frames, every frame shown at a grid time, and never more than
    0.5 s between two frames given (less than the sampler's 1 s hold, so no stretch reads as a
    gap), it picks exactly the frames it picks from all of them: the fingerprints are the same,
    and the frames it would throw away are never read (tests/unit/test_rawframe_sampling.py).

    Args:
        frames: Frames in the stream.
        rate: The stream's frame rate.
        fps: The sampler's grid rate; ``None`` (previews, tools) reads every frame.
    """
    if not fps or not (math.isfinite(fps) and math.isfinite(rate)) or frames <= 2:
        return None
    if fps >= rate or rate * _SKIP_SPAN_NS < 1e9:  # every frame is used, or frames are over 0.5 s apart
        return None
    return _used(frames, rate, float(fps))


def _used(frames: int, rate: float, fps: float) -> Iterator[int]:
    from overlap_desktop.core.ingest.frames import grid_time_ns

    step = max(1, int(rate * _SKIP_SPAN_NS / 1e9))  # frames in at most 0.5 s
    t_end = frame_time_ns(frames - 1, rate)
    last = -1

    def shown(g: int) -> int:
        i = min(frames - 1, max(0, int(g * rate / 1e9)))
        while i + 1 < frames and frame_time_ns(i + 1, rate) <= g:
            i += 1
        while i > 0 and frame_time_ns(i, rate) > g:
            i -= 1
        return i

    def fill(prev: int, i: int) -> list[int]:
        # Frames between ``prev`` (given) and ``i`` so that none is over 0.5 s after the one before.
        out: list[int] = []
        while i - prev > step and frame_time_ns(i, rate) - frame_time_ns(prev, rate) > _SKIP_SPAN_NS:
            prev += step
            out.append(prev)
        return out

    k = 0
    while (g := grid_time_ns(k, fps)) <= t_end:
        i = shown(g)
        if i > last:
            if last >= 0:
                yield from fill(last, i)
            yield i
            last = i
        k += 1
    if last < frames - 1:
        yield from fill(last, frames - 1)
        yield frames - 1


def read_plan(keep: Iterable[int], step: int, frame_bytes: int) -> Iterator[tuple[int, int, list[int]]]:
    """Group the frames to read (increasing indexes) into reads ``(a, b, picks)``: frames
    ``a..b`` span whole chunk rows (``step`` frames each along the time axis; 1 where frames
    can be read one by one), adjacent rows read together up to :data:`SLAB_BYTES` (one row
    at least), a row no frame is needed from is never read, and ``picks`` are the frames
    wanted from the read. ``a`` and ``b`` are clipped by the caller to its own range.
    """
    step = max(1, int(step))
    per = max(1, SLAB_BYTES // max(1, frame_bytes * step))  # chunk rows per read
    picks: list[int] = []
    first = last = -1
    for i in keep:
        r = i // step
        if picks and (r > last + 1 or r - first >= per):
            yield first * step, (last + 1) * step, picks
            picks = []
        if not picks:
            first = r
        last = r
        picks.append(i)
    if picks:
        yield first * step, (last + 1) * step, picks


def encoded_frame(t_ns: int, data: bytes | memoryview, *, limits: ReaderLimits, path: Path, describe: str,
                  swap_rb: bool = False) -> LazyImageFrame:
    """A JPEG / PNG / WebP still checked now (format, declared size against the caps) and
    decoded when the sampler keeps it.

    Args:
        swap_rb: Swap red and blue after decoding (stills OpenCV wrote from RGB arrays).

    Raises:
        ImageError: not a supported image, or its declared size is over the caps.
    """
    if len(data) > limits.max_message_bytes:
        raise ImageError(f"an encoded image of {len(data)} bytes is over the limit of {limits.max_message_bytes}")
    fmt = compressed_format(data)
    size = compressed_size(data, fmt)
    if size is not None:
        check_dimensions(size[0], size[1], limits)

    def decode() -> np.ndarray:
        rgb = compressed_to_rgb(data, fmt, limits=limits)
        return rgb[:, :, ::-1] if swap_rb else rgb

    return LazyImageFrame(t_ns, decode, path=path, describe=describe)


def image_size(data: bytes | memoryview, limits: ReaderLimits) -> tuple[str, tuple[int, int] | None]:
    """Format and declared ``(width, height)`` of an encoded still, checked against the caps.

    Raises:
        ImageError: not a supported image, or over the caps.
    """
    fmt = compressed_format(data)
    size = compressed_size(data, fmt)
    if size is not None:
        check_dimensions(size[0], size[1], limits)
    return fmt, size


class ArrayReaderBase:
    """Base of the robot-dataset readers: the ``readers.*`` caps and ``index.frame_rate``
    from the indexing run's configuration (``configure``), defaults otherwise.

    Attributes:
        sample_fps: The sampler's grid rate (``index.fps``, set by :meth:`configure` for an
            indexing run): readers of raw arrays then read only the frames the sampler uses
            (:func:`used_frames`). ``None`` (previews, tools) reads every frame.
        exact: With a sampling rate, still hand the fingerprint RGB (PDQ weights it to luma),
            not the scaler's luma (:attr:`fast_luma`): the codes of versions before it.
    """

    name = ""
    #: The refusal's example rate when a file of this format states none.
    rate_example = "e.g. --frame-rate 50 for ALOHA"
    description = ""
    extensions: tuple[str, ...] = ()

    def __init__(self, *, config: Any | None = None, sample_fps: float | None = None, exact: bool = False) -> None:
        self._config = config
        self.sample_fps = sample_fps
        self.exact = exact

    @property
    def fast_luma(self) -> bool:
        """Whether raw frames hand the fingerprint their luma from the scaler (indexing, not
        ``exact``): a third of the cost of scaling RGB, a few tenths of a level from PDQ's
        weighting of it (:meth:`~overlap_desktop.core.ingest.frames.ArrayScaler.luma`)."""
        return self.sample_fps is not None and not self.exact

    def configure(self, config: Any) -> None:
        """Take the caps, the frame rate for rate-less containers and ``index.fps`` from ``config``."""
        self._config = config
        try:
            self.sample_fps = float(config["index.fps"])
        except KeyError:
            self.sample_fps = None

    def used(self, frames: int, rate: float) -> Iterable[int]:
        """The frames of a stream to read: those the sampler uses when indexing, else all."""
        keep = used_frames(frames, rate, self.sample_fps)
        return range(frames) if keep is None else keep

    def limits(self) -> ReaderLimits:
        return limits_from_config(self._config)

    def rate(self, stored: float | None, path: Path, stored_from: str = "the file") -> tuple[float, str]:
        """See :func:`frame_rate`."""
        return frame_rate(stored, configured_frame_rate(self._config), path=path, stored_from=stored_from,
                          example=self.rate_example)

    @staticmethod
    def stream(key: str, layout_wh: tuple[int | None, int | None], frames: int, codec: str, rate: float,
               extra: dict[str, Any]) -> StreamInfo:
        return StreamInfo(key=key, width=layout_wh[0], height=layout_wh[1], duration_s=frames / rate,
                          codec=codec, rate_hint=rate, extra=extra)
