"""LeRobot datasets whose cameras are images (``dtype: image``): PNG / JPEG bytes in the
episode parquet files, one stream per episode and camera.

LeRobot stores such a camera as a column of the data files (``data/chunk-XXX/file-YYY.parquet``
in v3, ``data/chunk-XXX/episode_NNNNNN.parquet`` in v2.x) holding Hugging Face ``Image``
structs ``{bytes, path}``, beside ``episode_index`` and ``timestamp`` columns. A frame's
time is its ``timestamp`` from the episode's first (or its position at ``info.json``'s
``fps`` when there is no timestamp column). The stream key is
``<data file>/episode_<N>/<camera>``, so the reports name the episode and the camera.

Reading parquet needs pyarrow (the ``lerobot`` extra). Reads are bounded: a row group's
image column is refused when its declared size is over the per-chunk cap, and every image
is checked (format, declared size) before it is decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import is_regular_file, open_regular
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import MAX_EPISODES, encoded_frame, episode_extra, image_size
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = ["image_frames", "image_keys", "image_streams"]

_KEY = re.compile(r"^(?P<file>data/.+\.parquet)/episode_(?P<ep>\d+)/(?P<cam>[^/]+)$")
_PYARROW_HINT = 'pip install "overlap-desktop[lerobot]"'


def image_keys(info: dict[str, Any]) -> list[str]:
    """Camera keys declared as images in ``info.json``."""
    features = info.get("features")
    if not isinstance(features, dict):
        return []
    return sorted(k for k, v in features.items() if isinstance(v, dict) and v.get("dtype") == "image")


def _pq(root: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MediaError(f"this LeRobot dataset stores its cameras as images in parquet files; reading them needs "
                         f"pyarrow ({_PYARROW_HINT})", path=root) from exc
    return pq


def _data_files(root: Path) -> list[Path]:
    data = root / "data"
    if not data.is_dir():
        return []
    return sorted(p for p in data.glob("**/*.parquet") if is_regular_file(p))


def _check_row_group(meta: Any, g: int, column: str, limits: ReaderLimits, rel: str, root: Path) -> None:
    """Refuse a row group whose image column declares more bytes than the per-chunk cap."""
    rg = meta.row_group(g)
    size = sum(int(rg.column(j).total_uncompressed_size) for j in range(rg.num_columns)
               if rg.column(j).path_in_schema == column or rg.column(j).path_in_schema.startswith(column + "."))
    if size > limits.max_chunk_bytes:
        raise MediaError(f"{rel}: row group {g} holds {size} bytes of {column}, over the limit of "
                         f"{limits.max_chunk_bytes}", path=root)


def _episode_rows(pq: Any, fh: Any, rel: str, root: Path) -> tuple[dict[int, list[float]], bool]:
    """``episode -> timestamps`` in row order (row positions when there is no timestamp)."""
    schema = pq.read_schema(fh)
    fh.seek(0)
    if "episode_index" not in schema.names:
        raise MediaError(f"{rel} has no episode_index column", path=root)
    cols = ["episode_index"] + (["timestamp"] if "timestamp" in schema.names else [])
    table = pq.read_table(fh, columns=cols)
    if table.num_rows > MAX_EPISODES * 100:
        raise MediaError(f"{rel} holds implausibly many rows", path=root)
    eps = table.column("episode_index").to_pylist()
    ts = table.column("timestamp").to_pylist() if "timestamp" in cols else list(range(len(eps)))
    out: dict[int, list[float]] = {}
    for e, t in zip(eps, ts):
        out.setdefault(int(e), []).append(float(t))
    return out, "timestamp" in cols


def image_streams(root: Path, info: dict[str, Any], fps: float | None, limits: ReaderLimits) -> list[StreamInfo]:
    """One stream per episode and image camera of the dataset's data files.

    Raises:
        MediaError: pyarrow is missing, or a data file is unreadable.
    """
    keys = image_keys(info)
    if not keys:
        return []
    pq = _pq(root)
    out: list[StreamInfo] = []
    for p in _data_files(root):
        rel = p.relative_to(root).as_posix()
        try:
            with open_regular(p) as fh:
                episodes, timed = _episode_rows(pq, fh, rel, root)
                fh.seek(0)
                pf = pq.ParquetFile(fh)
                present = [k for k in keys if k in pf.schema_arrow.names]
                first = {k: _first_image(pf, k, limits, rel, root) for k in present}
        except MediaError:
            raise
        except Exception as exc:  # pyarrow raises many kinds for damaged files
            raise MediaError(f"cannot read {rel}: {exc}", path=root) from exc
        for ep, times in sorted(episodes.items()):
            n = len(times)
            rate = fps or 30.0
            duration = (times[-1] - times[0]) + 1.0 / rate if timed and n else n / rate
            for cam in present:
                fmt, size = first[cam]
                extra = episode_extra(camera=cam, episode=ep, frames=n, rate=rate, data_file=rel,
                                      rate_source="stored (meta/info.json fps)" if fps else "timestamps")
                extra["episodes"] = [(ep, 0.0, duration)]
                out.append(StreamInfo(key=f"{rel}/episode_{ep}/{cam}", width=size[0] if size else None,
                                      height=size[1] if size else None, duration_s=duration, codec=fmt,
                                      rate_hint=fps, extra=extra))
    return out


def _image_bytes(value: Any) -> bytes | None:
    if isinstance(value, dict):
        value = value.get("bytes")
    return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None


def _first_image(pf: Any, key: str, limits: ReaderLimits, rel: str, root: Path) -> tuple[str, tuple[int, int] | None]:
    for g in range(pf.num_row_groups):
        _check_row_group(pf.metadata, g, key, limits, rel, root)
        for batch in pf.iter_batches(batch_size=1, row_groups=[g], columns=[key]):
            data = _image_bytes(batch.column(0)[0].as_py())
            if data is None:
                raise MediaError(f"{rel}: {key} holds no image bytes (images stored as separate files are not "
                                 "supported)", path=root)
            try:
                return image_size(data, limits)
            except ImageError as exc:
                raise MediaError(f"{rel}: {key}, first image: {exc}", path=root) from exc
    return "unknown", None


def image_frames(root: Path, stream: StreamInfo, fps: float | None, limits: ReaderLimits,
                 cancel: CancelCallback | None) -> Iterator[TimedFrame]:
    """The frames of one episode's camera, decoded lazily, timed by the ``timestamp`` column.

    Raises:
        MediaError: the stream is gone, a row group is over the cap, or an image is unusable.
    """
    m = _KEY.match(stream.key)
    if m is None:
        raise MediaError(f"stream {stream.key!r} is not a LeRobot image camera", path=root)
    rel, ep, cam = m.group("file"), int(m.group("ep")), m.group("cam")
    p = (root / rel).resolve()
    try:
        p.relative_to(root.resolve())
    except ValueError as exc:
        raise MediaError(f"stream {rel!r} is outside the dataset", path=root) from exc
    if not is_regular_file(p):
        raise MediaError(f"{rel} is missing", path=root)
    pq = _pq(root)
    rate = fps or 30.0
    with open_regular(p) as fh:
        pf = pq.ParquetFile(fh)
        names = pf.schema_arrow.names
        if cam not in names or "episode_index" not in names:
            raise MediaError(f"{rel} has no {cam} column", path=root)
        cols = [cam, "episode_index"] + (["timestamp"] if "timestamp" in names else [])
        t0: float | None = None
        last = 0
        i = 0
        for g in range(pf.num_row_groups):
            _check_row_group(pf.metadata, g, cam, limits, rel, root)
            for batch in pf.iter_batches(batch_size=64, row_groups=[g], columns=cols):
                eps = batch.column(1).to_pylist()
                if ep not in eps:
                    continue
                images = batch.column(0)
                times = batch.column(2).to_pylist() if len(cols) == 3 else None
                for r, e in enumerate(eps):
                    check_cancel(cancel)
                    if e != ep:
                        continue
                    t = float(times[r]) if times is not None else i / rate
                    t0 = t if t0 is None else t0
                    data = _image_bytes(images[r].as_py())
                    where = f"{rel} episode {ep} {cam} frame {i}"
                    if data is None:
                        raise MediaError(f"{where}: no image bytes", path=root)
                    try:
                        # Times never go backwards (a damaged timestamp column must not reorder frames).
                        last = max(last, int(round((t - t0) * 1e9)))
                        yield encoded_frame(last, data, limits=limits, path=root, describe=where)
                    except ImageError as exc:
                        raise MediaError(f"{where}: {exc}", path=root) from exc
                    i += 1
    if i == 0:
        raise MediaError(f"{rel}: episode {ep} is gone", path=root)
