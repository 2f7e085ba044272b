"""Geometry of the HTML report's match plots: offered time (x) against owned time (y).

This module only computes numbers and the words of tips; the SVG itself is written by the
``plot`` macro of ``templates/macros.html.j2``, where Jinja escapes every value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.json_io import thin_pairs
from overlap_desktop.core.report.model import NearFrame
from overlap_desktop.core.report.scale import distance_colour, distance_words
from overlap_desktop.core.report.segment_words import describe_segment
from overlap_desktop.core.types import Segment

__all__ = ["NEAR_COLOUR", "NEAR_RING", "NEAR_WORDS", "Band", "PlotView", "plot_view"]

#: Size of a plot and its margins (left, right, top, bottom), in pixels.
_WIDTH, _HEIGHT = 420, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 14, 14, 42
#: Near-identical frames behind "can't tell" time: amber dots ringed in grey (as in the app).
NEAR_COLOUR, NEAR_RING = "#e69600", "#707070"
NEAR_WORDS = "near-identical, not shown to be a copy (can't tell)"


@dataclass(slots=True)
class Band:
    """A fitted segment drawn as a wide translucent line (coordinates formatted for SVG)."""

    x1: str
    y1: str
    x2: str
    y2: str
    colour: str
    dashed: bool
    tip: str


@dataclass(slots=True)
class PlotView:
    """Everything the ``plot`` macro draws for one (offered file, owned file) pair.

    Attributes:
        query_file: Offered file (untrusted; the template escapes it).
        corpus_file: Owned file.
        title: Accessible title of the chart.
        x_ticks: ``(x, label)`` of the vertical grid lines.
        y_ticks: ``(y, label, label_y)`` of the horizontal grid lines.
        x_unit: Unit of the offered-time axis (``s``, ``min``, ``h``); ``y_unit`` likewise.
        bands: Fitted segments; dashed when not counted (below the floor or weak).
        dots: Frame matches as ``(cx, cy, colour, opacity)``, coloured by the one distance scale.
        near_dots: Near-identical frames of "can't tell" time as ``(cx, cy, tip)``.
    """

    query_file: str
    corpus_file: str
    title: str
    x_unit: str
    y_unit: str
    x_ticks: list[tuple[str, str]] = field(default_factory=list)
    y_ticks: list[tuple[str, str, str]] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    dots: list[tuple[str, str, str, float]] = field(default_factory=list)
    near_dots: list[tuple[str, str, str]] = field(default_factory=list)
    width: int = _WIDTH
    height: int = _HEIGHT
    left: int = _LEFT
    top: int = _TOP
    plot_width: int = _WIDTH - _LEFT - _RIGHT
    plot_height: int = _HEIGHT - _TOP - _BOTTOM
    right: int = _WIDTH - _RIGHT
    bottom: int = _HEIGHT - _BOTTOM
    x_title_x: str = f"{_LEFT + (_WIDTH - _LEFT - _RIGHT) / 2:.1f}"
    y_title_y: str = f"{_TOP + (_HEIGHT - _TOP - _BOTTOM) / 2:.1f}"


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    ticks: list[float] = []
    t = start
    while t <= hi + 1e-9 and len(ticks) < 20:
        ticks.append(round(t, 6))
        t += step
    return ticks


def _axis_unit(span_s: float) -> tuple[float, str]:
    """Divisor and unit name for an axis covering ``span_s`` seconds."""
    if span_s >= 3 * 3600:
        return 3600.0, "h"
    if span_s >= 300:
        return 60.0, "min"
    return 1.0, "s"


def _owned_range(segments: list[tuple[Segment, bool]], near: list[NearFrame]) -> tuple[float, float]:
    """Owned-time range to show: the segments' ends, their frame matches and the near-identical
    frames, padded."""
    ys: list[float] = [n.corpus_s for n in near if math.isfinite(n.corpus_s)]
    for s, _ in segments:
        ys += [s.corpus_start, s.corpus_end]
        if s.pairs is not None and len(s.pairs):
            arr = np.asarray(s.pairs, dtype=np.float64)
            if arr.ndim == 2 and arr.shape[1] >= 2 and np.isfinite(arr[:, 1]).all():
                ys += [float(arr[:, 1].min()), float(arr[:, 1].max())]
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = max(1.0, 0.05 * (y_hi - y_lo))
    return max(0.0, y_lo - pad), y_hi + pad


def plot_view(query_file: str, corpus_file: str, duration_s: float,
              segments: list[tuple[Segment, bool]], near: list[NearFrame] | None = None) -> PlotView:
    """The plot of one file pair: fitted segments as bands over their frame matches.

    Args:
        query_file: The offered file.
        corpus_file: The owned file.
        duration_s: The offered file's duration (the x axis spans at least this).
        segments: ``(segment, not_counted)`` pairs; not-counted ones are drawn grey and dashed.
        near: The file's near-identical frames in this owned file ("can't tell"), drawn as amber dots.

    Returns:
        The plot, ready for the ``plot`` macro.
    """
    near = [n for n in near or [] if math.isfinite(n.query_s) and math.isfinite(n.corpus_s)]
    x_lo, x_hi = 0.0, max([duration_s] + [s.query_end for s, _ in segments] + [n.query_s for n in near] + [1e-3])
    y_lo, y_hi = _owned_range(segments, near)
    xdiv, xunit = _axis_unit(x_hi - x_lo)
    ydiv, yunit = _axis_unit(y_hi - y_lo)
    pw, ph = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def X(v: float) -> float:
        return _LEFT + (v - x_lo) / (x_hi - x_lo) * pw

    def Y(v: float) -> float:
        return _TOP + ph - (v - y_lo) / (y_hi - y_lo) * ph

    view = PlotView(query_file=query_file, corpus_file=corpus_file,
                    title=f"{safe_text(query_file)} against {safe_text(corpus_file)}", x_unit=xunit, y_unit=yunit)
    view.x_ticks = [(f"{X(t * xdiv):.1f}", f"{t:g}") for t in _nice_ticks(x_lo / xdiv, x_hi / xdiv)]
    view.y_ticks = [(f"{Y(t * ydiv):.1f}", f"{t:g}", f"{Y(t * ydiv) + 3:.1f}")
                    for t in _nice_ticks(y_lo / ydiv, y_hi / ydiv)]
    for s, below in segments:
        how = distance_words(s.mean_distance)
        tip = describe_segment(s, below_floor=below) + (f" (frames {how} on average)" if how else "")
        view.bands.append(Band(f"{X(s.query_start):.1f}", f"{Y(s.corpus_start):.1f}", f"{X(s.query_end):.1f}",
                               f"{Y(s.corpus_end):.1f}", "#8a93a6" if below else "#2456c8", below, tip))
    for s, below in segments:
        arr = thin_pairs(s.pairs)
        if arr is None:
            continue
        for q, c, d in arr.tolist():
            if math.isfinite(q) and math.isfinite(c) and math.isfinite(d):
                view.dots.append((f"{X(q):.1f}", f"{Y(c):.1f}", distance_colour(d), 0.5 if below else 0.9))
    for n in near:
        tip = (f"offered {n.query_s:.2f} s, owned {n.corpus_s:.2f} s: {NEAR_WORDS} ({n.distance} bits apart)")
        view.near_dots.append((f"{X(n.query_s):.1f}", f"{Y(n.corpus_s):.1f}", tip))
    return view
