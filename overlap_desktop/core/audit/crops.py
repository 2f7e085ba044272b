"""Query-side crop search: windows of the delivered frames searched in the library.

The audit decodes each delivered stream once; :class:`CropTap` rides along that pass (the audit
hands it every decoded frame) and keeps, at a few samples a second, the PDQ codes of the windows
:func:`~.crops_windows.crop_windows` chose for the library's ladder: codes only, 32 bytes per
window and sample. :func:`search_crops` then searches each window's code stream in the library
with the ordinary matcher and evidence rules (lines, verification, the chance figure judged
against the library searched once per window, the floor, the rule of several owned episodes),
so a window is claimed owned only with the evidence any match needs. What comes back are
ordinary :class:`~overlap_desktop.core.types.Segment` s whose ``variant`` says the edit found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from overlap_desktop.core.audit.crops_windows import CropWindow, crop_windows
from overlap_desktop.core.ingest import pdq_batch, prep
from overlap_desktop.core.ingest.fingerprint import variants_from_config
from overlap_desktop.core.match.corpora import IndexCorpus
from overlap_desktop.core.match.pipeline import compare_streams
from overlap_desktop.core.match.results import file_results
from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.match.settings import match_params
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.types import (
    CancelCallback,
    ProgressCallback,
    Segment,
    StreamFingerprints,
    StreamInfo,
    TimedFrame,
    Variant,
    check_cancel,
)

if TYPE_CHECKING:
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = ["CROP_FPS", "CROP_GAIN_BITS", "MAX_CODES", "WHOLE_EVERY", "CropTap", "crop_queries", "crop_tap",
           "search_crops", "window_codes"]

#: Samples a second taken for the crop search at most (the index's rate when lower): a manifest's
#: rate, which the matcher's lines and evidence are made for; every sample costs a code per window.
CROP_FPS = 2.0
#: Window codes kept at most over a whole audit (32 bytes each: 64 MB); past it, later footage
#: is not crop-searched and :attr:`CropTap.skipped_s` says how much.
MAX_CODES = 2_000_000
#: Windows holding a whole owned frame (picture in picture: 25 positions) are taken every this many
#: samples. Measured (bench/bench_settle.py crops): at 1 sample a second the shrunk copies are found as
#: well as at 2 (room 15.5 s against 15.2, car park 9.0 against 9.8), a 95% corner crop is not (8 s
#: against 15): the crop windows keep the full rate.
WHOLE_EVERY = 2
_KEY_SEP = "#crop"


@dataclass
class _Stream:
    name: str
    key: str
    duration_s: float | None
    times: list[int] = field(default_factory=list)
    codes: list[np.ndarray] = field(default_factory=list)
    quality: list[np.ndarray] = field(default_factory=list)
    #: Per sample: were the whole-frame windows taken too (every :data:`WHOLE_EVERY` samples)?
    full: list[bool] = field(default_factory=list)
    #: Per sample: the code of the offered frame as a whole (what the quote's own search saw).
    whole: list[np.ndarray] = field(default_factory=list)
    next_k: int = 0


class CropTap:
    """Takes window codes from the frames of the audit's decode pass (one stream at a time).

    Args:
        windows: The windows to fingerprint.
        fps: Samples a second.
        max_codes: Window codes kept at most over every stream.
    """

    def __init__(self, windows: Sequence[CropWindow], fps: float, *, max_codes: int = MAX_CODES) -> None:
        if fps <= 0:
            raise ValueError(f"the crop search needs a positive sample rate, not {fps}")
        self.windows = tuple(windows)
        self.fps = float(fps)
        self.max_codes = int(max_codes)
        self.streams: list[_Stream] = []
        #: Seconds of footage not crop-searched because the code budget was spent.
        self.skipped_s = 0.0
        self._current: _Stream | None = None
        self._held = 0
        self._crops_only = [i for i, w in enumerate(self.windows) if not w.whole]

    def begin(self, name: str, path: Path, info: StreamInfo) -> None:
        """A stream of delivered file ``name`` starts (its frames follow in presentation order)."""
        self._current = _Stream(name, info.key, info.duration_s) if self.windows else None

    def frame(self, frame: TimedFrame) -> None:
        """One decoded frame: sampled when it is the first at or after the next sample time."""
        s = self._current
        if s is None:
            return
        due = int(round(s.next_k * 1e9 / self.fps))
        if frame.t_ns < due:
            return
        if self._held + len(self.windows) > self.max_codes:
            self.skipped_s += 1.0 / self.fps
        else:
            full = len(s.times) % WHOLE_EVERY == 0
            take = range(len(self.windows)) if full else self._crops_only
            codes = np.zeros((len(self.windows), 32), np.uint8)
            quality = np.zeros(len(self.windows), np.uint8)  # a window not taken: quality 0, unusable
            got, q, whole = window_codes(_work_luma(frame), [self.windows[i] for i in take])
            if take:
                codes[list(take)], quality[list(take)] = got, q
            s.whole.append(whole)
            s.times.append(int(frame.t_ns))
            s.codes.append(codes)
            s.quality.append(quality)
            s.full.append(full)
            self._held += len(self.windows)
        # Every sample time this frame covers is taken by it (a held frame is one sample).
        s.next_k = max(s.next_k + 1, int(np.floor(frame.t_ns * self.fps / 1e9)) + 1)

    def end(self) -> None:
        """The stream finished (or failed): what was sampled is kept."""
        if self._current is not None and self._current.times:
            self.streams.append(self._current)
        self._current = None


def _work_luma(frame: TimedFrame) -> np.ndarray:
    to_luma = getattr(frame, "to_luma", None)
    if to_luma is not None:
        return np.asarray(to_luma(prep.WORK_SIZE, prep.WORK_SIZE), np.float32)
    return prep.luma(np.ascontiguousarray(frame.to_rgb(prep.WORK_SIZE, prep.WORK_SIZE)))


def window_codes(y: np.ndarray, windows: Sequence[CropWindow]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PDQ codes ``uint8 (W, 32)``, qualities ``(W,)`` and the whole frame's code ``(32,)`` of the windows
    of a working luma image,
    prepared as the fingerprint prepares a frame's variants: bars trimmed, each window resampled,
    and a low-contrast frame stretched by the owned frame's gain around its mean, as the library
    stretched its stored windows: for a crop the offered frame's (most of the owned frame), for a
    window holding a whole owned frame (picture in picture) its own."""
    box = prep.content_box_from_luma(y)
    small = np.empty((len(windows) + 1, prep.HASH_SIZE, prep.HASH_SIZE), np.float32)
    small[0] = prep.region_luma(y, box)
    # Windows of one pixel size (the picture-in-picture positions, a crop's anchors) are
    # resampled together: one call per size instead of one per window.
    by_size: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for i, w in enumerate(windows, start=1):
        x0 = box.x0 + int(round(w.x * box.width))
        y0 = box.y0 + int(round(w.y * box.height))
        x1 = max(x0 + 1, box.x0 + int(round((w.x + w.w) * box.width)))
        y1 = max(y0 + 1, box.y0 + int(round((w.y + w.h) * box.height)))
        by_size.setdefault((y1 - y0, x1 - x0), []).append((i, y0, x0))
    for (h, w_px), members in by_size.items():
        regions = np.stack([y[y0:y0 + h, x0:x0 + w_px] for _, y0, x0 in members])
        small[[i for i, _, _ in members]] = prep.resample_luma(regions, prep.HASH_SIZE)
    n = small.shape[0]
    gains = np.full(n, prep.contrast_gains(small[:1])[0], np.float32)
    means = np.full(n, small[0].mean(), np.float32)
    whole = np.flatnonzero([False] + [w.whole for w in windows])
    if whole.size:
        gains[whole] = prep.contrast_gains(small[whole])
        means[whole] = small[whole].reshape(whole.size, -1).mean(axis=1)
    if (gains != 1.0).any():
        prep.stretch_contrast(small, gains, means)
    np.clip(np.rint(small, out=small), 0, 255, out=small)
    # Window codes are only compared by distance with the library's (within the matcher's
    # tolerance), so the DCT need not be pdqhash's to the last bit: the matrix-product one is
    # ten times cheaper and moves a coefficient by 1e-4 of a level.
    codes = pdq_batch.codes_from_coefs(pdq_batch.dct16_fast(small))
    quality = pdq_batch.quality(small[1:])
    return codes[1:], np.maximum(quality, 0).astype(np.uint8), codes[0]


