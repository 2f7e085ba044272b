"""The stacked chunk lookup (shard formats 3-4) against a plain bucket expansion.

Issue 19 item 4 replaced "expand every row of every probed bucket, compare its low bits" by
a binary search inside each bucket; shards written since hold ~2 rows per bucket and compare
every row again, in the product's own code (:func:`~overlap_desktop.core.index.bucket.matching_rows`).
The reference below is the code before item 4, kept verbatim in the test, so any difference in
candidates (order included) or in hits fails here, for both bucket sizes (``sizing``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.index import shards as shards_mod
from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.index.bucket import EXPAND_ROWS
from overlap_desktop.core.index.plan import QueryPlan
from overlap_desktop.core.index.shards import PREFIX_BITS, Hits, Shard, build_shard
from tests.codes import flip_bits


def _expand_lookup(shard: Shard, plan: QueryPlan, max_bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """The format-3/4 lookup before issue 19 item 4: every row of every kept bucket expanded."""
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if plan.codes.shape[0] == 0 or shard.count == 0:
        return empty
    width = shard.chunks[0][1]
    pbits = min(int(shard.meta.get("prefix_bits", PREFIX_BITS)), 8 * width)
    lbits = 8 * width - pbits
    off = shard._table("off")
    uchunk, ukey, ustart, urows = plan.unique_probes()
    pre = uchunk * ((1 << pbits) + 1) + (ukey >> np.uint32(lbits)).astype(np.int64)
    b0 = off[pre].astype(np.int64)
    cnt = off[pre + 1].astype(np.int64) - b0
    keep = np.flatnonzero((cnt > 0) & (cnt <= max(max_bucket, 64.0 * shard.count / float(1 << pbits))))
    if keep.size == 0:
        return empty
    b0, cnt = b0[keep] + uchunk[keep] * shard.count, cnt[keep]
    seg = np.repeat(np.arange(keep.size), cnt)
    pos = np.arange(seg.size, dtype=np.int64) + (b0 - np.cumsum(cnt) + cnt)[seg]
    if lbits:
        want = (ukey[keep] & np.uint32((1 << lbits) - 1)).astype(shard._table("low").dtype)
        match = shard._table("low")[pos] == want[seg]
        pos, seg = pos[match], seg[match]
    if pos.size == 0:
        return empty
    hit_rows = _perm_reference(shard)[pos]
    p = keep[seg]
    g = ustart[p + 1] - ustart[p]
    k = np.repeat(np.arange(p.size), g)
    q = urows[np.arange(k.size, dtype=np.int64) + (ustart[p] - np.cumsum(g) + g)[k]]
    return q, hit_rows[k]


def _perm_reference(shard: Shard) -> np.ndarray:
    """The shard's flat ``perm`` table as ``int64`` row numbers, decoded here byte by byte (format
    5 stores three little-endian bytes per row number where the shard has up to 2**24 rows)."""
    table = np.asarray(shard._table("perm"))
    if int(shard.meta.get("perm_bytes", 4)) == 4:
        return table.astype(np.int64)
    b = table.reshape(-1, 3).astype(np.int64)
    return b[:, 0] + 256 * b[:, 1] + 65536 * b[:, 2]


def _expand_search(shard: Shard, plan: QueryPlan, max_distance: int, max_bucket: int) -> Hits:
    """``Shard.search`` before issue 19 item 4, on the reference lookup."""
    q, r = _expand_lookup(shard, plan, max_bucket)
    if q.size == 0:
        return Hits.empty()
    order = np.argsort(r, kind="stable")
    q, r = q[order], r[order]
    d = popcount_xor(plan.codes[q], np.asarray(shard.codes[r]))
    ok = d <= max_distance
    q, r, d = q[ok], r[ok], d[ok]
    if q.size == 0:
        return Hits.empty()
    _, first = np.unique(q * np.int64(shard.count) + r, return_index=True)
    q, r, d = q[first], r[first], d[first]
    order = np.lexsort((d, q))
    q, r, d = q[order], r[order], d[order]
    return Hits(q_idx=q, stream_id=shard.stream_of(r),
                frame_idx=np.asarray(shard.column("frame_idx")[r], dtype=np.int32),
                variant_idx=np.asarray(shard.column("variant_idx")[r], dtype=np.int16),
                distance=d.astype(np.int16))


def _walk(n: int, rng: np.random.Generator, flips: int = 2, cut_every: int = 12,
          still: float = 0.3) -> np.ndarray:
    """Codes like footage: a few bits per step, cuts to unrelated codes, still stretches (repeats)."""
    bits = np.zeros((n, 256), np.uint8)
    bits[np.arange(n)[:, None], rng.integers(0, 256, (n, flips))] = 1
    bits[rng.random(n) < still] = 0  # a still frame repeats the previous code exactly
    cuts = np.flatnonzero(rng.random(n) < 1.0 / cut_every)
    bits[cuts] = rng.integers(0, 2, (cuts.size, 256), dtype=np.uint8)
    return np.packbits(np.bitwise_xor.accumulate(bits, axis=0), axis=1)


@pytest.fixture(params=["two-row", "sixteen-row"])
def sizing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Shards written now (~2 rows per bucket: every row compared) or by earlier builds (~16
    rows per bucket: binary-searched); :func:`_shard` checks the lookup takes the intended path."""
    if request.param == "sixteen-row":
        monkeypatch.setattr(shards_mod, "_prefix_bits", _earlier_prefix_bits)
    return str(request.param)


