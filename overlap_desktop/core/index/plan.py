"""Query plans of the shard search: a query's codes cut into chunk probes, once for many shards.

The chunk layout (which bytes of a code form each lookup chunk) is shared with
:mod:`overlap_desktop.core.index.shards`, which writes tables of the same chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DEFAULT_CHUNK_BYTES", "QueryPlan", "chunk_keys", "chunk_spec"]

#: Bytes per lookup chunk (24 bits): see :mod:`overlap_desktop.core.index.shards` for why.
DEFAULT_CHUNK_BYTES = 3

# --------------------------------------------------------------------------- chunks


def chunk_spec(chunk_bytes: int) -> list[tuple[int, int]]:
    """(first byte, byte count) of each lookup chunk; leftover bytes are verified only."""
    n = 32 // chunk_bytes
    return [(i * chunk_bytes, chunk_bytes) for i in range(n)]


def chunk_keys(codes: np.ndarray, start: int, width: int) -> np.ndarray:
    """Big-endian integer value of bytes ``[start, start+width)`` of each code (uint32)."""
    out = np.zeros(codes.shape[0], dtype=np.uint32)
    for k in range(width):
        out = (out << np.uint32(8)) | codes[:, start + k].astype(np.uint32)
    return out


# --------------------------------------------------------------------------- plan


@dataclass(slots=True)
class QueryPlan:
    """Query codes with their chunk probes pre-sorted, reusable across shards.

    Sorting the probes once per query (not once per shard) and feeding them in order
    to the binary search keeps page access on the memory maps sequential.

    Attributes:
        codes: ``uint8 (M, 32)`` query codes.
        chunks: The chunk layout the probes were cut for.
        probe: Multi-probe level (0 or 1).
        keys: Per chunk, sorted ``uint32`` probe values.
        rows: Per chunk, the query row of each probe.
    """

    codes: np.ndarray
    chunks: list[tuple[int, int]]
    probe: int
    keys: list[np.ndarray]
    rows: list[np.ndarray]
    #: Distinct probes of all chunks (format 3 looks them up in one pass), filled on
    #: first use: chunk number and value of each, and the query rows sharing it.
    _unique: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    #: :meth:`bucket_keys` of the last table layout asked for.
    _buckets: tuple[tuple[int, int, str], np.ndarray, np.ndarray] | None = None

    def bucket_keys(self, pbits: int, lbits: int, low_dtype: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per distinct probe: its row in a stacked offsets table, and its low bits.

        Both depend only on the probes and the table layout, so a search over many shards
        of one size (all the full ones) computes them once.

        Args:
            pbits: Prefix bits of the shard's offsets table.
            lbits: Low bits stored per row.
            low_dtype: The shard's ``low`` dtype.

        Returns:
            ``(row int64, low bits as low_dtype)``, one per :meth:`unique_probes` entry.
        """
        key = (int(pbits), int(lbits), np.dtype(low_dtype).str)
        if self._buckets is None or self._buckets[0] != key:
            uchunk, ukey, _, _ = self.unique_probes()
            pre = uchunk * ((1 << pbits) + 1) + (ukey >> np.uint32(lbits)).astype(np.int64)
            want = (ukey & np.uint32((1 << lbits) - 1)).astype(low_dtype)
            self._buckets = (key, pre, want)
        return self._buckets[1], self._buckets[2]

    def unique_probes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(chunk, value, start, rows)`` of the distinct probes, made once per plan.

        Probe ``p`` is shared by query rows ``rows[start[p]:start[p + 1]]``. Footage is
        temporally correlated, so neighbouring query frames often agree on a chunk
        (a static shot on every chunk); each distinct value is looked up once per shard.
        """
        if self._unique is None:
            chunk = np.repeat(np.arange(len(self.keys), dtype=np.int64), [k.size for k in self.keys])
            keys = np.concatenate(self.keys) if self.keys else np.zeros(0, np.uint32)
            rows = np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)
            # Keys are sorted within each chunk, so equal probes are neighbours.
            first = np.ones(keys.size, bool)
            first[1:] = (chunk[1:] != chunk[:-1]) | (keys[1:] != keys[:-1])
            start = np.append(np.flatnonzero(first), keys.size)
            self._unique = (chunk[first], keys[first], start, rows)
        return self._unique

    @classmethod
    def make(cls, query: np.ndarray, chunks: list[tuple[int, int]] | None = None, *,
             probe: int = 0) -> QueryPlan:
        """Cut ``query`` into chunk probes (plus 1-bit flips when ``probe`` is 1)."""
        codes = np.ascontiguousarray(query, dtype=np.uint8).reshape(-1, 32)
        chunks = [(int(a), int(b)) for a, b in (chunks or chunk_spec(DEFAULT_CHUNK_BYTES))]
        keys: list[np.ndarray] = []
        rows: list[np.ndarray] = []
        m = codes.shape[0]
        for start, width in chunks:
            qk = chunk_keys(codes, start, width)
            qrow = np.arange(m, dtype=np.int64)
            if probe:
                bits = 8 * width
                flips = np.uint32(1) << np.arange(bits, dtype=np.uint32)
                qk = np.concatenate([qk, (qk[:, None] ^ flips[None, :]).ravel()])
                qrow = np.concatenate([qrow, np.repeat(qrow, bits)])
            order = np.argsort(qk, kind="stable")
            keys.append(qk[order])
            rows.append(qrow[order])
        return cls(codes, chunks, int(bool(probe)), keys, rows)
