"""Which frames the sampler will use, decided before they are decoded.

At 4 samples per second from 25-60 fps video most decoded frames are thrown away:
:func:`~overlap_desktop.core.ingest.frames.sample_on_grid` keeps, for each grid time
``g``, the last frame shown at or before ``g``. A frame with presentation time ``t``
whose successor (in presentation order) starts at ``t_next`` is therefore used only
when a grid time lies in ``[t, t_next)``. Packets arrive in decode order, so the
reader looks a few packets ahead to learn ``t_next`` (B-frames are reordered by at
most a few positions) and asks :class:`SamplePlan` whether the frame is needed.

A frame that is not needed is *not decoded* when the codec allows it: FFmpeg's
``skip_frame = NONREF`` drops non-reference frames (most B-frames), which nothing
else depends on, so every frame that is decoded has exactly the pixels it would have
had. Dropping only unused frames leaves the fingerprints identical to a full decode
(the reader's ``exact`` mode; tests/integration/test_video_reader.py checks it on
every real file). By default the indexing reader goes one step further for H.264 and
H.265: a *used* non-reference frame is dropped too when the frame shown just before it
is decoded and at most :data:`NEIGHBOUR_MAX_S` earlier, so the sample shows that
neighbour (a bounded timing error; its cost in bits is measured in bench/RESULTS.md).

Two guards keep the sampler's behaviour unchanged in odd files: a margin around the
grid test absorbs rounding between packet and frame times, and a frame more than
:data:`MAX_SKIP_SPAN_S` after the last decoded one is always decoded, so skipping can
never open a gap the sampler would treat as a hole in the stream.
"""

from __future__ import annotations

import math

from overlap_desktop.core.ingest.frames import first_grid_index_at, grid_time_ns
from overlap_desktop.core.types import NS_PER_S

__all__ = ["MAX_SKIP_SPAN_S", "NEIGHBOUR_MAX_S", "SamplePlan"]

#: Longest stretch (seconds) after a decoded frame over which frames may be skipped.
MAX_SKIP_SPAN_S = 0.5
#: A used non-reference frame may be left undecoded when the frame shown just before it is
#: decoded and at most this much earlier: the sample then shows the scene up to one frame
#: interval early. 50 ms is one frame at 20 fps and above; slower footage (where one frame
#: is a bigger step in the scene) is never approximated. The extra Hamming distance this
#: costs is measured by ``bench/bench_ingest.py exact`` and bounded by
#: tests/integration/test_video_reader.py.
NEIGHBOUR_MAX_S = 0.05
#: Tolerance (ns) on both ends of the grid test: a frame this close to needed is decoded.
_MARGIN_NS = 2_000_000


class SamplePlan:
    """Decides, from presentation times, whether the sampler will use a frame.

    Args:
        fps: The sampling grid rate (``index.fps``).

    Raises:
        ValueError: ``fps`` is not a positive number.
    """

    def __init__(self, fps: float) -> None:
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f"sampling rate must be a positive number, not {fps!r}")
        self.fps = float(fps)
        self.max_span_ns = int(MAX_SKIP_SPAN_S * NS_PER_S)

    def needed(self, t_ns: int, next_ns: int | None, last_kept_ns: int | None) -> bool:
        """Whether the frame shown from ``t_ns`` to ``next_ns`` is used by the sampler.

        Args:
            t_ns: The frame's time from the stream's first frame.
            next_ns: The next frame's time (presentation order), ``None`` when unknown.
            last_kept_ns: Time of the last frame that was decoded, ``None`` before any.

        Returns:
            ``True`` to decode the frame.
        """
        if next_ns is None or last_kept_ns is None or t_ns <= 0:
            return True
        if t_ns - last_kept_ns >= self.max_span_ns:
            return True
        lo = t_ns - _MARGIN_NS
        k = first_grid_index_at(max(lo, 0), self.fps)
        return grid_time_ns(k, self.fps) < next_ns + _MARGIN_NS
