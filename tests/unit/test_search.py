"""Multi-index-hashing shards: format, atomic writes, exactness inside the pigeonhole radius."""

from __future__ import annotations

import json

import numpy as np
import pytest

from overlap_desktop.core.index.arrays import hamming_rows, popcount_xor
from overlap_desktop.core.index.shards import SHARD_VERSION, Hits, Shard, build_shard
from overlap_desktop.errors import IndexError_
from tests.codes import flip_bits


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Shard, np.ndarray]:
    rng = np.random.default_rng(7)
    n = 50_000
    codes = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    d = tmp_path_factory.mktemp("shard") / "s"
    build_shard(d, codes, np.arange(n) // 100 + 1000, (np.arange(n) % 100).astype(np.int32),
                (np.arange(n) % 3).astype(np.int16))
    return Shard.open(d), codes


def test_popcount_matches_unpackbits() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (40, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (40, 32), dtype=np.uint8)
    want = np.unpackbits(a ^ b, axis=1).sum(axis=1)
    assert np.array_equal(hamming_rows(a, b), want)
    assert popcount_xor(a[:, None, :], b[None, :, :]).shape == (40, 40)


def test_exact_codes_are_found_with_their_metadata(corpus: tuple[Shard, np.ndarray]) -> None:
    shard, codes = corpus
    rows = np.array([0, 17, 4999, 49_999])
    hits = shard.search(codes[rows], max_distance=0)
    assert hits.q_idx.tolist() == [0, 1, 2, 3]
    assert hits.stream_id.tolist() == (rows // 100 + 1000).tolist()
    assert hits.frame_idx.tolist() == (rows % 100).tolist()
    assert hits.variant_idx.tolist() == (rows % 3).tolist()
    assert hits.distance.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("nbits", [1, 5, 9])
def test_complete_within_pigeonhole_radius(corpus: tuple[Shard, np.ndarray], nbits: int) -> None:
    # 10 chunks of 24 bits: 9 flipped bits leave at least one chunk intact.
    shard, codes = corpus
    rng = np.random.default_rng(nbits)
    rows = rng.choice(codes.shape[0], 300, replace=False)
    q = flip_bits(codes[rows], nbits, rng)
    hits = shard.search(q, max_distance=nbits)
    found = {(int(a), int(b)) for a, b in zip(hits.q_idx, hits.stream_id * 100 + hits.frame_idx - 100_000)}
    assert all((i, int(r)) in found for i, r in enumerate(rows))
    assert (hits.distance <= nbits).all()


def test_multiprobe_raises_recall_at_large_distances(corpus: tuple[Shard, np.ndarray]) -> None:
    shard, codes = corpus
    rng = np.random.default_rng(3)
    rows = rng.choice(codes.shape[0], 400, replace=False)
    q = flip_bits(codes[rows], 28, rng)
    plain = np.unique(shard.search(q, max_distance=40).q_idx).size
    probed = np.unique(shard.search(q, max_distance=40, probe=1).q_idx).size
    assert probed > plain
    assert probed >= 0.8 * rows.size


def test_distance_filter_rejects_unrelated(corpus: tuple[Shard, np.ndarray]) -> None:
    shard, _ = corpus
    q = np.random.default_rng(99).integers(0, 256, (500, 32), dtype=np.uint8)
    assert len(shard.search(q, max_distance=56, probe=1)) == 0


def test_rebuild_replaces_atomically_and_leaves_no_temp(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    d = tmp_path / "shard"
    for n in (10, 20):
        codes = rng.integers(0, 256, (n, 32), dtype=np.uint8)
        build_shard(d, codes, np.zeros(n, np.int64), np.arange(n, dtype=np.int32), np.zeros(n, np.int16))
    assert len(Shard.open(d)) == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard"]


def test_empty_shard_and_empty_query(tmp_path) -> None:  # type: ignore[no-untyped-def]
    build_shard(tmp_path / "e", np.zeros((0, 32), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int32),
                np.zeros(0, np.int16))
    shard = Shard.open(tmp_path / "e")
    assert len(shard.search(np.zeros((3, 32), np.uint8), max_distance=10)) == 0
    assert len(shard.search(np.zeros((0, 32), np.uint8), max_distance=10)) == 0
    assert len(Hits.concat([Hits.empty(), Hits.empty()])) == 0


def test_wrong_version_and_bad_folder_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IndexError_, match="not a readable search shard"):
        Shard.open(tmp_path)
    build_shard(tmp_path / "s", np.zeros((1, 32), np.uint8), np.zeros(1, np.int64), np.zeros(1, np.int32),
                np.zeros(1, np.int16))
    meta_path = tmp_path / "s" / "shard.json"
    meta = json.loads(meta_path.read_text())
    meta["version"] = SHARD_VERSION + 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(IndexError_, match="rebuild the index"):
        Shard.open(tmp_path / "s")


def test_bad_shapes_are_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        build_shard(tmp_path / "x", np.zeros((2, 31), np.uint8), np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError):
        build_shard(tmp_path / "x", np.zeros((2, 32), np.uint8), np.zeros(3), np.zeros(2), np.zeros(2))


def test_version_1_shards_still_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Format 1 kept sorted 4-byte chunk keys; rewrite a shard that way and search it.
    from overlap_desktop.core.index.plan import chunk_keys

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 256, (500, 32), dtype=np.uint8)
    d = tmp_path / "v1"
    build_shard(d, codes, np.zeros(500, np.int64), np.arange(500, dtype=np.int32), np.zeros(500, np.int16),
                version=2)
    meta = json.loads((d / "shard.json").read_text())
    for j, (start, width) in enumerate(meta["chunks"]):
        keys = chunk_keys(codes, start, width)
        perm = np.argsort(keys, kind="stable").astype(np.uint32)
        np.save(d / f"key_{j}.npy", keys[perm])
        np.save(d / f"perm_{j}.npy", perm)
        (d / f"off_{j}.npy").unlink()
        (d / f"low_{j}.npy").unlink()
    meta["version"] = 1
    (d / "shard.json").write_text(json.dumps(meta))
    hits = Shard.open(d).search(flip_bits(codes[:50], 6, rng), max_distance=6)
    assert sorted(set(zip(hits.q_idx.tolist(), hits.frame_idx.tolist())) & {(i, i) for i in range(50)}) == [
        (i, i) for i in range(50)]


