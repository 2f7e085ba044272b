"""Array helpers of the search: Hamming distances of packed codes, row ranges, read-only ``.npy`` maps."""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path

import numpy as np

__all__ = ["advise_hugepages", "advise_sparse", "expand_ranges", "hamming_rows", "map_npy", "popcount_xor"]


# --------------------------------------------------------------------------- ranges


def expand_ranges(start: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges ``[start[i], start[i] + count[i])``, without a Python loop.

    Empty ranges (``count`` 0) contribute nothing.

    Returns:
        ``(which, pos)``: the range each position belongs to (ascending) and the ``int64``
        position, ranges in order and each range's positions ascending.
    """
    count = np.asarray(count, dtype=np.int64)
    ends = np.cumsum(count)
    total = int(ends[-1]) if ends.size else 0
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # A position's range is the number of ranges ending at or before it: one counting pass and
    # a running sum, ~40% cheaper than np.repeat over ranges of one to three rows (the usual
    # bucket sizes), which dominated this function in the shard lookup.
    which = np.cumsum(np.bincount(ends[:-1], minlength=total)[:total])
    pos = np.arange(total, dtype=np.int64)
    pos += (np.asarray(start, dtype=np.int64) - ends + count)[which]
    return which, pos


# --------------------------------------------------------------------------- hamming

if hasattr(np, "bitwise_count"):  # numpy >= 2.0

    def _popcount64(x: np.ndarray) -> np.ndarray:
        return np.bitwise_count(x)

else:  # pragma: no cover - numpy 1.26
    _POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def _popcount64(x: np.ndarray) -> np.ndarray:
        b = x.view(np.uint8).reshape(*x.shape, 8)
        return _POP8[b].sum(axis=-1, dtype=np.uint8)


def popcount_xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between ``uint8 (..., 32)`` code arrays (broadcasting).

    Args:
        a: Codes, last axis 32 bytes.
        b: Codes, last axis 32 bytes, broadcastable against ``a``.

    Returns:
        ``int32`` distances with the broadcast shape minus the last axis.
    """
    a64 = np.ascontiguousarray(a).view(np.uint64)
    b64 = np.ascontiguousarray(b).view(np.uint64)
    return _popcount64(a64 ^ b64).sum(axis=-1, dtype=np.int32)


def hamming_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Hamming distance of two equally long ``(n, 32)`` code arrays."""
    return popcount_xor(a, b)


# --------------------------------------------------------------------------- mapping

#: The header ``np.save`` writes for a C-ordered array of a plain dtype.
_NPY_HEADER = re.compile(r"\{'descr': '([<>|=][a-z][0-9]+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \}")


#: Mappings smaller than one huge page gain nothing from the hint.
_HUGE_MIN_BYTES = 2 << 20
#: ``None`` where the platform has no such advice (Windows, macOS; Python < 3.8).
_MADV_HUGEPAGE: int | None = getattr(mmap, "MADV_HUGEPAGE", None)


def advise_hugepages(mm: mmap.mmap) -> bool:
    """Ask the kernel to back ``mm`` with huge pages where it can (Linux ``MADV_HUGEPAGE``).

    A search gathers rows at random from the whole of a shard's ``codes``, ``perm``, ``low``
    and ``off`` (the chance chunk collisions land anywhere), so it maps nearly every page of
    each ~700 MB shard, once per comparison. With 4 KiB pages that is ~170,000 page-table
    entries set up and torn down per shard (~15 ms of kernel time) and a TLB miss on most
    gathers. Linux reads a file that a hinted mapping faults in into 2 MiB page-cache folios
    (ext4/xfs with large folios), which later mappings of the file, hinted or not, map with
    one entry per 2 MiB. Files already cached in small pages keep them until evicted: the hint
    changes how pages are read from disk, not pages already in memory (bench/RESULTS.md,
    "Comparison"). A no-op where the advice does not exist or the kernel refuses it.

    Returns:
        Whether the advice was given.
    """
    if _MADV_HUGEPAGE is None or len(mm) < _HUGE_MIN_BYTES or not hasattr(mm, "madvise"):
        return False
    try:
        mm.madvise(_MADV_HUGEPAGE)
    except OSError:  # a kernel built without transparent huge pages: EINVAL
        return False
    return True


#: ``None`` where the platform has no such advice (Windows).
_MADV_RANDOM: int | None = getattr(mmap, "MADV_RANDOM", None)


def advise_sparse(mm: mmap.mmap) -> bool:
    """Ask the kernel to read only the pages of ``mm`` that are touched (``MADV_RANDOM``: no
    read-around). A no-op where the advice does not exist.

    Returns:
        Whether the advice was given.
    """
    if _MADV_RANDOM is None or not hasattr(mm, "madvise"):
        return False
    try:
        mm.madvise(_MADV_RANDOM)
    except OSError:
        return False
    return True


def map_npy(path: Path, *, sparse: bool = False) -> np.ndarray:
    """Memory-map a ``.npy`` file read-only, like ``np.load(path, mmap_mode="r")``.

    A search at 10,000 hours maps several files in each of hundreds of shards, and
    ``np.load`` spends ~0.3 ms per file parsing the header with ``ast`` and setting up
    an ``np.memmap``; this reads the fixed header ``np.save`` writes with one regular
    expression and wraps an ``mmap`` (~20 us). Other headers go through ``np.load``.
    The mapping carries the huge-page hint (:func:`advise_hugepages`), or with ``sparse`` the
    advice to read only the pages touched (``MADV_RANDOM``): for a column a search reads at a few
    rows only (a hit's frame and variant), where 2 MiB reads fetched a third of each column from
    disk for a couple of thousand rows (bench/RESULTS.md, "Cold comparisons, second pass").

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is not a ``.npy`` file or is shorter than its header says.
    """
    with open(path, "rb") as fh:
        head = fh.read(12)
        if head[:6] != b"\x93NUMPY" or head[6] not in (1, 2, 3):
            raise ValueError("not a .npy file")
        if head[6] == 1:
            start, hlen = 10, int.from_bytes(head[8:10], "little")
        else:
            start, hlen = 12, int.from_bytes(head[8:12], "little")
        fh.seek(start)
        header = fh.read(hlen).decode("latin1").strip()
        m = _NPY_HEADER.fullmatch(header)
        if m is None:
            return np.load(path, mmap_mode="r")
        dtype = np.dtype(m.group(1))
        shape = tuple(int(x) for x in m.group(2).replace(" ", "").split(",") if x)
        offset = start + hlen
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        size = os.fstat(fh.fileno()).st_size
        if size < offset + nbytes:
            raise ValueError(f"file holds {size} bytes, its header promises {offset + nbytes}")
        if nbytes == 0:
            return np.zeros(shape, dtype)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if sparse:
        advise_sparse(mm)
    else:
        advise_hugepages(mm)
    return np.frombuffer(mm, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset).reshape(shape)
