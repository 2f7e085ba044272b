"""The frames a settle check compares: small luma images at given times, and the library guard.

Frames are read with the reader indexing used (so every container the index reads works), one
stream pass per call: each decoded frame is dropped at once unless it is the frame shown at a
wanted time, which is reduced to 64x64 RGB as the pipeline sees it (working image, bar trim,
the variant's crop and orientation) and kept. Memory is the wanted samples' 12 KB each.

A library file is read only after its digest is checked against the one the index recorded:
a file changed since indexing is not the footage the quote was compared with.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from overlap_desktop.core.index.walk import sha256_item
from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.fingerprint import variant_box
from overlap_desktop.core.ingest.orient import apply_image
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.types import CancelCallback, TimedFrame, Variant, check_cancel, s_to_ns
from overlap_desktop.errors import MediaError

__all__ = ["LATE_LIMIT_S", "library_problem", "frames_at", "small_rgb"]

IDENTITY = Variant()

#: A wanted time this far past a stream's last frame is not in the stream.
LATE_LIMIT_S = 0.5
#: A read for frames wanted from this many seconds into a stream on starts inside it (readers that
#: can), :data:`SEEK_LEAD_S` before the first wanted time, so the frame on screen then is decoded.
SEEK_FROM_S = 4.0
SEEK_LEAD_S = 2.0


def library_problem(path: Path, recorded_sha256: str | None, *, cancel: CancelCallback | None = None) -> str | None:
    """Why the library file at ``path`` must not be read (``None`` when it is as indexed).

    The digest is computed from the bytes (streamed), never trusted from size and time alone.
    """
    name = path.name or str(path)
    if recorded_sha256 is None:
        return f"the index records no digest for {name}, so its pixels were not read"
    if not path.exists():
        return f"{name} is no longer where the index found it, so its pixels were not read"
    stop = threading.Event()
    watcher = _CancelWatch(cancel, stop)
    try:
        digest = sha256_item(path, stop)
    except OSError as exc:
        return f"{name} could not be read ({exc.strerror or exc}), so its pixels were not compared"
    finally:
        watcher.done()
    check_cancel(cancel)
    if digest != recorded_sha256:
        return f"{name} changed since it was indexed (its SHA-256 differs), so its pixels were not read"
    return None


class _CancelWatch:
    """Turns a cancel callback into the stop event a digest loop polls (checked every 0.2 s)."""

    def __init__(self, cancel: CancelCallback | None, stop: threading.Event) -> None:
        self._cancel, self._stop, self._end = cancel, stop, threading.Event()
        self._thread: threading.Thread | None = None
        if cancel is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._end.wait(0.2):
            if self._cancel is not None and self._cancel():
                self._stop.set()
                return

    def done(self) -> None:
        self._end.set()
        if self._thread is not None:
            self._thread.join()


def small_rgb(frame: TimedFrame, variant: Variant = IDENTITY) -> np.ndarray:
    """The frame as ``float32 (64, 64, 3)`` RGB over the region the fingerprint sees under
    ``variant`` (working image, black bars trimmed, the variant's region, then its orientation).

    Colour is kept (not only PDQ's luma) so a colour grade can be fitted: a saturation change
    moves each hue's luma differently, which no fit of luma onto luma undoes.
    """
    rgb = np.ascontiguousarray(frame.to_rgb(prep.WORK_SIZE, prep.WORK_SIZE))
    box = variant_box(prep.content_box_from_luma(prep.luma(rgb)), variant)
    region = np.moveaxis(rgb[box.y0:box.y1, box.x0:box.x1], -1, 0)
    small = np.moveaxis(prep.resample_luma(region, prep.HASH_SIZE), 0, -1)
    if variant.mirrored or variant.rotation:
        small = apply_image((variant.mirrored, variant.rotation), small)
    return np.ascontiguousarray(small, dtype=np.float32)


def frames_at(path: Path, stream: str, times_s: Sequence[float] | np.ndarray, variant: Variant = IDENTITY, *,
            cancel: CancelCallback | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The frames of ``stream`` shown at ``times_s`` (seconds from its first frame), as 64x64 RGB.

    Returns:
        ``(images uint8 (n, 64, 64, 3), found bool (n,))``; a time past the stream's end
        (by more than :data:`LATE_LIMIT_S`) is not found and its image is zeros.

    Raises:
        MediaError: the file cannot be read or has no such stream.
        Cancelled: ``cancel()`` turned true.
    """
    reader = reader_for(path)
    info = next((s for s in reader.streams(path) if s.key == stream), None)
    if info is None:
        raise MediaError(f"has no stream {stream!r} (the match named it); was the file replaced?", path=path)
    n = len(times_s)
    out = np.zeros((n, prep.HASH_SIZE, prep.HASH_SIZE, 3), np.uint8)
    found = np.zeros(n, bool)
    if n == 0:
        return out, found
    order = np.argsort(np.asarray(times_s, np.float64), kind="stable")
    wanted = [s_to_ns(max(0.0, float(times_s[i]))) for i in order]
    # A stretch late in a long file: start the read a little before the first wanted time (the
    # reader seeks to the keyframe before it) instead of decoding the file from its start.
    start = wanted[0] - s_to_ns(SEEK_LEAD_S)
    if getattr(reader, "resumable", False) and start >= s_to_ns(SEEK_FROM_S):
        frames = iter(reader.frames(path, info, cancel=cancel, start_ns=start))  # type: ignore[call-arg]
        first = next(frames, None)
        if first is not None and first.t_ns <= wanted[0]:
            return _take(frames, first, wanted, order, variant, cancel)
        _close(frames)  # no frame between the lead and the first wanted time: read from the start
    return _take(iter(reader.frames(path, info, cancel=cancel)), None, wanted, order, variant, cancel)


def _close(frames: Iterator[TimedFrame]) -> None:
    close = getattr(frames, "close", None)
    if close is not None:
        close()


def _take(frames: Iterator[TimedFrame], first: TimedFrame | None, wanted: Sequence[int], order: np.ndarray,
          variant: Variant, cancel: CancelCallback | None) -> tuple[np.ndarray, np.ndarray]:
    """The frames shown at the sorted times ``wanted`` (ns), put back in the caller's ``order``;
    ``first``: a frame already taken from ``frames`` (closed at the end)."""
    n = len(wanted)
    out = np.zeros((n, prep.HASH_SIZE, prep.HASH_SIZE, 3), np.uint8)
    found = np.zeros(n, bool)
    j = 0
    shown: TimedFrame | None = None
    shown_img: np.ndarray | None = None
    try:
        for fr in itertools.chain([] if first is None else [first], frames):
            check_cancel(cancel)
            while j < n and fr.t_ns > wanted[j]:
                # ``shown`` is on screen at wanted[j]; before the first frame the first one is.
                src = shown if shown is not None else fr
                if src is not shown or shown_img is None:
                    img = small_rgb(src, variant)
                    if src is shown:
                        shown_img = img
                else:
                    img = shown_img
                out[order[j]], found[order[j]] = img, True
                j += 1
            if j >= n:
                break
            shown, shown_img = fr, None
    finally:
        _close(frames)
    if shown is not None and j < n:
        img = small_rgb(shown, variant)
        limit = shown.t_ns + s_to_ns(LATE_LIMIT_S)
        while j < n and wanted[j] <= limit:
            out[order[j]], found[order[j]] = img, True
            j += 1
    return out, found
