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


# --------------------------------------------------------------------------- zarr v2/v3 and chunk links

zarr = pytest.importorskip("zarr")


def _zarr_frames(folder: Path) -> int:
    from overlap_desktop.core.ingest.readers.zarrbuf.reader import ZarrReader

    reader = ZarrReader()
    reader.configure(RATE)
    return sum(1 for s in reader.streams(folder) for _f in reader.frames(folder, s))


def _zarr_refused(folder: Path, *words: str) -> None:
    with pytest.raises(MediaError) as info:
        _zarr_frames(folder)
    for w in words:
        assert w in str(info.value), str(info.value)
    assert info.value.path is not None and Path(info.value.path) == folder


def test_a_store_with_v2_and_v3_metadata_is_refused(tmp_path: Path) -> None:
    import shutil

    from tests.robotdata import write_zarr

    v2 = write_zarr(tmp_path / "v2.zarr", [{"img": FRAMES}], zarr_format=2)
    assert _zarr_frames(v2) > 0  # the honest store reads
    v3 = write_zarr(tmp_path / "v3.zarr", [{"img": np.zeros((60, 64, 96, 3), np.uint8)}], zarr_format=3)
    assert _zarr_frames(v3) > 0
    # v3 metadata (other shapes, never checked) laid beside the checked v2 files.
    for meta in v3.rglob("zarr.json"):
        target = v2 / meta.relative_to(v3)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(meta, target)
    _zarr_refused(v2, "both v2", "v3")


def test_an_array_with_both_metadata_files_is_refused(tmp_path: Path) -> None:
    import shutil

    from tests.robotdata import write_zarr

    v2 = write_zarr(tmp_path / "v2.zarr", [{"img": FRAMES}], zarr_format=2)
    v3 = write_zarr(tmp_path / "v3.zarr", [{"img": FRAMES}], zarr_format=3)
    shutil.copy(v3 / "data" / "img" / "zarr.json", v2 / "data" / "img" / "zarr.json")
    _zarr_refused(v2, "both v2")


def test_a_chunk_that_is_a_link_out_of_the_store_is_refused(tmp_path: Path) -> None:
    import os
    import shutil

    from tests.robotdata import write_zarr

    store = write_zarr(tmp_path / "s.zarr", [{"img": FRAMES}], zarr_format=2)
    chunk = next(p for p in sorted((store / "data" / "img").iterdir()) if not p.name.startswith("."))
    outside = tmp_path / "elsewhere.bin"
    shutil.copy(chunk, outside)
    chunk.unlink()
    os.symlink(outside, chunk)
    _zarr_refused(store, "outside this zarr store")
    # A link that stays inside the store is the store's own data: it reads.
    inside = store / "data" / "kept.bin"
    shutil.copy(outside, inside)
    chunk.unlink()
    os.symlink(inside, chunk)
    assert _zarr_frames(store) > 0
