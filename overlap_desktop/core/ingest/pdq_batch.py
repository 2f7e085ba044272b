"""PDQ's DCT, quality and bits for many 64x64 images at once, bit for bit as ``pdqhash``.

Why not call ``pdqhash`` per image: at 426x240 hashing dominated indexing. Each call
costs ~0.1 ms, nearly all of it in the binding (an RGB copy, a float64 luma, and the
16x16 result returned as Python lists), and a sample needs four of them. Here one
sample's four crops, and many samples, go through the same few array operations.

Why this reproduces ``pdqhash`` exactly, not approximately:

* the images are whole numbers 0..255 (``fingerprint`` rounds before hashing), so the
  binding's luma ``0.299 r + 0.587 g + 0.114 b`` of a gray pixel is the number itself
  (checked for all 256 values below) and a 64x64 image is PDQ's 64x64 buffer as is;
* PDQ's DCT matrix is built the way the C++ builds it (a ``float`` scale times a
  ``double`` cosine, stored as ``float``);
* ``dct64To16`` sums each output in ``float`` one term at a time, ``k`` ascending; the
  loops below do the same additions in the same order, element-wise, and numpy's
  element-wise ``float32`` multiply and add round exactly like C++ without fused
  multiply-adds (how the x86-64 and Windows wheels are built);
* the quality's ``int(((u - v) * 100) / 255)`` of two whole numbers is
  ``(|u - v| * 100) // 255`` (the float quotient is never within rounding of an integer
  it does not equal), summed and scaled as PDQ does.

:func:`matches_pdqhash` checks that claim against the installed ``pdqhash`` on a few
images, and the fingerprinting falls back to ``pdqhash`` if it ever fails (a build with
fused multiply-adds, say); tests/unit/test_pdq_batch.py compares thousands of images.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "DCT_MATRIX",
    "codes_from_coefs",
    "coefs_and_quality",
    "dct16",
    "dct16_fast",
    "hamming",
    "matches_pdqhash",
    "oriented",
    "pdqhash_coefs",
    "quality",
]


def _dct_matrix() -> np.ndarray:
    scale = np.float32(np.sqrt(2.0 / 64.0))
    i = np.arange(16)[:, None]
    j = np.arange(64)[None, :]
    # float * double -> double, then stored as float: as fill_dct_matrix_64 does.
    return (np.float64(scale) * np.cos((np.pi / 2 / 64.0) * (i + 1) * (2 * j + 1))).astype(np.float32)


#: PDQ's 16x64 DCT matrix (rows: frequencies 1..16; columns: pixels).
DCT_MATRIX = _dct_matrix()
_D_COLS = np.ascontiguousarray(DCT_MATRIX.T)  # (64, 16): column k as a contiguous row

# |d| = (|u - v| * 100) // 255 for each pixel difference 0..255 (at most 100: fits a byte).
_GRADIENT = ((np.arange(256) * 100) // 255).astype(np.uint8)

# Sign pattern of PDQ's DCT basis under reversal of one axis (basis k uses frequency k+1).
_SIGN = ((-1.0) ** (np.arange(16) + 1)).astype(np.float32)


def dct16(images: np.ndarray) -> np.ndarray:
    """PDQ's 16x16 DCT coefficients ``[vertical][horizontal]`` of ``(N, 64, 64)`` images.

    Args:
        images: ``float32`` (or whole-number) pixel values, shape ``(N, 64, 64)``.

    Returns:
        ``float32 (N, 16, 16)``, equal bit for bit to ``pdqhash.compute_float``'s.
    """
    a = np.asarray(images, dtype=np.float32)
    n = a.shape[0]
    # Stage 1, T = D A: T[i, (n, j)] += D[i, k] * A[n, k, j] for k ascending. The image axis
    # is moved next to j so every step is one long contiguous multiply and add.
    ak = np.ascontiguousarray(a.transpose(1, 0, 2)).reshape(64, n * 64)
    t = np.zeros((16, n * 64), np.float32)
    tmp = np.empty_like(t)
    for k in range(64):
        np.multiply(_D_COLS[k, :, None], ak[k, None, :], out=tmp)
        t += tmp
    # Stage 2, B = T D^T: B[(n, i), j] += T[n, i, k] * D[j, k] for k ascending.
    tk = np.ascontiguousarray(t.reshape(16, n, 64).transpose(2, 1, 0)).reshape(64, n * 16)
    b = np.zeros((16, n * 16), np.float32)
    tmp2 = np.empty_like(b)
    for k in range(64):
        np.multiply(_D_COLS[k, :, None], tk[k, None, :], out=tmp2)
        b += tmp2
    return np.ascontiguousarray(b.reshape(16, n, 16).transpose(1, 2, 0))


_D32 = np.ascontiguousarray(DCT_MATRIX, dtype=np.float32)
_DT32 = np.ascontiguousarray(DCT_MATRIX.T, dtype=np.float32)


def dct16_fast(images: np.ndarray) -> np.ndarray:
    """PDQ's 16x16 DCT coefficients of ``(N, 64, 64)`` images as matrix products, ``D A D^T``.

    About ten times cheaper than :func:`dct16`, but the products add in the BLAS's order, so a
    coefficient may differ from ``pdqhash``'s in its last bits (1e-4 of a level): a code bit
    whose coefficient lies that close to the median may flip. For codes that are only compared
    by distance with others (never stored as the library's own), not for indexing.
    """
    a = np.asarray(images, dtype=np.float32)
    # One small product per image (a stack): each stays under the size at which OpenBLAS starts
    # threads, whose spinning cost more CPU than the product itself (measured: one (N*64, 64)
    # product cost 25 times more CPU beside the audit's decoding threads).
    return np.ascontiguousarray(_D32 @ (a @ _DT32))


def quality(images: np.ndarray) -> np.ndarray:
    """PDQ's image-domain quality (0..100) of ``(N, 64, 64)`` whole-number images."""
    g = np.asarray(images).astype(np.uint8)
    total = np.zeros(g.shape[0], np.int64)
    for a, b in ((g[:, 1:, :], g[:, :-1, :]), (g[:, :, 1:], g[:, :, :-1])):
        diff = np.maximum(a, b) - np.minimum(a, b)  # |a - b| without leaving uint8
        total += np.take(_GRADIENT, diff).sum(axis=(1, 2), dtype=np.int64)
    return np.minimum(total // 90, 100)


def oriented(coefs: np.ndarray, mirrored: bool, rotation: int) -> np.ndarray:
    """Coefficients ``(N, 16, 16)`` of the images mirrored left-right, then turned counter-clockwise.

    At 64x64 these are exact: reversing an axis flips the sign of every other basis
    function, and a quarter turn transposes the grid (what PDQ's dihedral mode does).
    """
    c = coefs * _SIGN if mirrored else coefs
    r = rotation % 360
    if r == 90:
        return (c * _SIGN).transpose(0, 2, 1)
    if r == 180:
        return c * _SIGN * _SIGN[:, None]
    if r == 270:
        return (c * _SIGN[:, None]).transpose(0, 2, 1)
    return c


def codes_from_coefs(coefs: np.ndarray, mirrored: bool = False, rotation: int = 0) -> np.ndarray:
    """256-bit codes ``uint8 (N, 32)`` of ``(N, 16, 16)`` coefficients, optionally turned.

    A bit is set where the coefficient exceeds the median; "> median" of 256 values is
    "> the 128th smallest" (PDQ's torben median), so no mean of two values is needed.
    Bit order is PDQ's (coefficient 255 first), packed MSB first.
    """
    v = oriented(np.asarray(coefs, dtype=np.float32), mirrored, rotation).reshape(-1, 256)[:, ::-1]
    med = np.partition(v, 127, axis=1)[:, 127:128]
    return np.packbits(v > med, axis=1)


def coefs_and_quality(images: np.ndarray, rated: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """PDQ coefficients ``(N, 16, 16)`` of whole-number 64x64 images, and qualities.

    The batch path when it reproduces the installed ``pdqhash`` (:func:`matches_pdqhash`),
    ``pdqhash`` itself otherwise.

    Args:
        images: ``(N, 64, 64)`` whole numbers 0..255.
        rated: Qualities of only the first ``rated`` images (all by default).

    Returns:
        ``(coefs (N, 16, 16), qualities (rated,))``.
    """
    rated = len(images) if rated is None else rated
    if matches_pdqhash():
        return dct16(images), quality(images[:rated])
    coefs, qualities = pdqhash_coefs(images)  # pragma: no cover - a build that rounds differently
    return coefs, qualities[:rated]  # pragma: no cover


def pdqhash_coefs(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients and qualities from ``pdqhash`` itself, one image at a time."""
    import pdqhash  # local: keeps ``import overlap_desktop`` light

    out = np.empty((len(images), 16, 16), np.float32)
    qs = np.empty(len(images), np.int64)
    for n, img in enumerate(images):
        g = np.clip(np.rint(img), 0, 255).astype(np.uint8)
        flat, q = pdqhash.compute_float(np.repeat(g[:, :, None], 3, axis=2))
        out[n] = np.asarray(flat, dtype=np.float32)[::-1].reshape(16, 16)
        qs[n] = q
    return out, qs


def _probe_images() -> np.ndarray:
    """A few fixed images that exercise every coefficient: noise, gradients, flat, edges."""
    rng = np.random.default_rng(20261203)
    x = np.linspace(0.0, 1.0, 64, dtype=np.float64)
    imgs = [rng.integers(0, 256, (64, 64)),
            128 + 120 * np.sin(7.3 * x[None, :] + 3.1 * x[:, None] ** 2),
            np.full((64, 64), 97),
            np.where(x[None, :] + 0 * x[:, None] > 0.5, 230, 12),
            np.cumsum(rng.integers(-3, 4, (64, 64)), axis=1) + 128]
    return np.stack([np.clip(np.rint(i), 0, 255) for i in imgs]).astype(np.float32)


@functools.cache
def matches_pdqhash() -> bool:
    """Whether :func:`dct16` and :func:`quality` reproduce the installed ``pdqhash`` here.

    Checked once per process (~2 ms). Also confirms the binding's luma of a gray pixel
    is the pixel value, which the batch path relies on.
    """
    g = np.arange(256, dtype=np.uint8)[None, :, None].repeat(3, axis=2)
    lum = (g[:, :, 0] * 0.299 + g[:, :, 1] * 0.587 + g[:, :, 2] * 0.114).astype(np.float32)[0]
    if not np.array_equal(lum, np.arange(256, dtype=np.float32)):
        return False
    try:
        ref, ref_q = pdqhash_coefs(_probe_images())
    except ImportError:  # pragma: no cover - pdqhash is a dependency
        return True
    imgs = _probe_images()
    return bool(np.array_equal(dct16(imgs), ref) and np.array_equal(quality(imgs), ref_q))


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between codes ``uint8 (..., 32)``, with numpy broadcasting.

    Returns:
        ``int32`` array of the broadcast shape without the last axis.
    """
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint8), np.asarray(b, dtype=np.uint8))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).sum(axis=-1, dtype=np.int32)
    return _POPCOUNT[x].sum(axis=-1, dtype=np.int32)  # pragma: no cover - numpy < 2
