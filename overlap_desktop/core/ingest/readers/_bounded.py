"""Bounded decompression for recordings (MCAP chunks, ROS bag chunks, rosbag2 files).

A recording's chunks are compressed with zstd, lz4 or bz2, and a few kilobytes of
compressed zeros can stand for gigabytes: the libraries we read recordings with
(``mcap``, ``rosbags``) decompress a whole chunk in one call and trust the size the
chunk declares, or none at all. So every chunk is decompressed *here*, in pieces of
at most :data:`STEP` bytes, and refused as soon as it passes one of three caps:

* **per chunk**: :attr:`ReaderLimits.max_chunk_bytes` (a chunk holds at least one whole
  message, so this is the message cap plus room for small ones);
* **per reading pass over a file** (:class:`Budget`): the decompressed bytes of all
  chunks together may not pass ``max(TOTAL_FLOOR, RATIO x file size)``. Real camera
  data compresses a few times; only synthetic all-black pictures (or a bomb) expand
  by more than :data:`RATIO` over hundreds of megabytes. This also bounds the time a
  small file can cost, however many tiny bomb chunks it holds;
* **records walked per pass** (:meth:`Budget.count_records`) where we or a library
  must walk every record of a chunk: ``max(RECORD_FLOOR, RECORDS_PER_BYTE x file size)``,
  because a chunk of nine-byte empty records costs seconds of Python per 64 MiB.

Refusals at a cap are :class:`~overlap_desktop.errors.MediaError` naming the file, with
the numbers, so a user can tell a damaged file from an over-tight cap. Corrupt data (a
codec error, a chunk expanding past the size it declares) raises :class:`CorruptData`, a
``ValueError`` the readers report like any other damaged data (with the topic and how far
reading got).
"""

from __future__ import annotations

import bz2
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError

__all__ = ["RATIO", "RECORDS_PER_BYTE", "RECORD_FLOOR", "STEP", "TOTAL_FLOOR", "Budget", "CorruptData", "mib"]

#: Largest piece produced by one decompression step.
STEP = 1 << 20
#: Decompressed bytes a pass over any file may produce, however small the file.
TOTAL_FLOOR = 512 * 1024 * 1024
#: Beyond the floor, decompressed bytes allowed per byte of the file.
RATIO = 100
#: Records a pass may walk, however small the file.
RECORD_FLOOR = 1_000_000
#: Beyond the floor, records allowed per byte of the file (a real record costs several
#: compressed bytes: its timestamps and sequence number differ from its neighbours').
RECORDS_PER_BYTE = 2
#: zstd window the decoder may allocate (zstd's own default limit, stated explicitly).
_ZSTD_MAX_WINDOW = 1 << 27


def mib(n: int) -> str:
    """``n`` bytes in MiB for messages (``"320 MiB"``)."""
    return f"{n / (1024 * 1024):.0f} MiB"


class CorruptData(ValueError):
    """Compressed data that is damaged or lies about its size (the message says where)."""


