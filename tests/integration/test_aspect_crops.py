"""Aspect-changing crops: robot data conversions centre-crop 16:9 cameras to 4:3 (and to square for
policies). With ``index.aspect_crops`` the lab's index hashes those crops of its footage, so such a
copy is found at speed 1.00 and reported as cropped; another episode of the same rig cropped the same
way stays new. Without the setting (the default, to keep the index size) the copy is not found.

Footage: generated same-rig episodes (tests/rig.py) at 16:9.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop import api
from tests.footage import write_video
from tests.rig import RigEpisode

FPS = 25.0
SECONDS = 14.0
WIDE = (256, 144)


def _frames(episode: int) -> np.ndarray:
    ep = RigEpisode(71, episode)
    return np.stack([ep.frame(i / FPS, WIDE) for i in range(int(SECONDS * FPS))])


def _centre(frames: np.ndarray, width: int) -> np.ndarray:
    x0 = (frames.shape[2] - width) // 2
    return np.ascontiguousarray(frames[:, :, x0:x0 + width])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("aspect")
    owned, other = _frames(1), _frames(2)
    write_video(root / "own" / "cam_high.mp4", list(owned), fps=FPS)
    write_video(root / "offer" / "to_4x3.mp4", list(_centre(owned, 192)), fps=FPS)      # 16:9 -> 4:3
    write_video(root / "offer" / "to_square.mp4", list(_centre(owned, 144)), fps=FPS)   # 16:9 -> 1:1
    write_video(root / "offer" / "other_4x3.mp4", list(_centre(other, 192)), fps=FPS)  # look-alike
    offer_cfg = api.load_config({})
    assert not api.index_paths([root / "offer"], index=root / "idx_offer", config=offer_cfg).failed
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=offer_cfg)
    out: dict[str, Any] = {}
    for name, overrides in (("aspect", {"index.aspect_crops": "0.75,0.5625"}), ("default", {})):
        cfg = api.load_config(overrides)
        assert not api.index_paths([root / "own"], index=root / f"idx_{name}", config=cfg).failed
        report = api.compare(root / "offer.ovlm", root / f"idx_{name}", config=cfg)
        out[name] = {Path(f.query_file).name: f for f in report.files}
    return out


@pytest.mark.parametrize(("name", "kept"), [("to_4x3.mp4", 0.75), ("to_square.mp4", 0.5625)])
def test_an_aspect_crop_is_found_with_aspect_crops(world: dict[str, Any], name: str, kept: float) -> None:
    f = world["aspect"][name]
    assert f.matched_seconds >= 0.85 * SECONDS, (f.matched_seconds, f.below_floor, f.cant_tell)
    assert all(s.speed == pytest.approx(1.0, abs=0.03) for s in f.segments)
    assert {s.variant.aspect for s in f.segments} == {kept}
    assert "crop" in f.flags


def test_another_episode_cropped_the_same_way_stays_new(world: dict[str, Any]) -> None:
    f = world["aspect"]["other_4x3.mp4"]
    assert f.matched_seconds == 0 and not f.segments


def test_without_aspect_crops_the_copy_is_not_found(world: dict[str, Any]) -> None:
    # The default index keeps its size; aspect-changing crops are the gap it leaves.
    assert world["default"]["to_4x3.mp4"].matched_seconds == 0
