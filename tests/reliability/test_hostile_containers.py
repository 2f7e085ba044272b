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


# --------------------------------------------------------------------------- declared work, stored bytes


def test_hdf5_frames_declared_but_never_written_are_refused_at_once(tmp_path: Path) -> None:
    ep = tmp_path / "episode_0.hdf5"
    with h5py.File(ep, "w") as root:
        root.attrs["sim"], root.attrs["compress"] = False, False
        img = root.create_group("observations").create_group("images")
        d = img.create_dataset("cam_high", (100_000_000, 32, 48, 3), dtype="uint8", chunks=(1, 32, 48, 3))
        d[0:6] = FRAMES
        root["observations"].create_dataset("qpos", data=np.zeros((6, 14)))
        root.create_dataset("action", data=np.zeros((6, 14)))
    assert ep.stat().st_size < 100_000
    _refused(ep, "declares 100,000,000 frames", "stores data for only 6")


def _rlds_with(tmp_path: Path, extra: bytes) -> Path:
    from overlap_desktop.core.ingest.readers.rlds.reader import shards
    from tests.robotdata import write_rlds

    root = write_rlds(tmp_path / "rlds", [{"image": FRAMES}])
    shard = next(iter(shards(root).values()))[0]
    with open(shard, "ab") as fh:
        fh.write(extra)
    return root


def _rlds_frames(root: Path) -> int:
    from overlap_desktop.core.ingest.readers.rlds.reader import RldsReader

    reader = RldsReader()
    reader.configure(RATE)
    return sum(1 for s in reader.streams(root) for _f in reader.frames(root, s))


def test_rlds_empty_records_past_the_cap_are_refused_naming_it(tmp_path: Path) -> None:
    from overlap_desktop.core.ingest.readers.rlds.reader import MAX_SHARD_RECORDS
    from tests.robotdata import tfrecord_frame

    honest = _rlds_with(tmp_path / "a", tfrecord_frame(b"") * 1000)  # empty records below the cap: passed over
    assert _rlds_frames(honest) == len(FRAMES)
    hostile = _rlds_with(tmp_path / "b", tfrecord_frame(b"") * MAX_SHARD_RECORDS)
    with pytest.raises(MediaError, match=f"more than {MAX_SHARD_RECORDS:,} records.*the cap on records per shard"):
        _rlds_frames(hostile)


def test_rlds_a_feature_listing_more_values_than_the_cap_is_refused_in_bounded_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    from overlap_desktop.core.ingest.readers.rlds import example
    from tests.robotdata import encode_example, tfrecord_frame

    assert example.MAX_VALUES == 200_000  # the product's cap; lowered below only to keep the test quick
    monkeypatch.setattr(example, "MAX_VALUES", 20_000)
    record = encode_example({"steps/observation/image": [b""] * 200_000})  # 400 KB of empty values, 10x the cap
    root = _rlds_with(tmp_path, tfrecord_frame(record))
    tracemalloc.start()
    try:
        with pytest.raises(MediaError, match="more than 20,000 values.*the cap"):
            _rlds_frames(root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 * 1024 * 1024, peak
