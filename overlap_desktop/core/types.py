"""Plain data types shared by every stage of the pipeline.

Times are nanoseconds (``int``) inside the core and seconds (``float``) in reports.
Nothing here imports heavy modules except numpy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

__all__ = [
    "CODE_BYTES",
    "CancelCallback",
    "CancelToken",
    "EdgeSide",
    "LumaFrame",
    "Progress",
    "ProgressCallback",
    "Segment",
    "Span",
    "StreamFingerprints",
    "StreamInfo",
    "TimedFrame",
    "Variant",
    "check_cancel",
    "ns_to_s",
    "s_to_ns",
]

#: Bytes in one PDQ code (256 bits).
CODE_BYTES = 32
NS_PER_S = 1_000_000_000

EdgeSide = Literal["top", "bottom", "left", "right"]


def s_to_ns(seconds: float) -> int:
    """Convert seconds to integer nanoseconds (rounded)."""
    return int(round(seconds * NS_PER_S))


def ns_to_s(ns: int | np.integer[Any]) -> float:
    """Convert integer nanoseconds to float seconds."""
    return int(ns) / NS_PER_S


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress report from long-running core work.

    Attributes:
        stage: Machine-readable stage name (``"index"``, ``"hash"``, ``"compare"``...).
        done: Units finished overall (files, bytes or frames; see ``unit``).
        total: Units expected overall, or ``None`` when unknown.
        unit: What ``done``/``total`` count (``"files"``, ``"bytes"``, ``"frames"``).
        current: The item being worked on (a path), if any.
        current_done: Fraction 0..1 of ``current`` finished, if known.
        message: A human sentence (e.g. "skipped: unchanged").
    """

    stage: str
    done: float
    total: float | None = None
    unit: str = "files"
    current: str | None = None
    current_done: float | None = None
    message: str | None = None


ProgressCallback = Callable[[Progress], None]
#: Returns True when the work should stop. Polled between frames / files.
CancelCallback = Callable[[], bool]


