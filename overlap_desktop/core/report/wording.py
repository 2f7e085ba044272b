"""Plain words for reports, shared by the CLI, the HTML report and the app so they say the same.

Numbers are rounded the way a buyer reads them (:func:`format_percent` never shows a 0
that hides a match nor a 100 that is not complete), segments and files are described in
sentences, and every untrusted string (file names, labels from a vendor's manifest) is
neutralised with :func:`safe_text` before it is put into a sentence.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from overlap_desktop.core.report.model import (
    FileResult,
    Report,
    judged_unmatched_seconds,
    offered_pieces,
    repeats_checked,
)
from overlap_desktop.core.types import Segment, Variant

__all__ = ["SPEED_TOLERANCE", "ambiguous_episodes", "chance_words", "describe_flags", "describe_repeat",
           "describe_segment",
           "evidence_floor", "format_amount", "format_clock", "format_date", "format_duration", "format_estimate",
           "format_percent", "headline",
           "headline_details", "manifest_label", "manipulation_words", "new_footage_sentence", "safe_text",
           "speed_cell", "speed_text", "speed_words", "stream_words", "text_overlap_sentence"]

#: Speeds within this distance of 1.0 count as "normal speed" in plain-word flags.
SPEED_TOLERANCE = 0.08

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
    """A duration in the unit a buyer would use: ``"12.4 h"``, ``"3.5 min"``, ``"42 s"``; the unit is
    chosen after rounding (59.96 s is ``"1.0 min"``, never ``"60 s"``; 3599.96 s ``"1.0 h"``)."""
    s = max(0.0, float(seconds))
    if round(s, 1) < 10:
        return f"{s:.1f} s"
    if round(s) < 60:
        return f"{s:.0f} s"
    if round(s / 60, 1) < 60:
        return f"{s / 60:.1f} min"
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


def _pair_of_durations(part: float, whole: float) -> str:
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


#: Speeds people use when re-timing footage; a measured speed within 3% of one is shown as it
#: (the measurement is a line fit over sampled frames: 0.49 means "half speed").
_NICE_SPEEDS = (0.25, 1 / 3, 0.5, 2 / 3, 0.75, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)


def _format_speed(speed: float) -> str:
    a = abs(float(speed))
    for nice in _NICE_SPEEDS:
        if abs(a - nice) <= 0.03 * nice:
            a = nice
            break
    return f"{a:.2f}".rstrip("0").rstrip(".") + "x"


def _speed_words(speed: float) -> str | None:
    """Plain words for a segment's speed, or ``None`` at normal speed."""
    a = abs(speed)
    if a < 1.0 - SPEED_TOLERANCE:
        return f"slowed to {_format_speed(a)}"
    if a > 1.0 + SPEED_TOLERANCE:
        return f"sped up to {_format_speed(a)}"
    return None


def _speed_interval(seg: Segment) -> tuple[float, float] | None:
    """The 95% interval of ``|speed|`` as ``(low, high)``, or ``None`` when not measured."""
    lo, hi = seg.speed_low, seg.speed_high
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    a, b = sorted((abs(float(lo)), abs(float(hi))))
    if (lo < 0) != (hi < 0):  # an interval straddling zero holds every |speed| up to its edges
        a = 0.0
    return a, b


def speed_words(seg: Segment) -> str | None:
    """Plain words for a segment's speed (``"slowed to 0.5x"``), or ``None`` at normal speed.

    With a measured interval (``speed_low``/``speed_high``) the words are used only when
    the whole interval lies below or above normal speed: a short identical copy measured
    at 0.9x with an interval of 0.7x-1.1x is *not* called slowed. Older reports without an
    interval fall back to a fixed tolerance around 1.0.
    """
    iv = _speed_interval(seg)
    if iv is None:
        return _speed_words(seg.speed)
    lo, hi = iv
    if hi < 1.0:
        return f"slowed to {_format_speed(seg.speed)}"
    if lo > 1.0:
        return f"sped up to {_format_speed(seg.speed)}"
    return None