def crop_tap(config: Config) -> CropTap:
    """A tap for one audit: windows for the ladder the configuration indexes with."""
    fps = min(CROP_FPS, float(config["index.fps"]))
    return CropTap(crop_windows(variants_from_config(config)), fps)


def crop_queries(tap: CropTap, quality_floor: int,
                 owned: Mapping[str, Sequence[Segment]] | None = None) -> list[QueryStream]:
    """One query stream per tapped stream and window (keyed ``"<stream>#crop<window>"``).

    Samples inside ``owned`` (per delivered file, the segments the whole frames' screen counted
    owned) are not searched: what a crop finds there is owned already and is not counted again. A
    stream with nothing left to search gives no query streams.
    """
    out: list[QueryStream] = []
    for s in tap.streams:
        times = np.asarray(s.times, np.int64)
        codes = np.stack(s.codes)  # (n, W, 32)
        quality = np.stack(s.quality)  # (n, W)
        dur = s.duration_s if s.duration_s else (times[-1] / 1e9 + 1.0 / tap.fps)
        full = np.flatnonzero(s.full)
        searched = ~_inside(times, [g for g in (owned or {}).get(s.name, ()) if g.query_stream == s.key])
        if not searched.any():
            continue
        for i, w in enumerate(tap.windows):
            # A whole-frame window is a stream of its own samples (every WHOLE_EVERY-th).
            rows, fps = (full, tap.fps / WHOLE_EVERY) if w.whole else (slice(None), tap.fps)
            q = quality[rows, i]
            fp = StreamFingerprints(times[rows], q.copy(), codes[rows, i:i + 1].copy(), (Variant(),),
                                    (q >= quality_floor) & searched[rows], [], fps, float(dur))
            out.append(QueryStream(s.name, float(dur), f"{s.key}{_KEY_SEP}{i}", fp))
    return out


