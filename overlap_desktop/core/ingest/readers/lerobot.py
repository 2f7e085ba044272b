"""LeRobot datasets (a folder with ``meta/info.json``): one stream per camera video file.

Cameras stored as images (``dtype: image``: PNG / JPEG bytes inside the data parquet files)
are read by :mod:`.lerobot_images`, one stream per episode and camera.

LeRobot v3 packs several episodes into each video file
(``videos/{video_key}/chunk-XXX/file-YYY.mp4``) and records where each episode lies in
the per-episode table ``meta/episodes/chunk-XXX/file-YYY.parquet`` (columns
``episode_index``, ``videos/{key}/chunk_index``, ``videos/{key}/file_index``,
``videos/{key}/from_timestamp``, ``videos/{key}/to_timestamp``). v2.x stores one
episode per file (``videos/chunk-XXX/{video_key}/episode_NNNNNN.mp4``).

Each stream's ``StreamInfo.extra["episodes"]`` is a list of ``(episode_index, start_s,
end_s)`` spans in file time, so a matched segment can be reported per episode with
:func:`episode_spans_for` ("episode 41, 00:12–00:31").

Limits: reading the v3 parquet table needs ``pyarrow`` (the ``lerobot`` extra:
``pip install "overlap-desktop[lerobot]"``). Without it the same columns are read from
``meta/episodes.jsonl`` when present; otherwise the videos are still fingerprinted but
``extra["episodes"]`` is empty and ``extra["episodes_note"]`` says why. Frames are decoded
by the video reader (AV1 via dav1d, H.264...), so they match the same footage elsewhere.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import is_regular_file, loads_json_limited, open_regular, read_regular
from overlap_desktop.core.ingest.readers._images import limits_from_config
from overlap_desktop.core.ingest.readers.lerobot_images import image_frames, image_keys, image_streams
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError

__all__ = ["LeRobotReader", "LEROBOT_EXTRA_HINT", "camera_of_key", "episode_spans_for", "format_episode_span",
           "read_episode_table"]

log = logging.getLogger(__name__)

LEROBOT_EXTRA_HINT = 'pip install "overlap-desktop[lerobot]"'
VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov")
_MAX_INFO_BYTES = 16 * 1024 * 1024
_MAX_EPISODE_ROWS = 10_000_000
_CHUNK_FILE = re.compile(r"chunk-(\d+)[/\\]file-(\d+)\.\w+$")
_EPISODE_FILE = re.compile(r"episode_(\d+)\.\w+$")


def _video_reader(config: Any | None = None) -> Any:
    """The video reader for one camera file, configured like ``overlap index``'s own (so
    frames the sampler will not use are not decoded) when a configuration was given."""
    from overlap_desktop.core.ingest.readers.video import VideoReader

    reader = VideoReader()
    if config is not None:
        reader.configure(config)
    return reader


def _load_info(root: Path) -> dict[str, Any]:
    info_path = root / "meta" / "info.json"
    try:
        # Regular files only: a FIFO named info.json would block the read forever.
        raw = read_regular(info_path, _MAX_INFO_BYTES + 1)
        if len(raw) > _MAX_INFO_BYTES:
            raise MediaError("meta/info.json is implausibly large", path=root)
        info = loads_json_limited(raw.decode("utf-8"))
    except OSError as exc:
        raise MediaError(f"cannot read meta/info.json: {exc.strerror or exc}", path=root) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise MediaError(f"meta/info.json is not valid JSON: {exc}", path=root) from exc
    if not isinstance(info, dict):
        raise MediaError("meta/info.json is not a JSON object", path=root)
    return info


def video_keys(info: dict[str, Any]) -> list[str]:
    """Camera keys declared as videos in ``info.json`` (``observation.images.top``...)."""
    features = info.get("features")
    if not isinstance(features, dict):
        return []
    return sorted(k for k, v in features.items() if isinstance(v, dict) and v.get("dtype") == "video")


def read_episode_table(root: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The per-episode rows of a dataset, and a note when they could not be read.

    Reads ``meta/episodes/**/*.parquet`` (needs pyarrow) or else ``meta/episodes.jsonl``.
    Only scalar columns are kept.
    """
    root = Path(root)
    parquet = sorted(p for p in (root / "meta" / "episodes").glob("**/*.parquet") if is_regular_file(p)) \
        if (root / "meta" / "episodes").is_dir() else []
    jsonl = root / "meta" / "episodes.jsonl"
    if parquet:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            if not is_regular_file(jsonl):
                return [], (f"episode table is parquet; install pyarrow to map matches to episodes "
                            f"({LEROBOT_EXTRA_HINT})")
        else:
            rows: list[dict[str, Any]] = []
            for p in parquet:
                try:
                    with open_regular(p) as fh:
                        schema = pq.read_schema(fh)
                        wanted = [n for n in schema.names if n == "episode_index" or n == "length"
                                  or (n.startswith("videos/") and n.rsplit("/", 1)[-1] in
                                      ("chunk_index", "file_index", "from_timestamp", "to_timestamp"))]
                        fh.seek(0)
                        rows.extend(pq.read_table(fh, columns=wanted).to_pylist())
                except Exception as exc:
                    return [], f"cannot read {p.relative_to(root)}: {exc}"
                if len(rows) > _MAX_EPISODE_ROWS:
                    return [], "episode table is implausibly large"
            return rows, None
    if is_regular_file(jsonl):
        import io

        rows = []
        try:
            with io.TextIOWrapper(open_regular(jsonl), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if n > _MAX_EPISODE_ROWS:
                        return [], "episode table is implausibly large"
                    line = line.strip()
                    if line:
                        row = loads_json_limited(line)
                        if isinstance(row, dict):
                            rows.append({k: v for k, v in row.items() if isinstance(v, (int, float, str))})
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return [], f"cannot read meta/episodes.jsonl: {exc}"
        return rows, None
    return [], "no episode table (meta/episodes) found"


def _episodes_for_file(rel: str, key: str, rows: list[dict[str, Any]],
                       duration_s: float | None) -> list[tuple[int, float, float]]:
    m = _CHUNK_FILE.search(rel)
    if m:  # v3: several episodes per file
        chunk, file = int(m.group(1)), int(m.group(2))
        out = []
        for r in rows:
            try:
                if (int(r.get(f"videos/{key}/chunk_index", -1)) == chunk
                        and int(r.get(f"videos/{key}/file_index", -1)) == file):
                    out.append((int(r["episode_index"]), float(r[f"videos/{key}/from_timestamp"]),
                                float(r[f"videos/{key}/to_timestamp"])))
            except (KeyError, TypeError, ValueError):
                continue
        return sorted(out, key=lambda e: e[1])
    m = _EPISODE_FILE.search(rel)
    if m:  # v2.x: the whole file is one episode
        ep = int(m.group(1))
        return [(ep, 0.0, float(duration_s) if duration_s is not None else float("inf"))]
    return []


def _mmss(seconds: float) -> str:
    seconds = max(0.0, seconds)
    m, s = divmod(int(round(seconds)), 60)
    if m >= 60:
        h, m = divmod(m, 60)
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m:02d}:{s:02d}"


