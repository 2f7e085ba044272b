"""The offer-against-itself bookkeeping (core/repeats.py) and the splice flag, on hand-made
segments (the matcher itself is exercised in tests/integration/test_repeats.py)."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.match.repeats import (
    _overlaps_itself,
    _repeat_on_query_side,
    _swap,
    find_repeats,
    new_and_repeated_seconds,
)
from overlap_desktop.core.match.results import _flags
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.report.model import FileResult
from overlap_desktop.core.types import Segment, Span, StreamFingerprints, Variant


def raw(q0: float, q1: float, c0: float, speed: float) -> RawSegment:
    qs = np.arange(q0, q1, 1.0)
    return RawSegment(
        q0,
        q1,
        c0,
        c0 + (q1 - q0) * speed,
        speed,
        c0 - speed * q0,
        0,
        len(qs),
        len(qs),
        8.0,
        0.9,
        np.c_[qs, c0 + (qs - q0) * speed, np.full(len(qs), 8.0)],
    )


def seg(q0: float, q1: float, cf: str, c0: float = 0.0, speed: float = 1.0) -> Segment:
    return Segment(
        "x.mp4", "v:0", q0, q1, cf, "v:0", c0, c0 + (q1 - q0) * speed, speed, Variant(), 10, 8.0, 0.9
    )


def test_swap_turns_a_line_around() -> None:
    s = raw(0, 30, 10, 0.5)  # query 0..30 shows corpus 10..25 at half speed
    t = _swap(s)
    assert (t.query_start, t.query_end, t.corpus_start, t.corpus_end) == (10, 25, 0, 30)
    assert t.speed == pytest.approx(2.0) and t.offset == pytest.approx(-s.offset / 0.5)
    assert np.all(np.diff(t.pairs[:, 0]) >= 0) and t.pairs[0, 1] == 0
    back = _swap(raw(0, 20, 40, -1.0))  # reversed: query 0..20 shows corpus 40..20
    assert (back.query_start, back.query_end, back.corpus_start, back.corpus_end) == (20, 40, 20, 0)


def test_the_repeat_is_the_copy_that_bills_more_time_else_the_later_one() -> None:
    assert _repeat_on_query_side(0, 1, raw(0, 30, 0, 0.5))  # query is the slowed copy
    assert not _repeat_on_query_side(1, 0, raw(0, 15, 0, 2.0))  # the corpus side is
    assert _repeat_on_query_side(3, 1, raw(0, 15, 0, 1.0)) and not _repeat_on_query_side(
        1, 3, raw(0, 15, 0, 1.0)
    )
    assert _repeat_on_query_side(2, 2, raw(60, 75, 0, 1.0)) and not _repeat_on_query_side(
        2, 2, raw(0, 15, 60, 1.0)
    )


def test_slowly_changing_footage_is_not_a_repeat_of_itself() -> None:
    assert _overlaps_itself(raw(10, 40, 13, 1.0))  # the same stretch three seconds later
    assert not _overlaps_itself(raw(60, 90, 0, 1.0))
    assert not _overlaps_itself(raw(10, 30, 0, 0.5))  # a slowed copy right after its source


def test_new_and_repeated_seconds() -> None:
    # 100 s: 0-20 owned, 10-50 repeats other offered footage, 40-60 could not be judged.
    f = FileResult(
        "x.mp4",
        100.0,
        20.0,
        20.0,
        segments=[seg(0, 20, "own/a.mp4")],
        indeterminate=[Span(40.0, 60.0, "static")],
        repeats=[seg(10, 50, "offer/b.mp4")],
    )
    repeated, new = new_and_repeated_seconds(f)
    assert repeated == 20.0  # 20-40: not owned, judged
    assert new == 40.0  # 60-100
    assert new_and_repeated_seconds(FileResult("e.mp4", 30.0)) == (0.0, 30.0)


def test_splice_flag_only_for_pieces_in_offered_time() -> None:
    copies = [seg(0, 30, "own/a.mp4"), seg(0.5, 29.5, "own/a_copy.mp4")]
    assert "splice" not in _flags(copies)
    assert "splice" in _flags([seg(0, 20, "own/a.mp4"), seg(20, 40, "own/b.mp4")])


def _stream(name: str, codes: np.ndarray) -> QueryStream:
    n = codes.shape[0]
    fp = StreamFingerprints((np.arange(n) * 1_000_000_000).astype(np.int64), np.full(n, 90, np.uint8),
                            codes[:, None, :], (Variant(),), np.ones(n, bool), [], 1.0, float(n))
    return QueryStream(name, float(n), "v:0", fp)


def test_files_with_nothing_new_are_checked_against_each_other_within_a_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeat between two offered files whose time is all owned (or can't tell) changes no figure:
    such pairs are matched up to a budget (a looping pattern cut into 80 owned pieces: 200 of 243 s),
    and a file with new time is always checked against them."""
    import overlap_desktop.core.match.repeats as repeats

    codes = np.random.default_rng(3).integers(0, 256, (30, 32), dtype=np.uint8)
    qs = [_stream("a.mp4", codes), _stream("b.mp4", codes.copy())]
    params = MatchParams()
    both = {"a.mp4", "b.mp4"}
    assert any(f.segments for f in find_repeats(qs, params, settled=both))  # within the budget: listed
    monkeypatch.setattr(repeats, "SETTLED_PAIRS", 0)
    assert not any(f.segments for f in find_repeats(qs, params, settled=both))
    assert any(f.segments for f in find_repeats(qs, params, settled={"a.mp4"}))
