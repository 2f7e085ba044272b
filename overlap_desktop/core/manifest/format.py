"""The ``.ovlm`` manifest: writer, strict reader, export from an index, inspection.

The byte layout is specified in docs/manifest-spec.md (format version 1); this module
follows it. A manifest comes from a counterparty, so :func:`parse_manifest` treats it
as hostile: every count and length is checked against the bytes that remain before it
is used, nothing is allocated from an unchecked number, the Merkle root is recomputed,
and any defect raises :class:`~overlap_desktop.errors.ManifestError` (never another
exception type) naming the section, entry and byte offset.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop import __version__
from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.core.manifest.merkle import leaf_hash, root_from_leaf_hashes
from overlap_desktop.core.manifest.sections import (
    EPISODES_SVERSION,
    NGRAMS_SVERSION,
    SEC_STREAM_EPISODES,
    TextNgrams,
    clean_episodes,
    describe_sections,
    encode_stream_episodes,
    encode_text_ngrams,
    parse_stream_episodes,
    parse_text_ngrams,
)
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    Span,
    StreamFingerprints,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import InputError, ManifestError, OverlapError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_DECODED_BYTES",
    "MAX_FILES_WITHOUT_SAMPLES",
    "MAX_MANIFEST_BYTES",
    "MAX_SAMPLES_PER_SECOND",
    "ExportSummary",
    "Manifest",
    "ManifestFile",
    "ManifestStream",
    "OptionalSection",
    "TextNgrams",
    "decoded_budget",
    "encode_manifest",
    "export_manifest",
    "inspect_manifest",
    "parse_manifest",
    "read_manifest",
    "stride_fingerprints",
    "write_manifest",
]

MAGIC = b"\x89OVLM\r\n\x1a"
FORMAT_VERSION = 1

SEC_META = 0x0001
SEC_FILES = 0x0002
SEC_TEXT_NGRAMS = 0x0003  # hashed annotation n-grams (optional; core/manifest_sections.py)
SEC_ROOT = 0xFFFF
FLAG_CRITICAL = 0x0001
SECTION_NAMES = {SEC_META: "META", SEC_FILES: "FILES", SEC_TEXT_NGRAMS: "TEXT_NGRAMS",
                 SEC_STREAM_EPISODES: "STREAM_EPISODES", SEC_ROOT: "ROOT"}
META_FLAG_ANONYMIZED = 0x0001

#: Default cap on the manifest file size, checked before reading.
MAX_MANIFEST_BYTES = 2 << 30
#: Hard cap on the sum of decoded fingerprint payloads (zstd can expand a small file).
MAX_DECODED_BYTES = 4 << 30
#: Default decoded budget: this floor plus :data:`DECODED_RATIO` times the file size (so a
#: small hostile file cannot make the reader allocate gigabytes); writers stay within it.
DECODED_FLOOR = 64 << 20
DECODED_RATIO = 32
MAX_SECTIONS = 64
MAX_FILES = 10_000_000
MAX_STREAMS = 1024
MAX_DURATION_S = 1e8
#: Highest sampling rate a stream may declare, and (below) the most samples any second of
#: its footage may hold. The matcher looks at about 3 s x fps samples around each query
#: sample, so both bound what a comparison builds by footage seconds, not by what a
#: manifest declares: samples 1 ns apart once made a 640 KB manifest cost 14 GB, and a
#: declared 1000 fps made 20,000 samples need 2.4 GB. Exports use ``export.fps`` (<= 120).
MAX_FPS = 120.0
MAX_SAMPLES_PER_SECOND = 120
#: Samples a window shorter than one second may hold before it counts as crowded: the rate
#: plus 5 % for timestamp jitter, plus one because a window of exactly one second can hold
#: both of its ends.
_CROWDED_SAMPLES = MAX_SAMPLES_PER_SECOND + MAX_SAMPLES_PER_SECOND // 20 + 1
#: Most file entries without a single fingerprint. Such entries cannot match anything, yet
#: each costs memory and a report row; an export lists only fingerprinted files.
MAX_FILES_WITHOUT_SAMPLES = 10_000
MAX_TIME_NS = 1 << 53
MAX_FILE_SIZE = 1 << 62

PREAMBLE = struct.Struct("<8sHHI")
SECTION = struct.Struct("<HHHHQ")
MIN_ENTRY = 2 + 1 + 8 + 32 + 8 + 2  # name of 1 byte, size, sha256, duration, stream count
ZSTD_MIN_SAVING = 0.03
ZSTD_LEVEL = 9

_ID_RE = re.compile(r"[A-Za-z0-9._:+\-]{1,64}")
_CREATED_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DRIVE_RE = re.compile(r"[A-Za-z]:")
_EXT_RE = re.compile(r"[a-z0-9]{1,8}")

_RUN_DTYPE = np.dtype([("delta", "<u8"), ("count", "<u4")])


# --------------------------------------------------------------------------- data model


@dataclass(slots=True)
class ManifestStream:
    """One stream's fingerprints in a manifest.

    Attributes:
        key: Stream key within the file (``v:0``, a topic, or ``stream-N`` when anonymised).
        fps: Sampling grid rate of the recorded fingerprints.
        fingerprints: Identity-variant fingerprints (``codes`` shape ``(n, 1, 32)``).
        episodes: ``(episode, start_s, end_s)`` spans in stream time (LeRobot datasets),
            carried in the optional STREAM_EPISODES section; empty when unknown.
    """

    key: str
    fps: float
    fingerprints: StreamFingerprints
    episodes: list[tuple[int, float, float]] = field(default_factory=list)


@dataclass(slots=True)
class ManifestFile:
    """One offered file.

    Attributes:
        name: Relative name with ``/`` separators (or an anonymous ``file-NNNNNN.ext``).
        size: Size in bytes.
        sha256: Hex SHA-256 of the file's bytes.
        duration_s: Duration in seconds.
        streams: Its fingerprinted streams.
    """

    name: str
    size: int
    sha256: str
    duration_s: float
    streams: list[ManifestStream] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OptionalSection:
    """A non-critical section this reader does not interpret (kept, Merkle-verified)."""

    type: int
    sversion: int
    body: bytes


@dataclass(slots=True)
class Manifest:
    """A parsed, verified manifest.

    Attributes:
        label: Free text from the vendor (may be empty).
        algo_id: Hash function id; must equal the comparing side's.
        prep_id: Frame normalisation id; must equal the comparing side's.
        created: ``YYYY-MM-DDTHH:MM:SSZ`` or ``None`` when not recorded.
        creator: Writing tool and version.
        root: Merkle root, hex.
        files: Offered files, in manifest order.
        anonymized: Names were replaced by pseudonyms.
        version: Format version (always :data:`FORMAT_VERSION` after a successful read).
        optional_sections: Non-critical sections this reader skipped.
        path: Where it was read from, if from a file.
        size_bytes: Size of the encoded manifest.
        text_ngrams: Keyed hashes of the vendor's annotation n-grams (optional
            TEXT_NGRAMS section), or ``None``.
    """

    label: str
    algo_id: str
    prep_id: str
    created: str | None
    creator: str
    root: str
    files: list[ManifestFile]
    anonymized: bool = False
    version: int = FORMAT_VERSION
    optional_sections: list[OptionalSection] = field(default_factory=list)
    path: Path | None = None
    size_bytes: int = 0
    text_ngrams: TextNgrams | None = None

    @property
    def duration_s(self) -> float:
        """Total offered footage in seconds."""
        return float(sum(f.duration_s for f in self.files))

    @property
    def hours(self) -> float:
        return self.duration_s / 3600.0


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What :func:`export_manifest` / :func:`write_manifest` wrote.

    Attributes:
        path: The manifest file.
        root: Merkle root, hex.
        files: Number of files.
        hours: Footage hours.
        bytes: Size of the manifest file.
        streams: Number of streams.
        samples: Number of fingerprints.
    """

    path: Path
    root: str
    files: int
    hours: float
    bytes: int
    streams: int = 0
    samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "root": self.root, "files": self.files,
                "hours": self.hours, "bytes": self.bytes, "streams": self.streams,
                "samples": self.samples}


