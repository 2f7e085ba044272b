"""Query-side crop windows: which windows, their codes, and the tap's sampling (no library)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.audit.crops import WHOLE_EVERY, CropTap, crop_queries, window_codes
from overlap_desktop.core.audit.crops_windows import CropWindow, crop_windows
from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.fingerprint import prep_and_hash_image, variants_for
from overlap_desktop.core.types import StreamInfo, Variant
from tests.manipulations import crop_window, resize

FAST = variants_for(preset="fast")
BALANCED = variants_for(preset="balanced")


def _image(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(0, 255, (9, 16, 3))
    return resize(np.kron(coarse, np.ones((24, 24, 1))).astype(np.uint8), 384, 216)


def _bits(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.unpackbits(a ^ b).sum())


def _window(windows: list[CropWindow], words: str) -> CropWindow:
    return next(w for w in windows if w.words == words)


def test_windows_follow_the_library_ladder() -> None:
    fast = crop_windows(FAST)
    words = {w.words for w in fast}
    # The fast ladder's deepest rung (89%) fits in a 95% corner window, not in an 85% one or a 4:3 cut.
    assert "cropped to 95%, towards the top left" in words
    assert "cropped to 85%, towards the top left" not in words
    assert not any(w.startswith("16:9 cut") for w in words)
    corner = _window(fast, "cropped to 95%, towards the top left")
    assert corner.stored == Variant(crop=0.89)
    assert corner.x == pytest.approx(0.055 / 0.95, abs=0.003) and corner.w == pytest.approx(0.89 / 0.95, abs=0.003)
    balanced = {w.words for w in crop_windows(BALANCED)}
    assert "16:9 cut to 4:3" in balanced and "cropped to 85%, towards the top left" in balanced
    # No window is the whole offered frame (the quote searched that already).
    assert all(w.w < 0.995 or w.h < 0.995 for w in fast)


def test_window_code_equals_the_stored_rung_of_the_owned_frame() -> None:
    owned = _image(1)
    offered = crop_window(0.95, (0.0, 0.0))(owned)
    corner = _window(crop_windows(FAST), "cropped to 95%, towards the top left")
    y = prep.luma(prep.to_work_image(offered))
    codes, quality, _whole = window_codes(y, [corner])
    stored, _ = prep_and_hash_image(owned, (Variant(), corner.stored))
    assert quality[0] >= 50
    assert _bits(codes[0], stored[1]) <= 24
    # The offered frame whole, as the quote hashes it, is far from every stored code of the owned frame.
    whole, _ = prep_and_hash_image(offered)
    assert min(_bits(whole[0], stored[0]), _bits(whole[0], stored[1])) > 40
    # ... and the same window of another picture is far from the owned rung (a look-alike stays apart).
    other, _, _ = window_codes(prep.luma(prep.to_work_image(crop_window(0.95, (0.0, 0.0))(_image(2)))), [corner])
    assert _bits(other[0], stored[1]) > 80


@dataclass
class _Frame:
    t_ns: int
    img: np.ndarray

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        return resize(self.img, width, height)


def test_tap_samples_on_its_grid_and_keeps_a_bounded_budget() -> None:
    windows = crop_windows(FAST)[:3]
    tap = CropTap(windows, 2.0)
    img = _image(3)
    tap.begin("a.mp4", Path("a.mp4"), StreamInfo("v:0", duration_s=5.0))
    for k in range(50):  # 10 fps for 5 s
        tap.frame(_Frame(k * 100_000_000, img))
    tap.end()
    (s,) = tap.streams
    assert [t / 1e9 for t in s.times] == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5])
    assert s.codes[0].shape == (3, 32)
    small = CropTap(windows, 2.0, max_codes=12)
    small.begin("a.mp4", Path("a.mp4"), StreamInfo("v:0"))
    for k in range(50):
        small.frame(_Frame(k * 100_000_000, img))
    small.end()
    assert len(small.streams[0].times) == 4 and small.skipped_s == pytest.approx(3.0)
    with pytest.raises(ValueError, match="positive sample rate"):
        CropTap(windows, 0.0)


def test_whole_frame_windows_are_taken_every_other_sample() -> None:
    windows = crop_windows(FAST)
    whole = [i for i, w in enumerate(windows) if w.whole]
    crop = [i for i, w in enumerate(windows) if not w.whole]
    assert whole and crop
    tap = CropTap(windows, 2.0)
    tap.begin("a.mp4", Path("a.mp4"), StreamInfo("v:0", duration_s=3.0))
    for k in range(30):
        tap.frame(_Frame(k * 100_000_000, _image(4)))
    tap.end()
    (s,) = tap.streams
    assert s.full == [k % WHOLE_EVERY == 0 for k in range(6)]
    assert all(s.quality[1][i] == 0 for i in whole) and all(s.quality[1][i] > 0 for i in crop)
    queries = crop_queries(tap, 50)
    assert [len(q.fp) for q in queries] == [3 if w.whole else 6 for w in windows]
    assert all(q.fp.usable.all() for q in queries)
