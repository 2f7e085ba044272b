"""Plain words for a file's streams: each camera of each episode with its own owned, new and
"can't tell" time, and the cameras the lab does not own standing out.

The CLI, the HTML report, the CSV and the app (the per-camera breakdown of the selected file)
all say it with these functions, so they say the same.
"""

from __future__ import annotations

from overlap_desktop.core.report.formats import format_amount, format_duration, safe_text
from overlap_desktop.core.report.model import FileResult, StreamResult, new_camera_views

__all__ = ["new_camera_lines", "stream_label", "stream_lines", "stream_rows"]


def stream_label(s: StreamResult) -> str:
    """``"episode 3, cam_high"`` made safe for people (stream keys come from the vendor)."""
    return safe_text(s.label, max_len=120)


def new_camera_lines(f: FileResult) -> list[str]:
    """``"new camera view of owned episodes: cam_right_wrist, 20 s"``, one line per camera name
    (the seconds summed over the owned episodes it is new in); empty when there is none."""
    seconds: dict[str, float] = {}
    for s in new_camera_views(f):
        cam = safe_text(s.camera or s.stream, max_len=120)
        seconds[cam] = seconds.get(cam, 0.0) + s.new_seconds
    return [f"new camera view of owned episodes: {cam}, {format_duration(sec)}" for cam, sec in seconds.items()]


def stream_rows(f: FileResult) -> list[tuple[str, str, str, str, str, str]]:
    """Table rows for a file's streams: (stream, duration, owned, new, can't tell, not judged),
    amounts as the results table writes them. Empty for a file of one stream."""
    if len(f.streams) < 2:
        return []
    return [(stream_label(s), format_duration(s.duration_s), format_amount(s.owned_seconds),
             format_amount(s.new_seconds), format_amount(s.cant_tell_seconds),
             format_amount(s.indeterminate_seconds)) for s in f.streams]


def stream_lines(f: FileResult) -> list[str]:
    """One plain line per stream of a multi-stream file, then the new camera views:
    ``"episode 1, cam_high: 20 s; owned 19 s, new –, can't tell –, not judged 1.0 s"``."""
    out = [f"{label}: {dur}; owned {owned}, new {new}, can't tell {cant}, not judged {ind}"
           for label, dur, owned, new, cant, ind in stream_rows(f)]
    return new_camera_lines(f) + out
