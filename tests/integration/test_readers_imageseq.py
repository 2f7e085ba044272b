"""ImageSequenceReader: numbered stills in a folder, natural order, stated or default rate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.ingest.readers.imageseq import ImageSequenceReader, natural_key
from overlap_desktop.errors import MediaError
from tests.fixtures_recordings import FOOTAGE_FPS, write_image_sequence


def test_sequence_is_claimed_and_read_in_natural_order(image_sequence: Path,
                                                       footage_frames: list[np.ndarray]) -> None:
    reader = reader_for(image_sequence)
    assert reader.name == "imageseq"
    (s,) = reader.streams(image_sequence)
    assert (s.width, s.height, s.codec, s.rate_hint) == (160, 120, "png", FOOTAGE_FPS)
    assert s.extra["fps_source"] == "fps.txt" and s.extra["images"] == len(footage_frames)
    assert s.duration_s == pytest.approx(len(footage_frames) / FOOTAGE_FPS)
    frames = list(reader.frames(image_sequence, s))
    assert [f.t_ns for f in frames[:3]] == [0, 100_000_000, 200_000_000]
    # frame_10.png must come after frame_9.png: pixels identical to the source in order.
    for k in (8, 9, 10, 11):
        assert np.array_equal(frames[k].to_rgb(160, 120), footage_frames[k])


def test_natural_key() -> None:
    names = ["f10.png", "f2.png", "f1.png", "F3.png"]
    assert sorted(names, key=natural_key) == ["f1.png", "f2.png", "F3.png", "f10.png"]


def test_default_and_toml_rates(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    seq = write_image_sequence(tmp_path / "s", footage_frames[:3], fmt="jpeg", fps=None, digits=5)
    reader = ImageSequenceReader(config=load_config({"readers.image_fps": 5}))
    (s,) = reader.streams(seq)
    assert s.rate_hint == 5 and s.codec == "jpeg"
    assert [f.t_ns for f in reader.frames(seq, s)] == [0, 200_000_000, 400_000_000]
    (seq / "overlap.toml").write_text("[readers]\nimage_fps = 2\n")
    assert ImageSequenceReader().streams(seq)[0].rate_hint == 2


def test_numbering_gaps_keep_real_time(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    seq = write_image_sequence(tmp_path / "g", footage_frames[:4], fps=10)
    (seq / "frame_3.png").rename(seq / "frame_7.png")  # order 1,2,4,7
    reader = ImageSequenceReader()
    times = [f.t_ns for f in reader.frames(seq, reader.streams(seq)[0])]
    assert times == [0, 100_000_000, 300_000_000, 600_000_000]


def test_folders_that_are_not_sequences(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    reader = ImageSequenceReader()
    mixed = write_image_sequence(tmp_path / "mixed", footage_frames[:3])
    (mixed / "clip.mp4").write_bytes(b"\0")  # other media: leave the folder to the walker
    assert not reader.can_open(mixed)
    nested = write_image_sequence(tmp_path / "nested", footage_frames[:3])
    (nested / "sub").mkdir()
    assert not reader.can_open(nested)
    single = write_image_sequence(tmp_path / "single", footage_frames[:1])
    assert not reader.can_open(single)
    with pytest.raises(MediaError, match="not an image sequence"):
        reader.streams(single)


def test_bad_rate_and_corrupt_image(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    seq = write_image_sequence(tmp_path / "bad", footage_frames[:3])
    (seq / "fps.txt").write_text("fast")
    with pytest.raises(MediaError, match="fps.txt"):
        ImageSequenceReader().streams(seq)
    (seq / "fps.txt").write_text("10")
    (seq / "frame_2.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(30))
    reader = ImageSequenceReader()
    frames = list(reader.frames(seq, reader.streams(seq)[0]))
    with pytest.raises(MediaError, match="frame_2.png") as info:
        frames[1].to_rgb(16, 16)
    assert str(seq) in str(info.value)
