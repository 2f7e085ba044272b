"""The huge-page hint on shard memory maps (issue 19 item 4): given where the platform has it,
skipped cleanly where it does not, and never a change in what a search finds."""

from __future__ import annotations

import errno
import mmap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.core.index import arrays
from overlap_desktop.core.index.arrays import advise_hugepages, map_npy
from overlap_desktop.core.index.shards import Shard, build_shard

_HAS_ADVICE = getattr(mmap, "MADV_HUGEPAGE", None) is not None and hasattr(mmap.mmap, "madvise")


class _Recording(mmap.mmap):
    """An mmap that records the advice it is given (and can refuse it like an old kernel)."""

    advice: list[int] = []
    refuse = False

    def madvise(self, option: int, *args: Any) -> None:
        type(self).advice.append(option)
        if type(self).refuse:
            raise OSError(errno.EINVAL, "Invalid argument")
        super().madvise(option, *args)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> type[_Recording]:
    _Recording.advice = []
    _Recording.refuse = False
    monkeypatch.setattr(arrays.mmap, "mmap", _Recording)
    return _Recording


def _npy(path: Path, nbytes: int) -> np.ndarray:
    arr = np.random.default_rng(nbytes).integers(0, 256, (nbytes // 32, 32), dtype=np.uint8)
    np.save(path, arr)
    return arr


@pytest.mark.skipif(not _HAS_ADVICE, reason="no MADV_HUGEPAGE on this platform")
def test_large_maps_get_the_hint_small_ones_not(tmp_path: Path, recording: type[_Recording]) -> None:
    big = _npy(tmp_path / "big.npy", 3 << 20)
    small = _npy(tmp_path / "small.npy", 64 << 10)
    assert np.array_equal(map_npy(tmp_path / "big.npy"), big)
    assert recording.advice == [mmap.MADV_HUGEPAGE]
    assert np.array_equal(map_npy(tmp_path / "small.npy"), small)
    assert recording.advice == [mmap.MADV_HUGEPAGE]  # a map under one huge page: no advice


@pytest.mark.skipif(not _HAS_ADVICE, reason="no MADV_HUGEPAGE on this platform")
def test_a_kernel_refusing_the_hint_still_maps(tmp_path: Path, recording: type[_Recording]) -> None:
    big = _npy(tmp_path / "big.npy", 3 << 20)
    recording.refuse = True
    assert np.array_equal(map_npy(tmp_path / "big.npy"), big)
    assert recording.advice == [mmap.MADV_HUGEPAGE]


def test_no_hint_where_the_platform_has_none(tmp_path: Path, recording: type[_Recording],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS has madvise without MADV_HUGEPAGE; Windows has neither.
    big = _npy(tmp_path / "big.npy", 3 << 20)
    monkeypatch.setattr(arrays, "_MADV_HUGEPAGE", None)
    assert np.array_equal(map_npy(tmp_path / "big.npy"), big)
    assert recording.advice == []

    class _NoMadvise:  # a Windows mmap object
        def __len__(self) -> int:
            return 4 << 20

    monkeypatch.setattr(arrays, "_MADV_HUGEPAGE", 14)
    assert advise_hugepages(_NoMadvise()) is False  # type: ignore[arg-type]


def test_searches_find_the_same_with_and_without_the_hint(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    n = 120_000  # codes 3.8 MB, row numbers 4.8 MB: both above one huge page
    codes = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    build_shard(tmp_path / "s", codes, np.arange(n) // 100, np.arange(n) % 100, np.zeros(n, np.int16))
    query = codes[rng.integers(0, n, 300)].copy()
    query[:, 5] ^= 0x11  # a few bits off, so chunk lookups and verification both matter

    def search() -> list[np.ndarray]:
        shard = Shard.open(tmp_path / "s")
        try:
            h = shard.search(query, max_distance=40)
            return [h.q_idx, h.stream_id, h.frame_idx, h.variant_idx, h.distance]
        finally:
            shard.close()

    hinted = search()
    monkeypatch.setattr(arrays, "_MADV_HUGEPAGE", None)
    plain = search()
    assert hinted[0].size >= 300
    assert all(np.array_equal(a, b) for a, b in zip(hinted, plain))


@pytest.mark.skipif(not _HAS_ADVICE, reason="no MADV_HUGEPAGE on this platform")
def test_shards_are_written_through_hinted_maps(tmp_path: Path, recording: type[_Recording]) -> None:
    # Written through a hinted map, the tables are cached in huge pages from the start, so a
    # search right after indexing maps them as cheaply as shards read back from disk.
    n = 120_000
    codes = np.random.default_rng(8).integers(0, 256, (n, 32), dtype=np.uint8)
    build_shard(tmp_path / "s", codes, np.arange(n) // 100, np.arange(n) % 100, np.zeros(n, np.int16))
    # codes (3.8 MB), perm (4.8 MB) and low (2.4 MB): hinted; off (~0.3 MB) is under one huge page.
    assert recording.advice.count(mmap.MADV_HUGEPAGE) == 3


def test_written_tables_are_the_files_np_save_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The write path changed (a hinted map instead of np.save for codes), the format did not.
    n = 50_000
    codes = np.random.default_rng(9).integers(0, 256, (n, 32), dtype=np.uint8)
    build_shard(tmp_path / "s", codes, np.arange(n) // 100, np.arange(n) % 100, np.zeros(n, np.int16))
    np.save(tmp_path / "ref.npy", codes)
    assert (tmp_path / "s" / "codes.npy").read_bytes() == (tmp_path / "ref.npy").read_bytes()
    monkeypatch.setattr(arrays, "_MADV_HUGEPAGE", None)  # the platforms without the advice
    build_shard(tmp_path / "t", codes, np.arange(n) // 100, np.arange(n) % 100, np.zeros(n, np.int16))
    for name in ("codes", "perm", "low", "off", "frame_idx", "variant_idx", "streams", "first", "shard.json"):
        suffix = "" if name.endswith(".json") else ".npy"
        assert (tmp_path / "s" / f"{name}{suffix}").read_bytes() == (tmp_path / "t" / f"{name}{suffix}").read_bytes()


@pytest.mark.skipif(not _HAS_ADVICE or not hasattr(mmap, "MADV_RANDOM"), reason="no madvise advice here")
def test_hit_columns_read_only_the_pages_touched(tmp_path: Path, recording: type[_Recording]) -> None:
    # A search reads frame and variant numbers at its few hits only: those columns are mapped
    # without read-around (a cold comparison read a third of them in 2 MiB folios for a couple
    # of thousand hits), the tables it gathers from all over keep the huge-page hint.
    n = 120_000
    codes = np.random.default_rng(10).integers(0, 256, (n, 32), dtype=np.uint8)
    build_shard(tmp_path / "s", codes, np.arange(n) // 100, np.arange(n) % 100, np.zeros(n, np.int16))
    recording.advice = []
    shard = Shard.open(tmp_path / "s")
    hits = shard.search(codes[:50], max_distance=0)
    assert len(hits) == 50 and np.array_equal(hits.frame_idx, np.arange(50) % 100)
    # codes, perm, low hinted; frame_idx, variant_idx, first, streams read sparsely.
    assert recording.advice.count(mmap.MADV_HUGEPAGE) == 3
    assert recording.advice.count(mmap.MADV_RANDOM) == 4
    # Refused advice still maps.
    recording.refuse = True
    np.save(tmp_path / "col.npy", np.arange(1000))
    assert np.array_equal(map_npy(tmp_path / "col.npy", sparse=True), np.arange(1000))
