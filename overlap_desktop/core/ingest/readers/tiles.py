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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from overlap_desktop.core.ingest.frames import scale_rgb
from overlap_desktop.core.types import StreamInfo, TimedFrame

__all__ = ["TILE_ASPECTS", "TileFrame", "base_key", "tile_counts", "tile_frames", "tile_of", "tile_streams"]

#: Camera picture shapes (width / height) a tile may have.
TILE_ASPECTS = (4 / 3, 16 / 9, 1.0, 5 / 4, 3 / 2)
#: How far a tile's shape may be from one of them (relative): encoders round sizes to even pixels.
_TOLERANCE = 0.015
#: A preview is at least this many times wider than high (two square tiles); a single camera never is.
_MIN_WIDE = 1.97
_TILE_KEY = re.compile(r"^(?P<base>.+)/tile-(?P<i>\d+)-of-(?P<n>\d+)$")


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


def tile_of(key: str) -> tuple[str, int, int] | None:
    """``(base key, tile number from 1, tiles)`` of a tile stream's key, else ``None``."""
    m = _TILE_KEY.match(key)
    return None if m is None else (m.group("base"), int(m.group("i")), int(m.group("n")))


def base_key(key: str) -> str:
    """The whole picture's stream key of a tile's key (the key itself otherwise)."""
    t = tile_of(key)
    return key if t is None else t[0]


def tile_streams(stream: StreamInfo) -> list[StreamInfo]:
    """The tile streams of a whole-picture video stream (none for ordinary footage)."""
    if not stream.width or not stream.height:
        return []
    out = []
    for n in tile_counts(int(stream.width), int(stream.height)):
        for i in range(1, n + 1):
            out.append(replace(stream, key=f"{stream.key}/tile-{i}-of-{n}", width=int(stream.width) // n,
                               extra={"tile": [i, n], "base": stream.key,
                                      "whole": [int(stream.width), int(stream.height)]}))
    return out


class TileFrame:
    """One tile of a decoded whole-picture frame (implements ``TimedFrame``): the picture is
    converted at its full size, the tile cut out and scaled by swscale like any array frame."""

    __slots__ = ("_frame", "_height", "_i", "_n", "_width", "t_ns")

    def __init__(self, frame: TimedFrame, width: int, height: int, i: int, n: int) -> None:
        self._frame, self._width, self._height, self._i, self._n = frame, width, height, i, n
        self.t_ns = frame.t_ns

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        full = self._frame.to_rgb(self._width, self._height)
        x0 = (self._i - 1) * self._width // self._n
        x1 = self._i * self._width // self._n
        return scale_rgb(np.ascontiguousarray(full[:, x0:x1]), width, height)


def tile_frames(frames: Iterator[TimedFrame], stream: StreamInfo) -> Iterator[TimedFrame]:
    """The frames of tile ``stream`` from its whole picture's ``frames``."""
    i, n = (int(x) for x in stream.extra["tile"])
    width, height = (int(x) for x in stream.extra["whole"])
    for frame in frames:
        yield TileFrame(frame, width, height, i, n)
