"""Frames in memory and the real-time sampler.

Two things live here:

* :class:`ArrayFrame`, the :class:`~overlap_desktop.core.types.TimedFrame` that
  readers decoding to numpy (image topics, image folders) yield. It scales through
  FFmpeg's swscale, exactly like the video reader, so the same footage gives the
  same pixels whichever reader produced it.
* :func:`sample_on_grid`, which turns frames in presentation order into the frames
  *shown* at the fixed time grid ``k / fps``. Sampling in real time (not every n-th
  frame) is what lets a copy that was trimmed at a sub-second point, resampled to
  another frame rate or changed in speed land on nearly the same pictures.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from overlap_desktop.core.types import NS_PER_S, CancelCallback, TimedFrame, check_cancel

__all__ = [
    "SAMPLE_FPS_FLOOR",
    "SCALE_INTERPOLATION",
    "ArrayFrame",
    "ArrayScaler",
    "GridSample",
    "GridState",
    "LumaArrayFrame",
    "LowSampleRateWarning",
    "MAX_HOLD_S",
    "check_sample_rate",
    "first_grid_index_at",
    "grid_time_ns",
    "noting_gaps",
    "packed_view",
    "sample_on_grid",
    "scale_options",
    "scale_rgb",
    "scaler_gives_luma",
]

_log = logging.getLogger(__name__)

#: Below this sampling rate arbitrary trims and speed changes are detected less reliably.
SAMPLE_FPS_FLOOR = 4.0

#: Longest time a frame is held on the grid: to reach a stated stream duration after the
#: last frame, and across a gap between two frames inside a stream (seconds). Beyond it the
#: grid skips ahead, so a gap of 1000 hours costs nothing instead of 1000 hours of samples.
MAX_HOLD_S = 1.0

#: The swscale filter every reader uses to scale frames. Area averaging is the right
#: filter for strong downscales (1080p -> 128 px) and costs little more than bilinear.
SCALE_INTERPOLATION = "AREA"


@functools.cache
def scale_options() -> dict[str, Any]:
    """Keyword arguments of every swscale call: the area filter, on one thread.

    Worked out once per process (it runs for every sample); unpack it, do not modify it.

    PyAV 17 made reformatting multi-threaded by default. For a 192x192 working image the
    threads' hand-offs cost more CPU than they save, and far more on a loaded machine
    (the conversion took 0.17 ms alone and up to 2 ms per frame under load, bench/RESULTS.md);
    the pixels are the same. Older PyAV has no ``threads`` argument and uses one thread.
    """
    import av  # local: PyAV is heavy and not needed to import the core

    options: dict[str, Any] = {"interpolation": SCALE_INTERPOLATION}
    major = str(getattr(av, "__version__", "0")).split(".")[0]
    if major.isdigit() and int(major) >= 17:
        options["threads"] = 1
    return options


class LowSampleRateWarning(UserWarning):
    """Indexing below :data:`SAMPLE_FPS_FLOOR` samples per second weakens detection."""


def check_sample_rate(fps: float, *, warn: bool = True) -> str | None:
    """Say whether ``fps`` is below the recommended sampling rate.

    The indexer (or the CLI) calls this once per run, not once per file, so users see
    the warning once.

    Args:
        fps: Requested samples per second.
        warn: Also emit a :class:`LowSampleRateWarning`.

    Returns:
        A sentence for the user when ``fps`` is too low, else ``None``.

    Raises:
        ValueError: ``fps`` is not a positive finite number.
    """
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"sampling rate must be a positive number, not {fps!r}")
    if fps >= SAMPLE_FPS_FLOOR:
        return None
    msg = (f"sampling at {fps:g} fps (below {SAMPLE_FPS_FLOOR:g}) weakens detection of arbitrary "
           "trims, concatenations and speed changes")
    if warn:
        warnings.warn(msg, LowSampleRateWarning, stacklevel=2)
    return msg


def scale_rgb(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    """Scale an RGB ``uint8 (h, w, 3)`` array with swscale (the path all readers share).

    Args:
        rgb: Image to scale; gray ``(h, w)`` and RGBA ``(h, w, 4)`` are accepted too.
        width: Output width in pixels.
        height: Output height in pixels.

    Returns:
        A new contiguous ``uint8 (height, width, 3)`` array.
    """
    import av  # local: PyAV is heavy and not needed to import the core

    arr = _as_rgb24(rgb)
    if arr.shape[0] == height and arr.shape[1] == width:
        return arr.copy()
    frame = av.VideoFrame.from_ndarray(arr, format="rgb24")
    return frame.to_ndarray(width=width, height=height, format="rgb24", **scale_options())


def _as_rgb24(rgb: np.ndarray, *, contiguous: bool = True) -> np.ndarray:
    a = np.asarray(rgb)
    if a.dtype != np.uint8:
        if a.dtype == np.uint16:
            a = (a >> 8).astype(np.uint8)
        elif np.issubdtype(a.dtype, np.floating):
            a = np.clip(a * (255.0 if a.max(initial=0) <= 1.0 else 1.0), 0, 255).astype(np.uint8)
        else:
            a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    elif a.ndim == 3 and a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    elif a.ndim == 3 and a.shape[2] == 4:
        a = a[:, :, :3]
    if a.ndim != 3 or a.shape[2] != 3 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"expected an RGB image, got shape {np.shape(rgb)}")
    return np.ascontiguousarray(a) if contiguous else a


@functools.cache
def scaler_gives_luma() -> bool:
    """Whether this PyAV's reformat takes ``dst_color_range`` (needed for full-range ``gray``)."""
    import av

    try:
        av.VideoFrame(16, 16, "yuv420p").reformat(width=8, height=8, format="gray", dst_color_range="JPEG",
                                                  **scale_options())
    except TypeError:  # pragma: no cover - older PyAV
        return False
    return True


