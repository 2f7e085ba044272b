"""The MCAP container, read without letting the ``mcap`` library decompress anything.

:class:`_McapFile` lists topics and yields messages; every chunk is decompressed under
the caps of :mod:`overlap_desktop.core.ingest.readers._bounded`, and messages are found
through the chunks' message indexes when those are sound (the chunk is walked otherwise).
"""

from __future__ import annotations

import heapq
import io
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.core.ingest.readers._bounded import Budget
from overlap_desktop.core.ingest.readers._images import image_kind
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError

__all__ = ["MCAP_MAGIC", "McapParseError", "make_mcap_reader", "mcap_errors", "open_mcap", "reader_and_topics"]

log = logging.getLogger(__name__)

MCAP_MAGIC = b"\x89MCAP0\r\n"


def mcap_errors() -> tuple[type[BaseException], ...]:
    import zstandard
    from mcap.exceptions import McapError

    return (McapError, zstandard.ZstdError, EOFError, ValueError, KeyError, OSError, struct.error)



class open_mcap:
    """Open a file for reading, turning OS errors into MediaError."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: Any = None

    def __enter__(self) -> Any:
        from overlap_desktop.core.fsutil import open_regular

        try:
            self.fh = open_regular(self.path)  # never a FIFO or device: they block or never end
        except OSError as exc:
            raise MediaError(f"cannot open: {exc.strerror or exc}", path=self.path) from exc
        head = self.fh.read(len(MCAP_MAGIC))
        if head != MCAP_MAGIC:
            self.fh.close()
            raise MediaError("not an MCAP file (bad magic bytes)", path=self.path)
        self.fh.seek(0)
        return self.fh

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


def _record_cap(limits: ReaderLimits) -> int:
    """Largest top-level MCAP record (a compressed chunk) accepted before reading it."""
    return max(limits.max_message_bytes * 4, 64 * 1024 * 1024)


_OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE, _OP_CHUNK, _OP_MESSAGE_INDEX = 0x03, 0x04, 0x05, 0x06, 0x07
_REC = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")  # channel id, sequence, log time, publish time
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")


def make_mcap_reader(fh: Any, limits: ReaderLimits, path: Path, budget: Budget | None = None) -> _McapFile:
    """The messages of an MCAP file, chunks decompressed by us under ``budget``.

    Raises:
        MediaError: a chunk declares an uncompressed size over the cap (checked before
            anything is decompressed).
    """
    return _McapFile(fh, limits, path, budget or Budget(path, limits))


class _McapFile:
    """Reads an MCAP's messages without letting the ``mcap`` library decompress anything.

    The library parses the footer, summary and top-level records; every chunk is
    decompressed by :class:`~overlap_desktop.core.ingest.readers._bounded.Budget` (bounded
    steps, per-chunk and per-file caps) and the messages are cut out of it here.

    With an intact summary (a *seeking* file) only the chunks holding the topic are
    read, and only the messages its message indexes point at are parsed (so a chunk
    stuffed with millions of tiny records of other channels costs nothing to walk);
    chunks overlapping in time are merged in log-time order while the messages held
    stay under one chunk's cap. Without a summary (a truncated recording) the file is
    scanned in file order, records counted against the budget, and whatever precedes
    the truncation point is kept.
    """

    def __init__(self, fh: Any, limits: ReaderLimits, path: Path, budget: Budget) -> None:
        from mcap.reader import SeekingReader

        self.fh = fh
        self.path = path
        self.budget = budget
        self.record_cap = _record_cap(limits)
        self.file_size = os.fstat(fh.fileno()).st_size
        summary = None
        try:
            summary = SeekingReader(fh, validate_crcs=True, record_size_limit=self.record_cap).get_summary()
        except Exception:
            summary = None
        # A summary without chunk indexes cannot say where messages are: scan instead.
        self.summary = summary if summary is not None and summary.chunk_indexes else None
        if self.summary is not None:
            for ci in self.summary.chunk_indexes:
                budget.check_declared(ci.uncompressed_size, f"the chunk at byte {ci.chunk_start_offset}")

    # ------------------------------------------------------------------ topics

    def topics(self) -> dict[str, tuple[Any, Any, int | None]]:
        """topic -> (schema, channel, message count or None) of every channel."""
        out: dict[str, tuple[Any, Any, int | None]] = {}
        if self.summary is None:
            for schema, channel, _ in self._linear(None):
                prev = out.get(channel.topic)
                out[channel.topic] = (schema, channel, ((prev[2] or 0) if prev else 0) + 1)
            return out
        summary = self.summary
        counts = summary.statistics.channel_message_counts if summary.statistics else {}
        for cid, channel in sorted(summary.channels.items()):
            if channel.topic not in out:
                out[channel.topic] = (summary.schemas.get(channel.schema_id), channel, counts.get(cid))
        return out

    # ------------------------------------------------------------------ messages

    def iter_messages(self, topics: list[str], reverse: bool = False) -> Iterator[tuple[Any, Any, Any]]:
        """``(schema, channel, message)`` of ``topics`` in log-time order (file order when
        scanning a summary-less file); ``reverse=True`` yields only the last message."""
        if self.summary is None:
            if reverse:
                last = None
                for item in self._linear(set(topics)):
                    last = item
                if last is not None:
                    yield last
                return
            yield from self._linear(set(topics))
            return
        summary = self.summary
        ids = {cid for cid, ch in summary.channels.items() if ch.topic in topics}
        chunks = [ci for ci in summary.chunk_indexes
                  if not ci.message_index_offsets or ids & set(ci.message_index_offsets)]
        if reverse:
            if not chunks:
                return
            last_chunk = max(chunks, key=lambda ci: (ci.message_end_time, ci.chunk_start_offset))
            best = None
            for item in self._chunk_messages(last_chunk, ids):
                if best is None or item[2].log_time >= best[2].log_time:
                    best = item
            if best is not None:
                yield best
            return
        chunks.sort(key=lambda ci: (ci.message_start_time, ci.chunk_start_offset))
        heap: list[tuple[int, int, tuple[Any, Any, Any]]] = []
        held = 0
        seq = 0
        i = 0
        while i < len(chunks) or heap:
            # Load every chunk that may hold a message older than the oldest one held, as
            # long as what is held stays under one chunk's cap (hostile overlaps then come
            # out in file order; the frame loop never lets time step backwards).
            while i < len(chunks) and (not heap or chunks[i].message_start_time <= heap[0][0]) \
                    and (not heap or held <= self.budget.chunk_cap):
                for item in self._chunk_messages(chunks[i], ids):
                    heapq.heappush(heap, (item[2].log_time, seq, item))
                    held += len(item[2].data)
                    seq += 1
                i += 1
            if not heap:
                continue
            _, _, item = heapq.heappop(heap)
            held -= len(item[2].data)
            yield item

    def validate_all(self) -> None:
        """Decompress and walk every chunk under the budget, keeping nothing (used before
        handing the file to a library that would decompress it without caps).

        Raises:
            MediaError: over a cap.
            McapParseError: damaged structure.
        """
        if self.summary is None:
            for _ in self._linear(set()):
                pass
            return
        for ci in self.summary.chunk_indexes:
            where = f"the chunk at byte {ci.chunk_start_offset}"
            data = self._decompress(self._read_chunk(ci.chunk_start_offset), where)
            for _ in self._walk(memoryview(data), {}, {}, set(), where):
                pass

    def _schema_channel(self, cid: int) -> tuple[Any, Any]:
        assert self.summary is not None
        channel = self.summary.channels.get(cid)
        if channel is None:
            raise McapParseError(f"no channel record found with id {cid}")
        schema = self.summary.schemas.get(channel.schema_id) if channel.schema_id else None
        return schema, channel

    def _read_chunk(self, offset: int, length: int | None = None) -> Any:
        """The Chunk record at ``offset`` (compressed data not yet touched)."""
        from mcap.data_stream import ReadDataStream
        from mcap.records import Chunk

        self.fh.seek(offset)
        head = self.fh.read(9)
        if len(head) < 9:
            raise McapParseError(f"chunk at byte {offset} is cut short")
        op, rec_len = _REC.unpack(head)
        if op != _OP_CHUNK:
            raise McapParseError(f"no chunk record at byte {offset} (opcode {op:#x})")
        if rec_len > min(self.record_cap, self.file_size - offset - 9):
            raise McapParseError(f"chunk at byte {offset} declares {rec_len} bytes, past the end of the file "
                                 "or over the record limit")
        return Chunk.read(ReadDataStream(io.BytesIO(self.fh.read(rec_len))))

    def _decompress(self, chunk: Any, where: str) -> bytes | bytearray:
        data = self.budget.decompress(chunk.data, chunk.compression, declared=chunk.uncompressed_size,
                                      what=where)
        if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
            raise McapParseError(f"{where}: checksum mismatch (damaged data)")
        return data

    def _chunk_messages(self, ci: Any, ids: set[int]) -> list[tuple[Any, Any, Any]]:
        """Messages of channels ``ids`` in one indexed chunk, in log-time order.

        The chunk's message indexes say where the messages are; when they are missing or
        damaged (the chunk itself may be fine) the chunk is walked instead, as the ``mcap``
        library always does, with its records counted against the budget.
        """
        where = f"the chunk at byte {ci.chunk_start_offset}"
        offsets: list[tuple[int, int]] | None = []
        wanted = [cid for cid in ids if cid in ci.message_index_offsets]
        try:
            for cid in wanted:
                offsets.extend(self._message_index(ci.message_index_offsets[cid], cid))  # type: ignore[union-attr]
        except (McapParseError, struct.error) as exc:
            log.debug("%s: %s: damaged message index (%s); walking the chunk", self.path, where, exc)
            offsets = None
        if ci.message_index_offsets and offsets == []:
            return []
        chunk = self._read_chunk(ci.chunk_start_offset)
        data = self._decompress(chunk, where)
        if offsets is not None and ci.message_index_offsets:
            try:
                return self._indexed(memoryview(data), offsets, ids, where)
            except McapParseError as exc:
                log.debug("%s: %s: %s; walking the chunk", self.path, where, exc)
        return sorted(self._walk(memoryview(data), {}, {}, ids, where), key=lambda m: m[2].log_time)

    def _indexed(self, mv: memoryview, offsets: list[tuple[int, int]], ids: set[int],
                 where: str) -> list[tuple[Any, Any, Any]]:
        """The messages at ``offsets`` (from message indexes) of a decompressed chunk."""
        out = []
        taken = 0
        # One message per offset, and together no more than the chunk holds: indexes pointing
        # many times at one big message (or at overlapping ones) would otherwise multiply it.
        for off, _ in sorted({off: t for t, off in offsets}.items(), key=lambda kv: (kv[1], kv[0])):
            item = self._message_at(mv, off, where)
            if item[2].channel_id not in ids:
                raise McapParseError(f"{where}: its message index points at another channel's message")
            taken += len(item[2].data)
            if taken > len(mv):
                raise McapParseError(f"{where}: its message index points at overlapping messages")
            self.budget.charge(len(item[2].data), where)
            out.append(item)
        return out

    def _message_index(self, offset: int, cid: int) -> list[tuple[int, int]]:
        self.fh.seek(offset)
        head = self.fh.read(9)
        if len(head) < 9:
            raise McapParseError(f"message index at byte {offset} is cut short")
        op, rec_len = _REC.unpack(head)
        if op != _OP_MESSAGE_INDEX or rec_len < 6 or rec_len > self.file_size - offset - 9:
            raise McapParseError(f"no valid message index at byte {offset}")
        body = self.fh.read(rec_len)
        (channel_id,) = _U16.unpack_from(body, 0)
        (n,) = _U32.unpack_from(body, 2)
        if channel_id != cid or n % 16 or 6 + n > len(body):
            raise McapParseError(f"message index at byte {offset} is damaged")
        self.budget.count_records(n // 16)
        return [struct.unpack_from("<QQ", body, 6 + k) for k in range(0, n, 16)]

    def _message_at(self, mv: memoryview, off: int, where: str) -> tuple[Any, Any, Any]:
        from mcap.records import Message

        if off + 9 + _MSG.size > len(mv):
            raise McapParseError(f"{where}: a message index points past the chunk's end")
        op, rec_len = _REC.unpack_from(mv, off)
        end = off + 9 + rec_len
        if op != _OP_MESSAGE or rec_len < _MSG.size or end > len(mv):
            raise McapParseError(f"{where}: a message index points at no message")
        cid, sequence, log_time, publish_time = _MSG.unpack_from(mv, off + 9)
        schema, channel = self._schema_channel(cid)
        return schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                        publish_time=publish_time, data=bytes(mv[off + 9 + _MSG.size:end]))

    def _walk(self, mv: memoryview, schemas: dict[int, Any], channels: dict[int, Any], ids: set[int] | None,
              where: str, topics: set[str] | None = None) -> Iterator[tuple[Any, Any, Any]]:
        """Messages among the records of a decompressed chunk, in file order.

        ``ids`` selects channels by id (seeking files: channels come from the summary);
        ``topics`` selects them by topic (scans: ``schemas``/``channels`` fill up as
        their records go by).
        """
        from mcap.data_stream import ReadDataStream
        from mcap.records import Channel, Message, Schema

        i, n = 0, len(mv)
        while i < n:
            self.budget.count_records()
            if i + 9 > n:
                raise McapParseError(f"{where}: a record is cut short")
            op, rec_len = _REC.unpack_from(mv, i)
            body = i + 9
            end = body + rec_len
            if end > n:
                raise McapParseError(f"{where}: a record runs past the end of its chunk")
            if op == _OP_MESSAGE:
                if rec_len < _MSG.size:
                    raise McapParseError(f"{where}: a message record is too short")
                cid, sequence, log_time, publish_time = _MSG.unpack_from(mv, body)
                if self.summary is not None:
                    if ids is not None and cid in ids:
                        schema, channel = self._schema_channel(cid)
                        yield schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                                       publish_time=publish_time,
                                                       data=bytes(mv[body + _MSG.size:end]))
                else:
                    channel = channels.get(cid)
                    if channel is None:
                        raise McapParseError(f"no channel record found with id {cid}")
                    if topics is None or channel.topic in topics:
                        schema = schemas.get(channel.schema_id) if channel.schema_id else None
                        yield schema, channel, Message(channel_id=cid, sequence=sequence, log_time=log_time,
                                                       publish_time=publish_time,
                                                       data=bytes(mv[body + _MSG.size:end]))
            elif op in (_OP_SCHEMA, _OP_CHANNEL):
                stream = ReadDataStream(io.BytesIO(bytes(mv[body:end])))
                try:
                    if op == _OP_SCHEMA:
                        schema = Schema.read(stream)
                        schemas[schema.id] = schema
                    else:
                        channel = Channel.read(stream)
                        if channel.schema_id and channel.schema_id not in schemas:
                            raise McapParseError(f"no schema record found with id {channel.schema_id}")
                        channels[channel.id] = channel
                except (struct.error, UnicodeDecodeError, EOFError) as exc:
                    raise McapParseError(f"{where}: damaged schema or channel record: {exc}") from exc
            i = end

    def _linear(self, topics: set[str] | None) -> Iterator[tuple[Any, Any, Any]]:
        """Scan the file from the start (summary-less files); a truncated tail ends the scan."""
        from mcap.exceptions import EndOfFile
        from mcap.records import Channel, Chunk, Message, Schema
        from mcap.stream_reader import StreamReader

        self.fh.seek(0)
        schemas: dict[int, Any] = {}
        channels: dict[int, Any] = {}
        reader = StreamReader(self.fh, emit_chunks=True, validate_crcs=False, record_size_limit=self.record_cap)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except EndOfFile:
                return  # truncated recording: keep what was read
            except struct.error:
                return  # cut inside a record header
            self.budget.count_records()
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None:
                    raise McapParseError(f"no channel record found with id {record.channel_id}")
                if topics is None or channel.topic in topics:
                    yield (schemas.get(channel.schema_id) if channel.schema_id else None), channel, record
            elif isinstance(record, Chunk):
                where = "a chunk"
                data = self._decompress(record, where)
                yield from self._walk(memoryview(data), schemas, channels, None, where, topics)


class McapParseError(ValueError):
    """Damaged MCAP structure found while cutting messages out of a chunk."""


def _image_topics(reader: _McapFile) -> dict[str, tuple[str, str, str, int | None]]:
    """topic -> (kind, schema name, message encoding, message count) for image topics."""
    out: dict[str, tuple[str, str, str, int | None]] = {}
    for topic, (schema, channel, count) in reader.topics().items():
        kind = image_kind(schema.name) if schema is not None else None
        if kind:
            out[topic] = (kind, schema.name, channel.message_encoding, count)
    return out


def reader_and_topics(fh: Any, path: Path, limits: ReaderLimits, budget: Budget | None
                       ) -> tuple[_McapFile, dict[str, tuple[str, str, str, int | None]]]:
    """Open the MCAP structure and list its image topics; damage becomes a :class:`MediaError`."""
    try:
        reader = make_mcap_reader(fh, limits, path, budget)
        return reader, _image_topics(reader)
    except mcap_errors() as exc:
        raise MediaError(f"corrupt or truncated MCAP file: {exc}", path=path) from exc
