"""Pixel measures on two aligned stacks of small luma images: the settle check's arithmetic.

Both sides of a matched line arrive as ``float32 (n, 64, 64)`` luma (the pipeline's own
64x64 PDQ input, before the contrast stretch), sample ``k`` of the offer aligned with sample
``k`` of the owned stretch. Three measures, each in luma levels (0-255):

* the **static background** of each side, the per-pixel median over every sample, so a moving
  arm or passer-by drops out; reduced to a grid of cells (32x32 by default, two pixels a cell)
  and the owned cells mapped onto the offer's tones by a quadratic least-squares fit (a graded
  copy keeps its layout, not its tones). A scripted repeat with an object moved a few
  centimetres differs there by 16-45 levels in a few cells, a copy by at most about 12
  (bench/RESULTS.md, "What grid near twins need");
* the **motion** of each side: per sample, the cells that differ from that side's background;
* the **agreement along the line**: per sample, the offer's cells against the owned cells
  under the same tone fit, over the cells where either side moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GRID", "MOTION_LEVEL", "STILL_SHARE", "LineMeasures", "apply_fit", "background_cells", "cells",
           "colour_fit", "luma_of", "measure_line"]

#: Cells a side of the 64x64 image is cut into for the background map: one pixel a cell (measured
#: finer than 32x32 separates more: see DIFFER_CELLS).
GRID = 64
#: A cell whose sample differs from its side's background by at least this much is moving there.
MOTION_LEVEL = 12.0


def cells(images: np.ndarray, grid: int = GRID) -> np.ndarray:
    """Cell means ``(..., grid, grid)`` of ``(..., 64, 64)`` images (``grid`` must divide 64)."""
    size = images.shape[-1]
    if size % grid:
        raise ValueError(f"a grid of {grid} does not divide images of {size} pixels")
    k = size // grid
    shape = (*images.shape[:-2], grid, k, grid, k)
    return np.asarray(images, np.float32).reshape(shape).mean(axis=(-3, -1))


def background_cells(images: np.ndarray, grid: int = GRID) -> np.ndarray:
    """The static background's cells: the per-pixel median over the samples, then cell means."""
    return cells(np.median(np.asarray(images, np.float32), axis=0), grid)


def _features(rgb: np.ndarray) -> np.ndarray:
    """Second-order colour terms of ``(..., 3)`` RGB scaled to 0..1: the grade model's inputs."""
    x = np.asarray(rgb, np.float64).reshape(-1, 3) / 255.0
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    return np.stack([np.ones_like(r), r, g, b, r * r, g * g, b * b, r * g, r * b, g * b], axis=1)


def colour_fit(src_rgb: np.ndarray, dst_luma: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Coefficients predicting ``dst_luma`` from ``src_rgb`` (second order in R, G, B; least squares
    over the cells in ``mask``, all without one).

    A colour grade (brightness, contrast, gamma, saturation) moves every hue's luma by a smooth
    function of its colour: the fit undoes it, while an object moved elsewhere, a few cells out of
    a thousand, stays in the residual.
    """
    f, y = _features(src_rgb), np.asarray(dst_luma, np.float64).ravel()
    if mask is not None and int(mask.sum()) >= 2 * f.shape[1]:
        keep = np.asarray(mask).ravel()
        f_fit, y_fit = f[keep], y[keep]
    else:
        f_fit, y_fit = f, y
    coef, *_ = np.linalg.lstsq(f_fit, y_fit, rcond=None)
    return np.asarray(coef)


def apply_fit(coef: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    """The luma :func:`colour_fit`'s coefficients predict for ``(..., 3)`` RGB (shape ``(...)``)."""
    return (_features(rgb) @ coef).reshape(rgb.shape[:-1]).astype(np.float32)


def luma_of(rgb: np.ndarray) -> np.ndarray:
    """BT.601 luma of ``(..., 3)`` float RGB."""
    return np.asarray(rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114, np.float32)


@dataclass(frozen=True, slots=True)
class LineMeasures:
    """What the pixels of an aligned line show (levels 0-255 unless said).

    Attributes:
        samples: Aligned sample pairs measured.
        still_share: Share of the background cells that hold still on both sides (where a
            background can be compared at all; a moving camera has few).
        bg_largest: Largest difference of a still background cell after the colour fit.
        bg_second: Second largest.
        bg_cells_over: Still background cells differing by at least the caller's ``differ`` level.
        bg_range: ``(smallest, largest)`` of those cells' differences (``(0, 0)`` without any).
        pixel_median: Median over samples of each sample's median cell difference.
        moving_share: Share of (sample, cell) places where either side moves.
        motion_agree: Of the moving places, the share where the two sides agree (their
            difference under :data:`MOTION_LEVEL` or under half the motion there); 1.0 when
            nothing moves.
        bg_unexplained: Differing background cells where not both sides hold an edge nearby
            (an object appeared or went; a copy cut or scaled by a percent differs only on
            edges both sides share).
    """

    samples: int
    still_share: float
    bg_largest: float
    bg_second: float
    bg_cells_over: int
    bg_range: tuple[float, float]
    pixel_median: float
    moving_share: float
    motion_agree: float
    bg_unexplained: int = 0

    def figures(self) -> dict[str, float]:
        """The measures as a flat mapping (for a receipt)."""
        return {"samples": float(self.samples), "still_share": round(self.still_share, 4),
                "background_largest": round(self.bg_largest, 2), "background_second": round(self.bg_second, 2),
                "background_cells_over": float(self.bg_cells_over), "pixel_median": round(self.pixel_median, 2),
                "moving_share": round(self.moving_share, 4), "motion_agree": round(self.motion_agree, 4),
                "background_unexplained": float(self.bg_unexplained)}


#: Share of its samples a cell must stay within :data:`MOTION_LEVEL` of its background to be still.
STILL_SHARE = 0.8


#: A cell is on an edge when a neighbour within one cell differs from it by this many levels.
EDGE_LEVEL = 20.0


def _edges(img: np.ndarray) -> np.ndarray:
    """Cells of a ``(g, g)`` map within one cell of an edge (a step of :data:`EDGE_LEVEL`)."""
    p = np.pad(img, 1, mode="edge")
    g0, g1 = img.shape
    step = np.zeros(img.shape, np.float32)
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):
        np.maximum(step, np.abs(img - p[dy:dy + g0, dx:dx + g1]), out=step)
    edge = step >= EDGE_LEVEL
    q = np.pad(edge, 1, mode="edge")
    near = np.zeros(img.shape, bool)
    for dy in range(3):
        for dx in range(3):
            near |= q[dy:dy + g0, dx:dx + g1]
    return near


