"""Decode one owned frame for display (the GUI's "what does this match look like?").

Manifests carry no pixels, so a match can only be shown from the lab's own copy
of the footage. This module is Qt-free: it returns an RGB array and the caller
turns it into an image.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np

from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.types import CancelCallback, check_cancel, s_to_ns
from overlap_desktop.errors import MediaError

__all__ = ["frame_at"]


def _fit(width: int | None, height: int | None, max_size: tuple[int, int]) -> tuple[int, int]:
    """Largest even size within ``max_size`` keeping the aspect ratio (no upscaling)."""
    mw, mh = max_size
    if not width or not height:
        return mw - mw % 2, mh - mh % 2
    scale = min(mw / width, mh / height, 1.0)
    w = max(2, int(width * scale)) // 2 * 2
    h = max(2, int(height * scale)) // 2 * 2
    return w, h


def frame_at(path: str | os.PathLike[str], stream: str, t_s: float, *,
             max_size: tuple[int, int] = (640, 480), cancel: CancelCallback | None = None) -> np.ndarray:
    """Return the frame of ``stream`` shown at ``t_s`` seconds, as RGB ``uint8 (h, w, 3)``.

    Decodes from the start of the stream up to ``t_s`` (readers do not promise
    seeking), so late positions in long files take a while: call it in a worker.

    Args:
        path: The owned media file (a path from the lab's index).
        stream: The stream key (``"v:0"``, a topic name).
        t_s: Seconds from the stream's first frame; clamped to the last frame.
        max_size: Largest ``(width, height)`` returned; the aspect ratio is kept.
        cancel: Returns ``True`` to stop; checked between frames.

    Returns:
        The frame's pixels.

    Raises:
        MediaError: the file is missing, unreadable, or has no such stream.
        Cancelled: ``cancel`` asked to stop.
    """
    p = Path(path)
    if not p.exists():
        raise MediaError("the owned file is no longer where it was indexed", path=p)
    reader = reader_for(p)
    if getattr(reader, "sample_fps", None) is not None:
        # The shared reader may be set up for indexing, decoding only the frames its sampler
        # uses; a preview wants the exact frame shown at t, so it uses a copy that decodes all.
        reader = copy.copy(reader)
        reader.sample_fps = None  # type: ignore[attr-defined]
    infos = reader.streams(p)
    info = next((s for s in infos if s.key == stream), None)
    if info is None:
        raise MediaError(f"has no stream {stream!r} (it may have changed since it was indexed)", path=p)
    target = s_to_ns(max(0.0, float(t_s)))
    shown = None
    for frame in reader.frames(p, info, cancel=cancel):
        check_cancel(cancel)
        if frame.t_ns > target and shown is not None:
            break
        shown = frame
    if shown is None:
        raise MediaError("no frame could be decoded", path=p)
    w, h = _fit(info.width, info.height, max_size)
    return np.ascontiguousarray(shown.to_rgb(w, h))
