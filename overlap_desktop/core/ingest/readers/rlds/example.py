"""A minimal, bounded decoder for ``tf.train.Example`` (protobuf wire format).

Only what an RLDS episode needs::

    Example    { Features features = 1; }
    Features   { map<string, Feature> feature = 1; }      // entries: key = 1, value = 2
    Feature    { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    BytesList  { repeated bytes value = 1; }
    FloatList  { repeated float value = 1 [packed]; }
    Int64List  { repeated int64 value = 1 [packed]; }

Every length is checked against what remains of its enclosing message before it is
used, varints are at most 10 bytes, nesting is fixed (no recursion), and byte values
are returned as zero-copy views of the record. Features not asked for are skipped
without being decoded.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["ExampleCapError", "MAX_VALUES", "ExampleError", "Feature", "parse_example"]


#: Values one feature may list: an episode's steps (a camera's frames). The list is held in
#: memory, and an empty value costs two stored bytes, so the count is capped, not the bytes.
MAX_VALUES = 200_000


class ExampleError(ValueError):
    """The record is not a well-formed ``tf.train.Example``."""


class ExampleCapError(ExampleError):
    """A feature lists more values than :data:`MAX_VALUES`."""


class Feature:
    """One decoded feature: ``kind`` is ``"bytes"``, ``"float"``, ``"int64"`` or ``""`` (empty)."""

    __slots__ = ("kind", "values", "count")

    def __init__(self, kind: str, values: list[memoryview] | np.ndarray | None, count: int) -> None:
        self.kind, self.values, self.count = kind, values, count


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(10):
        if pos >= end:
            raise ExampleError("a number runs past the end of its message")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if i == 9:
            break
    raise ExampleError("a number is longer than 10 bytes")


def _fields(buf: memoryview, pos: int, end: int) -> Iterable[tuple[int, int, int, int]]:
    """``(field number, wire type, start, stop)`` of each field in ``buf[pos:end]``; for a
    varint ``start`` is the value and ``stop`` the position after it."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield field, wire, value, pos
        elif wire == 2:
            n, pos = _varint(buf, pos, end)
            if n > end - pos:
                raise ExampleError(f"a field declares {n} bytes but only {end - pos} remain")
            yield field, wire, pos, pos + n
            pos += n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if n > end - pos:
                raise ExampleError("a fixed-size field runs past the end of its message")
            yield field, wire, pos, pos + n
            pos += n
        else:
            raise ExampleError(f"unsupported protobuf wire type {wire}")


def _feature(buf: memoryview, pos: int, end: int, *, values: bool) -> Feature:
    for field, wire, a, b in _fields(buf, pos, end):
        if wire != 2 or field not in (1, 2, 3):
            continue
        if field == 1:
            items: list[memoryview] = []
            for f, w, s, t in _fields(buf, a, b):
                if f == 1 and w == 2:
                    if len(items) >= MAX_VALUES:
                        raise ExampleCapError(_too_many())
                    items.append(buf[s:t])
            return Feature("bytes", items if values else None, len(items))
        if field == 2:
            raw = bytearray()
            for f, w, s, t in _fields(buf, a, b):
                if f == 1 and w in (2, 5):
                    raw += buf[s:t]
            if len(raw) % 4:
                raise ExampleError("a float list is not a whole number of floats")
            arr = np.frombuffer(bytes(raw), "<f4")
            return Feature("float", arr if values else None, arr.size)
        ints: list[int] = []
        for f, w, s, t in _fields(buf, a, b):
            if f != 1:
                continue
            if w == 0:
                ints.append(s)
            elif w == 2:
                p = s
                while p < t:
                    v, p = _varint(buf, p, t)
                    ints.append(v)
                    if len(ints) > MAX_VALUES:
                        raise ExampleCapError(_too_many())
            if len(ints) > MAX_VALUES:
                raise ExampleCapError(_too_many())
        arr = np.array([v - (1 << 64) if v >= 1 << 63 else v for v in ints], np.int64)
        return Feature("int64", arr if values else None, arr.size)
    return Feature("", None, 0)


def _too_many() -> str:
    return f"a feature lists more than {MAX_VALUES:,} values, the most one episode feature may hold (the cap)"


def parse_example(data: bytes | memoryview, *, want: set[str] | None = None,
                  values: bool = True) -> dict[str, Feature]:
    """The features of a serialized ``tf.train.Example``.

    Args:
        data: The record.
        want: Only these feature keys (``None``: all).
        values: Also return the values (else only kinds and counts).

    Raises:
        ExampleError: malformed data.
    """
    buf = memoryview(data)
    out: dict[str, Feature] = {}
    for field, wire, a, b in _fields(buf, 0, len(buf)):
        if field != 1 or wire != 2:
            continue
        for f2, w2, s, t in _fields(buf, a, b):
            if f2 != 1 or w2 != 2:
                continue
            key: str | None = None
            value: tuple[int, int] | None = None
            for f3, w3, u, v in _fields(buf, s, t):
                if f3 == 1 and w3 == 2:
                    try:
                        key = bytes(buf[u:v]).decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise ExampleError("a feature name is not UTF-8") from exc
                elif f3 == 2 and w3 == 2:
                    value = (u, v)
            if key is None or (want is not None and key not in want):
                continue
            out[key] = _feature(buf, *value, values=values) if value else Feature("", None, 0)
    return out
