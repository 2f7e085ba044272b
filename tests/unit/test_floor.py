"""The evidence floor is a floor of evidence, not a cliff (issue 33, item 6; core/match/floor.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from overlap_desktop.core.match.floor import (
    FLOOR_DECADES,
    FLOOR_GRACE,
    clears_floor,
    floor_chance,
    line_evidence_seconds,
)
from overlap_desktop.core.types import Segment, Span, Variant

MAX_CHANCE = 0.01


def seg(q0: float, q1: float, chance: float | None, c0: float | None = None, speed: float = 1.0,
        owned: str = "owned.mp4") -> Segment:
    c0 = q0 if c0 is None else c0
    pairs = np.array([[t, c0 + (t - q0) * speed, 3.0] for t in np.arange(q0, q1 + 1e-9, 1.0)])
    return Segment("offer.mp4", "v:0", q0, q1, owned, "v:0", c0, c0 + (q1 - q0) * speed, speed, Variant(),
                   int(pairs.shape[0]), 3.0, 1.0, pairs=pairs, chance=chance)


def test_at_or_above_the_floor_the_ordinary_threshold_applies() -> None:
    assert floor_chance(10.0, 10.0, MAX_CHANCE) == MAX_CHANCE
    assert floor_chance(25.0, 10.0, MAX_CHANCE) == MAX_CHANCE
    # Weak evidence is judged apart: at the floor a stretch clears it whatever its figure.
    assert clears_floor(seg(0, 10, 0.5), 10.0, 10.0, MAX_CHANCE)


def test_below_the_floor_the_threshold_falls_steadily_not_at_a_cliff() -> None:
    """Ten times stricter for each 1/40 of the floor missing, 1e-12 at three quarters of it."""
    lengths = np.linspace(10.0, 7.5, 11)
    needs = [floor_chance(float(x), 10.0, MAX_CHANCE) for x in lengths]
    assert all(n is not None for n in needs)
    logs = np.log10(np.array(needs, float))
    assert np.allclose(np.diff(logs), -FLOOR_DECADES / 10)
    assert needs[-1] == pytest.approx(MAX_CHANCE * 10 ** -FLOOR_DECADES)
    assert floor_chance(9.99, 10.0, MAX_CHANCE) == pytest.approx(MAX_CHANCE, rel=0.1)


def test_a_mirrored_copy_a_little_shorter_than_the_floor_counts_on_overwhelming_evidence() -> None:
    """Measured: a 9.6 s mirrored copy of a real fixed camera at chance 1e-59 was "below floor"."""
    assert clears_floor(seg(0, 9.6, 1.3e-59), 9.6, 10.0, MAX_CHANCE)
    # At the ordinary threshold it does not: short evidence must be strong in proportion.
    assert not clears_floor(seg(0, 9.6, 0.009), 9.6, 10.0, MAX_CHANCE)
    assert not clears_floor(seg(0, 9.6, None), 9.6, 10.0, MAX_CHANCE)


def test_the_floor_still_means_what_the_user_set() -> None:
    """Below three quarters of the floor nothing counts; a higher floor never counts more."""
    overwhelming = seg(0, 6.0, 1e-200)
    assert not clears_floor(overwhelming, 6.0, 10.0, MAX_CHANCE)  # the matrix's 6 s clip
    assert floor_chance(10.0 * (1 - FLOOR_GRACE) - 0.01, 10.0, MAX_CHANCE) is None
    for length in np.arange(2.0, 30.0, 0.5):
        for chance in (1e-3, 1e-8, 1e-13, 1e-60):
            s = seg(0, float(length), chance)
            counted = [clears_floor(s, float(length), floor, MAX_CHANCE) for floor in (3.0, 5.0, 10.0, 15.0, 20.0)]
            # Once a higher floor refuses a stretch, every higher floor refuses it too.
            assert counted == sorted(counted, reverse=True), (length, chance, counted)
    # A floor of 0 counts everything (the setting's documented meaning).
    assert clears_floor(seg(0, 1.0, 0.5), 1.0, 0.0, MAX_CHANCE)


def test_pieces_of_one_line_are_one_piece_of_evidence() -> None:
    """A 12 s copy cut at one unsupported frame is two pieces of one line, not two stretches below the floor."""
    a, b = seg(0.0, 5.5, 1e-20, c0=30.0), seg(7.0, 12.0, 1e-20, c0=37.0)
    assert line_evidence_seconds([a, b], [], gap_s=5.0) == [10.5, 10.5]
    # The gap itself is not evidence: only the pieces' own time is summed.
    far = seg(7.0, 12.0, 1e-20, c0=45.0)  # another position in the owned file: another line
    assert line_evidence_seconds([a, far], [], gap_s=5.0) == [5.5, 5.0]
    other = dataclasses.replace(b, corpus_file="other.mp4")
    assert line_evidence_seconds([a, other], [], gap_s=5.0) == [5.5, 5.0]
    reversed_piece = seg(7.0, 12.0, 1e-20, c0=37.0 + 5.0 + 5.0 * 1.0, speed=-1.0)
    assert line_evidence_seconds([a, reversed_piece], [], gap_s=5.0) == [5.5, 5.0]
    # Pieces further apart than the verifier's gap are separate evidence.
    late = seg(20.0, 25.0, 1e-20, c0=50.0)
    assert line_evidence_seconds([a, late], [], gap_s=5.0) == [5.5, 5.0]


def test_unjudged_time_a_line_runs_into_still_speaks_for_it() -> None:
    a = seg(9.5, 15.0, 1e-55, c0=25.3, speed=-1.0)
    assert line_evidence_seconds([a], [Span(0.0, 9.75, "static")], gap_s=5.0) == [15.0]
