"""The report as CSV: one row per matched stretch, for spreadsheets.

Names are neutralised for spreadsheets (visible control characters, no formulas); the file
is UTF-8 with a byte-order mark so spreadsheet programs on Windows read non-ASCII names.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.model import FileResult, Report, new_camera_views
from overlap_desktop.core.report.output import write_atomically
from overlap_desktop.core.report.segment_words import (
    ambiguous_episodes,
    describe_repeat,
    describe_segment,
    owned_moments,
)
from overlap_desktop.core.report.signing import report_signature_lines
from overlap_desktop.core.report.stream_words import new_camera_lines, stream_label
from overlap_desktop.core.report.wording import evidence_floor, headline, new_footage_sentence
from overlap_desktop.core.types import Segment

__all__ = ["CSV_COLUMNS", "write_report_csv"]

CSV_COLUMNS = (
    "kind", "query_file", "query_stream", "query_start", "query_end", "corpus_file", "corpus_stream",
    "corpus_start", "corpus_end", "speed", "mirrored", "rotation", "crop", "edge_side", "edge_depth",
    "frames", "mean_distance", "score", "description",
    # overlap.report/2 additions, appended so readers that go by position keep working.
    "chance", "speed_low", "speed_high", "repeated_seconds", "new_seconds",
    # Who signed the offer (issue 37), on the summary row only; appended like the columns above.
    "signature",
    # overlap.report/3: offered seconds neither shown owned nor shown new.
    "cant_tell_seconds",
    # overlap.report/4: a stream's own owned seconds, on ``stream`` rows.
    "owned_seconds",
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
    evidence, ``weak`` for weak evidence and ``ambiguous`` for a stretch matching several
    owned episodes about equally (none counted: "can't tell"), and ``repeat`` for a
    stretch repeating other offered footage (``corpus_*`` is then the other offered
    file); ``episode`` rows name the episode and camera of each piece of a matched stretch
    in an episode dataset; ``stream`` rows give each camera of each episode of a file of several
    streams its own owned, new and "can't tell" seconds. Files without any match get one
    ``no-match`` row so every offered file appears. Times are seconds.

    Returns:
        The path written.
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    fl = evidence_floor(report)
    blank = [""] * len(CSV_COLUMNS)
    summary = list(blank)
    summary[0] = "summary"
    summary[CSV_COLUMNS.index("description")] = _csv_text(" ".join(
        x for x in (headline(report), new_footage_sentence(report)) if x))
    summary[CSV_COLUMNS.index("repeated_seconds")] = f"{report.repeated_seconds:.3f}"
    summary[CSV_COLUMNS.index("new_seconds")] = f"{report.new_seconds:.3f}"
    summary[CSV_COLUMNS.index("signature")] = _csv_text(" ".join(report_signature_lines(report)))
    summary[CSV_COLUMNS.index("cant_tell_seconds")] = f"{report.cant_tell_seconds:.3f}"
    w.writerow(summary)

    def opt(x: float | None, spec: str) -> str:
        return "" if x is None else format(x, spec)

    def row(kind: str, s: Segment, f: FileResult) -> list[object]:
        v = s.variant
        if kind == "repeat":
            desc = describe_repeat(s)
        else:
            desc = describe_segment(s, below_floor=kind == "below-floor", floor_seconds=fl,
                                    weak=kind == "weak",
                                    ambiguous=ambiguous_episodes(f, s) if kind == "ambiguous" else 0,
                                    moments=owned_moments(f, s) if kind == "segment" else 0)
        return [kind, _csv_text(s.query_file or ""), _csv_text(s.query_stream), f"{s.query_start:.3f}",
                f"{s.query_end:.3f}", _csv_text(s.corpus_file), _csv_text(s.corpus_stream),
                f"{s.corpus_start:.3f}", f"{s.corpus_end:.3f}", f"{s.speed:.4f}", int(v.mirrored),
                v.rotation, "" if v.crop >= 1.0 else f"{v.crop:.4f}", v.edge or "",
                f"{v.edge_depth:.4f}" if v.edge else "", s.frames, f"{s.mean_distance:.2f}",
                f"{s.score:.4f}", _csv_text(desc), opt(s.chance, ".3g"), opt(s.speed_low, ".4f"),
                opt(s.speed_high, ".4f"), "", "", ""]

    for f in report.files:
        for kind, segs in (("segment", f.segments), ("below-floor", f.below_floor), ("weak", f.weak),
                           ("ambiguous", f.ambiguous), ("repeat", f.repeats)):
            for s in segs:
                r = row(kind, s, f)
                if not s.query_file:
                    r[1] = _csv_text(f.query_file)
                w.writerow(r)
        if not f.segments and not f.below_floor and not f.weak and not f.ambiguous and not f.repeats:
            w.writerow(["no-match", _csv_text(f.query_file)] + [""] * (len(CSV_COLUMNS) - 2))
        # One row per episode piece of a matched stretch (episode datasets): the label names the
        # episode and camera on both sides ("offered episode 41, cam_high, 00:12–00:31 matches ...").
        for e in f.episodes:
            if not isinstance(e, Mapping) or not e.get("label"):
                continue
            ep_row = list(blank)
            ep_row[0] = "episode-below-floor" if e.get("below_floor") else "episode"
            ep_row[1], ep_row[2] = _csv_text(f.query_file), _csv_text(e.get("query_stream", ""))
            ep_row[5], ep_row[6] = _csv_text(e.get("corpus_file", "")), _csv_text(e.get("corpus_stream", ""))
            for col in ("query_start", "query_end", "corpus_start", "corpus_end"):
                v = e.get(col)
                ep_row[CSV_COLUMNS.index(col)] = f"{float(v):.3f}" if isinstance(v, (int, float)) else ""
            ep_row[CSV_COLUMNS.index("description")] = _csv_text(e.get("label", ""))
            w.writerow(ep_row)
        _stream_rows(w, f, blank)
    # One row per matched evaluation example (the lab's own text; the vendor's is never known):
    # query_file/query_stream hold the example's source and position.
    block = report.text_overlap or {}
    for ex in block.get("matched_examples", []) if block.get("status") == "checked" else []:
        if not isinstance(ex, Mapping):
            continue
        grams = "; ".join(str(g.get("ngram", "")) for g in ex.get("ngrams", []) if isinstance(g, Mapping))
        text_row = ["text-overlap", _csv_text(ex.get("source", "")), _csv_text(ex.get("locator", ""))] + blank[3:]
        text_row[CSV_COLUMNS.index("description")] = _csv_text(
            f"evaluation example {ex.get('example')} shares an n-gram with the vendor's annotations: {grams}")
        w.writerow(text_row)
    p = Path(path)
    # utf-8-sig: spreadsheet programs on Windows then read non-ASCII names correctly.
    write_atomically(p, buf.getvalue().encode("utf-8-sig", errors="backslashreplace"))
    return p



def _stream_rows(w: Any, f: FileResult, blank: list[str]) -> None:
    """One ``stream`` row per stream of a file of several (its own figures, in its own time)."""
    if len(f.streams) < 2:
        return
    views = {s.stream for s in new_camera_views(f)}
    note = new_camera_lines(f)
    for s in f.streams:
        r = list(blank)
        r[0], r[1], r[2] = "stream", _csv_text(f.query_file), _csv_text(s.stream)
        r[CSV_COLUMNS.index("query_start")], r[CSV_COLUMNS.index("query_end")] = "0.000", f"{s.duration_s:.3f}"
        words = stream_label(s) + (f"; {'; '.join(note)}" if s.stream in views and note else "")
        r[CSV_COLUMNS.index("description")] = _csv_text(words)
        r[CSV_COLUMNS.index("repeated_seconds")] = f"{s.repeated_seconds:.3f}"
        r[CSV_COLUMNS.index("new_seconds")] = f"{s.new_seconds:.3f}"
        r[CSV_COLUMNS.index("cant_tell_seconds")] = f"{s.cant_tell_seconds:.3f}"
        r[CSV_COLUMNS.index("owned_seconds")] = f"{s.owned_seconds:.3f}"
        w.writerow(r)
