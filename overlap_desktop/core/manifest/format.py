"""The ``.ovlm`` manifest format: byte-layout constants, limits and the data model.

The byte layout is specified in docs/manifest-spec.md (format version 1). This module
holds what the writer (:mod:`~overlap_desktop.core.manifest.encode`) and the strict
reader (:mod:`~overlap_desktop.core.manifest.parse`) must agree on: magic bytes,
section types, the limits a manifest may not exceed, and the dataclasses a manifest
parses into. Exporting from an index lives in :mod:`~overlap_desktop.core.manifest.export`,
the human summary in :mod:`~overlap_desktop.core.manifest.inspect`.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from overlap_desktop.core.manifest.signature import SEC_SIGNATURE, Signature
from overlap_desktop.core.types import StreamFingerprints

__all__ = [
    "CONTROL_RE",
    "CREATED_RE",
    "CROWDED_SAMPLES",
    "DRIVE_RE",
    "EXT_RE",
    "FORMAT_VERSION",
    "ID_RE",
    "MAGIC",
    "MAX_DECODED_BYTES",
    "MAX_FILES_WITHOUT_SAMPLES",
    "MAX_MANIFEST_BYTES",
    "MAX_SAMPLES_PER_SECOND",
    "Manifest",
    "ManifestFile",
    "ManifestStream",
    "OptionalSection",
    "RUN_DTYPE",
    "TextNgrams",
    "crowded_second",
    "name_problem",
]

MAGIC = b"\x89OVLM\r\n\x1a"
FORMAT_VERSION = 1

SEC_META = 0x0001
SEC_FILES = 0x0002
SEC_TEXT_NGRAMS = 0x0003  # hashed annotation n-grams (optional; sections.py)
SEC_STREAM_EPISODES = 0x0004  # episode spans of streams (optional; sections.py)
SEC_ROOT = 0xFFFF
FLAG_CRITICAL = 0x0001
SECTION_NAMES = {SEC_META: "META", SEC_FILES: "FILES", SEC_TEXT_NGRAMS: "TEXT_NGRAMS",
                 SEC_STREAM_EPISODES: "STREAM_EPISODES", SEC_ROOT: "ROOT"}
SECTION_NAMES[SEC_SIGNATURE] = "SIGNATURE"  # a vendor's signature (optional; signature.py)
META_FLAG_ANONYMIZED = 0x0001

#: Default cap on the manifest file size, checked before reading.
MAX_MANIFEST_BYTES = 2 << 30
#: Hard cap on the sum of decoded fingerprint payloads (zstd can expand a small file).
MAX_DECODED_BYTES = 4 << 30
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
CROWDED_SAMPLES = MAX_SAMPLES_PER_SECOND + MAX_SAMPLES_PER_SECOND // 20 + 1
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

ID_RE = re.compile(r"[A-Za-z0-9._:+\-]{1,64}")
CREATED_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
DRIVE_RE = re.compile(r"[A-Za-z]:")
EXT_RE = re.compile(r"[a-z0-9]{1,8}")

RUN_DTYPE = np.dtype([("delta", "<u8"), ("count", "<u4")])


# --------------------------------------------------------------------------- data model


@dataclass(slots=True)
class TextNgrams:
    """Keyed 64-bit hashes of a vendor's annotation n-grams (no text).

    Attributes:
        tokenizer: Tokenizer id (a key of :data:`overlap_desktop.core.text.overlap.TOKENIZERS`).
        hashes: n -> sorted unique ``uint64`` hashes made by
            :func:`~overlap_desktop.core.text.overlap.keyed_ngram_hashes`.
        documents: How many annotation texts were hashed (0 when not recorded).
    """

    tokenizer: str
    hashes: dict[int, np.ndarray] = field(default_factory=dict)
    documents: int = 0

    @property
    def ns(self) -> list[int]:
        return sorted(self.hashes)

    def counts(self) -> dict[int, int]:
        """Number of hashes per n."""
        return {n: int(self.hashes[n].shape[0]) for n in self.ns}

    def decoded_bytes(self) -> int:
        return 8 * sum(self.counts().values())



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
        signature: The vendor's verified signature (optional SIGNATURE section), or
            ``None`` when the manifest is unsigned.
        prep_id_written: The normalisation the file itself names, when it was read as a later,
            comparable one (``prep.PREP_PREDECESSORS``); else equal to ``prep_id`` or empty.
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
    signature: Signature | None = None
    prep_id_written: str = ""

    @property
    def duration_s(self) -> float:
        """Total offered footage in seconds."""
        return float(sum(f.duration_s for f in self.files))

    @property
    def hours(self) -> float:
        return self.duration_s / 3600.0


# --------------------------------------------------------------------------- rules both sides check


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a safe relative manifest name, or ``None`` if it is."""
    if CONTROL_RE.search(name):
        return "contains control characters"
    if name.startswith("/"):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    if DRIVE_RE.match(parts[0]):
        return "starts with a drive letter"
    return None


def crowded_second(times: np.ndarray) -> int | None:
    """The first timestamp (ns) starting a window shorter than one second that holds more
    than ``CROWDED_SAMPLES`` samples, or ``None`` (times are increasing)."""
    k = CROWDED_SAMPLES
    if len(times) <= k:
        return None
    t = np.asarray(times, dtype=np.int64)
    bad = np.flatnonzero(t[k:] - t[:-k] < 1_000_000_000)
    return int(t[bad[0]]) if len(bad) else None