class Budget:
    """Decompression caps for one reading pass over one recording file.

    Args:
        path: The file (named in errors).
        limits: Reader caps (:attr:`ReaderLimits.max_chunk_bytes` is the per-chunk cap).
        file_bytes: Size of the file (or of a rosbag2 folder's data files); ``None`` stats ``path``.
    """

    def __init__(self, path: Path, limits: ReaderLimits, file_bytes: int | None = None) -> None:
        self.path = Path(path)
        if file_bytes is None:
            try:
                file_bytes = os.stat(self.path).st_size
            except OSError:
                file_bytes = 0
        self.file_bytes = int(file_bytes)
        self.chunk_cap = int(limits.max_chunk_bytes)
        self.total_cap = max(TOTAL_FLOOR, RATIO * self.file_bytes)
        self.record_cap = max(RECORD_FLOOR, RECORDS_PER_BYTE * self.file_bytes)
        self.used = 0
        self.records = 0

    # ------------------------------------------------------------------ refusals

    def _refuse(self, what: str) -> MediaError:
        return MediaError(f"{what}; the file is damaged or a decompression bomb, so it was not read further "
                          "(nothing past the limit was decompressed)", path=self.path)

    def check_declared(self, declared: int, what: str = "a chunk") -> None:
        """Refuse a chunk whose *declared* size is already over the per-chunk cap.

        Raises:
            MediaError: ``declared`` is over the cap.
        """
        if declared > self.chunk_cap:
            raise self._refuse(f"{what} declares {declared} bytes uncompressed, over the limit of "
                               f"{mib(self.chunk_cap)} per chunk")

    def count_records(self, n: int = 1) -> None:
        """Account for ``n`` records walked.

        Raises:
            MediaError: the pass walked more records than the file can plausibly hold.
        """
        self.records += n
        if self.records > self.record_cap:
            raise self._refuse(f"its compressed data holds over {self.record_cap} records ("
                               f"{RECORDS_PER_BYTE} per byte of a {self.file_bytes}-byte file)")

    def charge(self, n: int, what: str) -> None:
        """Count ``n`` bytes copied out of decompressed data (messages) against the total:
        message indexes pointing many times at one big message cost copies, not decompression.

        Raises:
            MediaError: the file's total is passed.
        """
        self._take(n, what)

    def _take(self, n: int, what: str) -> None:
        self.used += n
        if self.used > self.total_cap:
            raise self._refuse(f"its compressed data expands past {mib(self.total_cap)} in total "
                               f"(the limit for a {self.file_bytes}-byte file is {RATIO} times its size, "
                               f"at least {mib(TOTAL_FLOOR)}) while reading {what}")

    # ------------------------------------------------------------------ decompression

    def decompress(self, data: bytes | bytearray | memoryview, compression: str, *,
                   declared: int | None = None, what: str = "a chunk") -> bytes | bytearray:
        """Decompress ``data`` in bounded steps under the per-chunk and per-pass caps.

        Args:
            data: Compressed bytes.
            compression: ``"zstd"``, ``"lz4"`` (frame format), ``"bz2"``, ``"zlib"`` / ``"gzip"``
                (deflate, either header), or ``""`` / ``"none"``.
            declared: The uncompressed size the container states, if any: a result of
                another size is corrupt data. Known and under the cap, it is allocated once
                and filled in place (no growing, no final copy).
            what: Named in errors (``"chunk at offset 1234"``).

        Returns:
            The decompressed bytes (a ``bytearray`` when ``declared`` was given).

        Raises:
            MediaError: over a cap.
            CorruptData: an unknown compression, corrupt data, or a size other than ``declared``.
        """
        if declared is not None:
            self.check_declared(declared, what)
        comp = compression.strip().lower()
        if comp in ("", "none"):
            out: bytes | bytearray = bytes(data)
            self._take(len(out), what)
        else:
            step = _STEPPERS.get(comp)
            if step is None:
                raise CorruptData(f"{what} uses compression {compression!r}, which is not supported "
                                  "(supported: zstd, lz4, bz2, zlib, gzip)")
            if declared is not None:
                fast = _one_shot(bytes(data) if not isinstance(data, bytes) else data, comp, declared, what)
                # Another length (e.g. only the first of several frames): the stepped path decides.
                if fast is not None and len(fast) == declared:
                    self._take(len(fast), what)
                    return fast
                del fast
            cap = self.chunk_cap if declared is None else declared
            # A declared size (checked against the cap above) is allocated once, zero pages
            # that only cost memory as they are written; otherwise the buffer grows piece by piece.
            buf = bytearray(declared) if declared is not None else bytearray()
            view = memoryview(buf) if declared is not None else None
            pos = 0

            def sink(piece: bytes) -> None:
                nonlocal pos
                n = len(piece)
                if pos + n > cap:
                    if declared is not None:
                        raise CorruptData(f"corrupt compressed data in {what}: it expands past the "
                                          f"{declared} bytes it declares")
                    raise self._refuse(f"{what} expands past the limit of {mib(self.chunk_cap)} per chunk")
                self._take(n, what)
                if view is not None:
                    view[pos:pos + n] = piece
                else:
                    buf.extend(piece)
                pos += n

            try:
                step(bytes(data), sink)
            except (MediaError, CorruptData):
                raise
            except Exception as exc:
                raise CorruptData(f"corrupt {comp}-compressed data in {what}: {exc}") from exc
            finally:
                if view is not None:
                    view.release()
            if declared is not None:
                if pos != declared:
                    raise CorruptData(f"corrupt compressed data in {what}: it expands to {pos} bytes, not the "
                                      f"{declared} it declares")
                return buf
            out = bytes(buf)
            del buf
        if declared is not None and len(out) != declared:
            raise CorruptData(f"corrupt compressed data in {what}: it expands to {len(out)} bytes, not the "
                              f"{declared} it declares")
        return out

    def decompressor(self, compression: str, what: str = "a chunk") -> Callable[[bytes], bytes]:
        """``decompress`` as a one-argument function returning ``bytes`` (for libraries)."""
        return lambda data: bytes(self.decompress(data, compression, what=what))


