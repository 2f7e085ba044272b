"""Orientations (rotations and flips) applied to PDQ codes, without the pixels.

PDQ's 256 bits are the signs, relative to their median, of a 16x16 grid of DCT
coefficients. Turning or flipping the picture moves that grid around:

* a transpose (mirror about the main diagonal) transposes the grid, so the bits
  are permuted **exactly** (the median of the same numbers is the same);
* reversing one axis multiplies every other coefficient row (or column) by -1.
  On bits this is approximated by inverting those bits: exact when the median is
  0, off by the few coefficients that lie between ``-median`` and ``median``.

That is what lets the compare step find a rotated or flipped offer from the
offered codes alone (``query_orientations``), instead of the index storing more
variants per sample. ``bench/bench_ingest.py orient`` measures the approximation:
see docs/scale.md.

An orientation is a :class:`~overlap_desktop.core.types.Variant`-style pair
``(mirrored, rotation)``: mirror left-right first (when ``mirrored``), then rotate
``rotation`` degrees counter-clockwise (``numpy.rot90``), the convention the
corpus variants use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from overlap_desktop.core.types import Progress, StreamFingerprints, Variant

__all__ = [
    "ORIENTATIONS",
    "QUERY_ORIENTATIONS",
    "Orientation",
    "OrientedCorpus",
    "apply_image",
    "compose",
    "inverse",
    "orient_codes",
    "orient_fingerprints",
    "orientations_setting",
    "search_orientations",
]

#: ``(mirrored, rotation)``: mirror left-right first, then rotate counter-clockwise.
Orientation = tuple[bool, int]

#: The eight orientations of a picture (the dihedral group of the square).
ORIENTATIONS: tuple[Orientation, ...] = tuple((m, r) for m in (False, True) for r in (0, 90, 180, 270))

#: Transforms applied to the offered codes at compare time, on top of the identity. With the
#: index's stored mirrored variant they reach all eight orientations: each turns one offered
#: orientation into the upright picture and its mirror image into the stored mirror. The
#: transpose ``(True, 90)`` is exact on bits (it finds 90-degree-counter-clockwise and transposed
#: offers); the other two flip the signs of half the coefficients (see the module docstring).
QUERY_ORIENTATIONS: tuple[Orientation, ...] = ((True, 90), (False, 90), (False, 180))

_PROBE = np.arange(9).reshape(3, 3)  # all eight orientations of it differ


def orientations_setting(orientations: Sequence[Orientation] = QUERY_ORIENTATIONS) -> dict[str, Any]:
    """How a comparison searched turned offers, for the report's settings (informative)."""
    return {
        "stored": "upright and mirrored (index.dihedral)",
        "turned_at_compare_time": [f"{'mirrored, ' if m else ''}rotated {r} degrees" for m, r in orientations],
        "turned_search_space_factor": len(orientations),  # a turned match is judged as a search this much larger
        "note": "turned offer codes are exact for a transpose and approximate (about 6 bits) for flips",
    }


