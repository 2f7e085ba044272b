"""Hostile robot datasets (issue 32, item 9): every refusal is a MediaError naming the file and
the problem, raised before anything large is allocated.

* HDF5: external links, virtual datasets and external storage (data outside the file), an
  unsupported filter, a deflate chunk that expands past its declared size (a bomb), declared
  shapes over the caps, a JPEG declaring a huge picture, a truncated file;
* RLDS: a truncated shard, a CRC mismatch, a record length over the cap, records that are not
  ``tf.train.Example``\\ s, and protobuf lengths that run past their message;
* zarr: a zlib chunk bomb, a blosc header lying about its size, a codec that is not installed
  (named with its package), episode ends that are not step counts, a declared shape over the caps;
* rates: a stored rate that is not usable.

Bombs run under ``tracemalloc`` with a peak far below what the bomb would expand to.
"""

from __future__ import annotations

import json
import struct
import sys
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
zarr = pytest.importorskip("zarr")
pytest.importorskip("google_crc32c")

from overlap_desktop.core.ingest.readers.base import ReaderLimits  # noqa: E402
from overlap_desktop.core.ingest.readers.hdf5.aloha import AlohaReader  # noqa: E402
from overlap_desktop.core.ingest.readers.hdf5.robomimic import RobomimicReader  # noqa: E402
from overlap_desktop.core.ingest.readers.rlds.example import ExampleError, parse_example  # noqa: E402
from overlap_desktop.core.ingest.readers.rlds.reader import RldsReader  # noqa: E402
from overlap_desktop.core.ingest.readers.zarrbuf.reader import ZarrReader  # noqa: E402
from overlap_desktop.errors import MediaError  # noqa: E402
from tests.robotdata import (  # noqa: E402
    encode_example,
    jpeg,
    tfrecord_frame,
    write_aloha,
    write_rlds,
    write_robomimic,
    write_zarr,
)

RATE = {"index.frame_rate": 10.0}
FRAMES = np.random.default_rng(5).integers(0, 255, (6, 32, 48, 3)).astype(np.uint8)
#: Well above anything a healthy read of these tiny files allocates, far below any bomb.
PEAK_BYTES = 48 * 1024 * 1024


def _configured(reader: Any) -> Any:
    reader.configure(RATE)
    return reader


def _read_all(reader: Any, path: Path) -> int:
    n = 0
    for s in reader.streams(path):
        for f in reader.frames(path, s):
            f.to_rgb(16, 12)
            n += 1
    return n


def _refused(call: Callable[[], object], *words: str, path: Path | None = None) -> MediaError:
    with pytest.raises(MediaError) as info:
        call()
    text = str(info.value)
    for w in words:
        assert w in text, text
    if path is not None:
        assert info.value.path is not None and Path(info.value.path) == path, info.value.path
    return info.value


def _bounded(call: Callable[[], object], *words: str) -> None:
    tracemalloc.start()
    try:
        _refused(call, *words)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, peak


# --------------------------------------------------------------------------- HDF5


def test_hdf5_links_and_storage_outside_the_file_are_refused(tmp_path: Path) -> None:
    other = write_aloha(tmp_path / "other.hdf5", {"cam": FRAMES})
    ext = tmp_path / "episode_1.hdf5"
    write_aloha(ext, {"cam_high": FRAMES})
    with h5py.File(ext, "a") as f:
        f["observations/images/cam_low"] = h5py.ExternalLink(str(other), "/observations/images/cam")
    _refused(lambda: _configured(AlohaReader()).streams(ext), "external link", "other.hdf5", path=ext)

    virt = tmp_path / "episode_2.hdf5"
    write_aloha(virt, {"cam_high": FRAMES})
    with h5py.File(virt, "a") as f:
        layout = h5py.VirtualLayout(shape=FRAMES.shape, dtype="uint8")
        layout[:] = h5py.VirtualSource(str(other), "/observations/images/cam", shape=FRAMES.shape)
        f["observations/images"].create_virtual_dataset("cam_low", layout)
    _refused(lambda: _configured(AlohaReader()).streams(virt), "virtual dataset", path=virt)

    stored = tmp_path / "episode_3.hdf5"
    raw = tmp_path / "pixels.bin"
    raw.write_bytes(FRAMES.tobytes())
    write_aloha(stored, {"cam_high": FRAMES})
    with h5py.File(stored, "a") as f:
        f["observations/images"].create_dataset("cam_low", FRAMES.shape, "uint8",
                                                 external=[(str(raw), 0, FRAMES.nbytes)])
    _refused(lambda: _configured(AlohaReader()).streams(stored), "external files", path=stored)


