"""zarr ReplayBuffers (diffusion policy, UMI; zarr v2 and v3): one stream per episode and camera.

A ReplayBuffer is a zarr group with ``data/<key>`` arrays ``(N, ...)`` holding every
step of every episode back to back, and ``meta/episode_ends`` (the exclusive end step
of each episode). The cameras are the ``data`` arrays of RGB frames ``(N, H, W, 3)``
(uint8, or float as push-T stores them). Codecs are those the installed numcodecs
provides, plus imagecodecs' (UMI stores JPEG-XL): a missing one is named with the
package that provides it.

Every chunk is checked by :meth:`ArraySpec.check_chunk` before zarr decodes it; raw
frames go to the fingerprint without any encode / decode round trip. No rate is stored
(UMI records at 60 Hz, push-T at 10 Hz): ``--frame-rate`` says it. The folder is one item.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.ingest.readers._bounded import Budget
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import (
    MAX_EPISODES,
    ArrayReaderBase,
    episode_extra,
    frame_layout,
    raw_frames,
    read_plan,
    require,
)
from overlap_desktop.core.ingest.readers.zarrbuf.layout import (
    IMAGECODECS_HINT,
    ArraySpec,
    array_spec,
    is_group,
    metadata_versions,
)
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError

__all__ = ["ZarrReader"]

_KEY = re.compile(r"^episode_(\d+)/([^/]+)$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _one_format(folder: Path) -> set[int]:
    """The store's zarr format (a one-element set, empty when none is found).

    Raises:
        MediaError: the store holds metadata of both formats (zarr would decode it from
            metadata other than what was checked).
    """
    versions = metadata_versions(folder)
    if len(versions) > 1:
        raise MediaError("this zarr store holds both v2 (.zarray/.zgroup) and v3 (zarr.json) metadata; zarr would "
                         "decode it from metadata other than what was checked, so it is refused (keep one format)",
                         path=folder)
    return versions


def _folder_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(folder):
        for n in names:
            try:
                total += os.stat(os.path.join(dirpath, n)).st_size
            except OSError:
                continue
    return total


class ZarrReader(ArrayReaderBase):
    """Reader for zarr ReplayBuffer folders."""

    name = "zarr"
    description = "zarr ReplayBuffers (data/<camera> + meta/episode_ends; v2 and v3): one stream per episode and camera"
    extensions: tuple[str, ...] = ()
    rate_example = "e.g. --frame-rate 10 for push-T, 60 for UMI"

    def can_open(self, path: Path) -> bool:
        path = Path(path)
        return (path.is_dir() and is_group(path) and is_group(path / "data")
                and (path / "meta" / "episode_ends").is_dir())

    # ------------------------------------------------------------------ layout

    def _spec(self, folder: Path, rel: str) -> ArraySpec:
        try:
            spec = array_spec(folder / rel)
        except ValueError as exc:
            raise MediaError(f"{rel}: {exc}", path=folder) from exc
        if spec is None:
            raise MediaError(f"{rel} is not a zarr array", path=folder)
        return spec

    def _cameras(self, folder: Path) -> list[tuple[str, ArraySpec]]:
        _one_format(folder)
        limits = self.limits()
        out: list[tuple[str, ArraySpec]] = []
        for p in sorted((folder / "data").iterdir()):
            if not p.is_dir() or not _NAME.match(p.name):
                continue
            try:
                spec = array_spec(p)
            except ValueError:
                continue  # a low-dimensional array in a layout we do not read is no camera
            if spec is None:
                continue
            try:
                lay = frame_layout(spec.shape, spec.dtype, limits)
            except ImageError as exc:
                raise MediaError(f"data/{p.name}: {exc}", path=folder) from exc
            if lay is not None and not lay.chw:
                out.append((p.name, spec))
        return out

    def _open(self, folder: Path, specs: list[ArraySpec]) -> Any:
        zarr = require("zarr", what="zarr ReplayBuffers", path=folder)
        codec = next((s.image_codec() for s in specs if s.image_codec()), None)
        if codec is not None:
            try:
                from imagecodecs.numcodecs import register_codecs
            except ImportError as exc:
                raise MediaError(f"the cameras are compressed with {codec}, which needs the imagecodecs library; "
                                 f"install it with {IMAGECODECS_HINT}", path=folder) from exc
            # Quietly: each call names every codec already registered (hundreds of lines per run).
            register_codecs(verbose=False)
        versions = _one_format(folder)
        if any(s.version not in versions for s in specs):
            raise MediaError("this zarr store's arrays and groups are of different zarr formats; refused (keep "
                             "one format)", path=folder)
        try:
            # The format that was checked is the one zarr reads.
            return zarr.open_group(os.fspath(folder), mode="r", zarr_format=next(iter(versions), None))
        except Exception as exc:  # zarr raises many kinds for unreadable metadata
            raise MediaError(f"cannot open this zarr group: {exc}", path=folder) from exc

    def _episode_ends(self, folder: Path, group: Any, frames: int, budget: Budget) -> list[int]:
        spec = self._spec(folder, "meta/episode_ends")
        if len(spec.shape) != 1 or spec.dtype.kind not in "iu" or spec.shape[0] > MAX_EPISODES:
            raise MediaError(f"meta/episode_ends must be a list of step counts, found {spec.shape} {spec.dtype}",
                             path=folder)
        for r in range(-(-spec.shape[0] // spec.chunks[0])):
            spec.check_chunk((r,), budget, self.limits(), folder)
        try:
            ends = [int(x) for x in np.asarray(group["meta"]["episode_ends"][:])]
        except Exception as exc:
            raise MediaError(f"meta/episode_ends cannot be read: {exc}", path=folder) from exc
        if any(b < a for a, b in zip([0, *ends], ends)) or (ends and (ends[0] < 0 or ends[-1] > frames)):
            raise MediaError(f"meta/episode_ends is not an increasing list of step counts up to {frames} "
                             "(damaged buffer)", path=folder)
        return ends

    # ------------------------------------------------------------------ reader

    def streams(self, path: Path) -> list[StreamInfo]:
        folder = Path(path)
        cams = self._cameras(folder)
        if not cams:
            raise MediaError("no camera arrays (N, H, W, 3) under data/", path=folder)
        rate, source = self.rate(None, folder)
        group = self._open(folder, [s for _, s in cams])
        budget = Budget(folder, self.limits(), _folder_bytes(folder))
        frames = min(s.shape[0] for _, s in cams)
        ends = self._episode_ends(folder, group, frames, budget)
        out: list[StreamInfo] = []
        for e, (a, b) in enumerate(zip([0, *ends], ends)):
            for cam, spec in cams:
                if b <= a:
                    continue
                codec = spec.image_codec() or f"raw {spec.dtype}" + (f" ({spec.codecs[-1]})" if spec.codecs else "")
                out.append(self.stream(f"episode_{e}/{cam}", (spec.shape[2], spec.shape[1]), b - a, codec, rate,
                                       episode_extra(camera=cam, episode=e, frames=b - a, rate=rate,
                                                     rate_source=source, steps=[a, b], zarr_format=spec.version)))
        if not out:
            raise MediaError("every episode is empty", path=folder)
        return out

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        folder = Path(path)
        m = _KEY.match(stream.key)
        if m is None or not _NAME.match(m.group(2)):
            raise MediaError(f"stream {stream.key!r} is not a ReplayBuffer episode camera", path=folder)
        cam = m.group(2)
        spec = self._spec(folder, f"data/{cam}")
        limits = self.limits()
        lay = frame_layout(spec.shape, spec.dtype, limits)
        if lay is None or lay.chw:
            raise MediaError(f"data/{cam} no longer holds camera frames", path=folder)
        rate, _ = self.rate(None, folder)
        group = self._open(folder, [spec])
        budget = Budget(folder, limits, _folder_bytes(folder))
        ends = self._episode_ends(folder, group, spec.shape[0], budget)
        e = int(m.group(1))
        if e >= len(ends):
            raise MediaError(f"episode {e} is gone from meta/episode_ends", path=folder)
        start, stop = (ends[e - 1] if e else 0), ends[e]
        arr = group["data"][cam]
        steps = self._steps(arr, spec, (start + i for i in self.used(stop - start, rate)), start, stop, budget,
                            folder)
        yield from raw_frames(((i - start, img) for i, img in steps), rate=rate, chw=False, cancel=cancel,
                              luma=self.fast_luma)

    def _steps(self, arr: Any, spec: ArraySpec, keep: Iterable[int], start: int, stop: int, budget: Budget,
               folder: Path) -> Iterator[tuple[int, np.ndarray]]:
        """Steps ``keep`` (increasing, within ``start..stop``) as ``(step, pixels)``, read in
        slabs of whole chunk rows, each chunk checked first; a row no wanted step is in is
        never read, and uncompressed steps are read one by one."""
        step = spec.chunks[0]
        frame_bytes = int(np.prod(spec.shape[1:])) * spec.dtype.itemsize
        limits = self.limits()
        checked: set[int] = set()
        for a, b, picks in read_plan(keep, step if spec.codecs else 1, frame_bytes):
            a, b = max(start, a), min(stop, b)
            if spec.direct():  # decoded here, without zarr's per-call machinery
                span = range(a // step, (b - 1) // step + 1)
                rows = [r for r in (spec.read_row(row, budget, limits, folder) for row in span) if r is not None]
                checked.update(span)
                if len(rows) == len(span):
                    slab = rows[0] if len(rows) == 1 else np.concatenate(rows)
                    for i in picks:
                        yield i, slab[i - span[0] * step]
                    continue
                # a chunk is not stored: zarr fills it with the array's fill value
            for row in range(a // step, (b - 1) // step + 1):
                if row not in checked:
                    for idx in spec.row_chunks(row):
                        spec.check_chunk(idx, budget, limits, folder)
                    checked.add(row)
            try:
                slab = np.asarray(arr[a:b])
            except Exception as exc:
                raise MediaError(f"data/{spec.folder.name}: steps {a}-{b - 1} cannot be read (damaged chunk?): {exc}",
                                 path=folder) from exc
            for i in picks:
                yield i, slab[i - a]
            del slab