def measure_line(offered: np.ndarray, owned: np.ndarray, *, grid: int = GRID,
                 differ: float = 14.0) -> LineMeasures:
    """Measure two aligned ``float32 (n, 64, 64, 3)`` RGB stacks (offer first, owned second).

    Raises:
        ValueError: the stacks differ in shape or hold no sample.
    """
    if offered.shape != owned.shape or offered.ndim != 4 or offered.shape[0] == 0:
        raise ValueError(f"aligned stacks of one shape are needed, got {offered.shape} and {owned.shape}")
    # Cells of every sample: offered luma, owned colour (moved to the cell axis for cells()).
    c_o = cells(luma_of(offered), grid)
    c_w_rgb = np.moveaxis(cells(np.moveaxis(owned, -1, 1), grid), 1, -1)
    bg_o = np.median(c_o, axis=0)
    bg_w_rgb = np.median(c_w_rgb, axis=0)
    bg_w_luma = luma_of(bg_w_rgb)
    c_w_luma = luma_of(c_w_rgb)
    still = ((np.abs(c_o - bg_o) < MOTION_LEVEL).mean(axis=0) >= STILL_SHARE) & \
            ((np.abs(c_w_luma - bg_w_luma) < MOTION_LEVEL).mean(axis=0) >= STILL_SHARE)
    coef = colour_fit(bg_w_rgb, bg_o, still)
    bg_fit = apply_fit(coef, bg_w_rgb)
    full_d = np.where(still, np.abs(bg_o - bg_fit), 0.0)
    d = full_d[still]
    hot = full_d >= differ
    # A cell where both sides hold an edge nearby differs as a copy cut or scaled by a percent
    # differs (edges a fraction of a cell apart); an object moved leaves an edge on one side only.
    both = _edges(bg_o) & _edges(bg_fit)
    unexplained = int((hot & ~both).sum())
    ranked = np.sort(d) if d.size else np.zeros(1, np.float32)
    over = d[d >= differ]
    c_w = apply_fit(coef, c_w_rgb)
    diff = np.abs(c_o - c_w)
    move_o, move_w = np.abs(c_o - bg_o), np.abs(c_w - bg_fit)
    moving = (move_o >= MOTION_LEVEL) | (move_w >= MOTION_LEVEL)
    n_moving = int(moving.sum())
    agree_at = (diff < MOTION_LEVEL) | (diff < 0.5 * np.maximum(move_o, move_w))
    return LineMeasures(
        samples=int(offered.shape[0]), still_share=float(still.mean()), bg_largest=float(ranked[-1]),
        bg_second=float(ranked[-2]) if ranked.size > 1 else float(ranked[-1]),
        bg_cells_over=int(over.size), bg_range=(float(over.min()), float(over.max())) if over.size else (0.0, 0.0),
        pixel_median=float(np.median(np.median(diff.reshape(diff.shape[0], -1), axis=1))),
        moving_share=n_moving / diff.size, motion_agree=float(agree_at[moving].mean()) if n_moving else 1.0,
        bg_unexplained=unexplained)
