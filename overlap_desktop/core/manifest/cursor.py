"""A bounded cursor over manifest bytes, shared by the reader and the optional-section parsers.

Every read checks what remains before touching the buffer, and every failure is a
:class:`~overlap_desktop.errors.ManifestError` naming the current section and offset.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from overlap_desktop.core.manifest.format import CONTROL_RE
from overlap_desktop.errors import ManifestError

__all__ = ["ByteCursor", "DecodedBudget"]


class ByteCursor:
    """Bounded cursor over the manifest bytes; every read checks what remains."""

    __slots__ = ("buf", "pos", "end", "where", "source")

    def __init__(self, buf: memoryview, source: str | None) -> None:
        self.buf = buf
        self.pos = 0
        self.end = len(buf)
        self.where = "preamble"
        self.source = source

    def fail(self, message: str, at: int | None = None) -> ManifestError:
        at = self.pos if at is None else at
        return ManifestError(f"{self.where}: {message} (offset {at})", path=self.source)

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"{what} needs {n} bytes but {self.end - self.pos} remain")

    def take(self, n: int, what: str) -> memoryview:
        self.need(n, what)
        v = self.buf[self.pos:self.pos + n]
        self.pos += n
        return v

    def unpack(self, st: struct.Struct, what: str) -> tuple[Any, ...]:
        self.need(st.size, what)
        v = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return v

    def u8(self, what: str) -> int:
        return self.unpack(_U8, what)[0]

    def u16(self, what: str) -> int:
        return self.unpack(_U16, what)[0]

    def u32(self, what: str) -> int:
        return self.unpack(_U32, what)[0]

    def u64(self, what: str) -> int:
        return self.unpack(_U64, what)[0]

    def f64(self, what: str, lo: float, hi: float) -> float:
        at = self.pos
        v = self.unpack(_F64, what)[0]
        if not (math.isfinite(v) and lo <= v <= hi):
            raise self.fail(f"{what} {v!r} outside [{lo:g}, {hi:g}]", at)
        return float(v)

    def text(self, length_bytes: int, what: str, max_len: int, *, allow_empty: bool = True) -> str:
        at = self.pos
        n = self.u8(what) if length_bytes == 1 else self.u16(what)
        if n > max_len or (n == 0 and not allow_empty):
            raise self.fail(f"{what} length {n} outside {0 if allow_empty else 1}..{max_len}", at)
        raw = self.take(n, what)
        try:
            s = bytes(raw).decode("utf-8", "strict")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8", at) from None
        if CONTROL_RE.search(s):
            raise self.fail(f"{what} contains control characters", at)
        return s


_U8, _U16, _U32, _U64, _F64 = (struct.Struct(f) for f in ("<B", "<H", "<I", "<Q", "<d"))


class DecodedBudget:
    """Decoded bytes a manifest may still produce (shared by every section's parser)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left
