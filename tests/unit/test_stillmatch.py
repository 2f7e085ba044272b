"""Still matches: near-identical frames a line holds that cannot be counted are "can't tell"."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.match.stillmatch import (
    STILL_MATCH_BITS,
    into_owned_still,
    near_hits,
    near_pieces,
    near_rows,
    row_spans,
    still_pieces,
    unseen_pieces,
)
from overlap_desktop.core.types import Span, StreamFingerprints, Variant


def fp(codes: np.ndarray, indeterminate: list[Span] | None = None) -> StreamFingerprints:
    n = codes.shape[0]
    usable = np.ones(n, bool)
    for sp in indeterminate or []:
        usable[int(sp.start_s):int(sp.end_s)] = False
    return StreamFingerprints((np.arange(n) * 1_000_000_000).astype(np.int64), np.full(n, 90, np.uint8),
                              codes[:, None, :], (Variant(),), usable, list(indeterminate or []), 1.0, float(n))


RNG = np.random.default_rng(5)
OWNED = RNG.integers(0, 256, (30, 32), dtype=np.uint8)


def seg(q0: float, q1: float, offset: float) -> RawSegment:
    return RawSegment(q0, q1, q0 + offset, q1 + offset, 1.0, offset, 0, 5, 5, 2.0, 1.0)


def test_a_line_followed_into_owned_static_time_is_a_still_match() -> None:
    """Owned 10..20 s is marked static (not searched): the copy's line stops at 10 s; the offered
    frames that go on matching the owned static frames are found code to code."""
    owned = fp(OWNED, [Span(10.0, 20.0, "static")])
    offered = fp(OWNED[0:20].copy())  # a copy of owned 0..20 s, not static on the offered side
    [piece] = into_owned_still(offered, owned, seg(0.0, 9.5, 0.0))
    assert piece.unjudged and piece.query_start >= 9.5 and piece.query_end >= 19.0


def test_other_footage_past_the_line_is_not_a_still_match() -> None:
    owned = fp(OWNED, [Span(10.0, 20.0, "static")])
    other = RNG.integers(0, 256, (10, 32), dtype=np.uint8)
    offered = fp(np.concatenate([OWNED[0:10], other]))
    assert into_owned_still(offered, owned, seg(0.0, 9.5, 0.0)) == []


def test_near_identical_rows_outside_counted_pieces_are_still_matches() -> None:
    owned = fp(OWNED)
    offered = fp(OWNED[0:20].copy())
    pieces = still_pieces(offered, owned, seg(0.0, 19.5, 0.0), np.arange(20), [(0.0, 12.0)])
    assert [(p.query_start > 12.0, p.query_end >= 19.0, p.unjudged) for p in pieces] == [(True, True, True)]


def flip_bits(code: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``code`` with ``n`` distinct bits flipped."""
    bits = np.unpackbits(code.copy())
    idx = np.random.default_rng(seed).choice(bits.size, n, replace=False)
    bits[idx] ^= 1
    return np.packbits(bits)


# A dim, near-static room (issue 33): owned 0..10 s moves, owned 10..20 s is marked static (so
# never searched) and its frames sit about 26 bits apart (noise on one still picture).
STILL = RNG.integers(0, 256, 32, dtype=np.uint8)
ROOM = np.concatenate([RNG.integers(0, 256, (10, 32), dtype=np.uint8),
                       np.stack([flip_bits(STILL, 13, 100 + k) for k in range(10)]),
                       RNG.integers(0, 256, (10, 32), dtype=np.uint8)])


def test_frames_near_any_frame_of_a_related_owned_stream_are_near_still_time_included() -> None:
    owned = fp(ROOM, [Span(10.0, 20.0, "static")])
    # Offered 0..4 s: frames of the owned still stretch, re-encoded (3 bits); 4..8 s: other footage.
    offered = fp(np.concatenate([np.stack([flip_bits(ROOM[11 + k], 3, 200 + k) for k in range(4)]),
                                 RNG.integers(0, 256, (4, 32), dtype=np.uint8)]))
    near = near_rows(offered, np.arange(8), [fp(OWNED), owned])
    assert near.tolist() == [True] * 4 + [False] * 4
    assert row_spans(offered, np.flatnonzero(near)) == [(0.0, 3.5)]


def test_a_frame_just_past_the_near_distance_is_not_near() -> None:
    owned = fp(ROOM)
    offered = fp(np.stack([flip_bits(ROOM[3], STILL_MATCH_BITS, 1), flip_bits(ROOM[3], STILL_MATCH_BITS + 1, 2)]))
    assert near_rows(offered, np.arange(2), [owned]).tolist() == [True, False]


def test_the_near_check_stops_at_its_budget_and_leaves_the_rest_unchecked() -> None:
    owned = fp(ROOM)
    offered = fp(ROOM[0:4].copy())
    assert near_rows(offered, np.arange(4), [owned], budget=4 * len(ROOM)).all()
    assert not near_rows(offered, np.arange(4), [owned], budget=4 * len(ROOM) - 1).any()


