"""Orientations (rotations and flips) applied to PDQ codes, without the pixels.

PDQ's 256 bits are the signs, relative to their median, of a 16x16 grid of DCT
coefficients. Turning or flipping the picture moves that grid around:

* a transpose (mirror about the main diagonal) transposes the grid, so the bits
  are permuted **exactly** (the median of the same numbers is the same);
* reversing one axis multiplies every other coefficient row (or column) by -1.
  On bits this is approximated by inverting those bits: exact when the median is
  0, off by the few coefficients that lie between ``-median`` and ``median``.

That is what lets the compare step find a rotated or flipped offer from the
offered codes alone (:mod:`overlap_desktop.core.match.orientations`), instead of the
index storing more variants per sample. ``bench/bench_ingest.py orient`` measures the approximation:
see bench/RESULTS.md.

An orientation is a :class:`~overlap_desktop.core.types.Variant`-style pair
``(mirrored, rotation)``: mirror left-right first (when ``mirrored``), then rotate
``rotation`` degrees counter-clockwise (``numpy.rot90``), the convention the
corpus variants use.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from overlap_desktop.core.types import StreamFingerprints

__all__ = [
    "ORIENTATIONS",
    "QUERY_ORIENTATIONS",
    "Orientation",
    "apply_image",
    "compose",
    "inverse",
    "orient_codes",
    "orient_fingerprints",
    "orientations_setting",
]

#: ``(mirrored, rotation)``: mirror left-right first, then rotate counter-clockwise.
Orientation = tuple[bool, int]

#: The eight orientations of a picture (the dihedral group of the square).
ORIENTATIONS: tuple[Orientation, ...] = tuple((m, r) for m in (False, True) for r in (0, 90, 180, 270))

#: Transforms applied to the offered codes at compare time, on top of the identity. With the
#: index's stored mirrored variant they reach all eight orientations: each turns one offered
#: orientation into the upright picture and its mirror image into the stored mirror. The
#: transpose ``(True, 90)`` is exact on bits (it finds 90-degree-counter-clockwise and transposed
#: offers); the other two flip the signs of half the coefficients (see the module docstring).
QUERY_ORIENTATIONS: tuple[Orientation, ...] = ((True, 90), (False, 90), (False, 180))

_PROBE = np.arange(9).reshape(3, 3)  # all eight orientations of it differ


def orientations_setting(orientations: Sequence[Orientation] = QUERY_ORIENTATIONS) -> dict[str, Any]:
    """How a comparison searched turned offers, for the report's settings (informative)."""
    return {
        "stored": "upright and mirrored (index.dihedral)",
        "turned_at_compare_time": [f"{'mirrored, ' if m else ''}rotated {r} degrees" for m, r in orientations],
        "turned_search_space_factor": len(orientations),  # a turned match is judged as a search this much larger
        "note": "turned offer codes are exact for a transpose and approximate (about 6 bits) for flips",
    }


def apply_image(o: Orientation, img: np.ndarray) -> np.ndarray:
    """Apply orientation ``o`` to an image array (rows, columns, ...)."""
    m, r = o
    a = np.fliplr(img) if m else img
    return np.rot90(a, (r // 90) % 4)


def _name(img: np.ndarray) -> Orientation:
    for o in ORIENTATIONS:
        if np.array_equal(apply_image(o, _PROBE), img):
            return o
    raise AssertionError("not an orientation")  # pragma: no cover - D4 is closed


def compose(a: Orientation, b: Orientation) -> Orientation:
    """The orientation ``a`` applied after ``b``."""
    return _name(apply_image(a, apply_image(b, _PROBE)))


def inverse(a: Orientation) -> Orientation:
    """The orientation that undoes ``a``."""
    return next(o for o in ORIENTATIONS if compose(o, a) == (False, 0))


@functools.lru_cache(maxsize=16)
def _bit_map(o: Orientation) -> tuple[np.ndarray, np.ndarray]:
    """``(src, flip)``: bit ``b`` of the oriented code is bit ``src[b]`` of the code, XOR ``flip[b]``.

    Derived from the coefficient rule the corpus variants use (``pdq_batch.oriented``),
    applied to a grid of distinct positive numbers: where each number lands gives the
    permutation, its sign the inversion.
    """
    from overlap_desktop.core.ingest.pdq_batch import oriented

    grid = np.arange(1, 257, dtype=np.float32).reshape(1, 16, 16)
    out = oriented(grid, o[0], o[1])[0]
    src_coef = (np.abs(out).astype(np.int64) - 1).reshape(-1)
    neg = (out < 0).reshape(-1)
    # Bit b of a code is coefficient 255 - b (codes pack the reversed coefficient list).
    src = (255 - src_coef)[::-1].copy()
    flip = neg[::-1].copy()
    return src, flip


def orient_codes(codes: np.ndarray, o: Orientation) -> np.ndarray:
    """Approximate PDQ codes of the pictures turned by ``o``, from the codes alone.

    Args:
        codes: ``uint8 (..., 32)`` packed PDQ codes.
        o: Orientation applied to the picture.

    Returns:
        ``uint8`` codes of the same shape. Exact for the identity and the transpose
        ``(True, 90)``; within a few bits of the real code otherwise.
    """
    c = np.asarray(codes, dtype=np.uint8)
    if o == (False, 0):
        return c.copy()
    src, flip = _bit_map(o)
    bits = np.unpackbits(c, axis=-1)
    moved = bits[..., src] ^ flip.astype(np.uint8)
    return np.packbits(moved, axis=-1)


def orient_fingerprints(fp: StreamFingerprints, o: Orientation) -> StreamFingerprints:
    """A stream's fingerprints with every code turned by ``o`` (times, quality, spans kept)."""
    return replace(fp, codes=np.ascontiguousarray(orient_codes(fp.codes, o)))