def _inside(times_ns: np.ndarray, segments: Sequence[Segment]) -> np.ndarray:
    """Which sample times lie inside one of ``segments`` (their offered spans, seconds)."""
    t = times_ns / 1e9
    out = np.zeros(len(t), bool)
    for g in segments:
        out |= (t >= g.query_start) & (t <= g.query_end)
    return out


#: A window's match counts only when the window is this many bits closer to the owned frames along
#: the line than the offered frame as a whole is to any code stored for them: the cut must explain
#: the match. Measured over the verdict suites and bench/bench_settle.py crops (counted lines): the
#: lines of cut copies 7-108 bits closer through their window (the best line of each copy 10-108);
#: scripted replays of an owned motion, and uncut copies the quote finds itself, at most 1 bit closer
#: (down to -52). Without this, crop windows counted 5 scripted look-alikes owned that the quote
#: leaves "can't tell" or owns itself (a window a little off the whole frame is another draw).
CROP_GAIN_BITS = 16


def _whole_codes(tap: CropTap) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    return {(s.name, s.key): (np.asarray(s.times, np.int64), np.stack(s.whole)) for s in tap.streams}


def _rows_at(times_ns: np.ndarray, t_s: np.ndarray) -> np.ndarray:
    """The rows of ``times_ns`` nearest to times ``t_s`` (seconds)."""
    t = np.asarray(np.round(np.asarray(t_s, np.float64) * 1e9), np.int64)
    i = np.clip(np.searchsorted(times_ns, t), 1, max(1, len(times_ns) - 1))
    left = times_ns[np.maximum(i - 1, 0)]
    right = times_ns[np.minimum(i, len(times_ns) - 1)]
    return np.where(np.abs(t - left) <= np.abs(right - t), np.maximum(i - 1, 0), np.minimum(i, len(times_ns) - 1))


def _window_explains(q: QueryStream, whole: tuple[np.ndarray, np.ndarray], owned: StreamFingerprints,
                     seg: RawSegment) -> bool:
    """Is the window's match along ``seg`` clearly closer than the offered frame as a whole is?"""
    if seg.near or seg.rival or seg.unjudged:
        return True  # never counted: they only say "can't tell", as they would in the quote
    pairs = seg.pairs
    if pairs is None or not pairs.size or len(whole[0]) == 0 or len(owned) == 0:
        return False
    q_rows = _rows_at(whole[0], pairs[:, 0])
    c_rows = _rows_at(owned.times_ns, pairs[:, 1])
    d_whole = np.unpackbits(whole[1][q_rows][:, None, :] ^ owned.codes[c_rows], axis=-1).sum(axis=-1).min(axis=1)
    return float(d_whole.mean()) - float(np.mean(pairs[:, 2])) >= CROP_GAIN_BITS


def search_crops(tap: CropTap, index: Index, *, config: Config, progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None,
                 owned: Mapping[str, Sequence[Segment]] | None = None) -> dict[str, list[Segment]]:
    """Search the tapped windows in the library; per delivered file, the copies found.

    Only counted segments come back (evidence above the floor, chance judged against the
    library searched once per window, not one of several owned episodes matched alike), and
    only lines the cut explains (:data:`CROP_GAIN_BITS`).
    ``query_stream`` is the delivered stream's key and ``variant`` the edit found.
    ``owned``: per delivered file, what the whole frames already count owned (not searched
    again: there a window of an uncut copy matches the owned frame's stored windows all along,
    lines the cut never explains, and verifying them was most of the search's CPU).
    """
    queries = crop_queries(tap, int(config["index.quality_floor"]), owned)
    if not queries:
        return {}
    check_cancel(cancel)
    params = match_params(config)
    corpus = IndexCorpus(index)
    found = compare_streams(queries, corpus, params, search_space=max(1, len(tap.windows)), near=False,
                            progress=progress, cancel=cancel)
    wholes = _whole_codes(tap)
    found = [f for f in found if _window_explains(queries[f.query], wholes[queries[f.query].file,
                                                                          queries[f.query].key.rpartition(_KEY_SEP)[0]],
                                                  corpus.fingerprints(f.stream), f.segment)]
    out: dict[str, list[Segment]] = {}
    for f in file_results(queries, found, corpus, params):
        for seg in f.segments:
            key, _, idx = seg.query_stream.rpartition(_KEY_SEP)
            w = tap.windows[int(idx)]
            out.setdefault(f.query_file, []).append(replace(seg, query_stream=key, variant=w.variant))
    return out