def packed_view(frame: Any, width: int, height: int, channels: int) -> np.ndarray:
    """The pixels of a packed 8-bit PyAV frame (``rgb24``, ``gray``) as ``uint8 (height, width, channels)``,
    a view of its first plane (rows may be padded), no copy.

    ``to_ndarray`` copies the picture, and the sampler copies it again into its batch: at
    426x240 the first copy was a fifth of the scaling's cost (38 of 170 us per sample). The
    view keeps the frame's buffer alive (and is writable: :class:`ArrayScaler` fills its
    source picture through it); the pixels are the same.
    """
    plane = frame.planes[0]
    line = int(plane.line_size)
    rows = np.frombuffer(plane, np.uint8, count=line * height).reshape(height, line)
    return rows[:, :width * channels].reshape(height, width, channels)


class ArrayScaler:
    """Scales the raw frames of one stream with swscale, reusing one source picture and one scaler.

    :func:`scale_rgb` builds a PyAV picture from each array (``from_ndarray``): a fresh
    buffer every frame, about 1 ms at 640x480 (its pages are faulted in and zeroed), as much
    as the scaling itself, and a new swscale context. Here the frame is copied into one kept
    picture (0.04 ms) and scaled by one kept reformatter; the pixels are the same as
    :func:`scale_rgb`'s, bit for bit (tests/unit/test_raw_luma.py). Not thread-safe: one per
    stream (its frames share it).
    """

    __slots__ = ("_luma", "_picture", "_rgb", "_view")

    def __init__(self) -> None:
        self._picture: Any = None
        self._view: np.ndarray | None = None
        self._rgb: Any = None
        self._luma: Any = None

    def _load(self, rgb: np.ndarray) -> Any:
        import av

        a = _as_rgb24(rgb, contiguous=False)
        h, w = a.shape[:2]
        if self._view is None or self._view.shape != a.shape:
            self._picture = av.VideoFrame(w, h, "rgb24")
            self._view = packed_view(self._picture, w, h, 3)
        self._view[...] = a  # strided sources (channels-first arrays) are gathered by this copy
        return self._picture

    def rgb(self, rgb: np.ndarray, width: int, height: int) -> np.ndarray:
        """:func:`scale_rgb` of ``rgb``: ``uint8 (height, width, 3)``, a view of the scaled picture."""
        from av.video.reformatter import VideoReformatter

        a = _as_rgb24(rgb, contiguous=False)
        if a.shape[0] == height and a.shape[1] == width:
            return np.array(a)
        picture = self._load(a)
        if self._rgb is None:
            self._rgb = VideoReformatter()
        out = self._rgb.reformat(picture, width=width, height=height, format="rgb24", **scale_options())
        return packed_view(out, width, height, 3)

    def luma(self, rgb: np.ndarray, width: int, height: int) -> np.ndarray:
        """Full-range luma ``uint8 (height, width)`` of ``rgb``, scaled by swscale (a view).

        swscale weights the full-size picture with BT.601's coefficients (PDQ's) in fixed point,
        then area-scales the one plane: a third of scaling three channels. It differs from PDQ's
        weighting of :meth:`rgb`'s picture by rounding only (a third of a level on average,
        bench/RESULTS.md), as the video reader's luma does (:data:`~.readers.video.LUMA_CODECS`).
        Needs :func:`scaler_gives_luma`.
        """
        from av.video.reformatter import VideoReformatter

        picture = self._load(rgb)
        if self._luma is None:
            self._luma = VideoReformatter()
        out = self._luma.reformat(picture, width=width, height=height, format="gray", dst_color_range="JPEG",
                                  **scale_options())
        return packed_view(out, width, height, 1)[:, :, 0]


