"""Damaged robot datasets are listed and read as far as they are intact, never silently dropped or
refused whole: a truncated HDF5 episode (walked and named directly), a truncated RLDS shard (its
intact episode indexed, the damaged record named), a compressed ALOHA file with a depth camera
(the colour cameras read, the depth camera named as skipped).

Data written as the ALOHA recorder and a TFDS builder write it (tests/robotdata.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("google_crc32c")

from overlap_desktop import api
from overlap_desktop.config import load_config
from tests.rig import RigEpisode
from tests.robotdata import write_aloha, write_rlds

FPS = 10.0


def _frames(episode: int, n: int = 30) -> np.ndarray:
    ep = RigEpisode(71, episode)
    return np.stack([ep.frame(i / FPS, (64, 48)) for i in range(n)])


def _config() -> object:
    return load_config(overrides={"index.frame_rate": FPS})


def _truncated_aloha(folder: Path) -> Path:
    p = write_aloha(folder / "episode_3.hdf5", {"cam_high": _frames(1)})
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p


def test_a_truncated_hdf5_is_listed_as_damaged_when_walked(tmp_path: Path) -> None:
    p = _truncated_aloha(tmp_path / "lib")
    write_aloha(tmp_path / "lib" / "episode_4.hdf5", {"cam_high": _frames(2)})
    summary = api.index_paths([tmp_path / "lib"], index=tmp_path / "ix", config=_config())
    assert summary.indexed == 1
    ((failed, reason),) = summary.failed
    assert Path(failed) == p and "damaged HDF5" in reason, summary.failed


def test_a_truncated_hdf5_named_directly_is_a_damaged_hdf5(tmp_path: Path) -> None:
    p = _truncated_aloha(tmp_path)
    summary = api.index_paths([p], index=tmp_path / "ix", config=_config())
    ((failed, reason),) = summary.failed
    assert Path(failed) == p
    assert "damaged HDF5" in reason and "no reader supports" not in reason, reason


def test_a_truncated_rlds_shard_keeps_its_intact_episodes(tmp_path: Path) -> None:
    folder = write_rlds(tmp_path / "robot_dataset" / "1.0.0", [{"image": _frames(1)}, {"image": _frames(2)}])
    shard = next(folder.glob("*.tfrecord-*"))
    shard.write_bytes(shard.read_bytes()[:-50])
    summary = api.index_paths([folder], index=tmp_path / "ix", config=_config())
    assert not summary.failed and summary.indexed == 1, summary.failed
    notes = [w for w in summary.warnings if "record 1" in w]
    assert notes and "truncated" in notes[0] and shard.name in notes[0], summary.warnings
    with api.open_index(tmp_path / "ix") as idx:
        keys = [key for _f, key, _fp in idx.streams(None)]
    assert keys == ["train/episode_0/steps/observation/image"]


def test_a_depth_camera_in_a_compressed_aloha_file_is_skipped_with_a_word(tmp_path: Path) -> None:
    import h5py

    p = write_aloha(tmp_path / "episode_0.hdf5", {"cam_high": _frames(1), "cam_low": _frames(2)}, compress=True)
    with h5py.File(p, "a") as f:  # a depth camera recorded beside them: (T, H, W) uint16 millimetres
        f["observations/images"].create_dataset("cam_depth", data=np.full((30, 48, 64), 800, np.uint16))
    summary = api.index_paths([p], index=tmp_path / "ix", config=_config())
    assert not summary.failed and summary.indexed == 1, summary.failed
    assert any("cam_depth" in w and "skipped" in w for w in summary.warnings), summary.warnings
    with api.open_index(tmp_path / "ix") as idx:
        keys = sorted(key for _f, key, _fp in idx.streams(None))
    assert keys == ["observations/images/cam_high", "observations/images/cam_low"]


def _faststart(video: Path) -> None:
    """Remux with the index (moov) first, as LeRobot's encoder writes its videos: cut short, such a
    file still opens and decodes up to the cut."""
    import av

    tmp = video.with_name("faststart.mp4")
    with av.open(str(video)) as src, av.open(str(tmp), "w", options={"movflags": "faststart"}) as dst:
        out = dst.add_stream_from_template(src.streams.video[0])
        for pkt in src.demux(src.streams.video[0]):
            if pkt.dts is not None:
                pkt.stream = out
                dst.mux(pkt)
    tmp.replace(video)


def test_a_half_truncated_lerobot_video_is_named_against_its_metadata(tmp_path: Path) -> None:
    from tests.fixtures_recordings import write_lerobot

    root = write_lerobot(tmp_path / "ds", episodes=((0, 4.0), (1, 4.0)), cameras=("observation.images.top",))
    video = root / "videos" / "observation.images.top" / "chunk-000" / "file-000.mp4"
    _faststart(video)
    whole = api.index_paths([root], index=tmp_path / "ix_whole", config=_config())
    assert not whole.failed and not [w for w in whole.warnings if "metadata" in w], whole.warnings
    data = video.read_bytes()
    video.write_bytes(data[: len(data) // 2])
    summary = api.index_paths([root], index=tmp_path / "ix", config=_config())
    assert not summary.failed, summary.failed
    notes = [w for w in summary.warnings if "the dataset's metadata gives" in w]
    assert notes and "of the 8.0 s" in notes[0], notes
    assert "episode 1 " in notes[0] or "episodes 0, 1 " in notes[0], notes


def test_rlds_episodes_keep_the_dataset_numbers_and_the_dataset_its_name(tmp_path: Path) -> None:
    eps = [{"image": _frames(e, 12)} for e in range(4)]
    folder = write_rlds(tmp_path / "robot_dataset" / "1.0.0", eps, shards=2)
    first = folder / "robot_dataset-train.tfrecord-00000-of-00002"
    first.write_bytes(first.read_bytes()[:-50])  # shard 0 loses its second episode
    summary = api.index_paths([folder], index=tmp_path / "ix", config=_config())
    assert not summary.failed, summary.failed
    with api.open_index(tmp_path / "ix") as idx:
        keys = sorted(key for _f, key, _fp in idx.streams(None))
    # The second shard's episodes are the dataset's episodes 2 and 3 (shard lengths), not 1 and 2.
    assert keys == [f"train/episode_{e}/steps/observation/image" for e in (0, 2, 3)]
    api.export_manifest(tmp_path / "ix", tmp_path / "offer.ovlm", config=_config())
    names = [f.name for f in api.read_manifest(tmp_path / "offer.ovlm").files]
    assert names == ["robot_dataset/1.0.0"], names