class CancelToken:
    """A thread-safe cancel flag usable as a :data:`CancelCallback`.

    The GUI sets it from the UI thread; core loops call the token (``token()``)
    between frames.
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __call__(self) -> bool:
        return self._event.is_set()


def check_cancel(cancel: CancelCallback | None) -> None:
    """Raise :class:`~overlap_desktop.errors.Cancelled` if ``cancel`` says so."""
    if cancel is not None and cancel():
        from overlap_desktop.errors import Cancelled

        raise Cancelled()


# --------------------------------------------------------------------------- frames


class TimedFrame(Protocol):
    """One decoded frame with its presentation time.

    Readers yield these lazily; conversion to pixels happens only for the frames
    the sampler keeps, so decoding cost is not doubled by colour conversion.
    """

    @property
    def t_ns(self) -> int:
        """Presentation time in nanoseconds from the start of the stream."""
        ...

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        """Return the frame as ``uint8`` RGB of shape (height, width, 3), scaled by swscale.

        The array may be a view of the decoder's buffer (not contiguous, possibly read-only):
        copy it to keep or modify it.
        """
        ...


class LumaFrame(TimedFrame, Protocol):
    """A frame that can also hand out its luma directly (the video reader while indexing).

    The fingerprint needs only luma. Asking the scaler for it skips the RGB conversion and
    the per-pixel weighting, over a third of the per-sample cost of small videos; the
    values differ from PDQ's weighting of the RGB picture by a level or two (bench/RESULTS.md).
    """

    def to_luma(self, width: int, height: int) -> np.ndarray:
        """Return full-range luma ``uint8 (height, width)`` in display orientation, scaled by swscale.

        The array may be a view of the decoder's buffer, like :meth:`TimedFrame.to_rgb`'s.
        """
        ...


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """One fingerprintable stream inside a media file (a video track, an image topic).

    Attributes:
        key: Stable identifier within the file (``"v:0"`` for a video track, the topic
            name for a recording). Used in the index and in manifests.
        width, height: Display size in pixels after rotation, if known.
        duration_s: Duration in seconds, if known.
        codec: Codec or encoding name (``"h264"``, ``"rgb8"``, ``"jpeg"``...).
        rate_hint: Nominal frames per second, if known (never used for timing).
        rotation: Display rotation in degrees that the reader applies.
        extra: Reader-specific facts (message type, episode table...).
    """

    key: str
    width: int | None = None
    height: int | None = None
    duration_s: float | None = None
    codec: str | None = None
    rate_hint: float | None = None
    rotation: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- variants


@dataclass(frozen=True, slots=True, order=True)
class Variant:
    """A transform applied to corpus frames before hashing, so manipulated copies match.

    Only the corpus (index) side stores variants; manifests carry the identity
    variant only. A match reports the variant it landed on, which is how the report
    can say "cropped bottom 18%, mirrored".

    Attributes:
        mirrored: Left-right mirror.
        rotation: Counter-clockwise rotation in degrees (0, 90, 180, 270).
        crop: Fraction of each dimension kept by a centred crop (1.0 = none).
        edge: Side from which a strip was removed, or ``None``.
        edge_depth: Fraction of the frame removed from ``edge`` (0.0 = none).
        offset: Off-centre crop anchor ``(x, y)`` in 0..1 for the crop window's centre,
            or ``None`` for centred.
        aspect: Fraction of the width kept by a centred crop at full height (1.0 = none): an
            aspect change, 0.75 for 16:9 footage cropped to 4:3 (or 4:3 cropped to square).
    """

    mirrored: bool = False
    rotation: int = 0
    crop: float = 1.0
    edge: EdgeSide | None = None
    edge_depth: float = 0.0
    offset: tuple[float, float] | None = None
    aspect: float = 1.0

    @property
    def is_identity(self) -> bool:
        return self == Variant()

    def to_dict(self) -> dict[str, Any]:
        """JSON form used in reports and the index (see docs/report-schema.md)."""
        return {
            "mirrored": self.mirrored,
            "rotation": self.rotation,
            "crop": None if self.crop >= 1.0 else round(self.crop, 4),
            "edge": None if self.edge is None else {"side": self.edge, "depth": round(self.edge_depth, 4)},
            "offset": None if self.offset is None else [round(self.offset[0], 4), round(self.offset[1], 4)],
            # Only when set: indexes and reports made before aspect crops keep their exact form.
            **({"aspect": round(self.aspect, 4)} if self.aspect < 1.0 else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Variant:
        edge = d.get("edge")
        off = d.get("offset")
        return cls(
            mirrored=bool(d.get("mirrored", False)),
            rotation=int(d.get("rotation", 0)),
            crop=1.0 if d.get("crop") is None else float(d["crop"]),
            edge=None if edge is None else edge["side"],
            edge_depth=0.0 if edge is None else float(edge["depth"]),
            offset=None if off is None else (float(off[0]), float(off[1])),
            aspect=1.0 if d.get("aspect") is None else float(d["aspect"]),
        )

    def describe(self) -> str:
        """Plain words for a buyer: ``"cropped bottom 18%, mirrored"`` (``""`` for identity)."""
        parts: list[str] = []
        if self.aspect < 1.0:
            parts.append(f"cropped to {round(self.aspect * 100)}% of its width (aspect changed)")
        if self.crop < 1.0:
            where = "off-centre " if self.offset is not None else ""
            parts.append(f"{where}cropped to {round(self.crop * 100)}%")
        if self.edge is not None and self.edge_depth > 0:
            parts.append(f"cropped {self.edge} {round(self.edge_depth * 100)}%")
        if self.rotation:
            parts.append(f"rotated {self.rotation}°")
        if self.mirrored:
            parts.append("mirrored")
        return ", ".join(parts)


# --------------------------------------------------------------------------- fingerprints


@dataclass(frozen=True, slots=True)
class Span:
    """A time span in seconds with a reason (used for indeterminate time)."""

    start_s: float
    end_s: float
    reason: str = ""

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


@dataclass(slots=True)
class StreamFingerprints:
    """The fingerprints of one stream, sampled on a real-time grid.

    Attributes:
        times_ns: ``int64 (n,)`` grid times in nanoseconds, increasing.
        quality: ``uint8 (n,)`` PDQ quality 0..100 of the identity variant.
        codes: ``uint8 (n, V, 32)``; ``codes[:, 0]`` is the identity variant.
        variants: ``V`` variants; ``variants[0]`` is ``Variant()``.
        usable: ``bool (n,)`` frames eligible for matching (quality >= floor and not
            inside an indeterminate span).
        indeterminate: Spans excluded from matching (featureless, static), with reasons.
        fps: The sampling grid rate (samples per second).
        duration_s: Stream duration in seconds.
    """

    times_ns: np.ndarray
    quality: np.ndarray
    codes: np.ndarray
    variants: tuple[Variant, ...]
    usable: np.ndarray
    indeterminate: list[Span]
    fps: float
    duration_s: float

    def __len__(self) -> int:
        return int(self.times_ns.shape[0])


# --------------------------------------------------------------------------- matches


@dataclass(slots=True)
class Segment:
    """A stretch of offered footage matched to owned footage: a line in the
    query-time x corpus-time plane.

    Attributes:
        query_file, query_stream: The offered file and stream.
        query_start, query_end: Span in the offered file, seconds.
        corpus_file, corpus_stream: The owned file (path in the lab's index) and stream.
        corpus_start, corpus_end: Span in the owned file, seconds (start > end when reversed).
        speed: Playback speed of the offered copy relative to the owned original
            (0.5 = slowed to half speed, negative = reversed).
        variant: The corpus variant the match landed on.
        frames: Number of supporting frame matches.
        mean_distance: Mean Hamming distance of the supporting matches.
        score: 0..1 confidence.
        pairs: Optional ``float64 (k, 3)`` array of (query_s, corpus_s, distance) for plots.
        chance: Expected number of lines at least this strong that chance alone would
            produce, comparing this offered stream with everything searched (an E-value,
            calibrated on the measured background similarity of this pair of streams;
            see docs/architecture.md, "Evidence model"). Smaller is surer: 1e-9 reads
            "about 1 in a billion". ``None`` when not computed (reports older than
            ``overlap.report/2``).
        speed_low, speed_high: 95% interval of ``speed`` (same sign convention);
            ``None`` when not computed. Words like "slowed" are used only when the
            interval excludes normal speed.
    """

    query_file: str
    query_stream: str
    query_start: float
    query_end: float
    corpus_file: str
    corpus_stream: str
    corpus_start: float
    corpus_end: float
    speed: float
    variant: Variant
    frames: int
    mean_distance: float
    score: float
    pairs: np.ndarray | None = None
    chance: float | None = None
    speed_low: float | None = None
    speed_high: float | None = None

    @property
    def query_duration(self) -> float:
        return max(0.0, self.query_end - self.query_start)