class ArrayFrame:
    """A decoded frame held as a numpy array (implements ``TimedFrame``).

    Args:
        t_ns: Presentation time in nanoseconds from the start of the stream.
        rgb: ``uint8 (h, w, 3)`` RGB pixels (gray, RGBA and 16-bit are converted; any strides).
        scaler: The stream's :class:`ArrayScaler` (same pixels, cheaper); ``None`` scales
            with :func:`scale_rgb`.
    """

    __slots__ = ("_rgb", "_scaler", "_t_ns")

    def __init__(self, t_ns: int, rgb: np.ndarray, scaler: ArrayScaler | None = None) -> None:
        self._t_ns = int(t_ns)
        self._rgb = rgb
        self._scaler = scaler

    @property
    def t_ns(self) -> int:
        return self._t_ns

    @property
    def rgb(self) -> np.ndarray:
        """The pixels as given."""
        return self._rgb

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        """Return ``uint8 (height, width, 3)`` scaled by swscale (may be a view, see ``TimedFrame``)."""
        if self._scaler is not None:
            return self._scaler.rgb(self._rgb, width, height)
        return scale_rgb(self._rgb, width, height)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(t_ns={self._t_ns}, shape={np.shape(self._rgb)})"


class LumaArrayFrame(ArrayFrame):
    """An :class:`ArrayFrame` that also hands out its luma from the scaler
    (:class:`~overlap_desktop.core.types.LumaFrame`): what the raw-array readers yield when
    indexing, as the video reader does for H.264 (a few tenths of a level from PDQ's weighting
    of the RGB picture; :meth:`ArrayScaler.luma`).
    """

    __slots__ = ()

    def __init__(self, t_ns: int, rgb: np.ndarray, scaler: ArrayScaler) -> None:
        super().__init__(t_ns, rgb, scaler)

    def to_luma(self, width: int, height: int) -> np.ndarray:
        """Full-range luma ``uint8 (height, width)`` scaled by swscale (a view)."""
        assert self._scaler is not None  # set by the constructor
        return self._scaler.luma(self._rgb, width, height)