def test_hdf5_unsupported_filter_is_named(tmp_path: Path) -> None:
    p = write_robomimic(tmp_path / "demo.hdf5", [{"agentview_image": FRAMES}])
    with h5py.File(p, "a") as f:
        del f["data/demo_0/obs/agentview_image"]
        f["data/demo_0/obs"].create_dataset("agentview_image", data=FRAMES, scaleoffset=0)
    _refused(lambda: RobomimicReader().streams(p), "scale-offset", "not supported", path=p)


def test_hdf5_deflate_bomb_chunk_is_refused_before_hdf5_inflates_it(tmp_path: Path) -> None:
    p = tmp_path / "demo.hdf5"
    with h5py.File(p, "w") as f:
        f.create_group("data").attrs["env_args"] = json.dumps({"env_kwargs": {"control_freq": 10}})
        d = f.create_dataset("data/demo_0/obs/agentview_image", data=FRAMES, chunks=(1, 32, 48, 3),
                             compression="gzip")
        # 512 MiB of zeros in ~0.5 MB of deflate, where the chunk declares 4.6 kB.
        bomb = zlib.compress(b"\0" * (512 << 20), 9)
        d.id.write_direct_chunk((3, 0, 0, 0), bomb)
    reader = RobomimicReader()
    s = reader.streams(p)[0]
    _bounded(lambda: [f.to_rgb(8, 8) for f in reader.frames(p, s)], "chunk of /data/demo_0/obs/agentview_image",
             "expands past")


def test_hdf5_declared_shapes_over_the_caps(tmp_path: Path) -> None:
    p = tmp_path / "episode_4.hdf5"
    with h5py.File(p, "w") as f:
        f.attrs["compress"] = False
        # Never written: HDF5 allocates nothing, but a reader trusting the shape would.
        f.create_dataset("observations/images/cam_high", (10, 60000, 60000, 3), "uint8", chunks=(1, 64, 64, 3))
    _refused(lambda: _configured(AlohaReader()).streams(p), "cam_high", "60000", path=p)
    q = tmp_path / "episode_5.hdf5"
    with h5py.File(q, "w") as f:
        f.attrs["compress"] = False
        f.create_dataset("observations/images/cam_high", (10**9, 64, 64, 3), "uint8", chunks=(1, 64, 64, 3))
    _refused(lambda: _configured(AlohaReader()).streams(q), "frames", path=q)


def test_aloha_jpeg_declaring_a_huge_picture_is_refused(tmp_path: Path) -> None:
    p = write_aloha(tmp_path / "episode_6.hdf5", {"cam_high": FRAMES}, compress=True)
    good = jpeg(FRAMES[0])
    # Rewrite the SOF0 frame size to 60000 x 60000 (the decoder would allocate 10 GB).
    sof = good.index(b"\xff\xc0")
    bad = good[: sof + 5] + struct.pack(">HH", 60000, 60000) + good[sof + 9:]
    with h5py.File(p, "a") as f:
        d = f["observations/images/cam_high"]
        row = np.zeros(d.shape[1], np.uint8)
        row[: min(len(bad), d.shape[1])] = np.frombuffer(bad, np.uint8)[: d.shape[1]]
        d[0] = row
    _refused(lambda: _configured(AlohaReader()).streams(p), "frame 0", "60000", path=p)


