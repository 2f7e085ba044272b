"""How a shard's tables are laid out on disk: stream-major row references, hinted table files,
and the row numbers of the chunk tables (``perm``) in three bytes where they fit.

Kept apart from :mod:`overlap_desktop.core.index.shards` (building and searching a shard) so
that module stays a readable size; only the byte layout lives here.

Why three-byte row numbers (format 5): a cold comparison reads a shard's tables from disk, and
the chance chunk collisions of a search land all over ``perm`` (bench/RESULTS.md, "Cold
comparisons, second pass"), so the bytes of ``perm`` are read whether a search needs them or
not. A shard of up to 2**24 rows (the index seals 8,000,000) needs 23-24 bits per row number:
storing them in three bytes instead of a ``uint32`` cuts a quarter of ``perm``, about 80 MB of
an 8M-row shard, with no extra work for the few positions a search gathers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.index.arrays import advise_hugepages

__all__ = ["PERM3_MAX_ROWS", "open_table", "perm_bytes", "perm_entries", "perm_rows", "perm_table", "stream_major"]

#: Rows a shard may hold for its ``perm`` row numbers to be stored in three bytes (format 5).
PERM3_MAX_ROWS = 1 << 24


def perm_bytes(n: int, version: int) -> int:
    """Bytes per stored row number of ``perm`` in a shard of ``n`` rows written as ``version``."""
    return 3 if version >= 5 and n <= PERM3_MAX_ROWS else 4


def perm_table(path: Path, chunks: int, n: int, nbytes: int) -> np.memmap[Any, Any]:
    """A new stacked ``perm`` file: ``uint32 (chunks, n)``, or ``uint8 (chunks, n, 3)`` for three bytes."""
    if nbytes == 3:
        return open_table(path, np.uint8, (chunks, n, 3))
    return open_table(path, np.uint32, (chunks, n))


def perm_entries(perm: np.ndarray, nbytes: int) -> np.ndarray:
    """One chunk's row numbers as :func:`perm_table` stores them (little-endian low bytes for 3)."""
    if nbytes == 4:
        return perm.astype(np.uint32)
    return perm.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :3]


def perm_rows(table: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    """``int64`` row numbers at flat positions ``pos`` of a stacked ``perm`` table.

    Args:
        table: The ``perm`` file mapped flat (``uint32`` entries, or three ``uint8`` per entry).
        pos: Positions in the flattened ``(chunks, n)`` table.
        nbytes: 3 or 4 (:func:`perm_bytes`).
    """
    if nbytes == 4:
        return np.take(table, pos).astype(np.int64)
    # One 3-byte row per position (np.take along axis 0 copies each row in one move), widened to
    # four little-endian bytes.
    got = np.take(table.reshape(-1, 3), pos, axis=0)
    wide = np.zeros((got.shape[0], 4), np.uint8)
    wide[:, :3] = got
    return wide.view("<u4").reshape(-1).astype(np.int64)


def stream_major(codes: np.ndarray, cols: dict[str, np.ndarray]
                 ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, Any]]:
    """Format 4-5 row references: rows grouped by stream, a per-stream first-row table.

    A row's stream is found by a binary search in ``first`` (one entry per stream), so the
    8-byte stream id per row of formats 1-3 is not stored; frames take 4 bytes, variants 1.
    """
    sids = np.asarray(cols["stream_ids"], dtype=np.int64)
    frames = np.asarray(cols["frame_idx"], dtype=np.int64)
    variants = np.asarray(cols["variant_idx"], dtype=np.int64)
    if frames.size and (frames.min() < 0 or frames.max() >= 2**31):
        raise ValueError("frame_idx must be within 0..2**31-1")
    if variants.size and (variants.min() < 0 or variants.max() > 255):
        raise ValueError("variant_idx must be within 0..255 in shard format 4")
    change = np.flatnonzero(sids[1:] != sids[:-1]) + 1
    starts = np.r_[0, change] if sids.size else np.zeros(0, np.int64)
    if np.unique(sids[starts]).size != starts.size:
        # Rows of a stream are not contiguous: sort stream-major (stable keeps frame order).
        order = np.argsort(sids, kind="stable")
        codes, sids, frames, variants = codes[order], sids[order], frames[order], variants[order]
        change = np.flatnonzero(sids[1:] != sids[:-1]) + 1
        starts = np.r_[0, change] if sids.size else np.zeros(0, np.int64)
    arrays = {"frame_idx": frames.astype(np.uint32), "variant_idx": variants.astype(np.uint8),
              "streams": sids[starts].astype(np.int64),
              "first": np.r_[starts, sids.size].astype(np.int64)}
    return np.ascontiguousarray(codes), arrays, {"streams": int(starts.size)}


def open_table(path: Path, dtype: Any, shape: tuple[int, ...]) -> np.memmap[Any, Any]:
    """A new ``.npy`` file (the header ``np.save`` writes) mapped for writing, with the huge-page hint.

    The tables a search gathers from at random (``codes``, ``perm``, ``low``, ``off``) are written
    through a hinted map so that Linux caches them in 2 MiB folios from the start: a search right
    after indexing then maps them one entry per 2 MiB, as it does for shards read from disk
    (:func:`~overlap_desktop.core.index.arrays.advise_hugepages`; written with ``np.save``, a third
    to all of their pages were cached in 4 KiB pages).
    """
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    mm = getattr(arr, "_mmap", None)  # numpy's mmap object; a private name, so only if present
    if mm is not None:
        advise_hugepages(mm)
    return arr
