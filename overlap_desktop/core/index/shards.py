"""Candidate search over fingerprint shards: multi-index hashing on disk.

A shard is a folder of ``.npy`` arrays holding N codes (256-bit PDQ, one per corpus
frame *and* variant) and, for each of ``m`` substrings ("chunks") of the code, an
index of the chunk values: the rows sorted by chunk value (``perm``), a prefix table
of bucket offsets by the value's top bits (``off``; sized to the shard so a bucket holds
~4 rows in format 5, ~2 in format 4, ~16 in format-4 shards of its earlier builds, ~4 in
formats 2-3), and the remaining
low bits of each sorted value (``low``, one byte per row in shards of ~100,000 rows or more).
The ``m`` chunks of each table are stacked in one file (``off.npy`` is ``(m, buckets + 1)``),
so a search maps three table files per shard and looks every chunk up in one vectorised pass. A query
code looks each chunk up: prefix -> bucket -> the bucket's rows with the same low bits
(:mod:`.bucket`); rows sharing at least one chunk exactly become candidates, verified
with the full Hamming distance.

Formats 4 and 5 (5 written today) store rows stream-major: a row's stream comes from a
per-stream first-row table (``streams``, ``first``), its frame (``uint32``) and variant
(``uint8``) from two narrow columns; format 5 stores ``perm`` in three bytes a row number
(:mod:`.shard_tables`) and a smaller ``off``: ~88 bytes per row in all, ~108 in format 4.
A cold comparison reads nearly every byte of the tables it searches (a search's ~100,000
probes per shard land on every page of ``off`` and ``low`` and on a third to a half of the
4 KiB pages of ``perm`` and ``codes``), so these bytes are its time (bench/RESULTS.md, "Cold
comparisons, second pass"). An index seals only its
*seed* samples into shards (:func:`seed_frames`, one sample per second by default; the
meta records the grid): verification reads every sample from the database, so the
shards need only put a few points on each copy's line. Formats 1-3 (one 8-byte stream id
per row, and in 1-2 other table layouts; :mod:`.shard_legacy`) are still read.

Why this structure: by the pigeonhole principle, two codes within ``r`` bits agree
exactly on at least one of ``m`` chunks when ``r < m``; for larger ``r`` the chance
of an exact chunk agreement is still high enough that a matched *segment* (ten or
more query frames) gets seeds, and the matcher verifies and extends along the line
from any seed using the full fingerprints (see :mod:`overlap_desktop.core.match.lines`).
A lookup touches one page of ``off`` and of ``low`` (and of ``perm`` on a hit) whatever
the shard size; random chunk collisions cost ``N / 2**24`` verifications per lookup.
A binary search over sorted 4-byte keys (format 1, still readable) touched most pages
of every key array at 1,000 hours, and a fixed 16-bit prefix scanned ``N / 65536`` rows
per lookup: both made the time grow 4-7x per 10x corpus (bench/bench_compare.py).
24-bit chunks: 16-bit chunks drown in random collisions at 100M+ codes, 32-bit chunks
find too few seeds at the distances re-encodes and phase shifts produce.

Because the work per lookup is the same in every shard, a comparison costs about
(shards x probes) lookups plus the random chunk collisions, which grow with the rows
searched: hence few large shards of seed rows (bench/RESULTS.md, "Comparison").

Only the shard's own arrays are memory-mapped, so the resident memory of a search is
bounded by one shard's touched pages and candidates.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.index.arrays import expand_ranges, map_npy
from overlap_desktop.core.index.bucket import matching_rows, row_distances
from overlap_desktop.core.index.plan import DEFAULT_CHUNK_BYTES, QueryPlan, chunk_keys, chunk_spec
from overlap_desktop.core.index.shard_tables import (
    open_table,
    perm_bytes,
    perm_entries,
    perm_rows,
    perm_table,
    stream_major,
)
from overlap_desktop.errors import IndexError_

__all__ = [
    "DEFAULT_SEED_FPS",
    "SHARD_FORMAT",
    "SHARD_VERSION",
    "SEED_STAGGER",
    "Hits",
    "Shard",
    "build_shard",
    "seed_frames",
]

SHARD_FORMAT = "overlap.shard"
#: 5: format 4 with ~4-row buckets (:data:`BUCKET_ROWS_V5`) and ``perm`` row numbers in three
#: bytes (``uint8 (chunks, n, 3)``, meta ``perm_bytes``; ``uint32`` above 2**24 rows): about a
#: fifth fewer bytes for a cold comparison to read (bench/RESULTS.md, "Cold comparisons, second pass").
#: 4 (read only): rows stream-major with a per-stream first-row table (``streams``, ``first``), ``uint32`` frames,
#: ``uint8`` variants, ~2-row buckets (~16 in earlier builds: the meta's ``prefix_bits`` says
#: which, and both read alike); the meta records the seed grid (``seed_fps``).
#: 3 (read only): each table's chunks stacked in one file (``off``, ``low``, ``perm``), one pass.
#: 2 (read only): one file per table and chunk (``off_j``, ``low_j``, ``perm_j``).
#: 1 (read only): sorted 4-byte keys, binary search.
SHARD_VERSION = 5
_READABLE_VERSIONS = (1, 2, 3, 4, 5)
_WRITABLE_VERSIONS = (2, 3, 4, 5)
#: Seed samples per second kept in an index's sealed shards: the first usable sample of each
#: ``1 / DEFAULT_SEED_FPS`` seconds of stream time, every variant. Verification along a line
#: reads every sample from the database, so seeds only need to put two or more points on a
#: copy's line; at 1 seed/s every row of the detection matrix passes, at a quarter of the rows
#: of the 4-sample/s default preset (bench/RESULTS.md, "Shard format 4").
DEFAULT_SEED_FPS = 1.0
#: The seed of each second is taken at a phase that turns through this many steps: the first
#: usable sample at or after 0, 1/3 and 2/3 of the second in seconds 0, 1, 2, then again (at
#: the default 4 samples a second: 0, 0.5 and 0.75 s into the second). A manifest samples an
#: offered copy once a second at whatever phase its trim left, so on a grid with one phase every
#: query could sit half a second from the nearest seed; in fast footage (a crowd, a panning or
#: head-mounted camera) PDQ codes half a second apart differ by 40-80 bits and share no lookup
#: chunk, and a 12 s copy got no seed at all and was counted new (bench/RESULTS.md, "Staggered
#: seeds": 4 of 80 twelve-second pieces of real and rendered footage counted new at one phase,
#: none with 2, 3 or 4 steps). Same number of seed rows. 3 rather than 4: with 4 steps the
#: seeds of two near-still suite copies fell on frames that match the whole room and their lines
#: came out at 0.47x and 1.6x (a line-fitting fragility of near-still footage that trying 1x as
#: well, core/match/pair.py, mends for one of them).
#: Recorded in each shard's meta (``seed_stagger``); shards without it are offered a rebuild.
SEED_STAGGER = 3
#: Bits of a chunk value resolved by the in-memory prefix table (shards whose meta has no size).
PREFIX_BITS = 16
#: Mean rows per bucket of the offsets table of format-4 shards (see :func:`_prefix_bits`; the
#: meta's ``prefix_bits`` records what each shard was written with).
BUCKET_ROWS = 2.0
#: Mean rows per bucket of format-5 shards (the ones written now): the offsets table is read whole
#: by a cold search (every page holds some probe's bucket), and at ~4 rows it is half of the ~2-row
#: table's 168 MB per 8M-row shard for ~2 ms more work per shard searched warm (~8 rows: a quarter,
#: but ~5 ms more, +20% on a warm 10,000-hour comparison; bench/RESULTS.md, "Cold comparisons,
#: second pass").
BUCKET_ROWS_V5 = 4.0
_META = "shard.json"

#: A chunk value shared by more rows than this is uninformative (near-featureless
#: frames) and skipped, so a degenerate bucket cannot blow up the candidate set.
DEFAULT_MAX_BUCKET = 4096


# --------------------------------------------------------------------------- build


def seed_frames(times_ns: np.ndarray, usable: np.ndarray, seed_fps: float | None,
                stagger: int = SEED_STAGGER) -> np.ndarray:
    """Frames a sealed shard holds: one usable sample in each ``1 / seed_fps`` seconds.

    Slot ``k`` (``[k, k + 1) / seed_fps``) takes its first usable sample at or after the phase
    ``(k mod stagger) / stagger`` of the slot, or its first usable sample when none comes that
    late (:data:`SEED_STAGGER`). Chosen by stream time, not by count, so any sampling rate gives
    the same seed grid.

    Args:
        times_ns: ``int64 (n,)`` sample times of a stream.
        usable: ``bool (n,)`` usable samples.
        seed_fps: Seed samples per second; ``None`` or ``0`` keeps every usable sample.
        stagger: Phase steps (1: the first usable sample of every slot, the grid of shards
            written before ``seed_stagger`` was recorded).

    Returns:
        ``int32`` frame positions, ascending.
    """
    rows = np.flatnonzero(np.asarray(usable, bool)).astype(np.int32)
    if not seed_fps or rows.size == 0:
        return rows
    if stagger < 1:
        raise ValueError(f"stagger must be at least 1, not {stagger}")
    # 1 ms of slack: timestamps rounded down (3 samples/s: 999,999,999 ns) still open their second.
    t = np.asarray(times_ns, np.int64)[rows] + 1_000_000
    slot_ns = 1e9 / float(seed_fps)
    slot = np.floor(t / slot_ns).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]])
    phase_ns = (slot % stagger) * (slot_ns / stagger)
    late = (t - slot * slot_ns) >= phase_ns
    # Per slot, the first late sample; slots with none keep their first sample.
    ends = np.r_[starts[1:], rows.size]
    pos = np.arange(rows.size)
    first_late = np.minimum.reduceat(np.where(late, pos, rows.size), starts)
    return rows[np.where(first_late < ends, first_late, starts)]


def build_shard(directory: Path, codes: np.ndarray, stream_ids: np.ndarray, frame_idx: np.ndarray,
                variant_idx: np.ndarray, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                version: int = SHARD_VERSION, seed_fps: float | None = None,
                seed_stagger: int = SEED_STAGGER) -> None:
    """Write a searchable shard atomically.

    The shard is written into a temporary sibling folder and renamed into place, so
    a crash never leaves a half-written shard under ``directory``. Format 4 stores the
    rows stream-major (rows of one stream contiguous; sorted here when they are not).

    Args:
        directory: Destination folder (created; replaced if it exists).
        codes: ``uint8 (N, 32)`` codes, one per (frame, variant).
        stream_ids: ``int64 (N,)`` index stream id of each row.
        frame_idx: ``(N,)`` frame position within the stream's fingerprints (< 2**31).
        variant_idx: ``(N,)`` variant position within the stream's variants (< 256 in format 4).
        chunk_bytes: Lookup chunk width in bytes (1..4).
        version: Shard format to write (4; 2 and 3 only to test that older shards still read).
        seed_fps: The seed grid the rows were chosen on (:func:`seed_frames`), recorded in
            the meta; ``None`` = every usable sample.
        seed_stagger: The grid's phase steps (:func:`seed_frames`), recorded with ``seed_fps``.

    Raises:
        ValueError: arrays of inconsistent shapes or dtypes that cannot be converted.
    """
    directory = Path(directory)
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    if codes.ndim != 2 or codes.shape[1] != 32:
        raise ValueError(f"codes must be (N, 32) uint8, got {codes.shape}")
    n = codes.shape[0]
    cols = {"stream_ids": np.asarray(stream_ids), "frame_idx": np.asarray(frame_idx),
            "variant_idx": np.asarray(variant_idx)}
    for name, arr in cols.items():
        if arr.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not 1 <= chunk_bytes <= 4:
        raise ValueError("chunk_bytes must be 1..4")
    if version not in _WRITABLE_VERSIONS:
        raise ValueError(f"cannot write shard format version {version}")
    if n >= 2**32:
        raise ValueError("a shard holds fewer than 2**32 rows")
    if version >= 4:
        codes, arrays, extra = stream_major(codes, cols)
    else:
        arrays = {"stream_ids": np.ascontiguousarray(cols["stream_ids"], dtype=np.int64),
                  "frame_idx": np.ascontiguousarray(cols["frame_idx"], dtype=np.int32),
                  "variant_idx": np.ascontiguousarray(cols["variant_idx"], dtype=np.int16)}
        extra = {}

    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.parent / f".{directory.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        out = open_table(tmp / "codes.npy", np.uint8, codes.shape)
        out[...] = codes
        out.flush()
        del out
        for name, arr in arrays.items():
            np.save(tmp / f"{name}.npy", arr)
        spec = chunk_spec(chunk_bytes)
        _write_chunk_tables(tmp, codes, spec, version)
        meta = {"format": SHARD_FORMAT, "version": int(version), "count": int(n),
                "chunks": [list(c) for c in spec], "prefix_bits": _prefix_bits(n, spec[0][1], version), **extra}
        if version >= 4:
            meta["seed_fps"] = float(seed_fps) if seed_fps else None
            if seed_fps:
                meta["seed_stagger"] = int(seed_stagger)
        if version >= 5:
            meta["perm_bytes"] = perm_bytes(n, version)
        with open(tmp / _META, "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
            fh.flush()
            os.fsync(fh.fileno())
        _replace_dir(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_chunk_tables(tmp: Path, codes: np.ndarray, spec: list[tuple[int, int]], version: int) -> None:
    """Per chunk: rows sorted by chunk value, bucket offsets by its top bits, its low bits.

    Format 3 stacks the chunks in one ``(chunks, ...)`` array per table, written through
    a memory map one chunk at a time, so building needs one chunk's arrays in memory.
    """
    n = codes.shape[0]
    width = spec[0][1]
    pbits = _prefix_bits(n, width, version)
    lbits = 8 * width - pbits
    ldt = _low_dtype(lbits)
    stacked: dict[str, np.memmap[Any, Any]] = {}
    nperm = perm_bytes(n, version)
    if version >= 3:  # formats 3 to 5 stack the chunks
        shapes = {"off": ((len(spec), (1 << pbits) + 1), np.uint32), "low": ((len(spec), n), ldt)}
        for name, (shape, dt) in shapes.items():
            stacked[name] = open_table(tmp / f"{name}.npy", dt, shape)
        stacked["perm"] = perm_table(tmp / "perm.npy", len(spec), n, nperm)
    for j, (start, w) in enumerate(spec):
        keys = chunk_keys(codes, start, w)
        perm = np.argsort(keys, kind="stable").astype(np.uint32)
        keys = keys[perm]
        counts = np.bincount((keys >> np.uint32(lbits)).astype(np.int64), minlength=1 << pbits)
        off = np.zeros((1 << pbits) + 1, dtype=np.uint32)
        np.cumsum(counts, out=off[1:])
        low = (keys & np.uint32((1 << lbits) - 1)).astype(ldt)
        if stacked:
            stacked["off"][j], stacked["low"][j] = off, low
            stacked["perm"][j] = perm_entries(perm, nperm)
        else:
            np.save(tmp / f"off_{j}.npy", off)
            np.save(tmp / f"low_{j}.npy", low)
            np.save(tmp / f"perm_{j}.npy", perm)
        del keys, perm, counts, off, low
    for arr in stacked.values():
        arr.flush()
    stacked.clear()


def _prefix_bits(n: int, width: int, version: int = SHARD_VERSION) -> int:
    """Prefix table size for ``n`` rows: buckets of a fixed size, so the work per lookup
    does not grow with the shard (a fixed 16-bit prefix made it grow linearly).

    Format 4 sizes buckets to :data:`BUCKET_ROWS` rows on average (1.4-2.8 rows, whatever ``n``):
    a lookup then compares every row of its bucket, one gather per row, where the ~16-row buckets
    of format-4 shards of earlier builds needed a five-step binary search. The
    offsets table grows from ~2.5 to 14-28 bytes per row (+0.4-0.7 MB per footage hour) and the
    search of an 8M-row shard costs a quarter to a third less (bench/RESULTS.md, "Two-row
    buckets"). Its meta records the size, so shards of either sizing read alike. Formats 2-3: ~4.
    Format 5 doubles the buckets (:data:`BUCKET_ROWS_V5`, 2.8-5.7 rows): a cold comparison reads
    the whole offsets table, so its size counts as well as the lookup's milliseconds
    (bench/RESULTS.md, "Cold comparisons, second pass").
    """
    if version >= 5:
        want = int(round(np.log2(max(n, 1) / BUCKET_ROWS_V5)))
    elif version >= 4:
        want = int(round(np.log2(max(n, 1) / BUCKET_ROWS)))
    else:
        want = int(np.ceil(np.log2(max(n, 1)))) - 2
    return int(min(max(want, 8), 8 * width))


def layout_is_current(meta: dict[str, Any]) -> bool:
    """Whether a shard's meta (``shard.json``) describes what :func:`build_shard` writes now.

    Older layouts are still read, but more slowly: formats 1-3 hold every sample and smaller
    tables, and format 4 reads about a quarter more bytes cold (a 2-row offsets table, 4-byte row
    numbers; bench/RESULTS.md, "Cold comparisons, second pass"). Format-5 shards whose seeds
    were taken at one phase (no ``seed_stagger`` in the meta) read as fast but can miss short
    copies of fast-moving footage (:data:`SEED_STAGGER`). ``overlap index --rebuild-shards``
    rewrites them from the database.
    """
    try:
        version, count = int(meta["version"]), int(meta["count"])
        width = int(meta["chunks"][0][1])
        bits = int(meta.get("prefix_bits", -1))
        seeds_now = not meta.get("seed_fps") or int(meta.get("seed_stagger", 1)) == SEED_STAGGER
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    return version == SHARD_VERSION and bits == _prefix_bits(count, width, version) and seeds_now


def _load_meta(directory: Path) -> dict[str, Any]:
    """A shard folder's ``shard.json``.

    Raises:
        OSError: it cannot be read.
        ValueError: it is not a JSON object.
    """
    with open(Path(directory) / _META, encoding="utf-8") as fh:
        meta = json.load(fh)
    if not isinstance(meta, dict):
        raise ValueError("shard.json is not a JSON object")
    return meta


def read_meta(directory: Path) -> dict[str, Any] | None:
    """A shard folder's meta, or ``None`` when it cannot be read as one."""
    try:
        return _load_meta(directory)
    except (OSError, ValueError):
        return None


def _low_dtype(bits: int) -> type:
    return np.uint8 if bits <= 8 else (np.uint16 if bits <= 16 else np.uint32)


def _replace_dir(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``; an existing ``dst`` is moved aside first, then removed."""
    if dst.exists():
        trash = dst.parent / f".{dst.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(dst, trash)
        os.replace(src, dst)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(src, dst)


# --------------------------------------------------------------------------- search


@dataclass(slots=True)
class Hits:
    """Verified candidate matches of a search (parallel arrays, one entry per hit).

    Attributes:
        q_idx: ``int64`` row of the query code.
        stream_id: ``int64`` corpus stream id.
        frame_idx: ``int32`` frame position in the corpus stream.
        variant_idx: ``int16`` corpus variant position.
        distance: ``int16`` Hamming distance.
    """

    q_idx: np.ndarray
    stream_id: np.ndarray
    frame_idx: np.ndarray
    variant_idx: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return int(self.q_idx.shape[0])

    @classmethod
    def empty(cls) -> Hits:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32),
                   np.zeros(0, np.int16), np.zeros(0, np.int16))

    @classmethod
    def concat(cls, parts: list[Hits]) -> Hits:
        """Join several hit sets (e.g. from successive shards)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("q_idx", "stream_id", "frame_idx", "variant_idx", "distance")))