def test_truncated_hdf5_names_the_file(tmp_path: Path) -> None:
    p = write_aloha(tmp_path / "episode_7.hdf5", {"cam_high": FRAMES})
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    reader = _configured(AlohaReader())
    if reader.can_open(p):
        _refused(lambda: _read_all(reader, p), path=p)
    else:  # the superblock's end-of-file address no longer matches: not even opened
        _refused(lambda: reader.streams(p), "cannot open", path=p)


def test_unusable_stored_rate_is_refused(tmp_path: Path) -> None:
    p = write_robomimic(tmp_path / "demo.hdf5", [{"agentview_image": FRAMES}], control_freq=-5)
    _refused(lambda: RobomimicReader().streams(p), "unusable frame rate", path=p)


# --------------------------------------------------------------------------- RLDS


def _rlds(tmp_path: Path) -> tuple[Path, Path]:
    folder = write_rlds(tmp_path / "ds" / "1.0.0", [{"image": FRAMES}, {"image": FRAMES[::-1].copy()}])
    shard = next(folder.glob("*.tfrecord-*"))
    return folder, shard


def test_truncated_shard_keeps_its_intact_episodes_and_names_the_record(tmp_path: Path) -> None:
    folder, shard = _rlds(tmp_path)
    data = shard.read_bytes()
    shard.write_bytes(data[:-50])
    reader = _configured(RldsReader())
    streams = reader.streams(folder)
    assert [s.key for s in streams] == ["train/episode_0/steps/observation/image"]
    (note,) = streams[0].extra["reader_notes"]
    assert shard.name in note and "record 1" in note and "truncated" in note
    assert len(list(reader.frames(folder, streams[0]))) == len(FRAMES)
    # Nothing intact is left: refused, naming the record.
    shard.write_bytes(data[:100])
    _refused(lambda: _configured(RldsReader()).streams(folder), "record 0", "truncated", path=shard)


def test_crc_mismatch_names_the_record(tmp_path: Path) -> None:
    folder, shard = _rlds(tmp_path)
    data = bytearray(shard.read_bytes())
    data[200] ^= 0xFF  # inside record 0's data
    shard.write_bytes(bytes(data))
    streams = _configured(RldsReader()).streams(folder)
    # Episode 1 keeps its number; the damaged episode 0 is named.
    assert [s.key for s in streams] == ["train/episode_1/steps/observation/image"]
    (note,) = streams[0].extra["reader_notes"]
    assert "record 0" in note and "CRC" in note


def test_record_length_over_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    folder, shard = _rlds(tmp_path)
    import google_crc32c

    head = struct.pack("<Q", 1 << 40)
    crc = google_crc32c.value(head)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    shard.write_bytes(head + struct.pack("<I", masked) + b"\0" * 64)
    _bounded(lambda: _configured(RldsReader()).streams(folder), "record 0", "over the limit")


def test_records_that_are_not_examples(tmp_path: Path) -> None:
    folder, shard = _rlds(tmp_path)
    shard.write_bytes(tfrecord_frame(b"\x0a\xff\xff\xff\x0f" + b"x" * 10))  # a field claiming 4 GB
    _refused(lambda: _configured(RldsReader()).streams(folder), "record 0", "not a valid episode", path=folder)
    with pytest.raises(ExampleError):
        parse_example(b"\x0b\x00")  # wire type 3 (groups)
    with pytest.raises(ExampleError):
        parse_example(b"\x08" + b"\xff" * 11)  # an 11-byte varint
    good = encode_example({"steps/observation/image": [b"abc", b"de"]})
    assert parse_example(good)["steps/observation/image"].count == 2
    with pytest.raises(ExampleError):
        parse_example(good[:-1])


# --------------------------------------------------------------------------- zarr


def _chunk(folder: Path, cam: str, i: int) -> Path:
    return folder / "data" / cam / f"{i}.0.0.0"


