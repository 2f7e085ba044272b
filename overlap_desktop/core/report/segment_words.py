"""Plain words for one matched stretch: its speed, its alterations, its chance of being a coincidence,
and the manipulations seen in one offered file (shared by the CLI, the HTML report and the app).
"""

from __future__ import annotations

import math

from overlap_desktop.core.report.formats import format_clock, format_duration, format_percent, safe_text
from overlap_desktop.core.report.model import FileResult, judged_unmatched_seconds, offered_pieces
from overlap_desktop.core.types import Segment, Variant

__all__ = ["SPEED_TOLERANCE", "ambiguous_episodes", "chance_words", "describe_flags", "describe_repeat",
           "describe_segment", "manipulation_words", "owned_moments", "speed_cell", "speed_text", "speed_words"]

#: Speeds within this distance of 1.0 count as "normal speed" in plain-word flags.
SPEED_TOLERANCE = 0.08

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
    if "crop" in flags and not any(s.variant.crop < 1.0 or s.variant.aspect < 1.0 for s in segs):
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


def owned_moments(file_result: FileResult, seg: Segment) -> int:
    """How many moments of one owned stream a counted ``seg``'s offered stretch matches (owned
    footage that repeats itself, a loop: every one is owned, which was copied is ambiguous)."""
    return sum(1 for s in file_result.segments
               if (s.corpus_file, s.corpus_stream, s.query_stream) == (seg.corpus_file, seg.corpus_stream,
                                                                      seg.query_stream)
               and min(s.query_end, seg.query_end) - max(s.query_start, seg.query_start)
               >= 0.5 * min(s.query_duration, seg.query_duration))


def describe_segment(seg: Segment, *, below_floor: bool = False, floor_seconds: float | None = None,
                     weak: bool = False, ambiguous: int = 0, moments: int = 0) -> str:
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
        moments: The stretch matches this many moments of the same owned footage equally (the
            owned footage repeats itself; below 2: it does not).
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
    if moments >= 2:
        text += (f" (the owned footage repeats itself: this stretch matches {moments} moments of it equally; "
                 "which moment was copied can't be told, but every one is owned)")
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
