"""Checkpoints inside a long stream, so an interrupted fingerprint continues instead of restarting.

A stream's fingerprints are a whole-stream computation: the sampler's grid runs from the
first frame, and the featureless / static / dim-camera rules look at every sample. What
they need from the decoded frames is small, though: per grid point its time and which
hashed image it shows, per hashed image its codes, quality and contrast flag. A
checkpoint saves exactly that for the samples since the previous checkpoint
(:class:`StreamCheckpoint`, a *chunk*), plus where the sampler stands (:class:`GridState`).

A resumed read (:class:`StreamResume`, all chunks joined) restores those lists, asks the
reader for frames from the saved frame on (a reader with ``resumable = True`` seeks to a
keyframe before it and decodes forward) and continues; the whole-stream rules then run
over the joined samples, so the fingerprints equal those of an uninterrupted read. Two
conditions make that exact, and both are checked or arranged here:

* the read continues with the very frame the checkpoint was taken after
  (:func:`starting_at`; otherwise :class:`ResumeMismatch` and the caller starts over);
* checkpoints are taken only between hashing batches (the caller's ``save`` refuses
  otherwise), so the resumed run hashes the same images in the same batches.

A checkpoint is taken after :data:`CHECKPOINT_S` seconds of footage since the last one.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from overlap_desktop.core.ingest.frames import GridState
from overlap_desktop.core.types import CODE_BYTES, NS_PER_S, TimedFrame

__all__ = ["CHECKPOINT_S", "CHECKPOINT_VERSION", "ResumeMismatch", "StreamCheckpoint", "StreamResume",
           "checkpoint", "load_resume", "starting_at", "with_checkpoints"]

#: Version of the checkpoint format (state JSON and chunk layout); another version is discarded.
CHECKPOINT_VERSION = 1
#: Seconds of footage between checkpoints. An interruption then costs at most this much footage
#: again (plus the seek's lead, a GOP). Each checkpoint is one small transaction (the chunk of
#: 30 s at the fast preset and 4 fps is ~46 kB), so even at 50x real time (0.6 s of wall time per
#: checkpoint) writing them costs well under 1 % (bench/bench_resume.py).
CHECKPOINT_S = 30.0


class ResumeMismatch(Exception):
    """The resumed read did not continue with the frame the checkpoint was taken after."""


@dataclass
class _Samples:
    """The sampler's state and samples: what both a checkpoint and joined progress hold.

    Attributes:
        grid: Where the sampler stands (:class:`GridState`).
        times_ns: ``int64 (m,)`` grid times of the samples.
        sample_of: ``int64 (m,)`` for each sample, the hashed image it shows (numbered over the stream).
        codes: ``uint8 (h, V, 32)`` codes of the hashed images.
        quality: ``uint8 (h,)`` their identity quality.
        stretched: ``bool (h,)`` whether each was contrast-stretched.
        fraction: Fraction of the stream done (0..1), shown when the read resumes.
    """

    grid: GridState
    times_ns: np.ndarray
    sample_of: np.ndarray
    codes: np.ndarray
    quality: np.ndarray
    stretched: np.ndarray
    fraction: float


@dataclass
class StreamCheckpoint(_Samples):
    """What one checkpoint adds: the sampler's state and the samples (and images hashed) since
    the previous checkpoint.

    Attributes:
        seq: Number of this checkpoint in the stream (0, 1, ...): chunk ``seq`` of the saved progress.
        samples: Grid points saved so far, this chunk included.
        hashed: Hashed images saved so far, this chunk included.
    """

    seq: int
    samples: int
    hashed: int

    def chunk(self) -> bytes:
        """The new samples as one ``.npz`` blob (numpy's own format, read back without pickle)."""
        buf = io.BytesIO()
        np.savez(buf, times_ns=self.times_ns.astype(np.int64), sample_of=self.sample_of.astype(np.int64),
                 codes=self.codes.astype(np.uint8), quality=self.quality.astype(np.uint8),
                 stretched=self.stretched.astype(bool))
        return buf.getvalue()

    def state(self) -> str:
        """The state to store beside the chunks: the grid, the totals so far, the fraction."""
        g = self.grid
        return json.dumps({"version": CHECKPOINT_VERSION, "chunks": self.seq + 1, "samples": self.samples,
                           "hashed": self.hashed, "fraction": round(float(self.fraction), 6),
                           "grid": [g.t0_ns, g.last_t_ns, g.k, g.next_g_ns, g.taken]})


def checkpoint(grid: GridState, seq: int, times_ns: Sequence[int],
               new: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               duration_s: float | None, totals: tuple[int, int]) -> StreamCheckpoint:
    """A :class:`StreamCheckpoint` of ``grid`` (copied) and the new samples ``times_ns`` and
    ``new`` (``sample_of, codes, quality, stretched``); the fraction done from ``duration_s``;
    ``totals``: samples and hashed images so far."""
    end = duration_s if duration_s is not None and math.isfinite(duration_s) and duration_s > 0 else None
    at = min(1.0, (grid.last_t_ns / NS_PER_S) / end) if end else 0.0
    sample_of, codes, quality, stretched = new
    return StreamCheckpoint(replace(grid), np.asarray(times_ns, np.int64), sample_of, codes, quality, stretched,
                            fraction=at, seq=seq, samples=totals[0], hashed=totals[1])


@dataclass
class StreamResume(_Samples):
    """Saved progress of one stream, every chunk joined: what :func:`fingerprint_stream` continues
    from (the samples of the whole stream up to the last checkpoint).

    Attributes:
        chunks: Chunks saved so far (the next checkpoint is chunk number ``chunks``).
    """

    chunks: int


def load_resume(state: str, chunks: Sequence[bytes], variants: int) -> StreamResume:
    """Join saved chunks into a :class:`StreamResume`, checking every part of it.

    Args:
        state: The JSON of :meth:`StreamCheckpoint.state`.
        chunks: The chunk blobs, in order.
        variants: The number of variants of this run (codes of another count are not ours).

    Raises:
        ValueError: the saved progress is damaged or of another version (the message says how).
    """
    try:
        meta = json.loads(state)
        if not isinstance(meta, dict) or meta.get("version") != CHECKPOINT_VERSION:
            raise ValueError("saved by another version of overlap")
        t0, last_t, k, next_g, taken = (int(x) for x in meta["grid"])
        samples, hashed, fraction = int(meta["samples"]), int(meta["hashed"]), float(meta["fraction"])
        if int(meta["chunks"]) != len(chunks):
            raise ValueError(f"{len(chunks)} of {int(meta['chunks'])} parts present")
        parts = [_read_chunk(c) for c in chunks]
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable ({type(exc).__name__})") from exc
    joined = {name: np.concatenate([p[name] for p in parts]) if parts else np.zeros(0)
              for name in ("times_ns", "sample_of", "codes", "quality", "stretched")}
    out = StreamResume(GridState(t0, last_t, k, next_g, taken), fraction=min(max(fraction, 0.0), 1.0),
                       chunks=len(chunks), **joined)
    _check(out, samples, hashed, variants)
    return out


def _read_chunk(blob: bytes) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            return {name: z[name] for name in ("times_ns", "sample_of", "codes", "quality", "stretched")}
    except Exception as exc:  # zipfile, zlib, numpy's format: whatever a damaged blob trips, it is damage
        raise ValueError(f"a part is unreadable ({type(exc).__name__})") from exc


def _check(r: StreamResume, samples: int, hashed: int, variants: int) -> None:
    """Raise ValueError unless ``r`` is self-consistent and fits a stream of ``variants`` variants."""
    if r.times_ns.shape != (samples,) or r.sample_of.shape != (samples,) or samples == 0:
        raise ValueError("sample count does not match")
    if r.codes.shape != (hashed, variants, CODE_BYTES) or r.quality.shape != (hashed,) \
            or r.stretched.shape != (hashed,):
        raise ValueError("hashed images do not match")
    if r.times_ns.dtype != np.int64 or r.sample_of.dtype != np.int64 or r.codes.dtype != np.uint8:
        raise ValueError("wrong data types")
    if (np.diff(r.times_ns) <= 0).any() or r.sample_of.min() < 0 or r.sample_of.max() >= hashed \
            or (np.diff(r.sample_of) < 0).any():
        raise ValueError("samples out of order")
    g = r.grid
    if g.last_t_ns < int(r.times_ns[-1]) or g.next_g_ns <= int(r.times_ns[-1]) or g.k < samples or g.taken < 1:
        raise ValueError("sampler state does not match the samples")


def starting_at(frames: Iterable[TimedFrame], t_ns: int) -> Iterator[TimedFrame]:
    """Pass ``frames`` through, checking that the first is at ``t_ns`` (the checkpoint's frame).

    Raises:
        ResumeMismatch: it is not (the reader could not land on that frame; start over).
    """
    first = True
    for frame in frames:
        if first and int(frame.t_ns) != t_ns:
            raise ResumeMismatch(f"the read continued at {int(frame.t_ns) / NS_PER_S:.3f} s, not at the saved "
                                 f"{t_ns / NS_PER_S:.3f} s")
        first = False
        yield frame
    if first:
        raise ResumeMismatch("the read from the saved point gave no frame")


def with_checkpoints(frames: Iterable[TimedFrame], grid: GridState, every_s: float,
                     save: Callable[[], bool], since_ns: int = 0) -> Iterator[TimedFrame]:
    """Pass ``frames`` through to the sampler, calling ``save`` every ``every_s`` of footage.

    ``save`` runs when the sampler asks for the next frame, i.e. just after it read the last
    one (``grid`` then describes that moment, see :class:`GridState`); it returns False when
    the moment does not suit (a hashing batch half full) and is asked again at the next frame.
    """
    every_ns = int(every_s * NS_PER_S)
    last = since_ns
    for frame in frames:
        yield frame
        if grid.taken and grid.last_t_ns - last >= every_ns and save():
            last = grid.last_t_ns