def format_episode_span(episode: int, start_s: float, end_s: float, camera: str | None = None) -> str:
    """``"episode 41, cam_high, 00:12–00:31"`` (times within the episode; no camera part when
    the stream does not name one)."""
    cam = f"{camera}, " if camera else ""
    return f"episode {episode}, {cam}{_mmss(start_s)}\u2013{_mmss(end_s)}"


def camera_of_key(key: str) -> str | None:
    """The camera a stream key of an episode dataset names, or ``None``.

    Every reader of episode datasets ends its stream keys with the camera
    (``observations/images/cam_high``, ``data/demo_4/obs/agentview_image``,
    ``train/episode_3/steps/observation/image``); LeRobot keys are its video files
    (``videos/observation.images.top/chunk-000/file-000.mp4``). Keys without a path
    (``v:0``) name no camera. Only the key is used, so manifests (which carry keys, not
    reader details) name cameras the same way as the index.
    """
    parts = [p for p in str(key).replace("\\", "/").split("/") if p]
    if len(parts) < 2:
        return None
    named = [p for p in parts if p.startswith("observation.")]
    if named:
        return named[0]
    last = parts[-1]
    return None if "." in last and last.rsplit(".", 1)[-1].lower() in ("mp4", "mkv", "webm", "mov") else last