# --------------------------------------------------------------------------- validation helpers


def _check_text(value: str, what: str, max_bytes: int, *, allow_empty: bool = True) -> bytes:
    """Encode a string for the writer, refusing what the reader would refuse."""
    try:
        raw = value.encode("utf-8", "strict")
    except UnicodeEncodeError:
        raise ManifestError(f"cannot write manifest: {what} is not valid Unicode text") from None
    if not allow_empty and not raw:
        raise ManifestError(f"cannot write manifest: {what} is empty")
    if len(raw) > max_bytes:
        raise ManifestError(f"cannot write manifest: {what} is {len(raw)} bytes (limit {max_bytes})")
    if _CONTROL_RE.search(value):
        raise ManifestError(f"cannot write manifest: {what} contains control characters")
    return raw


def _name_problem(name: str) -> str | None:
    """Why ``name`` is not a safe relative manifest name, or ``None`` if it is."""
    if _CONTROL_RE.search(name):
        return "contains control characters"
    if name.startswith("/"):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    if _DRIVE_RE.match(parts[0]):
        return "starts with a drive letter"
    return None


# --------------------------------------------------------------------------- writer


def _encode_times(times: np.ndarray, where: str) -> bytes:
    """Timestamps as t0 + runs of equal deltas (exact, one run for a regular grid)."""
    times = np.asarray(times, dtype=np.int64)
    n = int(times.shape[0])
    if n == 0:
        return struct.pack("<QI", 0, 0)
    t0 = int(times[0])
    if t0 < 0 or int(times[-1]) > MAX_TIME_NS:
        raise ManifestError(f"cannot write manifest: {where}: timestamps outside 0..2^53 ns")
    deltas = np.diff(times)
    if n > 1 and int(deltas.min()) <= 0:
        raise ManifestError(f"cannot write manifest: {where}: timestamps are not strictly increasing")
    if n == 1:
        return struct.pack("<QI", t0, 0)
    change = np.flatnonzero(deltas[1:] != deltas[:-1]) + 1
    starts = np.concatenate(([0], change))
    counts = np.diff(np.concatenate((starts, [deltas.shape[0]])))
    runs = np.empty(starts.shape[0], dtype=_RUN_DTYPE)
    runs["delta"] = deltas[starts]
    runs["count"] = counts
    return struct.pack("<QI", t0, runs.shape[0]) + runs.tobytes()


def _encode_payload(fp: StreamFingerprints, compress: str, where: str) -> bytes:
    n = len(fp)
    codes = np.asarray(fp.codes, dtype=np.uint8)
    if codes.ndim == 3:
        codes = codes[:, 0, :]
    if codes.shape != (n, 32):
        raise ManifestError(f"cannot write manifest: {where}: codes have shape {codes.shape}, "
                            f"expected ({n}, 32)")
    quality = np.asarray(fp.quality, dtype=np.uint8).reshape(n)
    if n and int(quality.max()) > 100:
        raise ManifestError(f"cannot write manifest: {where}: quality over 100")
    usable = np.asarray(fp.usable, dtype=bool).reshape(n)
    raw = (np.ascontiguousarray(codes).tobytes() + quality.tobytes()
           + np.packbits(usable, bitorder="little").tobytes())
    if compress != "never" and n:
        import zstandard

        packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True,
                                          write_checksum=False, write_dict_id=False).compress(raw)
        if compress == "always" or len(packed) <= len(raw) * (1.0 - ZSTD_MIN_SAVING):
            return struct.pack("<BI", 1, len(packed)) + packed
    return struct.pack("<BI", 0, len(raw)) + raw


def _encode_stream(s: ManifestStream, compress: str, where: str) -> bytes:
    fp = s.fingerprints
    key = _check_text(s.key, f"{where}: stream key", 256, allow_empty=False)
    if not (math.isfinite(s.fps) and 0 < s.fps <= MAX_FPS):
        raise ManifestError(f"cannot write manifest: {where}: fps {s.fps} outside (0, {MAX_FPS}]")
    dur = float(fp.duration_s)
    if not (math.isfinite(dur) and 0 <= dur <= MAX_DURATION_S):
        raise ManifestError(f"cannot write manifest: {where}: duration {dur} out of range")
    out = [struct.pack("<H", len(key)), key, struct.pack("<ddII", float(s.fps), dur, len(fp),
                                                         len(fp.indeterminate))]
    for sp in fp.indeterminate:
        start, end = float(sp.start_s), float(sp.end_s)
        if not (math.isfinite(start) and math.isfinite(end) and 0 <= start <= end <= MAX_DURATION_S):
            raise ManifestError(f"cannot write manifest: {where}: bad indeterminate span {sp}")
        reason = _check_text(sp.reason, f"{where}: span reason", 255)
        out += [struct.pack("<ddB", start, end, len(reason)), reason]
    crowded = _crowded_second(np.asarray(fp.times_ns))
    if crowded is not None:
        raise ManifestError(f"cannot write manifest: {where}: more than {_CROWDED_SAMPLES} samples within one "
                            f"second (from {crowded / 1e9:.6f} s); export at a lower --fps")
    out.append(_encode_times(fp.times_ns, where))
    out.append(_encode_payload(fp, compress, where))
    return b"".join(out)


def _encode_entry(f: ManifestFile, compress: str) -> bytes:
    name = _check_text(f.name, "file name", 4096, allow_empty=False)
    problem = _name_problem(f.name)
    if problem:
        raise ManifestError(f"cannot write manifest: file name {f.name!r} {problem}")
    where = f"file {f.name!r}"
    if not 0 <= int(f.size) <= MAX_FILE_SIZE:
        raise ManifestError(f"cannot write manifest: {where}: size {f.size} out of range")
    try:
        digest = bytes.fromhex(f.sha256)
    except (ValueError, TypeError):
        digest = b""
    if len(digest) != 32:
        raise ManifestError(f"cannot write manifest: {where}: sha256 {f.sha256!r} is not 64 hex digits")
    dur = float(f.duration_s)
    if not (math.isfinite(dur) and 0 <= dur <= MAX_DURATION_S):
        raise ManifestError(f"cannot write manifest: {where}: duration {dur} out of range")
    streams = sorted(f.streams, key=lambda s: s.key.encode("utf-8"))
    keys = [s.key for s in streams]
    if len(set(keys)) != len(keys):
        raise ManifestError(f"cannot write manifest: {where}: duplicate stream keys")
    if len(streams) > MAX_STREAMS:
        raise ManifestError(f"cannot write manifest: {where}: more than {MAX_STREAMS} streams")
    out = [struct.pack("<H", len(name)), name, struct.pack("<Q", int(f.size)), digest,
           struct.pack("<dH", dur, len(streams))]
    out += [_encode_stream(s, compress, f"{where} stream {s.key!r}") for s in streams]
    return b"".join(out)