def apply_image(o: Orientation, img: np.ndarray) -> np.ndarray:
    """Apply orientation ``o`` to an image array (rows, columns, ...)."""
    m, r = o
    a = np.fliplr(img) if m else img
    return np.rot90(a, (r // 90) % 4)


def _name(img: np.ndarray) -> Orientation:
    for o in ORIENTATIONS:
        if np.array_equal(apply_image(o, _PROBE), img):
            return o
    raise AssertionError("not an orientation")  # pragma: no cover - D4 is closed


def compose(a: Orientation, b: Orientation) -> Orientation:
    """The orientation ``a`` applied after ``b``."""
    return _name(apply_image(a, apply_image(b, _PROBE)))


def inverse(a: Orientation) -> Orientation:
    """The orientation that undoes ``a``."""
    return next(o for o in ORIENTATIONS if compose(o, a) == (False, 0))


@functools.lru_cache(maxsize=16)
def _bit_map(o: Orientation) -> tuple[np.ndarray, np.ndarray]:
    """``(src, flip)``: bit ``b`` of the oriented code is bit ``src[b]`` of the code, XOR ``flip[b]``.

    Derived from the coefficient rule the corpus variants use (``pdq_batch.oriented``),
    applied to a grid of distinct positive numbers: where each number lands gives the
    permutation, its sign the inversion.
    """
    from overlap_desktop.core.ingest.pdq_batch import oriented

    grid = np.arange(1, 257, dtype=np.float32).reshape(1, 16, 16)
    out = oriented(grid, o[0], o[1])[0]
    src_coef = (np.abs(out).astype(np.int64) - 1).reshape(-1)
    neg = (out < 0).reshape(-1)
    # Bit b of a code is coefficient 255 - b (codes pack the reversed coefficient list).
    src = (255 - src_coef)[::-1].copy()
    flip = neg[::-1].copy()
    return src, flip


def orient_codes(codes: np.ndarray, o: Orientation) -> np.ndarray:
    """Approximate PDQ codes of the pictures turned by ``o``, from the codes alone.

    Args:
        codes: ``uint8 (..., 32)`` packed PDQ codes.
        o: Orientation applied to the picture.

    Returns:
        ``uint8`` codes of the same shape. Exact for the identity and the transpose
        ``(True, 90)``; within a few bits of the real code otherwise.
    """
    c = np.asarray(codes, dtype=np.uint8)
    if o == (False, 0):
        return c.copy()
    src, flip = _bit_map(o)
    bits = np.unpackbits(c, axis=-1)
    moved = bits[..., src] ^ flip.astype(np.uint8)
    return np.packbits(moved, axis=-1)


def orient_fingerprints(fp: StreamFingerprints, o: Orientation) -> StreamFingerprints:
    """A stream's fingerprints with every code turned by ``o`` (times, quality, spans kept)."""
    return replace(fp, codes=np.ascontiguousarray(orient_codes(fp.codes, o)))


def _as_variant(v: Variant, o: Orientation) -> Variant:
    """``v`` with its orientation replaced by ``o`` (crop and edge kept)."""
    return replace(v, mirrored=o[0], rotation=o[1])


class OrientedCorpus:
    """A corpus seen through query-side orientations, for reporting.

    Segments found with turned query codes carry a tagged stream id; this view maps
    it back to the real stream and reports the variant the *offer* shows: the stored
    variant's crop, and the orientation that leads from the owned picture to the offer.

    Args:
        inner: The corpus searched (anything with ``describe``, ``fingerprints`` and
            ``searched_seconds``, like compare's ``_IndexCorpus``).
    """

    #: Stream ids at or above this are tagged (``tag * _TAG + real id``).
    _TAG = 1 << 40

    def __init__(self, inner: Any, orientations: Sequence[Orientation] = QUERY_ORIENTATIONS) -> None:
        self.inner = inner
        self.orientations = tuple(orientations)
        self._cache: dict[int, StreamFingerprints] = {}

    def tag(self, stream_id: int, k: int) -> int:
        """The id under which pass ``k`` (1-based position in ``orientations``) reports a stream."""
        return k * self._TAG + int(stream_id)

    def _split(self, sid: int) -> tuple[int, int]:
        return sid // self._TAG, sid % self._TAG

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.inner.describe(self._split(stream_id)[1])

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        k, sid = self._split(stream_id)
        fp: StreamFingerprints = self.inner.fingerprints(sid)
        if k == 0:
            return fp
        if stream_id not in self._cache:
            # The query was turned by q; it then matched the stored variant v: the offer is
            # the owned picture turned by q^-1 . v.
            q_inv = inverse(self.orientations[k - 1])
            variants = tuple(_as_variant(v, compose(q_inv, (v.mirrored, v.rotation % 360)))
                             for v in fp.variants)
            self._cache[stream_id] = replace(fp, variants=variants)
        return self._cache[stream_id]


class _PassCorpus:
    """The corpus for one query-orientation pass: the same shards, a larger search space.

    Every extra pass is another chance for unrelated footage to line up, so its evidence
    is judged as if it had searched the footage once per extra pass (the identity pass
    keeps exactly the judgement it had before orientations were searched).
    """

    def __init__(self, inner: Any, factor: int) -> None:
        self.inner = inner
        self.factor = factor
        fan_out = getattr(inner, "collect_hits", None)
        if fan_out is not None:
            self.collect_hits = fan_out

    def shards(self) -> Any:
        return self.inner.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.inner.fingerprints(stream_id)

    def describe(self, stream_id: int) -> tuple[str, str]:
        return self.inner.describe(stream_id)

    def searched_seconds(self) -> float:
        return float(self.inner.searched_seconds()) * self.factor


def search_orientations(search: Callable[..., list[tuple[int, int, Any]]], queries: Sequence[Any],
                        corpus: Any, params: Any, *, orientations: Sequence[Orientation] = QUERY_ORIENTATIONS,
                        **kw: Any) -> tuple[list[tuple[int, int, Any]], OrientedCorpus]:
    """Run ``search`` on the offered codes as given, then on all their turned copies at once.

    Args:
        search: compare's engine, ``search(queries, corpus, params, **kw)`` returning
            ``(query position, corpus stream id, segment)`` triples.
        queries: Query streams (objects with an ``fp`` field holding their fingerprints).
        corpus: The corpus to search.
        params: Matcher parameters, passed through.
        orientations: Query-side orientations besides the identity.
        **kw: Passed to ``search`` (progress, cancel...).

    Returns:
        ``(found, view)``: all triples, the ones of turned passes with tagged stream ids,
        and the :class:`OrientedCorpus` that resolves those ids for reporting.
    """
    view = OrientedCorpus(corpus, orientations)
    extra = len(view.orientations)
    two_passes = bool(extra and queries)
    progress = kw.pop("progress", None)
    if not two_passes:
        return list(search(queries, corpus, params, progress=progress, **kw)), view
    # All turned copies go through one search, not one per turn. Segments are found per
    # (query, owned stream), so this finds what separate searches would.
    n = len(queries)
    turned = [replace(q, fp=orient_fingerprints(q.fp, o)) for o in view.orientations for q in queries]
    # Both passes' codes are looked up in one trip over the shards (each shard mapped once);
    # each pass then matches and judges its own hits as before (core/match/engine.py).
    from overlap_desktop.core.match.engine import one_trip

    upright, turned_corpus = one_trip(corpus, [queries, turned])
    found = list(search(queries, upright, params, progress=_pass_progress(progress, 0, two_passes), **kw))
    for qi, sid, seg in search(turned, _PassCorpus(turned_corpus, extra), params,
                               progress=_pass_progress(progress, 1, two_passes), **kw):
        found.append((qi % n, view.tag(sid, qi // n + 1), seg))
    return found, view


def _pass_progress(progress: Callable[[Progress], None] | None, index: int,
                   two_passes: bool) -> Callable[[Progress], None] | None:
    """Progress of one of the two passes as part of the whole: a bar never runs twice.

    Counted stages of the first pass fill the first half (``done`` of ``2 * total``), those of
    the turned pass the second half, which also says what it is searching.
    """
    if progress is None or not two_passes:
        return progress

    def report(p: Progress) -> None:
        if p.total:
            p = replace(p, done=p.done + index * p.total, total=2 * p.total)
        if index and not p.message:
            p = replace(p, message="Searching turned and flipped copies of the offer")
        progress(p)

    return report