def episode_spans_for(stream_info: StreamInfo | dict[str, Any], start_s: float,
                      end_s: float) -> list[dict[str, Any]]:
    """Map a span of a LeRobot video file to the episodes it covers.

    Args:
        stream_info: The stream (or its ``extra`` dict) whose ``extra["episodes"]`` holds
            ``(episode_index, start_s, end_s)`` spans in file time.
        start_s, end_s: The span in file time, seconds (reversed spans are accepted).

    Returns:
        One dict per overlapping episode, in file order: ``episode``, ``start_s`` and
        ``end_s`` (within the episode), ``file_start_s`` and ``file_end_s`` (within the
        file), ``camera`` (``extra["camera"]``, or ``None``) and ``label`` (``"episode 41,
        cam_high, 00:12–00:31"``). Empty when the stream has no episode table.
    """
    extra = stream_info.extra if isinstance(stream_info, StreamInfo) else stream_info
    episodes = extra.get("episodes") or []
    camera = extra.get("camera") if isinstance(extra.get("camera"), str) else None
    lo, hi = (start_s, end_s) if start_s <= end_s else (end_s, start_s)
    out: list[dict[str, Any]] = []
    for ep in episodes:
        try:
            index, e0, e1 = int(ep[0]), float(ep[1]), float(ep[2])
        except (TypeError, ValueError, IndexError):
            continue
        a, b = max(lo, e0), min(hi, e1)
        if b < a or (b == a and lo != hi):
            continue
        out.append({"episode": index, "start_s": a - e0, "end_s": b - e0, "file_start_s": a, "file_end_s": b,
                    "camera": camera, "label": format_episode_span(index, a - e0, b - e0, camera)})
    return out


