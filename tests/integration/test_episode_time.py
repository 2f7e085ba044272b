"""Episode time: robot datasets are counted the way labs buy them (sum over episodes, each camera
judged on its own, a moment owned when any camera's footage there is owned).

A lab owns one camera's footage of one rig episode as mp4. It is offered
- a robomimic file of 2 demos (the owned episode, and another episode of the same rig): 2 x 15 s
  offered, 15 s owned, 15 s new, never one merged 15 s timeline;
- an ALOHA episode whose cam_high is the owned footage, cam_low a still camera and
  cam_right_wrist a camera the lab does not own: the still camera's static time is its own (the
  episode stays owned), and the unowned camera stands out as a new view of an owned episode.

Footage: generated same-rig episodes (tests/rig.py) written as the ALOHA recorder and robomimic's
dataset_states_to_obs write them (tests/robotdata.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("zarr")

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.match.verdicts import verdict_problems
from overlap_desktop.core.report.model import new_camera_views
from overlap_desktop.core.report.stream_words import stream_lines
from tests.footage import write_video
from tests.rig import RigEpisode
from tests.robotdata import write_aloha, write_robomimic, write_zarr

FPS = 25.0
SECONDS = 15.0
SIZE = (128, 96)


def _frames(rig: int, episode: int) -> np.ndarray:
    ep = RigEpisode(rig, episode)
    return np.stack([ep.frame(i / FPS, SIZE) for i in range(int(SECONDS * FPS))])


def _still() -> np.ndarray:
    """A still camera: one textured picture for the whole episode."""
    rng = np.random.default_rng(5)
    pic = np.kron(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
    return np.repeat(pic[None], int(SECONDS * FPS), axis=0)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("episodetime")
    own, offer = root / "own", root / "offer"
    owned = _frames(71, 1)
    write_video(own / "cam_high.mp4", list(owned), fps=FPS)
    write_robomimic(offer / "robomimic.hdf5", [{"agentview_image": owned}, {"agentview_image": _frames(71, 2)}],
                    control_freq=FPS)
    write_aloha(offer / "aloha" / "episode_1.hdf5",
                {"cam_high": owned, "cam_low": _still(), "cam_right_wrist": _frames(72, 1)})
    # A ReplayBuffer of 2 episodes x 2 cameras, of which the lab owns one camera-episode.
    # (Its other footage appears nowhere else in the offer, so none of it is a repeat inside the offer.)
    write_zarr(offer / "buffer.zarr", [{"cam_high": owned, "cam_wrist": _frames(75, 1)},
                                      {"cam_high": _frames(71, 3), "cam_wrist": _frames(75, 3)}])
    config = load_config(overrides={"index.frame_rate": FPS})
    assert not api.index_paths([own], index=root / "idx_own", config=config).failed
    summary = api.index_paths([offer], index=root / "idx_offer", config=config)
    assert not summary.failed, summary.failed
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    report = api.compare(root / "offer.ovlm", root / "idx_own", config=config)
    return {"root": root, "report": report, "indexed_s": summary.hours_indexed * 3600,
            "files": {Path(f.query_file).name: f for f in report.files}}


def test_two_demos_are_two_episodes_of_offered_time(world: dict[str, Any]) -> None:
    f = world["files"]["robomimic.hdf5"]
    # Offered time is the sum over episodes (was 15 s: both demos merged into one timeline).
    assert f.duration_s == pytest.approx(2 * SECONDS, abs=0.2)
    assert SECONDS * 0.85 <= f.matched_seconds <= SECONDS + 0.2
    assert f.new_seconds >= SECONDS * 0.85
    by_key = {s.stream: s for s in f.streams}
    assert set(by_key) == {"data/demo_0/obs/agentview_image", "data/demo_1/obs/agentview_image"}
    demo0, demo1 = by_key["data/demo_0/obs/agentview_image"], by_key["data/demo_1/obs/agentview_image"]
    assert (demo0.episode, demo1.episode) == (0, 1)
    assert demo0.owned_seconds >= SECONDS * 0.85 and demo1.owned_seconds == 0
    assert demo1.new_seconds >= SECONDS * 0.85
    assert demo1.offset_s == pytest.approx(demo0.duration_s, abs=0.01)
    # Indexing counts it so too (robomimic 2 x 15 s, the ALOHA episode 15 s, the zarr buffer 2 x 15 s).
    assert world["indexed_s"] == pytest.approx(5 * SECONDS, abs=0.5)
    # The vendor's manifest quotes the same episode time (its hours are what a lab pays by).
    quoted = {Path(x.name).name: x.duration_s for x in api.read_manifest(world["root"] / "offer.ovlm").files}
    assert quoted["robomimic.hdf5"] == pytest.approx(2 * SECONDS, abs=0.2)
    assert quoted["episode_1.hdf5"] == pytest.approx(SECONDS, abs=0.2)
    # The report's total counts both episodes, and says what the rest is.
    assert world["report"].offered_seconds >= 5 * SECONDS - 0.5
    assert verdict_problems(world["report"]) == []


def test_a_still_camera_keeps_its_static_time_to_itself(world: dict[str, Any]) -> None:
    f = world["files"]["episode_1.hdf5"]
    assert f.duration_s == pytest.approx(SECONDS, abs=0.2)
    # cam_high's match counts for the episode (was ~0: cam_low's static time was cut out of it).
    assert f.matched_seconds >= SECONDS * 0.85
    by_cam = {s.camera: s for s in f.streams}
    assert by_cam["cam_low"].indeterminate_seconds >= SECONDS * 0.8
    assert by_cam["cam_low"].new_seconds <= 1.0 and by_cam["cam_low"].owned_seconds == 0
    assert by_cam["cam_high"].owned_seconds >= SECONDS * 0.85


def test_an_unowned_camera_of_an_owned_episode_stands_out(world: dict[str, Any]) -> None:
    f = world["files"]["episode_1.hdf5"]
    views = new_camera_views(f)
    assert [v.camera for v in views] == ["cam_right_wrist"]
    assert views[0].new_seconds >= SECONDS * 0.85
    lines = stream_lines(f)
    assert any(line.startswith("new camera view of owned episodes: cam_right_wrist, 1") for line in lines), lines
    # The look-alike: the other demo of the robomimic file is a new episode, not a new camera view.
    assert new_camera_views(world["files"]["robomimic.hdf5"]) == []


def test_reports_carry_the_per_stream_breakdown(world: dict[str, Any], tmp_path: Path) -> None:
    root = world["root"]
    rep = tmp_path / "r.json"
    code = main(["compare", str(root / "offer.ovlm"), "--index", str(root / "idx_own"), "-o", str(rep),
                 "--html", str(tmp_path / "r.html"), "--csv", str(tmp_path / "r.csv"), "-q"])
    assert code in (0, 3), code
    data = json.loads(rep.read_text(encoding="utf-8"))
    assert data["schema"] == "overlap.report/5"
    aloha = next(f for f in data["files"] if f["query_file"].endswith("episode_1.hdf5"))
    streams = {s["camera"]: s for s in aloha["streams"]}
    assert set(streams) == {"cam_high", "cam_low", "cam_right_wrist"}
    for s in streams.values():
        assert {"stream", "duration_s", "owned_seconds", "new_seconds", "cant_tell_seconds"} <= set(s)
    assert streams["cam_right_wrist"]["new_seconds"] >= SECONDS * 0.85
    back = api.load_report_json(rep)
    f = next(x for x in back.files if x.query_file.endswith("episode_1.hdf5"))
    assert [v.camera for v in new_camera_views(f)] == ["cam_right_wrist"]
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "new camera view of owned episodes: cam_right_wrist" in html
    csv_text = (tmp_path / "r.csv").read_text(encoding="utf-8-sig")
    assert "stream" in csv_text and "data/demo_1/obs/agentview_image" in csv_text


def test_the_cli_names_the_unowned_camera(world: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    root = world["root"]
    code = main(["compare", str(root / "offer.ovlm"), "--index", str(root / "idx_own")])
    assert code in (0, 3), code
    out = capsys.readouterr().out
    assert "new camera view of owned episodes: cam_right_wrist, 1" in out
    assert "cam_low" not in out  # the still camera is no news without -v


def test_a_zarr_buffer_counts_its_episodes_not_its_camera_streams(world: dict[str, Any]) -> None:
    f = world["files"]["buffer.zarr"]
    # 2 episodes of 15 s (was one 15 s timeline holding all four camera-episodes).
    assert f.duration_s == pytest.approx(2 * SECONDS, abs=0.2)
    # Episode 0 is owned through cam_high; episode 1 is new: half the buffer, whatever the camera count.
    assert SECONDS * 0.85 <= f.matched_seconds <= SECONDS + 0.2
    assert f.new_seconds >= SECONDS * 0.85
    owned = {s.stream for s in f.streams if s.owned_seconds > 0}
    assert owned == {"episode_0/cam_high"}
    # Episode 0's wrist camera is a view the lab does not own; episode 1's cameras are a new episode.
    assert [v.stream for v in new_camera_views(f)] == ["episode_0/cam_wrist"]
