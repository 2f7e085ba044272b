"""Orientations applied to PDQ codes at compare time (core/ingest/orient.py, issue 19)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from overlap_desktop.core.ingest import orient, prep
from overlap_desktop.core.ingest.fingerprint import _FrameHasher
from overlap_desktop.core.ingest.pdq_batch import hamming
from overlap_desktop.core.match import pipeline
from overlap_desktop.core.types import StreamFingerprints, Variant
from tests.footage import Scene
from tests.rig import RigEpisode


@functools.lru_cache(maxsize=1)
def _work_images() -> list[np.ndarray]:
    out = []
    for seed in (1, 2):
        sc = Scene(seed)
        out += [prep.to_work_image(sc.frame(t, (320, 240))) for t in (0.0, 3.0, 7.5)]
    rig = RigEpisode(7, 1)
    out += [prep.to_work_image(rig.frame(t, (320, 240))) for t in (1.0, 4.0)]
    return out


def _code(work: np.ndarray) -> np.ndarray:
    return _FrameHasher([Variant()]).hash_work(np.ascontiguousarray(work))[0][0]


def test_group_laws() -> None:
    for a in orient.ORIENTATIONS:
        assert orient.compose(orient.inverse(a), a) == (False, 0)
        for b in orient.ORIENTATIONS:
            img = np.arange(12).reshape(3, 4)
            assert np.array_equal(orient.apply_image(orient.compose(a, b), img),
                                  orient.apply_image(a, orient.apply_image(b, img)))
    # With the stored mirror, the identity and the three query orientations reach all eight.
    reached = {orient.compose(orient.inverse(o), m) for o in ((False, 0), *orient.QUERY_ORIENTATIONS)
               for m in ((False, 0), (True, 0))}
    assert reached == set(orient.ORIENTATIONS)


def test_transpose_is_exact_and_flips_cost_few_bits() -> None:
    costs: dict[tuple[bool, int], list[int]] = {o: [] for o in orient.ORIENTATIONS}
    for work in _work_images():
        base = _code(work)
        for o in orient.ORIENTATIONS:
            real = _code(orient.apply_image(o, work))
            costs[o].append(int(hamming(orient.orient_codes(base, o), real)))
    assert costs[(False, 0)] == [0] * len(costs[(False, 0)])
    assert max(costs[(True, 90)]) == 0  # a transpose permutes the coefficients exactly
    for o, c in costs.items():
        # Sign flips move the median a little: a few bits, far inside the 56-bit seed radius.
        assert np.mean(c) <= 12 and max(c) <= 32, (o, c)


def test_orient_codes_shapes_and_inverse() -> None:
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, (5, 3, 32), dtype=np.uint8)
    for o in orient.ORIENTATIONS:
        t = orient.orient_codes(codes, o)
        assert t.shape == codes.shape and t.dtype == np.uint8
        # Bit-level orientations are permutations with inversions: undoing one is exact.
        assert np.array_equal(orient.orient_codes(t, orient.inverse(o)), codes)


def _fp(n: int, variants: tuple[Variant, ...]) -> StreamFingerprints:
    return StreamFingerprints(times_ns=np.arange(n, dtype=np.int64) * 250_000_000,
                              quality=np.full(n, 100, np.uint8),
                              codes=np.zeros((n, len(variants), 32), np.uint8), variants=variants,
                              usable=np.ones(n, bool), indeterminate=[], fps=4.0, duration_s=n / 4)


@dataclass
class _Q:
    file: str
    fp: StreamFingerprints


class _Corpus:
    def __init__(self) -> None:
        self.fp = _fp(4, (Variant(), Variant(mirrored=True), Variant(crop=0.92)))

    def shards(self) -> list[Any]:
        return []

    def fingerprints(self, sid: int) -> StreamFingerprints:
        assert sid == 7
        return self.fp

    def describe(self, sid: int) -> tuple[str, str]:
        assert sid == 7
        return ("owned.mp4", "v:0")

    def searched_seconds(self) -> float:
        return 100.0


def test_search_orientations_tags_passes_and_reports_offer_orientation(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[bytes], float]] = []

    def search(queries: list[_Q], corpus: Any, params: Any, *, search_space: int = 1,
               **kw: Any) -> list[tuple[int, int, str]]:
        seen.append(([x.fp.codes.tobytes() for x in queries], corpus.searched_seconds() * search_space))
        return [(i, 7, "seg") for i in range(len(queries))]

    monkeypatch.setattr(pipeline, "compare_streams", search)
    q = _Q("offer.mp4", _fp(3, (Variant(),)))
    q.fp.codes[:] = np.arange(32, dtype=np.uint8)
    found, view = pipeline.search_orientations([q], _Corpus(), None, cancel=None)
    assert len(found) == 1 + len(orient.QUERY_ORIENTATIONS)
    # Two searches: the codes as given, with the search space unchanged; then every turned copy at
    # once, judged against a search space multiplied by the number of turns.
    assert len(seen) == 2
    assert seen[0] == ([q.fp.codes.tobytes()], 100.0)
    assert seen[1][1] == 100.0 * len(orient.QUERY_ORIENTATIONS)
    assert seen[1][0] == [orient.orient_codes(q.fp.codes, o).tobytes() for o in orient.QUERY_ORIENTATIONS]
    assert found[0] == (0, 7, "seg")
    for k, (qi, sid, _) in enumerate(found[1:], 1):
        assert qi == 0
        assert view.describe(sid) == ("owned.mp4", "v:0")
        fp = view.fingerprints(sid)
        qo = orient.QUERY_ORIENTATIONS[k - 1]
        for stored, shown in zip((Variant(), Variant(mirrored=True), Variant(crop=0.92)), fp.variants):
            # The offer is the owned picture turned by the inverse of the query turn, after the stored one.
            want = orient.compose(orient.inverse(qo), (stored.mirrored, stored.rotation))
            assert (shown.mirrored, shown.rotation) == want
            assert shown.crop == stored.crop
    assert view.fingerprints(7) is view.inner.fp


def test_two_passes_report_progress_as_one_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    """The turned pass continues the bar where the upright pass left it; it never runs twice."""
    from overlap_desktop.core.types import Progress

    def search(queries: list[_Q], corpus: Any, params: Any, *, progress: Any = None,
               **kw: Any) -> list[tuple[int, int, str]]:
        progress(Progress(stage="search", done=1, total=None, unit="shards"))
        for k in range(5):
            progress(Progress(stage="match", done=k + 1, total=5, unit="pairs"))
        return []

    monkeypatch.setattr(pipeline, "compare_streams", search)
    got: list[Progress] = []
    q = _Q("offer.mp4", _fp(3, (Variant(),)))
    pipeline.search_orientations([q], _Corpus(), None, progress=got.append, cancel=None)
    fractions = [p.done / p.total for p in got if p.total]
    assert fractions == sorted(fractions) and fractions[0] <= 0.5 < fractions[-1] == 1.0
    assert all(p.message for p in got[len(got) // 2:])  # the second pass says what it searches
    assert not any(p.message for p in got[: len(got) // 2])


@pytest.mark.parametrize("o", orient.ORIENTATIONS)
def test_offer_variant_names_the_transform(o: tuple[bool, int]) -> None:
    """Turning an owned picture by ``o`` and searching with each query turn lands on the
    stored upright or mirrored code; the reported orientation is then ``o`` itself."""
    work = _work_images()[0]
    stored = {(False, 0): _code(work), (True, 0): _code(np.fliplr(work))}
    offered = _code(orient.apply_image(o, work))
    best = min(((int(hamming(orient.orient_codes(offered, q), c)), q, s)
                for q in ((False, 0), *orient.QUERY_ORIENTATIONS) for s, c in stored.items()))
    d, q, s = best
    assert d <= 32
    assert orient.compose(orient.inverse(q), s) == o
