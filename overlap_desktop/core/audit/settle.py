"""Settling "can't tell" with the pixels of both sides, once the footage is delivered.

A pixel-free quote leaves some stretches open: the same arm motion as several owned episodes,
near-identical near-static frames, crops past the ladder, short pieces. At delivery the buyer
holds the offered frames and its own library's, so each open stretch is checked along its
matched line (offered ``t`` -> owned ``owned_start + (t - start) * speed``) on aligned samples:

* the **static background** (per-pixel median over the samples, so a moving arm drops out, on
  the 64x64 image, the owned colours fitted onto the offer's luma): scripted repeats with an
  object moved a few centimetres differ there in a few dozen cells, true copies in at most a
  few (bench/RESULTS.md, "What grid near twins need", measured 32x32 as the least that sees
  every twin; :data:`DIFFER_CELLS`); enough cells past :data:`DIFFER_LEVEL` settle the stretch
  **new**;
* the **motion along the line**: where either side moves, do the two sides agree? A stretch
  is settled **owned** only when the background agrees, something moves, and the offer
  follows the owned motion place by place. Frames where nothing moves cannot tell one moment
  of a view from another, so those stay "can't tell", as does a stretch whose background
  agrees while its motion does not (another moment of the same view, or a line drawn
  through near-identical frames).

A library file is never read when it changed since it was indexed (its SHA-256 is checked
first); that stretch stays "can't tell" and says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from overlap_desktop.core.audit.settle_frames import frames_at, library_problem
from overlap_desktop.core.audit.settle_maps import LineMeasures, luma_of, measure_line
from overlap_desktop.core.types import CancelCallback, Progress, Segment, Variant, check_cancel
from overlap_desktop.errors import MediaError

__all__ = [
    "AGREE_SHARE",
    "DIFFER_CELLS",
    "DIFFER_LEVEL",
    "MIN_MOVING",
    "MIN_SAMPLES",
    "OpenStretch",
    "Settlement",
    "Verdict",
    "decide",
    "sample_times",
    "settle_offered",
    "settle_stretches",
    "stretch_from_segment",
]

Verdict = Literal["owned", "new", "cant_tell"]

#: A background cell differing by this many levels (after the colour fit) differs.
DIFFER_LEVEL = 14.0
#: Background cells (of 64x64) that must differ before the stretch is new: a few alone may be a
#: grade's clipped highlights, a logo or a speck. Measured (bench/bench_settle.py pairs, tuning
#: set): true copies 0-3 such cells (a brightness/contrast/gamma grade of the generated rig),
#: scripted twins with one object moved a few centimetres 11-19, objects elsewhere 45-55.
DIFFER_CELLS = 6
#: Of those, how many (and what share) must lie where not both sides hold an edge. Measured
#: (bench/bench_settle.py pairs and crops): copies cut by 0.5-1% and scaled back up differ in 20-102
#: cells, every one on an edge both sides share (0 unexplained); cut by 2%, 4-7 of 53-131 (3-11%);
#: scripted twins 3-27 of 11-54 (16-91%). A match on a crop rung is never settled new (the cut is
#: known only to the rung: 0-215 unexplained cells measured on true copies).
UNEXPLAINED_CELLS, UNEXPLAINED_SHARE = 3, 0.2
#: Aligned samples a stretch needs at least (fewer: too short to settle).
MIN_SAMPLES = 6
#: Share of (sample, cell) places that must move for the pixels to tell one moment from another.
MIN_MOVING = 0.01
#: Share of the moving places where both sides must agree for the stretch to be owned.
AGREE_SHARE = 0.85
#: Samples per second of offered stretch, and the bounds on their count.
SAMPLES_PER_S, SAMPLES_MIN, SAMPLES_MAX = 4.0, 8, 48
#: Stretches whose frames are held at once (each sample 12 KB a side, the owned side once per shift).
BATCH = 8
#: Shifts of the line tried on the owned side (seconds): a matched line's offset is known to about
#: a sample of the index's grid, and one frame off puts every moving edge out of place.
SHIFTS = np.round(np.arange(-6, 7) * 0.05, 3)


@dataclass(frozen=True, slots=True)
class OpenStretch:
    """A stretch the quote or the re-screen left "can't tell", with its matched line.

    Attributes:
        offered_stream: Stream key in the delivered file.
        offered_start_s: Start of the stretch in the delivered stream (seconds).
        offered_end_s: Its end.
        owned_path: The library file, as the index records it.
        owned_stream: Stream key in the library file.
        owned_sha256: Digest the index recorded (``None``: nothing is read).
        owned_start_s: Owned time at ``offered_start_s``.
        speed: Slope of the line (owned seconds per offered second; negative when reversed).
        variant: What turns the owned frame into the offered one (crop, mirror...).
        why_open: Why the quote left it open, in its words.
    """

    offered_stream: str
    offered_start_s: float
    offered_end_s: float
    owned_path: Path
    owned_stream: str
    owned_sha256: str | None
    owned_start_s: float
    speed: float
    variant: Variant = field(default_factory=Variant)
    why_open: str = ""

    def owned_time(self, t: float) -> float:
        """Owned time on the line at offered time ``t``."""
        return self.owned_start_s + (t - self.offered_start_s) * self.speed


def stretch_from_segment(seg: Segment, *, owned_sha256: str | None, why_open: str = "") -> OpenStretch:
    """The open stretch of a match segment (an ambiguous, weak or below-the-floor one)."""
    return OpenStretch(seg.query_stream, seg.query_start, seg.query_end, Path(seg.corpus_file), seg.corpus_stream,
                       owned_sha256, seg.corpus_start, seg.speed, seg.variant, why_open)


@dataclass(frozen=True, slots=True)
class Settlement:
    """What the pixels say about one open stretch.

    Attributes:
        stretch: The stretch checked.
        verdict: ``owned``, ``new`` or ``cant_tell``.
        reason: Plain words a buyer reads.
        figures: The measured values behind it (empty when nothing was measured).
    """

    stretch: OpenStretch
    verdict: Verdict
    reason: str
    figures: Mapping[str, float] = field(default_factory=dict)


def sample_times(stretch: OpenStretch) -> np.ndarray:
    """Offered times sampled over the stretch: evenly spaced centres, 4 a second within bounds."""
    dur = max(0.0, stretch.offered_end_s - stretch.offered_start_s)
    n = int(np.clip(round(dur * SAMPLES_PER_S), SAMPLES_MIN, SAMPLES_MAX))
    return stretch.offered_start_s + (np.arange(n) + 0.5) * dur / n


def decide(m: LineMeasures, *, cut: bool = False) -> tuple[Verdict, str]:
    """The verdict and its reason from the measures of one line (``cut``: the match is on a crop
    rung or an edge strip, so the copy's exact cut is not known)."""
    if m.samples < MIN_SAMPLES:
        return "cant_tell", f"too short to settle with pixels: {m.samples} aligned frames"
    if m.bg_cells_over >= DIFFER_CELLS and cut:
        return "cant_tell", (f"the background differs in {m.bg_cells_over} cells, but the copy's cut is known only "
                             "to a crop rung, and a cut a percent off differs as much")
    if m.bg_cells_over >= DIFFER_CELLS and m.bg_unexplained >= max(UNEXPLAINED_CELLS,
                                                                   UNEXPLAINED_SHARE * m.bg_cells_over):
        lo, hi = m.bg_range
        return "new", (f"objects moved: the background differs in {m.bg_cells_over} cells by "
                       f"{lo:.0f}-{hi:.0f} levels after the tone fit")
    if m.bg_cells_over >= DIFFER_CELLS:
        return "cant_tell", (f"the background differs in {m.bg_cells_over} cells, nearly all on edges both sides "
                             "share: a copy cut or scaled a little differs so")
    if m.bg_cells_over:
        return "cant_tell", (f"{m.bg_cells_over} background cells differ, by up to {m.bg_largest:.0f} levels "
                             "(a small object, an overlay or a grade's clipping): not enough to settle")
    if m.moving_share < MIN_MOVING:
        return "cant_tell", ("nothing moves along the line: the pixels agree (median "
                             f"{m.pixel_median:.1f} levels) but cannot tell this moment from another of the same view")
    if m.motion_agree < AGREE_SHARE:
        return "cant_tell", (f"the background agrees (within {m.bg_largest:.0f} levels) but the motion does not: "
                             f"{m.motion_agree:.0%} of the moving places agree (another moment of the same view?)")
    return "owned", (f"pixels agree along the line: median {m.pixel_median:.1f} levels after the tone fit, "
                     f"background within {m.bg_largest:.0f} levels, the same motion in {m.motion_agree:.0%} "
                     "of the moving places")


def settle_stretches(delivered_path: Path, stretches: Sequence[OpenStretch], *,
                     progress: Callable[[Progress], None] | None = None,
                     cancel: CancelCallback | None = None) -> list[Settlement]:
    """Settle each open stretch with the frames of both sides (results in the same order).

    Each distinct library file is digested once and read only when its digest is the
    indexed one. Stretches are worked in batches of :data:`BATCH`, each side's stream
    decoded once per batch; frames are kept as 64x64 RGB of the sampled times only.

    Raises:
        MediaError: the delivered file cannot be decoded (a library file that cannot be
            decoded leaves its stretches "can't tell" instead).
        Cancelled: ``cancel()`` turned true.
    """
    problems: dict[Path, str | None] = {}
    out: list[Settlement | None] = [None] * len(stretches)
    usable: list[int] = []
    for i, s in enumerate(stretches):
        bad = _unusable(s)
        if bad is None:
            usable.append(i)
        else:
            out[i] = Settlement(s, "cant_tell", bad)
    for first in range(0, len(usable), BATCH):
        idx = usable[first:first + BATCH]
        batch = [stretches[i] for i in idx]
        for s in batch:
            if s.owned_path not in problems:
                problems[s.owned_path] = library_problem(s.owned_path, s.owned_sha256, cancel=cancel)
        for i, settled in zip(idx, _settle_batch(delivered_path, batch, problems, cancel), strict=True):
            out[i] = settled
        if progress is not None:
            done = len(stretches) - len(usable) + first + len(idx)
            progress(Progress("settle", done, len(stretches), unit="stretches", current=str(delivered_path)))
    return [st for st in out if st is not None]


def _unusable(s: OpenStretch) -> str | None:
    """Why a stretch's line cannot be followed (``None`` when it can)."""
    values = (s.offered_start_s, s.offered_end_s, s.owned_start_s, s.speed)
    if not all(math.isfinite(v) for v in values) or s.offered_start_s < 0 or s.offered_end_s <= s.offered_start_s \
            or s.speed == 0:
        return "the matched line cannot be followed (its times or speed are not finite, or it is empty)"
    return None


def _settle_batch(delivered: Path, batch: Sequence[OpenStretch], problems: Mapping[Path, str | None],
                  cancel: CancelCallback | None) -> list[Settlement]:
    """One batch: the offered frames per stream, the owned frames per library stream and variant."""
    times = [sample_times(s) for s in batch]
    offered = _gather(((delivered, s.offered_stream, Variant()), t) for s, t in zip(batch, times, strict=True))
    readable = [i for i, s in enumerate(batch) if problems[s.owned_path] is None]
    owned = _gather(((batch[i].owned_path, batch[i].owned_stream, batch[i].variant),
                     np.concatenate([np.array([batch[i].owned_time(t) for t in times[i]]) + d for d in SHIFTS]))
                    for i in readable)
    got_offered = {key: frames_at(key[0], key[1], ts, key[2], cancel=cancel) for key, ts in offered.wanted()}
    got_owned: dict[tuple[Path, str, Variant], tuple[np.ndarray, np.ndarray] | str] = {}
    for key, ts in owned.wanted():
        check_cancel(cancel)
        try:
            got_owned[key] = frames_at(key[0], key[1], ts, key[2], cancel=cancel)
        except (MediaError, OSError) as exc:
            got_owned[key] = f"{key[0].name} could not be decoded ({exc}), so its pixels were not compared"
    results: list[Settlement] = []
    for i, s in enumerate(batch):
        problem = problems[s.owned_path]
        if problem is not None:
            results.append(Settlement(s, "cant_tell", problem))
            continue
        o_imgs, o_found = offered.take(i, got_offered)
        w = owned.take_or_problem(readable.index(i), got_owned)
        if isinstance(w, str):
            results.append(Settlement(s, "cant_tell", w))
            continue
        results.append(_judge(s, o_imgs, o_found, w[0], w[1]))
    return results


def _judge(s: OpenStretch, o_imgs: np.ndarray, o_found: np.ndarray, w_imgs: np.ndarray, w_found: np.ndarray
           ) -> Settlement:
    """Measure one stretch at the shift of its line where the two sides' luma agree best."""
    n = len(o_found)
    w_imgs = w_imgs.reshape(len(SHIFTS), n, *w_imgs.shape[1:])
    w_found = w_found.reshape(len(SHIFTS), n)
    o_luma = luma_of(o_imgs.astype(np.float32))
    best, best_j = np.inf, -1
    for j in range(len(SHIFTS)):
        both = o_found & w_found[j]
        if both.sum() < max(1, n // 2):
            continue
        d = float(np.mean(np.abs(o_luma[both] - luma_of(w_imgs[j][both].astype(np.float32)))))
        if d < best - 1e-6 or (abs(d - best) <= 1e-6 and abs(SHIFTS[j]) < abs(SHIFTS[best_j])):
            best, best_j = d, j
    if best_j < 0:
        return Settlement(s, "cant_tell", "no frames of both sides along the line")
    both = o_found & w_found[best_j]
    m = measure_line(o_imgs[both].astype(np.float32), w_imgs[best_j][both].astype(np.float32), differ=DIFFER_LEVEL)
    v = s.variant
    verdict, reason = decide(m, cut=v.crop < 1.0 or (v.edge is not None and v.edge_depth > 0) or v.offset is not None)
    return Settlement(s, verdict, reason, {**m.figures(), "line_shift_s": float(SHIFTS[best_j])})


class _Requests:
    """Wanted times grouped by (file, stream, variant), so each is decoded once per batch."""

    def __init__(self) -> None:
        self.keys: list[tuple[Path, str, Variant]] = []
        self.spans: list[tuple[int, int]] = []
        self._times: dict[tuple[Path, str, Variant], list[np.ndarray]] = {}

    def add(self, key: tuple[Path, str, Variant], ts: np.ndarray) -> None:
        parts = self._times.setdefault(key, [])
        start = sum(len(p) for p in parts)
        parts.append(np.asarray(ts, np.float64))
        self.keys.append(key)
        self.spans.append((start, start + len(ts)))

    def wanted(self) -> Iterator[tuple[tuple[Path, str, Variant], np.ndarray]]:
        for key, parts in self._times.items():
            yield key, np.concatenate(parts)

    def take(self, i: int, got: Mapping[tuple[Path, str, Variant], tuple[np.ndarray, np.ndarray]]
             ) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.spans[i]
        imgs, found = got[self.keys[i]]
        return imgs[a:b], found[a:b]

    def take_or_problem(self, i: int, got: Mapping[tuple[Path, str, Variant], tuple[np.ndarray, np.ndarray] | str]
                        ) -> tuple[np.ndarray, np.ndarray] | str:
        value = got[self.keys[i]]
        if isinstance(value, str):
            return value
        a, b = self.spans[i]
        return value[0][a:b], value[1][a:b]


def _gather(items: Iterable[tuple[tuple[Path, str, Variant], np.ndarray]]) -> _Requests:
    req = _Requests()
    for key, ts in items:
        req.add(key, ts)
    return req


def settle_offered(settlements: Sequence[Settlement]) -> list[tuple[str, float, float, Verdict, str]]:
    """Verdicts per offered span, from the settled stretches of each offered stream.

    Stretches that overlap (one offered stretch against several owned twins) are judged together:
    their union is new only when every one of them settles new. Otherwise each piece of it is
    owned where exactly one library file's stretches covering that piece settle owned, and
    "can't tell" elsewhere (with the reasons), so a line owned over part of a group does not
    carry the rest with it.

    Returns:
        ``(offered_stream, start_s, end_s, verdict, reason)`` sorted by stream and start.
    """
    by_stream: dict[str, list[Settlement]] = {}
    for st in settlements:
        by_stream.setdefault(st.stretch.offered_stream, []).append(st)
    out: list[tuple[str, float, float, Verdict, str]] = []
    for stream, group in sorted(by_stream.items()):
        group.sort(key=lambda x: x.stretch.offered_start_s)
        run: list[Settlement] = [group[0]]
        end = group[0].stretch.offered_end_s
        for st in group[1:]:
            if st.stretch.offered_start_s >= end:
                out.extend((stream, a, b, v, why) for a, b, v, why in _judge_group(run))
                run, end = [], st.stretch.offered_end_s
            run.append(st)
            end = max(end, st.stretch.offered_end_s)
        out.extend((stream, a, b, v, why) for a, b, v, why in _judge_group(run))
    return out


def _judge_group(run: Sequence[Settlement]) -> list[tuple[float, float, Verdict, str]]:
    """The spans of one group of overlapping stretches."""
    start = min(st.stretch.offered_start_s for st in run)
    end = max(st.stretch.offered_end_s for st in run)
    if all(st.verdict == "new" for st in run):
        return [(start, end, *_combine(run))]
    cuts = sorted({t for st in run for t in (st.stretch.offered_start_s, st.stretch.offered_end_s)})
    spans: list[tuple[float, float, Verdict, str]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        covering = [st for st in run if st.stretch.offered_start_s <= a and st.stretch.offered_end_s >= b]
        if not covering:
            continue
        verdict, reason = _combine(covering)
        if verdict == "new":  # some stretch of the group is not new: that is not shown here
            verdict, reason = "cant_tell", _combine([st for st in run if st.verdict != "new"])[1]
        if spans and spans[-1][1] == a and spans[-1][2:] == (verdict, reason):
            spans[-1] = (spans[-1][0], b, verdict, reason)
        else:
            spans.append((a, b, verdict, reason))
    return spans


def _combine(run: Sequence[Settlement]) -> tuple[Verdict, str]:
    owned = {st.stretch.owned_path for st in run if st.verdict == "owned"}
    if len(owned) == 1:
        st = next(st for st in run if st.verdict == "owned")
        return "owned", f"a copy of {st.stretch.owned_path.name}: {st.reason}"
    if all(st.verdict == "new" for st in run):
        return "new", "; ".join(dict.fromkeys(f"against {st.stretch.owned_path.name}: {st.reason}" for st in run))
    if len(owned) > 1:
        return "cant_tell", "the pixels agree with several owned files: " + ", ".join(sorted(p.name for p in owned))
    return "cant_tell", "; ".join(dict.fromkeys(f"against {st.stretch.owned_path.name}: {st.reason}"
                                                for st in run if st.verdict != "new"))
