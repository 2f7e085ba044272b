"""Copies of owned footage that repeats itself: a loop, a test pattern, a turntable.

The evidence model (:mod:`.evidence`) asks whether an offered frame is closer to the owned
frame on its line than to the rest of the owned recording. In a loop every owned moment comes
back: the frame is as close to its repeats as to the frame on the line, its background is tiny,
and it "cannot be judged", like a still shot. So 80 byte-identical pieces of an owned looping
test pattern read "can't tell" or, where the search found no seed, "new".

Which repetition was copied cannot be told, but each candidate is owned footage: the stretch
is owned either way. The rule here: a verified line the ordinary evidence does not count, whose
frames are each near-identical to the owned frames on it (within 16 bits, and on average within
:data:`REPEAT_BITS`, as close as one footage held twice) through at least :data:`REPEAT_STATES`
distinct moments on both sides (it moves; a still shot is one moment), and at least half of whose
owned frames the owned stream shows again elsewhere (within :data:`REPEAT_BITS`), is a copy of
owned footage. It is counted without a chance count (none can be computed: the decoys land on
the repeats), and the report says which moment is ambiguous. The same loop re-recorded with one
or two more moving discs sits 18-23 bits from the owned frames and is not counted; a new
recording of another episode of a scripted motion sits 9.5 bits and more from its owned twins
(docs/architecture.md, "Several owned episodes"), and the rule of several owned episodes still
applies to lines to several owned streams.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.types import StreamFingerprints

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.match.segments import RawSegment

__all__ = ["REPEAT_BITS", "REPEAT_STATES", "distinct_states", "mark_repeated", "repeat_weights", "repeated_rows"]

#: Largest mean distance of a copy of repeating owned footage (the distance under which two
#: owned files are one footage held twice, core/match/verdicts.py; re-encodes sit 0-6 bits).
REPEAT_BITS = 8.0
#: Fewest distinct moments (offered and owned) such a copy passes through: a still shot, or a
#: resting pose, is one moment.
REPEAT_STATES = 8


class _Line(Protocol):
    corpus: StreamFingerprints
    ct: np.ndarray

    def line(self, rows: np.ndarray, slope: float, offset: float) -> tuple[np.ndarray, ...]: ...


def distinct_states(codes: np.ndarray, bits: int) -> int:
    """How many distinct moments a sequence of codes passes through: a new one begins where a
    code is more than ``bits`` from the first code of the current one."""
    if codes.shape[0] == 0:
        return 0
    n, first = 1, 0
    for k in range(1, codes.shape[0]):
        if int(popcount_xor(codes[k], codes[first])) > bits:
            n, first = n + 1, k
    return n


def repeated_rows(pair: _Line, query_codes: np.ndarray, seg: RawSegment, rows: np.ndarray,
                  state_bits: int, close_bits: float, exclusion_s: float) -> np.ndarray:
    """The longest run of consecutive offered ``rows`` on the segment's line that is a copy of
    repeating owned footage (see the module docstring), or an empty array.

    Args:
        pair: The evidence model's measurements of the stream pair (its ``line``, ``corpus``
            and ``ct``: owned fingerprints and seconds).
        query_codes: The offered stream's codes (all rows, all variants).
        seg: The verified segment.
        rows: Its offered rows (usable, inside the owned stream on the line), in time order.
        state_bits: Codes this close are one moment.
        close_bits: Every frame of the run at most this far from its owned frame (near-identical);
            on average at most :data:`REPEAT_BITS`.
        exclusion_s: Owned frames this far from the line (times the speed) are elsewhere.
    """
    if rows.size < REPEAT_STATES:
        return np.zeros(0, np.int64)
    d, _, ok, c_at, cc = pair.line(rows, seg.speed, seg.offset)
    close = ok & (d <= close_bits)
    edges = np.flatnonzero(np.diff(np.r_[0, close.astype(np.int8), 0]))
    runs = sorted(zip(edges[::2].tolist(), edges[1::2].tolist()), key=lambda r: r[0] - r[1])
    for a, b in runs:
        if b - a < REPEAT_STATES:
            break
        if float(d[a:b].mean()) > REPEAT_BITS:
            continue
        if (distinct_states(query_codes[rows[a:b], 0], state_bits) < REPEAT_STATES
                or distinct_states(cc[a:b], state_bits) < REPEAT_STATES):
            continue
        if _repeats_elsewhere(pair, cc[a:b], c_at[a:b], exclusion_s * max(1.0, abs(seg.speed))) >= _REPEAT_SHARE:
            return rows[a:b]
    return np.zeros(0, np.int64)


#: Share of a run's owned frames that must come back elsewhere in the owned stream.
_REPEAT_SHARE = 0.5
#: Owned frames compared for repeats at most (evenly spaced over the run).
_REPEAT_SAMPLE = 48


def _repeats_elsewhere(pair: _Line, codes: np.ndarray, c_rows: np.ndarray, exclusion_s: float) -> float:
    """Share of the owned frames on a line (``codes`` at owned rows ``c_rows``) that the owned
    stream shows again, within :data:`REPEAT_BITS`, more than ``exclusion_s`` away."""
    corpus, ct = pair.corpus, pair.ct
    pick = np.linspace(0, codes.shape[0] - 1, min(codes.shape[0], _REPEAT_SAMPLE)).round().astype(np.int64)
    owned = corpus.codes[:, 0]
    hits = 0
    for k in pick.tolist():
        t = ct[int(np.clip(c_rows[k], 0, ct.size - 1))]
        far = np.abs(ct - t) > exclusion_s
        if far.any() and int(popcount_xor(codes[k][None, :], owned[far]).min()) <= REPEAT_BITS:
            hits += 1
    return hits / max(1, pick.size)


def mark_repeated(piece: RawSegment) -> RawSegment:
    """The piece as a counted copy of repeating owned footage (no chance count)."""
    return replace(piece, repeated=True, weak=False, unjudged=False, rival=False, chance=None, score=0.0)


#: An offered frame's matches more than this many owned seconds apart are in separate places.
_PLACE_GAP_S = 1.0
#: Fewest offered frames whose matches fall in several places for the votes to be redrawn.
_REPEAT_FRAMES = 3


def repeat_weights(q: np.ndarray, c: np.ndarray) -> np.ndarray | None:
    """Votes for lines through owned footage that repeats itself.

    Lines are voted with one vote per offered frame, shared among its matches
    (:func:`~.lines.find_lines`), so a still shot matching a whole stretch of owned time cannot
    outvote a real line. In a loop, an offered frame matches every repetition: its vote is split
    among them and no line gets the three votes it needs. Here an offered frame whose matches
    fall in several separate places of the owned stream, each at most :data:`_PLACE_GAP_S` long
    (a repetition, not a still stretch), gives each place a whole vote; other frames keep their
    shared vote. ``None`` when fewer than :data:`_REPEAT_FRAMES` frames repeat so.

    Args:
        q, c: The points' offered and owned seconds.
    """
    if q.size == 0:
        return None
    qk = np.round(np.asarray(q, float), 3)
    order = np.lexsort((c, qk))
    qo, co = qk[order], np.asarray(c, float)[order]
    starts = np.flatnonzero(np.r_[True, qo[1:] != qo[:-1]])
    ends = np.r_[starts[1:], qo.size]
    w = np.zeros(q.size)
    repeating = 0
    for a, b in zip(starts.tolist(), ends.tolist()):
        cuts = np.flatnonzero(np.diff(co[a:b]) > _PLACE_GAP_S) + 1
        places = np.split(np.arange(a, b), cuts)
        if len(places) >= 2 and all(co[pl[-1]] - co[pl[0]] <= _PLACE_GAP_S for pl in places):
            repeating += 1
            for pl in places:
                w[order[pl]] = 1.0 / pl.size
        else:
            w[order[a:b]] = 1.0 / (b - a)
    return w if repeating >= _REPEAT_FRAMES else None
