"""Fingerprints of streams: codes, variants, low-information time, resampling."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.fingerprint import (
    ALGO_ID,
    EDGE_DEFAULT_RUNG,
    PRESET_LADDERS,
    code_to_hex,
    fingerprint_stream,
    hex_to_code,
    prep_and_hash_image,
    resample,
    variants_for,
    variants_from_config,
)
from overlap_desktop.core.ingest.frames import ArrayFrame, scale_rgb
from overlap_desktop.core.ingest.pdq_batch import hamming
from overlap_desktop.core.types import NS_PER_S, CancelToken, Variant
from overlap_desktop.errors import Cancelled
from tests.footage import Scene

SIZE = (320, 240)


def clip(seed: int, seconds: float, fps: float = 12.0, *, t0: float = 0.0,
         transform=None) -> list[ArrayFrame]:  # type: ignore[no-untyped-def]
    scene = Scene(seed)
    out = []
    for i in range(int(round(seconds * fps))):
        img = scene.frame(t0 + i / fps, SIZE)
        out.append(ArrayFrame(int(round(i / fps * NS_PER_S)), transform(img) if transform else img))
    return out


def crop_centre(img: np.ndarray, keep: float) -> np.ndarray:
    h, w = img.shape[:2]
    ch, cw = round(h * keep), round(w * keep)
    y0, x0 = (h - ch) // 2, (w - cw) // 2
    return scale_rgb(np.ascontiguousarray(img[y0:y0 + ch, x0:x0 + cw]), w, h)


def crop_edge(img: np.ndarray, side: str, depth: float) -> np.ndarray:
    h, w = img.shape[:2]
    n = round(h * depth)
    sl = img[n:] if side == "top" else img[: h - n]
    return scale_rgb(np.ascontiguousarray(sl), w, h)


# ----------------------------------------------------------------------------- codes


def test_hex_roundtrip_and_hamming_broadcasts() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (5, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (3, 1, 32), dtype=np.uint8)
    d = hamming(a, b)
    assert d.shape == (3, 5)
    bits = np.unpackbits(a[None] ^ b, axis=-1).sum(-1)
    assert np.array_equal(d, bits)
    assert int(hamming(a[0], a[0])) == 0
    assert int(hamming(np.zeros(32, np.uint8), np.full(32, 255, np.uint8))) == 256
    h = code_to_hex(a[0])
    assert len(h) == 64 and np.array_equal(hex_to_code(h), a[0])
    with pytest.raises(ValueError):
        hex_to_code("abc")
    with pytest.raises(ValueError):
        code_to_hex(a)


def test_hamming_lookup_table_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (7, 32), dtype=np.uint8)
    expected = hamming(a[:, None], a[None])
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert np.array_equal(hamming(a[:, None], a[None]), expected)


def test_algo_id() -> None:
    assert ALGO_ID == "pdq256-v1"


# ----------------------------------------------------------------------------- variants


def test_variants_from_config_presets() -> None:
    fast = variants_from_config(load_config())
    assert fast[0] == Variant()
    assert Variant(mirrored=True) in fast
    for c in PRESET_LADDERS["fast"]:
        assert Variant(crop=c) in fast and Variant(crop=c, mirrored=True) in fast
    assert Variant(edge="bottom", edge_depth=EDGE_DEFAULT_RUNG) in fast
    assert len(fast) == 2 * (1 + len(PRESET_LADDERS["fast"]) + 1)
    balanced = variants_from_config(load_config({"index.preset": "balanced"}))
    crops = {v.crop for v in balanced}
    assert {0.92, 0.85, 0.70} <= crops and min(crops) == 0.70
    thorough = variants_from_config(load_config({"index.preset": "thorough"}))
    assert min(v.crop for v in thorough) <= 0.58
    assert any(v.offset is not None for v in thorough)
    edges = variants_from_config(load_config({"index.crop_edges": "bottom,top"}))
    assert {(v.edge, v.edge_depth) for v in edges if v.edge and not v.mirrored} >= {("top", 0.12),
                                                                                  ("bottom", 0.12)}
    allv = variants_from_config(load_config({"index.dihedral": "all"}))
    assert {(v.mirrored, v.rotation) for v in allv if v.crop == 1.0 and v.edge is None} == {
        (m, r) for m in (False, True) for r in (0, 90, 180, 270)}
    custom = variants_from_config(load_config({"index.crop_ladder": "0.6"}))
    assert {v.crop for v in custom} == {1.0, 0.6}
    assert len(set(fast)) == len(fast)


def test_variants_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        variants_for(preset="extreme")
    with pytest.raises(ValueError):
        variants_for(crop_ladder=(1.2,))
    with pytest.raises(ValueError):
        variants_for(crop_edges=("middle",))
    with pytest.raises(ValueError):
        fingerprint_stream([], fps=4.0, variants=(Variant(mirrored=True),))


@pytest.fixture(scope="module")
def frames_and_variants() -> tuple[list[np.ndarray], tuple[Variant, ...], np.ndarray]:
    scene = Scene(21)
    imgs = [scene.frame(t, SIZE) for t in (0.5, 4.0, 9.0, 14.0)]
    variants = variants_for(preset="balanced", crop_edges=("bottom", "top"))
    codes = np.stack([prep_and_hash_image(img, variants)[0] for img in imgs])
    return imgs, variants, codes


def nearest(query: np.ndarray, corpus: np.ndarray, variants: tuple[Variant, ...],
            allowed) -> tuple[int, Variant]:  # type: ignore[no-untyped-def]
    idx = [i for i, v in enumerate(variants) if allowed(v)]
    d = hamming(corpus[idx], query)
    j = int(np.argmin(d))
    return int(d[j]), variants[idx[j]]


@pytest.mark.parametrize("keep,ladder_max", [(0.95, 24), (0.92, 14), (0.85, 20), (0.70, 20)])
def test_centre_crops_land_on_a_rung(frames_and_variants, keep: float, ladder_max: int) -> None:  # type: ignore[no-untyped-def]
    imgs, variants, codes = frames_and_variants
    for img, corpus in zip(imgs, codes):
        q, _ = prep_and_hash_image(crop_centre(img, keep))
        d_id = int(hamming(corpus[0], q[0]))
        d, v = nearest(q[0], corpus, variants, lambda v: v.edge is None and not v.mirrored)
        assert d <= ladder_max < d_id, (keep, d, d_id, v)
        assert abs(v.crop - keep) <= 0.011


def test_crop_beyond_balanced_ladder_is_far(frames_and_variants) -> None:  # type: ignore[no-untyped-def]
    imgs, variants, codes = frames_and_variants
    for img, corpus in zip(imgs, codes):
        q, _ = prep_and_hash_image(crop_centre(img, 0.60))
        d, _ = nearest(q[0], corpus, variants, lambda v: True)
        assert d >= 64


@pytest.mark.parametrize("side,depth", [("bottom", 0.08), ("bottom", 0.15), ("top", 0.10)])
def test_edge_crops_land_on_an_edge_rung(frames_and_variants, side: str, depth: float) -> None:  # type: ignore[no-untyped-def]
    imgs, variants, codes = frames_and_variants
    for img, corpus in zip(imgs, codes):
        q, _ = prep_and_hash_image(crop_edge(img, side, depth))
        d, v = nearest(q[0], corpus, variants, lambda v: v.edge == side and not v.mirrored)
        d_id = int(hamming(corpus[0], q[0]))
        # 1% off a rung costs up to ~30 bits (docs/architecture.md); the original is ~90+ away.
        assert d <= 32 < d_id - 40 and abs(v.edge_depth - depth) <= 0.02, (side, depth, d, d_id, v)


def test_mirror_lands_on_mirrored_variant(frames_and_variants) -> None:  # type: ignore[no-untyped-def]
    imgs, variants, codes = frames_and_variants
    for img, corpus in zip(imgs, codes):
        q, _ = prep_and_hash_image(np.ascontiguousarray(img[:, ::-1]))
        d, v = nearest(q[0], corpus, variants, lambda v: True)
        assert d <= 4 and v == Variant(mirrored=True)
        assert int(hamming(corpus[0], q[0])) > 90


def test_unrelated_footage_stays_far(frames_and_variants) -> None:  # type: ignore[no-untyped-def]
    _, variants, codes = frames_and_variants
    other = Scene(99)
    for t in (1.0, 7.0):
        q, _ = prep_and_hash_image(other.frame(t, SIZE))
        assert int(hamming(codes.reshape(-1, 32), q[0]).min()) >= 70


# ----------------------------------------------------------------------------- streams


def test_fingerprint_stream_grid_and_shapes() -> None:
    frames = clip(3, 6.0)
    seen: list[float] = []
    fp = fingerprint_stream(frames, fps=4.0, variants=variants_for(), on_frame=seen.append)
    n = len(fp)
    assert n == int(5.9167 * 4) + 1
    assert np.array_equal(fp.times_ns, np.round(np.arange(n) * NS_PER_S / 4).astype(np.int64))
    assert fp.codes.shape == (n, len(variants_for()), 32) and fp.codes.dtype == np.uint8
    assert fp.quality.dtype == np.uint8 and fp.usable.all()
    assert fp.indeterminate == []
    assert fp.fps == 4.0 and seen[-1] == pytest.approx(fp.times_ns[-1] / NS_PER_S)
    # Deterministic: the same frames give the same codes.
    again = fingerprint_stream(frames, fps=4.0, variants=variants_for())
    assert np.array_equal(again.codes, fp.codes)


def test_copy_at_other_frame_rate_matches_on_the_grid() -> None:
    a = fingerprint_stream(clip(5, 8.0, fps=30.0), fps=4.0)
    b = fingerprint_stream(clip(5, 8.0, fps=15.0), fps=4.0)
    m = min(len(a), len(b))
    d = hamming(a.codes[:m, 0], b.codes[:m, 0])
    assert np.median(d) <= 12


def test_featureless_and_static_time_is_indeterminate() -> None:
    scene = Scene(8)
    frames = []
    fps = 10.0
    for i in range(int(20 * fps)):
        t = i / fps
        if t < 4:
            img = scene.frame(t, SIZE)
        elif t < 7:
            img = np.full((SIZE[1], SIZE[0], 3), 90, np.uint8)  # a flat grey screen
        elif t < 15:
            img = scene.frame(7.0, SIZE)  # the robot idles: the same picture for 8 s
        else:
            img = scene.frame(t, SIZE)
        frames.append(ArrayFrame(int(round(t * NS_PER_S)), img))
    fp = fingerprint_stream(frames, fps=4.0, static_seconds=5.0)
    reasons = {s.reason for s in fp.indeterminate}
    assert reasons == {"featureless", "static"}
    flat = [s for s in fp.indeterminate if s.reason == "featureless"]
    static = [s for s in fp.indeterminate if s.reason == "static"]
    assert flat[0].start_s == pytest.approx(4.0) and flat[0].end_s == pytest.approx(7.0)
    assert static[0].start_s == pytest.approx(7.0) and static[0].duration_s >= 7.5
    t = fp.times_ns / NS_PER_S
    assert not fp.usable[(t >= 4.0) & (t < 15.0)].any()
    assert fp.usable[t < 4.0].all() and fp.usable[t >= 15.25].all()
    assert (fp.quality[(t >= 4) & (t < 7)] < 50).all()
    # Short static stretches stay usable.
    fp2 = fingerprint_stream(frames, fps=4.0, static_seconds=30.0)
    assert {s.reason for s in fp2.indeterminate} == {"featureless"}


def test_resample_strides_and_keeps_times() -> None:
    fp = fingerprint_stream(clip(4, 5.0), fps=4.0, variants=variants_for())
    one = resample(fp, 1.0)
    assert one.fps == 1.0 and np.array_equal(one.times_ns, fp.times_ns[::4])
    assert np.array_equal(one.codes, fp.codes[::4])
    ident = resample(fp, 1.0, identity_only=True)
    assert ident.codes.shape[1] == 1 and ident.variants == (Variant(),)
    assert len(resample(fp, 8.0)) == len(fp)
    with pytest.raises(ValueError):
        resample(fp, 0)


def test_cancel_stops_fingerprinting() -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        fingerprint_stream(clip(1, 1.0), fps=4.0, cancel=token)


def test_empty_stream() -> None:
    fp = fingerprint_stream([], fps=4.0)
    assert len(fp) == 0 and fp.codes.shape == (0, 1, 32)