class Shard:
    """A read-only, memory-mapped shard. Create with :meth:`open`."""

    def __init__(self, directory: Path, meta: dict[str, Any]) -> None:
        self.directory = directory
        self.meta = meta
        self.count = int(meta["count"])
        self.version = int(meta["version"])
        self.chunks: list[tuple[int, int]] = [(int(a), int(b)) for a, b in meta["chunks"]]
        #: The seed grid the rows were chosen on (samples/s), or ``None``: every usable sample.
        self.seed_fps: float | None = meta.get("seed_fps")
        self._codes: np.ndarray | None = None
        self._cols: dict[str, np.ndarray] = {}
        #: Stacked chunk tables (format 3), mapped on first use.
        self._tables: dict[str, np.ndarray] = {}

    @classmethod
    def open(cls, directory: Path) -> Shard:
        """Open a shard folder written by :func:`build_shard`.

        Raises:
            IndexError_: the folder is not a shard, or of an unsupported version.
        """
        directory = Path(directory)
        try:
            meta = _load_meta(directory)
        except (OSError, ValueError) as exc:
            raise IndexError_(f"not a readable search shard ({exc})", path=directory) from exc
        if meta.get("format") != SHARD_FORMAT or meta.get("version") not in _READABLE_VERSIONS:
            raise IndexError_(
                f"search shard format {meta.get('format')!r} version {meta.get('version')!r} is not "
                f"supported (expected {SHARD_FORMAT} version {SHARD_VERSION}); rebuild the index",
                path=directory)
        return cls(directory, meta)

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"Shard({str(self.directory)!r}, count={self.count})"

    # lazily memory-mapped columns ---------------------------------------------------
    def _load(self, name: str, *, sparse: bool = False) -> np.ndarray:
        try:
            return map_npy(self.directory / f"{name}.npy", sparse=sparse)
        except (OSError, ValueError) as exc:
            raise IndexError_(f"search shard is damaged: {name}.npy ({exc})",
                              path=self.directory) from exc

    @property
    def codes(self) -> np.ndarray:
        if self._codes is None:
            self._codes = self._load("codes")
        return self._codes

    def _table(self, name: str) -> np.ndarray:
        """A stacked chunk table (format 3) as one flat memory-mapped array."""
        if name not in self._tables:
            self._tables[name] = self._load(name).reshape(-1)
        return self._tables[name]

    def column(self, name: str) -> np.ndarray:
        """Memory-mapped ``frame_idx``, ``variant_idx``, and ``stream_ids`` (formats 1-3) or the
        per-stream ``streams`` / ``first`` tables (formats 4-5); see :meth:`stream_of`.

        Mapped to read only the pages touched: a search reads them at its few hits only."""
        if name not in self._cols:
            self._cols[name] = self._load(name, sparse=True)
        return self._cols[name]

    def close(self) -> None:
        """Drop the memory maps (they also go when the shard is garbage collected)."""
        self._codes = None
        self._cols.clear()
        self._tables.clear()

    # search ----------------------------------------------------------------------------
    def _lookup_stacked(self, plan: QueryPlan, max_bucket: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact chunk matches of every chunk at once (format 3: stacked tables).

        Same lookup as format 2's (:mod:`.shard_legacy`), but with the chunks' tables in one
        file each, the distinct probes of all chunks go through one gather per table: a shard
        costs three memory maps and a few dozen array operations, whatever its chunk count.
        Inside a bucket the rows holding the wanted low bits are found by comparing every row
        (small buckets) or by a binary search (the larger buckets of older shards;
        :func:`~overlap_desktop.core.index.bucket.matching_rows`); either way the candidates, and
        their order, are those of expanding every bucket row (tests/unit/test_search_lookup.py).
        """
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        width = self.chunks[0][1]
        pbits = min(int(self.meta.get("prefix_bits", PREFIX_BITS)), 8 * width)
        lbits = 8 * width - pbits
        off = self._table("off")
        uchunk, ukey, ustart, urows = plan.unique_probes()
        low = self._table("low") if lbits else None
        pre, want = plan.bucket_keys(pbits, lbits, low.dtype if low is not None else np.uint8)
        # np.take throughout: cheaper than fancy indexing for these gathers (see bucket.py).
        b0 = np.take(off, pre).astype(np.int64)
        cnt = np.take(off, pre + 1).astype(np.int64) - b0
        mean_rows = self.count / float(1 << pbits)
        # A bucket far above its expected size holds a degenerate value (featureless
        # frames): uninformative, and expanding it would cost more than it could give.
        keep = np.flatnonzero((cnt > 0) & (cnt <= max(max_bucket, 64.0 * mean_rows)))
        if keep.size == 0:
            return empty
        b0 += uchunk * self.count
        if keep.size < pre.size:  # in a large shard nearly every bucket is filled: no copies then
            b0, cnt, want = np.take(b0, keep), np.take(cnt, keep), np.take(want, keep)
        if low is not None:
            seg, pos = matching_rows(low, b0, cnt, want, mean_rows=mean_rows)
        else:  # the chunk value is the bucket: every row of it matches
            seg, pos = expand_ranges(b0, cnt)
        if pos.size == 0:
            return empty
        hit_rows = perm_rows(self._table("perm"), pos, int(self.meta.get("perm_bytes", 4)))
        # Each matched probe stands for every query row that shares it.
        p = np.take(keep, seg)
        first = np.take(ustart, p)
        k, at = expand_ranges(first, np.take(ustart, p + 1) - first)
        return np.take(urows, at), np.take(hit_rows, k)

    def plan(self, query: np.ndarray, *, probe: int = 0) -> QueryPlan:
        """Prepare ``query`` for searching shards with this shard's chunk layout."""
        return QueryPlan.make(query, self.chunks, probe=probe)

    def candidates(self, query: np.ndarray | QueryPlan, *, probe: int = 0,
                   max_bucket: int = DEFAULT_MAX_BUCKET) -> tuple[np.ndarray, np.ndarray]:
        """(query row, shard row) pairs sharing at least one chunk exactly (may repeat).

        Args:
            query: ``uint8 (M, 32)`` codes, or a :class:`QueryPlan` made once for many shards.
            probe: 0 = exact chunk lookups; 1 = also every 1-bit flip of each chunk
                (multi-probe: more recall, ~``bits``x more lookups). Ignored for a plan.
            max_bucket: Skip chunk values shared by more rows than this.

        Returns:
            ``(q_rows int64, shard_rows int64)``.
        """
        plan = query if isinstance(query, QueryPlan) else self.plan(query, probe=probe)
        if plan.chunks != self.chunks:
            plan = QueryPlan.make(plan.codes, self.chunks, probe=plan.probe)
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        if plan.codes.shape[0] == 0 or self.count == 0:
            return empty
        if self.version >= 3:
            return self._lookup_stacked(plan, max_bucket)
        # Formats 1 and 2 (read only): one lookup per chunk table.
        from overlap_desktop.core.index.shard_legacy import legacy_candidates

        return legacy_candidates(self, plan, max_bucket, PREFIX_BITS)

    def search(self, query: np.ndarray | QueryPlan, *, max_distance: int, probe: int = 0,
               max_bucket: int = DEFAULT_MAX_BUCKET) -> Hits:
        """Codes of this shard within ``max_distance`` bits of the query codes.

        Recall is not exhaustive beyond the pigeonhole radius (``len(chunks) - 1``
        bits): a true match at a larger distance is found when one of its chunks
        agrees exactly (or within one bit with ``probe=1``).

        Args:
            query: ``uint8 (M, 32)`` codes, or a :class:`QueryPlan` (prepare it once with
                :meth:`QueryPlan.make` when searching many shards).
            max_distance: Largest Hamming distance kept after verification.
            probe: See :meth:`candidates`.
            max_bucket: See :meth:`candidates`.

        Returns:
            The verified :class:`Hits`, sorted by query row then distance.
        """
        plan = query if isinstance(query, QueryPlan) else self.plan(query, probe=probe)
        q, r = self.candidates(plan, max_bucket=max_bucket)
        if q.size == 0:
            return Hits.empty()
        # Nearly all candidates are chance chunk collisions: one pass over them, in the order
        # found (sorting them by row first cost more than it saved on the gather); the order of
        # the hits comes from the sorts of the few survivors below.
        # np.take along axis 0 copies each 32-byte row in one move; indexing ``codes[r]`` on the
        # 2-D array went element by element and cost ~10x more (3.7 vs 0.3 ms per 69,000 rows).
        d = row_distances(np.take(plan.codes.view(np.uint64), q, axis=0),
                          np.take(np.asarray(self.codes).view(np.uint64), r, axis=0))
        ok = d <= max_distance
        q, r, d = q[ok], r[ok], d[ok]
        if q.size == 0:
            return Hits.empty()
        # A pair found through several chunks counts once.
        _, first = np.unique(q * np.int64(self.count) + r, return_index=True)
        q, r, d = q[first], r[first], d[first]
        order = np.lexsort((d, q))
        q, r, d = q[order], r[order], d[order]
        return Hits(q_idx=q, stream_id=self.stream_of(r),
                    frame_idx=np.asarray(self.column("frame_idx")[r], dtype=np.int32),
                    variant_idx=np.asarray(self.column("variant_idx")[r], dtype=np.int16),
                    distance=d.astype(np.int16))

    def stream_of(self, rows: np.ndarray) -> np.ndarray:
        """``int64`` stream id of each shard row (format 4: from the per-stream first-row table)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.version < 4:
            return np.asarray(self.column("stream_ids")[rows], dtype=np.int64)
        first = self.column("first")
        return np.asarray(self.column("streams")[np.searchsorted(first, rows, side="right") - 1],
                          dtype=np.int64)
