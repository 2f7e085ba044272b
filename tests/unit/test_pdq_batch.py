"""The batched PDQ hashing against ``pdqhash`` and against hashing one image at a time.

The claim under test is exactness: the batch path must give the very coefficients,
qualities and bits ``pdqhash`` gives, so indexes built before it and after it agree bit
for bit. Each equality is checked on thousands of images of different kinds, and the
self-check that guards the batch path is shown to catch a DCT summed in another order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from overlap_desktop.core.ingest import fingerprint, pdq_batch, prep
from overlap_desktop.core.ingest.fingerprint import _FrameHasher, fingerprint_stream, variants_for
from overlap_desktop.core.types import Variant

pdqhash = pytest.importorskip("pdqhash")

DATA = Path(__file__).resolve().parents[1] / "data"


def _images(n: int, seed: int) -> np.ndarray:
    """Whole-number 64x64 images: noise, smooth fields, gradients, flats, stripes, extremes."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, 64)
    out = []
    for k in range(n):
        kind = k % 6
        if kind == 0:
            im = rng.integers(0, 256, (64, 64)).astype(float)
        elif kind == 1:
            im = ndimage.gaussian_filter(rng.random((64, 64)) * 255, rng.uniform(0.5, 6)) * rng.uniform(0.5, 4)
        elif kind == 2:
            im = np.full((64, 64), float(rng.integers(0, 256)))
            im += (rng.random((64, 64)) < 0.01) * rng.integers(-5, 6)
        elif kind == 3:
            im = 128 + 127 * np.sin(rng.uniform(1, 40) * x[None, :] + rng.uniform(0, 40) * x[:, None])
        elif kind == 4:
            im = np.where(rng.random((64, 64)) < 0.5, 0.0, 255.0)
        else:
            im = np.cumsum(rng.integers(-4, 5, (64, 64)), axis=0) + rng.integers(0, 256)
        out.append(np.clip(np.rint(im), 0, 255))
    return np.stack(out).astype(np.float32)


def test_dct_and_quality_equal_pdqhash_bit_for_bit() -> None:
    imgs = _images(1800, seed=11)
    ref, ref_q = pdq_batch.pdqhash_coefs(imgs)
    got = np.concatenate([pdq_batch.dct16(imgs[i:i + 64]) for i in range(0, len(imgs), 64)])
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))  # same bits, not merely close
    assert np.array_equal(pdq_batch.quality(imgs), ref_q)
    assert len(set(ref_q.tolist())) > 20  # the qualities cover the range, not one value


def test_codes_equal_pdqhash_compute() -> None:
    imgs = _images(600, seed=12)
    codes = pdq_batch.codes_from_coefs(pdq_batch.dct16(imgs))
    for img, code in zip(imgs, codes):
        bits, _ = pdqhash.compute(np.repeat(img.astype(np.uint8)[:, :, None], 3, axis=2))
        assert np.array_equal(code, fingerprint.bits_to_code(bits))


