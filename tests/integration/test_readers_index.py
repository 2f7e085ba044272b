"""Recordings and dataset folders through the indexer: each is one item, read by the right
reader, folders are not descended into, and a bad recording fails alone."""

from __future__ import annotations

import shutil
from pathlib import Path

from overlap_desktop import api


def test_mixed_folder_indexes_each_recording_once(tmp_path: Path, mcap_jpeg: Path, rosbag1_file: Path,
                                                  rosbag2_mcap: Path, image_sequence: Path,
                                                  lerobot_dataset: Path) -> None:
    root = tmp_path / "lab"
    root.mkdir()
    shutil.copy(mcap_jpeg, root / "cam.mcap")
    shutil.copy(rosbag1_file, root / "run.bag")
    shutil.copytree(rosbag2_mcap, root / "bag2")
    shutil.copytree(image_sequence, root / "stills")
    shutil.copytree(lerobot_dataset, root / "dataset")
    (root / "broken.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(100))
    cfg = api.load_config({"index.path": str(tmp_path / "idx")})
    summary = api.index_paths([root], config=cfg)
    assert [Path(p).name for p, _ in summary.failed] == ["broken.mcap"]
    assert "broken.mcap" in summary.failed[0][0] and summary.failed[0][1]
    with api.open_index(config=cfg) as idx:
        files = {Path(f.path).name: f for f in idx.files() if f.status == "ok"}
    assert {n: f.reader for n, f in files.items()} == {
        "cam.mcap": "mcap", "run.bag": "rosbag", "bag2": "rosbag", "stills": "imageseq", "dataset": "lerobot"}
    assert sorted(files["run.bag"].streams) == ["/camera/compressed", "/camera/image_raw"]
    assert len(files["dataset"].streams) == 2
    for f in files.values():
        assert f.duration_s is not None and f.duration_s > 7.0
