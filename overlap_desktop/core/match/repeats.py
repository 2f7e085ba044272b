"""Repeats inside an offer: the offer's manifest compared with itself.

A vendor can pad an offer with its own footage: a file that is another offered file
slowed to 0.5x, a clip cut twice into different files. None of that is owned, so the
comparison with the library alone would count it as new. Here the offer's streams are
matched against the same streams with the comparison engine
(:func:`~overlap_desktop.core.match.pipeline.compare_streams` over a
:class:`~overlap_desktop.core.match.corpora.MemoryCorpus`), the trivial line of each stream
against itself is dropped, and every repeated stretch is listed once.

Which copy is "the repeat": the one that bills more offered time for the same footage
(the slowed copy), so the new footage a buyer would get counts each real second once;
at the same speed, the later one (manifest order, or later in the same stream).

The figures filled in (:class:`~overlap_desktop.core.report.model.FileResult` fields):
``repeats`` (segments whose ``corpus_*`` side is the other offered stretch),
``repeated_seconds`` (their union minus owned and unjudged time) and ``new_seconds``
(judged time that is neither owned nor repeated), and the report's totals.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from overlap_desktop.core.match.accounting import union_seconds, union_seconds_excluding
from overlap_desktop.core.match.corpora import MemoryCorpus
from overlap_desktop.core.match.pipeline import compare_streams
from overlap_desktop.core.match.results import file_results
from overlap_desktop.core.match.segments import MatchParams, RawSegment
from overlap_desktop.core.match.types import Found, QueryStream
from overlap_desktop.core.report.model import REPEATS_SETTING, FileResult, Report
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback

__all__ = ["REPEAT_SPEED_TOLERANCE", "SETTLED_PAIRS", "fill_repeats", "find_repeats", "new_and_repeated_seconds"]

#: Relative speed difference under which two copies count as "the same speed"; then the
#: later copy is the repeat. (Symmetric in log space, so both directions of a pair agree.)
REPEAT_SPEED_TOLERANCE = 0.08


def _swap(s: RawSegment) -> RawSegment:
    """The same line seen from the other side (corpus becomes query).

    Query spans always increase; for a reversed line the new corpus side runs backwards.
    """
    speed = s.speed if s.speed != 0 else 1.0
    forward = s.corpus_start <= s.corpus_end
    pairs = s.pairs
    if pairs is not None and pairs.size:
        pairs = pairs[:, [1, 0, 2]]
        pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    return dataclasses.replace(
        s, query_start=min(s.corpus_start, s.corpus_end), query_end=max(s.corpus_start, s.corpus_end),
        corpus_start=s.query_start if forward else s.query_end,
        corpus_end=s.query_end if forward else s.query_start,
        speed=1.0 / speed, offset=-s.offset / speed, variant_idx=0, pairs=pairs)


def _overlaps_itself(s: RawSegment) -> bool:
    c0, c1 = sorted((s.corpus_start, s.corpus_end))
    return min(s.query_end, c1) > max(s.query_start, c0)


def _repeat_on_query_side(qi: int, sid: int, s: RawSegment) -> bool:
    """True when the query side of ``s`` is the copy to list as the repeat."""
    a = abs(s.speed)
    if a > 0 and abs(math.log(a)) > math.log1p(REPEAT_SPEED_TOLERANCE):
        # speed < 1: the query stretch is longer (the slowed copy bills more time).
        return a < 1.0
    if qi != sid:
        return qi > sid  # same speed: the later file in the manifest
    q_mid = 0.5 * (s.query_start + s.query_end)
    c_mid = 0.5 * (s.corpus_start + s.corpus_end)
    return q_mid > c_mid  # same stream: the later occurrence


#: Most stream pairs matched when the offer is checked against itself whose two files both have no
#: new time (their repeats change no figure; pairs come strongest first, so these are listed).
SETTLED_PAIRS = 64


def find_repeats(queries: Sequence[QueryStream], params: MatchParams, *,
                 settled: Collection[str] = (),
                 progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None) -> list[FileResult]:
    """Match an offer's streams against themselves.

    Args:
        queries: The offer's :class:`~overlap_desktop.core.match.types.QueryStream` list (as
            built for the comparison with the library).
        params: Matcher thresholds (the same evidence floor and rules as the comparison).
        settled: Offered files with no new time (all owned, not judged or "can't tell"): a
            repeat between two of them changes no figure, so at most :data:`SETTLED_PAIRS` such
            stream pairs are matched.
        progress: Receives ``Progress(stage="repeats", ...)``.
        cancel: Polled between shards and stream pairs.

    Returns:
        One :class:`FileResult` per offered file (manifest order) whose ``segments`` are
        the repeats found on that file (at or above the evidence floor and counted
        evidence); ``corpus_file`` of each is the other offered file.
    """
    qs = list(queries)
    done = set(settled)
    spent = [0]

    def pair_filter(qi: int, sid: int) -> str:
        if sid == qi:
            return "diagonal"  # a stream against itself: only lines off the identity
        if qs[qi].file == qs[sid].file:
            # Two streams of one recording (stereo or multi-camera topics) show the same scene by
            # design and a file's hours are counted once anyway: not a repeat.
            return "skip"
        if qs[qi].file in done and qs[sid].file in done:
            # No figure can change, so only the strongest such pairs are matched (their repeats are
            # still listed): a looping pattern cut into 80 owned pieces repeats in every piece, and
            # matching all 6,320 pairs took 200 of the comparison's 243 s (2 cores).
            spent[0] += 1
            if spent[0] > SETTLED_PAIRS:
                return "skip"
        return "keep"

    def relay(p: Progress) -> None:
        if progress is not None:
            progress(dataclasses.replace(p, stage="repeats", message="checking the offer against itself"))

    corpus = MemoryCorpus([(q.file, q.key, q.fp) for q in qs])
    try:
        found = compare_streams(qs, corpus, params, pair_filter=pair_filter, near=False, progress=relay,
                                cancel=cancel)
        # Within one stream a repeat must lie apart from its source: a line whose two spans
        # overlap is footage that changes slowly (a camera panning, a robot idling), not
        # footage shown twice.
        found = [f for f in found if f.query != f.stream or not _overlaps_itself(f.segment)]
        # Both directions of a pair are searched (no seed is lost to the asymmetry of the
        # search); each line is turned to face the copy that is the repeat, and the
        # duplicate from the other direction is then merged by the report's de-duplication.
        oriented = [Found(qi, sid, s) if _repeat_on_query_side(qi, sid, s) else Found(sid, qi, _swap(s))
                    for qi, sid, s in found]
        return file_results(qs, oriented, corpus, params)
    finally:
        corpus.close()


def new_and_repeated_seconds(f: FileResult) -> tuple[float, float]:
    """``(repeated_seconds, new_seconds)`` of one file from its segments, repeats and
    unjudged spans (see the module docstring), in the file's time (episodes back to back).
    Each stream's own repeated and new seconds are set too."""
    dur = max(0.0, f.duration_s)
    owned = f.file_spans(f.segments)
    # Not judged, and "can't tell" (evidence that proves neither way): never repeated, never new.
    unjudged = [(max(0.0, sp.start_s), min(dur, sp.end_s)) for sp in [*f.indeterminate, *f.cant_tell]
                if sp.end_s > sp.start_s]
    reps = f.file_spans(f.repeats)
    repeated = union_seconds_excluding(reps, owned + unjudged) if reps else 0.0
    taken = union_seconds([(max(0.0, a), min(dur, b)) for a, b in owned + unjudged + reps if b > a])
    for st in f.streams:
        mine = [(s.query_start, s.query_end) for s in f.repeats if s.query_stream == st.stream]
        if not mine:
            continue
        held = [(s.query_start, s.query_end) for s in f.segments if s.query_stream == st.stream] + st.unjudged
        st.repeated_seconds = round(union_seconds_excluding(mine, held), 3)
        st.new_seconds = round(max(0.0, st.new_seconds - st.repeated_seconds), 3)
    return round(repeated, 3), round(max(0.0, dur - taken), 3)