@pytest.mark.parametrize("mirrored", [False, True])
@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_turned_codes_equal_hashing_the_turned_image(mirrored: bool, rotation: int) -> None:
    imgs = _images(60, seed=13)
    codes = pdq_batch.codes_from_coefs(pdq_batch.dct16(imgs), mirrored, rotation)
    for img, code in zip(imgs, codes):
        turned = np.rot90(img[:, ::-1] if mirrored else img, rotation // 90)
        bits, q = pdqhash.compute(np.repeat(np.ascontiguousarray(turned).astype(np.uint8)[:, :, None], 3, axis=2))
        if q < 10:
            continue  # near-flat images: coefficients tie and PDQ's own bits are noise
        assert np.array_equal(code, fingerprint.bits_to_code(bits))


def test_self_check_catches_a_dct_summed_in_another_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: a matrix-product DCT (same maths, other rounding) must fail the check."""
    assert pdq_batch.matches_pdqhash()

    def reordered(images: np.ndarray) -> np.ndarray:
        d = pdq_batch.DCT_MATRIX
        return (d @ np.asarray(images, np.float32) @ d.T).astype(np.float32)

    monkeypatch.setattr(pdq_batch, "dct16", reordered)
    pdq_batch.matches_pdqhash.cache_clear()
    try:
        assert not pdq_batch.matches_pdqhash()
    finally:
        pdq_batch.matches_pdqhash.cache_clear()


def test_fallback_to_pdqhash_gives_the_same_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    work = _work_images(6)
    hasher = _FrameHasher(variants_for())
    fast = hasher.hash_batch(work)
    monkeypatch.setattr(pdq_batch, "matches_pdqhash", lambda: False)
    slow = hasher.hash_batch(work)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])


def _work_images(n: int) -> np.ndarray:
    """Working images with and without letterbox / pillarbox bars, and a flat one."""
    rng = np.random.default_rng(7)
    base = ndimage.uniform_filter((rng.random((n, prep.WORK_SIZE, prep.WORK_SIZE, 3)) * 255).astype(np.uint8),
                                  (1, 5, 5, 1))
    base[1, :24] = 0
    base[1, -24:] = 0
    base[2, :, :30] = 8
    base[2, :, -30:] = 8
    base[3] = 77
    return base


def _reference_codes(work: np.ndarray, variants: tuple[Variant, ...]) -> tuple[np.ndarray, int]:
    """One image, one geometry at a time: the numpy ``sum`` resample the indexes were built
    with, ``pdqhash.compute_float``, and the median rule."""
    y = prep.luma(work)
    box = prep.content_box_from_luma(y)
    out = []
    quality = -1
    for v in variants:
        g = fingerprint._geometry_box(box, v)
        r = y[g.y0:g.y1, g.x0:g.x1]
        i0, w0 = prep._area_band(r.shape[0], prep.HASH_SIZE)
        rows = (r[i0] * w0[:, :, None]).sum(axis=1)
        i1, w1 = prep._area_band(r.shape[1], prep.HASH_SIZE)
        small = (rows[:, i1] * w1[None, :, :]).sum(axis=2)
        img = np.clip(np.rint(small), 0, 255).astype(np.uint8)
        flat, q = pdqhash.compute_float(np.repeat(img[:, :, None], 3, axis=2))
        coef = np.asarray(flat, np.float32)[::-1].reshape(1, 16, 16)
        if quality < 0:
            quality = int(q)
        out.append(pdq_batch.codes_from_coefs(coef, v.mirrored, v.rotation)[0])
    return np.stack(out), quality


@pytest.mark.parametrize("preset", ["fast", "balanced"])
def test_batch_equals_one_image_at_a_time(preset: str) -> None:
    variants = variants_for(preset=preset, dihedral="all", crop_edges=("left",))
    work = _work_images(9)  # boxes differ inside the batch: bars, pillars, none
    codes, quality = _FrameHasher(variants).hash_batch(work)
    for k in range(len(work)):
        ref_codes, ref_q = _reference_codes(work[k], variants)
        assert np.array_equal(codes[k], ref_codes), k
        assert quality[k] == ref_q
    assert quality[3] == 0  # the flat picture


def test_hash_hash_image_refuses_other_sizes() -> None:
    with pytest.raises(ValueError, match="64x64"):
        fingerprint.hash_hash_image(np.zeros((32, 64), np.float32))


class _Frame:
    def __init__(self, work: np.ndarray, t_ns: int) -> None:
        self.work = work
        self.t_ns = t_ns

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        assert (height, width) == self.work.shape[:2]
        return self.work


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_stream_results_do_not_depend_on_the_batch_size(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """Frames held over several grid points, across batch boundaries, keep their own codes."""
    work = _work_images(9)
    # 10 fps footage sampled at 4 fps, with frames 3-6 held for 0.9 s (a stutter).
    times = [0, 100, 200, 300, 1200, 1300, 1400, 1500, 1600, 1700]
    frames = [_Frame(work[k % len(work)], t * 1_000_000) for k, t in enumerate(times)]
    variants = variants_for()
    monkeypatch.setattr(fingerprint, "HASH_BATCH", 16)
    ref = fingerprint_stream(iter(frames), fps=4.0, variants=variants)
    monkeypatch.setattr(fingerprint, "HASH_BATCH", batch)
    got = fingerprint_stream(iter(frames), fps=4.0, variants=variants)
    assert np.array_equal(got.codes, ref.codes) and np.array_equal(got.quality, ref.quality)
    assert len(ref.times_ns) >= 7
    hasher = _FrameHasher(variants)
    by_frame = {f.t_ns: hasher.hash_work(f.work) for f in frames}
    shown = [max(t for t in by_frame if t <= g) for g in ref.times_ns]
    for k, t in enumerate(shown):
        assert np.array_equal(ref.codes[k], by_frame[t][0]), k


class _LumaFrame(_Frame):
    """A frame that also gives luma, as the indexing video reader's frames do."""

    def __init__(self, work: np.ndarray, t_ns: int, luma: np.ndarray) -> None:
        super().__init__(work, t_ns)
        self.luma = luma

    def to_luma(self, width: int, height: int) -> np.ndarray:
        assert (height, width) == self.luma.shape
        return self.luma


def test_frames_that_give_luma_are_hashed_from_it() -> None:
    """A frame offering ``to_luma`` is hashed from that luma: the same codes as its RGB when the
    luma is PDQ's weighting of it, and other codes when the luma is another picture's."""
    work = _work_images(9)
    times = [k * 250_000_000 for k in range(len(work))]
    variants = variants_for()
    rgb = fingerprint_stream(iter([_Frame(w, t) for w, t in zip(work, times)]), fps=4.0, variants=variants)
    same = fingerprint_stream(iter([_LumaFrame(w, t, prep.luma(w)) for w, t in zip(work, times)]), fps=4.0,
                              variants=variants)
    assert np.array_equal(same.codes, rgb.codes) and np.array_equal(same.quality, rgb.quality)
    # Whole-number luma (what swscale's gray gives) goes through the same path.
    rounded = fingerprint_stream(iter([_LumaFrame(w, t, np.rint(prep.luma(w)).astype(np.uint8))
                                       for w, t in zip(work, times)]), fps=4.0, variants=variants)
    assert pdq_batch.hamming(rounded.codes, rgb.codes)[rgb.quality >= 50].mean() < 8
    # Control: luma of the next picture gives that picture's codes, so the luma is what is hashed.
    shifted = fingerprint_stream(iter([_LumaFrame(w, t, prep.luma(work[(k + 1) % len(work)]))
                                       for k, (w, t) in enumerate(zip(work, times))]), fps=4.0, variants=variants)
    assert np.array_equal(shifted.codes[:-1], rgb.codes[1:])
    assert not np.array_equal(shifted.codes, rgb.codes)
