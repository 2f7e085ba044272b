"""Still matches: near-identical frames a line holds that cannot be counted are "can't tell"."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.match.stillmatch import into_owned_still, still_pieces
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
