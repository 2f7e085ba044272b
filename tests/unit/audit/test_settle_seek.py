"""frames_at starts a read inside a long stream (the reader seeks) and returns the frames a read from the start does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.core.audit import settle_frames
from overlap_desktop.core.audit.settle_frames import frames_at
from overlap_desktop.core.ingest.readers import reader_for
from tests.footage import make_clip


class _Counting:
    """A reader that counts the frames it hands out (and can say it cannot start inside a stream)."""

    def __init__(self, inner: Any, *, resumable: bool) -> None:
        self._inner, self.resumable, self.yielded = inner, resumable, 0

    def streams(self, path: Path) -> Any:
        return self._inner.streams(path)

    def frames(self, path: Path, info: Any, **kw: Any) -> Iterator[Any]:
        for fr in self._inner.frames(path, info, **kw):
            self.yielded += 1
            yield fr


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("seek") / "long.mp4", 7, duration=16.0, fps=12.0, size=(160, 120))


def _read(monkeypatch: pytest.MonkeyPatch, clip: Path, times: list[float], *, resumable: bool
          ) -> tuple[np.ndarray, np.ndarray, int]:
    reader = _Counting(reader_for(clip), resumable=resumable)
    monkeypatch.setattr(settle_frames, "reader_for", lambda _p: reader)
    imgs, found = frames_at(clip, "v:0", times)
    return imgs, found, reader.yielded


def test_frames_late_in_a_stream_are_those_of_a_read_from_the_start(monkeypatch: pytest.MonkeyPatch,
                                                                    clip: Path) -> None:
    times = [12.3, 9.05, 15.9, 9.1, 30.0]  # unsorted, a repeat-ish pair, one past the end
    whole, whole_found, whole_n = _read(monkeypatch, clip, times, resumable=False)
    sought, sought_found, sought_n = _read(monkeypatch, clip, times, resumable=True)
    assert whole_found.tolist() == [True, True, True, True, False]
    assert sought_found.tolist() == whole_found.tolist()
    assert np.array_equal(sought, whole)
    assert sought_n < whole_n - 12 * 5  # the first seconds were not handed out at all


def test_a_hold_longer_than_the_lead_falls_back_to_a_read_from_the_start(monkeypatch: pytest.MonkeyPatch,
                                                                         clip: Path) -> None:
    # With no lead, the first frame read after the seek is the one after the wanted time: the
    # frame on screen at it was before, so the read starts again from the first frame.
    times = [10.04, 11.0]
    whole, _, _ = _read(monkeypatch, clip, times, resumable=False)
    monkeypatch.setattr(settle_frames, "SEEK_LEAD_S", -0.03)
    sought, found, _ = _read(monkeypatch, clip, times, resumable=True)
    assert found.all()
    assert np.array_equal(sought, whole)
