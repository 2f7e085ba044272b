"""LeRobotReader: v3-style dataset folders, one stream per camera file, episode spans."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.ingest.readers.lerobot import LeRobotReader, episode_spans_for, read_episode_table
from overlap_desktop.core.types import StreamInfo
from overlap_desktop.errors import MediaError
from tests.fixtures_recordings import FOOTAGE_FPS, write_lerobot
from tests.footage import Scene

CAMS = ["observation.images.top", "observation.images.wrist"]


def test_dataset_is_one_item_with_a_stream_per_camera_file(lerobot_dataset: Path) -> None:
    reader = reader_for(lerobot_dataset)
    assert reader.name == "lerobot"
    streams = reader.streams(lerobot_dataset)
    assert [s.key for s in streams] == [f"videos/{c}/chunk-000/file-000.mp4" for c in CAMS]
    top = streams[0]
    assert top.extra["camera"] == CAMS[0]
    assert top.extra["episodes"] == [(0, 0.0, 3.0), (1, 3.0, 5.0), (2, 5.0, 8.0)]
    assert top.duration_s == pytest.approx(8.0, abs=0.15)


def test_frames_come_from_the_camera_video(lerobot_dataset: Path) -> None:
    reader = LeRobotReader()
    wrist = reader.streams(lerobot_dataset)[1]
    frames = list(reader.frames(lerobot_dataset, wrist))
    assert len(frames) == int(8 * FOOTAGE_FPS)
    # Frame 35 = episode 1 (starts at file 3 s) at 0.5 s; episode 1 starts at scene time 10.
    expect = Scene(21).frame(10.0 + 0.5, (160, 120))
    got = frames[35].to_rgb(160, 120)
    assert np.abs(got.astype(int) - expect).mean() < 8
    assert frames[35].t_ns == pytest.approx(3.5e9, abs=1e6)


def test_an_indexing_configuration_reaches_the_camera_videos(lerobot_dataset: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # `overlap index` configures every reader with its sampling rate and decoder threads; the camera
    # videos must get them too, or every frame of every episode is decoded for 4 samples a second.
    # (The fixture's x264 "ultrafast" files have no B-frames, so nothing could be skipped in them:
    # the test looks at the settings the video reader decodes with.)
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.readers.video import VideoReader

    seen: list[tuple[float | None, int]] = []
    original = VideoReader.frames

    def spy(self: VideoReader, *args: object, **kwargs: object) -> object:
        seen.append((self.sample_fps, self.threads))
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(VideoReader, "frames", spy)
    plain = LeRobotReader()
    wrist = plain.streams(lerobot_dataset)[1]
    every = list(plain.frames(lerobot_dataset, wrist))
    sampled = LeRobotReader()
    sampled.configure(load_config({"index.fps": 4.0, "index.threads": 1}, environ={}))
    used = list(sampled.frames(lerobot_dataset, wrist))
    assert seen == [(None, 0), (4.0, 1)]
    assert [f.t_ns for f in used] == [f.t_ns for f in every]  # nothing to skip in these files


def test_episode_spans_for() -> None:
    info = StreamInfo(key="v", extra={"episodes": [(40, 0.0, 10.0), (41, 10.0, 45.0), (42, 45.0, 60.0)]})
    spans = episode_spans_for(info, 22.0, 41.0)
    assert len(spans) == 1
    assert spans[0]["episode"] == 41 and spans[0]["label"] == "episode 41, 00:12\u201300:31"
    assert spans[0]["file_start_s"] == 22.0 and spans[0]["end_s"] == pytest.approx(31.0)
    both = episode_spans_for(info, 8.0, 12.0)
    assert [s["episode"] for s in both] == [40, 41]
    assert both[0]["start_s"] == 8.0 and both[1]["end_s"] == 2.0
    assert episode_spans_for(info, 41.0, 22.0)[0]["episode"] == 41  # reversed span
    assert episode_spans_for(StreamInfo(key="x"), 0, 5) == []
    assert episode_spans_for({"episodes": [(3, 0.0, 5.0)]}, 1.0, 2.0)[0]["episode"] == 3


def test_parquet_episode_table(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    root = write_lerobot(tmp_path / "pq", episodes=((5, 2.0), (6, 2.0)), cameras=CAMS[:1],
                         episodes_format="parquet")
    rows, note = read_episode_table(root)
    assert note is None and [r["episode_index"] for r in rows] == [5, 6]
    (s,) = LeRobotReader().streams(root)
    assert s.extra["episodes"] == [(5, 0.0, 2.0), (6, 2.0, 4.0)]


def test_parquet_without_pyarrow_still_indexes_videos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow")
    root = write_lerobot(tmp_path / "nopa", episodes=((0, 2.0),), cameras=CAMS[:1], episodes_format="parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    (s,) = LeRobotReader().streams(root)
    assert s.extra["episodes"] == []
    assert "overlap-desktop[lerobot]" in s.extra["episodes_note"]


def test_v2_one_episode_per_file(tmp_path: Path, lerobot_dataset: Path) -> None:
    root = tmp_path / "v2"
    (root / "meta").mkdir(parents=True)
    info = json.loads((lerobot_dataset / "meta" / "info.json").read_text())
    info["codebase_version"] = "v2.1"
    (root / "meta" / "info.json").write_text(json.dumps(info))
    src = lerobot_dataset / "videos" / CAMS[0] / "chunk-000" / "file-000.mp4"
    dst = root / "videos" / "chunk-000" / CAMS[0] / "episode_000007.mp4"
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    (s,) = LeRobotReader().streams(root)
    assert s.extra["episodes"][0][0] == 7 and s.extra["episodes"][0][1] == 0.0


def test_bad_datasets(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    (root / "meta").mkdir(parents=True)
    (root / "videos").mkdir()
    (root / "meta" / "info.json").write_text("{not json")
    reader = LeRobotReader()
    assert reader.can_open(root)
    with pytest.raises(MediaError, match="info.json is not valid JSON"):
        reader.streams(root)
    (root / "meta" / "info.json").write_text(json.dumps({"features": {CAMS[0]: {"dtype": "video"}}}))
    with pytest.raises(MediaError, match="no camera video files"):
        reader.streams(root)
    with pytest.raises(MediaError, match="outside the dataset"):
        list(reader.frames(root, StreamInfo(key="../../etc/passwd")))


def test_labels_name_the_camera_of_episode_streams() -> None:
    from overlap_desktop.core.ingest.readers.lerobot import camera_of_key

    info = StreamInfo(key="observations/images/cam_high", extra={"camera": "cam_high", "episodes": [(41, 0.0, 60.0)]})
    assert episode_spans_for(info, 12.0, 31.0)[0]["label"] == "episode 41, cam_high, 00:12\u201300:31"
    assert camera_of_key("observations/images/cam_high") == "cam_high"
    assert camera_of_key("data/demo_4/obs/agentview_image") == "agentview_image"
    assert camera_of_key("train/episode_3/steps/observation/image") == "image"
    assert camera_of_key("episode_0/camera0_rgb") == "camera0_rgb"
    assert camera_of_key("videos/observation.images.top/chunk-000/file-000.mp4") == "observation.images.top"
    assert camera_of_key("videos/chunk-000/observation.images.top/episode_000001.mp4") == "observation.images.top"
    assert camera_of_key("v:0") is None and camera_of_key("videos/front.mp4") is None
