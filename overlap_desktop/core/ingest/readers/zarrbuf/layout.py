"""A zarr array's stored layout, read from its metadata JSON (zarr v2 ``.zarray`` or v3
``zarr.json``), and the check every chunk passes before zarr decodes it.

zarr and numcodecs decode a chunk in one call and trust the codec's stream: a few bytes
of zlib can stand for gigabytes. So before a chunk is decoded its stored bytes are
checked here against the size the array declares for it: a blosc or LZ4 header must
state exactly that size, a zstd frame that size (or, stating none, inflate to it in
bounded steps), zlib / gzip / bz2 data is inflated in bounded steps first; an encoded
image (JPEG, PNG, WebP, JPEG 2000, JPEG-XL and the other imagecodecs formats) must fit the
per-image cap. Codecs
outside this list, filters and sharding are refused with the codec named.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.fsutil import is_regular_file, loads_json_limited, read_regular
from overlap_desktop.core.ingest.readers._bounded import Budget, CorruptData
from overlap_desktop.core.ingest.readers._decoders import ImageError, check_dimensions, compressed_format
from overlap_desktop.core.ingest.readers.arraydata import image_size
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError

__all__ = ["IMAGECODECS_HINT", "ArraySpec", "array_spec", "is_group", "metadata_versions"]

IMAGECODECS_HINT = "pip install imagecodecs"
_MAX_META = 1 << 20
#: Compressors whose output is checked before decoding (v2 ids; v3 names map onto them).
_STREAMS = {"zlib": "zlib", "gzip": "gzip", "bz2": "bz2"}
#: Image codecs imagecodecs registers with numcodecs (``imagecodecs_<name>``; "jpeg" also covers
#: jpeg2k, jpegls, jpegxl, jpegxr, ljpeg): diffusion policy stores JPEG 2000, UMI JPEG XL.
_IMAGE_CODECS = ("jpeg", "jpg", "png", "webp", "avif", "heif", "qoi", "tiff", "bmp", "gif", "brunsli")
#: JPEG 2000: a bare codestream (SOC then SIZ) or the JP2 file format (its image header box).
_J2K_SOC_SIZ = b"\xff\x4f\xff\x51"
_JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"


def _json(path: Path) -> dict[str, Any] | None:
    if not is_regular_file(path):
        return None
    try:
        raw = read_regular(path, _MAX_META + 1)
        if len(raw) > _MAX_META:
            return None
        d = loads_json_limited(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return d if isinstance(d, dict) else None


def is_group(folder: Path) -> bool:
    """True for a zarr v2 or v3 group folder."""
    if is_regular_file(folder / ".zgroup"):
        return True
    meta = _json(folder / "zarr.json")
    return meta is not None and meta.get("node_type") == "group"


@dataclass(frozen=True)
class ArraySpec:
    """What a zarr array declares.

    Attributes:
        folder: The array's folder.
        shape, chunks: Array and chunk shapes.
        dtype: Element type.
        codecs: Byte codecs in decoding order (``["blosc"]``, ``["crc32c", "zstd"]``, ``[]``).
        version: 2 or 3.
        separator, prefix: How chunk keys are spelt (``0.0.0.0`` or ``c/0/0/0/0``).
    """

    folder: Path
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype[Any]
    codecs: tuple[str, ...]
    version: int
    separator: str
    prefix: str

    @property
    def chunk_bytes(self) -> int:
        return int(np.prod(self.chunks)) * self.dtype.itemsize

    def image_codec(self) -> str | None:
        return next((c for c in self.codecs if any(k in c for k in _IMAGE_CODECS)), None)

    def chunk_path(self, index: tuple[int, ...]) -> Path:
        key = self.separator.join(str(i) for i in index)
        return self.folder / (self.prefix + key) if self.prefix else self.folder / key

    def row_chunks(self, row: int) -> list[tuple[int, ...]]:
        """Indexes of the chunks holding time row ``row`` (one chunk along axis 0)."""
        grid = [range(-(-s // c)) for s, c in zip(self.shape[1:], self.chunks[1:])]
        out: list[tuple[int, ...]] = [(row,)]
        for g in grid:
            out = [(*idx, i) for idx in out for i in g]
        return out

    def check_chunk(self, index: tuple[int, ...], budget: Budget, limits: ReaderLimits, path: Path, *,
                    keep: bool = False) -> memoryview | None:
        """Bound one stored chunk before zarr decodes it (see the module doc).

        Args:
            keep: Return the stored bytes checked (read even when there is no codec), for
                :meth:`read_row` to decode those very bytes.

        Returns:
            With ``keep``, the chunk's stored bytes (``None``: not stored, zarr fills it).

        Raises:
            MediaError: over a cap, damaged, or lying about its size.
        """
        where = f"chunk {'.'.join(map(str, index))} of {self.folder.name}"
        decoded = self.chunk_bytes
        budget.check_declared(decoded, where)
        file = self.chunk_path(index)
        try:
            size = file.stat().st_size
        except OSError:
            return None  # no chunk: zarr fills it with the fill value
        if not is_regular_file(file):
            raise MediaError(f"{where} is not a regular file", path=path)
        if not _inside(file, path):
            raise MediaError(f"{where} is a link to {os.path.realpath(file)!r}, outside this zarr store; chunks "
                             "are read only from inside the store (copy the data in)", path=path)
        if size > budget.chunk_cap:
            raise MediaError(f"{where} is {size} bytes, over the limit of {budget.chunk_cap} per chunk", path=path)
        if not self.codecs:
            if size != decoded:
                raise MediaError(f"{where} is {size} bytes, not the {decoded} its array declares (damaged)", path=path)
            budget.charge(decoded, where)
            return memoryview(read_regular(file, size + 1)) if keep else None
        data = memoryview(read_regular(file, size + 1))
        try:
            self._check_bytes(data, decoded, budget, limits, where)
        except (CorruptData, ImageError) as exc:
            raise MediaError(f"{where}: {exc}", path=path) from exc
        return data if keep else None

    def direct(self) -> bool:
        """Whether time rows are decoded here (:meth:`read_row`) rather than by zarr: 8-bit data
        whose chunks each span whole steps, blosc-compressed or (one step a chunk) stored raw, as
        diffusion policy and UMI write raw cameras. zarr's read of one chunk cost 0.7 ms where
        reading and decompressing it here costs 0.17 (640x480, bench/RESULTS.md): its per-call
        machinery (asyncio hand-offs), not the decompression."""
        return (self.dtype.itemsize == 1 and self.chunks[1:] == self.shape[1:]
                and (self.codecs == ("blosc",) or (not self.codecs and self.chunks[0] == 1)))

    def read_row(self, row: int, budget: Budget, limits: ReaderLimits, path: Path) -> np.ndarray | None:
        """Time row ``row`` as a read-only ``(chunks[0], *shape[1:])`` array, checked by
        :meth:`check_chunk` and decoded from the same bytes (needs :meth:`direct`); ``None``
        when the chunk is not stored (zarr fills it with the fill value).

        Raises:
            MediaError: over a cap, damaged, or lying about its size.
        """
        index = (row,) + (0,) * (len(self.shape) - 1)
        data = self.check_chunk(index, budget, limits, path, keep=True)
        if data is None:
            return None
        raw: Any = data
        if self.codecs:
            from numcodecs import blosc

            try:
                raw = blosc.decompress(data)
            except Exception as exc:  # numcodecs raises RuntimeError (and others) for a damaged stream
                raise MediaError(f"chunk {row} of {self.folder.name} cannot be decompressed (damaged): {exc}",
                                 path=path) from exc
        if len(raw) != self.chunk_bytes:
            raise MediaError(f"chunk {row} of {self.folder.name} holds {len(raw)} bytes, not the "
                             f"{self.chunk_bytes} its array declares (damaged)", path=path)
        return np.frombuffer(raw, self.dtype).reshape(self.chunks)

    def _check_bytes(self, data: memoryview, decoded: int, budget: Budget, limits: ReaderLimits,
                     where: str) -> None:
        codecs = list(self.codecs)
        while codecs and codecs[0] == "crc32c":  # its checksum trails the data; zarr verifies it
            data = data[:-4]
            codecs.pop(0)
        if len(codecs) != 1:
            raise CorruptData(f"codecs {', '.join(self.codecs)} (one compressor is supported)")
        codec = codecs[0]
        if codec == "blosc":
            if len(data) < 16:
                raise CorruptData("blosc header is cut short")
            nbytes, _block, cbytes = struct.unpack("<III", data[4:16])
            if nbytes != decoded or cbytes > len(data):
                raise CorruptData(f"blosc header states {nbytes} bytes, the array declares {decoded} (damaged)")
        elif codec == "lz4":
            if len(data) < 4 or struct.unpack("<I", data[:4])[0] != decoded:
                raise CorruptData(f"LZ4 header does not state the {decoded} bytes the array declares (damaged)")
        elif codec == "zstd":
            import zstandard

            stated = zstandard.frame_content_size(bytes(data[:18])) if len(data) >= 4 else -2
            if stated == -1:
                budget.decompress(data, "zstd", declared=decoded, what=where)
            elif stated != decoded:
                raise CorruptData(f"zstd frame states {stated} bytes, the array declares {decoded} (damaged)")
        elif codec in _STREAMS:
            budget.decompress(data, _STREAMS[codec], declared=decoded, what=where)
            return
        elif self.image_codec() == codec:
            if len(data) > limits.max_message_bytes:
                raise CorruptData(f"an encoded image of {len(data)} bytes is over the limit")
            _check_image(data, codec, limits)
        else:
            raise CorruptData(f"codec {codec!r} is not supported (supported: blosc, zstd, lz4, zlib, gzip, bz2, "
                              "and image codecs from imagecodecs)")
        budget.charge(decoded, where)


def _inside(file: Path, store: Path) -> bool:
    """Whether ``file``, every link resolved, lies inside ``store`` (itself resolved)."""
    root = os.path.realpath(store)
    return os.path.realpath(file).startswith(root.rstrip(os.sep) + os.sep)


_V2_NAMES = (".zarray", ".zgroup", ".zattrs")


def metadata_versions(store: Path, depth: int = 2) -> set[int]:
    """The zarr formats whose metadata files appear in ``store`` and its folders down to
    ``depth`` levels (a ReplayBuffer's arrays sit two levels down): ``{2}``, ``{3}``, or both.

    zarr picks one format for the whole store, so metadata of the other format is what was
    checked but not what is decoded; a store holding both is refused by the reader.
    """
    found: set[int] = set()
    level = [store]
    for _ in range(depth + 1):
        nxt: list[Path] = []
        for d in level:
            if any(is_regular_file(d / n) for n in _V2_NAMES):
                found.add(2)
            if is_regular_file(d / "zarr.json"):
                found.add(3)
            try:
                # Nodes, not chunk folders ("c" of v3 keys, the numbers of "/"-separated v2 keys).
                nxt.extend(sorted(c for c in d.iterdir() if c.name != "c" and not c.name.isdigit() and c.is_dir())
                           [:256])
            except OSError:
                continue
        level = nxt
    return found


def _jpeg2k_size(data: bytes | memoryview) -> tuple[int, int] | None:
    """The largest ``(width, height)`` a JPEG 2000 codestream (its SIZ segment) or JP2 file (its
    image header box and its codestream's SIZ) declares; ``None`` if neither is found."""
    head = bytes(data[:4096])
    sizes = []
    if (at := head.find(_J2K_SOC_SIZ)) >= 0 and len(head) >= at + 24:
        x, y, x0, y0 = struct.unpack(">4I", head[at + 8:at + 24])
        sizes.append((max(0, x - x0), max(0, y - y0)))
    if head.startswith(_JP2_SIGNATURE) and (at := head.find(b"ihdr")) >= 0 and len(head) >= at + 12:
        h, w = struct.unpack(">2I", head[at + 4:at + 12])
        sizes.append((w, h))
    return max(sizes, key=lambda wh: wh[0] * wh[1]) if sizes else None


def _check_image(data: bytes | memoryview, codec: str, limits: ReaderLimits) -> None:
    """An encoded still's declared size against the caps, before imagecodecs decodes it.

    JPEG, PNG and WebP headers are read by :func:`image_size`, JPEG 2000 here; the other
    imagecodecs formats (JPEG XL, AVIF, ...) are bounded by the encoded-bytes cap only, as
    their headers need the codec library to read.
    """
    if "jpeg2k" in codec:
        size = _jpeg2k_size(data)
        if size is None:
            raise CorruptData("a chunk stored as JPEG 2000 is not a JPEG 2000 image (damaged)")
        check_dimensions(size[0], size[1], limits)
    elif codec.removeprefix("imagecodecs_") in ("jpeg", "jpg", "png", "webp") or _plain_image(data):
        image_size(data, limits)


def _plain_image(data: bytes | memoryview) -> bool:
    """True when ``data`` starts like a JPEG, PNG or WebP (whose header :func:`image_size` reads)."""
    try:
        compressed_format(data)
    except ImageError:
        return False
    return True


def _v2_codecs(meta: dict[str, Any]) -> tuple[str, ...]:
    if meta.get("filters"):
        ids = ", ".join(str(f.get("id")) for f in meta["filters"] if isinstance(f, dict))
        raise ValueError(f"filters ({ids}) are not supported")
    comp = meta.get("compressor")
    if comp is None:
        return ()
    if not isinstance(comp, dict) or not isinstance(comp.get("id"), str):
        raise ValueError("unreadable compressor")
    return (comp["id"].lower(),)


def _v3_codecs(meta: dict[str, Any]) -> tuple[str, ...]:
    names: list[str] = []
    for c in meta.get("codecs") or []:
        name = str(c.get("name") if isinstance(c, dict) else c).lower()
        if name == "sharding_indexed":
            raise ValueError("sharded arrays are not supported yet")
        if name in ("bytes", "endian"):
            continue
        if name in ("transpose",) or name.startswith("numcodecs.") and name[10:] in ("delta", "fixedscaleoffset"):
            raise ValueError(f"codec {name} is not supported")
        names.append(name[10:] if name.startswith("numcodecs.") else name)
    return tuple(reversed(names))  # decoding order


def array_spec(folder: Path) -> ArraySpec | None:
    """The layout of the zarr array in ``folder`` (``None``: not an array).

    Raises:
        ValueError: an array whose layout is not supported (the message says why).
    """
    v2 = _json(folder / ".zarray")
    if v2 is not None and is_regular_file(folder / "zarr.json"):
        raise ValueError("it holds both zarr v2 (.zarray) and v3 (zarr.json) metadata, which can disagree about "
                         "what its chunks hold; keep one")
    if v2 is not None:
        shape, chunks = v2.get("shape"), v2.get("chunks")
        dtype = v2.get("dtype")
        codecs = _v2_codecs(v2)
        sep = str(v2.get("dimension_separator") or ".")
        version, prefix = 2, ""
        if v2.get("order", "C") != "C":
            raise ValueError("Fortran-ordered chunks are not supported")
    else:
        v3 = _json(folder / "zarr.json")
        if v3 is None or v3.get("node_type") != "array":
            return None
        shape = v3.get("shape")
        grid = v3.get("chunk_grid") or {}
        chunks = (grid.get("configuration") or {}).get("chunk_shape")
        dtype = v3.get("data_type")
        codecs = _v3_codecs(v3)
        enc = v3.get("chunk_key_encoding") or {}
        conf = enc.get("configuration") or {}
        if enc.get("name", "default") == "v2":
            sep, prefix = str(conf.get("separator", ".")), ""
        else:
            sep = str(conf.get("separator", "/"))
            prefix = "c" + sep
        version = 3
    if (not isinstance(shape, list) or not isinstance(chunks, list) or len(shape) != len(chunks)
            or not all(isinstance(x, int) and x >= 0 for x in shape)
            or not all(isinstance(x, int) and x > 0 for x in chunks)):
        raise ValueError("its shape or chunk shape is unreadable")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"element type {dtype!r} is not supported") from exc
    if sep not in (".", "/"):
        raise ValueError(f"chunk key separator {sep!r} is not supported")
    return ArraySpec(folder, tuple(shape), tuple(chunks), dt, codecs, version, sep, prefix)
