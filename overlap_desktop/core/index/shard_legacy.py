"""Chunk lookups of the older search-shard formats, still read (formats 1 and 2).

Format 2 keeps one file per chunk table (``off_j``, ``low_j``, ``perm_j``) and is looked
up chunk by chunk through its prefix table; format 1 kept sorted 4-byte keys (``key_j``)
searched by binary search. Shards written today (format 4) use the stacked lookup of
:meth:`overlap_desktop.core.index.shards.Shard.candidates`; ``overlap index
--rebuild-shards`` rewrites an older index's shards.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from overlap_desktop.core.index.arrays import expand_ranges
from overlap_desktop.core.index.plan import QueryPlan

__all__ = ["legacy_candidates"]


class Shard(Protocol):
    """What a lookup reads of a :class:`~overlap_desktop.core.index.shards.Shard` (which calls it)."""

    chunks: list[tuple[int, int]]
    version: int
    count: int
    meta: dict[str, Any]

    def _load(self, name: str) -> np.ndarray: ...


def legacy_candidates(shard: Shard, plan: QueryPlan, max_bucket: int,
                      prefix_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(query row, shard row) pairs sharing a chunk exactly, for a format 1 or 2 shard.

    ``prefix_bits``: the prefix width of format 2 shards that do not record theirs.
    """
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    q_parts: list[np.ndarray] = []
    r_parts: list[np.ndarray] = []
    for j in range(len(shard.chunks)):
        qk, qrow = plan.keys[j], plan.rows[j]
        if shard.version >= 2:
            q, r = _lookup_prefix(shard, j, qk, qrow, max_bucket, prefix_bits)
            if q.size:
                q_parts.append(q)
                r_parts.append(r)
            continue
        # Mapped per chunk and released after it, so resident memory holds one
        # chunk's tables at a time, not all of them.
        keys, perm = shard._load(f"key_{j}"), shard._load(f"perm_{j}")
        # One binary search per probe; the upper bound only for the few that hit.
        lo = np.searchsorted(keys, qk, side="left")
        inside = lo < shard.count
        hit = np.zeros(qk.shape, bool)
        hit[inside] = keys[lo[inside]] == qk[inside]
        if not hit.any():
            continue
        qk, lo, qrow = qk[hit], lo[hit], qrow[hit]
        hi = np.searchsorted(keys, qk, side="right")
        cnt = hi - lo
        keep = cnt <= max_bucket
        lo, cnt, qrow = lo[keep], cnt[keep], qrow[keep]
        if int(cnt.sum()) == 0:
            continue
        _, pos = expand_ranges(lo, cnt)
        r_parts.append(np.asarray(perm[pos], dtype=np.int64))
        q_parts.append(np.repeat(qrow, cnt))
    if not q_parts:
        return empty
    return np.concatenate(q_parts), np.concatenate(r_parts)


def _lookup_prefix(shard: Shard, j: int, qk: np.ndarray, qrow: np.ndarray,
                   max_bucket: int, prefix_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact chunk matches through the prefix table (format 2).

    The top bits of a probe select a bucket from the small offsets table (read
    whole); only the bucket's low bytes are touched in the memory map, so a
    lookup costs about one page whatever the shard size.
    """
    width = shard.chunks[j][1]
    pbits = min(int(shard.meta.get("prefix_bits", prefix_bits)), 8 * width)
    lbits = 8 * width - pbits
    off = shard._load(f"off_{j}")
    pre = (qk >> np.uint32(lbits)).astype(np.int64)
    b0 = np.asarray(off[pre], dtype=np.int64)
    cnt = np.asarray(off[pre + 1], dtype=np.int64) - b0
    # A bucket far above its expected size holds a degenerate value (featureless
    # frames): uninformative, and expanding it would cost more than it could give.
    expected = shard.count / float(1 << pbits)
    keep = (cnt > 0) & (cnt <= max(max_bucket, 64.0 * expected))
    if not keep.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    b0, cnt, qk, qrow = b0[keep], cnt[keep], qk[keep], qrow[keep]
    _, pos = expand_ranges(b0, cnt)
    if lbits:
        low = shard._load(f"low_{j}")
        want = np.repeat((qk & np.uint32((1 << lbits) - 1)), cnt)
        match = np.asarray(low[pos]) == want.astype(low.dtype)
        if not match.any():
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pos = pos[match]
    else:
        match = np.ones(pos.size, bool)
    perm = shard._load(f"perm_{j}")
    return np.repeat(qrow, cnt)[match], np.asarray(perm[pos], dtype=np.int64)
