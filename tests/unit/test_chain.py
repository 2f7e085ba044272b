"""Chaining frame matches into line segments, with synthetic fingerprints.

A synthetic "master" is a random walk in code space at 24 codes per second (nearby
times have nearby codes, as in real footage). Corpus streams sample it on a 4 fps
grid; offered copies sample it at 1 fps along a chosen line (speed, start, reversed)
with per-frame noise, and may be concatenated with unrelated material.
"""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.accounting import real_footage_seconds, split_floor, union_seconds
from overlap_desktop.core.match.geometry import fit_line
from overlap_desktop.core.match.lines import find_lines
from overlap_desktop.core.match.pair import match_streams
from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.match.verify import verify_line
from overlap_desktop.core.types import StreamFingerprints, Variant
from tests.codes import flip_bits

RATE = 24.0


def master(duration: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(duration * RATE) + 1
    flips = rng.integers(0, 256, n)
    bits = np.zeros((n, 256), np.uint8)
    bits[0] = rng.integers(0, 2, 256)
    onehot = np.zeros((n, 256), np.uint8)
    onehot[np.arange(n), flips] = 1
    bits = (np.bitwise_xor.accumulate(onehot, axis=0) ^ bits[0]).astype(np.uint8)
    return np.packbits(bits, axis=1)


def make_fp(codes: np.ndarray, times: np.ndarray, fps: float, duration: float,
            variants: tuple[Variant, ...] | None = None) -> StreamFingerprints:
    codes = codes[:, None, :] if codes.ndim == 2 else codes
    n = len(times)
    return StreamFingerprints(
        times_ns=np.round(np.asarray(times) * 1e9).astype(np.int64), quality=np.full(n, 90, np.uint8),
        codes=np.ascontiguousarray(codes), variants=variants or (Variant(),) * codes.shape[1],
        usable=np.ones(n, bool), indeterminate=[], fps=fps, duration_s=duration)


def corpus_of(m: np.ndarray, fps: float = 4.0) -> StreamFingerprints:
    dur = (len(m) - 1) / RATE
    t = np.arange(0, dur, 1 / fps)
    own = m[np.round(t * RATE).astype(int)]
    mirrored = np.random.default_rng(5).integers(0, 256, own.shape, dtype=np.uint8)
    return make_fp(np.stack([own, mirrored], axis=1), t, fps, dur, (Variant(), Variant(mirrored=True)))


def offer(pieces: list[tuple[np.ndarray | None, float, float, float]], *, fps: float = 1.0, noise: int = 12,
          seed: int = 1) -> StreamFingerprints:
    """Concatenate pieces ``(master or None for new footage, master start, speed, seconds)``."""
    rng = np.random.default_rng(seed)
    codes, times, q0 = [], [], 0.0
    for m, start, speed, secs in pieces:
        t = np.arange(0, secs - 1e-9, 1 / fps)
        if m is None:
            c = rng.integers(0, 256, (t.size, 32), dtype=np.uint8)
        else:
            idx = np.clip(np.round((start + speed * t) * RATE).astype(int), 0, len(m) - 1)
            c = flip_bits(m[idx], noise, rng)
        codes.append(c)
        times.append(q0 + t)
        q0 += secs
    return make_fp(np.concatenate(codes), np.concatenate(times), fps, q0)


def seeds(q: StreamFingerprints, c: StreamFingerprints, *, keep: float = 0.3, radius: int = 40,
          seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Brute-force matches, thinned to mimic an imperfect candidate search."""
    d = popcount_xor(q.codes[:, 0][:, None, None, :], c.codes[None, :, :, :])
    qi, ci, vi = np.nonzero(d <= radius)
    sel = np.random.default_rng(seed).random(qi.size) < keep
    return qi[sel], ci[sel], vi[sel]


@pytest.fixture(scope="module")
def m() -> np.ndarray:
    return master(150, 11)


@pytest.fixture(scope="module")
def corpus(m: np.ndarray) -> StreamFingerprints:
    return corpus_of(m)


def run(q: StreamFingerprints, c: StreamFingerprints, **kw: float) -> list:  # type: ignore[type-arg]
    return match_streams(q, c, *seeds(q, c, **kw))


# --------------------------------------------------------------------------- slopes


@pytest.mark.parametrize(("speed", "start", "secs"), [(1.0, 20.0, 30.0), (0.5, 20.0, 40.0), (2.0, 10.0, 30.0),
                                                      (-1.0, 100.0, 30.0), (4.0, 5.0, 25.0), (0.25, 5.0, 60.0)])
def test_one_line_any_slope(m: np.ndarray, corpus: StreamFingerprints, speed: float, start: float,
                            secs: float) -> None:
    segs = run(offer([(m, start, speed, secs)]), corpus)
    assert len(segs) == 1
    s = segs[0]
    assert s.speed == pytest.approx(speed, rel=0.03)
    assert s.query_start == pytest.approx(0.0, abs=1.0)
    assert s.query_end == pytest.approx(secs, abs=1.0)
    assert s.corpus_start == pytest.approx(start, abs=1.0)
    assert s.corpus_end == pytest.approx(start + speed * secs, abs=1.0 * max(1.0, abs(speed)))
    assert s.variant_idx == 0
    assert 0.5 < s.score <= 1.0


def test_variant_is_the_one_that_matches(m: np.ndarray) -> None:
    base = corpus_of(m)
    # Swap the variants: the owned footage now only matches as "mirrored".
    swapped = make_fp(base.codes[:, ::-1].copy(), base.times_ns / 1e9, base.fps, base.duration_s,
                      (Variant(), Variant(mirrored=True)))
    segs = run(offer([(m, 30.0, 1.0, 20.0)]), swapped)
    assert [s.variant_idx for s in segs] == [1]


@pytest.mark.parametrize("corpus_fps", [2.0, 4.0, 8.0])
def test_density_independence(m: np.ndarray, corpus_fps: float) -> None:
    segs = run(offer([(m, 40.0, 0.5, 30.0)]), corpus_of(m, corpus_fps))
    assert len(segs) == 1
    assert segs[0].speed == pytest.approx(0.5, rel=0.03)
    assert segs[0].corpus_start == pytest.approx(40.0, abs=1.0)


# --------------------------------------------------------------------------- gaps, splices, noise


def test_gap_inside_a_segment_is_tolerated(m: np.ndarray, corpus: StreamFingerprints) -> None:
    q = offer([(m, 20.0, 1.0, 40.0)])
    # Three seconds of damaged frames in the middle (a dropout): one segment still.
    q.codes[18:21, 0] = np.random.default_rng(2).integers(0, 256, (3, 32), dtype=np.uint8)
    segs = run(q, corpus)
    assert len(segs) == 1
    assert segs[0].query_end - segs[0].query_start == pytest.approx(40.0, abs=1.0)


def test_long_gap_splits(m: np.ndarray, corpus: StreamFingerprints) -> None:
    q = offer([(m, 20.0, 1.0, 40.0)])
    q.codes[15:25, 0] = np.random.default_rng(2).integers(0, 256, (10, 32), dtype=np.uint8)
    segs = run(q, corpus)
    assert len(segs) == 2
    assert [s.query_start for s in segs] == [pytest.approx(0, abs=1), pytest.approx(25, abs=1)]
    assert [s.query_end for s in segs] == [pytest.approx(15, abs=1), pytest.approx(40, abs=1)]


def test_two_cuts_of_one_master_are_two_segments(m: np.ndarray, corpus: StreamFingerprints) -> None:
    segs = run(offer([(m, 100.0, 1.0, 20.0), (m, 10.0, 1.0, 25.0)]), corpus)
    assert len(segs) == 2
    a, b = segs
    assert (a.query_start, a.query_end) == (pytest.approx(0, abs=1), pytest.approx(20, abs=1))
    assert a.corpus_start == pytest.approx(100, abs=1)
    assert (b.query_start, b.query_end) == (pytest.approx(20, abs=1), pytest.approx(45, abs=1))
    assert b.corpus_start == pytest.approx(10, abs=1)


def test_owned_plus_new_counts_only_the_owned_share(m: np.ndarray, corpus: StreamFingerprints) -> None:
    segs = run(offer([(None, 0, 1, 30.0), (m, 50.0, 1.0, 20.0), (None, 0, 1, 30.0)]), corpus)
    assert len(segs) == 1
    assert union_seconds([(s.query_start, s.query_end) for s in segs]) == pytest.approx(20.0, abs=1.0)


def test_unrelated_offer_gives_nothing(corpus: StreamFingerprints) -> None:
    other = master(60, 99)
    q = offer([(other, 0.0, 1.0, 50.0)])
    assert run(q, corpus, radius=256, keep=0.01) == []


def test_find_lines_rejects_noise_points() -> None:
    rng = np.random.default_rng(4)
    q1 = np.arange(0, 40, 1.0)
    q2 = np.arange(50, 80, 1.0)
    q = np.concatenate([q1, q2, rng.uniform(0, 80, 60)])
    c = np.concatenate([2.0 * q1 + 7.0, -1.0 * q2 + 200.0, rng.uniform(0, 300, 60)])
    c[:70] += rng.normal(0, 0.1, 70)
    lines = find_lines(q, c)
    slopes = sorted(round(s, 1) for s, _, _ in lines[:2])
    assert slopes == [-1.0, 2.0]
    for _slope, _offset, inl in lines[:2]:
        # Inliers are the line's points, not the noise.
        assert inl[70:].sum() <= 3
        assert inl[:70].sum() >= 28


def test_fit_line_is_exact_on_a_line() -> None:
    q = np.array([0.0, 1.0, 2.0, 5.0])
    assert fit_line(q, 0.5 * q + 3.0) == (pytest.approx(0.5), pytest.approx(3.0))


def test_verify_line_with_a_wrong_line_finds_nothing(m: np.ndarray, corpus: StreamFingerprints) -> None:
    q = offer([(m, 20.0, 1.0, 30.0)])
    assert verify_line(q, corpus, 1.0, 60.0, MatchParams()) == []
    assert len(verify_line(q, corpus, 1.0, 20.0, MatchParams())) == 1


# --------------------------------------------------------------------------- floor and accounting


def test_short_clip_lands_below_the_floor(m: np.ndarray, corpus: StreamFingerprints) -> None:
    segs = run(offer([(None, 0, 1, 15.0), (m, 60.0, 1.0, 6.0), (None, 0, 1, 15.0)]), corpus, keep=1.0)
    above, below = split_floor(segs, 10.0)
    assert above == []
    assert len(below) == 1
    assert below[0].query_duration == pytest.approx(6.0, abs=1.0)
    above, below = split_floor(segs, 5.0)
    assert len(above) == 1 and below == []


def test_union_and_real_footage_accounting() -> None:
    assert union_seconds([(0, 10), (5, 15), (20, 25)]) == pytest.approx(20)
    # 20 offered seconds at half speed hold 10 s of owned footage; an overlapping
    # stretch counts once.
    assert real_footage_seconds([(0, 20, 0.5)]) == pytest.approx(10)
    assert real_footage_seconds([(0, 10, 1.0), (5, 15, 1.0)]) == pytest.approx(15)
    assert real_footage_seconds([(0, 10, -2.0)]) == pytest.approx(20)


def test_indeterminate_time_inside_a_match_is_not_counted() -> None:
    from overlap_desktop.core.match.accounting import union_seconds_excluding

    assert union_seconds_excluding([(0, 50)], [(10, 40)]) == pytest.approx(20)
    assert union_seconds_excluding([(0, 10), (5, 20)], []) == pytest.approx(20)
    assert real_footage_seconds([(0, 50, 0.5)], [(10, 40)]) == pytest.approx(10)


def test_static_stretch_inside_a_copy_is_one_segment_not_counted(m: np.ndarray, corpus: StreamFingerprints) -> None:
    q = offer([(m, 20.0, 1.0, 60.0)])
    # 30 s the vendor-side fingerprinting marked indeterminate (robot idle).
    q.usable[15:45] = False
    segs = run(q, corpus)
    assert len(segs) == 1
    from overlap_desktop.core.match.accounting import union_seconds_excluding

    got = union_seconds_excluding([(s.query_start, s.query_end) for s in segs], [(14.5, 44.5)])
    assert got == pytest.approx(30, abs=1.5)
