"""Numbers, times and untrusted text as people read them, the same in the CLI, the HTML report and the app.

Numbers are rounded the way a buyer reads them (:func:`format_percent` never shows a 0
that hides a match nor a 100 that is not complete; :func:`format_duration` is the one
rounding rule for a duration everywhere), and every untrusted string (file names, labels
from a vendor's manifest) is neutralised with :func:`safe_text` before it is put into a sentence.
"""

from __future__ import annotations

import math
import unicodedata
from datetime import datetime, timezone

__all__ = ["format_amount", "format_clock", "format_date", "format_duration", "format_estimate",
           "format_percent", "pair_of_durations", "safe_text", "stream_words"]

_VISIBLE_OK = {"\t"}


def safe_text(value: object, *, max_len: int | None = None) -> str:
    """Make an untrusted string safe to show to a person.

    Control characters, bidirectional overrides/isolates (``U+202E`` can make
    ``gpj.exe`` read as ``exe.jpg``), zero-width and other invisible format
    characters, line/paragraph separators and lone surrogates are replaced by a
    visible ``[U+XXXX]`` marker, so nothing is hidden and nothing is reordered.
    This does not HTML-escape; HTML output escapes on top of it.

    Args:
        value: Any value; converted with ``str``.
        max_len: Optional cap; longer text is cut with an ellipsis.

    Returns:
        The neutralised text.
    """
    text = str(value)
    if text.isprintable():
        # Fast path (the HTML template calls this for every value it prints): a printable
        # string holds none of the categories replaced below, all of which are non-printable.
        result = text
    else:
        out: list[str] = []
        for ch in text:
            cat = unicodedata.category(ch)
            if ch not in _VISIBLE_OK and cat in ("Cc", "Cf", "Cs", "Zl", "Zp"):
                out.append(f"[U+{ord(ch):04X}]")
            else:
                out.append(ch)
        result = "".join(out)
    if max_len is not None and len(result) > max_len:
        result = result[: max(1, max_len - 1)] + "…"
    return result


def format_duration(seconds: float) -> str:
    """A duration in the unit a buyer would use: ``"12.4 h"``, ``"45 min"``, ``"3.5 min"``, ``"42 s"``,
    ``"4.2 s"``: one decimal under 10 of a unit (where it matters: 90 s is ``"1.5 min"``), whole
    numbers from 10 to 59. The unit is chosen after rounding (59.96 s is ``"1.0 min"``, never
    ``"60 s"``; 3599.96 s ``"1.0 h"``, never ``"60 min"``). This is the one rule for a duration:
    the app, the HTML report and the CLI all call it."""
    s = max(0.0, float(seconds))
    if round(s, 1) == 0:
        return "0 s"  # nothing at all: not "0.0 s" (an empty library's "0.0 s of footage")
    if round(s, 1) < 10:
        return f"{s:.1f} s"
    if round(s) < 60:
        return f"{s:.0f} s"
    minutes = s / 60
    if round(minutes, 1) < 10:
        return f"{minutes:.1f} min"
    if round(minutes) < 60:
        return f"{minutes:.0f} min"
    return f"{s / 3600:.1f} h"


def format_amount(seconds: float) -> str:
    """A per-file amount for a table cell: ``"–"`` for nothing worth naming (half a second or
    less), else :func:`format_duration`. The app and the HTML report show the same dash."""
    s = float(seconds or 0.0)
    return "–" if not s > 0.5 else format_duration(s)


def format_estimate(seconds: float) -> str:
    """A rough expected duration in words: ``"under a minute"``, ``"about 12 minutes"``, ``"about 2.5 hours"``."""
    s = max(0.0, float(seconds))
    if s < 45:
        return "under a minute"
    minutes = round(s / 60)
    if minutes < 90:
        return f"about {minutes} minute{'s' if minutes != 1 else ''}"
    return f"about {s / 3600:.1f} hours"


#: Under 3 minutes, "24 of 95 s" reads better than "0.4 of 1.6 min".
_SECONDS_READ_BETTER = 180.0


def pair_of_durations(part: float, whole: float) -> str:
    """``"12.4 of 20.0 h"``: both in the unit of the (rounded) whole; a small part reads ``"<0.1"``, not 0."""
    w = max(0.0, float(whole))
    p = max(0.0, min(float(part), w))
    if round(w) < _SECONDS_READ_BETTER:
        digits = 1 if round(w, 1) < 10 else 0
        unit, scale = "s", 1.0
    elif round(w / 60, 1) < 60:
        digits, unit, scale = 1, "min", 60.0
    else:
        digits, unit, scale = 1, "h", 3600.0
    small = 10.0 ** -digits
    part_text = (f"<{small:.{digits}f}" if 0 < p / scale < small / 2 else f"{p / scale:.{digits}f}")
    return f"{part_text} of {w / scale:.{digits}f} {unit}"


def format_percent(pct: float) -> str:
    """Round a percentage for people without over- or under-claiming.

    ``0.3`` reads ``"<1%"`` (never a 0 that hides a match) and ``99.7`` reads
    ``">99%"`` (never a 100 that is not complete).
    """
    p = float(pct)
    if p <= 0:
        return "0%"
    if p < 1:
        return "<1%"
    if 99 < p < 100:
        return ">99%"
    return f"{round(p)}%"


def format_clock(seconds: float) -> str:
    """A position in a file: ``"1:02:03.5"`` or ``"2:03.5"``.

    The time is rounded to tenths *before* it is split into hours, minutes and seconds,
    so 59.96 s reads ``"1:00.0"`` (never ``"0:60.0"``) and 3599.97 s ``"1:00:00.0"``.
    """
    s = float(seconds)
    if not math.isfinite(s):
        return "?"
    tenths = int(round(abs(s) * 10))
    sign = "-" if s < 0 and tenths else ""
    h, rem = divmod(tenths, 36000)
    m, t = divmod(rem, 600)
    sec = f"{t // 10:02d}.{t % 10}"
    if h:
        return f"{sign}{h}:{m:02d}:{sec}"
    return f"{sign}{m}:{sec}"


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def format_date(iso: str) -> str:
    """A timestamp for people: ``"2026-12-03T07:49:05Z"`` -> ``"3 December 2026, 07:49 UTC"``.

    Month names are English regardless of the system locale (the rest of the report is
    English). Unparsable text is returned neutralised but otherwise unchanged.
    """
    text = str(iso or "").strip()
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return safe_text(text, max_len=60)
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc)
        zone = " UTC"
    else:
        zone = ""
    return f"{dt.day} {_MONTHS[dt.month - 1]} {dt.year}, {dt:%H:%M}{zone}"


def stream_words(key: str) -> str:
    """A stream key for people: ``"v:0"`` (the first video track) needs no words,
    ``"v:2"`` reads ``"video track 3"``; topic names (``/camera/image``) are kept."""
    k = str(key or "")
    if k.startswith("v:") and k[2:].isdigit():
        n = int(k[2:])
        return "" if n == 0 else f"video track {n + 1}"
    return safe_text(k, max_len=120)
