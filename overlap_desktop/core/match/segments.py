"""The matcher's shared types: its thresholds and a verified segment.

Kept apart from the stages (:mod:`.lines`, :mod:`.verify`, :mod:`.evidence`...) because all of
them use them; the shared geometry is in :mod:`.geometry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["MatchParams", "RawSegment"]


@dataclass(frozen=True, slots=True)
class MatchParams:
    """Thresholds of the matcher (defaults measured on generated footage; see bench/RESULTS.md).

    Attributes:
        seed_distance: Search radius for seeds (Hamming bits). Unrelated PDQ codes sit
            ~128 +/- 8 bits apart, so 56 admits essentially no random seeds while
            keeping re-encoded, phase-shifted and between-rung-cropped frames.
        accept_distance: Per-frame threshold along a line. Higher than the seed
            radius because a frame on an already-established line needs less evidence.
        extend_distance: Looser threshold for frames inside or at the ends of a run of
            accepted frames (hysteresis): a copy whose distances hover around
            ``accept_distance`` (a crop between two indexed rungs) is not cut into
            pieces, while a segment still needs ``min_frames`` frames within
            ``accept_distance`` to exist at all.
        min_speed, max_speed: Range of |slope| searched (the brief's 0.25x..4x, with margin).
        gap_seconds: Rejected query time tolerated inside one segment.
        min_frames: Fewest accepted frames for a segment to be reported at all.
        min_accept_ratio: Fewest accepted / judged frames inside a segment.
        floor_seconds: Evidence floor; shorter segments are listed as below floor.
        expand_seconds: Half-width (query seconds) of the local dense expansion.
        max_chance: Largest expected chance count (E-value, :mod:`.evidence`) of a
            segment that is counted; weaker segments are listed as weak evidence.
        list_chance: Weak segments with a larger chance count than this are not listed
            at all (chance explains them: a new recording of the same scene).
        probe: Multi-probe level of the candidate search (0 or 1). 0 by default: one
            seed per segment is enough (lines are verified and extended on the full
            fingerprints) and multi-probing costs ~3x more time per 10x corpus
            (bench/bench_compare.py).
    """

    seed_distance: int = 56
    accept_distance: int = 64
    extend_distance: int = 72
    min_speed: float = 0.2
    max_speed: float = 5.0
    gap_seconds: float = 5.0
    min_frames: int = 3
    min_accept_ratio: float = 0.5
    floor_seconds: float = 10.0
    expand_seconds: float = 6.0
    probe: int = 0
    max_lines: int = 32
    max_chance: float = 0.01
    list_chance: float = 1.0

    def as_dict(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class RawSegment:
    """A verified line segment between one query stream and one corpus stream.

    Times in seconds. ``corpus_start``/``corpus_end`` are the line's values at
    ``query_start``/``query_end`` (so ``corpus_start > corpus_end`` when reversed).
    """

    query_start: float
    query_end: float
    corpus_start: float
    corpus_end: float
    speed: float
    offset: float
    variant_idx: int
    frames: int
    judged: int
    mean_distance: float
    score: float
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: Corpus variant positions the segment was judged on (its variant family).
    family: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #: Expected chance count (E-value) from :mod:`.evidence`; ``None`` before assessment.
    chance: float | None = None
    speed_low: float | None = None
    speed_high: float | None = None
    #: Assessed and not strong enough to be counted (chance above ``MatchParams.max_chance``).
    weak: bool = False
    #: The line verifies but its frames cannot be judged (both sides too still or featureless
    #: to place in time): evidence of neither owned nor new footage ("can't tell").
    unjudged: bool = False
    #: Not evidence of a copy, but the same motion as the query (another owned episode replaying
    #: it): never counted; a counted line on another owned stream must be clearly closer.
    rival: bool = False
    #: Not a line at all: offered frames near-identical to owned frames (within
    #: :data:`~overlap_desktop.core.match.stillmatch.STILL_MATCH_BITS`) that no verified line
    #: explains. Not evidence of a copy, but not shown to be new either ("can't tell").
    near: bool = False
    #: A copy of owned footage that repeats itself (a loop): every frame near-identical to its
    #: owned frame, through many distinct moments, but equally to the owned footage's repeats,
    #: so no chance count is computed (:mod:`.repeating`). Counted: every candidate is owned.
    repeated: bool = False

    @property
    def query_duration(self) -> float:
        return max(0.0, self.query_end - self.query_start)

    @property
    def corpus_duration(self) -> float:
        return abs(self.corpus_end - self.corpus_start)
