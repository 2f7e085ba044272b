"""ROS 1 ``.bag`` files and rosbag2 folders (sqlite3 or mcap storage) via ``rosbags``.

Every image topic (``sensor_msgs/Image``, ``sensor_msgs/CompressedImage`` and the
foxglove_msgs image/video types) is a stream keyed by its topic name, decoded with the
same helpers as the MCAP reader (:mod:`overlap_desktop.core.ingest.readers._images`), so a
topic gives the same pixels whichever container it was recorded in.

A rosbag2 recording is a *folder* holding ``metadata.yaml``; it is claimed here. A
lone ``.mcap`` file goes to the MCAP reader instead.

``rosbags`` is in the ``ros`` extra: without it, opening a bag raises
:class:`~overlap_desktop.errors.MissingDependencyError` naming
``pip install "overlap-desktop[ros]"``.

Time and bad messages behave as in the MCAP reader: receive (log) time relative to the
topic's first message, or the header stamp with ``readers.mcap_time = "header"``;
undecodable messages are skipped and counted, a topic with no decodable message is a
:class:`~overlap_desktop.errors.MediaError`.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from overlap_desktop.core.fsutil import file_kind, is_regular_file, read_regular
from overlap_desktop.core.ingest.frames import noting_gaps
from overlap_desktop.core.ingest.readers._bounded import Budget, BudgetBook, count_stream
from overlap_desktop.core.ingest.readers._decoders import ImageError
from overlap_desktop.core.ingest.readers._images import (
    ConfigurableReader,
    ImageMessage,
    ReaderSettings,
    describe_codec,
    image_kind,
    image_size,
    message_fields,
    topic_frames,
)
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame
from overlap_desktop.errors import MediaError, MissingDependencyError

__all__ = ["RosbagReader", "ROS_EXTRA_HINT"]

log = logging.getLogger(__name__)

ROS_EXTRA_HINT = 'pip install "overlap-desktop[ros]"'
ROSBAG1_MAGIC = b"#ROSBAG V2.0\n"
_PEEK = 5


def _anyreader() -> Any:
    try:
        from rosbags.highlevel import AnyReader
    except ImportError as exc:
        raise MissingDependencyError(
            f"reading ROS bags needs the optional 'ros' extra; install it with: {ROS_EXTRA_HINT}") from exc
    return AnyReader


_apsw_guard = threading.local()


def _restore_rosbags_sql_dialect(connection: Any) -> None:
    """apsw connection hook: give rosbags' own SQLite connections back double-quoted strings.

    The index applies ``apsw.bestpractice`` process-wide, which turns double-quoted string
    literals off for *every* apsw connection; rosbags' sqlite3 storage queries
    ``type="table"`` and would fail to open any rosbag2 .db3 once an index was opened.
    Only connections opened by this thread inside :meth:`RosbagReader._open` are touched.
    """
    if getattr(_apsw_guard, "active", False):
        import apsw

        connection.config(apsw.SQLITE_DBCONFIG_DQS_DML, 1)
        connection.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 1)


@contextmanager
def _rosbags_sqlite_dialect() -> Iterator[None]:
    try:
        import apsw
    except ImportError:  # rosbags without apsw: nothing to undo
        yield
        return
    hooks = apsw.connection_hooks
    # Run after any hook installed since (bestpractice appends its own).
    if not hooks or hooks[-1] is not _restore_rosbags_sql_dialect:
        if _restore_rosbags_sql_dialect in hooks:
            hooks.remove(_restore_rosbags_sql_dialect)
        hooks.append(_restore_rosbags_sql_dialect)
    _apsw_guard.active = True
    try:
        yield
    finally:
        _apsw_guard.active = False


def _rosbags_errors() -> tuple[type[BaseException], ...]:
    _anyreader()  # the missing-extra message comes first
    from rosbags.highlevel import AnyReaderError
    from rosbags.rosbag1 import ReaderError as Ros1ReaderError
    from rosbags.rosbag2 import ReaderError as Ros2ReaderError

    # The bag readers' own errors reach us directly from messages() (an index entry pointing
    # where no record starts, say), not wrapped in AnyReaderError.
    return (AnyReaderError, Ros1ReaderError, Ros2ReaderError, OSError, EOFError, ValueError, KeyError,
            AssertionError)


class RosbagReader(ConfigurableReader):
    """Reader for ROS 1 bags and rosbag2 folders.

    Args:
        config: Configuration to take ``readers.*`` options from; ``None`` reads the
            effective configuration when a file is opened.
        settings: Explicit settings (overrides ``config``).
    """

    name = "rosbag"
    description = "ROS 1 .bag files and rosbag2 folders (sqlite3 or mcap storage), image topics"
    extensions = (".bag",)

    def __init__(self, *, config: Any | None = None, settings: ReaderSettings | None = None) -> None:
        super().__init__(config=config, settings=settings)
        self._budgets = BudgetBook()

    def can_open(self, path: Path) -> bool:
        path = Path(path)
        if path.is_dir():
            return is_regular_file(path / "metadata.yaml")
        if not is_regular_file(path):
            return False
        if path.suffix.lower() == ".bag":
            return True
        try:
            return read_regular(path, len(ROSBAG1_MAGIC)) == ROSBAG1_MAGIC
        except OSError:
            return False

    @contextmanager
    def _open(self, path: Path, budget: Budget | None = None) -> Iterator[Any]:
        any_reader = _anyreader()
        from rosbags.typesys import Stores, get_typestore

        errors = _rosbags_errors()
        limits = self.settings().limits
        if budget is None:
            budget = self._budgets.get(path, limits, _data_bytes(path))
        if not getattr(budget, "prevalidated", False):
            # rosbags decompresses rosbag2 data (whole files, MCAP chunks) without caps, some of
            # it inside open(): check it all under our caps first, once per file.
            try:
                _prevalidate(path, limits, budget)
            except (OSError, ValueError) as exc:
                raise MediaError(f"cannot open the recording: {exc}", path=path) from exc
            budget.prevalidated = True  # type: ignore[attr-defined]
        try:
            # Old rosbag2 files carry no message definitions; the standard ROS 2 types fill in.
            with _rosbags_sqlite_dialect():
                reader = any_reader([path], default_typestore=get_typestore(Stores.LATEST))
                reader.open()
        except FileNotFoundError as exc:
            raise MediaError(f"cannot open the recording: {exc}", path=path) from exc
        except errors as exc:
            raise MediaError(f"cannot open the recording: {exc}", path=path) from exc
        _bound_decompression(reader, budget)
        try:
            yield reader
        finally:
            try:
                reader.close()
            except errors:  # already failing: keep the first error
                pass

    def streams(self, path: Path) -> list[StreamInfo]:
        path = Path(path)
        settings = self.settings()
        errors = _rosbags_errors()
        out: list[StreamInfo] = []
        problems: list[str] = []
        budget = self._budgets.start(path, settings.limits, _data_bytes(path))
        with self._open(path, budget) as reader:
            topics = _image_topics(reader)
            if not topics:
                raise MediaError("no image topic (sensor_msgs Image/CompressedImage or foxglove_msgs "
                                 "image/video) in this recording", path=path)
            for topic, conns in topics.items():
                kind = image_kind(conns[0].msgtype) or "raw"
                try:
                    msg = _peek(reader, conns, kind, settings)
                except ImageError as exc:
                    problems.append(f"{topic}: {exc}")
                    continue
                except errors as exc:
                    raise MediaError(f"corrupt recording (topic {topic}): {exc}", path=path) from exc
                size = image_size(msg, settings.limits)
                count = sum(int(getattr(c, "msgcount", 0) or 0) for c in conns) or None
                duration_ns = int(getattr(reader, "duration", 0) or 0)
                rate = (count - 1) / (duration_ns / 1e9) if count and count > 1 and duration_ns > 0 else None
                out.append(StreamInfo(
                    key=topic,
                    width=size[0] if size else None,
                    height=size[1] if size else None,
                    duration_s=None,
                    codec=describe_codec(msg),
                    rate_hint=rate,
                    extra={"message_type": conns[0].msgtype, "kind": kind, "messages": count,
                           "time_source": settings.time_source,
                           "format": "rosbag1" if not getattr(reader, "is2", True) else "rosbag2"},
                ))
        if not out:
            raise MediaError("no decodable image topic: " + "; ".join(problems), path=path)
        for p in problems:
            log.warning("%s: skipped image topic %s", path, p)
        return out

    def frames(self, path: Path, stream: StreamInfo, *,
               cancel: CancelCallback | None = None) -> Iterator[TimedFrame]:
        path = Path(path)
        settings = self.settings()
        errors = _rosbags_errors()
        topic = stream.key
        with self._open(path) as reader:
            topics = _image_topics(reader)
            if topic not in topics:
                raise MediaError(f"no image topic {topic!r} in this recording", path=path)
            conns = topics[topic]
            kind = image_kind(conns[0].msgtype) or "raw"
            budget = self._budgets.get(path, settings.limits, _data_bytes(path))
            items = ((int(log_time), lambda conn=conn, raw=raw: _decode(reader, conn, raw, kind, settings))
                     for conn, log_time, raw in _charged(reader.messages(connections=conns), budget))
            yield from noting_gaps(topic_frames(items, path=path, topic=topic, kind=kind, settings=settings,
                                                cancel=cancel, errors=errors, corrupt="corrupt recording data"),
                                   extra=stream.extra, path=path, what=f"topic {topic}")


def _charged(messages: Iterator[tuple[Any, int, bytes]], budget: Budget) -> Iterator[tuple[Any, int, bytes]]:
    """Count every message's bytes against the file's budget (each one is a copy out of its
    chunk: an index naming one big message many times must not cost unbounded copying)."""
    for conn, log_time, raw in messages:
        budget.charge(len(raw), "its messages")
        yield conn, log_time, raw


def _image_topics(reader: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for conn in reader.connections:
        if image_kind(conn.msgtype):
            out.setdefault(conn.topic, []).append(conn)
    return out


def _decode(reader: Any, conn: Any, raw: bytes, kind: str, settings: ReaderSettings) -> ImageMessage:
    if len(raw) > settings.limits.max_message_bytes:
        raise ImageError(f"message of {len(raw)} bytes is over the limit of "
                         f"{settings.limits.max_message_bytes}")
    from overlap_desktop.core.ingest.readers._mcap_messages import decompress_payload

    # rosbag2 "compression_mode: message" payloads (left compressed by _bound_decompression).
    payload = decompress_payload(raw, settings.limits)
    try:
        obj = reader.deserialize(payload, conn.msgtype)
    except Exception as exc:  # rosbags raises assorted types on malformed bytes
        raise ImageError(f"cannot parse message: {type(exc).__name__}: {exc}") from exc
    return message_fields(obj, kind)


def _peek(reader: Any, conns: list[Any], kind: str, settings: ReaderSettings) -> ImageMessage:
    """First decodable message of a topic (tries a few), for the stream description."""
    problem: ImageError | None = None
    for n, (conn, _, raw) in enumerate(reader.messages(connections=conns)):
        try:
            msg = _decode(reader, conn, raw, kind, settings)
            image_size(msg, settings.limits)
            return msg
        except ImageError as exc:
            problem = problem or exc
            if n + 1 >= _PEEK:
                break
    raise problem or ImageError("the topic has no messages")


# --------------------------------------------------------------------------- bounded decompression

_MAX_METADATA = 1024 * 1024


def _bag2_metadata(folder: Path) -> dict[str, Any] | None:
    """``rosbag2_bagfile_information`` of a rosbag2 folder, or ``None`` if unreadable (rosbags
    then reports the problem in its own words)."""
    meta = folder / "metadata.yaml"
    try:
        text = read_regular(meta, _MAX_METADATA + 1)
    except OSError as exc:
        raise MediaError(f"metadata.yaml: cannot read: {exc.strerror or exc}", path=folder) from exc
    if len(text) > _MAX_METADATA:
        raise MediaError(f"metadata.yaml is over {_MAX_METADATA} bytes; it is not a rosbag2 description",
                         path=folder)
    from ruamel.yaml import YAML

    try:
        _check_yaml_shape(YAML(typ="safe").parse(text), folder)
        data = YAML(typ="safe").load(text)
        info = data["rosbag2_bagfile_information"]
    except MediaError:
        raise
    except Exception:
        return None
    if not isinstance(info, dict):
        return None
    for key, kind, ok in (("relative_file_paths", "a list of file names",
                           lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
                          ("compression_mode", "text", lambda v: isinstance(v, str)),
                          ("storage_identifier", "text", lambda v: isinstance(v, str))):
        if info.get(key) is not None and not ok(info[key]):
            raise MediaError(f"metadata.yaml: {key} must be {kind}, not {type(info[key]).__name__}; this is not "
                             "a rosbag2 description overlap can read", path=folder)
    return info


#: YAML nodes a ``metadata.yaml`` may hold: a real one lists a few per topic and file
#: (a day-long recording split into 1,000 files and 100 topics holds ~10,000).
_MAX_METADATA_NODES = 200_000


def _check_yaml_shape(events: Any, folder: Path) -> None:
    """Refuse YAML aliases and more than :data:`_MAX_METADATA_NODES` nodes, from the parser's
    events, before anything is built.

    An alias (``*name``) repeats an anchored node: nested, a 1.6 KB file describes a list of
    10^9 file names, which took 1.6 GB and 50 s before this check (issue 36). rosbag2 never
    writes aliases, so any alias is refused, not expanded.
    """
    nodes = 0
    for event in events:
        kind = type(event).__name__
        if kind == "AliasEvent":
            raise MediaError("metadata.yaml uses a YAML alias (*name); rosbag2 never writes them, and aliases "
                             "can make a small file describe billions of entries, so it was not read", path=folder)
        if kind in ("ScalarEvent", "SequenceStartEvent", "MappingStartEvent"):
            nodes += 1
            if nodes > _MAX_METADATA_NODES:
                raise MediaError(f"metadata.yaml holds over {_MAX_METADATA_NODES} entries; this is not a rosbag2 "
                                 "description overlap can read", path=folder)


def _bag2_files(folder: Path, info: dict[str, Any]) -> list[Path]:
    names = info.get("relative_file_paths") or []
    if not isinstance(names, list):
        return []
    from pathlib import PurePath

    return [folder / PurePath(str(x)).name for x in names]


def _data_bytes(path: Path) -> int:
    """Bytes of a bag file, or of the data files of a rosbag2 folder (the budget's base)."""
    try:
        if not path.is_dir():
            return os.stat(path).st_size
        total = 0
        for entry in os.scandir(path):
            if entry.is_file():
                total += entry.stat().st_size
        return total
    except OSError:
        return 0


def _prevalidate(path: Path, limits: ReaderLimits, budget: Budget) -> None:
    """Check a rosbag2 folder's data under our caps before rosbags opens it.

    Every data file must be a regular file (a FIFO would block rosbags forever). With
    ``compression_mode: file`` each file is decompressed in bounded steps, keeping nothing,
    to bound what rosbags would write to disk. MCAP storage files have every chunk
    decompressed and walked under the budget, so rosbags (which decompresses them whole,
    some during ``open()``) only sees chunks we checked.

    Raises:
        MediaError: a cap is passed, or a data file is not a regular file.
    """
    if not path.is_dir():
        return
    info = _bag2_metadata(path)
    if info is None:
        return
    mode = str(info.get("compression_mode") or "").lower()
    storage = str(info.get("storage_identifier") or "")
    for f in _bag2_files(path, info):
        try:
            st = os.stat(f)
        except FileNotFoundError:
            continue  # rosbags names missing files
        if not stat.S_ISREG(st.st_mode):
            raise MediaError(f"{f.name}: {file_kind(st.st_mode)} is not a regular file; only regular files "
                             "are read", path=path)
        is_mcap = storage == "mcap" or f.suffix == ".mcap" or f.name.endswith(".mcap.zstd")
        if mode == "file" and is_mcap:
            # rosbags unpacks the file to disk, then decompresses its MCAP chunks unchecked:
            # unpack it ourselves (bounded by the budget), then check every chunk inside too,
            # each against the chunk cap and the unpacked file's own total.
            import tempfile

            with tempfile.TemporaryFile() as unpacked:
                size = count_stream(budget, f, "zstd", f.name, sink=unpacked)
                unpacked.seek(0)
                _validate_mcap(unpacked, limits, f, Budget(f, limits, size), path)
        elif mode == "file":
            count_stream(budget, f, "zstd", f.name)
        elif is_mcap:
            with open(f, "rb") as fh:
                _validate_mcap(fh, limits, f, budget, path)


def _validate_mcap(fh: Any, limits: ReaderLimits, f: Path, budget: Budget, path: Path) -> None:
    """Decompress and walk every chunk of an MCAP data file under ``budget`` and the caps.

    Raises:
        MediaError: a cap is passed, or the data is corrupt.
    """
    from overlap_desktop.core.ingest.readers._mcap_file import McapParseError, make_mcap_reader

    try:
        make_mcap_reader(fh, limits, f, budget).validate_all()
    except McapParseError as exc:
        raise MediaError(f"{f.name}: corrupt MCAP data: {exc}", path=path) from exc


def _bound_decompression(reader: Any, budget: Budget) -> None:
    """Make an opened rosbags reader decompress through our caps.

    ROS 1 chunks (bz2, lz4) get our bounded decompressor in place of rosbags' one-shot one
    (each chunk is decompressed when first needed, at most one held at a time). rosbag2
    per-message zstd is left to :func:`_decode` (capped per message). Only this reader
    object is changed; nothing global.
    """
    try:
        from rosbags.rosbag1 import reader as r1
    except ImportError:  # pragma: no cover - rosbags layout changed
        return
    names = {id(fn): name for name, fn in r1.decompressors.items()}
    for sub in getattr(reader, "readers", []):
        indexes = getattr(sub, "indexes", None)
        if isinstance(indexes, dict):
            # An index listing one message many times would make rosbags copy it each time.
            for cid, entries in list(indexes.items()):
                indexes[cid] = sorted(set(entries))
        chunks = getattr(sub, "chunks", None)
        if isinstance(chunks, dict):
            for pos, chunk in list(chunks.items()):
                name = names.get(id(chunk.decompressor))
                if name is None:
                    raise MediaError("this ROS bag uses a chunk compression overlap cannot bound", path=budget.path)
                chunks[pos] = chunk._replace(decompressor=budget.decompressor(name, f"the chunk at byte {pos}"))
        # rosbag2: the reader's storage object holds the metadata its messages() consults.
        for holder in (sub, getattr(sub, "storage", None)):
            meta = getattr(holder, "metadata", None)
            if holder is not None and meta is not None and getattr(meta, "compression_mode", None) == "message":
                holder.metadata = meta._replace(compression_mode=None)