def fill_repeats(report: Report, queries: Sequence[QueryStream], params: MatchParams, *,
                 progress: ProgressCallback | None = None, cancel: CancelCallback | None = None,
                 sha256: Mapping[str, str] | None = None) -> None:
    """Find the offer's internal repeats and fill the report's repeat and new-footage figures.

    Called by :func:`~overlap_desktop.core.match.compare.compare` after the comparison with the
    library. Sets ``FileResult.repeats``, ``repeated_seconds``, ``new_seconds``, the
    report totals, and ``report.settings[REPEATS_SETTING]`` (so readers can tell "no
    repeats" from "not checked"). With ``sha256`` (offered file name -> checksum from the
    manifest) the block also lists ``identical_files``: groups of offered files that are the
    same bytes (see :func:`~overlap_desktop.core.report.model.identical_files`).
    """
    settled = [f.query_file for f in report.files
               if new_and_repeated_seconds(dataclasses.replace(f, repeats=[]))[1] <= 0.0]
    found = {fr.query_file: fr for fr in find_repeats(queries, params, settled=settled, progress=progress,
                                                     cancel=cancel)}
    for f in report.files:
        hit = found.get(f.query_file)
        f.repeats = list(hit.segments) if hit is not None else []
        f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    report.repeated_seconds = round(sum(f.repeated_seconds for f in report.files), 3)
    report.new_seconds = round(sum(f.new_seconds for f in report.files), 3)
    report.cant_tell_seconds = round(sum(f.cant_tell_seconds for f in report.files), 3)
    report.settings[REPEATS_SETTING] = {
        "checked": True,
        "files_with_repeats": sum(1 for f in report.files if f.repeats),
        "rule": "a repeated stretch is listed once: on the copy that bills more time, else the later one",
    }
    if sha256 is not None:
        # Offered files with the same checksum are the same bytes: a repeat between them is certain.
        by_hash: dict[str, list[str]] = {}
        for name, digest in sha256.items():
            if digest:
                by_hash.setdefault(digest, []).append(name)
        report.settings[REPEATS_SETTING]["identical_files"] = sorted(
            sorted(g) for g in by_hash.values() if len(g) > 1)
