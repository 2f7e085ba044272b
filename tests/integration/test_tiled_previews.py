"""Tiled previews (act-plus-plus's compress_data.py writes ``episode_0_video.mp4``: an episode's cameras
concatenated along the width) are found as owned footage when their tiles are owned, the camera the
lab does not own stands out, and a tiled preview of episodes nobody owns stays new.

Footage: generated same-rig episodes (tests/rig.py), four rigs standing for four cameras.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop import api
from overlap_desktop.core.ingest.readers.tiles import tile_counts
from overlap_desktop.core.report.model import new_camera_views
from tests.footage import write_video
from tests.rig import RigEpisode

FPS = 25.0
SECONDS = 14.0
SIZE = (128, 96)
CAMS = {"cam_high": 71, "cam_low": 72, "cam_left_wrist": 73, "cam_right_wrist": 74}


def _frames(rig: int, episode: int) -> np.ndarray:
    ep = RigEpisode(rig, episode)
    return np.stack([ep.frame(i / FPS, SIZE) for i in range(int(SECONDS * FPS))])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tiles")
    owned = {cam: _frames(rig, 1) for cam, rig in CAMS.items()}
    for cam in ("cam_high", "cam_low", "cam_left_wrist"):  # the lab does not own cam_right_wrist
        write_video(root / "own" / f"{cam}.mp4", list(owned[cam]), fps=FPS)
    # compress_data.py: np.concatenate(all_cam_images, axis=1) per frame, cameras in order.
    preview = np.concatenate([owned[c] for c in CAMS], axis=2)
    write_video(root / "offer" / "episode_1_video.mp4", list(preview), fps=FPS)
    other = np.concatenate([_frames(rig, 2) for rig in CAMS.values()], axis=2)
    write_video(root / "offer" / "episode_2_video.mp4", list(other), fps=FPS)
    config = api.load_config({})
    assert not api.index_paths([root / "own"], index=root / "idx_own", config=config).failed
    summary = api.index_paths([root / "offer"], index=root / "idx_offer", config=config)
    assert not summary.failed, summary.failed
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    report = api.compare(root / "offer.ovlm", root / "idx_own", config=config)
    return {"files": {Path(f.query_file).name: f for f in report.files}, "report": report, "own": root / "idx_own"}


def test_a_tiled_preview_of_owned_cameras_is_owned(world: dict[str, Any]) -> None:
    f = world["files"]["episode_1_video.mp4"]
    # One episode's time, counted once (was 14 s of new footage, the headline halved).
    assert f.duration_s == pytest.approx(SECONDS, abs=0.3)
    assert f.matched_seconds >= 0.85 * SECONDS
    tiles = {s.stream: s for s in f.streams if "/tile-" in s.stream}
    for i, cam in ((1, "cam_high"), (2, "cam_low"), (3, "cam_left_wrist")):
        assert tiles[f"v:0/tile-{i}-of-4"].owned_seconds >= 0.85 * SECONDS
        segs = [s for s in f.segments if s.query_stream == f"v:0/tile-{i}-of-4"]
        assert {Path(s.corpus_file).stem for s in segs} == {cam}
        assert all(s.speed == pytest.approx(1.0, abs=0.03) for s in segs)
    assert tiles["v:0/tile-4-of-4"].owned_seconds == 0
    # The camera the lab does not own stands out; the other tiling and the whole picture do not.
    assert [v.stream for v in new_camera_views(f)] == ["v:0/tile-4-of-4"]


def test_a_tiled_preview_of_episodes_nobody_owns_stays_new(world: dict[str, Any]) -> None:
    f = world["files"]["episode_2_video.mp4"]
    assert f.matched_seconds == 0 and not f.segments
    assert f.new_seconds >= 0.85 * SECONDS
    assert new_camera_views(f) == []


@pytest.mark.parametrize(("size", "counts"), [
    ((2560, 480), [3, 4]),  # four 640x480 cameras, or three 16:9 ones
    ((1920, 480), [3, 4]),  # three 4:3 cameras, or four square ones
    ((1280, 480), [2]),     # two 4:3 cameras
    ((2560, 720), [2]),     # two 16:9 cameras
    ((1920, 1080), []),     # 16:9 footage is never split
    ((640, 480), []),
    ((2560, 1080), []),     # 21:9 cinema
    ((1280, 544), []),      # 2.35:1 cinema
])
def test_only_pictures_several_cameras_wide_are_split(size: tuple[int, int], counts: list[int]) -> None:
    assert tile_counts(*size) == counts


def test_a_2x2_grid_preview_is_found_by_its_seams(world: dict[str, Any], tmp_path: Path) -> None:
    owned = {cam: _frames(rig, 1) for cam, rig in CAMS.items()}
    top = np.concatenate([owned["cam_high"], owned["cam_low"]], axis=2)
    bottom = np.concatenate([owned["cam_left_wrist"], owned["cam_right_wrist"]], axis=2)
    write_video(tmp_path / "offer" / "grid.mp4", list(np.concatenate([top, bottom], axis=1)), fps=FPS)
    config = api.load_config({})
    assert not api.index_paths([tmp_path / "offer"], index=tmp_path / "ix", config=config).failed
    api.export_manifest(tmp_path / "ix", tmp_path / "grid.ovlm", config=config)
    (f,) = api.compare(tmp_path / "grid.ovlm", world["own"], config=config).files
    assert f.duration_s == pytest.approx(SECONDS, abs=0.3) and f.matched_seconds >= 0.85 * SECONDS
    tiles = {s.stream: s for s in f.streams}
    for i in (1, 2, 3):
        assert tiles[f"v:0/tile-{i}-of-2x2"].owned_seconds >= 0.85 * SECONDS
    assert [v.stream for v in new_camera_views(f)] == ["v:0/tile-4-of-2x2"]


def test_ordinary_footage_has_no_seams() -> None:
    from overlap_desktop.core.ingest.readers.tiles import grid_seams

    # One camera's picture (a rig frame at 4:3) is not a grid; four of them in a grid are.
    one = _frames(71, 1)[0].mean(axis=2)
    assert not grid_seams(np.kron(one, np.ones((2, 2))))
    # One bright quarter on a flat picture has seams along half of each middle only: not a grid.
    flat = np.full((192, 256), 40.0)
    flat[:96, :128] = 215
    assert not grid_seams(flat)
    quads = [_frames(rig, 1)[0].mean(axis=2) for rig in CAMS.values()]
    assert grid_seams(np.block([[quads[0], quads[1]], [quads[2], quads[3]]]))
