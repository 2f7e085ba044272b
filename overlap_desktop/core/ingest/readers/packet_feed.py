"""Packets of a video stream in decode order, with the decoder told which frames to skip.

Split from :mod:`overlap_desktop.core.ingest.readers.video` (the reader) so each stays a
page or two: :class:`PacketFeed` decides, packet by packet, whether the sampler will use the
frame, and :func:`ns_of` turns timestamps into nanoseconds exactly as the reader does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

__all__ = ["PacketFeed", "ns_of"]

_NS = 1_000_000_000


def ns_of(pts: int, num: int, den: int) -> int:
    """``round(pts * num / den)`` in integers, halves to even: what ``round(Fraction)`` gives,
    at a fraction of its cost (it runs for every packet and frame)."""
    q, r = divmod(pts * num, den)
    if 2 * r > den or (2 * r == den and q % 2):
        q += 1
    return q


class PacketFeed:
    """A stream's packets in decode order, with the decoder told which frames to skip.

    Reads :data:`LOOKAHEAD` packets ahead so that, for each packet, the next
    presentation time is known (B-frames arrive out of order), and asks the
    :class:`~overlap_desktop.core.ingest.decode_plan.SamplePlan` whether the sampler will
    use the frame. An unused frame is skipped by the decoder when it is not a reference
    frame (``skip_frame = NONREF``); in an intra-only stream (MJPEG...) its packet is
    not decoded at all (:attr:`drop`). Without a sampling rate every frame is decoded.

    With ``ref_of`` (H.264 / H.265, see ``_refs.py``) a *used* non-reference frame is
    skipped too when the frame shown just before it (presentation order) is decoded
    and at most :data:`~overlap_desktop.core.ingest.decode_plan.NEIGHBOUR_MAX_S`
    earlier: the sampler then holds that neighbour over the grid point (a bounded
    timing error, measured in bench/RESULTS.md).

    Attributes:
        failure: The demuxer's error when the stream ended on one (a broken tail).
        drop: The last packet returned needs no decoding.
        skipped: Packets decoded with non-reference frames skipped, or dropped.
        neighbours: Used frames left undecoded because their neighbour stands in.
    """

    #: Packets read ahead: deeper than any B-frame reordering seen in practice (x264 uses <= 4).
    LOOKAHEAD = 16

    def __init__(self, demux: Iterator[Any], ctx: Any, tb: Fraction, sample_fps: float | None,
                 ref_of: Callable[[Any], bool | None] | None = None) -> None:
        from overlap_desktop.core.ingest.decode_plan import NEIGHBOUR_MAX_S, SamplePlan

        self._demux = demux
        self._ctx = ctx
        self._num, self._den = tb.numerator * _NS, tb.denominator
        self._plan = SamplePlan(sample_fps) if sample_fps else None
        self._ref_of = ref_of if self._plan is not None else None
        self._neighbour_ns = int(NEIGHBOUR_MAX_S * _NS)
        self._intra = bool(getattr(ctx.codec, "intra_only", False)) if ctx is not None else False
        #: ``(pts, packet)`` read ahead; the pts is read once (a PyAV attribute read costs as much
        #: as the comparisons made with it, and each packet is looked at ~16 times).
        self._ahead: deque[tuple[int | None, Any]] = deque()
        #: (pts, decoded) of the packets already handed out, newest last.
        self._recent: deque[tuple[int, bool]] = deque(maxlen=2 * self.LOOKAHEAD)
        self._done = False
        self._skipping = False
        self._last_kept: int | None = None
        self.failure: str | None = None
        self.drop = False
        self.skipped = 0
        self.neighbours = 0

    def _fill(self) -> None:
        import av

        while not self._done and len(self._ahead) < (self.LOOKAHEAD if self._plan else 1):
            try:
                packet = next(self._demux)
                self._ahead.append((packet.pts, packet))
            except StopIteration:
                self._done = True
            except av.error.FFmpegError as exc:
                self.failure = str(exc)
                self._done = True

    def _ns(self, pts: int) -> int:
        return ns_of(pts, self._num, self._den)

    def _neighbour_decoded(self, pts: int) -> bool:
        """The frame shown just before ``pts`` was already handed out, decoded, and is close."""
        prev = max((x for x, _ in self._recent if x < pts), default=None)
        if prev is None or any(q is not None and prev < q < pts for q, _ in self._ahead):
            return False  # unknown, or it comes later in decode order
        kept = next(k for x, k in self._recent if x == prev)
        return kept and self._ns(pts) - self._ns(prev) <= self._neighbour_ns

    def next(self, t0: int | None) -> Any:
        """The next packet (``None`` at the end), with the decoder's skip setting made for it.

        Args:
            t0: Time of the stream's first frame (ns), ``None`` until one was decoded.
        """
        self._fill()
        if not self._ahead:
            return None
        pts, packet = self._ahead.popleft()
        need = True
        ref: bool | None = None
        if self._plan is not None and t0 is not None and pts is not None and (self._intra or not packet.is_keyframe):
            later = [q for q, _ in self._ahead if q is not None and q > pts]
            later += [x for x, _ in self._recent if x > pts]
            nxt = min(later) if later else None
            t = self._ns(pts) - t0
            need = self._plan.needed(t, None if nxt is None else self._ns(nxt) - t0, self._last_kept)
            if self._ref_of is not None:
                ref = self._ref_of(packet)
                if need and ref is False and self._neighbour_decoded(pts):
                    need = False
                    self.neighbours += 1
            if need:
                self._last_kept = t
        elif pts is not None and t0 is not None:
            self._last_kept = self._ns(pts) - t0
        if pts is not None:
            # Decoded for sure: used, a keyframe, or a reference frame (which NONREF keeps).
            self._recent.append((pts, need or ref is True))
        self.drop = not need and self._intra
        if not need:
            self.skipped += 1
        skip = not need and not self._intra
        if skip != self._skipping and self._ctx is not None:
            self._ctx.skip_frame = "NONREF" if skip else "DEFAULT"
            self._skipping = skip
        return packet
