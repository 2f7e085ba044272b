"""Normalisation: letterbox / pillarbox trimming, luma resampling, PREP_ID."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.fingerprint import prep_and_hash_image
from overlap_desktop.core.ingest.pdq_batch import hamming
from tests.footage import Scene

W = prep.WORK_SIZE


@pytest.fixture(scope="module")
def picture() -> np.ndarray:
    return Scene(11).frame(3.0, (320, 240))


def letterbox(img: np.ndarray, frac: float, *, axis: int = 0, noise: float = 3.0) -> np.ndarray:
    """Content squeezed between black bars of ``frac`` per side (with encoder-like noise)."""
    h, w = img.shape[:2]
    out = np.zeros_like(img)
    from overlap_desktop.core.ingest.frames import scale_rgb

    if axis == 0:
        n = round(h * frac)
        out[n:h - n] = scale_rgb(img, w, h - 2 * n)
    else:
        n = round(w * frac)
        out[:, n:w - n] = scale_rgb(img, w - 2 * n, h)
    rng = np.random.default_rng(0)
    noisy = out.astype(np.int16) + rng.normal(0, noise, out.shape).astype(np.int16)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def test_prep_id_is_versioned() -> None:
    assert prep.PREP_ID.endswith("-v2")
    # v1 (before the contrast stretch) stays comparable: its usable codes are reproduced.
    assert prep.PREP_PREDECESSORS == ("sq192-area-bars30-luma64-v1",)
    assert str(W) in prep.PREP_ID and str(prep.HASH_SIZE) in prep.PREP_ID


@pytest.mark.parametrize("frac", [0.10, 0.15, 0.2])
def test_letterbox_is_trimmed_and_hash_converges(picture: np.ndarray, frac: float) -> None:
    boxed = letterbox(picture, frac)
    top, bottom, left, right = prep.detect_bars(prep.to_work_image(boxed))
    assert abs(top - frac * W) <= 2 and abs(bottom - frac * W) <= 2
    assert left == right == 0
    a, _ = prep_and_hash_image(picture)
    b, _ = prep_and_hash_image(boxed)
    assert int(hamming(a[0], b[0])) <= 16


def test_pillarbox_is_trimmed(picture: np.ndarray) -> None:
    boxed = letterbox(picture, 0.125, axis=1)
    top, bottom, left, right = prep.detect_bars(prep.to_work_image(boxed))
    assert top == bottom == 0
    assert abs(left - 0.125 * W) <= 2 and abs(right - 0.125 * W) <= 2
    a, _ = prep_and_hash_image(picture)
    b, _ = prep_and_hash_image(boxed)
    assert int(hamming(a[0], b[0])) <= 16


def test_no_bars_on_plain_footage(picture: np.ndarray) -> None:
    assert prep.detect_bars(prep.to_work_image(picture)) == (0, 0, 0, 0)
    assert prep.content_box(prep.to_work_image(picture)) == prep.Box(0, W, 0, W)


def test_dark_content_on_one_side_is_not_trimmed(picture: np.ndarray) -> None:
    img = picture.copy()
    img[: img.shape[0] // 5] = 5  # a dark ceiling, but nothing at the bottom
    assert prep.detect_bars(prep.to_work_image(img)) == (0, 0, 0, 0)


def test_black_and_dark_frames_are_not_trimmed() -> None:
    black = np.zeros((240, 320, 3), np.uint8)
    assert prep.detect_bars(prep.to_work_image(black)) == (0, 0, 0, 0)
    rng = np.random.default_rng(1)
    dim = rng.integers(0, 30, (240, 320, 3)).astype(np.uint8)  # a night scene: dark but not uniform
    dim[:, :] = np.clip(dim + np.linspace(0, 25, 320)[None, :, None], 0, 255).astype(np.uint8)
    assert prep.detect_bars(prep.to_work_image(dim))[:2] == (0, 0)


def test_bars_deeper_than_the_limit_are_content(picture: np.ndarray) -> None:
    boxed = letterbox(picture, 0.35)
    assert prep.detect_bars(prep.to_work_image(boxed)) == (0, 0, 0, 0)


def test_grayscale_copy_converges(picture: np.ndarray) -> None:
    y = (picture.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).round()
    gray = np.repeat(y.astype(np.uint8)[:, :, None], 3, axis=2)
    a, _ = prep_and_hash_image(picture)
    b, _ = prep_and_hash_image(gray)
    assert int(hamming(a[0], b[0])) <= 6


def test_aspect_change_converges(picture: np.ndarray) -> None:
    from overlap_desktop.core.ingest.frames import scale_rgb

    a, _ = prep_and_hash_image(picture)
    b, _ = prep_and_hash_image(scale_rgb(picture, 426, 240))  # stretched to 16:9
    c, _ = prep_and_hash_image(scale_rgb(picture, 160, 120))  # downscaled
    assert int(hamming(a[0], b[0])) <= 10
    assert int(hamming(a[0], c[0])) <= 10


def test_resample_luma_is_an_area_filter() -> None:
    rng = np.random.default_rng(2)
    y = rng.uniform(0, 255, (W, W)).astype(np.float32)
    assert np.array_equal(prep.resample_luma(y[:64, :64]), y[:64, :64])
    out = prep.resample_luma(y[3:170, 5:150])
    assert out.shape == (prep.HASH_SIZE, prep.HASH_SIZE)
    assert abs(float(out.mean()) - float(y[3:170, 5:150].mean())) < 0.5
    # 2x exact: each output is the mean of a 2x2 block.
    blocks = y[:128, :128].reshape(64, 2, 64, 2).mean(axis=(1, 3))
    assert np.allclose(prep.resample_luma(y[:128, :128]), blocks, atol=1e-3)


def test_prep_image_shape(picture: np.ndarray) -> None:
    out = prep.prep_image(picture)
    assert out.shape == (prep.HASH_SIZE, prep.HASH_SIZE) and out.dtype == np.float32
