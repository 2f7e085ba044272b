"""zarr ReplayBuffers whose cameras are stored with imagecodecs' numcodecs codecs: JPEG 2000 as
diffusion policy's real_data_to_replay_buffer stores them (``Jpeg2k(level=50)``, one step per
chunk), JPEG XL as UMI does. The owned episode is found at speed 1.00, the other episode of the
same rig in the same buffer is not; a JPEG 2000 chunk declaring a giant picture is refused before
it is decoded; indexing logs no "numcodec ... already registered" lines.

Footage: generated same-rig episodes (tests/rig.py).
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("zarr")
pytest.importorskip("imagecodecs.numcodecs")

from overlap_desktop import api
from overlap_desktop.config import load_config
from tests.footage import write_video
from tests.rig import RigEpisode
from tests.robotdata import write_zarr

FPS = 25.0
SECONDS = 12.0
SIZE = (128, 96)


def _frames(episode: int) -> np.ndarray:
    ep = RigEpisode(71, episode)
    return np.stack([ep.frame(i / FPS, SIZE) for i in range(int(SECONDS * FPS))])


def _codec(name: str) -> Any:
    from imagecodecs.numcodecs import Jpeg2k, Jpegxl

    # level 50: diffusion policy's real_data_to_replay_buffer; JPEG XL as UMI stores its cameras.
    return Jpeg2k(level=50) if name == "jpeg2k" else Jpegxl(level=90)


CODECS = ("jpeg2k", "jpegxl")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("zarrcodecs")
    owned, other = _frames(1), _frames(2)
    write_video(root / "own" / "cam_high.mp4", list(owned), fps=FPS)
    config = load_config(overrides={"index.frame_rate": FPS})
    assert not api.index_paths([root / "own"], index=root / "idx_own", config=config).failed
    from imagecodecs.numcodecs import register_codecs

    register_codecs(verbose=False)
    for name in CODECS:
        write_zarr(root / "offer" / f"{name}.zarr", [{"cam_high": owned}, {"cam_high": other}],
                   compressor=_codec(name))
    return {"root": root, "config": config}


@pytest.mark.parametrize("codec", CODECS)
def test_imagecodecs_cameras_are_read_and_matched(world: dict[str, Any], codec: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    root, config = world["root"], world["config"]
    ix = root / f"idx_{codec}"
    with caplog.at_level(logging.WARNING):
        summary = api.index_paths([root / "offer" / f"{codec}.zarr"], index=ix, config=config)
        assert not summary.failed, summary.failed
        api.index_paths([root / "offer" / f"{codec}.zarr"], index=root / f"idx2_{codec}", config=config)
    assert not [r for r in caplog.records if "already registered" in r.getMessage()]
    api.export_manifest(ix, root / f"{codec}.ovlm", config=config)
    report = api.compare(root / f"{codec}.ovlm", root / "idx_own", config=config)
    (f,) = report.files
    by_key = {s.stream: s for s in f.streams}
    assert by_key["episode_0/cam_high"].owned_seconds >= 0.85 * SECONDS
    assert by_key["episode_1/cam_high"].owned_seconds == 0
    assert all(s.speed == pytest.approx(1.0, abs=0.03) for s in f.segments)
    assert {s.query_stream for s in f.segments} == {"episode_0/cam_high"}


def test_a_jpeg2000_chunk_declaring_a_giant_picture_is_refused(world: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    buf = tmp_path / "bomb.zarr"
    shutil.copytree(world["root"] / "offer" / "jpeg2k.zarr", buf)
    chunk = buf / "data" / "cam_high" / "0.0.0.0"
    data = bytearray(chunk.read_bytes())
    at = data.find(b"\xff\x51")  # the SIZ marker: Lsiz, Rsiz, then the picture's width and height
    assert at > 0
    data[at + 6:at + 14] = struct.pack(">2I", 60000, 60000)
    chunk.write_bytes(bytes(data))
    summary = api.index_paths([buf], index=tmp_path / "ix", config=world["config"])
    assert summary.failed or summary.warnings
    words = " ".join(str(x) for x in [*summary.failed, *summary.warnings])
    assert "60000" in words, words
