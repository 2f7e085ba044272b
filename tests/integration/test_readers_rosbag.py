"""RosbagReader on ROS 1 bags and rosbag2 folders (sqlite3 and mcap storage) written by
the tests with rosbags."""

from __future__ import annotations

import builtins
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.ingest.readers.rosbag import RosbagReader
from overlap_desktop.core.types import CancelToken
from overlap_desktop.errors import Cancelled, MediaError, MissingDependencyError
from tests.fixtures_recordings import FOOTAGE_FPS, write_rosbag1, write_rosbag2

STEP_NS = int(1e9 / FOOTAGE_FPS)


@pytest.fixture(params=["rosbag1_file", "rosbag2_sqlite", "rosbag2_mcap"])
def bag(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue(request.param)


def test_every_bag_kind_lists_both_image_topics(bag: Path, footage_frames: list[np.ndarray]) -> None:
    reader = reader_for(bag)
    assert reader.name == "rosbag"
    streams = {s.key: s for s in reader.streams(bag)}
    assert sorted(streams) == ["/camera/compressed", "/camera/image_raw"]  # /chatter ignored
    raw, jpeg = streams["/camera/image_raw"], streams["/camera/compressed"]
    assert (raw.width, raw.height, raw.codec) == (160, 120, "rgb8")
    assert jpeg.codec == "jpeg" and raw.extra["messages"] == len(footage_frames)
    frames = list(reader.frames(bag, raw))
    assert len(frames) == len(footage_frames)
    assert [f.t_ns for f in frames[:3]] == [0, STEP_NS, 2 * STEP_NS]
    assert np.array_equal(frames[7].to_rgb(160, 120), footage_frames[7])
    jframes = list(reader.frames(bag, jpeg))
    assert np.abs(jframes[7].to_rgb(160, 120).astype(int) - footage_frames[7]).mean() < 6


def test_rosbag2_folder_is_claimed_but_lone_mcap_goes_to_mcap_reader(rosbag2_mcap: Path) -> None:
    assert RosbagReader().can_open(rosbag2_mcap)
    inner = next(rosbag2_mcap.glob("*.mcap"))
    assert reader_for(inner).name == "mcap"
    assert not RosbagReader().can_open(inner)


def test_header_time_option(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    bag = write_rosbag1(tmp_path / "h.bag", footage_frames[:4], with_jpeg=False)
    reader = RosbagReader(config=load_config({"readers.mcap_time": "header"}))
    frames = list(reader.frames(bag, reader.streams(bag)[0]))
    # The fixture stamps headers with the same times as the log: same result either way.
    assert [f.t_ns for f in frames] == [0, STEP_NS, 2 * STEP_NS, 3 * STEP_NS]


def test_bag_without_image_topics(tmp_path: Path) -> None:
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    p = tmp_path / "chat.bag"
    with Writer(p) as w:
        c = w.add_connection("/chatter", "std_msgs/msg/String", typestore=ts)
        w.write(c, 1, ts.serialize_ros1(ts.types["std_msgs/msg/String"](data="x"), "std_msgs/msg/String"))
    with pytest.raises(MediaError, match="no image topic") as info:
        RosbagReader().streams(p)
    assert str(p) in str(info.value)


def test_unknown_encoding_in_bag(tmp_path: Path, footage_frames: list[np.ndarray]) -> None:
    from tests import fixtures_recordings as fr

    real = fr.encode_raw

    def fake(img: np.ndarray, encoding: str, **kw: Any) -> tuple[bytes, int]:
        return real(img, "rgb8", **kw)

    fr.encode_raw = fake  # type: ignore[assignment]
    try:
        p = write_rosbag2(tmp_path / "b", footage_frames[:2], encoding="32FC3", with_jpeg=False)
    finally:
        fr.encode_raw = real  # type: ignore[assignment]
    with pytest.raises(MediaError, match="unsupported image encoding '32FC3'"):
        RosbagReader().streams(p)


def test_corrupt_bag_is_a_media_error(tmp_path: Path, rosbag1_file: Path) -> None:
    data = bytearray(rosbag1_file.read_bytes())
    data[200:5000] = bytes(4800)
    bad = tmp_path / "bad.bag"
    bad.write_bytes(bytes(data))
    reader = RosbagReader()
    with pytest.raises(MediaError) as info:
        for s in reader.streams(bad):
            list(reader.frames(bad, s))
    assert str(bad) in str(info.value)


def test_rosbag2_folder_missing_its_storage_file(tmp_path: Path, rosbag2_sqlite: Path) -> None:
    copy = tmp_path / "partial"
    shutil.copytree(rosbag2_sqlite, copy)
    for f in copy.glob("*.db3"):
        f.unlink()
    with pytest.raises(MediaError, match="cannot open the recording"):
        RosbagReader().streams(copy)


def test_missing_rosbags_names_the_extra(monkeypatch: pytest.MonkeyPatch, rosbag1_file: Path) -> None:
    real_import = builtins.__import__

    def no_rosbags(name: str, *args: Any, **kw: Any) -> Any:
        if name == "rosbags" or name.startswith("rosbags."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_rosbags)
    reader = RosbagReader()
    assert reader.can_open(rosbag1_file)  # claimed, so the user hears about the extra
    with pytest.raises(MissingDependencyError, match=r'pip install "overlap-desktop\[ros\]"'):
        reader.streams(rosbag1_file)


def test_cancel(rosbag2_sqlite: Path) -> None:
    reader = RosbagReader()
    token = CancelToken()
    it = reader.frames(rosbag2_sqlite, reader.streams(rosbag2_sqlite)[0], cancel=token)
    next(it)
    token.cancel()
    with pytest.raises(Cancelled):
        next(it)


def test_sqlite_bag_opens_after_an_index_was_opened(tmp_path: Path, rosbag2_sqlite: Path) -> None:
    """The index applies apsw best practice process-wide (no double-quoted strings); rosbags'
    sqlite3 storage uses apsw with double-quoted strings and must still open."""
    from overlap_desktop.core.index.store import open_index

    with open_index(tmp_path / "idx"):
        pass
    reader = RosbagReader()
    streams = reader.streams(rosbag2_sqlite)
    assert len(list(reader.frames(rosbag2_sqlite, streams[0]))) > 0
