"""TFRecord framing, read here rather than through TensorFlow (a 500 MB dependency).

Each record is ``uint64 length | uint32 masked CRC32C of the length bytes | data |
uint32 masked CRC32C of the data`` (little-endian); the mask is
``((crc >> 15) | (crc << 17)) + 0xa282ead8``. Both CRCs are checked; a length over the
cap is refused before anything is allocated; a truncated file or a CRC mismatch names
the file, the record number and its offset.

CRC32C comes from ``google-crc32c`` (Google's C implementation; the ``robotdata`` extra).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from overlap_desktop.core.fsutil import open_regular
from overlap_desktop.core.ingest.readers.arraydata import require
from overlap_desktop.errors import MediaError

__all__ = ["CapExceeded", "RecordSpan", "masked_crc", "read_record", "scan_records"]


class CapExceeded(MediaError):
    """A count past one of the caps overlap sets on RLDS data: the dataset is refused, not read
    in part as a damaged record would be (a cap bounds the work, so stopping at it is no answer)."""

_HEADER = 12
_MASK_DELTA = 0xA282EAD8


def masked_crc(data: bytes | memoryview, *, path: Path) -> int:
    """The masked CRC32C TFRecord stores for ``data``."""
    crc32c = require("google_crc32c", what="RLDS / TFDS datasets", path=path, package="google-crc32c")
    crc = int(crc32c.value(bytes(data)))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


class RecordSpan:
    """Where one record's data lies in its file."""

    __slots__ = ("index", "offset", "length")

    def __init__(self, index: int, offset: int, length: int) -> None:
        self.index, self.offset, self.length = index, offset, length


def _where(path: Path, index: int, offset: int) -> str:
    return f"record {index} (at byte {offset})"  # the error's path names the shard


def _header(fh: BinaryIO, path: Path, index: int, offset: int, size: int, max_record: int) -> int | None:
    head = fh.read(_HEADER)
    if not head:
        return None
    if len(head) < _HEADER:
        raise MediaError(f"{_where(path, index, offset)}: the file ends inside the record header (truncated)",
                         path=path)
    length, crc = struct.unpack("<QI", head)
    if masked_crc(head[:8], path=path) != crc:
        raise MediaError(f"{_where(path, index, offset)}: the length's CRC does not match (damaged file)", path=path)
    if length > max_record:
        raise MediaError(f"{_where(path, index, offset)}: declares {length} bytes, over the limit of {max_record} "
                         "per record", path=path)
    if offset + _HEADER + length + 4 > size:
        raise MediaError(f"{_where(path, index, offset)}: declares {length} bytes but the file ends first "
                         "(truncated)", path=path)
    return int(length)


def scan_records(path: Path, max_record: int, *, max_records: int) -> Iterator[RecordSpan]:
    """Walk a TFRecord file's record headers (length CRCs checked; data skipped).

    Raises:
        MediaError: truncated, a damaged header, a length over ``max_record``, or more than
            ``max_records`` records.
    """
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        offset = 0
        index = 0
        while True:
            length = _header(fh, path, index, offset, size, max_record)
            if length is None:
                return
            if index >= max_records:
                raise CapExceeded(f"{path.name} holds more than {max_records:,} records, the most one shard may hold "
                                 "(the cap on records per shard); split it into more shards", path=path)
            yield RecordSpan(index, offset + _HEADER, length)
            offset += _HEADER + length + 4
            fh.seek(offset)
            index += 1


def read_record(path: Path, span: RecordSpan) -> bytes:
    """One record's data, its CRC checked.

    Raises:
        MediaError: truncated (the file changed since it was scanned) or a CRC mismatch.
    """
    where = _where(path, span.index, span.offset - _HEADER)
    with open_regular(path) as fh:
        fh.seek(span.offset)
        data = fh.read(span.length + 4)
    if len(data) < span.length + 4:
        raise MediaError(f"{where}: the file ends inside the record (truncated)", path=path)
    body = memoryview(data)[: span.length]
    (crc,) = struct.unpack("<I", data[span.length:])
    if masked_crc(body, path=path) != crc:
        raise MediaError(f"{where}: the data's CRC does not match (damaged file)", path=path)
    return data[: span.length]