# --------------------------------------------------------------------------- codecs


def _one_shot(data: bytes, comp: str, declared: int, what: str) -> bytes | None:
    """Decompress in one call when that cannot allocate more than ``declared`` (already
    checked against the cap): the frame states exactly that size (zstd, lz4) or, for zstd,
    states none (the output is then capped at ``declared``). ``None``: take the stepped path.

    One call is about four times faster than stepping through zstd's streaming API, and
    healthy chunks always qualify; a frame stating another size is corrupt at once.

    Raises:
        CorruptData: the frame states a size other than ``declared``, or is corrupt.
    """
    try:
        if comp == "zstd":
            import zstandard

            try:
                stated = zstandard.frame_content_size(data[:18])
            except zstandard.ZstdError:
                return None  # let the stepped path describe the damage
            if stated not in (-1, declared):
                raise CorruptData(f"corrupt compressed data in {what}: its zstd frame states {stated} bytes, the "
                                  f"chunk declares {declared}")
            dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
            try:
                return dctx.decompress(data, max_output_size=declared)
            except zstandard.ZstdError:
                return None  # the stepped path says how it went wrong (e.g. longer than declared)
        if comp == "lz4":
            import lz4.frame

            info = lz4.frame.get_frame_info(data)
            if int(info.get("content_size") or 0) != declared or declared == 0:
                return None  # unstated or different: stepped (bounded) path
            out = lz4.frame.decompress(data)
            return out if isinstance(out, bytes) else bytes(out)
    except CorruptData:
        raise
    except Exception as exc:
        raise CorruptData(f"corrupt {comp}-compressed data in {what}: {exc}") from exc
    return None
#
# Each stepper feeds the output to ``sink`` in pieces of at most STEP bytes; ``sink``
# raises to stop. Concatenated frames / streams are all decoded, like the one-shot
# functions the libraries call.


def _zstd_steps(data: bytes, sink: Callable[[bytes], None]) -> None:
    import io

    import zstandard

    dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    with dctx.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        while True:
            piece = reader.read(STEP)
            if not piece:
                return
            sink(piece)


def _frames_in_steps(data: bytes, sink: Callable[[bytes], None], new: Callable[[], Any], what: str) -> None:
    """Decompress concatenated frames of a streaming decompressor (lz4.frame, bz2) in
    :data:`STEP`-sized outputs, so no frame is ever held decompressed in one piece."""
    rest = data
    while rest:
        d = new()
        piece = d.decompress(rest, max_length=STEP)
        while True:
            if piece:
                sink(piece)
            if d.eof or d.needs_input:
                break
            piece = d.decompress(b"", max_length=STEP)
        if not d.eof:
            raise ValueError(f"truncated {what}")
        rest = d.unused_data


def _lz4_steps(data: bytes, sink: Callable[[bytes], None]) -> None:
    import lz4.frame

    _frames_in_steps(data, sink, lz4.frame.LZ4FrameDecompressor, "lz4 frame")


def _bz2_steps(data: bytes, sink: Callable[[bytes], None]) -> None:
    _frames_in_steps(data, sink, bz2.BZ2Decompressor, "bz2 stream")


