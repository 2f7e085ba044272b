"""The one colour scale for how alike matched frames are.

Used by the HTML report's plots and legend and by the app's match plot (through
:mod:`overlap_desktop.api`), so a colour means the same everywhere. Level boundaries are
inclusive upper bounds of the Hamming distance (of 256 bits): a distance ``d`` belongs to
the first level with ``d <= upper``; anything not finite belongs to the last level.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["DISTANCE_SCALE", "DistanceLevel", "distance_colour", "distance_level", "distance_level_indices",
           "distance_words"]


class DistanceLevel(NamedTuple):
    """One level of the colour scale for match distances.

    Attributes:
        upper: Largest Hamming distance (of 256 bits) in this level.
        colour: ``#rrggbb``.
        words: What the level means to a person ("near-identical" ... "weak").
    """

    upper: float
    colour: str
    words: str


#: THE colour scale for how alike matched frames are, used by the HTML report and the app
#: (one definition, so a legend means the same everywhere). Green is near-identical, red is
#: loose; PDQ copies of the same frame usually sit in the first three levels.
DISTANCE_SCALE: tuple[DistanceLevel, ...] = (
    DistanceLevel(8, "#1a9850", "near-identical"),
    DistanceLevel(16, "#66bd63", "very close"),
    DistanceLevel(24, "#a6d96a", "close"),
    DistanceLevel(32, "#fdae61", "similar"),
    DistanceLevel(48, "#f46d43", "loose"),
    DistanceLevel(256, "#d73027", "weak"),
)



def distance_level(d: float) -> DistanceLevel:
    """The :data:`DISTANCE_SCALE` level holding distance ``d`` (non-finite: the last level)."""
    v = float(d)
    if not math.isfinite(v):
        return DISTANCE_SCALE[-1]
    for level in DISTANCE_SCALE:
        if v <= level.upper:
            return level
    return DISTANCE_SCALE[-1]


def distance_level_indices(distances: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """Index into :data:`DISTANCE_SCALE` of each distance, for many points at once.

    The same rule as :func:`distance_level` (inclusive upper bounds, non-finite values in
    the last level), vectorised for plots of many thousand points.

    Args:
        distances: Hamming distances, any shape.

    Returns:
        Level indices with the shape of ``distances``.
    """
    d = np.asarray(distances, dtype=np.float64)
    uppers = np.asarray([level.upper for level in DISTANCE_SCALE], dtype=np.float64)
    idx = np.searchsorted(uppers, d, side="left").clip(0, len(DISTANCE_SCALE) - 1)
    return np.where(np.isfinite(d), idx, len(DISTANCE_SCALE) - 1).astype(np.intp)


def distance_colour(d: float) -> str:
    """The colour of the :data:`DISTANCE_SCALE` level holding distance ``d``."""
    return distance_level(d).colour


def distance_words(d: float) -> str:
    """How alike two matched frames are, in words (``"near-identical"``), for labels and tips."""
    return distance_level(d).words