def _same_hits(a: Hits, b: Hits) -> None:
    """Equal hit sets. Ties (same query row and distance) may come in another row order when
    format 4 regroups the rows by stream, so both are compared fully sorted."""
    fields = ("q_idx", "distance", "stream_id", "frame_idx", "variant_idx")
    ka = np.lexsort([getattr(a, f) for f in reversed(fields)])
    kb = np.lexsort([getattr(b, f) for f in reversed(fields)])
    for field in fields:
        assert np.array_equal(getattr(a, field)[ka], getattr(b, field)[kb]), field


@pytest.mark.parametrize("n", [0, 1, 3_000])
def test_older_formats_give_the_same_hits(tmp_path, n: int) -> None:  # type: ignore[no-untyped-def]
    # Format 3 stacks the chunk tables, format 4 regroups rows by stream and drops the per-row
    # stream id, format 5 stores row numbers in three bytes and holds ~8 rows per bucket; shards
    # of formats 2 to 4 of the same codes must still open and answer every query exactly as the
    # new layout does (an index built before keeps working). Stream ids interleave (row % 7), so
    # formats 4-5 have to sort the rows stream-major themselves.
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    codes[n // 2:] = codes[: n - n // 2]  # repeated codes: buckets with several rows
    args = (codes, np.arange(n) % 7 + 10**12, (np.arange(n) // 7).astype(np.int32),
            (np.arange(n) % 2).astype(np.int16))
    build_shard(tmp_path / "v2", *args, version=2)
    build_shard(tmp_path / "v3", *args, version=3)
    build_shard(tmp_path / "v4", *args, version=4)
    build_shard(tmp_path / "v5", *args)
    shards = [Shard.open(tmp_path / f"v{v}") for v in (2, 3, 4, 5)]
    assert [s.version for s in shards] == [2, 3, 4, SHARD_VERSION] and SHARD_VERSION == 5
    new = shards[-1]
    assert not (tmp_path / "v5" / "stream_ids.npy").exists()
    query = np.concatenate([flip_bits(codes[:200], 9, rng), rng.integers(0, 256, (50, 32), dtype=np.uint8)])
    query = np.concatenate([query, query[::3]])  # repeated query codes share their probes
    for probe in (0, 1):
        want = shards[0].search(query, max_distance=40, probe=probe)
        assert np.array_equal(want.q_idx, np.sort(want.q_idx))
        for other in shards[1:]:
            _same_hits(want, other.search(query, max_distance=40, probe=probe))
    if n:
        hits = new.search(query, max_distance=40)
        assert len(hits) >= min(n, 200) // 2
        assert len(set(hits.q_idx.tolist()) & set(range(250, query.shape[0]))) >= min(n, 200) // 6
        # Exact lookups name the row's own stream, frame and variant.
        exact = new.search(codes[[0, n - 1]], max_distance=0)
        got = set(zip(exact.q_idx.tolist(), exact.stream_id.tolist(), exact.frame_idx.tolist()))
        assert (0, 10**12, 0) in got and (1, (n - 1) % 7 + 10**12, (n - 1) // 7) in got
    with pytest.raises(ValueError, match="version"):
        build_shard(tmp_path / "v9", *args, version=9)


def test_format_4_refuses_references_it_cannot_hold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    codes = np.zeros((2, 32), np.uint8)
    with pytest.raises(ValueError, match="variant_idx"):
        build_shard(tmp_path / "x", codes, np.zeros(2), np.zeros(2), np.array([0, 256]))
    with pytest.raises(ValueError, match="frame_idx"):
        build_shard(tmp_path / "x", codes, np.zeros(2), np.array([0, -1]), np.zeros(2))
    build_shard(tmp_path / "x", codes, np.zeros(2), np.zeros(2), np.array([0, 256]), version=3)


def test_seed_frames_follow_stream_time_not_sample_count() -> None:
    from overlap_desktop.core.index.shards import seed_frames

    # 4 samples/s with sample 4 (t = 1.0 s) unusable: the second whole second is seeded by
    # its first usable sample (t = 1.25 s); every sample is kept without a seed grid.
    t = (np.arange(12) * 250_000_000).astype(np.int64)
    usable = np.ones(12, bool)
    usable[4] = False
    assert seed_frames(t, usable, 1.0, stagger=1).tolist() == [0, 5, 8]
    assert seed_frames(t, usable, 2.0, stagger=1).tolist() == [0, 2, 5, 6, 8, 10]
    assert seed_frames(t, usable, None).tolist() == np.flatnonzero(usable).tolist()
    # Another sampling rate (3/s, i.e. 333 ms steps) gives one seed per second as well.
    t3 = (np.arange(9) * 333_333_333).astype(np.int64)
    assert seed_frames(t3, np.ones(9, bool), 1.0, stagger=1).tolist() == [0, 3, 6]
    assert seed_frames(t3, np.ones(9, bool), 1.0).tolist() == [0, 4, 8]  # at or after 0, 4/3, 8/3 s


def test_seed_phases_turn_through_the_second_at_the_same_number_of_seeds() -> None:
    """Seeds at or after 0, 1/3, 2/3 of successive seconds (a copy's once-a-second manifest samples
    then find a seed within a quarter second, whatever phase its trim left), one per second as
    before; a second with no usable sample late enough keeps its first usable one."""
    from overlap_desktop.core.index.shards import SEED_STAGGER, seed_frames

    assert SEED_STAGGER == 3
    t = (np.arange(40) * 250_000_000).astype(np.int64)  # 10 s at 4 samples/s
    usable = np.ones(40, bool)
    got = seed_frames(t, usable, 1.0)
    assert (t[got] / 1e9).tolist() == [0.0, 1.5, 2.75, 3.0, 4.5, 5.75, 6.0, 7.5, 8.75, 9.0]
    assert got.size == seed_frames(t, usable, 1.0, stagger=1).size == 10
    # Second 2: only 2.0 s usable, so it seeds that second; second 4 loses its 4.5 s sample.
    usable[[9, 10, 11, 18]] = False
    assert (t[seed_frames(t, usable, 1.0)] / 1e9).tolist() == [0.0, 1.5, 2.0, 3.0, 4.75, 5.75, 6.0, 7.5,
                                                                8.75, 9.0]
    # For every phase of a once-a-second query grid, a third of the queries or more lie within a
    # quarter second of a seed (on the grid of one phase, none did at phases near a half).
    for phase in np.arange(0.0, 1.0, 0.05):
        q = phase + np.arange(1, 10)
        near = np.min(np.abs(q[:, None] - t[got][None, :] / 1e9), axis=1)
        assert (near <= 0.25 + 1e-9).mean() >= 1 / 3
        uniform = t[seed_frames(t, np.ones(40, bool), 1.0, stagger=1)] / 1e9
        if 0.3 <= phase <= 0.7:
            assert np.min(np.abs(q[:, None] - uniform[None, :]), axis=1).min() > 0.25
    with pytest.raises(ValueError, match="stagger"):
        seed_frames(t, usable, 1.0, stagger=0)
