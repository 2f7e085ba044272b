"""dct16_fast (the crop search's DCT) against the exact batch DCT that reproduces pdqhash."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.ingest import pdq_batch


def test_the_matrix_product_dct_agrees_with_the_exact_one_to_rounding() -> None:
    rng = np.random.default_rng(3)
    # Smooth fields like camera frames (a block pattern aligned with the DCT would put many
    # coefficients at exactly zero, where any rounding decides the bit, pdqhash's too).
    noise = rng.uniform(0, 1, (7, 64, 64))
    smooth = np.cumsum(np.cumsum(noise - noise.mean(axis=(1, 2), keepdims=True), axis=1), axis=2)
    smooth = ((smooth - smooth.min()) / np.ptp(smooth) * 255).astype(np.float32)
    images = np.rint(np.concatenate([rng.uniform(0, 255, (5, 64, 64)).astype(np.float32), smooth]))
    exact, fast = pdq_batch.dct16(images), pdq_batch.dct16_fast(images)
    assert fast.shape == exact.shape == (12, 16, 16)
    assert fast.dtype == np.float32
    assert float(np.abs(fast - exact).max()) < 1e-2
    # Codes: at most a bit where a coefficient sits at the median, never more.
    bits = np.unpackbits(pdq_batch.codes_from_coefs(fast) ^ pdq_batch.codes_from_coefs(exact), axis=1).sum(axis=1)
    assert int(bits.max()) <= 1


def test_a_single_image_and_an_empty_batch() -> None:
    img = np.rint(np.random.default_rng(4).uniform(0, 255, (1, 64, 64))).astype(np.float32)
    assert np.allclose(pdq_batch.dct16_fast(img), pdq_batch.dct16(img), atol=1e-2)
    assert pdq_batch.dct16_fast(np.zeros((0, 64, 64), np.float32)).shape == (0, 16, 16)
