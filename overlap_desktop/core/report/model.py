"""The comparison report's data model: what a comparison found, per offered file.

The model is produced by :mod:`overlap_desktop.core.match.compare` and rendered by the
sibling modules: :mod:`.wording` (plain sentences), :mod:`.json_io` (the versioned JSON of
docs/report-schema.md), :mod:`.csv_io` and :mod:`.html` (a Jinja2 template with
autoescaping). :mod:`.scale` holds the one colour scale of match plots and
:mod:`.glossary` the user-facing words.

Every string in a report that came from a manifest or a file name is untrusted: a vendor
chooses it. Renderers for people pass such strings through
:func:`~overlap_desktop.core.report.formats.safe_text`; the JSON keeps the exact strings,
because it is data that must round-trip.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from overlap_desktop.core.types import Segment, Span

__all__ = ["NEAR_FRAMES_CAP", "REPEATS_SETTING", "FileResult", "NearFrame", "Report", "StreamResult", "identical_files",
           "judged_unmatched_seconds", "new_camera_views", "offered_pieces", "repeats_checked", "thin_near_frames"]

#: Most near-identical frame pairs a file keeps (thinned evenly over offered time), so a report
#: of a long "can't tell" file stays small (docs/report-schema.md).
NEAR_FRAMES_CAP = 300


@dataclass(frozen=True, slots=True)
class NearFrame:
    """An offered frame near-identical to an owned frame, where that is the file's only evidence
    there ("can't tell": too still, too short or too few to show a copy).

    Attributes:
        query_s: Offered time, in the file's time (as ``FileResult.cant_tell``).
        corpus_file: The owned file.
        corpus_stream: Its stream key.
        corpus_s: Owned time of the near-identical frame.
        distance: Bits between the two fingerprints.
    """

    query_s: float
    corpus_file: str
    corpus_stream: str
    corpus_s: float
    distance: int


def thin_near_frames(frames: Iterable[NearFrame], spans: Iterable[tuple[float, float]],
                     cap: int = NEAR_FRAMES_CAP) -> list[NearFrame]:
    """The ``frames`` inside the offered ``spans`` (the file's "can't tell" time), one per
    (offered time, owned file, owned stream, owned time), in offered time order and at most
    ``cap`` of them, taken evenly over the list."""
    merged: list[list[float]] = []
    for a, b in sorted((a - 1e-6, b + 1e-6) for a, b in spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [m[0] for m in merged]
    best: dict[tuple[float, str, str, float], NearFrame] = {}
    for n in frames:
        k = bisect.bisect_right(starts, n.query_s) - 1  # the last span starting at or before it
        key = (n.query_s, n.corpus_file, n.corpus_stream, n.corpus_s)
        if k >= 0 and n.query_s <= merged[k][1] and (key not in best or n.distance < best[key].distance):
            best[key] = n
    kept = sorted(best.values(), key=lambda n: (n.query_s, n.corpus_file, n.corpus_stream, n.corpus_s))
    if len(kept) <= cap:
        return kept
    step = len(kept) / cap
    return [kept[int(k * step)] for k in range(cap)]


@dataclass(slots=True)
class StreamResult:
    """One offered stream of a file (a camera of an episode): its own owned, new and "can't tell"
    seconds, in its own time.

    A file's streams of one episode (the cameras of one recording) share a timeline; streams
    of different episodes (robomimic demos, RLDS records, zarr episodes) do not, and the file's
    time is its episodes' times back to back (``offset_s``), never merged.

    Attributes:
        stream: The stream key as in the manifest.
        duration_s: The stream's duration.
        owned_seconds: Its seconds covered by counted matches (its own unjudged time excluded).
        new_seconds: Its judged seconds that are neither owned, "can't tell" nor repeated.
        cant_tell_seconds: Its seconds with evidence that proves neither way.
        indeterminate_seconds: Its seconds that could not be judged (static, featureless).
        repeated_seconds: Its seconds repeating other offered footage (not owned, not unjudged).
        episode: The dataset episode the stream belongs to, if the offer says.
        camera: The camera name, if known (else the last part of the stream key).
        offset_s: Where the stream's episode starts in the file's time (episodes back to back).
        unjudged: Its own not-judged and "can't tell" spans in its time, kept while the
            comparison runs so repeats are counted per stream (not written to reports).
    """

    stream: str
    duration_s: float
    owned_seconds: float = 0.0
    new_seconds: float = 0.0
    cant_tell_seconds: float = 0.0
    indeterminate_seconds: float = 0.0
    repeated_seconds: float = 0.0
    episode: int | None = None
    camera: str = ""
    offset_s: float = 0.0
    unjudged: list[tuple[float, float]] = field(default_factory=list, repr=False)

    @property
    def label(self) -> str:
        """"episode 3, cam_high" (or the camera alone, or the stream key)."""
        cam = self.camera or self.stream.rsplit("/", 1)[-1] or self.stream
        return cam if self.episode is None else f"episode {self.episode}, {cam}"


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
            are neither owned nor a repeat inside the offer, and not "can't tell".
        ambiguous: Stretches that match several owned episodes about equally (scripted repeats,
            the rig's home pose): no one of them is proven copied, so none is counted owned.
        cant_tell: Offered time with some evidence of being owned that does not prove it
            (below the floor, weak, ambiguous among episodes, or matching owned footage too
            still to place in time): neither owned nor new. Disjoint from owned and
            indeterminate time; ``reason`` says why (core/match/verdicts.py).
        streams: Per offered stream (camera of an episode), its own figures. A moment of the
            file counts owned when any of its cameras' footage there is owned, "can't tell" when
            none is owned and one is "can't tell", new when every camera judged there is new.
            Segment times are stream times; ``indeterminate`` and ``cant_tell`` spans are in the
            file's time, which lays episodes back to back (``StreamResult.offset_s``).
        near_frames: Where the "can't tell" time's near-identical frames lie in owned footage:
            up to :data:`NEAR_FRAMES_CAP` pairs (offered time in the file's time, owned time),
            thinned evenly; empty in reports before version 5.
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
    ambiguous: list[Segment] = field(default_factory=list)
    cant_tell: list[Span] = field(default_factory=list)
    streams: list[StreamResult] = field(default_factory=list)
    near_frames: list[NearFrame] = field(default_factory=list)

    def offset_of(self, stream: str) -> float:
        """Where ``stream``'s episode starts in this file's time (0 for one-episode files)."""
        for s in self.streams:
            if s.stream == stream:
                return s.offset_s
        return 0.0

    def file_spans(self, segments: Iterable[Segment]) -> list[tuple[float, float]]:
        """Segments' offered spans in the file's time (each stream's episode offset added)."""
        offsets = {s.stream: s.offset_s for s in self.streams if s.offset_s}
        return [(g.query_start + offsets.get(g.query_stream, 0.0), g.query_end + offsets.get(g.query_stream, 0.0))
                for g in segments]

    @property
    def cant_tell_seconds(self) -> float:
        """Offered seconds of this file with some, but not enough, evidence of being owned."""
        return sum(s.duration_s for s in self.cant_tell)

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
        cant_tell_seconds: Offered seconds neither shown owned nor shown new (sum of files').
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
    cant_tell_seconds: float = 0.0

    @property
    def demo_library(self) -> bool:
        """True when the owned side is the demo's sample library (``overlap demo``, the app's "Try
        the demo"), not the user's footage: the wording then names it instead of "you own"."""
        return self.settings.get(OWNED_LIBRARY_SETTING) == DEMO_LIBRARY

    @property
    def overlap_percent(self) -> float:
        if self.offered_seconds <= 0:
            return 0.0
        return min(100.0, 100.0 * self.matched_seconds / self.offered_seconds)


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



def judged_unmatched_seconds(file_result: FileResult) -> float:
    """Offered seconds of a file that were judged and shown to match nothing owned.

    Time that could not be judged (static, featureless) is neither matched nor unmatched,
    and neither is "can't tell" time (evidence that does not prove ownership either way).
    """
    f = file_result
    return max(0.0, f.duration_s - f.matched_seconds - f.indeterminate_seconds - f.cant_tell_seconds)


#: A camera counts as a new view of owned episodes when at least this many of its seconds are new.
NEW_VIEW_MIN_SECONDS = 1.0


#: The stream key of one tile of a tiled preview (core/ingest/readers/tiles.py): ``v:0/tile-2-of-4``,
#: ``v:0/tile-3-of-2x2``.
_TILE_KEY = re.compile(r"^(?P<base>.+)/tile-\d+-of-(?P<n>\d+(?:x\d+)?)$")


def new_camera_views(f: FileResult) -> list[StreamResult]:
    """The streams of ``f`` that are new footage of an episode the lab owns through another
    camera: a camera the lab does not own ("new camera view of owned episodes: cam_right_wrist,
    20 s"). Empty for one-stream files and for episodes nothing of which is owned.

    In a tiled preview the whole picture is no camera of its own (its tiles are), and only the
    tiling whose tiles match counts (a width that fits two tilings is cut both ways)."""
    owned_offsets = {s.offset_s for s in f.streams if s.owned_seconds > 0}
    tiles = {s.stream: m for s in f.streams if (m := _TILE_KEY.match(s.stream))}
    wholes = {m.group("base") for m in tiles.values()}
    owned_tilings = {(m.group("base"), m.group("n")) for k, m in tiles.items()
                     if any(s.stream == k and s.owned_seconds > 0 for s in f.streams)}
    out = []
    for s in f.streams:
        m = tiles.get(s.stream)
        if s.stream in wholes or (m is not None and (m.group("base"), m.group("n")) not in owned_tilings):
            continue
        if s.offset_s in owned_offsets and s.owned_seconds <= 0 and s.new_seconds >= NEW_VIEW_MIN_SECONDS:
            out.append(s)
    return out


#: ``Report.settings`` key naming the owned side when it is not the user's own library;
#: :data:`DEMO_LIBRARY` marks the demo's generated sample library. Absent: the user's library.
OWNED_LIBRARY_SETTING = "owned_library"
DEMO_LIBRARY = "demo"


#: ``Report.settings`` key recording that the offer was compared with itself
#: (:mod:`overlap_desktop.core.match.repeats`); reports without it never checked for repeats.
REPEATS_SETTING = "offer_repeats"


def repeats_checked(report: Report) -> bool:
    """True when the report's offer was compared with itself for internal repeats."""
    block = report.settings.get(REPEATS_SETTING)
    return isinstance(block, Mapping) and bool(block.get("checked"))


def identical_files(report: Report, a: str, b: str) -> bool:
    """True when offered files ``a`` and ``b`` are byte-identical (the manifest gives them the
    same sha256): a repeat between them is certain, whatever its fitted line's chance says.

    Reports made before checksums were compared (no ``identical_files`` in the repeats block)
    answer False.
    """
    block = report.settings.get(REPEATS_SETTING)
    groups = block.get("identical_files") if isinstance(block, Mapping) else None
    if a == b or not isinstance(groups, list):
        return False
    return any(isinstance(g, list) and a in g and b in g for g in groups)