class LeRobotReader:
    """Reader for LeRobot dataset folders (v3, and v2.x one-episode-per-file layouts)."""

    name = "lerobot"
    description = ("LeRobot datasets (meta/info.json): one stream per camera video file, mapped to episodes, "
                   "or per episode and image camera")
    extensions: tuple[str, ...] = ()

    def __init__(self, *, config: Any | None = None) -> None:
        self._config = config

    def configure(self, config: Any) -> None:
        """Passed on to the video reader of each camera file (decoder threads, sampling rate)."""
        self._config = config

    def can_open(self, path: Path) -> bool:
        path = Path(path)
        if not (path.is_dir() and is_regular_file(path / "meta" / "info.json")):
            return False
        if (path / "videos").is_dir():
            return True
        # Cameras stored as images inside the data parquet files (dtype: image).
        if not (path / "data").is_dir():
            return False
        try:
            return bool(image_keys(_load_info(path)))
        except MediaError:
            # meta/info.json beside data/ that cannot be read: a damaged dataset, claimed so that
            # indexing lists it with the reason instead of passing over it in silence.
            return True

    def _video_files(self, root: Path, keys: list[str]) -> list[tuple[str, Path]]:
        videos = root / "videos"
        out: list[tuple[str, Path]] = []
        for p in sorted(videos.glob("**/*")):
            if p.suffix.lower() not in VIDEO_SUFFIXES or not is_regular_file(p):
                continue  # FIFOs and devices (even named .mp4) are never read
            parts = p.relative_to(videos).parts
            key = next((k for k in keys if k in parts), None)
            if key is None and not keys:
                key = parts[0] if len(parts) > 1 else "video"
            if key is not None:
                out.append((key, p))
        return out

    def streams(self, path: Path) -> list[StreamInfo]:
        root = Path(path)
        info = _load_info(root)
        keys = video_keys(info)
        files = self._video_files(root, keys) if (root / "videos").is_dir() else []
        images = image_streams(root, info, _fps(info), limits_from_config(self._config))
        if not files and not images:
            raise MediaError("no camera video files under videos/ and no image cameras in the data files of this "
                             "LeRobot dataset", path=root)
        if not files:
            return images
        rows, note = read_episode_table(root)
        if note:
            log.info("%s: %s", root, note)
        vr = _video_reader()
        out: list[StreamInfo] = []
        for key, p in files:
            rel = p.relative_to(root).as_posix()
            try:
                inner = vr.streams(p)
            except MediaError as exc:
                raise MediaError(f"{rel}: {exc.message}", path=root) from exc
            if not inner:
                continue
            s = inner[0]
            episodes = _episodes_for_file(rel, key, rows, s.duration_s)
            extra: dict[str, Any] = {"camera": key, "video": rel, "episodes": episodes,
                                     "codebase_version": info.get("codebase_version")}
            if note and not episodes:
                extra["episodes_note"] = note
            out.append(StreamInfo(key=rel, width=s.width, height=s.height, duration_s=s.duration_s,
                                  codec=s.codec, rate_hint=s.rate_hint or _fps(info), rotation=s.rotation,
                                  extra=extra))
        if not out and not images:
            raise MediaError("no decodable camera video in this LeRobot dataset", path=root)
        return out + images

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        root = Path(path)
        if stream.extra.get("data_file"):  # an image camera inside the data parquet files
            yield from image_frames(root, stream, _fps(_load_info(root)), limits_from_config(self._config), cancel)
            return
        rel = stream.extra.get("video") or stream.key
        video = (root / rel).resolve()
        try:
            video.relative_to(root.resolve())
        except ValueError as exc:  # a stream key must not point outside the dataset
            raise MediaError(f"stream {rel!r} is outside the dataset", path=root) from exc
        if not video.is_file():
            raise MediaError(f"{rel} is missing", path=root)
        vr = _video_reader(self._config)
        inner = vr.streams(video)
        if not inner:
            raise MediaError(f"{rel}: no video stream", path=root)
        last_ns = -1
        for frame in vr.frames(video, inner[0], cancel=cancel):
            last_ns = frame.t_ns
            yield frame
        gaps = inner[0].extra.get("timing_gaps")
        if gaps:
            stream.extra["timing_gaps"] = gaps
        short = _short_video(stream, last_ns, _fps(_load_info(root)))
        if short:
            stream.extra["reader_notes"] = [f"{rel}: {short}"]


def _short_video(stream: StreamInfo, last_ns: int, fps: float | None) -> str | None:
    """Why a camera video decoded to less than the dataset's metadata gives it (its episodes' end),
    or None: a truncated video reads as a shorter one, and its lost episodes would read as new."""
    ends = [float(e[2]) for e in stream.extra.get("episodes") or []
            if isinstance(e, (list, tuple)) and len(e) == 3 and isinstance(e[2], (int, float))]
    expected = max((e for e in ends if e < float("inf")), default=None)
    if expected is None or last_ns < 0:
        return None
    decoded = last_ns / 1e9 + (1.0 / fps if fps else 0.0)
    if decoded >= expected - max(0.5, 2.0 / fps if fps else 0.5):
        return None
    lost = sorted({int(e[0]) for e in stream.extra.get("episodes") or [] if float(e[2]) > decoded + 1e-6})
    return (f"decoded {decoded:.1f} s of the {expected:.1f} s the dataset's metadata gives this video (truncated "
            f"or damaged?); episode{'s' if len(lost) != 1 else ''} {', '.join(map(str, lost[:10]))}"
            f"{' ...' if len(lost) > 10 else ''} read only in part or not at all; copy the video again")


def _fps(info: dict[str, Any]) -> float | None:
    fps = info.get("fps")
    return float(fps) if isinstance(fps, (int, float)) and fps > 0 else None
