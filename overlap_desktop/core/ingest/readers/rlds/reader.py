"""RLDS / TFDS dataset folders (Open X-Embodiment, DROID...): one stream per episode and camera.

A TFDS dataset version folder holds ``features.json`` (the feature schema),
``dataset_info.json`` and shards ``<name>-<split>.tfrecord-NNNNN-of-NNNNN``. In RLDS each
record is one episode: a ``tf.train.Example`` whose nested features are flattened to
keys like ``steps/observation/image``, an image feature being a list of encoded stills
(JPEG or PNG), one per step. The cameras are the ``Image`` features of ``features.json``.

Episodes are numbered per split in shard order (the order TFDS reads them). No rate is
stored: ``--frame-rate`` says it. The folder is one item (one dataset), like a LeRobot
dataset; ``overlap verify`` checks its files' bytes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import is_regular_file, loads_json_limited, read_regular
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers.arraydata import (
    MAX_EPISODES,
    ArrayReaderBase,
    encoded_frame,
    episode_extra,
    image_size,
)
from overlap_desktop.core.ingest.readers.rlds.example import ExampleCapError, ExampleError, parse_example
from overlap_desktop.core.ingest.readers.rlds.tfrecord import CapExceeded, RecordSpan, read_record, scan_records
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = ["RldsReader", "image_features", "shards"]

_SHARD = re.compile(r"^(?P<stem>.+)-(?P<split>[^-]+)\.tfrecord-(?P<i>\d{5})-of-(?P<n>\d{5})$")
_MAX_JSON = 16 * 1024 * 1024
_MAX_DEPTH = 32
_KEY = re.compile(r"^(?P<split>[^/]+)/episode_(?P<ep>\d+)/(?P<feature>.+)$")
#: Records (episodes) one shard may hold: TFDS writes shards of a few thousand episodes at most,
#: and walking a record costs time whatever its size (2 million empty records are 32 MB).
MAX_SHARD_RECORDS = 100_000


def shards(folder: Path) -> dict[str, list[Path]]:
    """``split -> shard files`` in shard order."""
    out: dict[str, list[tuple[int, Path]]] = {}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return {}
    for p in entries:
        m = _SHARD.match(p.name)
        if m and is_regular_file(p):
            out.setdefault(m.group("split"), []).append((int(m.group("i")), p))
    return {k: [p for _, p in sorted(v)] for k, v in sorted(out.items())}


def _is_image(node: dict[str, Any]) -> bool:
    cls = str(node.get("pythonClassName", ""))
    return cls.endswith("image_feature.Image") or (isinstance(node.get("image"), dict) and "sequence" not in node)


def image_features(schema: Any) -> list[str]:
    """Flattened keys (``steps/observation/image``) of the Image features in ``features.json``."""
    found: list[str] = []

    def walk(node: Any, prefix: str, depth: int) -> None:
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return
        if _is_image(node):
            found.append(prefix)
            return
        fd = node.get("featuresDict")
        if isinstance(fd, dict) and isinstance(fd.get("features"), dict):
            for name, child in fd["features"].items():
                walk(child, f"{prefix}/{name}" if prefix else str(name), depth + 1)
        seq = node.get("sequence")
        if isinstance(seq, dict):
            walk(seq.get("feature"), prefix, depth + 1)

    walk(schema, "", 0)
    return sorted(found)


def _load_json(path: Path, name: str) -> Any:
    try:
        raw = read_regular(path / name, _MAX_JSON + 1)
    except OSError as exc:
        raise MediaError(f"cannot read {name}: {exc.strerror or exc}", path=path) from exc
    if len(raw) > _MAX_JSON:
        raise MediaError(f"{name} is implausibly large", path=path)
    try:
        return loads_json_limited(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise MediaError(f"{name} is not valid JSON: {exc}", path=path) from exc


def _shard_starts(info: Any, split: str, files: list[Path]) -> dict[str, int]:
    """``shard name -> number of its first episode`` from ``dataset_info.json``'s shard lengths
    (TFDS's own episode order), or empty when they are absent or do not fit the shards."""
    splits = info.get("splits") if isinstance(info, dict) else None
    entry = next((x for x in splits if isinstance(x, dict) and x.get("name") == split), None) \
        if isinstance(splits, list) else None
    lengths = entry.get("shardLengths") if entry is not None else None
    if not isinstance(lengths, list) or len(lengths) > MAX_EPISODES:
        return {}
    try:
        counts = [int(x) for x in lengths]
    except (TypeError, ValueError):
        return {}
    out: dict[str, int] = {}
    for shard in files:
        m = _SHARD.match(shard.name)
        if m is None or int(m.group("n")) != len(counts) or int(m.group("i")) >= len(counts) or min(counts) < 0:
            return {}
        out[shard.name] = sum(counts[: int(m.group("i"))])
    return out


class RldsReader(ArrayReaderBase):
    """Reader for RLDS / TFDS dataset folders (no TensorFlow needed)."""

    name = "rlds"
    description = "RLDS / TFDS dataset folders (features.json + *.tfrecord-*): one stream per episode and camera"
    extensions: tuple[str, ...] = ()
    rate_example = "the control rate on the dataset's card (Open X-Embodiment lists one per dataset)"

    def __init__(self, *, config: Any | None = None) -> None:
        super().__init__(config=config)
        # The last record read: a stream per camera reads the same episode record in turn.
        self._cache: tuple[tuple[str, int], bytes] | None = None
        self._lock = threading.Lock()

    def can_open(self, path: Path) -> bool:
        path = Path(path)
        return (path.is_dir() and is_regular_file(path / "features.json")
                and is_regular_file(path / "dataset_info.json") and bool(shards(path)))

    def _max_record(self) -> int:
        return int(self.limits().max_chunk_bytes)

    def _spans(self, shard: Path) -> tuple[list[RecordSpan], MediaError | None]:
        """The shard's records up to the first damaged header (a truncated shard keeps the
        episodes before its damage), and that damage."""
        spans: list[RecordSpan] = []
        try:
            for span in scan_records(shard, self._max_record(), max_records=min(MAX_EPISODES, MAX_SHARD_RECORDS)):
                spans.append(span)
        except CapExceeded:
            raise  # a cap refuses the dataset; only damage leaves the intact episodes to read
        except MediaError as exc:
            return spans, exc
        return spans, None

    def _record(self, shard: Path, span: RecordSpan) -> bytes:
        key = (str(shard), span.offset)
        with self._lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        data = read_record(shard, span)
        with self._lock:
            self._cache = (key, data)
        return data

    def streams(self, path: Path) -> list[StreamInfo]:
        folder = Path(path)
        cams = image_features(_load_json(folder, "features.json"))
        info = _load_json(folder, "dataset_info.json")  # present and readable: this is a TFDS folder
        if not cams:
            raise MediaError("features.json declares no Image feature (no camera to fingerprint)", path=folder)
        rate, source = self.rate(None, folder)
        limits = self.limits()
        out: list[StreamInfo] = []
        damage: list[MediaError] = []
        for split, files in shards(folder).items():
            episode = 0
            starts = _shard_starts(info, split, files)
            for shard in files:
                # Numbered as the dataset's own order (its shard lengths), whatever is missing before.
                episode = starts.get(shard.name, episode)
                spans, broken = self._spans(shard)
                for span in spans:
                    if span.length == 0:  # an empty Example: no camera; passed over unread
                        episode += 1  # numbered like the rest, so episode numbers stay the dataset's own
                        continue
                    try:
                        feats = self._episode(folder, shard, span, cams)
                    except CapExceeded:
                        raise
                    except MediaError as exc:
                        # A damaged record is listed and skipped; it keeps its episode number, so
                        # the episodes after it are numbered as in an intact copy.
                        damage.append(exc)
                        episode += 1
                        continue
                    out.extend(self._episode_streams(folder, shard, span, feats, cams, split, episode,
                                                     rate, source, limits))
                    episode += 1
                if broken is not None:
                    damage.append(broken)
        if not out:
            if damage:
                raise damage[0]
            raise MediaError("no episode holds camera images", path=folder)
        if damage:
            out[0].extra["reader_notes"] = [f"{Path(e.path or folder).name}: {e.message} (skipped; the intact "
                                       "episodes were read)" for e in damage]
        return out

    def _episode(self, folder: Path, shard: Path, span: RecordSpan, cams: list[str]) -> dict[str, Any]:
        """One record's camera features.

        Raises:
            MediaError: the record is damaged or not an episode.
        """
        data = self._record(shard, span)
        try:
            return parse_example(data, want=set(cams))
        except ExampleCapError as exc:
            raise CapExceeded(f"record {span.index} of {shard.name}: {exc}", path=folder) from exc
        except ExampleError as exc:
            raise MediaError(f"record {span.index} of {shard.name}: not a valid episode: {exc}",
                             path=folder) from exc

    def _episode_streams(self, folder: Path, shard: Path, span: RecordSpan, feats: dict[str, Any],
                         cams: list[str], split: str, episode: int, rate: float, source: str,
                         limits: Any) -> list[StreamInfo]:
        out: list[StreamInfo] = []
        for cam in cams:
            feat = feats.get(cam)
            if feat is None or feat.kind != "bytes" or not feat.count:
                continue
            first = feat.values[0] if isinstance(feat.values, list) else b""
            try:
                fmt, size = image_size(first, limits)
            except ImageError as exc:
                raise MediaError(f"record {span.index} of {shard.name}, {cam} step 0: {exc}",
                                 path=folder) from exc
            out.append(self.stream(
                f"{split}/episode_{episode}/{cam}", size or (None, None), feat.count, fmt, rate,
                episode_extra(camera=cam.rsplit("/", 1)[-1], episode=episode, frames=feat.count,
                              rate=rate, rate_source=source, feature=cam, split=split,
                              shard=shard.name, record=span.index)))
        return out

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        folder = Path(path)
        m = _KEY.match(stream.key)
        shard_name = str(stream.extra.get("shard", ""))
        record = stream.extra.get("record")
        if m is None or not isinstance(record, int) or "/" in shard_name or "\\" in shard_name:
            raise MediaError(f"stream {stream.key!r} is not an RLDS episode camera", path=folder)
        shard = folder / shard_name
        if not _SHARD.match(shard_name) or not is_regular_file(shard):
            raise MediaError(f"{shard_name} is missing", path=folder)
        rate, _ = self.rate(None, folder)
        limits = self.limits()
        span = next((s for s in self._spans(shard)[0] if s.index == record), None)
        if span is None:
            raise MediaError(f"record {record} is gone from {shard_name}", path=folder)
        cam = m.group("feature")
        try:
            feat = parse_example(self._record(shard, span), want={cam}).get(cam)
        except ExampleError as exc:
            raise MediaError(f"record {record} of {shard_name}: not a valid episode: {exc}", path=folder) from exc
        if feat is None or not isinstance(feat.values, list):
            raise MediaError(f"record {record} of {shard_name} has no {cam}", path=folder)
        for i, data in enumerate(feat.values):
            check_cancel(cancel)
            where = f"record {record} of {shard_name}, {cam} step {i}"
            try:
                yield encoded_frame(int(round(i * 1e9 / rate)), data, limits=limits, path=folder, describe=where)
            except ImageError as exc:
                raise MediaError(f"{where}: {exc}", path=folder) from exc