def speed_text(seg: Segment) -> str:
    """The speed as a number with its interval when known: ``"0.5x (0.48–0.52x)"``.

    Reversed copies are marked ``"reversed 1x"``; see :func:`speed_words` for the sentence form.
    """
    rev = "reversed " if seg.speed < 0 else ""
    iv = _speed_interval(seg)
    if iv is None:
        return f"{rev}{_format_speed(seg.speed)}"
    lo, hi = iv
    return f"{rev}{_format_speed(seg.speed)} ({_plain_speed(lo)}–{_plain_speed(hi)}x)"


def speed_cell(seg: Segment) -> str:
    """A segment's speed for a table cell, the same in the app and the HTML report: ``"normal
    (0.9–1.02x)"`` unless :func:`speed_words` calls it changed, then as :func:`speed_text`;
    reversed copies start with ``"reversed, "``."""
    rev = "reversed, " if seg.speed < 0 else ""
    if speed_words(seg) is None:
        iv = _speed_interval(seg)
        return rev + "normal" + (f" ({_plain_speed(iv[0])}–{_plain_speed(iv[1])}x)" if iv else "")
    return rev + speed_text(seg).removeprefix("reversed ")


def _plain_speed(a: float) -> str:
    """A speed bound with two decimals and no snapping to a nice value."""
    return f"{abs(a):.2f}".rstrip("0").rstrip(".") or "0"


def chance_words(chance: float | None, *, short: bool = False) -> str:
    """A segment's chance of being a coincidence in plain words.

    ``chance`` is an expected number of lines this strong that chance alone would
    produce (see :class:`~overlap_desktop.core.types.Segment`). Examples: ``1e-9`` ->
    ``"chance of a coincidence like this: about 1 in a billion"``; ``3e-5`` -> ``"... about
    1 in 30,000"``; ``2.0`` -> ``"... high (about 2 such lines expected by chance)"``.
    ``None`` (not computed, e.g. an older report) gives ``""``. ``short`` leaves out the
    leading "chance of a coincidence like this: " (for a table column of that name).
    """
    if chance is None or not math.isfinite(float(chance)) or float(chance) < 0:
        return ""
    c = float(chance)
    lead = "" if short else "chance of a coincidence like this: "
    if c >= 0.5:
        many = f"{round(c):,}" if c < 1.5 or c >= 10 else f"{c:.2g}"
        return lead + f"high (about {many} such line{'s' if c >= 1.5 else ''} expected by chance)"
    if c < 1e-15:
        # The figure itself (JSON, CSV) keeps ranking stronger evidence; words stop here.
        return lead + "less than 1 in 10^15"
    return lead + f"about 1 in {_one_in(1.0 / c)}"


def _one_in(n: float) -> str:
    """``n`` rounded to one significant figure, named for people: ``"30,000"``, ``"a billion"``."""
    exp = math.floor(math.log10(n))
    mant = round(n / 10 ** exp)
    if mant >= 10:
        mant, exp = 1, exp + 1
    for power, name in ((12, "trillion"), (9, "billion"), (6, "million")):
        if exp >= power:
            k = mant * 10 ** (exp - power)
            return f"a {name}" if k == 1 else f"{k:,} {name}"
    return f"{mant * 10 ** exp:,}"

def _variant_words(v: Variant) -> list[str]:
    words = v.describe()
    return [w for w in words.split(", ") if w] if words else []


