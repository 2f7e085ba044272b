"""Tiled previews: a video whose picture is 2-4 camera views side by side, each hashed on its own.

Robot-data tools write previews with an episode's cameras next to each other (act-plus-plus's
``compress_data.py`` writes ``episode_0_video.mp4`` as the cameras concatenated along the width).
Hashed as one picture, such a preview matches none of its cameras, so an offer of previews of owned
episodes read as new footage. A video whose width is 2-4 times a camera picture's (4:3, 16:9, 1:1,
5:4 or 3:2 at its height) therefore gets one extra stream per tile, besides the whole picture: the
tiles are cameras of the same moment, so the comparison counts the moment owned when a tile is
(see ``core/match/streamtime.py``). A width that fits two tilings (4 x 4:3 is 3 x 16:9) gets both;
the tiling whose tiles match is the one reported. Ordinary footage is never split: no 4:3, 16:9
or 21:9 picture is 2-4 standard pictures wide, so only such previews cost index space.

A 2x2 grid has a single camera's shape, so it is told by its seams instead: in the first frame,
both the column and the row across the middle change far more than the picture does anywhere
else (:func:`grid_seams`). Then the four quarters are streams too (``v:0/tile-3-of-2x2``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from overlap_desktop.core.ingest.frames import scale_rgb
from overlap_desktop.core.types import StreamInfo, TimedFrame

__all__ = ["TILE_ASPECTS", "TileFrame", "base_key", "grid_seams", "tile_counts", "tile_frames", "tile_of",
           "tile_streams"]

#: Camera picture shapes (width / height) a tile may have.
TILE_ASPECTS = (4 / 3, 16 / 9, 1.0, 5 / 4, 3 / 2)
#: How far a tile's shape may be from one of them (relative): encoders round sizes to even pixels.
_TOLERANCE = 0.015
#: A preview is at least this many times wider than high (two square tiles); a single camera never is.
_MIN_WIDE = 1.97
_TILE_KEY = re.compile(r"^(?P<base>.+)/tile-(?P<i>\d+)-of-(?P<n>\d+(?:x\d+)?)$")
#: A seam changes the picture at least this many times the median change between neighbouring
#: columns (rows), and by at least :data:`_SEAM_LEVELS` grey levels on average.
_SEAM_RATIO = 4.0
_SEAM_LEVELS = 12.0


def tile_counts(width: int, height: int) -> list[int]:
    """The numbers of side-by-side tiles (2-4) a ``width`` x ``height`` picture may hold."""
    if width <= 0 or height <= 0 or width / height < _MIN_WIDE:
        return []
    out = []
    for n in (2, 3, 4):
        a = width / n / height
        if any(abs(a / r - 1.0) <= _TOLERANCE for r in TILE_ASPECTS):
            out.append(n)
    return out


def grid_seams(gray: np.ndarray) -> bool:
    """True when a picture (``(h, w)`` grey levels) is a 2x2 grid: the column and the row across its
    middle are seams along their whole length (each half a step far above the picture's usual change
    between neighbours), as where four separate camera pictures meet."""
    g = np.asarray(gray)
    h, w = g.shape[:2]
    if h < 128 or w < 128 or h % 2 or w % 2:
        return False
    # Every 8th row (column) is enough to measure a seam; only those are converted, so a picture at
    # the size caps costs megabytes, not its full size in floats.
    step = 8 if min(h, w) >= 256 else 1
    cols = np.abs(np.diff(g[::step].astype(np.float32), axis=1))  # (h / step, w - 1)
    rows = np.abs(np.diff(g[:, ::step].astype(np.float32), axis=0))  # (h - 1, w / step)

    def seam(steps: np.ndarray, at: int) -> bool:
        line = steps[:, at]
        usual = float(np.median(steps))
        level = float(line.mean())
        return level >= _SEAM_LEVELS and level >= _SEAM_RATIO * max(usual, 1.0)

    rows_t = rows.T  # (w / step, h - 1): a row's steps as a column
    top, bottom = cols[: cols.shape[0] // 2], cols[cols.shape[0] // 2:]
    left, right = rows_t[: rows_t.shape[0] // 2], rows_t[rows_t.shape[0] // 2:]
    return (seam(top, w // 2 - 1) and seam(bottom, w // 2 - 1)
            and seam(left, h // 2 - 1) and seam(right, h // 2 - 1))


def tile_of(key: str) -> tuple[str, int, int] | None:
    """``(base key, tile number from 1, tiles)`` of a tile stream's key, else ``None``."""
    m = _TILE_KEY.match(key)
    if m is None:
        return None
    n = m.group("n")
    count = int(n.split("x")[0]) * int(n.split("x")[1]) if "x" in n else int(n)
    return m.group("base"), int(m.group("i")), count


def base_key(key: str) -> str:
    """The whole picture's stream key of a tile's key (the key itself otherwise)."""
    t = tile_of(key)
    return key if t is None else t[0]


def tile_streams(stream: StreamInfo, *, grid: bool = False) -> list[StreamInfo]:
    """The tile streams of a whole-picture video stream (none for ordinary footage); ``grid``: the
    picture is a 2x2 grid (:func:`grid_seams` of its first frame)."""
    if not stream.width or not stream.height:
        return []
    w, h = int(stream.width), int(stream.height)
    layouts = [(n, 1, str(n)) for n in tile_counts(w, h)] + ([(2, 2, "2x2")] if grid else [])
    out = []
    for cols, rows, name in layouts:
        for i in range(1, cols * rows + 1):
            out.append(replace(stream, key=f"{stream.key}/tile-{i}-of-{name}", width=w // cols, height=h // rows,
                               extra={"tile": [i, cols * rows], "grid": [cols, rows], "base": stream.key,
                                      "whole": [w, h]}))
    return out


class TileFrame:
    """One tile of a decoded whole-picture frame (implements ``TimedFrame``): the picture is
    converted at its full size, the tile cut out and scaled by swscale like any array frame."""

    __slots__ = ("_box", "_frame", "_height", "_width", "t_ns")

    def __init__(self, frame: TimedFrame, width: int, height: int, box: tuple[int, int, int, int]) -> None:
        self._frame, self._width, self._height, self._box = frame, width, height, box
        self.t_ns = frame.t_ns

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        full = self._frame.to_rgb(self._width, self._height)
        y0, y1, x0, x1 = self._box
        return scale_rgb(np.ascontiguousarray(full[y0:y1, x0:x1]), width, height)


def tile_frames(frames: Iterator[TimedFrame], stream: StreamInfo) -> Iterator[TimedFrame]:
    """The frames of tile ``stream`` from its whole picture's ``frames``."""
    i = int(stream.extra["tile"][0])
    cols, rows = (int(x) for x in stream.extra.get("grid") or (int(stream.extra["tile"][1]), 1))
    width, height = (int(x) for x in stream.extra["whole"])
    c, r = (i - 1) % cols, (i - 1) // cols
    box = (r * height // rows, (r + 1) * height // rows, c * width // cols, (c + 1) * width // cols)
    for frame in frames:
        yield TileFrame(frame, width, height, box)