def test_zarr_zlib_chunk_bomb_is_refused(tmp_path: Path) -> None:
    from numcodecs import Zlib

    folder = write_zarr(tmp_path / "b.zarr", [{"img": FRAMES}], zarr_format=2, compressor=Zlib(level=1))
    _chunk(folder, "img", 2).write_bytes(zlib.compress(b"\0" * (512 << 20), 9))
    reader = _configured(ZarrReader())
    s = reader.streams(folder)[0]
    _bounded(lambda: [f.to_rgb(8, 8) for f in reader.frames(folder, s)], "chunk 2.0.0.0 of img", "expands past")


def test_zarr_blosc_header_lying_about_its_size(tmp_path: Path) -> None:
    folder = write_zarr(tmp_path / "b.zarr", [{"img": FRAMES}], zarr_format=2)
    chunk = _chunk(folder, "img", 1)
    data = bytearray(chunk.read_bytes())
    data[4:8] = struct.pack("<I", 1 << 31)
    chunk.write_bytes(bytes(data))
    reader = _configured(ZarrReader())
    s = reader.streams(folder)[0]
    _refused(lambda: list(reader.frames(folder, s)), "blosc header states", path=folder)


def test_zarr_missing_codec_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_zarr(tmp_path / "b.zarr", [{"camera0_rgb": FRAMES}], zarr_format=2)
    meta_path = folder / "data" / "camera0_rgb" / ".zarray"
    meta = json.loads(meta_path.read_text())
    meta["compressor"] = {"id": "imagecodecs_jpegxl", "level": 99}
    meta_path.write_text(json.dumps(meta))
    monkeypatch.setitem(sys.modules, "imagecodecs", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "imagecodecs.numcodecs", None)
    _refused(lambda: _configured(ZarrReader()).streams(folder), "imagecodecs_jpegxl", "pip install imagecodecs",
             path=folder)


def test_zarr_episode_ends_that_are_not_step_counts(tmp_path: Path) -> None:
    folder = write_zarr(tmp_path / "b.zarr", [{"img": FRAMES}, {"img": FRAMES}], zarr_format=3)
    ends = zarr.open_group(str(folder), mode="a")["meta"]["episode_ends"]
    ends[...] = [9, 4]
    _refused(lambda: _configured(ZarrReader()).streams(folder), "episode_ends", path=folder)
    ends[...] = [4, 10 ** 6]
    _refused(lambda: _configured(ZarrReader()).streams(folder), "episode_ends", path=folder)


def test_zarr_declared_shape_over_the_caps(tmp_path: Path) -> None:
    folder = write_zarr(tmp_path / "b.zarr", [{"img": FRAMES}], zarr_format=2)
    meta_path = folder / "data" / "img" / ".zarray"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [6, 100000, 100000, 3]
    meta_path.write_text(json.dumps(meta))
    _refused(lambda: _configured(ZarrReader()).streams(folder), "data/img", "100000", path=folder)


def test_healthy_files_read_under_the_same_tight_caps(tmp_path: Path) -> None:
    """The look-alike of every refusal above: well-formed files of each kind read in full."""
    limits = ReaderLimits(max_message_bytes=1 << 20)
    cases: list[tuple[Any, Path]] = [
        (AlohaReader(), write_aloha(tmp_path / "episode_1.hdf5", {"cam_high": FRAMES})),
        (AlohaReader(), write_aloha(tmp_path / "j" / "episode_1.hdf5", {"cam_high": FRAMES}, compress=True)),
        (RobomimicReader(), write_robomimic(tmp_path / "r.hdf5", [{"agentview_image": FRAMES}], chw=True)),
        (RldsReader(), _rlds(tmp_path)[0]),
        (ZarrReader(), write_zarr(tmp_path / "z2.zarr", [{"img": FRAMES}], zarr_format=2)),
        (ZarrReader(), write_zarr(tmp_path / "z3.zarr", [{"img": FRAMES}], zarr_format=3)),
    ]
    for reader, path in cases:
        reader.configure(RATE)
        reader.limits = lambda: limits  # type: ignore[method-assign]
        assert reader.can_open(path), path
        assert _read_all(reader, path) == len(FRAMES) * len(reader.streams(path)), path
