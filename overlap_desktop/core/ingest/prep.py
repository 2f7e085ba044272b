"""Normalisation applied to every frame before hashing, identically on both sides.

The pipeline for one sampled frame (see docs/architecture.md for the measurements
behind each number):

1. The reader scales the decoded frame with swscale straight to a square *working
   image* of :data:`WORK_SIZE` x :data:`WORK_SIZE` pixels, ignoring the aspect ratio
   (so a copy stretched to another aspect, or re-encoded at another resolution, lands
   on the same working image). Scaling at decode time is what keeps hashing cheap:
   the full-resolution frame is never converted to RGB.
2. Letterbox / pillarbox bars (near-uniform dark strips on *both* opposite edges)
   are detected on the working image and trimmed.
3. The content region (or, on the corpus side, a crop of it: a variant) is
   converted to luma and area-resampled to :data:`HASH_SIZE` x :data:`HASH_SIZE`,
   then hashed with PDQ. At 64x64 PDQ's own down-sampling is the identity, so the
   area filter does all the anti-aliasing and the dihedral (mirror) hashes are exact.
   PDQ only looks at luma, so working in luma loses nothing and makes grayscale
   copies converge.
4. A low-contrast image (a dim arena, an IR overhead camera, a night scene) is
   stretched around mid-grey before it is rounded to 8 bits (:func:`contrast_gains`),
   when it holds structure well above its noise. PDQ's bits ignore the DC term and
   are thresholded at the median, so an affine stretch leaves them as they were (up
   to rounding and clipping); what changes is PDQ's quality, which counts pixel
   steps of 3 levels and more, so dark footage with real content stops reading as
   "featureless". Blank and noise-only frames are never stretched.

Any change to these steps or their constants must change :data:`PREP_ID`: indexes
and manifests record it, and a mismatch is refused rather than compared (except with
a :data:`PREP_PREDECESSORS` entry, whose codes this normalisation reproduces).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from overlap_desktop.core.ingest.frames import scale_rgb

__all__ = [
    "BAR_MAX_FRACTION",
    "CONTRAST_MAX_GAIN",
    "CONTRAST_TARGET_STD",
    "HASH_SIZE",
    "PREP_ID",
    "PREP_PREDECESSORS",
    "WORK_SIZE",
    "Box",
    "content_box",
    "comparable_prep",
    "content_box_from_luma",
    "contrast_gains",
    "detect_bars",
    "detect_bars_luma",
    "luma",
    "prep_image",
    "region_luma",
    "resample_luma",
    "stretch_contrast",
    "to_work_image",
]

#: Side of the square working image the reader scales every sampled frame to.
WORK_SIZE = 192
#: Side of the square image handed to PDQ.
HASH_SIZE = 64
#: A bar deeper than this fraction of the frame (per side) is treated as content.
BAR_MAX_FRACTION = 0.3
#: Luma (0..255) at or below which a strip counts as dark.
_BAR_DARK = 40.0
#: Largest luma standard deviation along a strip for it to count as uniform.
_BAR_STD = 10.0
#: Two opposite bars count as a letterbox when their depths differ by at most this
#: many working pixels plus a quarter of the deeper bar (encoders blur the edges).
_BAR_SYMMETRY_PX = 2
#: Bars thinner than this (working pixels) are ignored: a dark border line is content.
_BAR_MIN_PX = 2

#: A hash image whose luma standard deviation is below this (levels of 255) is stretched
#: towards it. Ordinary footage measures 35-70 and is left exactly as it was; a grey car park
#: seen from above measures ~11 (PDQ quality ~30), the same room at a quarter of its range ~15.
CONTRAST_TARGET_STD = 32.0
#: The stretch never exceeds this gain: darker than ~4 levels of standard deviation, the 8-bit
#: working image and the encoder have already flattened what content there was.
CONTRAST_MAX_GAIN = 8.0
#: Detail an image needs before it is stretched: the standard deviation of what a 9-pixel
#: box blur removes, less the noise's share, in levels. Blank, lens-cap and vignetted frames
#: measure 0-0.5 whatever their noise. Below ~2.5 an encoder has flattened the content:
#: measured on a dimmed rendered rig re-encoded at CRF 28, a copy's code sat 16-19 bits from
#: its source at 3-4 levels of detail, 28-30 at 1.3-2, 38-52 below 1 (as far as other
#: moments), so such frames would be judged on noise. They stay "featureless".
_CONTRAST_MIN_DETAIL = 2.5
#: ... and the detail must be at least this many times the noise, so noise is never amplified
#: into "content".
_CONTRAST_MIN_SNR = 2.0
#: Side of the box blur that separates detail from shading (vignetting, gradients), in pixels.
_DETAIL_BOX = 9

#: Versioned name of this normalisation (sizes, filter, bar rule, hash input size, contrast
#: stretch). v2 added the contrast stretch (step 4 above).
PREP_ID = (f"sq{WORK_SIZE}-area-bars{int(BAR_MAX_FRACTION * 100)}-luma{HASH_SIZE}"
           f"-cn{int(CONTRAST_TARGET_STD)}x{int(CONTRAST_MAX_GAIN)}-v2")
#: Earlier normalisations whose fingerprints this one can be compared with: every sample they
#: called usable has the same code here up to rounding (the stretch is affine; ordinary
#: footage is untouched, bit for bit); only samples they called featureless may now be usable.
#: An index of one of these is brought up to date by the next index run (the dark files are
#: fingerprinted again); an offer's manifest of one is compared as is (its dark samples stay
#: "can't tell"). See docs/architecture.md, "Low-contrast footage".
PREP_PREDECESSORS: tuple[str, ...] = (f"sq{WORK_SIZE}-area-bars{int(BAR_MAX_FRACTION * 100)}-luma{HASH_SIZE}-v1",)


def comparable_prep(offer_prep: str, library_prep: str) -> str | None:
    """Whether an offer fingerprinted with ``offer_prep`` can be compared with a library of ``library_prep``.

    Equal normalisations compare; so does an offer of a :data:`PREP_PREDECESSORS` entry with a
    library of the current one (its usable codes are reproduced; its dark samples stay "can't
    tell"). A library of a predecessor is not compared with a current offer: its dark footage
    was never judged, so dark copies would go unfound; the next index run brings it up to date.

    Returns:
        ``None`` when comparable, else why not in plain words, with the next step.
    """
    if offer_prep == library_prep or (library_prep == PREP_ID and offer_prep in PREP_PREDECESSORS):
        return None
    if offer_prep == PREP_ID and library_prep in PREP_PREDECESSORS:
        return (f"your library was fingerprinted by an earlier version of overlap desktop ({library_prep}); "
                f"index your footage again (overlap index, or Add footage in the app) to bring it up to date "
                f"({offer_prep}), then compare")
    return (f"the offer was fingerprinted with {offer_prep}, your library with {library_prep}, so they cannot "
            f"be compared; ask the seller for a manifest made with the version of overlap desktop you use")


@dataclass(frozen=True, slots=True)
class Box:
    """A pixel rectangle ``[y0:y1, x0:x1]`` inside the working image."""

    y0: int
    y1: int
    x0: int
    x1: int

    @property
    def height(self) -> int:
        return self.y1 - self.y0

    @property
    def width(self) -> int:
        return self.x1 - self.x0


def to_work_image(rgb: np.ndarray) -> np.ndarray:
    """Scale an arbitrary RGB image to the working image (for image inputs and tests).

    Readers do the same during decoding through ``TimedFrame.to_rgb(WORK_SIZE, WORK_SIZE)``.
    """
    return scale_rgb(rgb, WORK_SIZE, WORK_SIZE)


_LUMA_WEIGHTS = (np.float32(0.299), np.float32(0.587), np.float32(0.114))


def luma(rgb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """BT.601 luminance of ``(..., h, w, 3)`` RGB as ``float32 (..., h, w)``: PDQ's weights.

    ``(r * 0.299 + g * 0.587) + b * 0.114`` in ``float32``, each channel converted inside the
    multiply (no float copy of the whole image); the same roundings as ever. ``out``, if
    given, receives the result.
    """
    wr, wg, wb = _LUMA_WEIGHTS
    y = np.multiply(rgb[..., 0], wr, out=out, dtype=np.float32)
    tmp = np.multiply(rgb[..., 1], wg, dtype=np.float32)
    y += tmp
    np.multiply(rgb[..., 2], wb, out=tmp, dtype=np.float32)
    y += tmp
    return y


def _bar_depth(mean: np.ndarray, std: np.ndarray, limit: int) -> int:
    """Number of leading strips (from index 0) that are dark and uniform, up to ``limit + 1``."""
    bad = (mean > _BAR_DARK) | (std > _BAR_STD)
    idx = np.flatnonzero(bad[: limit + 1])
    return int(idx[0]) if idx.size else limit + 1


def _pair(a: int, b: int, limit: int) -> tuple[int, int]:
    """Accept two opposite bar depths only when they look like a letterbox."""
    if a > limit or b > limit:  # a dark frame, or dark content reaching deep: not bars
        return 0, 0
    if a < _BAR_MIN_PX or b < _BAR_MIN_PX:
        return 0, 0
    if abs(a - b) > _BAR_SYMMETRY_PX + max(a, b) // 4:
        return 0, 0
    return a, b


def detect_bars_luma(y: np.ndarray) -> tuple[int, int, int, int]:
    """Find letterbox and pillarbox bars in a luma image.

    A bar is a run of rows (columns) from an edge that are dark and uniform. Bars are
    only accepted in opposite pairs of similar depth (top+bottom, left+right), each
    at least :data:`_BAR_MIN_PX` and at most :data:`BAR_MAX_FRACTION` of the frame:
    dark content against one edge, a dark frame or a fade to black never trims.

    Args:
        y: ``float32 (h, w)`` luma of the working image.

    Returns:
        ``(top, bottom, left, right)`` bar depths in pixels (zeros when none).
    """
    h, w = y.shape
    lim_r = int(h * BAR_MAX_FRACTION)
    lim_c = int(w * BAR_MAX_FRACTION)
    top = bottom = left = right = 0
    # Bars need both opposite edge lines dark and uniform: test those two first, so
    # the common no-bar frame costs four line statistics, not the whole image's.
    if _is_bar(y[0]) and _is_bar(y[-1]):
        row_mean, row_std = y.mean(axis=1), y.std(axis=1)
        top = _bar_depth(row_mean, row_std, lim_r)
        bottom = _bar_depth(row_mean[::-1], row_std[::-1], lim_r)
        top, bottom = _pair(top, bottom, lim_r)
    if _is_bar(y[:, 0]) and _is_bar(y[:, -1]):
        col_mean, col_std = y.mean(axis=0), y.std(axis=0)
        left = _bar_depth(col_mean, col_std, lim_c)
        right = _bar_depth(col_mean[::-1], col_std[::-1], lim_c)
        left, right = _pair(left, right, lim_c)
    return top, bottom, left, right


def _is_bar(line: np.ndarray) -> bool:
    return bool(line.mean() <= _BAR_DARK and line.std() <= _BAR_STD)


def detect_bars(work: np.ndarray) -> tuple[int, int, int, int]:
    """:func:`detect_bars_luma` on an RGB working image."""
    return detect_bars_luma(luma(work))


def content_box_from_luma(y: np.ndarray) -> Box:
    """The region left after trimming letterbox / pillarbox bars from luma ``y``."""
    h, w = y.shape
    top, bottom, left, right = detect_bars_luma(y)
    return Box(top, h - bottom, left, w - right)


def content_box(work: np.ndarray) -> Box:
    """The working-image region left after trimming letterbox / pillarbox bars."""
    return content_box_from_luma(luma(work))


@functools.lru_cache(maxsize=512)
def _area_band(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Box-filter weights resampling ``n`` samples to ``m``, stored as a band.

    Returns ``(idx, w)``, both ``(m, K)``: output ``i`` is ``sum_k w[i, k] * x[idx[i, k]]``
    with ``K`` the largest number of input samples one output overlaps.
    """
    edges = np.arange(m + 1, dtype=np.float64) * (n / m)
    lo, hi = edges[:-1, None], edges[1:, None]
    s = np.arange(n, dtype=np.float64)[None, :]
    full = np.clip(np.minimum(hi, s + 1) - np.maximum(lo, s), 0.0, None)
    full /= full.sum(axis=1, keepdims=True)
    nz = full > 1e-12
    k = int(nz.sum(axis=1).max())
    first = nz.argmax(axis=1)
    raw = first[:, None] + np.arange(k)[None, :]
    idx = np.minimum(raw, n - 1)
    w = np.where(raw < n, np.take_along_axis(full, idx, axis=1), 0.0)
    return idx, w.astype(np.float32)


def resample_luma(y: np.ndarray, size: int = HASH_SIZE) -> np.ndarray:
    """Area-resample luma ``(..., h, w)`` to ``float32 (..., size, size)`` (aspect ignored).

    An exact box filter with fractional pixel coverage, applied as a narrow band of
    weighted gathers: small matrix products would pay heavily for OpenBLAS threading.
    The taps are added one at a time in a fixed order (rows, then columns), so a batch
    of images gives each image exactly the values it gets alone, and the values indexes
    were built with (the order numpy's ``sum`` used before, tests/unit/test_prep.py).
    """
    y = np.asarray(y, dtype=np.float32)
    i0, w0 = _area_band(y.shape[-2], size)
    rows = _weighted_taps(y, i0, w0[:, :, None], -2)
    i1, w1 = _area_band(y.shape[-1], size)
    return _weighted_taps(rows, i1, w1, -1)


def _weighted_taps(x: np.ndarray, idx: np.ndarray, w: np.ndarray, axis: int) -> np.ndarray:
    """``sum_k w[:, k] * x[idx[:, k]]`` along ``axis`` (-2 or -1), adding tap 0, 1, ... in turn.

    Each tap is gathered into a fresh array and weighted in place, so there are no other
    temporaries. Where the taps are a whole-number ratio of blocks (192 -> 64: three pixels
    per output, the identity of a frame without bars), they are strided views instead.
    """
    m, k_taps = idx.shape
    n = x.shape[axis]
    regular = n == m * k_taps and bool(np.array_equal(idx, np.arange(n).reshape(m, k_taps)))
    if regular:
        blocks = x.reshape(x.shape[:-2] + (m, k_taps, x.shape[-1]) if axis == -2
                           else x.shape[:-1] + (m, k_taps))

    def tap(k: int) -> np.ndarray:
        if regular:
            view = blocks[..., :, k, :] if axis == -2 else blocks[..., k]
            return np.multiply(view, w[:, k])
        out = x[..., idx[:, k], :] if axis == -2 else x[..., idx[:, k]]
        out *= w[:, k]
        return out

    acc = tap(0)
    for k in range(1, k_taps):
        acc += tap(k)
    return acc


def _noise_sd(images: np.ndarray) -> np.ndarray:
    """Robust per-image noise estimate (levels) of ``(N, h, w)`` images.

    The median absolute difference between a pixel and the mean of its four neighbours,
    scaled to a standard deviation for white noise (that difference has variance 1.25 sigma^2).
    Edges and texture touch few pixels, so the median sees the noise.
    """
    c = images[:, 1:-1, 1:-1]
    lap = c - 0.25 * (images[:, :-2, 1:-1] + images[:, 2:, 1:-1] + images[:, 1:-1, :-2] + images[:, 1:-1, 2:])
    flat = np.abs(lap).reshape(len(images), -1)
    return 1.4826 * np.median(flat, axis=1) / np.sqrt(1.25)


def _box_blur(images: np.ndarray, size: int) -> np.ndarray:
    """Mean over a ``size`` x ``size`` box of each ``(N, h, w)`` image, edges mirrored (as
    ``scipy.ndimage.uniform_filter(mode="reflect")``; plain numpy: scipy is not a runtime dependency)."""
    lo = size // 2
    hi = size - 1 - lo
    p = np.pad(images.astype(np.float64), ((0, 0), (lo, hi), (lo, hi)), mode="symmetric")
    c = np.cumsum(np.pad(p, ((0, 0), (1, 0), (1, 0))), axis=1).cumsum(axis=2)
    h, w = images.shape[1:]
    box = c[:, size:size + h, size:size + w] - c[:, :h, size:size + w] - c[:, size:size + h, :w] + c[:, :h, :w]
    return (box / (size * size)).astype(np.float32)


def contrast_gains(images: np.ndarray) -> np.ndarray:
    """The contrast stretch of each ``(N, HASH_SIZE, HASH_SIZE)`` luma image (1 = untouched).

    An image is stretched only when its standard deviation is below
    :data:`CONTRAST_TARGET_STD` and it holds detail: what a box blur removes, less the
    noise's share, is at least :data:`_CONTRAST_MIN_DETAIL` levels and
    :data:`_CONTRAST_MIN_SNR` times the noise. Shading alone (a vignetted blank frame, a
    gradient) is not detail, nor is noise. The gain brings the image to the target standard
    deviation, at most :data:`CONTRAST_MAX_GAIN`.

    Returns:
        ``float32 (N,)`` gains, each 1.0 or more.
    """
    y = np.asarray(images, dtype=np.float32)
    n = len(y)
    gains = np.ones(n, np.float32)
    if n == 0:
        return gains
    sd = y.reshape(n, -1).std(axis=1).astype(np.float64)
    low = np.flatnonzero(sd < CONTRAST_TARGET_STD)
    if low.size == 0:
        return gains
    sub = y[low]
    detail = sub - _box_blur(sub, _DETAIL_BOX)
    noise = _noise_sd(sub)
    dsd = detail.reshape(low.size, -1).std(axis=1).astype(np.float64)
    structure = np.sqrt(np.maximum(dsd ** 2 - noise ** 2, 0.0))
    ok = (structure >= _CONTRAST_MIN_DETAIL) & (structure >= _CONTRAST_MIN_SNR * noise)
    g = np.clip(CONTRAST_TARGET_STD / np.maximum(sd[low], 1e-6), 1.0, CONTRAST_MAX_GAIN)
    gains[low] = np.where(ok, g, 1.0).astype(np.float32)
    return gains


def stretch_contrast(images: np.ndarray, gains: np.ndarray, means: np.ndarray) -> None:
    """Stretch ``(N, h, w)`` float images in place: ``(y - mean) * gain + 128``, clipped to 0..255.

    Images whose gain is 1 are left exactly as they are (ordinary footage keeps its bits). The
    same ``gains`` and ``means`` (the identity image's) apply to every crop of one sample, so a
    crop of a stretched frame is the stretched crop.
    """
    for k in np.flatnonzero(gains != 1.0):
        img = images[k]
        img -= means[k]
        img *= gains[k]
        img += 128.0
        np.clip(img, 0.0, 255.0, out=img)


def region_luma(y: np.ndarray, box: Box) -> np.ndarray:
    """Cut ``box`` out of the working luma and resample it to the PDQ input size."""
    return resample_luma(y[box.y0:box.y1, box.x0:box.x1], HASH_SIZE)


def prep_image(rgb: np.ndarray) -> np.ndarray:
    """Full normalisation of one image: working size, bar trim, PDQ input size, contrast stretch.

    Args:
        rgb: ``uint8 (h, w, 3)`` image of any size.

    Returns:
        ``float32 (HASH_SIZE, HASH_SIZE)`` luma, what PDQ hashes (before rounding to 8 bits).
    """
    y = luma(to_work_image(rgb))
    small = region_luma(y, content_box_from_luma(y))[None]
    stretch_contrast(small, contrast_gains(small), small.reshape(1, -1).mean(axis=1))
    return small[0]
