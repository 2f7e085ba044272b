"""robomimic / LIBERO-style HDF5 (``data/<demo>/obs/<camera>``): one stream per demo and camera.

Layout, as robomimic's ``dataset_states_to_obs.py`` and LIBERO write it: each demo
``data/demo_N`` has an ``obs`` group; its image datasets (``agentview_image``,
``robot0_eye_in_hand_image``, ``*_rgb``...) are ``(T, H, W, 3)`` or ``(T, 3, H, W)`` uint8,
often gzip-compressed with automatic chunking. Depth and low-dimensional observations are
left out (not RGB frames).

The rate is ``control_freq`` in the JSON of ``data.attrs["env_args"]`` (``env_kwargs``) when
present (robosuite: 20 Hz); otherwise ``--frame-rate`` says it. The episode number is the
one in the demo's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import loads_json_limited
from overlap_desktop.core.ingest.readers._bounded import Budget
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import (
    MAX_EPISODES,
    ArrayReaderBase,
    episode_extra,
    frame_layout,
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
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError

__all__ = ["RobomimicReader", "stored_rate"]

_DEMO = re.compile(r"(\d+)$")
_MAX_ENV_ARGS = 1 << 20
_KEY = re.compile(r"^data/([^/]+)/obs/([^/]+)$")


def stored_rate(data: Any) -> float | None:
    """``env_kwargs.control_freq`` from ``data.attrs["env_args"]`` (JSON), if stated."""
    raw = data.attrs.get("env_args")
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str) or len(raw) > _MAX_ENV_ARGS:
        return None
    try:
        args = loads_json_limited(raw)
        freq = args.get("env_kwargs", {}).get("control_freq")
    except (ValueError, AttributeError):
        return None
    return float(freq) if isinstance(freq, (int, float)) and not isinstance(freq, bool) else None


def _is_robomimic(f: Any) -> bool:
    import h5py

    data = f.get("data")
    if not isinstance(data, h5py.Group) or isinstance(f.get("data", getlink=True), h5py.ExternalLink):
        return False
    for name in data:  # the first demo says
        demo = data.get(name)
        return isinstance(demo, h5py.Group) and isinstance(demo.get("obs"), h5py.Group)
    return False


def _demo_number(name: str) -> int | None:
    m = _DEMO.search(name)
    return int(m.group(1)) if m else None


class RobomimicReader(ArrayReaderBase):
    """Reader for robomimic / LIBERO HDF5 datasets."""

    name = "robomimic"
    description = "robomimic / LIBERO HDF5 (data/<demo>/obs/<camera>): one stream per demo and camera"
    extensions: tuple[str, ...] = SUFFIXES
    rate_example = "e.g. --frame-rate 20 for robomimic / robosuite (its control_freq)"

    def can_open(self, path: Path) -> bool:
        return probe(path, _is_robomimic)

    def streams(self, path: Path) -> list[StreamInfo]:
        path = Path(path)
        limits = self.limits()
        with open_h5(path) as f:
            try:
                data = member(f, "data", path)
            except KeyError as exc:
                raise MediaError("no data group: not a robomimic dataset", path=path) from exc
            rate, source = self.rate(stored_rate(data), path, 'data.attrs["env_args"] control_freq')
            demos = sorted(data.keys(), key=lambda n: (_demo_number(n) is None, _demo_number(n) or 0, n))
            if len(demos) > MAX_EPISODES:
                raise MediaError(f"{len(demos)} demos is implausibly many", path=path)
            out: list[StreamInfo] = []
            for demo in demos:
                try:
                    obs = member(member(data, demo, path), "obs", path)
                except KeyError:
                    continue  # a demo without observations (mask groups, metadata)
                for cam in sorted(obs.keys()):
                    dset = member(obs, cam, path)
                    if not hasattr(dset, "shape"):
                        continue
                    try:
                        lay = frame_layout(dset.shape, dset.dtype, limits)
                    except ImageError as exc:
                        raise MediaError(f"data/{demo}/obs/{cam}: {exc}", path=path) from exc
                    if lay is None or lay.frames == 0:
                        continue
                    check_dataset(dset, path)
                    out.append(self.stream(f"data/{demo}/obs/{cam}", (lay.width, lay.height), lay.frames,
                                           f"raw {dset.dtype}{' (channels first)' if lay.chw else ''}", rate,
                                           episode_extra(camera=cam, episode=_demo_number(demo), frames=lay.frames,
                                                         rate=rate, rate_source=source, demo=demo)))
        if not out:
            raise MediaError("no camera images under data/<demo>/obs (image observations are (T,H,W,3) or "
                             "(T,3,H,W) arrays)", path=path)
        return out

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        path = Path(path)
        m = _KEY.match(stream.key)
        if m is None:
            raise MediaError(f"stream {stream.key!r} is not a robomimic camera", path=path)
        limits = self.limits()
        with open_h5(path) as f:
            try:
                data = member(f, "data", path)
                dset = member(member(member(data, m.group(1), path), "obs", path), m.group(2), path)
            except KeyError as exc:
                raise MediaError(f"{stream.key} is gone from the file", path=path) from exc
            rate, _ = self.rate(stored_rate(data), path, 'data.attrs["env_args"] control_freq')
            lay = frame_layout(dset.shape, dset.dtype, limits)
            if lay is None:
                raise MediaError(f"{stream.key} no longer holds camera frames", path=path)
            yield from raw_frames(dataset_frames(dset, lay, path, limits, Budget(path, limits),
                                                 self.used(lay.frames, rate)), rate=rate, chw=lay.chw, cancel=cancel,
                                  luma=self.fast_luma)
