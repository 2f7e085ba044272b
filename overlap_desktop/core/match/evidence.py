"""Evidence model: does a verified line show *the same moment*, or only *the same scene*?

A line that verifies (its frames lie within the per-frame threshold) proves little on
footage from a fixed camera: every frame of every episode of one robot rig is 20-50
bits from every other, so almost any line through the (offered time x owned time)
plane "verifies". What tells a copy from a new recording of the same scene is
*contrast*: a copied frame is much closer to its source moment than to the rest of
that recording (a sharp ridge in the distance matrix), while a new episode is about as
close to every moment (a flat plateau).

For one candidate segment this module

1. measures, for each offered frame on the line, the distance ``d`` on the line and a
   **background** ``b``: a low percentile of the distances from that offered frame to
   owned frames well off the line, and from the owned frame on the line to offered
   frames well off the line (both axes, so a "hub" owned frame that is close to
   everything is not mistaken for a match). The frame's **support** is ``b - d``;
   frames whose background is itself tiny (a static or featureless stretch) cannot
   be judged and support nothing either way;
2. **trims** the segment to its maximal-support stretches (a true line that ran on
   into adjacent same-scene footage is cut back to where the evidence is);
3. **calibrates** the total support against *decoy lines* of the same pair of streams
   (the same offered frames, the line shifted elsewhere in the owned stream, or tilted,
   or reversed): the decoys measure what support chance gives in this very scene.
   With the decoys' mean and spread a z-score becomes a tail probability, and
   multiplying it by the number of effectively different lines that were searched
   (slopes x positions across *everything* searched, so a larger library needs
   stronger evidence) gives an **expected chance count** in the spirit of BLAST's
   E-value. Speeds other than 1 and reversal are a priori rarer, so they pay a
   penalty; implausible speeds (below 0.25x or above 4x) pay a much larger one; a line
   of merely alike frames (beyond near-identical) with few distinct moments pays a factor
   of ten for each moment it lacks (a normal tail over four alike poses is not a
   measurement, it is an extrapolation); a line whose frames
   sit far from their matches (a large mean distance: the same scene or a replayed motion,
   not the same recording, is the likelier story) pays one that grows with the distance.
4. reports the **speed with a 95% interval**, from the residuals of the line fit and
   never narrower than one owned sample over the segment's span.

Only segments whose chance count is at most ``MatchParams.max_chance`` are counted;
the others are listed as weak evidence. A verified line whose frames cannot be judged
at all (both recordings too still there) comes back as *unjudged*: evidence of neither
owned nor new footage. A verified line that is not a ridge but whose frames are still
distinctly closer than their background (another owned episode replaying the same motion)
comes back as a *rival*: never counted, but it can show that a counted line has a twin
(core/match/verdicts.py). bench/bench_verdicts.py checks that the figure holds (how many
lines between unrelated or same-rig footage fall under 1e-3, 1e-6, 1e-9 against how many
the figure predicts). docs/architecture.md ("Evidence model") has
the measurements behind the constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from overlap_desktop.core.index.arrays import popcount_xor
from overlap_desktop.core.match.geometry import line_neighbours, profile_speed_interval
from overlap_desktop.core.match.repeating import mark_repeated, repeated_rows
from overlap_desktop.core.match.stillmatch import into_owned_still, still_pieces, unseen_pieces
from overlap_desktop.core.match.student_t import log10_t_sf
from overlap_desktop.core.types import StreamFingerprints

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.match.segments import MatchParams, RawSegment

__all__ = ["EVIDENCE_ID", "Assessment", "Seeds", "assess_segment", "distance_penalty", "few_states_penalty",
           "search_space_lines"]

#: Identifies this evidence model in report settings (change it when the statistic changes).
EVIDENCE_ID = "contrast-decoy-v2"

#: Background starts this far (seconds, on either axis) from the line: closer frames of
#: smooth footage are legitimately similar to the matched one.
EXCLUSION_S = 2.0
#: Frames sampled per axis for the background (deterministic, evenly spaced).
BACKGROUND_FRAMES = 192
#: The background is this low quantile of the off-line distances (the closest few).
BACKGROUND_QUANTILE = 0.05
#: A frame whose background is below this many bits cannot be judged: everything else
#: in the recording looks the same (a pause, a static shot).
JUDGE_MIN_BITS = 10.0
#: Two observations whose offered (or owned) frames are this close are one state.
STATE_BITS = 12
#: A frame is on a *ridge* when its distance on the line is at most this share of its
#: background, or at least :data:`RIDGE_BITS` below it. Copies measured: re-encodes 0.02-0.2, crops on a rung ~0.3,
#: crops between rungs and grades up to ~0.6 of a high background (>= 24 bits below it);
#: a coincidence of similar poses in another episode of the same rig: 0.25-1.1.
RIDGE_RATIO = 0.4
RIDGE_BITS = 24.0
#: Support per frame is clipped to this range so one frame never decides a segment.
SUPPORT_CLIP = (-24.0, 48.0)
#: Decoy lines per segment (calibration of the chance count).
DECOYS = 40
#: Offered frames used for calibration at most (evenly spaced over the segment).
CALIBRATION_ROWS = 96
#: A z-score this high ends the decoy loop early (after 2 * MIN_DECOYS decoys): the chance
#: count is then far below any threshold (about 1e-33 per line tried).
Z_CERTAIN = 12.0
#: Fewest decoys that give a usable spread; with fewer, :data:`NO_DECOY_SD` applies.
MIN_DECOYS = 8
#: Spread per state assumed when the owned stream is too short for decoys (bits).
NO_DECOY_SD = 10.0
#: Per-frame support noise assumed at least (bits), so a very uniform set of decoys
#: cannot make a small excess look certain.
MIN_SUPPORT_SD = 3.0
#: Prior penalties (multiply the chance count): most resold copies play at normal
#: speed; a speed change or a reversal is rarer, an implausible speed much rarer.
ODD_SPEED_PENALTY = 10.0
REVERSED_PENALTY = 10.0
IMPLAUSIBLE_SPEED_PENALTY = 1e4
PLAUSIBLE_SPEEDS = (0.25, 4.0)
#: A line whose mean distance exceeds this many bits pays :data:`DISTANCE_PENALTY_PER_BITS`:
#: re-encoded copies sit 0-10 bits from their source, crops on a rung and grades 10-30;
#: coincidences of similar poses on one rig 30-55 (docs/architecture.md, "Evidence rules").
DISTANCE_FREE_BITS = 32.0
#: ... a factor of 10 for every this many bits beyond :data:`DISTANCE_FREE_BITS`.
DISTANCE_PENALTY_PER_BITS = 5.0
#: A line whose mean distance is at most this many bits holds near-identical frames (re-encodes
#: and grades of one recording: 0-10 bits); beyond it, frames are merely alike (see :func:`_log10_tail`).
CLOSE_BITS = 16.0
#: A line of merely alike frames with fewer distinct moments (states) than this pays a factor
#: of 10 per missing one.
FEW_STATES = 8
#: A non-ridge line whose judged frames are on average this many bits closer than their
#: background is a *rival* (the same motion in another owned episode).
RIVAL_SUPPORT_BITS = 8.0
#: Smallest chance count written. Far below anything a person needs to read (words say
#: "less than 1 in 10^15" below 1e-15), kept so strong evidence still ranks.
MIN_CHANCE = 1e-300


@dataclass(frozen=True, slots=True)
class Seeds:
    """Close frame pairs the search found for one stream pair: offered row, owned row, distance."""

    q: np.ndarray
    c: np.ndarray
    d: np.ndarray


@dataclass(frozen=True, slots=True)
class Assessment:
    """Evidence for one trimmed piece of a segment.

    Attributes:
        rows: Offered frame positions of the piece (judged or not), in time order.
        support: Per-row support (bits; 0 for frames that cannot be judged).
        judged: Per-row: could the frame be judged.
        chance: Expected chance count (E-value) of a line this strong.
        z: Standard score of the piece's support against the decoys.
        speed_low, speed_high: 95% interval of the speed.
    """

    rows: np.ndarray
    support: np.ndarray
    judged: np.ndarray
    chance: float
    z: float
    speed_low: float
    speed_high: float


def search_space_lines(span_s: float, speed: float, searched_seconds: float, params: MatchParams) -> float:
    """Number of effectively different lines a segment competed with.

    Two lines are "different" when they part by more than the exclusion window over
    the segment: positions every ``EXCLUSION_S`` of everything searched, slopes
    every ``EXCLUSION_S / (|speed| * span)`` in log-speed over the searched range,
    both directions.
    """
    w = EXCLUSION_S
    log_range = math.log(params.max_speed / params.min_speed)
    slopes = 2.0 * log_range * max(1.0, abs(speed) * max(span_s, 0.0) / w)
    positions = max(1.0, searched_seconds / w)
    return slopes * positions


def _even(idx: np.ndarray, k: int) -> np.ndarray:
    if idx.size <= k:
        return idx
    return idx[np.linspace(0, idx.size - 1, k).round().astype(np.int64)]


def _low_quantile(d: np.ndarray, valid: np.ndarray, q: float) -> np.ndarray:
    """Per row, the ``q`` quantile of ``d`` over ``valid`` entries (inf where none).

    Invalid entries become +inf, so the k-th smallest of a row is the k-th smallest valid
    one; a partition at the largest k needed, then a sort of that short head, gives it.
    """
    dd = np.where(valid, d.astype(float), np.inf)
    n = valid.sum(axis=1)
    k = np.clip(np.floor(q * np.maximum(n - 1, 0)).astype(np.int64), 0, dd.shape[1] - 1)
    if dd.size == 0:
        return np.full(d.shape[0], np.inf)
    kmax = int(k.max())
    head = np.partition(dd, kmax, axis=1)[:, : kmax + 1] if kmax + 1 < dd.shape[1] else dd
    head.sort(axis=1)
    out = np.take_along_axis(head, k[:, None], axis=1)[:, 0]
    out[n == 0] = np.inf
    return out


class _Pair:
    """Background measurements of one (offered stream, owned stream) pair."""

    def __init__(self, query: StreamFingerprints, corpus: StreamFingerprints, fam: np.ndarray,
                 exclude_identity: bool, seeds: Seeds | None = None) -> None:
        self.query = query
        self.corpus = corpus
        self.fam = fam
        self.identity = exclude_identity
        self.qt = query.times_ns / 1e9
        self.ct = corpus.times_ns / 1e9
        self.c_end = corpus.duration_s if corpus.duration_s > 0 else (float(self.ct[-1]) if self.ct.size else 0.0)
        cs = _even(np.flatnonzero(corpus.usable), BACKGROUND_FRAMES)
        qs = _even(np.flatnonzero(query.usable), BACKGROUND_FRAMES)
        self.c_sample, self.q_sample = cs, qs
        self.c_sample_codes = corpus.codes[cs][:, fam]  # (Kc, F, 32)
        self.q_sample_codes = query.codes[qs, 0]  # (Kq, 32)
        # Distances to the background samples, computed once per offered row and per
        # (owned row, variant): decoys and trimming revisit the same frames many times.
        self._row_d: dict[int, np.ndarray] = {}
        self._col_d: dict[int, np.ndarray] = {}
        # The search's own close pairs of this stream pair, by offered row and by owned row:
        # where a frame has a much better match *elsewhere* (the true place of a copy that
        # a tilted "ghost" line only crosses), a sampled background can miss it.
        self.seeds = seeds if seeds is not None and len(seeds.q) else None
        if self.seeds is not None:
            sq = self.seeds
            self._by_q = np.argsort(sq.q, kind="stable")
            self._by_c = np.argsort(sq.c, kind="stable")
            self._q_sorted = sq.q[self._by_q]
            self._c_sorted = sq.c[self._by_c]

    def _seed_min(self, keys: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray,
                  other_t: np.ndarray, centre: np.ndarray, excl: float) -> np.ndarray:
        """Per key: the smallest seed distance among seeds of that row whose other-axis
        time lies more than ``excl`` from ``centre`` (inf where none)."""
        assert self.seeds is not None
        lo = np.searchsorted(sorted_keys, keys, side="left")
        hi = np.searchsorted(sorted_keys, keys, side="right")
        n = hi - lo
        out = np.full(keys.size, np.inf)
        total = int(n.sum())
        if total == 0:
            return out
        owner = np.repeat(np.arange(keys.size), n)
        pos = np.arange(total) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
        idx = order[pos]
        far = np.abs(other_t[idx] - centre[owner]) > excl
        np.minimum.at(out, owner[far], self.seeds.d[idx[far]].astype(float))
        return out

    def _rows_background(self, rows: np.ndarray) -> np.ndarray:
        """``(n, Kc)`` distances from offered rows to the owned sample (best variant)."""
        todo = np.asarray([r for r in dict.fromkeys(rows.tolist()) if r not in self._row_d], np.int64)
        if todo.size:
            qc = self.query.codes[todo, 0]
            dr = popcount_xor(qc[:, None, None, :], self.c_sample_codes[None, :, :, :]).min(axis=-1)
            self._row_d.update(zip(todo.tolist(), dr.astype(np.int16)))
        return np.stack([self._row_d[r] for r in rows.tolist()]) if rows.size else np.zeros((0, 0), np.int16)

    def _cols_background(self, c_rows: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(n, Kq)`` distances from owned frames (row, variant) to the offered sample."""
        keys = (c_rows * self.corpus.codes.shape[1] + v).tolist()
        todo = [k for k in dict.fromkeys(keys) if k not in self._col_d]
        if todo:
            t = np.asarray(todo, np.int64)
            w = self.corpus.codes.shape[1]
            cc = self.corpus.codes[t // w, t % w]
            dc = popcount_xor(cc[:, None, :], self.q_sample_codes[None, :, :])
            self._col_d.update(zip(todo, dc.astype(np.int16)))
        return np.stack([self._col_d[k] for k in keys]) if keys else np.zeros((0, 0), np.int16)

    def line(self, rows: np.ndarray, slope: float, offset: float) -> tuple[np.ndarray, ...]:
        """Distance on the line, the owned frame and variant used, and the background."""
        qt = self.qt[rows]
        pred = slope * qt + offset
        dist, crow = line_neighbours(self.query, self.corpus, rows, slope, offset, self.fam)
        best_v = dist.argmin(axis=1)
        d = dist[np.arange(rows.size), best_v]
        c_at = crow[np.arange(rows.size), best_v]
        # Row background: this offered frame against owned frames off the line.
        dr = self._rows_background(rows)
        cst = self.ct[self.c_sample]
        far = np.abs(cst[None, :] - pred[:, None]) > EXCLUSION_S * max(1.0, abs(slope))
        if self.identity:
            far &= np.abs(cst[None, :] - qt[:, None]) > EXCLUSION_S
        row_bg = _low_quantile(dr, far, BACKGROUND_QUANTILE)
        # Column background: the owned frame on the line against offered frames off the line.
        c_row = np.clip(c_at, 0, len(self.corpus) - 1)
        cc = self.corpus.codes[c_row, self.fam[best_v]]
        dc = self._cols_background(c_row, self.fam[best_v])
        qst = self.qt[self.q_sample]
        # A slowed copy shows one owned moment for 1/|slope| offered seconds: exclude that much.
        excl_q = EXCLUSION_S * max(1.0, 1.0 / max(abs(slope), 1e-6))
        farq = np.abs(qst[None, :] - qt[:, None]) > excl_q
        if self.identity:
            farq &= np.abs(qst[None, :] - self.ct[np.clip(c_at, 0, len(self.corpus) - 1)][:, None]) > EXCLUSION_S
        col_bg = _low_quantile(dc, farq, BACKGROUND_QUANTILE)
        bg = np.minimum(row_bg, col_bg)
        if self.seeds is not None:
            # A frame whose best match *elsewhere* (among the search's seeds, off this line on
            # either axis) is closer than its match on the line belongs elsewhere: its
            # "background" is that match, so its support is negative. Only a better match
            # counts: on a fixed camera every frame has many merely similar ones.
            elsewhere = np.minimum(
                self._seed_min(rows, self._q_sorted, self._by_q, self.ct[self.seeds.c], pred,
                               EXCLUSION_S * max(1.0, abs(slope))),
                self._seed_min(c_row, self._c_sorted, self._by_c, self.qt[self.seeds.q], qt, excl_q))
            bg = np.where(elsewhere < d, elsewhere, bg)
        ok = (d < 256) & np.isfinite(bg)
        return d, bg, ok, c_at, cc

    def support(self, rows: np.ndarray, slope: float, offset: float) -> tuple[np.ndarray, np.ndarray]:
        """Per-row support (bits) and whether the row could be judged."""
        d, bg, ok, _, _ = self.line(rows, slope, offset)
        judged = ok & (bg >= JUDGE_MIN_BITS)
        return np.where(judged, np.clip(bg - d, *SUPPORT_CLIP), 0.0), judged

    def state_support(self, rows: np.ndarray, slope: float, offset: float) -> tuple[float, int, int]:
        """Total support over distinct *states* along the line, how many were judged, and
        how many of those are *ridge* states.

        Consecutive observations whose offered frames look alike (a pause in the offered
        footage) or whose owned frames look alike (a pause in the owned footage) are one
        observation: a paused arm that happens to stand where another episode's arm once
        stood is one coincidence, however many samples the pause lasts and whatever
        slope the line takes through it. Each state counts with the mean support of its
        judged frames. A state is a *ridge* when most of its frames are distinctly closer
        to each other than to anything else in their recordings (:data:`RIDGE_RATIO`,
        :data:`RIDGE_BITS`): the signature of one moment, where a partial coincidence of
        poses only comes near the background.
        """
        d, bg, ok, _, cc = self.line(rows, slope, offset)
        judged = ok & (bg >= JUDGE_MIN_BITS)
        s = np.where(judged, np.clip(bg - d, *SUPPORT_CLIP), 0.0)
        ridge_f = judged & ((d <= RIDGE_RATIO * bg) | (bg - d >= RIDGE_BITS))
        qc = self.query.codes[rows, 0]
        # Pairwise distances once (n <= CALIBRATION_ROWS), then a plain loop over them.
        q_far = (popcount_xor(qc[:, None, :], qc[None, :, :]) > STATE_BITS).tolist()
        c_far = (popcount_xor(cc[:, None, :], cc[None, :, :]) > STATE_BITS).tolist()
        s_l, j_l, r_l = s.tolist(), judged.tolist(), ridge_f.tolist()
        total, n, ridge = 0.0, 0, 0
        k0 = 0
        acc, cnt, rcnt = 0.0, 0, 0
        for k in range(rows.size + 1):
            new = k == rows.size or (q_far[k][k0] and c_far[k][k0])
            if new:
                if cnt:
                    total += acc / cnt
                    n += 1
                    ridge += int(2 * rcnt >= cnt)
                if k == rows.size:
                    break
                k0, acc, cnt, rcnt = k, 0.0, 0, 0
            if j_l[k]:
                acc += s_l[k]
                cnt += 1
                rcnt += int(r_l[k])
        return total, n, ridge


def _max_pieces(s: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """Disjoint maximal-sum stretches ``[i, j]`` of ``s`` with a positive sum."""
    out: list[tuple[int, int]] = []
    stack = [(0, s.size)]
    while stack:
        a, b = stack.pop()
        if b - a <= 0:
            continue
        best, best_i, best_j = 0.0, -1, -1
        run, start = 0.0, a
        for k in range(a, b):
            if run <= 0:
                run, start = 0.0, k
            run += float(s[k])
            if run > best:
                best, best_i, best_j = run, start, k
        if best_i < 0:
            continue
        if best_j - best_i + 1 >= min_len:
            out.append((best_i, best_j))
        stack.append((a, best_i))
        stack.append((best_j + 1, b))
    return sorted(out)


def _speed_interval(q: np.ndarray, c: np.ndarray, slope: float, offset: float,
                    corpus_fps: float) -> tuple[float, float]:
    """95% interval of the slope: residual-based, at least one owned sample over the span."""
    span = float(q.max() - q.min()) if q.size else 0.0
    if span <= 0:
        return slope - abs(slope), slope + abs(slope)
    resid = c - (slope * q + offset)
    n = q.size
    sxx = float(((q - q.mean()) ** 2).sum())
    se = math.sqrt(float((resid ** 2).sum()) / max(n - 2, 1) / sxx) if n > 2 and sxx > 0 else abs(slope)
    floor = (1.0 / max(corpus_fps, 1e-6)) / span
    half = max(1.96 * se, floor)
    return slope - half, slope + half


def _decoy_lines(slope: float, offset: float, rows_t: np.ndarray, c_end: float,
                 rng: np.random.Generator) -> list[tuple[float, float]]:
    """Lines elsewhere in the owned stream: shifted, tilted or reversed, none near the real one."""
    out: list[tuple[float, float]] = []
    qm = float(rows_t.mean())
    cm = slope * qm + offset
    attempts = 0
    while len(out) < DECOYS and attempts < DECOYS * 20:
        attempts += 1
        kind = attempts % 4
        s = slope * (1.0 if kind < 2 else float(rng.choice([0.7, 1.4]))) * (-1.0 if kind == 3 else 1.0)
        centre = float(rng.uniform(0.0, max(c_end, 1e-3)))
        if kind < 3 and abs(centre - cm) < 2.0 * EXCLUSION_S * max(1.0, abs(slope)):
            continue
        o = centre - s * qm
        pred = s * rows_t + o
        if np.mean((pred >= 0) & (pred <= c_end)) < 0.6:
            continue
        out.append((s, o))
    return out


def _calibrate(pair: _Pair, cal: np.ndarray, slope: float, offset: float, obs: float, n_states: int,
               rng: np.random.Generator) -> tuple[float, float, int]:
    """Mean and spread of the support chance gives along decoy lines of this pair.

    With fewer than :data:`MIN_DECOYS` (an owned stream too short to place decoys
    elsewhere) chance is assumed to give no support on average but a wide spread (a
    typical state's support), so only much stronger evidence counts.

    Returns:
        ``(mean, spread, decoys measured)``.
    """
    qt = pair.qt[cal]
    decoys: list[float] = []
    mu, sd = 0.0, NO_DECOY_SD * math.sqrt(n_states)
    for ds, do in _decoy_lines(slope, offset, qt, pair.c_end, rng):
        dpred = ds * qt + do
        keep = cal[(dpred >= 0) & (dpred <= pair.c_end)]
        if keep.size < 2:
            continue
        dsum, _, _ = pair.state_support(keep, ds, do)
        decoys.append(dsum * cal.size / keep.size)
        if len(decoys) >= MIN_DECOYS:
            mu = float(np.mean(decoys))
            sd = max(float(np.std(decoys, ddof=1)), MIN_SUPPORT_SD * math.sqrt(n_states))
            # Far beyond any threshold already: more decoys would not change the verdict.
            if len(decoys) >= 2 * MIN_DECOYS and (obs - mu) / sd >= Z_CERTAIN:
                break
    return mu, sd, len(decoys)


def _log10_tail(z: float, n_states: int, mean_distance: float, odd_speed: bool) -> float:
    """log10 of the upper tail at ``z``: normal, or Student's t with ``n_states - 1`` degrees of
    freedom for a line of merely alike frames at an odd speed.

    Near-identical frames (within :data:`CLOSE_BITS`) at well-separated moments are rare by
    chance, state by state. Frames that are only alike (similar poses of one rig, 18-55 bits)
    coincide in runs, and a line at another speed or reversed can thread such runs: there the
    decoys' normal spread badly underrates how far a few states reach (measured: a 5-state line
    at 0.4x and 18 bits between two episodes of one rig read 3e-47 under the normal tail). The
    normal tail is computed in log space for large ``z``, so strong lines keep their rank.
    """
    if odd_speed and mean_distance > CLOSE_BITS:
        return log10_t_sf(z, max(1, n_states - 1))
    if z < 30.0:
        return math.log10(max(0.5 * math.erfc(z / math.sqrt(2.0)), 1e-300))
    # Mills ratio: sf(z) ~ phi(z) / z for large z.
    return float((-0.5 * z * z - math.log(z * math.sqrt(2.0 * math.pi))) / math.log(10.0))


def few_states_penalty(n_states: int, mean_distance: float) -> float:
    """How much less a line of ``n_states`` distinct moments proves than the normal tail says (>= 1).

    Only for merely alike frames (beyond :data:`CLOSE_BITS`): four near-identical moments of a
    4 s copy are four rare events, four alike poses of one rig are one run of coincidences.
    """
    if mean_distance <= CLOSE_BITS:
        return 1.0
    return float(10.0 ** max(0, FEW_STATES - n_states))


def distance_penalty(mean_distance: float) -> float:
    """How much likelier a coincidence than a copy is, a priori, at this mean distance (>= 1)."""
    return float(10.0 ** max(0.0, (mean_distance - DISTANCE_FREE_BITS) / DISTANCE_PENALTY_PER_BITS))


def _prior_penalty(slope: float, lo: float, hi: float) -> float:
    """How much rarer than a normal-speed copy this line's speed is, a priori."""
    penalty = 1.0
    a_lo, a_hi = sorted((abs(lo), abs(hi)))
    if slope < 0:
        penalty *= REVERSED_PENALTY
    if not a_lo <= 1.0 <= a_hi:
        penalty *= ODD_SPEED_PENALTY
    if not PLAUSIBLE_SPEEDS[0] <= abs(slope) <= PLAUSIBLE_SPEEDS[1]:
        penalty *= IMPLAUSIBLE_SPEED_PENALTY
    return penalty


def _piece(pair: _Pair, seg: RawSegment, pr: np.ndarray, pj: np.ndarray, z: float,
           params: MatchParams) -> RawSegment:
    """The segment cut to the piece's rows: span (half a sample around its first and last
    frame, stream edges kept), owned span on the line, frames and mean distance."""
    query = pair.query
    slope, offset = seg.speed, seg.offset
    q_step = 1.0 / query.fps if query.fps > 0 else 1.0
    t0, t1 = float(pair.qt[pr[0]]), float(pair.qt[pr[-1]])
    first, last = int(pr[0]), int(pr[-1])
    q0 = max(seg.query_start, 0.0 if first == 0 else t0 - 0.5 * q_step)
    q1 = min(seg.query_end, (query.duration_s if last == len(query) - 1 and query.duration_s > 0
                             else t1 + 0.5 * q_step))
    c0 = float(np.clip(slope * q0 + offset, 0.0, pair.c_end))
    c1 = float(np.clip(slope * q1 + offset, 0.0, pair.c_end))
    d = pair.line(pr[pj], slope, offset)[0].astype(float)
    acc = d <= max(params.accept_distance, params.extend_distance)
    mean_d = float(d[acc].mean()) if acc.any() else float(d.mean())
    pairs = seg.pairs
    if pairs is not None and pairs.size:
        pairs = pairs[(pairs[:, 0] >= q0 - 1e-6) & (pairs[:, 0] <= q1 + 1e-6)]
    return replace(seg, query_start=q0, query_end=q1, corpus_start=c0, corpus_end=c1, frames=int(acc.sum()),
                   judged=int(pr.size), mean_distance=mean_d, pairs=pairs,
                   score=round(float(min(1.0, max(0.0, z / 10.0))), 4))


def assess_segment(query: StreamFingerprints, corpus: StreamFingerprints, seg: RawSegment,
                   fam: np.ndarray, params: MatchParams, *, searched_seconds: float,
                   exclude_identity: bool = False, seeds: Seeds | None = None,
                   ) -> list[tuple[RawSegment, Assessment]]:
    """Trim a verified segment to its evidence and give each piece a chance count.

    Args:
        query: Offered stream (identity codes).
        corpus: Owned stream (all variants).
        seg: The verified segment (its line and span).
        fam: Owned variant positions the segment was judged on.
        params: Matcher thresholds (``min_frames``, ``max_chance``, speed range).
        searched_seconds: Seconds of footage the offered stream was searched against
            (the whole library), for the number of lines that competed.
        exclude_identity: The pair is a stream against itself: leave the trivial
            diagonal out of the background too.
        seeds: The search's close pairs for this stream pair; a frame with a better
            match elsewhere (off this line) then has that as its background.

    Returns:
        ``(piece, assessment)`` for every stretch with positive support that is a
        ridge (see :meth:`_Pair.state_support`); a piece with
        ``assessment.chance > params.max_chance`` is weak evidence.
    """
    slope, offset = seg.speed, seg.offset
    pair = _Pair(query, corpus, np.asarray(fam, np.int64), exclude_identity, seeds)
    pred = slope * pair.qt + offset
    inside = (pair.qt >= seg.query_start - 1e-6) & (pair.qt <= seg.query_end + 1e-6)
    inside &= (pred >= -0.5) & (pred <= pair.c_end + 0.5) & query.usable
    rows = np.flatnonzero(inside)
    if rows.size == 0:
        return []
    s, judged = pair.support(rows, slope, offset)
    out: list[tuple[RawSegment, Assessment]] = []
    rng = np.random.default_rng(len(query) * 1_000_003 + len(corpus))
    for a, b in _max_pieces(s, params.min_frames):
        pr, ps, pj = rows[a:b + 1], s[a:b + 1], judged[a:b + 1]
        if int(pj.sum()) < params.min_frames:
            continue
        cal = _even(pr, CALIBRATION_ROWS)
        obs, n_states, n_ridge = pair.state_support(cal, slope, offset)
        if n_states < params.min_frames or n_ridge < params.min_frames or 2 * n_ridge < n_states:
            # Too few distinct moments, or close along the line but not distinctly closer than
            # to the rest of the two recordings on most of it: the same scene, not the same moment.
            continue
        mu, sd, _ = _calibrate(pair, cal, slope, offset, obs, n_states, rng)
        z = (obs - mu) / sd
        lines = search_space_lines(float(pair.qt[pr[-1]] - pair.qt[pr[0]]), slope, searched_seconds, params)
        c_at = pair.line(pr[pj], slope, offset)[3]
        lo, hi = _speed_interval(pair.qt[pr[pj]], pair.ct[np.clip(c_at, 0, len(corpus) - 1)],
                                 slope, offset, corpus.fps)
        piece = _piece(pair, seg, pr, pj, z, params)
        penalty = _prior_penalty(slope, lo, hi)
        log_chance = (_log10_tail(z, n_states, piece.mean_distance, penalty > 1.0) + math.log10(lines)
                      + math.log10(penalty) + math.log10(few_states_penalty(n_states, piece.mean_distance))
                      + math.log10(distance_penalty(piece.mean_distance)))
        chance = float(10.0 ** min(12.0, max(math.log10(MIN_CHANCE), log_chance)))
        # The speed reported (and "slowed"/"sped up") spans every speed the frames fit as well.
        p_lo, p_hi = profile_speed_interval(query, corpus, pr[pj], slope, offset, pair.fam, params.accept_distance)
        out.append((piece, Assessment(pr, ps, pj, chance, z, min(lo, p_lo), max(hi, p_hi))))
    rep = repeated_rows(pair, query.codes, seg, rows, STATE_BITS, CLOSE_BITS, EXCLUSION_S) if not out else rows[:0]
    if rep.size:  # owned footage that repeats itself: a copy, whichever repetition it is
        every = np.ones(rep.size, bool)
        lo, hi = profile_speed_interval(query, corpus, rep, seg.speed, seg.offset, pair.fam, params.accept_distance)
        piece = replace(mark_repeated(_piece(pair, seg, rep, every, 0.0, params)), speed_low=lo, speed_high=hi)
        out.append((piece, Assessment(rep, np.zeros(rep.size), every, 0.0, 0.0, lo, hi)))
    # Near-identical frames no listed piece holds (too still, too few, chance explains it): "can't tell".
    spans = [(p.query_start, p.query_end) for p, a in out if a.chance <= params.list_chance]
    unseen = unseen_pieces(query, corpus, seg, params.accept_distance)
    for still in still_pieces(query, corpus, seg, rows, spans) + into_owned_still(query, corpus, seg) + unseen:
        idle = np.zeros(0, np.int64)
        out.append((still, Assessment(idle, np.zeros(0), np.zeros(0, bool), math.inf, 0.0, seg.speed, seg.speed)))
    if (not any(not p.unjudged for p, _ in out) and int(judged.sum()) >= params.min_frames
            and float(s[judged].mean()) >= RIVAL_SUPPORT_BITS):
        # Not one moment, yet distinctly the same motion: a twin a counted line must beat (also
        # when a few of its frames are near-identical "can't tell" pieces, as a twin's can be).
        out.append((replace(seg, rival=True, weak=True, score=0.0),
                    Assessment(rows, s, judged, math.inf, 0.0, seg.speed, seg.speed)))
    return out
