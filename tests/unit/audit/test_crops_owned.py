"""The crop search leaves out the samples the whole frames' screen already counts owned."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from overlap_desktop.core.audit.crops import CropTap, crop_queries
from overlap_desktop.core.audit.crops_windows import crop_windows
from overlap_desktop.core.ingest.fingerprint import variants_for
from overlap_desktop.core.types import Segment, StreamInfo, Variant
from tests.manipulations import resize


class _Frame:
    def __init__(self, t_ns: int, img: np.ndarray) -> None:
        self.t_ns, self._img = t_ns, img

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        return resize(self._img, width, height)


def _tap() -> CropTap:
    rng = np.random.default_rng(5)
    tap = CropTap(crop_windows(variants_for(preset="fast")), 2.0)
    for name, key in (("a.mp4", "v:0"), ("a.mp4", "v:1"), ("b.mp4", "v:0")):
        tap.begin(name, Path(name), StreamInfo(key, duration_s=6.0))
        for k in range(60):
            img = np.kron(rng.uniform(0, 255, (9, 16, 3)), np.ones((24, 24, 1))).astype(np.uint8)
            tap.frame(_Frame(k * 100_000_000, img))
        tap.end()
    return tap


def _seg(stream: str, start: float, end: float) -> Segment:
    return Segment("a.mp4", stream, start, end, "lib/x.mp4", "v:0", start, end, 1.0, Variant(), 10, 2.0, 1.0)


def test_samples_counted_owned_are_not_searched_and_the_rest_are() -> None:
    tap = _tap()
    every = crop_queries(tap, 0)
    some = crop_queries(tap, 0, {"a.mp4": [_seg("v:0", 1.0, 3.0)]})
    assert len(some) == len(every)
    for q_all, q in zip(every, some, strict=True):
        assert q.key == q_all.key
        t = q.fp.times_ns / 1e9
        owned_here = (q.file, q.key.split("#")[0]) == ("a.mp4", "v:0")
        inside = (t >= 1.0) & (t <= 3.0) if owned_here else np.zeros(len(t), bool)
        assert not q.fp.usable[inside].any()
        assert np.array_equal(q.fp.usable[~inside], q_all.fp.usable[~inside])
        assert q_all.fp.usable[inside].all()  # they were searched before


def test_a_stream_counted_owned_throughout_gives_no_queries() -> None:
    tap = _tap()
    per_stream = len(crop_queries(tap, 0)) // 3
    some = crop_queries(tap, 0, {"a.mp4": [_seg("v:1", 0.0, 10.0)], "b.mp4": [_seg("v:1", 0.0, 10.0)]})
    assert len(some) == 2 * per_stream
    assert {(q.file, q.key.split("#")[0]) for q in some} == {("a.mp4", "v:0"), ("b.mp4", "v:0")}