def test_search_hits_near_an_owned_frame_are_near_pieces_and_farther_ones_are_not() -> None:
    owned = fp(ROOM)
    offered = fp(RNG.integers(0, 256, (8, 32), dtype=np.uint8))
    q = np.array([1, 2, 2, 5, 7])
    c = np.array([3, 4, 5, 6, 7])
    d = np.array([STILL_MATCH_BITS, 30, 12, STILL_MATCH_BITS + 1, 3])
    pieces = near_pieces(offered, owned, q, c, d)
    # Rows 1 and 2 (one run), row 7 (the last: it stands for the stream's end); row 5 is too far.
    assert [(p.query_start, p.query_end, p.near, p.unjudged) for p in pieces] == [(0.5, 2.5, True, True),
                                                                                 (6.5, 8.0, True, True)]


def test_a_still_piece_at_the_last_sample_reaches_the_end_of_the_stream() -> None:
    """The time after the last sample is nobody's "new" (it read 0.5 s new on a found copy)."""
    owned = fp(OWNED)
    offered = fp(OWNED[0:20].copy())
    offered.duration_s = 20.4
    [piece] = still_pieces(offered, owned, seg(0.0, 20.4, 0.0), np.arange(20), [(0.0, 12.0)])
    assert piece.query_end == 20.4


def test_a_line_followed_through_searched_owned_time_is_near_not_evidence() -> None:
    """Past a line's end, offered frames near-identical to the owned frames the line would reach are
    "can't tell" (never new) even where the owned side was searched; they speak for no line's length."""
    owned = fp(OWNED)
    offered = fp(OWNED[0:20].copy())
    [piece] = into_owned_still(offered, owned, seg(0.0, 9.5, 0.0))
    assert piece.near and piece.query_start >= 9.5 and piece.query_end >= 19.0


def _between(owned_rows: np.ndarray, row: np.ndarray) -> list[RawSegment]:
    offered = owned_rows[0:20].copy()
    offered[10] = row
    return unseen_pieces(fp(offered), fp(owned_rows), seg(0.0, 19.5, 0.0), 64)


def test_a_frame_where_the_owned_footage_changed_between_samples_is_not_shown_new() -> None:
    """The owned samples either side of the offered frame's place on the line differ by ~128 bits
    (random codes): the moment between them was never fingerprinted. A frame 40 bits from one of them,
    on a line that holds near-identical frames either side, is "can't tell"."""
    [piece] = _between(OWNED, flip_bits(OWNED[10], 40, 1))
    assert piece.near and piece.unjudged and piece.query_start <= 10.0 <= piece.query_end


def test_an_unrelated_frame_between_changing_samples_is_still_new() -> None:
    assert _between(OWNED, RNG.integers(0, 256, 32, dtype=np.uint8)) == []


def test_a_frame_unlike_owned_samples_that_did_not_change_is_still_new() -> None:
    """Where the owned footage hardly changed between its samples they saw that moment: an offered
    frame 40 bits from them differs from it."""
    slow = OWNED.copy()
    slow[9] = flip_bits(OWNED[10], 4, 2)
    slow[11] = flip_bits(OWNED[10], 4, 3)
    assert _between(slow, flip_bits(OWNED[10], 40, 1)) == []


def test_a_sample_after_still_time_reaches_back_to_its_edge() -> None:
    """Still time is marked at the ingest's finer rate: the first sample after it stands for the
    time back to its edge (a quarter second was left new between them)."""
    offered = fp(OWNED[0:20].copy(), [Span(0.0, 10.25, "static")])
    assert row_spans(offered, np.array([11, 12])) == [(10.25, 12.5)]


def test_near_frames_keep_where_in_owned_footage_they_lie() -> None:
    """The near-identical decision's own comparisons say which owned frame (stream, time, bits):
    the report draws them where they lie, and the farther rows say nothing."""
    owned = fp(ROOM, [Span(10.0, 20.0, "static")])
    offered = fp(np.stack([flip_bits(ROOM[13], 3, 7), flip_bits(ROOM[25], 5, 8),
                           RNG.integers(0, 256, 32, dtype=np.uint8)]))
    near, which, when, dist = near_hits(offered, np.arange(3), [fp(OWNED), owned])
    assert near.tolist() == [True, True, False]
    assert which.tolist()[:2] == [1, 1] and when.tolist()[:2] == [13.0, 25.0] and dist.tolist()[:2] == [3, 5]
    assert which[2] == -1 and np.isnan(when[2]) and dist[2] == 256
    # The search's near hits and a still line's frames carry their pairs (offered s, owned s, bits).
    pieces = near_pieces(offered, owned, np.array([0, 1, 2]), np.array([13, 25, 4]), np.array([3, 5, 90]))
    assert [p.pairs.tolist() for p in pieces] == [[[0.0, 13.0, 3.0], [1.0, 25.0, 5.0]]]
    [piece] = still_pieces(fp(OWNED[2:8].copy()), fp(OWNED), seg(0.0, 6.0, 2.0), np.arange(4), [])
    assert piece.pairs.tolist() == [[0.0, 2.0, 0.0], [1.0, 3.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 0.0]]