class _Inflate:
    """zlib / gzip streams (the header says which) behind the interface of bz2's decompressor."""

    def __init__(self) -> None:
        import zlib

        self._d = zlib.decompressobj(47)  # 32 + 15: a zlib or gzip header, the largest window
        self._full = False  # the last call filled max_length: more output may be pending

    def decompress(self, data: bytes, max_length: int) -> bytes:
        # Input left over by a limited call waits in unconsumed_tail and must be passed again.
        out = self._d.decompress(data or self._d.unconsumed_tail, max_length)
        self._full = len(out) >= max_length
        return out

    @property
    def eof(self) -> bool:
        return self._d.eof

    @property
    def needs_input(self) -> bool:
        return not self._d.eof and not self._d.unconsumed_tail and not self._full

    @property
    def unused_data(self) -> bytes:
        return self._d.unused_data


def _zlib_steps(data: bytes, sink: Callable[[bytes], None]) -> None:
    # HDF5's deflate filter and numcodecs' Zlib / GZip (zarr) write zlib or gzip streams.
    _frames_in_steps(data, sink, _Inflate, "deflate stream")


_STEPPERS: dict[str, Callable[[bytes, Callable[[bytes], None]], None]] = {
    "zstd": _zstd_steps,
    "lz4": _lz4_steps,
    "bz2": _bz2_steps,
    "zlib": _zlib_steps,
    "gzip": _zlib_steps,
}


class BudgetBook:
    """The current :class:`Budget` of each file a reader instance is reading.

    Indexing a file is one ``streams()`` call then one ``frames()`` call per stream, each
    opening the file again; they all share the file's budget, so a recording with many
    image topics cannot multiply its allowance. ``streams()`` starts a fresh budget
    (:meth:`start`), ``frames()`` continues it (:meth:`get`). Safe across threads.
    """

    _KEEP = 64

    def __init__(self) -> None:
        import threading
        from collections import OrderedDict

        self._lock = threading.Lock()
        self._budgets: OrderedDict[str, Budget] = OrderedDict()

    def start(self, path: Path, limits: ReaderLimits, file_bytes: int | None = None) -> Budget:
        """A new budget for ``path`` (replacing any earlier one)."""
        budget = Budget(path, limits, file_bytes)
        key = os.fspath(path)
        with self._lock:
            self._budgets.pop(key, None)
            self._budgets[key] = budget
            while len(self._budgets) > self._KEEP:
                self._budgets.popitem(last=False)
        return budget

    def get(self, path: Path, limits: ReaderLimits, file_bytes: int | None = None) -> Budget:
        """The budget :meth:`start` made for ``path``, or a new one."""
        with self._lock:
            budget = self._budgets.get(os.fspath(path))
        return budget if budget is not None else self.start(path, limits, file_bytes)


def count_stream(budget: Budget, path: Path, compression: str, what: str, sink: Any = None) -> int:
    """Decompress the zstd file ``path`` in bounded steps, keeping nothing (or writing each
    step to the binary file ``sink``), and return its decompressed size; the bytes count
    against ``budget``'s total (used before a library decompresses a whole file to disk, as
    rosbags does for rosbag2 ``compression_mode: file``). Input and output are both
    streamed, so a large honest file costs no memory.

    Raises:
        MediaError: over the budget, or not zstd.
        CorruptData: corrupt data.
    """
    if compression != "zstd":
        raise MediaError(f"{what} uses compression {compression!r}, which is not supported", path=budget.path)
    import zstandard

    total = 0
    try:
        with open(path, "rb") as fh:
            dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
            with dctx.stream_reader(fh, read_across_frames=True) as reader:
                while True:
                    piece = reader.read(STEP)
                    if not piece:
                        return total
                    total += len(piece)
                    budget._take(len(piece), what)
                    if sink is not None:
                        sink.write(piece)
    except zstandard.ZstdError as exc:
        raise CorruptData(f"corrupt zstd-compressed data in {what}: {exc}") from exc