@dataclass(frozen=True, slots=True)
class GridSample:
    """A grid point and the frame shown at it.

    Attributes:
        k: Grid index (time ``k / fps`` from the first frame).
        t_ns: Grid time in nanoseconds.
        frame: The frame on screen at that time.
        frame_no: Running number of that frame in the input (equal numbers mean the
            same frame held over several grid points, so its pixels can be reused).
    """

    k: int
    t_ns: int
    frame: TimedFrame
    frame_no: int


@dataclass(slots=True)
class GridState:
    """Where :func:`sample_on_grid` stands between two frames, to continue from there later.

    Taken just after a frame was read: every grid point before that frame's time has been
    handed out; the frame itself (shown from ``last_t_ns``) has not been sampled yet.

    Attributes:
        t0_ns: Time of the stream's first frame (the grid's origin), as the reader gave it.
        last_t_ns: Time of the frame just read, from ``t0_ns``; a resumed read starts with it.
        k: The next grid index.
        next_g_ns: That grid point's time, from ``t0_ns``.
        taken: Frames read so far (0: nothing to continue from).
    """

    t0_ns: int = 0
    last_t_ns: int = 0
    k: int = 0
    next_g_ns: int = 0
    taken: int = 0


def grid_time_ns(k: int, fps: float) -> int:
    """Time of grid point ``k`` in nanoseconds, rounded the same way everywhere."""
    return int(round(k * NS_PER_S / fps))