def encode_manifest(files: Sequence[ManifestFile], *, label: str = "", algo_id: str, prep_id: str,
                    creator: str | None = None, created: str | None = None, anonymized: bool = False,
                    optional_sections: Sequence[OptionalSection] = (),
                    compress: str = "auto", text_ngrams: TextNgrams | None = None) -> tuple[bytes, str]:
    """Encode a manifest in canonical form.

    Args:
        files: The file entries (sorted here by name, streams by key).
        label: Free text, at most 4096 UTF-8 bytes, no control characters.
        algo_id: Hash function id.
        prep_id: Frame normalisation id.
        creator: Tool and version (default ``overlap-desktop <version>``).
        created: ``YYYY-MM-DDTHH:MM:SSZ`` or ``None`` (not recorded: deterministic output).
        anonymized: Sets the META flag saying names are pseudonyms.
        optional_sections: Non-critical sections to carry (Merkle-bound).
        compress: ``"auto"`` (zstd when it saves >= 3 %), ``"never"`` or ``"always"``.
        text_ngrams: Annotation n-gram hashes to carry in a TEXT_NGRAMS section. Stream
            ``episodes`` are carried in a STREAM_EPISODES section automatically.

    Returns:
        ``(encoded bytes, Merkle root hex)``.

    Raises:
        ManifestError: an input value cannot be represented (names, sizes, timestamps...).
    """
    if compress not in ("auto", "never", "always"):
        raise ValueError(f"compress must be auto, never or always, not {compress!r}")
    for what, value in (("algo_id", algo_id), ("prep_id", prep_id)):
        if not _ID_RE.fullmatch(value or ""):
            raise ManifestError(f"cannot write manifest: {what} {value!r} is not 1-64 of [A-Za-z0-9._:+-]")
    creator = f"overlap-desktop {__version__}" if creator is None else creator
    creator_b = _check_text(creator, "creator", 128)
    created_b = b"" if not created else created.encode("ascii", "replace")
    if created and not _CREATED_RE.fullmatch(created):
        raise ManifestError(f"cannot write manifest: created {created!r} is not YYYY-MM-DDTHH:MM:SSZ")
    label_b = _check_text(label or "", "label", 4096)
    ordered = sorted(files, key=lambda f: f.name.encode("utf-8", "surrogatepass"))
    names = [f.name for f in ordered]
    if len(set(names)) != len(names):
        raise ManifestError("cannot write manifest: duplicate file names")
    if sum(1 for f in ordered if not any(len(st.fingerprints) for st in f.streams)) > MAX_FILES_WITHOUT_SAMPLES:
        raise ManifestError(f"cannot write manifest: more than {MAX_FILES_WITHOUT_SAMPLES} files carry no "
                            "fingerprint (readers refuse that many)")
    if len(ordered) > MAX_FILES:
        raise ManifestError(f"cannot write manifest: more than {MAX_FILES} files; split the export")
    entries = [_encode_entry(f, compress) for f in ordered]
    files_body = b"".join(struct.pack("<I", len(e)) + e for e in entries)
    meta = b"".join([
        struct.pack("<II", META_FLAG_ANONYMIZED if anonymized else 0, len(entries)),
        struct.pack("<B", len(algo_id)), algo_id.encode("ascii"),
        struct.pack("<B", len(prep_id)), prep_id.encode("ascii"),
        struct.pack("<B", len(creator_b)), creator_b,
        struct.pack("<B", len(created_b)), created_b,
        struct.pack("<H", len(label_b)), label_b,
    ])
    extras = list(optional_sections)
    if text_ngrams is not None:
        extras.append(OptionalSection(SEC_TEXT_NGRAMS, NGRAMS_SVERSION,
                                      encode_text_ngrams(text_ngrams, compress)))
    episodes_body = encode_stream_episodes(ordered)
    if episodes_body is not None:
        extras.append(OptionalSection(SEC_STREAM_EPISODES, EPISODES_SVERSION, episodes_body))
    extras.sort(key=lambda s: s.type)
    for s in extras:
        if not SEC_FILES < s.type < SEC_ROOT or s.type in (x.type for x in extras if x is not s):
            raise ManifestError(f"cannot write manifest: optional section type {s.type:#06x} is invalid "
                                "or repeated")
    table = [(SEC_META, 1, FLAG_CRITICAL, len(meta)), (SEC_FILES, 1, FLAG_CRITICAL, len(files_body))]
    table += [(s.type, s.sversion, 0, len(s.body)) for s in extras]
    table.append((SEC_ROOT, 1, FLAG_CRITICAL, 32))
    head = PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(table))
    head += b"".join(SECTION.pack(t, v, fl, 0, ln) for t, v, fl, ln in table)
    header_leaf = head + meta
    leaves = [leaf_hash(header_leaf)] + [leaf_hash(e) for e in entries] + [leaf_hash(s.body) for s in extras]
    root = root_from_leaf_hashes(leaves)
    data = b"".join([header_leaf, files_body] + [s.body for s in extras] + [root])
    decoded = sum(33 * len(s.fingerprints) + (len(s.fingerprints) + 7) // 8 for f in ordered for s in f.streams)
    decoded += text_ngrams.decoded_bytes() if text_ngrams is not None else 0
    if compress != "never" and decoded > decoded_budget(len(data)):
        # Extremely repetitive footage would compress beyond what readers accept from a
        # file this small; raw encoding is always within the budget.
        return encode_manifest(files, label=label, algo_id=algo_id, prep_id=prep_id, creator=creator,
                               created=created, anonymized=anonymized, optional_sections=optional_sections,
                               compress="never", text_ngrams=text_ngrams)
    return data, root.hex()


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` is either the old file or the complete new one."""
    # 0o600: a manifest is a confidential business document (docs/manifest-spec.md).
    atomic_write_bytes(path, data, error_type=ManifestError, open_message="cannot write manifest",
                       write_message="cannot write manifest", mode=0o600)


def write_manifest(files: Sequence[ManifestFile], out: str | os.PathLike[str], **kwargs: Any) -> ExportSummary:
    """Encode ``files`` (see :func:`encode_manifest` for keyword arguments) and write atomically.

    Returns:
        An :class:`ExportSummary`.

    Raises:
        ManifestError: bad input values or the file cannot be written.
    """
    data, root = encode_manifest(files, **kwargs)
    out = Path(out)
    _atomic_write(out, data)
    return ExportSummary(path=out, root=root, files=len(files),
                         hours=sum(float(f.duration_s) for f in files) / 3600.0, bytes=len(data),
                         streams=sum(len(f.streams) for f in files),
                         samples=sum(len(s.fingerprints) for f in files for s in f.streams))


# --------------------------------------------------------------------------- reader


class _Reader:
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
        if _CONTROL_RE.search(s):
            raise self.fail(f"{what} contains control characters", at)
        return s


_U8, _U16, _U32, _U64, _F64 = (struct.Struct(f) for f in ("<B", "<H", "<I", "<Q", "<d"))


def _parse_times(r: _Reader, n: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Read and check the timestamp runs; the times are materialised later by
    :func:`_expand_times`, only once the payload has proved the samples exist."""
    at = r.pos
    t0 = r.u64("first timestamp")
    nruns = r.u32("timestamp run count")
    empty = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint32)
    if n == 0:
        if t0 or nruns:
            raise r.fail("a stream without samples must have t0 = 0 and no timestamp runs", at)
        return 0, *empty
    if t0 > MAX_TIME_NS:
        raise r.fail(f"first timestamp {t0} ns exceeds 2^53", at)
    if nruns > n - 1:
        raise r.fail(f"{nruns} timestamp runs for {n} samples", at)
    raw = r.take(nruns * _RUN_DTYPE.itemsize, f"{nruns} timestamp runs")
    runs = np.frombuffer(raw, dtype=_RUN_DTYPE, count=nruns)
    deltas = runs["delta"]
    counts = runs["count"]
    if nruns:
        if int(deltas.min()) < 1 or int(deltas.max()) > MAX_TIME_NS:
            raise r.fail("a timestamp delta is outside 1..2^53 ns", at)
        if int(counts.min()) < 1:
            raise r.fail("a timestamp run has count 0", at)
        if nruns > 1 and bool(np.any(deltas[1:] == deltas[:-1])):
            raise r.fail("adjacent timestamp runs have equal deltas (non-canonical)", at)
    covered = int(counts.sum(dtype=np.int64))
    if covered != n - 1:
        raise r.fail(f"timestamp runs cover {covered + 1} samples, the stream has {n}", at)
    # A float estimate first, so the exact int64 sums later cannot overflow.
    approx = float(t0) + float(np.dot(deltas.astype(np.float64), counts.astype(np.float64)))
    if approx > MAX_TIME_NS * 1.001:
        raise r.fail("timestamps run past 2^53 ns", at)
    return t0, deltas, counts


def _expand_times(r: _Reader, n: int, t0: int, deltas: np.ndarray, counts: np.ndarray, at: int) -> np.ndarray:
    times = np.empty(n, dtype=np.int64)
    if n == 0:
        return times
    times[0] = t0
    if n > 1:
        np.cumsum(np.repeat(deltas.astype(np.int64), counts.astype(np.int64)), out=times[1:])
        times[1:] += t0
    if int(times[-1]) > MAX_TIME_NS:
        raise r.fail("timestamps run past 2^53 ns", at)
    return times


def _crowded_second(times: np.ndarray) -> int | None:
    """The first timestamp (ns) starting a window shorter than one second that holds more
    than ``_CROWDED_SAMPLES`` samples, or ``None`` (times are increasing)."""
    k = _CROWDED_SAMPLES
    if len(times) <= k:
        return None
    t = np.asarray(times, dtype=np.int64)
    bad = np.flatnonzero(t[k:] - t[:-k] < 1_000_000_000)
    return int(t[bad[0]]) if len(bad) else None


def decoded_budget(size: int) -> int:
    """The default decoded-payload budget for a manifest of ``size`` bytes."""
    return min(MAX_DECODED_BYTES, DECODED_FLOOR + DECODED_RATIO * size)


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _parse_payload(r: _Reader, n: int, budget: _Budget) -> bytes:
    at = r.pos
    enc = r.u8("payload encoding")
    stored = r.u32("payload length")
    want = 33 * n + (n + 7) // 8
    if enc == 0:
        if stored != want:
            raise r.fail(f"raw payload is {stored} bytes, {n} samples need {want}", at)
        r.need(want, f"payload of {n} samples")
        if want > budget.left:
            raise r.fail(f"decoded payloads exceed the {budget.left}-byte budget", at)
        budget.left -= want
        return bytes(r.take(want, "payload"))
    if enc != 1:
        raise r.fail(f"unknown payload encoding {enc}", at)
    if want > budget.left:
        raise r.fail(f"{n} samples need {want} decoded bytes, over the remaining budget of "
                     f"{budget.left}", at)
    packed = bytes(r.take(stored, "compressed payload"))
    import zstandard

    # The frame must declare its size and it must be the one we expect: the library
    # ignores max_output_size when a frame declares a (possibly huge) size.
    try:
        params = zstandard.get_frame_parameters(packed)
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is not a zstd frame ({exc})", at) from None
    if params.content_size != want:
        raise r.fail(f"compressed payload declares {params.content_size} bytes, {n} samples need {want}",
                     at)
    if params.window_size > (1 << 27):
        raise r.fail(f"compressed payload asks for a {params.window_size}-byte window", at)
    try:
        out = zstandard.ZstdDecompressor().decompress(packed, max_output_size=want)
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is corrupt ({exc})", at) from None
    if len(out) != want:
        raise r.fail(f"compressed payload decoded to {len(out)} bytes, expected {want}", at)
    # The one-shot call ignores bytes after the frame; a streaming pass over the frame just
    # validated (so bounded by it) reports them. No unparsed bytes may hide in a payload.
    try:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        dobj.decompress(packed)
        trailing = len(dobj.unused_data) if dobj.eof else -1
    except zstandard.ZstdError as exc:
        raise r.fail(f"compressed payload is corrupt ({exc})", at) from None
    if trailing:
        raise r.fail("compressed payload has bytes after its zstd frame" if trailing > 0
                     else "compressed payload does not end its zstd frame", at)
    budget.left -= want
    return out


def _parse_stream(r: _Reader, budget: _Budget) -> ManifestStream:
    key = r.text(2, "stream key", 256, allow_empty=False)
    r.where += f" stream {key!r}"
    at = r.pos
    fps = r.f64("fps", 0.0, MAX_FPS)
    if fps <= 0:
        raise r.fail("fps must be positive", at)
    duration = r.f64("stream duration", 0.0, MAX_DURATION_S)
    at = r.pos
    n = r.u32("sample count")
    # Cheapest possible bound before anything else: a compressed payload may be small, but
    # its decoded size must still fit the budget.
    if 33 * n + (n + 7) // 8 > budget.left:
        raise r.fail(f"sample count {n} needs {33 * n + (n + 7) // 8} decoded bytes, over the "
                     f"remaining budget of {budget.left}", at)
    at = r.pos
    nspans = r.u32("indeterminate span count")
    if nspans * 17 > r.end - r.pos:
        raise r.fail(f"{nspans} indeterminate spans need at least {nspans * 17} bytes but "
                     f"{r.end - r.pos} remain", at)
    spans: list[Span] = []
    for _ in range(nspans):
        sat = r.pos
        start = r.f64("span start", 0.0, MAX_DURATION_S)
        end = r.f64("span end", 0.0, MAX_DURATION_S)
        if end < start:
            raise r.fail(f"span ends ({end}) before it starts ({start})", sat)
        reason = r.text(1, "span reason", 255)
        spans.append(Span(start, end, reason))
    tat = r.pos
    t0, deltas, counts = _parse_times(r, n)
    payload = _parse_payload(r, n, budget)
    times = _expand_times(r, n, t0, deltas, counts, tat)
    crowded = _crowded_second(times)
    if crowded is not None:
        raise r.fail(f"more than {_CROWDED_SAMPLES} samples within one second of footage (from "
                     f"{crowded / 1e9:.6f} s); at most {MAX_SAMPLES_PER_SECOND} per second are accepted, so the "
                     "memory a comparison needs stays proportional to footage", tat)
    codes = np.frombuffer(payload, dtype=np.uint8, count=32 * n).reshape(n, 1, 32).copy()
    quality = np.frombuffer(payload, dtype=np.uint8, count=n, offset=32 * n).copy()
    if n and int(quality.max()) > 100:
        raise r.fail("a quality value is over 100")
    bits = np.frombuffer(payload, dtype=np.uint8, count=(n + 7) // 8, offset=33 * n)
    unpacked = np.unpackbits(bits, bitorder="little")
    if unpacked[n:].any():
        raise r.fail("usable bitmap has padding bits set")
    usable = unpacked[:n].astype(bool)
    fp = StreamFingerprints(times_ns=times, quality=quality, codes=codes, variants=(Variant(),),
                            usable=usable, indeterminate=spans, fps=fps, duration_s=duration)
    return ManifestStream(key=key, fps=fps, fingerprints=fp)


def _parse_entry(r: _Reader, budget: _Budget) -> ManifestFile:
    base = r.where
    name = r.text(2, "file name", 4096, allow_empty=False)
    problem = _name_problem(name)
    if problem:
        raise r.fail(f"file name {name!r} {problem}")
    r.where = f"{base} ({name})"
    size = r.u64("file size")
    if size > MAX_FILE_SIZE:
        raise r.fail(f"file size {size} exceeds 2^62")
    digest = bytes(r.take(32, "sha256")).hex()
    duration = r.f64("duration", 0.0, MAX_DURATION_S)
    at = r.pos
    nstreams = r.u16("stream count")
    if nstreams > MAX_STREAMS:
        raise r.fail(f"stream count {nstreams} exceeds {MAX_STREAMS}", at)
    if nstreams * 44 > r.end - r.pos:
        raise r.fail(f"{nstreams} streams need at least {nstreams * 44} bytes but "
                     f"{r.end - r.pos} remain", at)
    streams: list[ManifestStream] = []
    prev: bytes | None = None
    head = r.where
    for _ in range(nstreams):
        sat = r.pos
        r.where = head
        s = _parse_stream(r, budget)
        kb = s.key.encode("utf-8")
        if prev is not None and kb <= prev:
            r.where = head
            raise r.fail(f"stream keys out of order or repeated at {s.key!r}", sat)
        prev = kb
        streams.append(s)
    r.where = head
    return ManifestFile(name=name, size=size, sha256=digest, duration_s=duration, streams=streams)


def parse_manifest(data: bytes | bytearray | memoryview, *, source: str | os.PathLike[str] | None = None,
                   expect_algo: str | None = None, expect_prep: str | None = None,
                   max_decoded: int | None = None) -> Manifest:
    """Parse and verify an encoded manifest held in memory.

    Args:
        data: The whole manifest.
        source: Named in error messages (a path).
        expect_algo: Refuse a manifest whose ``algo_id`` differs.
        expect_prep: Refuse a manifest whose ``prep_id`` differs.
        max_decoded: Budget for decoded fingerprint payloads, bytes (default
            :func:`decoded_budget` of the input size).

    Returns:
        The verified :class:`Manifest`.

    Raises:
        ManifestError: on any defect, with the section, entry and offset in the message.
    """
    src = os.fspath(source) if source is not None else None
    if max_decoded is None:
        max_decoded = decoded_budget(len(data))
    try:
        return _parse(memoryview(data).cast("B"), src, expect_algo, expect_prep, max_decoded)
    except ManifestError:
        raise
    except OverlapError as exc:  # e.g. Cancelled is not expected here; keep the type contract
        raise ManifestError(str(exc), path=src) from exc
    except (MemoryError, RecursionError) as exc:
        raise ManifestError(f"manifest too large to load ({type(exc).__name__})", path=src) from None
    except Exception as exc:  # a parser bug must still not escape as a foreign type
        raise ManifestError(f"manifest could not be parsed ({type(exc).__name__}: {exc})",
                            path=src) from exc


def _parse(buf: memoryview, src: str | None, expect_algo: str | None, expect_prep: str | None,
           max_decoded: int) -> Manifest:
    r = _Reader(buf, src)
    if len(buf) < PREAMBLE.size or bytes(buf[:8]) != MAGIC:
        if len(buf) >= 8 and bytes(buf[:8]) == MAGIC:
            raise r.fail("file ends inside the preamble")
        raise ManifestError("not an overlap manifest (bad magic bytes)", path=src)
    _, version, flags, nsect = r.unpack(PREAMBLE, "preamble")
    if version != FORMAT_VERSION:
        newer = " (written by a newer overlap; upgrade to read it)" if version > FORMAT_VERSION else ""
        raise r.fail(f"unsupported format version {version}, this reader reads {FORMAT_VERSION}{newer}", 8)
    if flags:
        raise r.fail(f"unknown preamble flags {flags:#06x}", 10)
    if not 3 <= nsect <= MAX_SECTIONS:
        raise r.fail(f"section count {nsect} outside 3..{MAX_SECTIONS}", 12)
    r.where = "section table"
    table: list[tuple[int, int, int, int, int]] = []  # type, sversion, flags, length, table offset
    for i in range(nsect):
        at = r.pos
        t, v, fl, res, ln = r.unpack(SECTION, f"section table record {i}")
        if res:
            raise r.fail(f"record {i}: reserved field is {res}, must be 0", at)
        if fl & ~FLAG_CRITICAL:
            raise r.fail(f"record {i}: unknown section flags {fl:#06x}", at)
        if table and t <= table[-1][0]:
            raise r.fail(f"record {i}: section type {t:#06x} out of order or repeated", at)
        table.append((t, v, fl, ln, at))
    body_bytes = r.end - r.pos
    total = 0
    for t, _v, _fl, ln, at in table:
        total += ln
        if total > body_bytes:
            raise r.fail(f"section {SECTION_NAMES.get(t, hex(t))} length {ln} runs past the end of "
                         f"the file ({body_bytes} body bytes)", at)
    if total != body_bytes:
        raise r.fail(f"sections cover {total} bytes but {body_bytes} follow the table "
                     "(trailing or missing bytes)")
    for pos, (want, name) in ((0, (SEC_META, "META")), (1, (SEC_FILES, "FILES")),
                              (nsect - 1, (SEC_ROOT, "ROOT"))):
        t, v, fl, ln, at = table[pos]
        if t != want:
            raise r.fail(f"section {pos} is type {t:#06x}, expected {name}", at)
        if v != 1:
            raise r.fail(f"{name} section version {v} is not supported (this reader knows 1)", at)
        if not fl & FLAG_CRITICAL:
            raise r.fail(f"{name} section is not marked critical", at)
    if table[-1][3] != 32:
        raise r.fail(f"ROOT section is {table[-1][3]} bytes, must be 32", table[-1][4])
    for t, v, fl, _ln, at in table[2:-1]:
        if fl & FLAG_CRITICAL:
            raise r.fail(f"critical section type {t:#06x} version {v} is not understood by this "
                         "reader (written by a newer overlap?)", at)

    # META
    r.where = "META"
    meta_end = r.pos + table[0][3]
    r.end = meta_end
    at = r.pos
    mflags = r.u32("flags")
    if mflags & ~META_FLAG_ANONYMIZED:
        raise r.fail(f"unknown META flags {mflags:#010x}", at)
    at = r.pos
    nfiles = r.u32("file count")
    files_len = table[1][3]
    if nfiles > MAX_FILES or nfiles * (4 + MIN_ENTRY) > files_len:
        raise r.fail(f"file count {nfiles} cannot fit the {files_len}-byte FILES section "
                     f"(limit {MAX_FILES})", at)
    ids: list[str] = []
    for what in ("algo_id", "prep_id"):
        at = r.pos
        s = r.text(1, what, 64, allow_empty=False)
        if not _ID_RE.fullmatch(s):
            raise r.fail(f"{what} {s!r} is not 1-64 of [A-Za-z0-9._:+-]", at)
        ids.append(s)
    algo_id, prep_id = ids
    creator = r.text(1, "creator", 128)
    at = r.pos
    created = r.text(1, "created", 64)
    if created and not _CREATED_RE.fullmatch(created):
        raise r.fail(f"created {created!r} is not YYYY-MM-DDTHH:MM:SSZ", at)
    label = r.text(2, "label", 4096)
    if r.pos != meta_end:
        raise r.fail(f"{meta_end - r.pos} unexplained bytes at the end of META")
    leaves = [leaf_hash(buf[:meta_end])]

    # FILES
    files_end = meta_end + files_len
    r.end = files_end
    budget = _Budget(max_decoded)
    files: list[ManifestFile] = []
    prev: bytes | None = None
    empty = 0
    for i in range(nfiles):
        r.where = f"FILES entry {i + 1}"
        at = r.pos
        elen = r.u32("entry length")
        if elen < MIN_ENTRY:
            raise r.fail(f"entry length {elen} is below the minimum {MIN_ENTRY}", at)
        r.need(elen, "entry")
        start = r.pos
        r.end = start + elen
        f = _parse_entry(r, budget)
        if r.pos != r.end:
            raise r.fail(f"{r.end - r.pos} unexplained bytes at the end of the entry")
        r.end = files_end
        nb = f.name.encode("utf-8")
        if prev is not None and nb <= prev:
            raise r.fail(f"file names out of order or repeated at {f.name!r}", start)
        prev = nb
        leaves.append(leaf_hash(buf[start:start + elen]))
        files.append(f)
        if not any(len(st.fingerprints) for st in f.streams):
            empty += 1
            if empty > MAX_FILES_WITHOUT_SAMPLES:
                raise r.fail(f"more than {MAX_FILES_WITHOUT_SAMPLES} file entries carry no fingerprint; such "
                             "entries cannot match anything and are refused beyond that many", start)
    r.where = "FILES"
    if r.pos != files_end:
        raise r.fail(f"{files_end - r.pos} bytes after the last file entry")

    # optional sections, then ROOT
    optional: list[OptionalSection] = []
    text_ngrams: TextNgrams | None = None
    for t, v, _fl, ln, _at in table[2:-1]:
        body = bytes(buf[r.pos:r.pos + ln])
        leaves.append(leaf_hash(body))
        # Sections this version understands are parsed as strictly as FILES (bounded to
        # their own length); other versions of them, and unknown types, are kept verbatim.
        if (t, v) in ((SEC_TEXT_NGRAMS, NGRAMS_SVERSION), (SEC_STREAM_EPISODES, EPISODES_SVERSION)):
            r.where, r.end = SECTION_NAMES[t], r.pos + ln
            if t == SEC_TEXT_NGRAMS:
                text_ngrams = parse_text_ngrams(r, budget)
            else:
                for (fi, key), spans in parse_stream_episodes(r, files).items():
                    next(s for s in files[fi].streams if s.key == key).episodes = spans
            r.end = len(buf)
        else:
            r.pos += ln
            optional.append(OptionalSection(type=t, sversion=v, body=body))
    r.where = "ROOT"
    r.end = len(buf)
    stored = bytes(r.take(32, "Merkle root"))
    computed = root_from_leaf_hashes(leaves)
    if stored != computed:
        raise ManifestError(f"Merkle root mismatch: the file was altered or damaged (stored "
                            f"{stored.hex()}, computed {computed.hex()})", path=src)
    if expect_algo is not None and algo_id != expect_algo:
        raise ManifestError(f"hash function mismatch: manifest uses algo_id {algo_id!r}, this side uses "
                            f"{expect_algo!r}; comparisons need the same hash function", path=src)
    if expect_prep is not None and prep_id != expect_prep:
        raise ManifestError(f"normalisation mismatch: manifest uses prep_id {prep_id!r}, this side uses "
                            f"{expect_prep!r}; comparisons need the same frame normalisation", path=src)
    return Manifest(label=label, algo_id=algo_id, prep_id=prep_id, created=created or None,
                    creator=creator, root=computed.hex(), files=files,
                    anonymized=bool(mflags & META_FLAG_ANONYMIZED), version=FORMAT_VERSION,
                    optional_sections=optional, size_bytes=len(buf), text_ngrams=text_ngrams)


def read_manifest(path: str | os.PathLike[str], *, expect_algo: str | None = None,
                  expect_prep: str | None = None, max_bytes: int = MAX_MANIFEST_BYTES,
                  max_decoded: int | None = None) -> Manifest:
    """Read, parse and verify a manifest file.

    Args:
        path: The ``.ovlm`` file.
        expect_algo: Refuse a manifest whose ``algo_id`` differs (message names both).
        expect_prep: Refuse a manifest whose ``prep_id`` differs (message names both).
        max_bytes: Refuse files larger than this before reading them.
        max_decoded: Budget for decoded fingerprint payloads (default :func:`decoded_budget`).

    Returns:
        The verified :class:`Manifest`.

    Raises:
        ManifestError: unreadable, oversized, malformed, tampered or incompatible.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise ManifestError(f"manifest is {size} bytes, over the {max_bytes}-byte limit", path=p)
            # One byte more than expected: a file that grew while being read is refused.
            data = fh.read(size + 1)
    except ManifestError:
        raise
    except IsADirectoryError:
        raise ManifestError("is a folder, not a manifest", path=p) from None
    except FileNotFoundError:
        raise ManifestError("no such file", path=p) from None
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", path=p) from None
    if len(data) != size:
        raise ManifestError("file changed while being read", path=p)
    m = parse_manifest(data, source=p, expect_algo=expect_algo, expect_prep=expect_prep,
                       max_decoded=max_decoded)
    m.path = p
    return m


def inspect_manifest(path: str | os.PathLike[str] | Manifest) -> dict[str, Any]:
    """Summarise a manifest for people and the GUI (it is fully verified first).

    Args:
        path: A manifest file, or an already-read :class:`Manifest`.

    Returns:
        A JSON-ready dict: format, label, algo_id, prep_id, created, creator, root,
        anonymized, files, streams, samples, hours, sampling (distinct fps values),
        bytes, bytes_per_hour, optional_sections (not understood), ``file_list`` (name,
        size, duration, streams), ``text_ngrams`` (tokenizer, documents, ns, counts per
        n; ``None`` without annotation hashes) and ``episodes`` (streams, spans).

    Raises:
        ManifestError: the manifest is refused.
    """
    m = path if isinstance(path, Manifest) else read_manifest(path)
    streams = [s for f in m.files for s in f.streams]
    samples = sum(len(s.fingerprints) for s in streams)
    hours = m.hours
    return {
        "format": f"ovlm/{m.version}",
        "path": str(m.path) if m.path else None,
        "label": m.label,
        "algo_id": m.algo_id,
        "prep_id": m.prep_id,
        "created": m.created,
        "creator": m.creator,
        "root": m.root,
        "anonymized": m.anonymized,
        "files": len(m.files),
        "streams": len(streams),
        "samples": samples,
        "hours": hours,
        "indeterminate_hours": sum(sp.duration_s for s in streams for sp in s.fingerprints.indeterminate)
        / 3600.0,
        "sampling": sorted({s.fps for s in streams}),
        "bytes": m.size_bytes,
        "bytes_per_hour": (m.size_bytes / hours) if hours > 0 else None,
        "optional_sections": [{"type": s.type, "name": SECTION_NAMES.get(s.type, f"{s.type:#06x}"),
                               "version": s.sversion, "bytes": len(s.body), "understood": False}
                              for s in m.optional_sections],
        "file_list": [{"name": f.name, "size": f.size, "sha256": f.sha256, "duration_s": f.duration_s,
                       "streams": [s.key for s in f.streams]} for f in m.files],
        **describe_sections(m.text_ngrams, {(i, s.key): s.episodes for i, f in enumerate(m.files)
                                            for s in f.streams if s.episodes}),
    }


# --------------------------------------------------------------------------- export from an index


def stride_fingerprints(fp: StreamFingerprints, fps: float) -> StreamFingerprints:
    """Keep the identity variant at (at most) ``fps`` samples per second, exact timestamps.

    For each grid point ``k / fps`` the latest sample at or before it is kept (the
    frame shown at that moment), so kept timestamps are the index's own, never
    invented; sampling already at or below ``fps`` is kept whole.

    Args:
        fp: Fingerprints as stored in the index (any number of variants).
        fps: Target rate.

    Returns:
        Fingerprints with one variant, recorded ``fps = min(fps, fp.fps)``.
    """
    n = len(fp)
    codes = np.asarray(fp.codes)
    if codes.ndim == 3:
        codes = codes[:, :1, :]
    else:
        codes = codes.reshape(n, 1, 32)
    times = np.asarray(fp.times_ns, dtype=np.int64)
    if n == 0 or fps >= fp.fps:
        keep = np.arange(n)
        rate = float(fp.fps)
    else:
        rate = float(fps)
        step_ns = 1e9 / rate
        last = int(times[-1])
        grid = np.rint(np.arange(0, int(last // step_ns) + 1, dtype=np.float64) * step_ns).astype(np.int64)
        idx = np.searchsorted(times, grid, side="right") - 1
        keep = np.unique(idx[idx >= 0])
    return StreamFingerprints(times_ns=times[keep].copy(),
                              quality=np.asarray(fp.quality, dtype=np.uint8)[keep].copy(),
                              codes=np.ascontiguousarray(codes[keep]), variants=(Variant(),),
                              usable=np.asarray(fp.usable, dtype=bool)[keep].copy(),
                              indeterminate=list(fp.indeterminate), fps=rate,
                              duration_s=float(fp.duration_s))


def _stride(fp: StreamFingerprints, fps: float) -> StreamFingerprints:
    """Thin to ``fps`` with the pipeline's own :func:`~overlap_desktop.core.ingest.fingerprint.resample`
    (one definition of the time grid project-wide); :func:`stride_fingerprints` otherwise."""
    try:
        from overlap_desktop.core.ingest.fingerprint import resample
    except ImportError:  # pragma: no cover - only while the fingerprint module is absent
        return stride_fingerprints(fp, fps)
    out = resample(fp, fps, identity_only=True)
    if out.codes.ndim != 3 or out.codes.shape[1] != 1:
        out.codes = np.ascontiguousarray(np.asarray(out.codes).reshape(len(out), -1, 32)[:, :1])
        out.variants = (Variant(),)
    return out


def _sanitize_name(rel: str) -> str:
    # Non-UTF-8 bytes (surrogate escapes) and control characters cannot go in a
    # manifest; replace them visibly rather than refusing the export.
    raw = rel.encode("utf-8", "surrogateescape")
    s = raw.decode("utf-8", "replace")
    s = _CONTROL_RE.sub("\ufffd", s).replace("\\", "/")
    parts = [p for p in s.split("/") if p not in ("", ".", "..")] or ["unnamed"]
    if _DRIVE_RE.match(parts[0]):
        parts[0] = parts[0].replace(":", "_", 1)
    return "/".join(parts)


def _anon_ext(name: str) -> str:
    ext = os.path.splitext(name)[1][1:].lower()
    return f".{ext}" if _EXT_RE.fullmatch(ext) else ""


def _common_base(paths: Sequence[str]) -> str:
    parents = [os.path.dirname(os.path.abspath(p)) for p in paths]
    try:
        return os.path.commonpath(parents) if parents else ""
    except ValueError:  # different drives on Windows
        return ""


def _annotation_ngrams(sources: Sequence[str | os.PathLike[str]], fields: Sequence[str] | None,
                       tokenizer: str | None, ns: Sequence[int] | None,
                       cancel: CancelCallback | None) -> TextNgrams:
    """Keyed n-gram hashes of the annotation sources (the text itself is never written)."""
    from overlap_desktop.core.text.overlap import DEFAULT_TOKENIZER, iter_documents, keyed_ngram_hashes

    tokenizer = tokenizer or DEFAULT_TOKENIZER
    ns = sorted(set(int(n) for n in (ns if ns else range(8, 14))))
    texts: list[str] = []
    for src in sources:
        check_cancel(cancel)
        try:
            texts.extend(d.text for d in iter_documents(Path(src), fields=fields))
        except RecursionError:
            # JSON nested thousands of levels deep exhausts any recursive reader; it is
            # not annotation text, so the file is refused by name rather than crashing.
            raise InputError("cannot export: this annotation file nests JSON too deeply to be annotation "
                             "text (flatten it, or give the text one record per line)", path=src) from None
    if not texts:
        raise ManifestError("cannot export: the annotation sources hold no text",
                            path=os.fspath(sources[0]) if len(sources) == 1 else None)
    return TextNgrams(tokenizer=tokenizer, hashes=keyed_ngram_hashes(texts, tokenizer=tokenizer, ns=ns),
                      documents=len(texts))


def _index_episodes(idx: Any) -> Any:
    """``(indexed file, stream key) -> reader's episode spans`` (LeRobot), from the stream
    details the index recorded; empty for indexes or streams without them."""
    try:
        sids = {(fid, key): sid for sid, fid, key in idx.stream_ids()}
    except AttributeError:
        sids = {}

    def lookup(ifile: Any, key: str) -> Any:
        sid = sids.get((getattr(ifile, "id", None), key))
        if sid is None:
            return []
        try:
            return (idx.stream_details(sid).extra or {}).get("episodes") or []
        except (KeyError, AttributeError, ValueError):
            return []

    return lookup


def export_manifest(index: Index | str | os.PathLike[str] | None, out: str | os.PathLike[str], *,
                    paths: Sequence[str | os.PathLike[str]] | None = None, label: str | None = None,
                    anonymize: bool = False, fps: float = 1.0, created: str | bool | None = None,
                    compress: str = "auto", config: Config | None = None,
                    annotations: Sequence[str | os.PathLike[str]] | None = None,
                    annotation_fields: Sequence[str] | None = None,
                    annotation_tokenizer: str | None = None,
                    annotation_ns: Sequence[int] | None = None,
                    progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> ExportSummary:
    """Export the index (or the files under ``paths``) as a manifest, written atomically.

    Args:
        index: An open :class:`~overlap_desktop.core.index.store.Index`, its folder, or ``None``
            for the configured default.
        out: Destination ``.ovlm`` file (replaced atomically).
        paths: Only files under these paths (default: every indexed file).
        label: Free text shown to the buyer.
        anonymize: Replace names by ``file-NNNNNN.ext`` and stream keys by ``stream-N``.
        fps: Fingerprints kept per second (strided down from the index's rate).
        created: ``True`` to record the current UTC time, a ``YYYY-MM-DDTHH:MM:SSZ``
            string, or ``None`` (default: not recorded, so re-exports are byte-identical).
        compress: See :func:`encode_manifest`.
        config: Settings used to find the index when ``index`` is ``None``.
        annotations: Annotation sources (text, JSONL/JSON, a LeRobot folder, MCAP string
            topics; see :func:`~overlap_desktop.core.text.overlap.iter_documents`) whose keyed
            n-gram hashes go into the TEXT_NGRAMS section (no text is written).
        annotation_fields: JSON fields holding the annotation text (default: every string field).
        annotation_tokenizer: Tokenizer id (default ``alnum-lower-v1``).
        annotation_ns: n values hashed (default 8..13, the range the n-choosing rule clamps to).
        progress: Receives ``Progress(stage="export", unit="files")``.
        cancel: Polled between files.

    Returns:
        An :class:`ExportSummary`.

    Raises:
        ManifestError: nothing to export, or the file cannot be written.
        Cancelled: ``cancel`` returned True (nothing is written).
    """
    if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
        raise ManifestError(f"cannot export: fps {fps} outside (0, {MAX_FPS}]")
    if created is True:
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif created is False:
        created = None
    if index is None or not hasattr(index, "streams"):
        from overlap_desktop.core.index.store import open_index

        with open_index(None if index is None else Path(index), config=config, create=False,
                        readonly=True) as idx:
            return export_manifest(idx, out, paths=paths, label=label, anonymize=anonymize, fps=fps,
                                   created=created, compress=compress, annotations=annotations,
                                   annotation_fields=annotation_fields,
                                   annotation_tokenizer=annotation_tokenizer, annotation_ns=annotation_ns,
                                   progress=progress, cancel=cancel)
    idx = index
    text_ngrams = None
    if annotations:
        text_ngrams = _annotation_ngrams(annotations, annotation_fields, annotation_tokenizer, annotation_ns,
                                         cancel)
    episodes_of = _index_episodes(idx)
    sel = None if paths is None else [Path(p) for p in paths]
    grouped: dict[str, tuple[Any, list[tuple[str, StreamFingerprints]]]] = {}
    done = 0
    for ifile, key, fp in idx.streams(sel):
        check_cancel(cancel)
        fpath = os.fspath(ifile.path)
        if fpath not in grouped:
            grouped[fpath] = (ifile, [])
            done += 1
            if progress is not None:
                progress(Progress(stage="export", done=done - 1, total=None, unit="files", current=fpath))
        grouped[fpath][1].append((key, _stride(fp, fps)))
    if not grouped:
        where = "under the given paths" if paths else "in the index"
        raise ManifestError(f"nothing to export: no indexed files {where}")
    order = sorted(grouped)
    base = _common_base(order)
    files: list[ManifestFile] = []
    for fpath in order:
        ifile, streams = grouped[fpath]
        digest = getattr(ifile, "sha256", None)
        if not isinstance(digest, str) or len(digest) != 64:
            raise ManifestError("cannot export: the index has no sha256 for this file; re-index it",
                                path=fpath)
        durations = [s.duration_s for _, s in streams]
        dur = getattr(ifile, "duration_s", None)
        dur = float(dur) if dur is not None and math.isfinite(float(dur)) else max(durations, default=0.0)
        rel = os.path.relpath(fpath, base) if base else os.path.basename(fpath)
        files.append(ManifestFile(name=_sanitize_name(rel.replace(os.sep, "/")), size=int(ifile.size),
                                  sha256=digest.lower(), duration_s=max(0.0, dur),
                                  streams=[ManifestStream(key=k, fps=s.fps, fingerprints=s,
                                                          episodes=clean_episodes(
                                                              episodes_of(ifile, k), s.duration_s))
                                           for k, s in streams]))
    if anonymize:
        files.sort(key=lambda f: (f.sha256, f.size, f.name))
        width = max(6, len(str(len(files))))
        for i, f in enumerate(files, 1):
            ext = _anon_ext(f.name)
            f.name = f"file-{i:0{width}d}{ext}"
            f.streams.sort(key=lambda s: s.key.encode("utf-8"))
            for j, s in enumerate(f.streams, 1):
                s.key = f"stream-{j}"
    else:
        seen: dict[str, int] = {}
        for f in files:
            # Sanitising can make two names equal; keep them apart deterministically.
            if f.name in seen:
                seen[f.name] += 1
                stem, ext = os.path.splitext(f.name)
                f.name = f"{stem}~{seen[f.name]}{ext}"
            seen.setdefault(f.name, 1)
    check_cancel(cancel)
    summary = write_manifest(files, out, label=label or "", algo_id=idx.algo_id, prep_id=idx.prep_id,
                             created=created or None, anonymized=anonymize, compress=compress,
                             text_ngrams=text_ngrams)
    if progress is not None:
        progress(Progress(stage="export", done=len(files), total=len(files), unit="files",
                          message=f"wrote {summary.bytes} bytes"))
    return summary

