"""Cross-format laundering, end to end through ``overlap_desktop.api``: owned footage re-wrapped
as an MCAP camera topic (raw and JPEG), or extracted from a recording to mp4, is still
found, with the right segment (index -> export -> compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop import api
from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.readers.mcap import McapReader
from overlap_desktop.core.report.model import FileResult, Report
from tests.fixtures_recordings import write_mcap_images
from tests.footage import Scene, render_frames, write_video

FPS = 10.0
SIZE = (192, 144)
OWNED = Scene(31)
RECORDED = Scene(32)  # the lab's own robot recording, kept as MCAP
UNRELATED = Scene(39)


def _frames(scene: Scene, seconds: float, t0: float = 0.0) -> list[np.ndarray]:
    return list(render_frames(scene, duration=seconds, fps=FPS, size=SIZE, t0=t0))


def _extract_to_mp4(recording: Path, out: Path) -> Path:
    """What a vendor would do: decode the camera topic and encode it as an mp4."""
    reader = McapReader()
    stream = reader.streams(recording)[0]
    frames = [f.to_rgb(SIZE[0], SIZE[1]) for f in reader.frames(recording, stream)]
    return write_video(out, frames, fps=FPS)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("launder")
    own, offer = root / "own", root / "offer"
    own.mkdir()
    offer.mkdir()
    write_video(own / "master.mp4", _frames(OWNED, 35.0), fps=FPS)
    write_mcap_images(own / "robot_run.mcap", _frames(RECORDED, 30.0), fps=FPS, encoding="rgb8")
    piece = _frames(OWNED, 20.0, t0=6.0)  # owned 6..26 s
    write_mcap_images(offer / "raw_topic.mcap", piece, fps=FPS, encoding="rgb8")
    jpeg = write_mcap_images(offer / "jpeg_topic.mcap", piece, fps=FPS, encoding="jpeg")
    _extract_to_mp4(jpeg, offer / "extracted_from_jpeg.mp4")
    # The reverse direction: the lab owns the recording; the offer is an mp4 cut out of it (4..22 s).
    cut = root / "cut.mcap"
    write_mcap_images(cut, _frames(RECORDED, 18.0, t0=4.0), fps=FPS, encoding="jpeg")
    _extract_to_mp4(cut, offer / "extracted_from_recording.mp4")
    write_mcap_images(offer / "unrelated.mcap", _frames(UNRELATED, 20.0), fps=FPS, encoding="jpeg")
    config = load_config()
    summary = api.index_paths([own], index=root / "idx_own", config=config)
    assert not summary.failed, summary.failed
    summary = api.index_paths([offer], index=root / "idx_offer", config=config)
    assert not summary.failed, summary.failed
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    report = api.compare(root / "offer.ovlm", root / "idx_own", config=config)
    return {"report": report}


def _file(report: Report, name: str) -> FileResult:
    for f in report.files:
        if Path(f.query_file).name == name:
            return f
    raise AssertionError(f"{name} not in report: {[f.query_file for f in report.files]}")


@pytest.mark.parametrize("name", ["raw_topic.mcap", "jpeg_topic.mcap", "extracted_from_jpeg.mp4"])
def test_rewrapped_owned_footage_matches_with_the_right_segment(world: dict[str, Any], name: str) -> None:
    f = _file(world["report"], name)
    assert len(f.segments) == 1, f.segments
    s = f.segments[0]
    assert Path(s.corpus_file).name == "master.mp4"
    assert s.query_start == pytest.approx(0.0, abs=1.0) and s.query_end == pytest.approx(20.0, abs=1.0)
    assert s.corpus_start == pytest.approx(6.0, abs=1.0) and s.corpus_end == pytest.approx(26.0, abs=1.0)
    assert s.speed == pytest.approx(1.0, abs=0.03)
    assert s.variant.is_identity
    assert f.matched_percent > 90
    if name.endswith(".mcap"):
        assert s.query_stream.startswith("/camera/")


def test_mp4_extracted_from_an_owned_recording_matches_the_topic(world: dict[str, Any]) -> None:
    f = _file(world["report"], "extracted_from_recording.mp4")
    assert len(f.segments) == 1, f.segments
    s = f.segments[0]
    assert Path(s.corpus_file).name == "robot_run.mcap"
    assert s.corpus_stream == "/camera/image_raw"
    assert s.corpus_start == pytest.approx(4.0, abs=1.0) and s.corpus_end == pytest.approx(22.0, abs=1.0)


def test_unrelated_recording_does_not_match(world: dict[str, Any]) -> None:
    f = _file(world["report"], "unrelated.mcap")
    assert f.segments == []