def first_grid_index_at(t_ns: int, fps: float) -> int:
    """Smallest grid index ``k`` whose time ``grid_time_ns(k, fps)`` is ``>= t_ns``."""
    k = max(0, int(t_ns * fps // NS_PER_S) - 1)
    while grid_time_ns(k, fps) < t_ns:
        k += 1
    return k


# Over 80 lines only because its docstring states the sampling rules in full: decode_plan.py and
# the tests rely on exactly these rules; the code itself is about 50 lines.
def sample_on_grid(frames: Iterable[TimedFrame], fps: float, *, duration_s: float | None = None,
                   cancel: CancelCallback | None = None,
                   on_gap: Callable[[int, int], None] | None = None, state: GridState | None = None,
                   resume: GridState | None = None) -> Iterator[GridSample]:
    """Pick the frame shown at each grid point ``k / fps`` (k = 0, 1, ...).

    The frame shown at time ``g`` is the last frame whose presentation time is
    ``<= g``. Times are taken relative to the first frame, so a stream whose first
    timestamp is not 0 samples like one that starts at 0. Frames are never
    converted to pixels here; the caller converts only what it keeps.

    Damaged timing is handled without failing: a frame whose time goes backwards is
    treated as shown at the previous frame's time (it replaces it), and frames with
    equal times keep the last one.

    Grid points run up to the last frame's time, and further up to ``duration_s``
    (exclusive) when that is known and longer, since the last frame stays on screen
    until the stream ends (at most :data:`MAX_HOLD_S` more).

    A gap between two frames is held the same way: the earlier frame fills at most
    :data:`MAX_HOLD_S` of grid points, then the grid resumes at the later frame (grid
    indexes and times jump). Holding a frame across a damaged or hostile timestamp (a
    frame at 1000 h after one at 1 s) would otherwise produce millions of samples.

    Args:
        frames: Frames in presentation order.
        fps: Grid rate in samples per second.
        duration_s: Stream duration, if known.
        cancel: Polled between frames.
        on_gap: Called with ``(start_ns, length_ns)`` (times from the first frame) for
            every gap longer than :data:`MAX_HOLD_S` whose grid points were skipped.
        state: Kept up to date after every frame read (what a checkpoint saves).
        resume: Continue from this saved ``state``: ``frames`` must start with the frame it
            was taken after (time ``t0_ns + last_t_ns``); the samples follow as they would have.

    Yields:
        :class:`GridSample` in grid order.

    Raises:
        ValueError: ``fps`` is not positive.
        Cancelled: when ``cancel()`` turns true.
    """
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"sampling rate must be a positive number, not {fps!r}")
    max_hold = int(MAX_HOLD_S * NS_PER_S)
    t0: int | None = None if resume is None else resume.t0_ns
    prev: TimedFrame | None = None
    prev_t = 0 if resume is None else resume.last_t_ns
    prev_no = -1
    k = 0 if resume is None else resume.k
    next_g = 0 if resume is None else resume.next_g_ns
    n = -1
    for frame in frames:
        check_cancel(cancel)
        n += 1
        t_abs = int(frame.t_ns)
        if t0 is None:
            t0 = t_abs
        t = max(t_abs - t0, prev_t)  # non-monotonic times: never step backwards
        # Every grid point strictly before this frame's time shows the previous frame, for
        # at most MAX_HOLD_S; the points of a longer gap are skipped.
        hold_end = t if prev is None else min(t, prev_t + max_hold)
        while prev is not None and next_g < hold_end:
            yield GridSample(k, next_g, prev, prev_no)
            k += 1
            next_g = grid_time_ns(k, fps)
        if prev is not None and next_g < t:
            if on_gap is not None:
                on_gap(prev_t, t - prev_t)
            k = first_grid_index_at(t, fps)
            next_g = grid_time_ns(k, fps)
        prev, prev_t, prev_no = frame, t, n
        if state is not None:
            state.t0_ns, state.last_t_ns, state.k, state.next_g_ns = t0, t, k, next_g
            state.taken += 1
    if prev is None:
        return
    end = prev_t
    if duration_s is not None and math.isfinite(duration_s):
        # The last frame stays up until the stream ends, but never invent more than
        # MAX_HOLD_S of it: a truncated file whose header promises more would otherwise
        # be padded with copies of its last good frame.
        end_excl = min(int(round(duration_s * NS_PER_S)), prev_t + int(MAX_HOLD_S * NS_PER_S))
        while next_g <= prev_t or next_g < end_excl:
            yield GridSample(k, next_g, prev, prev_no)
            k += 1
            next_g = grid_time_ns(k, fps)
        return
    while next_g <= end:
        yield GridSample(k, next_g, prev, prev_no)
        k += 1
        next_g = grid_time_ns(k, fps)


def noting_gaps(frames: Iterable[TimedFrame], *, extra: dict[str, object] | None, path: object,
                what: str = "") -> Iterator[TimedFrame]:
    """Pass ``frames`` through, noting gaps longer than :data:`MAX_HOLD_S` between them.

    The sampler skips the grid points of such gaps (:func:`sample_on_grid`); this is where
    readers *say* so: when the stream ends, ``extra["timing_gaps"]`` (the stream's
    :class:`~overlap_desktop.core.types.StreamInfo` extra) gets the number of gaps, the
    total and longest length and where the first one starts, and a warning naming the file
    is logged.

    Args:
        frames: A reader's frames, in presentation order.
        extra: The stream's ``extra`` dict to fill (``None``: log only).
        path: The file, for the log line.
        what: The stream, for the log line (``"topic /cam"``).
    """
    limit = int(MAX_HOLD_S * NS_PER_S)
    last: int | None = None
    count = 0
    total = longest = 0
    first_at: int | None = None
    for frame in frames:
        t = int(frame.t_ns)
        if last is not None and t - last > limit:
            count += 1
            total += t - last
            longest = max(longest, t - last)
            if first_at is None:
                first_at = last
        if last is None or t > last:
            last = t
        yield frame
    if count:
        info = {"count": count, "total_s": round(total / NS_PER_S, 3), "longest_s": round(longest / NS_PER_S, 3),
                "first_at_s": round((first_at or 0) / NS_PER_S, 3)}
        if extra is not None:
            extra["timing_gaps"] = info
        where = f": {what}" if what else ""
        _log.warning("%s%s: %d gap(s) in the frame times, longest %.1f s (first after %.3f s); each was "
                     "sampled for at most %g s and the rest skipped", path, where, count,
                     longest / NS_PER_S, (first_at or 0) / NS_PER_S, MAX_HOLD_S)
