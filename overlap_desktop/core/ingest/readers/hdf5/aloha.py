"""ALOHA / ACT episode files (``episode_N.hdf5``): one stream per camera.

Layout, as ALOHA's ``record_episodes.py`` writes it: every dataset under
``/observations/images/<camera>`` is one camera of the episode, either raw frames
``(T, H, W, 3)`` uint8 (any chunking and any filter :mod:`._h5` accepts), or, with the root
attribute ``compress`` true, JPEG bytes padded with zeros to one width ``(T, padded)``
with the true lengths in ``/compress_len`` ``(cameras, T)``. ALOHA writes those JPEGs with
OpenCV from RGB arrays, so a standard decoder sees red and blue swapped; they are
swapped back, as ALOHA's own loader (``cv2.imdecode``) does.

No rate is stored (ALOHA records at 50 Hz): ``--frame-rate`` says it. The episode number
is the one in the file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.ingest.readers._bounded import Budget
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import (
    MAX_FRAMES,
    ArrayReaderBase,
    encoded_frame,
    episode_extra,
    frame_layout,
    frame_time_ns,
    image_size,
    raw_frames,
)
from overlap_desktop.core.ingest.readers.hdf5._h5 import (
    SUFFIXES,
    check_dataset,
    dataset_frames,
    member,
    open_h5,
    probe,
)
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = ["AlohaReader", "IMAGES"]

IMAGES = "observations/images"
_EPISODE = re.compile(r"episode_?(\d+)", re.IGNORECASE)


def _episode(path: Path) -> int | None:
    m = _EPISODE.search(path.stem)
    return int(m.group(1)) if m else None


def _is_aloha(f: Any) -> bool:
    import h5py

    link = f.get("observations", getlink=True)
    return isinstance(link, h5py.HardLink) and isinstance(f["observations"].get("images"), h5py.Group)


def _compressed(root: Any) -> bool:
    value = root.attrs.get("compress", False)
    try:
        return bool(np.asarray(value).item())
    except (ValueError, TypeError):
        return False


class AlohaReader(ArrayReaderBase):
    """Reader for ALOHA / ACT episode HDF5 files."""

    name = "aloha"
    description = "ALOHA / ACT episode HDF5 (/observations/images/<camera>, raw or JPEG): one stream per camera"
    extensions: tuple[str, ...] = SUFFIXES
    rate_example = "e.g. --frame-rate 50 for ALOHA (its recorder runs at 50 Hz)"

    def can_open(self, path: Path) -> bool:
        return probe(path, _is_aloha)

    def _cameras(self, f: Any, path: Path) -> list[str]:
        try:
            images = member(member(f, "observations", path), "images", path)
        except KeyError as exc:
            raise MediaError(f"no /{IMAGES} group: not an ALOHA episode file", path=path) from exc
        return sorted(images.keys())

    def streams(self, path: Path) -> list[StreamInfo]:
        path = Path(path)
        limits = self.limits()
        with open_h5(path) as f:
            compressed = _compressed(f)
            cams = self._cameras(f, path)
            skipped: list[str] = []
            if compressed:
                # A depth camera beside the JPEG colour cameras (its own array, not JPEG bytes) is
                # skipped with a word; the colour cameras are read.
                depth = [c for c in cams if _depth_like(member(f[IMAGES], c, path))]
                skipped = [f"/{IMAGES}/{c}: not JPEG colour frames ({_shape(member(f[IMAGES], c, path))}, a depth "
                           "camera?), skipped; the colour cameras were read" for c in depth]
                cams = [c for c in cams if c not in depth]
                _check_lengths(f, len(cams), path)
            rate, source = self.rate(None, path)
            out: list[StreamInfo] = []
            for cam in cams:
                dset = member(f, f"{IMAGES}/{cam}", path)
                check_dataset(dset, path)
                where = f"/{IMAGES}/{cam}"
                if compressed:
                    if dset.ndim != 2 or dset.dtype != np.uint8 or not 0 < dset.shape[0] <= MAX_FRAMES:
                        raise MediaError(f"{where}: expected padded JPEG bytes (frames, bytes) uint8 as the root "
                                         f"attribute compress says, found {dset.shape} {dset.dtype}", path=path)
                    if dset.shape[1] > limits.max_message_bytes:
                        raise MediaError(f"{where}: frames padded to {dset.shape[1]} bytes, over the limit", path=path)
                    first = _jpeg_bytes(np.asarray(dset[0]))
                    try:
                        fmt, size = image_size(first, limits)
                    except ImageError as exc:
                        raise MediaError(f"{where} frame 0: {exc}", path=path) from exc
                    n, wh, codec = int(dset.shape[0]), size or (None, None), fmt
                else:
                    try:
                        lay = frame_layout(dset.shape, dset.dtype, limits)
                    except ImageError as exc:
                        raise MediaError(f"{where}: {exc}", path=path) from exc
                    if lay is None:
                        continue  # depth or another non-RGB array
                    n, wh, codec = lay.frames, (lay.width, lay.height), f"raw {dset.dtype}"
                if n == 0:
                    continue
                out.append(self.stream(f"{IMAGES}/{cam}", wh, n, codec, rate,
                                       episode_extra(camera=cam, episode=_episode(path), frames=n, rate=rate,
                                                     rate_source=source, layout="jpeg" if compressed else "raw")))
        if not out:
            raise MediaError(f"no camera frames under /{IMAGES}" + (f" ({skipped[0]})" if skipped else ""), path=path)
        if skipped:
            out[0].extra["reader_notes"] = skipped
        return out

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        path = Path(path)
        limits = self.limits()
        cam = stream.key.rsplit("/", 1)[-1]
        with open_h5(path) as f:
            rate, _ = self.rate(None, path)
            try:
                dset = member(f, f"{IMAGES}/{cam}", path)
            except KeyError as exc:
                raise MediaError(f"camera {cam!r} is gone from the file", path=path) from exc
            budget = Budget(path, limits)
            if not _compressed(f):
                lay = frame_layout(dset.shape, dset.dtype, limits)
                if lay is None:
                    raise MediaError(f"/{IMAGES}/{cam} no longer holds camera frames", path=path)
                yield from raw_frames(dataset_frames(dset, lay, path, limits, budget, self.used(lay.frames, rate)),
                                      rate=rate, chw=lay.chw, cancel=cancel, luma=self.fast_luma)
                return
            check_dataset(dset, path)
            n, width = int(dset.shape[0]), int(dset.shape[1])
            for i, row in dataset_frames(dset, _rows_layout(n, width), path, limits, budget, self.used(n, rate)):
                check_cancel(cancel)
                data = _jpeg_bytes(row)
                t = frame_time_ns(i, rate)
                try:
                    yield encoded_frame(t, data, limits=limits, path=path, describe=f"/{IMAGES}/{cam} frame {i}",
                                        swap_rb=True)
                except ImageError as exc:
                    raise MediaError(f"/{IMAGES}/{cam} frame {i}: {exc}", path=path) from exc


def _check_lengths(f: Any, cameras: int, path: Path) -> None:
    """``/compress_len`` must be (cameras, frames): anything else is not the layout ALOHA writes."""
    try:
        lens = member(f, "compress_len", path)
    except KeyError as exc:
        raise MediaError("the root attribute compress is set but /compress_len is missing", path=path) from exc
    if len(lens.shape) != 2 or lens.shape[0] < cameras:
        raise MediaError(f"/compress_len has shape {lens.shape}, expected (cameras, frames) for {cameras} cameras",
                         path=path)


def _depth_like(dset: Any) -> bool:
    """An array of whole pictures (``(T, H, W)`` or ``(T, H, W, C)``, e.g. uint16 depth) in a file whose
    colour cameras are JPEG bytes ``(T, padded)``."""
    return getattr(dset, "ndim", 0) in (3, 4)


def _shape(dset: Any) -> str:
    return f"{tuple(dset.shape)} {dset.dtype}"


def _rows_layout(n: int, width: int) -> Any:
    from overlap_desktop.core.ingest.readers.arraydata import FrameLayout

    return FrameLayout(n, 1, width, 1, False, width)


def _jpeg_bytes(row: np.ndarray) -> bytes:
    """One frame's JPEG without its zero padding (a JPEG ends with the nonzero EOI marker)."""
    nz = np.flatnonzero(row)
    return row[: int(nz[-1]) + 1].tobytes() if nz.size else b""