def _earlier_prefix_bits(n: int, width: int, version: int = 4) -> int:
    """The offsets-table size of format-4 shards of earlier builds (~16 rows per bucket)."""
    want = int(np.ceil(np.log2(max(n, 1)))) - (4 if version >= 4 else 2)
    return int(min(max(want, 8), 8 * width))


def _mean_rows(shard: Shard) -> float:
    return shard.count / float(1 << int(shard.meta["prefix_bits"]))


def _shard(path: Path, codes: np.ndarray, version: int = 4) -> Shard:
    n = codes.shape[0]
    build_shard(path, codes, np.arange(n) // 50, (np.arange(n) % 50).astype(np.int32),
                (np.arange(n) % 4).astype(np.int16), version=version)
    return Shard.open(path)


def _queries(codes: np.ndarray, rng: np.random.Generator, m: int = 400) -> np.ndarray:
    """Noisy copies of stored rows, exact copies, correlated runs and unrelated codes."""
    if codes.shape[0] == 0:
        return rng.integers(0, 256, (m, 32), dtype=np.uint8)
    rows = rng.integers(0, codes.shape[0], m)
    parts = [flip_bits(codes[rows[: m // 4]], 12, rng), codes[rows[m // 4: m // 2]],
             codes[np.arange(m // 4) % codes.shape[0]], rng.integers(0, 256, (m - 3 * (m // 4), 32), dtype=np.uint8)]
    return np.concatenate(parts)


def _check_same(shard: Shard, query: np.ndarray, *, probe: int = 0, max_bucket: int = 4096) -> int:
    plan = shard.plan(query, probe=probe)
    q_old, r_old = _expand_lookup(shard, plan, max_bucket)
    q_new, r_new = shard.candidates(plan, max_bucket=max_bucket)
    assert np.array_equal(q_new, q_old) and np.array_equal(r_new, r_old)
    assert q_new.dtype == np.int64 and r_new.dtype == np.int64
    for dist in (0, 24, 56):
        old, new = _expand_search(shard, plan, dist, max_bucket), shard.search(plan, max_distance=dist,
                                                                               max_bucket=max_bucket)
        for f in ("q_idx", "stream_id", "frame_idx", "variant_idx", "distance"):
            a, b = getattr(old, f), getattr(new, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
    return int(q_new.size)


@pytest.mark.parametrize("version", [3, 4, 5])
@pytest.mark.parametrize("kind", ["random", "footage"])
def test_lookup_equals_expansion(tmp_path: Path, version: int, kind: str, sizing: str) -> None:
    rng = np.random.default_rng(11 + version)
    n = 60_000
    codes = rng.integers(0, 256, (n, 32), dtype=np.uint8) if kind == "random" else _walk(n, rng)
    shard = _shard(tmp_path / "s", codes, version)
    if version == 4:  # format 3 keeps its ~4-row buckets (compared row by row) in both sizings
        assert (_mean_rows(shard) <= EXPAND_ROWS) == (sizing == "two-row")
    if version == 5:  # three-byte row numbers; ~4-row buckets as written now (the product's sizing)
        assert shard.meta["perm_bytes"] == 3 and (2 <= _mean_rows(shard) <= 8 or sizing != "two-row")
    assert _check_same(shard, _queries(codes, rng)) > 0
    assert _check_same(shard, _queries(codes, rng, 120), probe=1) > 0


def test_one_byte_low_bits_of_large_shards(tmp_path: Path, sizing: str) -> None:
    # From ~0.1M rows (two-row buckets; ~0.5M with sixteen) the prefix takes 16+ bits and the low
    # bits fit one byte (the bench's 8M-row shards have 2 low bits in ~2-row buckets, 5 in ~16).
    rng = np.random.default_rng(5)
    codes = _walk(150_000 if sizing == "two-row" else 600_000, rng, still=0.5)
    shard = _shard(tmp_path / "s", codes)
    assert shard._table("low").dtype == np.uint8
    assert (_mean_rows(shard) <= EXPAND_ROWS) == (sizing == "two-row")
    assert _check_same(shard, _queries(codes, rng, 2000)) > 0


def test_degenerate_buckets(tmp_path: Path, sizing: str) -> None:
    # One value shared by many rows: a kept bucket far longer than 32 rows (the slow path of
    # the search), one beyond the max_bucket rule (skipped by both), and long buckets of many
    # distinct low values.
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (40_000, 32), dtype=np.uint8)
    flat = np.zeros((3_000, 32), np.uint8)  # featureless frames: every chunk identical
    near = np.repeat(rng.integers(0, 256, (1, 32), dtype=np.uint8), 700, axis=0)
    near[:, 3:] = rng.integers(0, 256, (700, 29), dtype=np.uint8)  # chunk 0 shared, the rest random
    spread = np.repeat(rng.integers(0, 256, (1, 32), dtype=np.uint8), 300, axis=0)
    spread[:, 2] = rng.integers(0, 256, 300)  # chunk 0's top bits shared, its low bits varied
    spread[:, 3:] = rng.integers(0, 256, (300, 29), dtype=np.uint8)
    codes = np.concatenate([base, flat, near, spread])
    shard = _shard(tmp_path / "s", codes)
    query = np.concatenate([flat[:3], near[:5], flip_bits(spread[:50], 6, rng), _queries(base, rng, 200)])
    for max_bucket in (4096, 500, 1):
        assert _check_same(shard, query, max_bucket=max_bucket) > 0


@pytest.mark.parametrize("n", [0, 1, 2, 17])
def test_tiny_and_empty_shards(tmp_path: Path, n: int) -> None:
    rng = np.random.default_rng(n)
    codes = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    shard = _shard(tmp_path / "s", codes)
    found = _check_same(shard, _queries(codes, rng, 40))
    assert found == 0 if n == 0 else found > 0
    _check_same(shard, np.zeros((0, 32), np.uint8))


def test_one_plan_over_shards_of_different_sizes(tmp_path: Path) -> None:
    # A comparison reuses one plan for every shard of a layout; the probes' bucket rows are
    # kept for the last table size asked for, so full shards and a smaller tail alternate.
    rng = np.random.default_rng(21)
    big_codes, small_codes = _walk(150_000, rng, still=0.5), _walk(3_000, rng)
    big, small = _shard(tmp_path / "big", big_codes), _shard(tmp_path / "small", small_codes)
    assert big.meta["prefix_bits"] != small.meta["prefix_bits"]
    query = np.concatenate([_queries(big_codes, rng, 300), _queries(small_codes, rng, 100)])
    plan = big.plan(query)
    for shard in (big, small, big, small):
        fresh = shard.plan(query)
        q, r = shard.candidates(plan)
        q_ref, r_ref = _expand_lookup(shard, fresh, 4096)
        assert q.size > 0 and np.array_equal(q, q_ref) and np.array_equal(r, r_ref)
    pbits = int(big.meta["prefix_bits"])
    first = plan.bucket_keys(pbits, 24 - pbits, np.uint8)
    again = plan.bucket_keys(pbits, 24 - pbits, np.uint8)
    assert first[0] is again[0] and first[1] is again[1]  # made once per table size
    uchunk, ukey, _, _ = plan.unique_probes()
    assert np.array_equal(first[0], uchunk * ((1 << pbits) + 1) + (ukey >> (24 - pbits)))
    assert np.array_equal(first[1], ukey & ((1 << (24 - pbits)) - 1))


@pytest.mark.parametrize("n", [1_000, 5_000, 93_000, 600_000, 7_992_000, 8_000_000, 2**23 + 1])
def test_format_4_buckets_hold_about_two_rows(n: int) -> None:
    # Whatever the row count, the offsets table has 1.4-2.8 rows per bucket: every row of a
    # bucket is compared (EXPAND_ROWS), and the table costs at most ~28 bytes per row over ten chunks.
    pbits = shards_mod._prefix_bits(n, 3, 4)
    mean = n / float(1 << pbits)
    assert 2 ** 0.5 - 1e-9 <= mean <= 2 ** 1.5 and mean <= EXPAND_ROWS
    assert 10 * 4 * ((1 << pbits) + 1) / n <= 28.5
    assert shards_mod._prefix_bits(n, 3, 3) == int(np.ceil(np.log2(n))) - 2  # formats 2-3 unchanged


@pytest.mark.parametrize("counts", [
    [2, 1, 3, 2, 1],          # the usual two-row buckets
    [0, 2, 0, 0, 1, 0],       # empty ranges anywhere, first and last included
    [0, 0, 0],                # nothing at all
    [],                       # no ranges
    [7],                      # one range
])
def test_expand_ranges_matches_a_plain_loop(counts: list[int]) -> None:
    """Every position of every range, in order, with its range number: as a Python loop gives."""
    from overlap_desktop.core.index.arrays import expand_ranges

    rng = np.random.default_rng(len(counts))
    start = np.sort(rng.integers(0, 10_000, len(counts))).astype(np.int64)
    count = np.asarray(counts, dtype=np.int64)
    which, pos = expand_ranges(start, count)
    want = [(i, s + k) for i, (s, c) in enumerate(zip(start.tolist(), counts)) for k in range(c)]
    assert which.dtype == np.int64 and pos.dtype == np.int64
    assert list(zip(which.tolist(), pos.tolist())) == want


def test_layout_is_current_tells_earlier_layouts_apart() -> None:
    """What `overlap doctor` and `overlap index` count as an older shard layout."""
    from overlap_desktop.core.index.shards import SHARD_VERSION, _prefix_bits, layout_is_current

    meta = {"version": SHARD_VERSION, "count": 8_000_000, "chunks": [[0, 3]] * 10,
            "prefix_bits": _prefix_bits(8_000_000, 3)}
    assert layout_is_current(meta)
    assert not layout_is_current({**meta, "prefix_bits": _earlier_prefix_bits(8_000_000, 3)})  # ~16-row buckets
    # Format 4 (~2-row buckets, four-byte row numbers): read alike, but rewritten by a rebuild.
    assert not layout_is_current({**meta, "version": 4, "prefix_bits": _prefix_bits(8_000_000, 3, 4)})
    assert not layout_is_current({**meta, "version": 3, "prefix_bits": _prefix_bits(8_000_000, 3, 3)})
    assert not layout_is_current({**meta, "prefix_bits": None})
    assert not layout_is_current({"version": SHARD_VERSION})
    # Small shards are sized alike by both rules (the table's 8-bit floor): nothing to rewrite.
    assert layout_is_current({**meta, "count": 300, "prefix_bits": _earlier_prefix_bits(300, 3)})


@pytest.mark.parametrize("n", [1_000, 93_000, 600_000, 8_000_000, 2**24, 2**24 + 1])
def test_format_5_tables_are_smaller(n: int) -> None:
    # ~4 rows per bucket (2.8-5.7 whatever n): the offsets table half of format 4's; row numbers
    # in three bytes up to 2**24 rows, four above (a shard larger than the index ever seals).
    from overlap_desktop.core.index.shard_tables import perm_bytes

    pbits = shards_mod._prefix_bits(n, 3, 5)
    mean = n / float(1 << pbits)
    assert (2 ** 1.5 - 1e-9 <= mean <= 2 ** 2.5) or pbits == 8
    assert (1 << pbits) == (1 << shards_mod._prefix_bits(n, 3, 4)) // 2 or pbits == 8
    assert perm_bytes(n, 5) == (3 if n <= 2**24 else 4) and perm_bytes(n, 4) == 4


def test_three_byte_row_numbers_round_trip() -> None:
    # Every byte of the largest row numbers a three-byte table holds, gathered in any order.
    from overlap_desktop.core.index.shard_tables import perm_entries, perm_rows

    rows = np.array([0, 1, 255, 256, 65535, 65536, 2**23, 2**24 - 2, 2**24 - 1, 12_345_678], np.int64)
    three = perm_entries(rows.astype(np.uint32), 3)
    assert three.shape == (rows.size, 3) and three.dtype == np.uint8
    pos = np.array([9, 0, 8, 3, 3, 7, 1], np.int64)
    assert np.array_equal(perm_rows(three.reshape(-1), pos, 3), rows[pos])
    assert np.array_equal(perm_rows(perm_entries(rows.astype(np.uint32), 4), pos, 4), rows[pos])
    assert perm_rows(three.reshape(-1), np.zeros(0, np.int64), 3).dtype == np.int64
