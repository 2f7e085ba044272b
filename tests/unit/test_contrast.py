"""Contrast stretch of dark, low-contrast samples (prep v2) and the stillness of dim streams."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.ingest import fingerprint as fpm
from overlap_desktop.core.ingest import pdq_batch, prep, stillness
from overlap_desktop.core.ingest.fingerprint import prep_and_hash_image
from overlap_desktop.core.ingest.pdq_batch import hamming
from overlap_desktop.core.types import Variant
from tests.footage import Scene


@pytest.fixture(scope="module")
def picture() -> np.ndarray:
    return Scene(11).frame(3.0, (320, 240))


def dim(img: np.ndarray, scale: float, *, offset: float = 12.0, noise: float = 1.5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = img.astype(np.float32) * scale + offset + rng.normal(0.0, noise, img.shape[:2])[..., None]
    return np.clip(out, 0, 255).astype(np.uint8)


def blank(level: float, noise: float, *, vignette: float = 0.35, seed: int = 0) -> np.ndarray:
    """A lens-cap frame: a black level, shading towards the corners, sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:240, :320]
    shade = level * (1 - vignette * (((yy - 120) / 120) ** 2 + ((xx - 160) / 160) ** 2))
    return np.clip(shade + rng.normal(0, noise, shade.shape), 0, 255).astype(np.uint8)[..., None].repeat(3, 2)


def _unstretched(rgb: np.ndarray) -> tuple[np.ndarray, int]:
    """Code and quality of the v1 normalisation (no stretch), through pdqhash's arithmetic."""
    y = prep.luma(prep.to_work_image(rgb))
    small = np.clip(np.rint(prep.region_luma(y, prep.content_box_from_luma(y))), 0, 255)[None]
    coefs, q = pdq_batch.coefs_and_quality(small)
    return pdq_batch.codes_from_coefs(coefs)[0], int(q[0])


def test_ordinary_footage_is_untouched_bit_for_bit(picture: np.ndarray) -> None:
    y = prep.luma(prep.to_work_image(picture))
    small = prep.region_luma(y, prep.content_box_from_luma(y))
    assert small.std() >= prep.CONTRAST_TARGET_STD
    assert prep.contrast_gains(small[None])[0] == 1.0
    code, q = prep_and_hash_image(picture)
    ref, ref_q = _unstretched(picture)
    assert np.array_equal(code[0], ref) and q == ref_q


@pytest.mark.parametrize("scale", [0.12, 0.08])
def test_dark_footage_is_stretched_and_keeps_its_code(picture: np.ndarray, scale: float) -> None:
    dark = dim(picture, scale)
    code, q = prep_and_hash_image(dark)
    raw, raw_q = _unstretched(dark)
    bright, _ = prep_and_hash_image(picture)
    assert raw_q < 50 <= q  # featureless before, judged now
    # The stretch is affine: the bits are the unstretched ones up to rounding.
    assert int(hamming(code[0], raw)) <= 12
    # ... and the dim copy lands near the bright original.
    assert int(hamming(code[0], bright[0])) <= 24


@pytest.mark.parametrize(("level", "noise", "vignette"), [(5, 1.0, 0.35), (20, 3.0, 0.35), (20, 6.0, 0.35),
                                                          (60, 1.0, 0.35), (40, 2.0, 0.0)])
def test_blank_frames_stay_featureless(level: float, noise: float, vignette: float) -> None:
    img = blank(level, noise, vignette=vignette)
    y = prep.luma(prep.to_work_image(img))
    small = prep.region_luma(y, prep.content_box_from_luma(y))
    assert prep.contrast_gains(small[None])[0] == 1.0
    assert prep_and_hash_image(img)[1] < 50


def test_pure_noise_is_not_stretched() -> None:
    rng = np.random.default_rng(3)
    img = np.clip(30 + rng.normal(0, 4.0, (240, 320, 1)), 0, 255).astype(np.uint8).repeat(3, 2)
    y = prep.luma(prep.to_work_image(img))
    small = prep.region_luma(y, prep.content_box_from_luma(y))
    assert prep.contrast_gains(small[None])[0] == 1.0


def test_gain_is_bounded_and_batched_like_single(picture: np.ndarray) -> None:
    imgs = [picture, dim(picture, 0.25), dim(picture, 0.12, seed=1), blank(20, 3.0)]
    smalls = []
    for img in imgs:
        y = prep.luma(prep.to_work_image(img))
        smalls.append(prep.region_luma(y, prep.content_box_from_luma(y)))
    batch = prep.contrast_gains(np.stack(smalls))
    single = np.array([prep.contrast_gains(s[None])[0] for s in smalls])
    assert np.array_equal(batch, single)
    assert batch[0] == 1.0 and batch[3] == 1.0
    assert 1.0 < batch[1] < batch[2] <= prep.CONTRAST_MAX_GAIN


def test_every_variant_of_a_dark_sample_is_stretched_alike(picture: np.ndarray) -> None:
    """A crop variant of a dim frame is the dim frame's crop: the gain and mean are the sample's."""
    dark = dim(picture, 0.2)
    variants = (Variant(), Variant(crop=0.9), Variant(mirrored=True))
    codes, q = prep_and_hash_image(dark, variants)
    from tests import manipulations as m

    cropped, _ = prep_and_hash_image(m.crop_centre(0.9)(dark))
    assert q >= 50
    assert int(hamming(codes[1], cropped[0])) <= 24
    mirrored, _ = prep_and_hash_image(np.ascontiguousarray(dark[:, ::-1]))
    assert int(hamming(codes[2], mirrored[0])) <= 8


def test_prep_image_includes_the_stretch(picture: np.ndarray) -> None:
    dark = dim(picture, 0.2)
    img = prep.prep_image(dark)
    assert img.std() == pytest.approx(prep.CONTRAST_TARGET_STD, rel=0.1)
    code, _ = fpm.hash_hash_image(img)
    assert np.array_equal(code, prep_and_hash_image(dark)[0][0])


# --------------------------------------------------------------------------- stillness of dim streams


def _jittery(n: int, flips: int, seed: int = 0) -> np.ndarray:
    """One still picture's code with ``flips`` random bits flipped in every sample (sensor noise)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, 32, dtype=np.uint8)
    bits = np.unpackbits(np.repeat(base[None], n, axis=0), axis=1)
    for k in range(n):
        bits[k, rng.choice(256, flips, replace=False)] ^= 1
    return np.packbits(bits, axis=1)


def test_static_bits_follow_a_dim_streams_jitter() -> None:
    steady = _jittery(40, 1)
    assert stillness.static_bits_for(steady) == stillness.STATIC_BITS
    noisy = _jittery(40, 7)  # two samples differ by ~14 bits, a run's first by up to ~20
    bits = stillness.static_bits_for(noisy)
    assert stillness.STATIC_BITS < bits <= 2 * stillness.STATIC_BITS
    assert stillness.static_runs(noisy, 20, bits) == [(0, 40)]
    assert stillness.static_runs(noisy, 20, stillness.STATIC_BITS) == []
