"""The comparison report: data model, JSON (versioned), HTML and CSV.

The data model is produced by :mod:`overlap_desktop.core.match.compare` and rendered here.
The JSON layout is specified in docs/report-schema.md; bump :data:`REPORT_SCHEMA`
on any incompatible change.

Every string in a report that came from a manifest or a file name is untrusted: a
vendor chooses it. Renderers for people (HTML, CSV, terminal lines) pass such
strings through :func:`safe_text` (control, bidi-override and invisible characters
become visible ``[U+XXXX]`` markers) and HTML additionally escapes them. The JSON
keeps the exact strings, because it is data that must round-trip.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape as _html_escape
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.core.types import Segment, Span, Variant
from overlap_desktop.errors import InputError

__all__ = [
    "REPORT_SCHEMA",
    "FileResult",
    "Report",
    "describe_flags",
    "describe_segment",
    "format_clock",
    "format_duration",
    "format_percent",
    "headline",
    "headline_details",
    "load_report_json",
    "report_from_dict",
    "report_to_dict",
    "safe_text",
    "text_overlap_sentence",
    "write_report_csv",
    "write_report_html",
    "write_report_json",
]

#: Identifier and version of the report JSON format.
REPORT_SCHEMA = "overlap.report/2"
_SCHEMA_PREFIX = "overlap.report/"
_SCHEMA_MAJOR = 2
#: Older versions :func:`load_report_json` still reads (missing fields get defaults; see
#: docs/report-schema.md, "Versioning").
_SCHEMA_READABLE = (1, 2)

#: Speeds within this distance of 1.0 count as "normal speed" in plain-word flags.
SPEED_TOLERANCE = 0.08
#: Points per segment kept in the JSON (and plotted): enough to see the line and its noise.
MAX_PAIRS_PER_SEGMENT = 400
#: Points kept over a whole report, so the JSON of a 10,000-segment offer stays a few MB
#: (each segment keeps at least :data:`MIN_PAIRS_PER_SEGMENT`).
MAX_PAIRS_PER_REPORT = 200_000
MIN_PAIRS_PER_SEGMENT = 24
#: Plots drawn in the HTML report; beyond this the file gets slow to open.
MAX_HTML_PLOTS = 60
#: File rows and matched-stretch rows written in the HTML report; beyond these the rest is
#: summarised in one line (the JSON and CSV keep everything). A manifest of many thousands of
#: files must not make a report a browser cannot open (issue 21: output bounded by a budget).
MAX_HTML_FILE_ROWS = 2000
MAX_HTML_SEGMENT_ROWS = 2000


@dataclass(slots=True)
class FileResult:
    """Everything the report says about one offered (query) file.

    Attributes:
        query_file: Name of the offered file as in the manifest.
        duration_s: Its duration (seconds of offered footage).
        matched_seconds: Offered seconds covered by reported segments (union, not sum).
        real_footage_seconds: Owned seconds behind those segments (a 0.5x copy of 10 s
            of owned footage offers 20 s but holds 10 s of real footage).
        segments: Matched stretches at or above the evidence floor.
        below_floor: Matched stretches shorter than the floor (evidence, not counted).
        indeterminate: Offered time excluded from matching (featureless, static).
        flags: Machine words: ``slowdown``, ``speedup``, ``reversed``, ``mirror``,
            ``crop``, ``edge-crop``, ``rotation``, ``splice``.
        episodes: For datasets with episodes (LeRobot): segments mapped to offered and
            owned episodes (see core/annotations.py and docs/report-schema.md).
        weak: Matched stretches whose chance of being a coincidence is above the
            reporting threshold (``Segment.chance``): listed as weak evidence, not counted.
        repeats: Stretches of this offered file that repeat *other offered footage* (the
            offer compared with itself; ``corpus_file`` is the other offered file). Only the
            later occurrence of a repeated stretch is listed, so each repeat counts once.
        repeated_seconds: Offered seconds of this file that repeat earlier offered footage
            and are not already owned (union of ``repeats`` minus owned and unjudged time).
        new_seconds: What a buyer would actually get from this file: judged seconds that
            are neither owned nor a repeat inside the offer.
    """

    query_file: str
    duration_s: float
    matched_seconds: float = 0.0
    real_footage_seconds: float = 0.0
    segments: list[Segment] = field(default_factory=list)
    below_floor: list[Segment] = field(default_factory=list)
    indeterminate: list[Span] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    weak: list[Segment] = field(default_factory=list)
    repeats: list[Segment] = field(default_factory=list)
    repeated_seconds: float = 0.0
    new_seconds: float = 0.0

    @property
    def matched_percent(self) -> float:
        return 0.0 if self.duration_s <= 0 else min(100.0, 100.0 * self.matched_seconds / self.duration_s)

    @property
    def indeterminate_seconds(self) -> float:
        """Offered seconds of this file that could not be judged."""
        return sum(s.duration_s for s in self.indeterminate)


@dataclass(slots=True)
class Report:
    """A comparison's answer to "how much of this offer do we already own?".

    Attributes:
        kind: ``compare``, ``self-dedupe``, ``compare-offers`` or ``audit``.
        offered_seconds: Total offered footage (seconds).
        matched_seconds: Offered seconds matching owned footage.
        real_footage_seconds: Owned seconds behind the matches.
        indeterminate_seconds: Offered seconds that could not be judged.
        files: Per offered file.
        manifest: Facts about the offer (label, Merkle root, files, hours, algo/prep).
        settings: Settings that shaped the answer (algo, prep, floor, thresholds, index identity).
        created: ISO-8601 UTC time the report was made.
        tool_version: Version of overlap desktop that made the report (filled in when
            serialised if empty).
        text_overlap: Annotation overlap of the lab's evaluation set with the vendor's
            hashed annotation n-grams (JSON-ready block, docs/report-schema.md), or ``None``
            when not checked.
        repeated_seconds: Offered seconds repeating other offered footage (sum of files').
        new_seconds: New footage the buyer would actually get (sum of files').
    """

    kind: str
    offered_seconds: float
    matched_seconds: float
    real_footage_seconds: float
    indeterminate_seconds: float = 0.0
    files: list[FileResult] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    tool_version: str = ""
    text_overlap: dict[str, Any] | None = None
    repeated_seconds: float = 0.0
    new_seconds: float = 0.0

    @property
    def overlap_percent(self) -> float:
        if self.offered_seconds <= 0:
            return 0.0
        return min(100.0, 100.0 * self.matched_seconds / self.offered_seconds)


# =========================================================================== plain words


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


def _esc(value: object) -> str:
    """HTML-escape an untrusted value for element text and attribute values."""
    return _html_escape(safe_text(value), quote=True)


def format_duration(seconds: float) -> str:
    """A duration in the unit a buyer would use: ``"12.4 h"``, ``"3.5 min"``, ``"42 s"``."""
    s = max(0.0, float(seconds))
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def _pair_of_durations(part: float, whole: float) -> str:
    """``"12.4 of 20.0 h"``: both numbers in the unit chosen for the whole."""
    w = max(0.0, float(whole))
    p = max(0.0, float(part))
    if w >= 3600:
        return f"{p / 3600:.1f} of {w / 3600:.1f} h"
    if w >= 60:
        return f"{p / 60:.1f} of {w / 60:.1f} min"
    return f"{p:.1f} of {w:.1f} s"


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
        return lead + "far less than 1 in a trillion"
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


class DistanceLevel(NamedTuple):
    """One level of the colour scale for match distances.

    Attributes:
        upper: Largest Hamming distance (of 256 bits) in this level.
        colour: ``#rrggbb``.
        words: What the level means to a person ("near-identical" ... "weak").
    """

    upper: float
    colour: str
    words: str


#: THE colour scale for how alike matched frames are, used by the HTML report and the app
#: (one definition, so a legend means the same everywhere). Green is near-identical, red is
#: loose; PDQ copies of the same frame usually sit in the first three levels.
DISTANCE_SCALE: tuple[DistanceLevel, ...] = (
    DistanceLevel(8, "#1a9850", "near-identical"),
    DistanceLevel(16, "#66bd63", "very close"),
    DistanceLevel(24, "#a6d96a", "close"),
    DistanceLevel(32, "#fdae61", "similar"),
    DistanceLevel(48, "#f46d43", "loose"),
    DistanceLevel(256, "#d73027", "weak"),
)


def _distance_level(d: float) -> DistanceLevel:
    v = float(d)
    if not math.isfinite(v):
        return DISTANCE_SCALE[-1]
    for level in DISTANCE_SCALE:
        if v <= level.upper:
            return level
    return DISTANCE_SCALE[-1]


def distance_colour(d: float) -> str:
    """The colour of the :data:`DISTANCE_SCALE` level holding distance ``d``."""
    return _distance_level(d).colour


def distance_words(d: float) -> str:
    """How alike two matched frames are, in words (``"near-identical"``), for labels and tips."""
    return _distance_level(d).words


def _variant_words(v: Variant) -> list[str]:
    words = v.describe()
    return [w for w in words.split(", ") if w] if words else []


def offered_pieces(segments: Iterable[Segment]) -> list[list[Segment]]:
    """Group segments into pieces of *offered* time.

    Segments whose offered spans overlap by at least half of the shorter one describe the
    same offered stretch (e.g. one stretch matching two owned files that are copies of each
    other); they form one piece. Pieces follow each other in offered time, which is what
    a splice is. Pieces are returned in offered-time order.
    """
    segs = sorted(segments, key=lambda x: (x.query_start, x.query_end))
    pieces: list[list[Segment]] = []
    spans: list[tuple[float, float]] = []
    for sg in segs:
        for k, (a, b) in enumerate(spans):
            ov = min(b, sg.query_end) - max(a, sg.query_start)
            shorter = min(b - a, sg.query_duration)
            if ov > 0 and ov >= 0.5 * shorter:
                pieces[k].append(sg)
                spans[k] = (min(a, sg.query_start), max(b, sg.query_end))
                break
        else:
            pieces.append([sg])
            spans.append((sg.query_start, sg.query_end))
    return pieces


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


def judged_unmatched_seconds(file_result: FileResult) -> float:
    """Offered seconds of a file that were judged and match nothing owned.

    Time that could not be judged (static, featureless) is neither matched nor unmatched.
    """
    f = file_result
    return max(0.0, f.duration_s - f.matched_seconds - f.indeterminate_seconds)


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


def _manipulation_words(seg: Segment) -> list[str]:
    words = []
    w = speed_words(seg)
    if w:
        words.append(w)
    if seg.speed < 0:
        words.append("reversed")
    words.extend(_variant_words(seg.variant))
    return words


def describe_segment(seg: Segment, *, below_floor: bool = False, floor_seconds: float | None = None,
                     weak: bool = False) -> str:
    """One matched stretch in plain words.

    Example: ``"offered 0:10.0–0:30.0 matches owned kitchen/a.mp4 1:00.0–1:10.0,
    slowed to 0.5x, mirrored, chance of a coincidence like this: about 1 in a billion"``.
    File names are passed through :func:`safe_text`.

    Args:
        seg: The segment.
        below_floor: Say that the stretch is below the evidence floor.
        floor_seconds: The floor, named when ``below_floor``.
        weak: Say that the stretch is weak evidence (too likely a coincidence to count).
    """
    parts = [
        f"offered {format_clock(seg.query_start)}–{format_clock(seg.query_end)} matches owned "
        f"{safe_text(seg.corpus_file)} {format_clock(seg.corpus_start)}–{format_clock(seg.corpus_end)}"
    ]
    parts.extend(_manipulation_words(seg))
    cw = chance_words(seg.chance)
    if cw:
        parts.append(cw)
    text = ", ".join(parts)
    if below_floor:
        fl = f" of {floor_seconds:g} s" if floor_seconds is not None else ""
        text += f" (below the evidence floor{fl}: listed as evidence, not counted)"
    if weak:
        text += " (weak evidence: too likely a coincidence to count; listed, not counted)"
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
    parts.extend(_manipulation_words(seg))
    return ", ".join(parts)


def _floor(report: Report) -> float | None:
    for key in ("floor_seconds", "floor"):
        v = report.settings.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _label(report: Report, key: str) -> str | None:
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
        a = _label(report, "label")
        b = _label(report, "other_label")
        other = report.settings.get("other_manifest")
        other_label = other.get("label") if isinstance(other, Mapping) else None
        if b is None and isinstance(other_label, str) and other_label.strip():
            b = safe_text(other_label, max_len=80)
        first = f"offer A (“{a}”)" if a else "offer A"
        second = f"offer B (“{b}”)" if b else "offer B"
        return f"{pct} of {first}'s hours ({amounts}) also appear in {second}."
    if report.kind == "audit":
        return f"{pct} of the sample you were shown ({amounts}) is covered by the manifest."
    return f"{pct} of these hours ({amounts}) match footage you already own."


#: ``Report.settings`` key recording that the offer was compared with itself
#: (:mod:`overlap_desktop.core.match.repeats`); reports without it never checked for repeats.
REPEATS_SETTING = "offer_repeats"


def repeats_checked(report: Report) -> bool:
    """True when the report's offer was compared with itself for internal repeats."""
    block = report.settings.get(REPEATS_SETTING)
    return isinstance(block, Mapping) and bool(block.get("checked"))


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
        return (f"New footage you would actually get: {amounts} ({share}), not owned and not repeated "
                "inside the offer.")
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


#: The user-facing words of overlap desktop and what they mean, shared by the HTML report,
#: the app (tooltips, help) and docs/glossary.md (a test keeps the three in step).
GLOSSARY: dict[str, str] = {
    "owned footage": "Footage you already have: the files in your library.",
    "offered footage": "The footage a seller offers you, described by the seller's manifest.",
    "library": "The fingerprints of your owned footage that overlap desktop keeps to compare offers with. "
               "It holds fingerprints only, never copies of your videos.",
    "manifest": "A file from the seller listing each offered file with its size, checksum and fingerprints, "
                "so you can screen an offer without receiving the footage.",
    "seal": "A 64-character code computed from everything in the manifest (its Merkle root). Quote it when "
            "you buy: the delivered files can later be checked against exactly this manifest.",
    "match": "A stretch of offered footage that shows the same pictures as a stretch of owned footage, even "
             "if re-encoded, cropped, mirrored or played at another speed.",
    "new footage": "Offered time that was judged and is neither owned nor a repeat of other footage in the "
                   "same offer: what you would actually get by buying.",
    "repeat": "A stretch of the offer that shows the same footage as another part of the offer (for example "
              "a file that is another offered file slowed down). One copy is listed: the one that bills more "
              "time, or at the same speed the later one.",
    "real footage": "How much owned footage lies behind matched offered time. A copy slowed to half speed "
                    "offers twice the hours of the real footage it holds.",
    "evidence floor": "The shortest match that is counted (10 seconds unless you change it). Shorter matches "
                      "are listed as evidence but not counted.",
    "weak evidence": "A match that could too easily be a coincidence (for example two recordings of the same "
                     "scene). It is listed so nothing is hidden, but not counted.",
    "chance of a coincidence": "How often a match at least this strong would turn up by chance alone in "
                               "this comparison. \"About 1 in a billion\" means it is almost certainly a "
                               "copy.",
    "could not be judged": "Offered time with too little visual detail to compare (a still or blank "
                           "picture). It counts neither as matched nor as new.",
    "how alike": "How close matched frames are, from near-identical through very close, close, similar and "
                 "loose to weak. Copies of the same frame are usually near-identical to close.",
    "speed": "Playback speed of the offered copy compared with the owned original: 0.5x is slowed to half "
             "speed. A range is shown when the speed is measured; \"slowed\" or \"sped up\" is said only "
             "when the whole range is off normal speed.",
    "splice": "Pieces that follow each other in the offered file but come from different owned footage.",
    "present and exact": "A delivered file with exactly the bytes the manifest quoted (same size and "
                         "checksum), possibly under another name.",
    "altered": "A delivered file with a quoted name but other bytes than quoted.",
    "missing": "A quoted file that is not in the delivery.",
    "not in the quote": "A delivered file the manifest does not list. Listed, but it does not make the "
                        "delivery fail.",
    "system files": "Files operating systems leave in folders (Thumbs.db, desktop.ini, .DS_Store, ._ files "
                    "and other hidden files). Ignored when checking a delivery.",
}


def glossary_tip(term: str) -> str:
    """The :data:`GLOSSARY` explanation of ``term`` (case-insensitive), or ``""``."""
    return GLOSSARY.get(str(term).strip().lower(), "")


def headline_details(report: Report) -> list[str]:
    """Further plain sentences that qualify the headline (real footage behind
    speed-changed copies, below-floor evidence, indeterminate time)."""
    out: list[str] = []
    n_files = len(report.files)
    matched_files = sum(1 for f in report.files if f.segments)
    if n_files:
        out.append(f"{matched_files} of {n_files} offered files contain matched footage.")
    unmatched = max(0.0, report.offered_seconds - report.matched_seconds - report.indeterminate_seconds)
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
        fl = _floor(report)
        fl_txt = f"{fl:g} s " if fl is not None else ""
        out.append(f"{n_below} shorter match{'es' if n_below != 1 else ''} below the {fl_txt}evidence floor "
                   f"{'are' if n_below != 1 else 'is'} listed separately and not counted.")
    if report.indeterminate_seconds > 0:
        out.append(f"{format_duration(report.indeterminate_seconds)} could not be judged (static or "
                   "featureless footage) and counts neither way.")
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


# =========================================================================== JSON


def _r(x: float, nd: int = 3) -> float:
    """Round for JSON; NaN/inf (never expected) become 0 so the JSON stays valid."""
    xf = float(x)
    if not math.isfinite(xf):
        return 0.0
    return round(xf, nd)


def _jsonable(obj: Any) -> Any:
    """Convert settings/manifest facts to JSON types (paths, tuples, numpy scalars)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, Variant):
        return obj.to_dict()
    if isinstance(obj, bytes):
        return obj.hex()
    return str(obj)


def _thin_pairs(pairs: np.ndarray | None, limit: int = MAX_PAIRS_PER_SEGMENT) -> np.ndarray | None:
    if pairs is None:
        return None
    arr = np.asarray(pairs, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 3 or arr.shape[0] == 0:
        return None
    if arr.shape[0] > limit:
        idx = np.unique(np.linspace(0, arr.shape[0] - 1, limit).round().astype(np.int64))
        arr = arr[idx]
    return arr[:, :3]


def _round_pairs(pairs: np.ndarray) -> list[list[float]]:
    """Plot points for JSON: times to ms, distances to 0.1, non-finite values dropped."""
    arr = pairs[np.isfinite(pairs).all(axis=1)]
    out = np.empty_like(arr)
    out[:, :2] = np.round(arr[:, :2], 3)
    out[:, 2] = np.round(arr[:, 2], 1)
    return out.tolist()


def _sig(x: float | None, digits: int = 3) -> float | None:
    """Round to significant figures (an E-value of 1e-30 must not become 0), ``None`` kept."""
    if x is None:
        return None
    xf = float(x)
    if not math.isfinite(xf):
        return None
    return float(f"{xf:.{digits}g}")


def _opt(x: float | None, nd: int) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else _r(x, nd)


def _segment_to_dict(seg: Segment, *, below_floor: bool, floor_seconds: float | None,
                     max_pairs: int = MAX_PAIRS_PER_SEGMENT, weak: bool = False,
                     repeat: bool = False) -> dict[str, Any]:
    pairs = _thin_pairs(seg.pairs, max_pairs)
    description = describe_repeat(seg) if repeat else describe_segment(
        seg, below_floor=below_floor, floor_seconds=floor_seconds, weak=weak)
    return {
        "query_file": seg.query_file,
        "query_stream": seg.query_stream,
        "query_start": _r(seg.query_start),
        "query_end": _r(seg.query_end),
        "corpus_file": seg.corpus_file,
        "corpus_stream": seg.corpus_stream,
        "corpus_start": _r(seg.corpus_start),
        "corpus_end": _r(seg.corpus_end),
        "speed": _r(seg.speed, 4),
        "speed_low": _opt(seg.speed_low, 4),
        "speed_high": _opt(seg.speed_high, 4),
        "variant": seg.variant.to_dict(),
        "frames": int(seg.frames),
        "mean_distance": _r(seg.mean_distance, 2),
        "score": _r(seg.score, 4),
        "chance": _sig(seg.chance),
        "description": description,
        "pairs": None if pairs is None else _round_pairs(pairs),
    }


def _file_to_dict(f: FileResult, floor_seconds: float | None, max_pairs: int) -> dict[str, Any]:
    return {
        "query_file": f.query_file,
        "duration_s": _r(f.duration_s),
        "matched_percent": _r(f.matched_percent, 2),
        "matched_seconds": _r(f.matched_seconds),
        "real_footage_seconds": _r(f.real_footage_seconds),
        "indeterminate_seconds": _r(f.indeterminate_seconds),
        "flags": list(f.flags),
        "flags_text": describe_flags(f),
        "segments": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds,
                                      max_pairs=max_pairs) for s in f.segments],
        "below_floor": [_segment_to_dict(s, below_floor=True, floor_seconds=floor_seconds,
                                         max_pairs=max_pairs) for s in f.below_floor],
        "weak": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds, max_pairs=max_pairs,
                                  weak=True) for s in f.weak],
        "repeats": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds, max_pairs=max_pairs,
                                     repeat=True) for s in f.repeats],
        "repeated_seconds": _r(f.repeated_seconds),
        "new_seconds": _r(f.new_seconds),
        "indeterminate": [{"start": _r(s.start_s), "end": _r(s.end_s), "reason": s.reason}
                          for s in f.indeterminate],
        "episodes": _jsonable(f.episodes),
    }


def _tool_version(report: Report) -> str:
    if report.tool_version:
        return report.tool_version
    from overlap_desktop import __version__

    return __version__


def report_to_dict(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (layout: docs/report-schema.md).

    Times are seconds rounded to milliseconds; percentages are 0..100. Derived
    fields (``overlap_percent``, ``headline``, ``flags_text``, ``description``)
    are written for readers that do not run this code; :func:`load_report_json`
    recomputes them rather than trusting them.
    """
    fl = _floor(report)
    n_segments = sum(len(f.segments) + len(f.below_floor) + len(f.weak) + len(f.repeats)
                     for f in report.files)
    max_pairs = max(MIN_PAIRS_PER_SEGMENT,
                    min(MAX_PAIRS_PER_SEGMENT, MAX_PAIRS_PER_REPORT // max(1, n_segments)))
    created = report.created or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {
        "schema": REPORT_SCHEMA,
        "kind": report.kind,
        "created": created,
        "tool": {"name": "overlap-desktop", "version": _tool_version(report)},
        "headline": headline(report),
        "details": headline_details(report),
        "overlap_percent": _r(report.overlap_percent, 2),
        "offered_seconds": _r(report.offered_seconds),
        "matched_seconds": _r(report.matched_seconds),
        "real_footage_seconds": _r(report.real_footage_seconds),
        "indeterminate_seconds": _r(report.indeterminate_seconds),
        "repeated_seconds": _r(report.repeated_seconds),
        "new_seconds": _r(report.new_seconds),
        "new_footage": new_footage_sentence(report),
        "counts": {
            "files": len(report.files),
            "matched_files": sum(1 for f in report.files if f.segments),
            "segments": sum(len(f.segments) for f in report.files),
            "below_floor": sum(len(f.below_floor) for f in report.files),
            "weak": sum(len(f.weak) for f in report.files),
            "repeats": sum(len(f.repeats) for f in report.files),
            "indeterminate_spans": sum(len(f.indeterminate) for f in report.files),
        },
        "files": [_file_to_dict(f, fl, max_pairs) for f in report.files],
        "manifest": _jsonable(report.manifest),
        "settings": _jsonable(report.settings),
        **({"text_overlap": _jsonable(report.text_overlap)} if report.text_overlap is not None else {}),
    }


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one."""
    atomic_write_bytes(path, data, error_type=InputError, open_message="cannot write here",
                       write_message="cannot write", make_parents=True)


def _dumps_json(data: Any) -> bytes:
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate from a hostile name cannot be UTF-8: \u-escape everything.
        return (json.dumps(data, indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def write_report_json(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report as versioned JSON (atomically: temp file, fsync, rename).

    Args:
        report: The report.
        path: Destination ``.json``.

    Returns:
        The path written.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    _atomic_write_bytes(p, _dumps_json(report_to_dict(report)))
    return p


class _Bad(Exception):
    pass


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str,
         default: Any = ...) -> Any:
    if key not in d or d[key] is None:
        if default is ...:
            raise _Bad(f"{where}: missing {key!r}")
        return default
    v = d[key]
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool) and kind is not bool and (kind is float or kind is int):
        raise _Bad(f"{where}: {key!r} must be a number")
    if not isinstance(v, kind):
        raise _Bad(f"{where}: {key!r} has the wrong type ({type(v).__name__})")
    return v


def _num(d: Mapping[str, Any], key: str, where: str, default: Any = ...) -> float:
    v = _get(d, key, (int, float), where, default)
    if isinstance(v, bool):
        raise _Bad(f"{where}: {key!r} must be a number")
    v = float(v)
    if not math.isfinite(v):
        raise _Bad(f"{where}: {key!r} is not finite")
    return v


def _segment_from_dict(d: Any, where: str) -> Segment:
    if not isinstance(d, Mapping):
        raise _Bad(f"{where}: expected an object")
    vd = _get(d, "variant", Mapping, where, {})
    try:
        variant = Variant.from_dict(dict(vd))
    except (TypeError, ValueError, KeyError) as exc:
        raise _Bad(f"{where}: bad variant ({exc})") from exc
    pairs_raw = d.get("pairs")
    pairs = None
    if pairs_raw is not None:
        try:
            arr = np.asarray(pairs_raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise _Bad(f"{where}: bad pairs") from exc
        if arr.ndim == 2 and arr.shape[1] == 3:
            pairs = arr
        elif arr.size:
            raise _Bad(f"{where}: pairs must be [query_s, corpus_s, distance] triples")
    return Segment(
        query_file=_get(d, "query_file", str, where, ""),
        query_stream=_get(d, "query_stream", str, where, ""),
        query_start=_num(d, "query_start", where),
        query_end=_num(d, "query_end", where),
        corpus_file=_get(d, "corpus_file", str, where, ""),
        corpus_stream=_get(d, "corpus_stream", str, where, ""),
        corpus_start=_num(d, "corpus_start", where),
        corpus_end=_num(d, "corpus_end", where),
        speed=_num(d, "speed", where, 1.0),
        variant=variant,
        frames=int(_num(d, "frames", where, 0)),
        mean_distance=_num(d, "mean_distance", where, 0.0),
        score=_num(d, "score", where, 0.0),
        pairs=pairs,
        chance=_opt_num(d, "chance", where),
        speed_low=_opt_num(d, "speed_low", where),
        speed_high=_opt_num(d, "speed_high", where),
    )


def _opt_num(d: Mapping[str, Any], key: str, where: str) -> float | None:
    """An optional number (absent or null in reports older than ``overlap.report/2``)."""
    if d.get(key) is None:
        return None
    return _num(d, key, where)


def _file_from_dict(d: Any, where: str) -> FileResult:
    if not isinstance(d, Mapping):
        raise _Bad(f"{where}: expected an object")
    name = _get(d, "query_file", str, where)
    w = f"{where} ({safe_text(name, max_len=60)})"
    spans = []
    for i, sd in enumerate(_get(d, "indeterminate", list, w, [])):
        if not isinstance(sd, Mapping):
            raise _Bad(f"{w}: indeterminate[{i}]: expected an object")
        spans.append(Span(_num(sd, "start", w), _num(sd, "end", w), str(sd.get("reason", "") or "")))
    flags = _get(d, "flags", list, w, [])
    if not all(isinstance(x, str) for x in flags):
        raise _Bad(f"{w}: flags must be words")
    episodes = _get(d, "episodes", list, w, [])
    f = FileResult(
        query_file=name,
        duration_s=_num(d, "duration_s", w),
        matched_seconds=_num(d, "matched_seconds", w, 0.0),
        real_footage_seconds=_num(d, "real_footage_seconds", w, 0.0),
        segments=[_segment_from_dict(s, f"{w}: segments[{i}]")
                  for i, s in enumerate(_get(d, "segments", list, w, []))],
        below_floor=[_segment_from_dict(s, f"{w}: below_floor[{i}]")
                     for i, s in enumerate(_get(d, "below_floor", list, w, []))],
        indeterminate=spans,
        flags=list(flags),
        episodes=[e for e in episodes if isinstance(e, dict)],
        weak=[_segment_from_dict(s, f"{w}: weak[{i}]") for i, s in enumerate(_get(d, "weak", list, w, []))],
        repeats=[_segment_from_dict(s, f"{w}: repeats[{i}]")
                 for i, s in enumerate(_get(d, "repeats", list, w, []))],
        repeated_seconds=_num(d, "repeated_seconds", w, 0.0),
    )
    # overlap.report/1 predates repeats: its new footage is all judged unmatched time.
    f.new_seconds = _num(d, "new_seconds", w, round(judged_unmatched_seconds(f), 3))
    return f


def _check_schema(data: Any) -> None:
    if not isinstance(data, Mapping):
        raise _Bad("not a report: the top level is not a JSON object")
    schema = data.get("schema")
    if not isinstance(schema, str) or not schema.startswith(_SCHEMA_PREFIX):
        raise _Bad(f"not an overlap report (schema is {safe_text(repr(schema), max_len=60)}, "
                   f"expected {REPORT_SCHEMA!r})")
    version = schema[len(_SCHEMA_PREFIX):]
    if not version.isdigit():
        raise _Bad(f"unreadable report schema version {safe_text(version, max_len=40)!r}")
    if int(version) not in _SCHEMA_READABLE:
        newer = int(version) > _SCHEMA_MAJOR
        raise _Bad(f"report schema {schema!r} is not supported by this version (it reads {REPORT_SCHEMA!r})"
                   + ("; it was written by a newer overlap desktop — update to open it" if newer else ""))


def _text_overlap_from_dict(block: Any) -> dict[str, Any] | None:
    if block is None:
        return None
    where = "text_overlap"
    if not isinstance(block, Mapping):
        raise _Bad(f"{where}: expected an object")
    status = _get(block, "status", str, where)
    if status == "checked":
        for key in ("examples", "matched"):
            v = _num(block, key, where)
            if v < 0 or v != int(v):
                raise _Bad(f"{where}: {key!r} must be a whole number")
        for i, ex in enumerate(_get(block, "matched_examples", list, where, [])):
            if not isinstance(ex, Mapping) or not isinstance(ex.get("text", ""), str):
                raise _Bad(f"{where}: matched_examples[{i}]: expected an object with a text")
    return dict(block)


def report_from_dict(data: Any) -> Report:
    """Rebuild a :class:`Report` from :func:`report_to_dict` data.

    Unknown keys are ignored (additive changes keep the schema version); derived
    values are recomputed from the stored facts.

    Raises:
        InputError: wrong schema version or malformed content (message says where).
    """
    try:
        _check_schema(data)
        raw_files = _get(data, "files", list, "report", [])
        files = [_file_from_dict(f, f"files[{i}]") for i, f in enumerate(raw_files)]
        tool = data.get("tool") if isinstance(data.get("tool"), Mapping) else {}
        return Report(
            kind=_get(data, "kind", str, "report"),
            offered_seconds=_num(data, "offered_seconds", "report"),
            matched_seconds=_num(data, "matched_seconds", "report"),
            real_footage_seconds=_num(data, "real_footage_seconds", "report", 0.0),
            indeterminate_seconds=_num(data, "indeterminate_seconds", "report", 0.0),
            files=files,
            manifest=dict(_get(data, "manifest", Mapping, "report", {})),
            settings=dict(_get(data, "settings", Mapping, "report", {})),
            created=_get(data, "created", str, "report", ""),
            tool_version=str(tool.get("version", "") or ""),
            text_overlap=_text_overlap_from_dict(data.get("text_overlap")),
            repeated_seconds=_num(data, "repeated_seconds", "report",
                                  round(sum(f.repeated_seconds for f in files), 3)),
            new_seconds=_num(data, "new_seconds", "report", round(sum(f.new_seconds for f in files), 3)),
        )
    except _Bad as exc:
        raise InputError(str(exc)) from None


def load_report_json(path: str | os.PathLike[str]) -> Report:
    """Read a report written by :func:`write_report_json`.

    Args:
        path: A ``.json`` report.

    Returns:
        The report (segment plot points included when they were stored).

    Raises:
        InputError: unreadable file, not JSON, wrong schema version or malformed
            content; the message names the file and the problem.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the report: {exc.strerror or exc}", path=p) from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a JSON report: {exc}", path=p) from None
    try:
        return report_from_dict(data)
    except InputError as exc:
        raise InputError(exc.message, path=p) from None


# =========================================================================== CSV

CSV_COLUMNS = (
    "kind", "query_file", "query_stream", "query_start", "query_end", "corpus_file", "corpus_stream",
    "corpus_start", "corpus_end", "speed", "mirrored", "rotation", "crop", "edge_side", "edge_depth",
    "frames", "mean_distance", "score", "description",
    # overlap.report/2 additions, appended so readers that go by position keep working.
    "chance", "speed_low", "speed_high", "repeated_seconds", "new_seconds",
)


def _csv_text(value: object) -> str:
    """Neutralise a name for spreadsheets: visible control characters, and a leading
    quote before ``= + - @`` so a hostile name is never run as a formula."""
    s = safe_text(value)
    if s and s[0] in "=+-@\t\r":
        s = "'" + s
    return s


def write_report_csv(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write one row per matched segment (atomically).

    The first row (``kind`` ``summary``) carries the headline and, for comparisons, the
    new footage you would actually get (``new_seconds``, ``repeated_seconds``). Then the
    ``kind`` column is ``segment`` for reported overlap, ``below-floor`` for shorter
    evidence and ``weak`` for weak evidence (neither counted), and ``repeat`` for a
    stretch repeating other offered footage (``corpus_*`` is then the other offered
    file). Files without any match get one ``no-match`` row so every offered file
    appears. Times are seconds.

    Returns:
        The path written.
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    fl = _floor(report)
    blank = [""] * len(CSV_COLUMNS)
    summary = list(blank)
    summary[0] = "summary"
    summary[CSV_COLUMNS.index("description")] = _csv_text(" ".join(
        x for x in (headline(report), new_footage_sentence(report)) if x))
    summary[CSV_COLUMNS.index("repeated_seconds")] = f"{report.repeated_seconds:.3f}"
    summary[CSV_COLUMNS.index("new_seconds")] = f"{report.new_seconds:.3f}"
    w.writerow(summary)

    def opt(x: float | None, spec: str) -> str:
        return "" if x is None else format(x, spec)

    def row(kind: str, s: Segment) -> list[object]:
        v = s.variant
        if kind == "repeat":
            desc = describe_repeat(s)
        else:
            desc = describe_segment(s, below_floor=kind == "below-floor", floor_seconds=fl,
                                    weak=kind == "weak")
        return [kind, _csv_text(s.query_file or ""), _csv_text(s.query_stream), f"{s.query_start:.3f}",
                f"{s.query_end:.3f}", _csv_text(s.corpus_file), _csv_text(s.corpus_stream),
                f"{s.corpus_start:.3f}", f"{s.corpus_end:.3f}", f"{s.speed:.4f}", int(v.mirrored),
                v.rotation, "" if v.crop >= 1.0 else f"{v.crop:.4f}", v.edge or "",
                f"{v.edge_depth:.4f}" if v.edge else "", s.frames, f"{s.mean_distance:.2f}",
                f"{s.score:.4f}", _csv_text(desc), opt(s.chance, ".3g"), opt(s.speed_low, ".4f"),
                opt(s.speed_high, ".4f"), "", ""]

    for f in report.files:
        for kind, segs in (("segment", f.segments), ("below-floor", f.below_floor), ("weak", f.weak),
                           ("repeat", f.repeats)):
            for s in segs:
                r = row(kind, s)
                if not s.query_file:
                    r[1] = _csv_text(f.query_file)
                w.writerow(r)
        if not f.segments and not f.below_floor and not f.weak and not f.repeats:
            w.writerow(["no-match", _csv_text(f.query_file)] + [""] * (len(CSV_COLUMNS) - 2))
    # One row per matched evaluation example (the lab's own text; the vendor's is never known):
    # query_file/query_stream hold the example's source and position.
    block = report.text_overlap or {}
    for ex in block.get("matched_examples", []) if block.get("status") == "checked" else []:
        if not isinstance(ex, Mapping):
            continue
        grams = "; ".join(str(g.get("ngram", "")) for g in ex.get("ngrams", []) if isinstance(g, Mapping))
        r = ["text-overlap", _csv_text(ex.get("source", "")), _csv_text(ex.get("locator", ""))] + blank[3:]
        r[CSV_COLUMNS.index("description")] = _csv_text(
            f"evaluation example {ex.get('example')} shares an n-gram with the vendor's annotations: {grams}")
        w.writerow(r)
    p = Path(path)
    # utf-8-sig: spreadsheet programs on Windows then read non-ASCII names correctly.
    _atomic_write_bytes(p, buf.getvalue().encode("utf-8-sig", errors="backslashreplace"))
    return p


# =========================================================================== HTML

_CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee7; --bg:#ffffff; --soft:#f4f6fa;
        --accent:#2456c8; --warn:#b4570b; --bad:#b3261e; --ok:#1e7b45; }
* { box-sizing: border-box; }
body { font: 15px/1.5 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 32px 40px 48px; max-width: 1200px; }
h1 { font-size: 14px; font-weight: 600; letter-spacing: .06em; text-transform: uppercase; color: var(--muted);
     margin: 0 0 6px; }
h2 { font-size: 19px; margin: 34px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 6px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.headline { font-size: 28px; line-height: 1.25; font-weight: 650; margin: 4px 0 12px; }
.details { margin: 0 0 8px; padding-left: 20px; color: var(--fg); }
.label { color: var(--muted); margin: 0 0 14px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0 6px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px;
        min-width: 150px; }
.card .n { font-size: 22px; font-weight: 650; }
.card .t { color: var(--muted); font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { word-break: break-all; unicode-bidi: isolate; max-width: 380px; }
.bar { background: #e6e9f0; border-radius: 3px; height: 8px; width: 90px; display: inline-block;
       vertical-align: middle; margin-left: 6px; overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--accent); }
.flag { display: inline-block; background: #fff3e6; color: var(--warn); border: 1px solid #f1d2b0;
        border-radius: 10px; padding: 0 8px; margin: 1px 3px 1px 0; font-size: 12.5px; white-space: nowrap; }
.muted { color: var(--muted); }
.note { color: var(--muted); font-size: 13px; }
.plots { display: flex; flex-wrap: wrap; gap: 18px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px; background: #fff; }
figcaption { font-size: 12.5px; color: var(--muted); max-width: 420px; word-break: break-all; }
.legend { font-size: 12.5px; color: var(--muted); margin: 6px 0 12px; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin: 0 4px 0 10px;
      vertical-align: middle; }
footer { margin-top: 40px; font-size: 12.5px; color: var(--muted); }
footer table { font-size: 12.5px; }
footer td { padding: 3px 8px; }
.seal { margin: 0 0 14px; color: var(--muted); font-size: 13px; }
.seal code { display: inline-block; font: 13px/1.4 ui-monospace, "SFMono-Regular", Consolas, monospace;
             color: var(--fg); background: var(--soft); border: 1px solid var(--line); border-radius: 4px;
             padding: 2px 6px; word-break: break-all; user-select: all; -webkit-user-select: all; }
.newfoot { font-size: 19px; font-weight: 600; margin: 0 0 10px; color: var(--ok); }
dl.glossary dt { font-weight: 600; margin-top: 6px; }
dl.glossary dd { margin: 0 0 0 18px; color: var(--muted); }
@media print { body { padding: 0; } figure { break-inside: avoid; } }
"""


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    ticks = []
    t = start
    while t <= hi + 1e-9 and len(ticks) < 20:
        ticks.append(round(t, 6))
        t += step
    return ticks


def _axis_unit(span_s: float) -> tuple[float, str]:
    """Divisor and unit name for an axis covering ``span_s`` seconds."""
    if span_s >= 3 * 3600:
        return 3600.0, "h"
    if span_s >= 300:
        return 60.0, "min"
    return 1.0, "s"


def _svg_plot(query_file: str, corpus_file: str, duration_s: float,
              segments: list[tuple[Segment, bool]]) -> str:
    """An inline SVG of query time (x) against corpus time (y) for one file pair.

    Fitted segments are drawn as wide translucent bands (dashed outline when below
    the floor) under the supporting frame matches, which are dots coloured by
    Hamming distance. All text is escaped.
    """
    W, H = 420, 300
    ml, mr, mt, mb = 56, 14, 14, 42
    pw, ph = W - ml - mr, H - mt - mb
    xs_hi = max([duration_s] + [s.query_end for s, _ in segments] + [1e-3])
    ys: list[float] = []
    for s, _ in segments:
        ys += [s.corpus_start, s.corpus_end]
        if s.pairs is not None and len(s.pairs):
            arr = np.asarray(s.pairs, dtype=np.float64)
            if arr.ndim == 2 and arr.shape[1] >= 2 and np.isfinite(arr[:, 1]).all():
                ys += [float(arr[:, 1].min()), float(arr[:, 1].max())]
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = max(1.0, 0.05 * (y_hi - y_lo))
    y_lo, y_hi = max(0.0, y_lo - pad), y_hi + pad
    x_lo, x_hi = 0.0, xs_hi
    xdiv, xunit = _axis_unit(x_hi - x_lo)
    ydiv, yunit = _axis_unit(y_hi - y_lo)

    def X(v: float) -> float:
        return ml + (v - x_lo) / (x_hi - x_lo) * pw

    def Y(v: float) -> float:
        return mt + ph - (v - y_lo) / (y_hi - y_lo) * ph

    title = f"{safe_text(query_file)} against {safe_text(corpus_file)}"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             f'role="img" aria-label="{_html_escape(title, quote=True)}">',
             f"<title>{_html_escape(title, quote=True)}</title>",
             f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fafbfd" stroke="#d9dee7"/>']
    for t in _nice_ticks(x_lo / xdiv, x_hi / xdiv):
        x = X(t * xdiv)
        parts.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#eceff4"/>')
        parts.append(f'<text x="{x:.1f}" y="{mt + ph + 14}" font-size="10" text-anchor="middle" '
                     f'fill="#5b6475">{t:g}</text>')
    for t in _nice_ticks(y_lo / ydiv, y_hi / ydiv):
        y = Y(t * ydiv)
        parts.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#eceff4"/>')
        parts.append(f'<text x="{ml - 5}" y="{y + 3:.1f}" font-size="10" text-anchor="end" '
                     f'fill="#5b6475">{t:g}</text>')
    parts.append(f'<text x="{ml + pw / 2:.1f}" y="{H - 8}" font-size="11" text-anchor="middle" '
                 f'fill="#1d2330">offered file time ({xunit})</text>')
    parts.append(f'<text x="12" y="{mt + ph / 2:.1f}" font-size="11" text-anchor="middle" fill="#1d2330" '
                 f'transform="rotate(-90 12 {mt + ph / 2:.1f})">owned file time ({yunit})</text>')
    for s, below in segments:
        dash = ' stroke-dasharray="6 5"' if below else ""
        colour = "#8a93a6" if below else "#2456c8"
        tip = describe_segment(s, below_floor=below)
        how = distance_words(s.mean_distance)
        tip += f" (frames {how} on average)" if how else ""
        parts.append(f'<line x1="{X(s.query_start):.1f}" y1="{Y(s.corpus_start):.1f}" '
                     f'x2="{X(s.query_end):.1f}" y2="{Y(s.corpus_end):.1f}" stroke="{colour}" '
                     f'stroke-opacity="0.28" stroke-width="9" stroke-linecap="round"{dash}>'
                     f"<title>{_html_escape(tip, quote=True)}</title></line>")
    for s, below in segments:
        arr = _thin_pairs(s.pairs)
        if arr is None:
            continue
        for q, c, d in arr.tolist():
            if not (math.isfinite(q) and math.isfinite(c) and math.isfinite(d)):
                continue
            parts.append(f'<circle cx="{X(q):.1f}" cy="{Y(c):.1f}" r="1.8" fill="{distance_colour(d)}" '
                         f'fill-opacity="{0.5 if below else 0.9}"/>')
    parts.append("</svg>")
    return "".join(parts)


def _name_cell(name: str, stream: str) -> str:
    extra = stream_words(stream)
    return (f'<td class="name">{_esc(name)}'
            f'{"<br><span class=muted>" + _esc(extra) + "</span>" if extra else ""}</td>')


def _segment_rows(rows: list[tuple[FileResult, Segment]], *, repeats: bool = False) -> str:
    """A table of segments in plain words (no bits, no internal scores).

    ``repeats``: the rows are repeats inside the offer (the other side is offered footage).
    """
    with_chance = not repeats and any(s.chance is not None for _, s in rows)
    other = "Repeats offered file" if repeats else "Owned file"
    head = ['<table><thead><tr><th>Offered file</th><th class="num">Offered span</th>'
            f'<th>{other}</th><th class="num">{"Its span" if repeats else "Owned span"}</th>'
            '<th class="num">Speed</th><th>What was done</th><th class="num">Matching frames</th>'
            '<th title="' + _esc(GLOSSARY["how alike"]) + '">How alike</th>']
    if with_chance:
        head.append(f'<th title="{_esc(GLOSSARY["chance of a coincidence"])}">Chance of a coincidence</th>')
    out = ["".join(head) + "</tr></thead><tbody>"]
    for f, s in rows:
        words = _manipulation_words(s)
        manip = _html_escape(", ".join(words)) if words else '<span class="muted">none</span>'
        level = _distance_level(s.mean_distance)
        cells = [
            _name_cell(s.query_file or f.query_file, s.query_stream),
            f'<td class="num">{format_clock(s.query_start)}–{format_clock(s.query_end)}</td>',
            _name_cell(s.corpus_file, s.corpus_stream),
            f'<td class="num">{format_clock(s.corpus_start)}–{format_clock(s.corpus_end)}</td>',
            f'<td class="num">{_esc(speed_text(s))}</td><td>{manip}</td>',
            f'<td class="num">{int(s.frames)}</td>',
            f'<td><span class="sw" style="background:{level.colour};margin-left:0"></span>'
            f"{_esc(level.words)}</td>",
        ]
        if with_chance:
            cw = chance_words(s.chance, short=True)
            cells.append(f"<td>{_esc(cw) if cw else '<span class=muted>not measured</span>'}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


#: Setting names shown with the user-facing word (the library is an index internally).
_SETTING_WORDS = {"index": "library", "index_identity": "library identity", "index_path": "library folder",
                  "root": "seal (Merkle root)"}


def _kv_table(d: Mapping[str, Any]) -> str:
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            text = json.dumps(_jsonable(v), ensure_ascii=False)
        elif k == "created" and isinstance(v, str):
            text = format_date(v)  # a date for people, not a raw ISO stamp
        else:
            text = str(_jsonable(v))
        rows.append(f"<tr><td>{_esc(_SETTING_WORDS.get(str(k), k))}</td>"
                    f"<td class='name'>{_esc(safe_text(text, max_len=400))}</td></tr>")
    return "<table>" + "".join(rows) + "</table>" if rows else "<p class='note'>none recorded</p>"


_KIND_TITLES = {
    "compare": "Offer comparison",
    "self-dedupe": "Internal duplicates",
    "compare-offers": "Two offers compared",
    "audit": "Sample audit",
}


def _seal_html(report: Report) -> str:
    """The offer's seal (Merkle root) in a selectable element, near the top of the report."""
    root = report.manifest.get("root")
    if not isinstance(root, str) or not root.strip():
        return ""
    return (f'<p class="seal" title="{_esc(GLOSSARY["seal"])}">Seal of this offer (Merkle root), to quote '
            f'when you buy: <code id="seal">{_esc(safe_text(root, max_len=200))}</code></p>')


def _legend_html() -> str:
    items = "".join(f'<span class="sw" style="background:{lv.colour}"></span>{_esc(lv.words)}'
                    for lv in DISTANCE_SCALE)
    return (f'<div class="legend" title="{_esc(GLOSSARY["how alike"])}">How alike the matched frames are: '
            f"{items}</div>")


#: Terms explained at the end of every HTML report (see :data:`GLOSSARY`).
_REPORT_TERMS = ("owned footage", "offered footage", "library", "match", "new footage", "repeat",
                 "real footage", "evidence floor", "weak evidence", "chance of a coincidence",
                 "could not be judged", "how alike", "speed", "splice", "seal")


def _glossary_html(terms: Iterable[str]) -> str:
    items = "".join(f"<dt>{_esc(t)}</dt><dd>{_esc(GLOSSARY[t])}</dd>" for t in terms if t in GLOSSARY)
    return f'<h2>Words used in this report</h2><dl class="glossary">{items}</dl>'


def render_report_html(report: Report) -> str:
    """The HTML report as a string (see :func:`write_report_html`)."""
    fl = _floor(report)
    title = _KIND_TITLES.get(report.kind, "Overlap report")
    label = _label(report, "label")
    h: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # No scripts, no external resources, even if a future edit forgets to escape.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}{' – ' + _esc(label) if label else ''}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>overlap · {_esc(title)}</h1>",
        f'<p class="headline">{_esc(headline(report))}</p>',
    ]
    new_sentence = new_footage_sentence(report)
    if new_sentence:
        h.append(f'<p class="newfoot" title="{_esc(GLOSSARY["new footage"])}">{_esc(new_sentence)}</p>')
    if label:
        what = {"self-dedupe": "Collection", "compare-offers": "Offer A"}.get(report.kind, "Offer")
        h.append(f'<p class="label">{what}: <b>{_esc(label)}</b></p>')
    h.append(_seal_html(report))
    details = headline_details(report)
    if details:
        h.append('<ul class="details">' + "".join(f"<li>{_esc(d)}</li>" for d in details) + "</ul>")

    n_seg = sum(len(f.segments) for f in report.files)
    n_below = sum(len(f.below_floor) for f in report.files)
    n_weak = sum(len(f.weak) for f in report.files)
    compare_kind = report.kind == "compare"
    cards = [
        (format_percent(report.overlap_percent), "of offered time matches footage you own"
         if compare_kind else "of offered time matches"),
        (format_duration(report.offered_seconds), "offered"),
        (format_duration(report.matched_seconds), "matched (offered time)"),
        (format_duration(report.real_footage_seconds), "real footage behind the matches"),
    ]
    if compare_kind:
        cards += [(format_duration(report.new_seconds), "new footage you would actually get"),
                  (format_duration(report.repeated_seconds), "repeated inside the offer")]
    cards += [
        (format_duration(report.indeterminate_seconds), "could not be judged"),
        (f"{sum(1 for f in report.files if f.segments)} / {len(report.files)}", "files with matches"),
        (str(n_seg), "matched stretches"),
        (str(n_below), "below-floor matches"),
    ]
    if n_weak:
        cards.append((str(n_weak), "weak matches (not counted)"))
    h.append('<div class="cards">' + "".join(
        f'<div class="card"><div class="n">{_esc(n)}</div><div class="t">{_esc(t)}</div></div>'
        for n, t in cards) + "</div>")

    # Per-file table.
    h.append("<h2>Files</h2>")
    if not report.files:
        h.append('<p class="note">The report lists no files.</p>')
    else:
        new_cols = ('<th class="num">Repeated in offer</th><th class="num">New</th>' if compare_kind else "")
        h.append('<table><thead><tr><th>File</th><th class="num">Duration</th><th class="num">Matched</th>'
                 f'<th class="num">Real footage</th>{new_cols}<th class="num">Not judged</th>'
                 "<th>What was done to it</th>"
                 "</tr></thead><tbody>")
        order = sorted(report.files, key=lambda f: (-f.matched_percent, -len(f.below_floor), f.query_file))
        hidden = order[MAX_HTML_FILE_ROWS:]
        for f in order[:MAX_HTML_FILE_ROWS]:
            pct = f.matched_percent
            flags = describe_flags(f)
            flag_html = "".join(f'<span class="flag">{_esc(w)}</span>' for w in flags)
            if not flags and (f.below_floor or f.weak):
                n_ev = len(f.below_floor) + len(f.weak)
                flag_html = f'<span class="muted">{n_ev} uncounted match{"es" if n_ev != 1 else ""}</span>'
            new_cells = (f'<td class="num">{_esc(format_duration(f.repeated_seconds))}</td>'
                         f'<td class="num">{_esc(format_duration(f.new_seconds))}</td>'
                         if compare_kind else "")
            h.append(
                f'<tr><td class="name">{_esc(f.query_file)}</td>'
                f'<td class="num">{_esc(format_duration(f.duration_s))}</td>'
                f'<td class="num">{_esc(format_percent(pct))}'
                f'<span class="bar"><span style="width:{min(100.0, max(0.0, pct)):.1f}%"></span></span></td>'
                f'<td class="num">{_esc(format_duration(f.real_footage_seconds))}</td>{new_cells}'
                f'<td class="num">{_esc(format_duration(f.indeterminate_seconds))}</td>'
                f"<td>{flag_html}</td></tr>")
        h.append("</tbody></table>")
        if hidden:
            h.append(f'<p class="note">{len(hidden):,} more files ({_esc(format_duration(sum(f.duration_s for f in hidden)))}, '
                     f"{sum(1 for f in hidden if f.segments):,} of them with matches) are not listed here, to keep "
                     "this page small enough to open; the JSON and CSV reports list every file.</p>")

    # Matched segments.
    seg_rows = [(f, s) for f in report.files for s in f.segments]
    seg_hidden = max(0, len(seg_rows) - MAX_HTML_SEGMENT_ROWS)
    seg_rows = seg_rows[:MAX_HTML_SEGMENT_ROWS]
    h.append("<h2>Matched stretches</h2>")
    if seg_rows:
        h.append('<p class="note">Each row is one stretch of offered footage that matches owned footage. '
                 "Speed is the offered copy's playback speed relative to the owned original, with its "
                 "measured range when known (0.5x = slowed to half speed, which doubles the billed hours). "
                 "\"How alike\" says how close the matched frames are; the chance of a coincidence says how "
                 "often a match this strong would turn up by chance alone.</p>")
        h.append(_segment_rows(seg_rows))
        if seg_hidden:
            h.append(f'<p class="note">{seg_hidden:,} more matched stretches are listed in the JSON and CSV '
                     "reports only.</p>")
    else:
        h.append('<p class="note">No stretch of offered footage matched at or above the evidence floor.</p>')

    # Plots, one per (offered file, owned file) pair with reported or uncounted matches.
    pairs: dict[tuple[str, str], tuple[FileResult, list[tuple[Segment, bool]]]] = {}
    for f in report.files:
        for s in f.segments:
            pairs.setdefault((f.query_file, s.corpus_file), (f, []))[1].append((s, False))
        for s in [*f.below_floor, *f.weak]:
            pairs.setdefault((f.query_file, s.corpus_file), (f, []))[1].append((s, True))
    if pairs:
        h.append("<h2>Where the matches lie</h2>")
        h.append('<p class="note">Each chart puts the offered file\'s time across and the owned file\'s '
                 "time up. Copied footage forms straight lines: a steeper or shallower line than 45° means "
                 "the speed was changed, a line falling to the right means it plays backwards, several "
                 "lines mean pieces were cut and joined. Dashed lines are not counted (below the evidence "
                 "floor, or weak evidence). Point at a line for its description.</p>")
        h.append(_legend_html())
        h.append('<div class="plots">')
        ranked = sorted(pairs.items(), key=lambda kv: (all(b for _, b in kv[1][1]),
                                                       -sum(s.query_duration for s, _ in kv[1][1])))
        for (qf, cf), (f, segs) in ranked[:MAX_HTML_PLOTS]:
            h.append(f"<figure>{_svg_plot(qf, cf, f.duration_s, segs)}<figcaption>Offered "
                     f"<b>{_esc(qf)}</b> against owned <b>{_esc(cf)}</b></figcaption></figure>")
        h.append("</div>")
        if len(ranked) > MAX_HTML_PLOTS:
            h.append(f'<p class="note">{len(ranked) - MAX_HTML_PLOTS} more charts are left out to keep '
                     "this file quick to open; every segment is listed in the tables and the JSON "
                     "report.</p>")

    # Repeats inside the offer (compare reports).
    rep_rows = [(f, s) for f in report.files for s in f.repeats]
    if compare_kind:
        h.append("<h2>Repeats inside the offer</h2>")
        if rep_rows:
            h.append('<p class="note">These stretches show the same footage as another part of the same '
                     "offer (for example a file that is another offered file slowed down). Each repeat is "
                     "listed once: on the copy that bills more time (the slowed one), or at the same speed on "
                     "the later one. Its time is not counted as new footage.</p>")
            h.append(_segment_rows(rep_rows, repeats=True))
        elif repeats_checked(report):
            h.append('<p class="note">None: no part of the offer repeats another part.</p>')
        else:
            h.append('<p class="note">Not checked in this report.</p>')

    # Weak evidence.
    weak_rows = [(f, s) for f in report.files for s in f.weak]
    if weak_rows:
        h.append("<h2>Weak evidence</h2>")
        h.append(f'<p class="note">{_esc(GLOSSARY["weak evidence"])} These stretches are not counted in the '
                 "headline.</p>")
        h.append(_segment_rows(weak_rows))

    # Below-floor evidence.
    below_rows = [(f, s) for f in report.files for s in f.below_floor]
    fl_txt = f" ({fl:g} s)" if fl is not None else ""
    h.append(f"<h2>Below the evidence floor{_esc(fl_txt)}</h2>")
    if below_rows:
        h.append('<p class="note">These stretches matched but are shorter than the evidence floor, so '
                 "they are not counted in the headline. They are listed so that a low headline never hides "
                 "a partial match; short matches alone are too thin to accuse anyone.</p>")
        h.append(_segment_rows(below_rows))
    else:
        h.append('<p class="note">None.</p>')

    # Episodes (LeRobot datasets), then annotation overlap: only when there is something to say.
    ep_rows = [(f, e) for f in report.files for e in f.episodes if isinstance(e, Mapping)]
    if ep_rows:
        h.append("<h2>Episodes</h2>")
        h.append('<p class="note">Matched stretches mapped to dataset episodes (times within each '
                 "episode).</p>")
        h.append('<table><thead><tr><th>Offered file</th><th>Match</th></tr></thead><tbody>')
        for f, e in ep_rows:
            below = " (below the evidence floor)" if e.get("below_floor") else ""
            h.append(f'<tr><td class="name">{_esc(f.query_file)}</td>'
                     f"<td>{_esc(str(e.get('label', '')) + below)}</td></tr>")
        h.append("</tbody></table>")
    if report.text_overlap:
        h.append(_text_overlap_html(report.text_overlap))

    # Indeterminate time.
    ind = [(f, sp) for f in report.files for sp in f.indeterminate]
    h.append("<h2>Time that could not be judged</h2>")
    if ind:
        h.append('<p class="note">Static or featureless footage (a robot idling, a blank wall) carries too '
                 "little visual detail to compare. It is counted neither as matched nor as new.</p>")
        h.append('<table><thead><tr><th>File</th><th class="num">From</th><th class="num">To</th>'
                 '<th class="num">Length</th><th>Why</th></tr></thead><tbody>')
        for f, sp in ind:
            h.append(f'<tr><td class="name">{_esc(f.query_file)}</td>'
                     f'<td class="num">{format_clock(sp.start_s)}</td>'
                     f'<td class="num">{format_clock(sp.end_s)}</td>'
                     f'<td class="num">{_esc(format_duration(sp.duration_s))}</td>'
                     f"<td>{_esc(sp.reason or 'static or featureless')}</td></tr>")
        h.append("</tbody></table>")
    else:
        h.append('<p class="note">None.</p>')

    h.append(_glossary_html(_REPORT_TERMS))

    # Footer: settings and provenance.
    h.append("<footer><h2>How this report was made</h2>")
    h.append(f"<p>Made by overlap desktop {_esc(_tool_version(report))}"
             f"{' on ' + _esc(format_date(report.created)) if report.created else ''}. "
             f"Report format {_esc(REPORT_SCHEMA)}. "
             "A match means the offered frames are perceptually the same footage as owned frames; it is "
             "evidence for a purchasing decision, not a proof of authorship.</p>")
    h.append("<h3>Technical settings (to reproduce this report)</h3>" + _kv_table(report.settings))
    facts_title = {"self-dedupe": "Collection facts", "audit": "Manifest facts"}.get(report.kind,
                                                                                      "Offer facts")
    h.append(f"<h3>{facts_title}</h3>" + _kv_table(report.manifest))
    h.append("</footer></body></html>")
    return "\n".join(h)


def _text_overlap_html(block: Mapping[str, Any]) -> str:
    """The annotation-overlap section: a sentence and the lab's matched examples (escaped)."""
    out = ["<h2>Annotation overlap</h2>", f'<p class="headline" style="font-size:19px">'
           f"{_esc(text_overlap_sentence(block))}</p>"]
    if block.get("status") != "checked":
        return "".join(out)
    out.append('<p class="note">The vendor\'s manifest carries keyed hashes of its annotation n-grams, no '
               "text. The examples below are your own evaluation examples; the highlighted n-grams occur in "
               "the vendor's annotations.</p>")
    examples = [ex for ex in block.get("matched_examples", []) if isinstance(ex, Mapping)]
    if examples:
        out.append('<table><thead><tr><th>Source</th><th>Example</th><th>Shared n-grams</th></tr></thead>'
                   "<tbody>")
        for ex in examples:
            grams = [g for g in ex.get("ngrams", []) if isinstance(g, Mapping)]
            out.append(f'<tr><td class="name">{_esc(ex.get("source", ""))}<br><span class="muted">'
                       f'{_esc(ex.get("locator", ""))}</span></td>'
                       f"<td>{_esc(safe_text(ex.get('text', ''), max_len=600))}</td>"
                       f"<td>{'<br>'.join(_esc(g.get('ngram', '')) for g in grams)}</td></tr>")
        out.append("</tbody></table>")
        matched = block.get("matched", 0)
        if isinstance(matched, int) and matched > len(examples):
            out.append(f'<p class="note">{matched - len(examples)} more matched examples are counted but not '
                       "listed.</p>")
    return "".join(out)


def write_report_html(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report as one self-contained HTML file (inline CSS and SVG, no
    scripts, no external assets), atomically.

    Every string that came from a manifest or a file name is neutralised with
    :func:`safe_text` and HTML-escaped, in text, attributes and SVG alike.

    Returns:
        The path written.
    """
    p = Path(path)
    _atomic_write_bytes(p, render_report_html(report).encode("utf-8", errors="replace"))
    return p
