"""Vectorised searches inside the sorted buckets of a shard's chunk tables (formats 3-5).

A chunk lookup lands on a bucket of rows sorted by their low bits
(:mod:`overlap_desktop.core.index.shards`); :func:`matching_rows` finds the rows holding the
wanted value, and :func:`row_distances` verifies the candidates. How it finds them depends on
the bucket size. Format-4 shards of earlier builds hold ~16 rows per bucket:
:func:`bucket_bound` runs a binary search on all probes at once (five gathers per probe, each in
a cache line already read). Format-4 shards written since hold ~2 rows per bucket: comparing every
row of every probed bucket is one gather per row and no loop, 25-35% cheaper per shard than the
search on the larger buckets (bench/RESULTS.md, "Two-row buckets"). Format 5 (written now) holds
~4 rows per bucket (compared, or binary-searched above :data:`EXPAND_ROWS`): ~2 ms more per shard
searched, for an offsets table a cold comparison reads in half the bytes (bench/RESULTS.md,
"Cold comparisons, second pass").
"""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.index.arrays import expand_ranges, popcount_xor

__all__ = ["EXPAND_ROWS", "bucket_bound", "matching_rows", "row_distances"]

#: Probes searched together (see :func:`bucket_bound`).
_BLOCK = 8192
#: Mean rows per bucket up to which :func:`matching_rows` compares every row of a bucket instead
#: of searching it (measured on an 8M-row shard: expanding wins at ~2 and ~4 rows, loses at ~8).
EXPAND_ROWS = 4.0


def matching_rows(low: np.ndarray, start: np.ndarray, cnt: np.ndarray, want: np.ndarray, *,
                  mean_rows: float) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each probe's bucket whose low bits equal the probe's, in bucket order.

    Args:
        low: The shard's flat low-bits table.
        start: First row of each probe's bucket in ``low``.
        cnt: Rows in each bucket (``> 0``).
        want: Each probe's low bits (``low``'s dtype).
        mean_rows: Mean rows per bucket of the table: up to :data:`EXPAND_ROWS` every row is
            compared, above it each bucket is binary-searched.

    Returns:
        ``(probe, row)``: for each matching row, the index of its probe in ``start`` and its
        position in ``low``; probes in ascending order, a probe's rows in table order.
    """
    if mean_rows <= EXPAND_ROWS:
        probe, pos = expand_ranges(start, cnt)
        # np.take, not ``low[pos]``: numpy's take is 2-4x cheaper than fancy indexing on these
        # gathers (bench/RESULTS.md, "Gathers with np.take"); same values.
        hit = np.flatnonzero(np.take(low, pos) == np.take(want, probe))
        return np.take(probe, hit), np.take(pos, hit)
    end = start + cnt
    lo = bucket_bound(low, start, end, want, upper=False)
    found = np.flatnonzero(low[np.minimum(lo, low.size - 1)] == want)
    found = found[lo[found] < end[found]]
    lo, end, want = lo[found], end[found], want[found]
    # A value usually sits on one row of its bucket: the next row tells; only values on
    # several rows need the search for their last row.
    n = np.ones(lo.size, np.int64)
    more = np.flatnonzero(low[np.minimum(lo + 1, low.size - 1)] == want)
    more = more[lo[more] + 1 < end[more]]
    if more.size:
        n[more] = bucket_bound(low, lo[more] + 1, end[more], want[more], upper=True) - lo[more]
    which, pos = expand_ranges(lo, n)
    return found[which], pos


def bucket_bound(low: np.ndarray, start: np.ndarray, end: np.ndarray, want: np.ndarray, *,
                  upper: bool) -> np.ndarray:
    """Per probe, the first row of sorted ``low[start:end]`` not below ``want`` (above it if ``upper``).

    A branch-free binary search over all probes at once: each step gathers one low value per
    probe (five steps for buckets of under 32 rows), where expanding the buckets gathered
    every row. Probes of longer ranges (degenerate buckets) are searched apart, so they do not
    add steps for all the others. Every range must be non-empty (``end > start``).
    """
    if start.size > _BLOCK:
        # A block's bucket lines and step arrays stay in the CPU cache across its steps
        # (~30% faster on 124,000 probes of an 8M-row shard than one pass over them all).
        return np.concatenate([bucket_bound(low, start[i:i + _BLOCK], end[i:i + _BLOCK], want[i:i + _BLOCK],
                                            upper=upper) for i in range(0, start.size, _BLOCK)])
    if start.size == 0:
        return start.astype(np.int64)
    span = end - start
    small = span < 32
    if small.all():
        return _bound_steps(low, start, end, want, int(span.max()), upper)
    pos = np.empty(start.size, np.int64)
    for part in (np.flatnonzero(small), np.flatnonzero(~small)):
        if part.size:
            pos[part] = _bound_steps(low, start[part], end[part], want[part], int(span[part].max()), upper)
    return pos


def row_distances(a64: np.ndarray, b64: np.ndarray) -> np.ndarray:
    """Hamming distances of ``uint64 (n, 4)`` code rows (``int32``; four column adds, not an axis sum)."""
    if not hasattr(np, "bitwise_count"):  # pragma: no cover - numpy 1.26
        return popcount_xor(a64.view(np.uint8), b64.view(np.uint8))
    c = np.bitwise_count(a64 ^ b64)
    return c[:, 0].astype(np.int32) + c[:, 1] + c[:, 2] + c[:, 3]


def _bound_steps(low: np.ndarray, start: np.ndarray, end: np.ndarray, want: np.ndarray, longest: int,
                 upper: bool) -> np.ndarray:
    """Power-of-two steps of :func:`bucket_bound` over ranges of at most ``longest`` rows.

    ``last`` is the last row known to be below ``want`` (``start - 1`` at first). A step
    tries ``last + step``, clipped to the range's last row: when that row is below, every row
    up to it is (sorted), so ``last`` moves there. Clipping only ever tests the range's last
    row early, which moves ``last`` exactly when the whole range is below; so the steps
    still add up to the count of rows below ``want``. Four array operations per step, in place.
    """
    last = start.astype(np.int64) - 1
    stop = end.astype(np.int64) - 1
    nxt = np.empty_like(last)
    go = np.empty(last.shape, bool)
    step = 1 << (max(int(longest), 1).bit_length() - 1)
    cmp = np.less_equal if upper else np.less
    while step:
        np.minimum(np.add(last, step, out=nxt), stop, out=nxt)
        cmp(low[nxt], want, out=go)
        np.copyto(last, nxt, where=go)
        step >>= 1
    return np.add(last, 1, out=last)