def _source_groups(pieces: list[list[Segment]]) -> int:
    """How many distinct sources the pieces come from: pieces that share an owned file
    are one source (union-find over the pieces' file sets)."""
    parent = list(range(len(pieces)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        for sg in piece:
            j = owner.setdefault(sg.corpus_file, i)
            parent[find(i)] = find(j)
    return len({find(i) for i in range(len(pieces))})


def describe_flags(file_result: FileResult) -> list[str]:
    """The manipulations seen in one offered file, in plain words.

    Words come from the reported segments when they carry the detail (the actual
    speed, crop depth and side) and fall back to the matcher's machine flags
    otherwise, e.g. ``["slowed to 0.5x", "mirrored", "cropped bottom 18%",
    "spliced from 2 sources"]``. "Spliced" is said only for pieces that follow each
    other in offered time; one stretch matching several owned files (copies of each
    other) reads ``"matches footage you own in 2 files"``. Below-floor and weak evidence
    are not described here.

    Args:
        file_result: One file of a report.

    Returns:
        Phrases in a stable order, without duplicates.
    """
    out: dict[str, None] = {}
    segs = list(file_result.segments)
    flags = set(file_result.flags)
    for s in segs:
        w = speed_words(s)
        if w:
            out.setdefault(w, None)
    # Machine flags stand in only when no segment carries the detail (an interval that
    # includes normal speed is detail too: it says "not shown to be slowed").
    detail = bool(segs)
    if "slowdown" in flags and not detail:
        out.setdefault("slowed down", None)
    if "speedup" in flags and not detail:
        out.setdefault("sped up", None)
    if any(s.speed < 0 for s in segs) or "reversed" in flags:
        out.setdefault("reversed", None)
    for s in segs:
        for w in _variant_words(s.variant):
            out.setdefault(w, None)
    if "mirror" in flags and not any(s.variant.mirrored for s in segs):
        out.setdefault("mirrored", None)
    if "crop" in flags and not any(s.variant.crop < 1.0 for s in segs):
        out.setdefault("cropped", None)
    if "edge-crop" in flags and not any(s.variant.edge for s in segs):
        out.setdefault("edge cropped", None)
    if "rotation" in flags and not any(s.variant.rotation for s in segs):
        out.setdefault("rotated", None)
    pieces = offered_pieces(segs)
    if len(pieces) >= 2:
        n_sources = _source_groups(pieces)
        if n_sources >= 2:
            out.setdefault(f"spliced from {n_sources} sources", None)
        else:
            out.setdefault(f"{len(pieces)} pieces of 1 owned file", None)
    elif "splice" in flags and not segs:
        out.setdefault("spliced", None)
    if any(len({s.corpus_file for s in piece}) >= 2 for piece in pieces):
        n_files = len({s.corpus_file for s in segs})
        out.setdefault(f"matches footage you own in {n_files} files", None)
    if file_result.repeats and file_result.repeated_seconds > 0:
        others = {s.corpus_file for s in file_result.repeats} - {file_result.query_file}
        if not others:
            what = "itself"
        elif len(others) == 1:
            what = "another offered file"
        else:
            what = f"{len(others)} other offered files"
        out.setdefault(f"repeats {what} ({format_duration(file_result.repeated_seconds)})", None)
    unmatched = max(0.0, judged_unmatched_seconds(file_result) - file_result.repeated_seconds)
    if segs and unmatched > 0 and file_result.duration_s > 0:
        share = 100.0 * unmatched / file_result.duration_s
        if share > 5:
            out.setdefault(f"partly new ({format_percent(share)} unmatched)", None)
    return list(out)


def manipulation_words(seg: Segment) -> list[str]:
    words = []
    w = speed_words(seg)
    if w:
        words.append(w)
    if seg.speed < 0:
        words.append("reversed")
    words.extend(_variant_words(seg.variant))
    return words


def ambiguous_episodes(file_result: FileResult, seg: Segment) -> int:
    """How many owned streams the offered stretch of an ambiguous ``seg`` matches about equally."""
    names = {(s.corpus_file, s.corpus_stream) for s in file_result.ambiguous
             if min(s.query_end, seg.query_end) - max(s.query_start, seg.query_start)
             >= 0.5 * min(s.query_duration, seg.query_duration)}
    return max(2, len(names))


def describe_segment(seg: Segment, *, below_floor: bool = False, floor_seconds: float | None = None,
                     weak: bool = False, ambiguous: int = 0) -> str:
    """One matched stretch in plain words.

    Example: ``"offered 0:10.0–0:30.0 matches owned kitchen/a.mp4 1:00.0–1:10.0,
    slowed to 0.5x, mirrored, chance of a coincidence like this: about 1 in a billion"``.
    File names are passed through :func:`safe_text`.

    Args:
        seg: The segment.
        below_floor: Say that the stretch is below the evidence floor.
        floor_seconds: The floor, named when ``below_floor``.
        weak: Say that the stretch is weak evidence (too likely a coincidence to count).
        ambiguous: The stretch matches this many owned episodes about equally (0: it does not).
    """
    parts = [
        f"offered {format_clock(seg.query_start)}–{format_clock(seg.query_end)} matches owned "
        f"{safe_text(seg.corpus_file)} {format_clock(seg.corpus_start)}–{format_clock(seg.corpus_end)}"
    ]
    parts.extend(manipulation_words(seg))
    cw = chance_words(seg.chance)
    if cw:
        parts.append(cw)
    text = ", ".join(parts)
    if below_floor:
        fl = f" of {floor_seconds:g} s" if floor_seconds is not None else ""
        text += f" (below the evidence floor{fl}: listed as evidence, not counted)"
    if weak:
        text += " (weak evidence: too likely a coincidence to count; listed, not counted)"
    if ambiguous:
        text += (f" (the same motion as {ambiguous} owned episodes; can't tell which, if any, was copied: "
                 "not counted as owned, not counted as new)")
    return text


def describe_repeat(seg: Segment) -> str:
    """A repeat inside the offer in plain words.

    Example: ``"offered 0:00.0–0:30.0 repeats offered a.mp4 0:00.0–0:15.0, slowed to 0.5x"``
    (``corpus_*`` of a repeat is the *other offered* file).
    """
    parts = [
        f"offered {format_clock(seg.query_start)}–{format_clock(seg.query_end)} repeats offered "
        f"{safe_text(seg.corpus_file)} {format_clock(seg.corpus_start)}–{format_clock(seg.corpus_end)}"
    ]
    parts.extend(manipulation_words(seg))
    return ", ".join(parts)


def evidence_floor(report: Report) -> float | None:
    """The evidence floor (seconds) recorded in the report's settings, or ``None``."""
    for key in ("floor_seconds", "floor"):
        v = report.settings.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def manifest_label(report: Report, key: str) -> str | None:
    """A label from the report's manifest facts, neutralised and cut to 80 characters, or ``None``."""
    v = report.manifest.get(key)
    if isinstance(v, str) and v.strip():
        return safe_text(v, max_len=80)
    return None


def headline(report: Report) -> str:
    """The answer in one plain sentence.

    Example: ``"62% of these hours (12.4 of 20.0 h) match footage you already own."``
    The wording follows ``report.kind``; labels from manifests are neutralised
    with :func:`safe_text` (escape again for HTML).
    """
    pct = format_percent(report.overlap_percent)
    amounts = _pair_of_durations(report.matched_seconds, report.offered_seconds)
    if report.kind == "self-dedupe":
        return f"{pct} of the hours in this library ({amounts}) duplicate other footage in the same library."
    if report.kind == "compare-offers":
        a = manifest_label(report, "label")
        b = manifest_label(report, "other_label")
        other = report.settings.get("other_manifest")
        other_label = other.get("label") if isinstance(other, Mapping) else None
        if b is None and isinstance(other_label, str) and other_label.strip():
            b = safe_text(other_label, max_len=80)
        first = f"offer A (“{a}”)" if a else "offer A"
        second = f"offer B (“{b}”)" if b else "offer B"
        return f"{pct} of {first}'s hours ({amounts}) also appear in {second}."
    if report.kind == "audit":
        return f"{pct} of the sample you were shown ({amounts}) is covered by the manifest."
    # "These hours" only when there are hours: a 31 s offer is "this footage".
    if report.offered_seconds >= 3600:
        return f"{pct} of these hours ({amounts}) match footage you already own."
    return f"{pct} of this footage ({amounts}) matches footage you already own."


def new_footage_sentence(report: Report) -> str:
    """The figure a buyer pays for, in one sentence (``compare`` reports; ``""`` otherwise).

    Example: ``"New footage you would actually get: 0.5 of 2.0 h (25%): not owned and not
    repeated inside the offer."`` New footage is judged time that is neither owned nor a
    repeat of other offered footage; time that could not be judged is never counted as new.
    Reports made before repeats were checked say so instead of claiming there are none.
    """
    if report.kind != "compare":
        return ""
    amounts = _pair_of_durations(report.new_seconds, report.offered_seconds)
    offered = report.offered_seconds
    share = format_percent(100.0 * report.new_seconds / offered) if offered > 0 else "0%"
    if repeats_checked(report):
        tail = (f" Can't tell for {format_duration(report.cant_tell_seconds)} (counted neither way)."
                if report.cant_tell_seconds > 0 else "")
        return (f"New footage you would actually get: {amounts} ({share}), not owned and not repeated "
                f"inside the offer.{tail}")
    return (f"New footage you would get: {amounts} ({share}), not owned (this report did not check the "
            "offer for repeats inside it).")


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


def headline_details(report: Report) -> list[str]:
    """Further plain sentences that qualify the headline (real footage behind
    speed-changed copies, below-floor evidence, indeterminate time)."""
    out: list[str] = []
    n_files = len(report.files)
    matched_files = sum(1 for f in report.files if f.segments)
    if n_files:
        out.append(f"{matched_files} of {n_files} offered files contain matched footage.")
    unmatched = max(0.0, report.offered_seconds - report.matched_seconds - report.indeterminate_seconds
                    - report.cant_tell_seconds)
    if report.kind == "compare" and report.matched_seconds > 0 and unmatched > 0:
        share = format_percent(100.0 * unmatched / report.offered_seconds)
        # "matched nothing you own", not "new": footage outside the index may still exist elsewhere.
        out.append(f"The other {format_duration(unmatched)} ({share}) matched nothing in your library.")
    if report.matched_seconds > 0 and report.real_footage_seconds < report.matched_seconds * 0.95:
        out.append(f"The matched {format_duration(report.matched_seconds)} hold only "
                   f"{format_duration(report.real_footage_seconds)} of real footage: "
                   "some copies were slowed down to fill more hours.")
    elif report.matched_seconds > 0 and report.real_footage_seconds > report.matched_seconds * 1.05:
        out.append(f"The matched {format_duration(report.matched_seconds)} compress "
                   f"{format_duration(report.real_footage_seconds)} of owned footage (sped-up copies).")
    if report.repeated_seconds > 0 and report.offered_seconds > 0:
        share = format_percent(100.0 * report.repeated_seconds / report.offered_seconds)
        out.append(f"{format_duration(report.repeated_seconds)} ({share}) of the offer repeats other footage "
                   "in the same offer: listed, not counted as new.")
    n_weak = sum(len(f.weak) for f in report.files)
    if n_weak:
        out.append(f"{n_weak} weak match{'es' if n_weak != 1 else ''} (too likely a coincidence to count) "
                   f"{'are' if n_weak != 1 else 'is'} listed separately and not counted.")
    n_below = sum(len(f.below_floor) for f in report.files)
    if n_below:
        fl = evidence_floor(report)
        fl_txt = f"{fl:g} s " if fl is not None else ""
        out.append(f"{n_below} shorter match{'es' if n_below != 1 else ''} below the {fl_txt}evidence floor "
                   f"{'are' if n_below != 1 else 'is'} listed separately and not counted.")
    if report.indeterminate_seconds > 0:
        out.append(f"{format_duration(report.indeterminate_seconds)} could not be judged (static or "
                   "featureless footage) and counts neither way.")
    n_amb = len({(f.query_file, s.query_start) for f in report.files for s in f.ambiguous})
    if n_amb:
        out.append(f"{n_amb} offered stretch{'es' if n_amb != 1 else ''} show{'' if n_amb != 1 else 's'} the "
                   "same motion as several owned episodes (scripted repeats, a rig's resting pose): can't "
                   "tell which, if any, was copied, so not counted as owned.")
    if report.cant_tell_seconds > 0:
        out.append(f"Can't tell for {format_duration(report.cant_tell_seconds)}: the evidence there (short, "
                   "weak, shared by several owned episodes, or on footage too still to place in time) "
                   "shows neither that you own it nor that it is new. Not counted either way.")
    if report.text_overlap:
        out.append(text_overlap_sentence(report.text_overlap))
    return out


def text_overlap_sentence(block: Mapping[str, Any]) -> str:
    """"N of M of your evaluation examples share an n-gram with the vendor's annotations"."""
    if block.get("status") != "checked":
        return "Annotation overlap could not be checked: the manifest carries no annotation n-gram hashes."
    m, n = block.get("matched", 0), block.get("examples", 0)
    return (f"{m} of {n} of your evaluation examples share an n-gram with the vendor's annotations "
            f"(n = {safe_text(block.get('n'))}, {safe_text(block.get('tokenizer'), max_len=64)}).")

