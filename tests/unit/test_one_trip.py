"""compare's two passes (upright, turned) looked up in one trip over the shards.

``search_orientations`` used to run ``compare_streams`` twice, each pass mapping and searching
every shard; since issue 19 item 4 both passes' codes go through each shard together
(``candidates.one_trip``). The reference here is the previous two-trip code, run on the same
corpus: the segments must be identical, and the shards visited once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, replace
from typing import Any

import numpy as np

from overlap_desktop.core.index.search import ShardSearch
from overlap_desktop.core.index.shards import Shard
from overlap_desktop.core.ingest import orient
from overlap_desktop.core.match import orientations
from overlap_desktop.core.match.candidates import one_trip
from overlap_desktop.core.match.corpora import MemoryCorpus
from overlap_desktop.core.match.pipeline import compare_streams, search_orientations
from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.types import StreamFingerprints, Variant
from tests.codes import flip_bits


def _walk(n: int, rng: np.random.Generator) -> np.ndarray:
    bits = np.zeros((n, 256), np.uint8)
    bits[np.arange(n)[:, None], rng.integers(0, 256, (n, 3))] = 1
    cuts = np.flatnonzero(rng.random(n) < 0.05)
    bits[cuts] = rng.integers(0, 2, (cuts.size, 256), dtype=np.uint8)
    return np.packbits(np.bitwise_xor.accumulate(bits, axis=0), axis=1)


def _fp(codes: np.ndarray, fps: float) -> StreamFingerprints:
    n = codes.shape[0]
    variants = tuple(Variant(mirrored=bool(v % 2)) for v in range(codes.shape[1]))
    return StreamFingerprints(times_ns=(np.arange(n) * (1e9 / fps)).astype(np.int64),
                              quality=np.full(n, 90, np.uint8), codes=np.ascontiguousarray(codes),
                              variants=variants, usable=np.ones(n, bool), indeterminate=[], fps=fps,
                              duration_s=n / fps)


class _Counting:
    """A corpus that counts the trips over its shards."""

    def __init__(self, inner: MemoryCorpus) -> None:
        self.inner, self.trips = inner, 0

    def shards(self) -> Iterator[Shard]:
        self.trips += 1
        return self.inner.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.inner.fingerprints(stream_id)

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.inner.describe(stream_id)

    def searched_seconds(self) -> float:
        return self.inner.searched_seconds()


def _same(a: list[Any], b: list[Any]) -> bool:
    """Equal ``(query, stream, segment)`` lists, or segment lists; array fields compared by value."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            if x[:2] != y[:2]:
                return False
            x, y = x[2], y[2]
        for f in fields(x):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if not (np.array_equal(u, v) if isinstance(u, np.ndarray) else u == v):
                return False
    return True


def _two_trips(queries: list[QueryStream], corpus: Any, params: MatchParams) -> list[tuple[int, int, Any]]:
    """``search_orientations`` before issue 19 item 4: one trip over the shards per pass."""
    view = orientations.OrientedCorpus(corpus)
    n, extra = len(queries), len(view.orientations)
    found = list(compare_streams(queries, corpus, params))
    turned = [replace(q, fp=orient.orient_fingerprints(q.fp, o)) for o in view.orientations for q in queries]
    for qi, sid, seg in compare_streams(turned, corpus, params, search_space=extra):
        found.append((qi % n, view.tag(sid, qi // n + 1), seg))
    return found


def test_one_trip_finds_what_two_trips_found() -> None:
    rng = np.random.default_rng(19)
    owned = [_walk(480, rng) for _ in range(6)]  # 2 minutes at 4/s each
    masks = rng.integers(0, 256, (2, 32), dtype=np.uint8)
    masks[0] = 0
    streams = [(f"own-{k}.mp4", "v:0", _fp(c[:, None, :] ^ masks[None, :, :], 4.0)) for k, c in enumerate(owned)]
    pieces = [_walk(40, rng)]
    for k, turn in [(0, None), (1, (False, 180)), (2, None), (3, (False, 270)), (4, (True, 90))]:
        piece = owned[k][40:200:4]  # 40 s at 1/s
        if turn is not None:
            piece = orient.orient_codes(piece, turn)
        pieces += [flip_bits(piece, 8, rng), _walk(30, rng)]
    offer = np.concatenate(pieces)
    queries = [QueryStream("offer.mp4", offer.shape[0], "v:0", _fp(offer[:, None, :], 1.0)),
               QueryStream("other.mp4", 60.0, "v:0", _fp(flip_bits(owned[5][:240:4], 6, rng)[:, None, :], 1.0))]
    params = MatchParams()
    memory = MemoryCorpus(streams)
    try:
        before, after = _Counting(memory), _Counting(memory)
        want = _two_trips(queries, before, params)
        got, _ = search_orientations(queries, after, params)
        assert before.trips == 2 and after.trips == 1
        assert _same(got, want)
        # Not vacuous: upright and turned copies, from both offered streams, were found.
        assert {(qi, sid // orientations.OrientedCorpus._TAG) for qi, sid, _ in got} >= {(0, 0), (0, 1), (0, 2), (0, 3),
                                                                                  (1, 0)}
    finally:
        memory.close()


def test_a_view_searched_otherwise_searches_itself() -> None:
    rng = np.random.default_rng(3)
    own = _walk(200, rng)
    memory = MemoryCorpus([("own.mp4", "v:0", _fp(own[:, None, :], 4.0))])
    try:
        counting = _Counting(memory)
        q = [QueryStream("a.mp4", 30.0, "v:0", _fp(own[:120:4, None, :], 1.0))]
        other = [QueryStream("b.mp4", 30.0, "v:0", _fp(own[80:200:4, None, :], 1.0))]
        first, second = one_trip(ShardSearch(counting), [q, q])
        params = MatchParams()
        alone = compare_streams(other, memory, params)
        # Other codes: their own search.
        assert alone and _same(compare_streams(other, memory, params, search=first), alone)
        assert counting.trips == 1
        shared = compare_streams(q, memory, params, search=second)
        assert shared and _same(shared, compare_streams(q, memory, params))
        assert counting.trips == 2  # the trip for both announced passes
        assert _same(compare_streams(q, memory, params, search=first), shared)
        assert _same(compare_streams(q, memory, params, search=first), shared)  # served once, then searched again
        assert counting.trips == 3
    finally:
        memory.close()
