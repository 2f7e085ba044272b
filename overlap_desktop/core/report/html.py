"""The report as one self-contained HTML page, written through Jinja2 templates.

The templates live in ``templates/`` next to this module (package data: they ship in the
wheel and in the PyInstaller bundle) and are rendered with autoescaping on, so every value a
template prints is HTML-escaped by Jinja; nothing is escaped by hand here. On top of that the
environment's ``finalize`` passes every printed string through
:func:`~overlap_desktop.core.report.formats.safe_text`, so control, bidi-override and
invisible characters from a vendor's names become visible ``[U+XXXX]`` markers even where a
template author forgot to ask for it.

Output is bounded: at most :data:`MAX_HTML_FILE_ROWS` file rows, :data:`MAX_HTML_SEGMENT_ROWS`
stretch rows and :data:`MAX_HTML_PLOTS` plots; the rest is summarised (JSON and CSV keep all).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from overlap_desktop.core.report.formats import (
    format_amount,
    format_clock,
    format_date,
    format_duration,
    format_percent,
    safe_text,
    stream_words,
)
from overlap_desktop.core.report.glossary import GLOSSARY
from overlap_desktop.core.report.json_io import REPORT_SCHEMA, jsonable, tool_version
from overlap_desktop.core.report.model import FileResult, Report, identical_files, repeats_checked
from overlap_desktop.core.report.output import write_atomically
from overlap_desktop.core.report.scale import DISTANCE_SCALE, distance_level
from overlap_desktop.core.report.segment_words import chance_words, describe_flags, manipulation_words, speed_cell
from overlap_desktop.core.report.signing import report_signature_lines
from overlap_desktop.core.report.stream_words import new_camera_lines, stream_rows
from overlap_desktop.core.report.svgplot import NEAR_COLOUR, NEAR_RING, NEAR_WORDS, PlotView, plot_view
from overlap_desktop.core.report.wording import (
    evidence_floor,
    headline,
    headline_details,
    manifest_label,
    new_footage_sentence,
    text_overlap_sentence,
)
from overlap_desktop.core.types import Segment

__all__ = ["MAX_HTML_FILE_ROWS", "MAX_HTML_PLOTS", "MAX_HTML_SEGMENT_ROWS", "TEMPLATES", "render_page",
           "render_report_html", "write_report_html"]

#: Plots drawn in the HTML report; beyond this the file gets slow to open.
MAX_HTML_PLOTS = 60
#: File rows and matched-stretch rows written in the HTML report; beyond these the rest is
#: summarised in one line (the JSON and CSV keep everything). A manifest of many thousands of
#: files must not make a report a browser cannot open (issue 21: output bounded by a budget).
MAX_HTML_FILE_ROWS = 2000
MAX_HTML_SEGMENT_ROWS = 2000

#: Folder of the page templates (package data).
TEMPLATES = Path(__file__).parent / "templates"

_KIND_TITLES = {
    "compare": "Offer comparison",
    "self-dedupe": "Internal duplicates",
    "compare-offers": "Two offers compared",
    "audit": "Sample audit",
}
#: Setting names shown with the user-facing word (the library is an index internally).
_SETTING_WORDS = {"index": "library", "index_identity": "library identity", "index_path": "library folder",
                  "root": "seal (Merkle root)", "owned_library": "owned side"}
#: Terms explained at the end of every HTML report (see :data:`GLOSSARY`).
_REPORT_TERMS = ("owned footage", "offered footage", "library", "match", "new footage", "repeat",
                 "real footage", "evidence floor", "weak evidence", "can't tell", "chance of a coincidence",
                 "could not be judged", "how alike", "speed", "splice", "seal")


def _neutralise(value: Any) -> Any:
    """Jinja ``finalize``: untrusted text shown to people never hides or reorders characters.

    Markup (macro output, already rendered) passes unchanged; autoescaping then escapes the rest.
    """
    # Printable text has nothing to neutralise; checking that first keeps the many plot numbers cheap.
    # ``__html__``: markupsafe's mark of already-safe markup (Markup), which passes unchanged.
    if isinstance(value, str) and not hasattr(value, "__html__") and not value.isprintable():
        return safe_text(value)
    return value


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        # A folder next to this module rather than importlib resources: it is the same path
        # in a source checkout, an installed wheel and the PyInstaller bundle (which copies
        # the folder as data; installers/pyinstaller/overlap.spec).
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_neutralise,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        GLOSSARY=GLOSSARY, DISTANCE_SCALE=DISTANCE_SCALE, distance_level=distance_level,
        format_clock=format_clock, format_duration=format_duration, speed_cell=speed_cell,
        chance_words=chance_words, stream_words=stream_words, manipulation_words=manipulation_words,
        NEAR_COLOUR=NEAR_COLOUR, NEAR_RING=NEAR_RING, NEAR_WORDS=NEAR_WORDS,
    )
    return env


def render_page(template: str, context: Mapping[str, Any]) -> str:
    """Render one of the page templates (``report.html.j2``, ``verify.html.j2``).

    Args:
        template: File name in :data:`TEMPLATES`.
        context: The template's variables (untrusted strings welcome: they are neutralised
            and escaped).

    Returns:
        The page.
    """
    return _environment().get_template(template).render(context)


def segment_table(rows: list[tuple[FileResult, Segment]], *, repeats: bool = False,
                  report: Report | None = None) -> dict[str, Any]:
    """Context of the ``segment_table`` macro.

    ``repeats``: the rows are repeats inside the offer (the other side is offered footage);
    with ``report``, repeats between byte-identical files (same sha256) are marked certain.
    """
    identical = ({(f.query_file, s.corpus_file) for f, s in rows
                  if identical_files(report, f.query_file, s.corpus_file)} if repeats and report else set())
    return {"rows": rows, "repeats": repeats, "identical": identical,
            "with_chance": not repeats and any(s.chance is not None for _, s in rows)}


def _kv_rows(d: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            text = json.dumps(jsonable(v), ensure_ascii=False)
        elif k == "created" and isinstance(v, str):
            text = format_date(v)  # a date for people, not a raw ISO stamp
        else:
            text = str(jsonable(v))
        rows.append((_SETTING_WORDS.get(str(k), str(k)), safe_text(text, max_len=400)))
    return rows


def _top_context(report: Report) -> dict[str, Any]:
    """Title, headline, label, seal, details and the summary cards."""
    compare_kind = report.kind == "compare"
    n_seg = sum(len(f.segments) for f in report.files)
    n_weak = sum(len(f.weak) for f in report.files)
    cards = [
        (format_percent(report.overlap_percent),
         ("of offered time matches the demo's sample library" if report.demo_library
          else "of offered time matches footage you own") if compare_kind else "of offered time matches"),
        (format_duration(report.offered_seconds), "offered"),
        (format_duration(report.matched_seconds), "matched (offered time)"),
        (format_duration(report.real_footage_seconds), "real footage behind the matches"),
    ]
    if compare_kind:
        cards += [(format_duration(report.new_seconds), "new footage you would actually get"),
                  (format_duration(report.cant_tell_seconds), "can't tell (counted neither way)"),
                  (format_duration(report.repeated_seconds), "repeated inside the offer")]
    cards += [
        (format_duration(report.indeterminate_seconds), "could not be judged"),
        (f"{sum(1 for f in report.files if f.segments)} / {len(report.files)}", "files with matches"),
        (str(n_seg), "matched stretches"),
        (str(sum(len(f.below_floor) for f in report.files)), "below-floor matches"),
    ]
    if n_weak:
        cards.append((str(n_weak), "weak matches (not counted)"))
    root = report.manifest.get("root")
    return {
        "title": _KIND_TITLES.get(report.kind, "Overlap report"),
        "label": manifest_label(report, "label"),
        "label_what": {"self-dedupe": "Collection", "compare-offers": "Offer A"}.get(report.kind, "Offer"),
        "headline": headline(report),
        "new_sentence": new_footage_sentence(report),
        "root": safe_text(root, max_len=200) if isinstance(root, str) and root.strip() else "",
        "details": headline_details(report),
        "signatures": report_signature_lines(report),
        "cards": cards,
        "compare_kind": compare_kind,
    }


def _files_context(report: Report) -> dict[str, Any]:
    """The file table (best matches first, at most :data:`MAX_HTML_FILE_ROWS` rows)."""
    order = sorted(report.files, key=lambda f: (-f.matched_percent, -len(f.below_floor), f.query_file))
    rows = []
    for f in order[:MAX_HTML_FILE_ROWS]:
        flags = describe_flags(f)
        n_ev = len(f.below_floor) + len(f.weak) + len(f.ambiguous)
        rows.append({
            "name": f.query_file, "duration": format_duration(f.duration_s),
            "matched": format_percent(f.matched_percent), "bar": f"{min(100.0, max(0.0, f.matched_percent)):.1f}",
            # "–" for nothing, as the app shows it (not "0.0 s").
            "real": format_amount(f.real_footage_seconds), "repeated": format_amount(f.repeated_seconds),
            "new": format_amount(f.new_seconds), "not_judged": format_amount(f.indeterminate_seconds),
            "flags": flags,
            "uncounted": f"{n_ev} uncounted match{'es' if n_ev != 1 else ''}" if not flags and n_ev else "",
        })
    hidden = order[MAX_HTML_FILE_ROWS:]
    files_hidden = {"count": len(hidden), "duration": format_duration(sum(f.duration_s for f in hidden)),
                    "matched": sum(1 for f in hidden if f.segments)} if hidden else None
    return {"files": rows, "files_hidden": files_hidden}


def _plots_context(report: Report) -> dict[str, Any]:
    """One plot per (offered file, owned file) pair with matches, counted ones first."""
    pairs: dict[tuple[str, str], tuple[FileResult, list[tuple[Segment, bool]]]] = {}
    for f in report.files:
        for s in f.segments:
            pairs.setdefault((f.query_file, s.corpus_file), (f, []))[1].append((s, False))
        for s in [*f.below_floor, *f.weak, *f.ambiguous]:
            pairs.setdefault((f.query_file, s.corpus_file), (f, []))[1].append((s, True))
        for n in f.near_frames:  # "can't tell" time's near-identical frames get a chart too
            pairs.setdefault((f.query_file, n.corpus_file), (f, []))
    ranked = sorted(pairs.items(), key=lambda kv: (all(b for _, b in kv[1][1]),
                                                   -sum(s.query_duration for s, _ in kv[1][1])))
    plots: list[PlotView] = [plot_view(qf, cf, f.duration_s, segs, [n for n in f.near_frames if n.corpus_file == cf])
                             for (qf, cf), (f, segs) in ranked[:MAX_HTML_PLOTS]]
    return {"plots": plots, "plots_left_out": max(0, len(ranked) - MAX_HTML_PLOTS),
            "plots_near": any(p.near_dots for p in plots)}


def _evidence_context(report: Report) -> dict[str, Any]:
    """Matched stretches, repeats, weak and below-floor evidence, episodes, unjudged time."""
    seg_rows = [(f, s) for f in report.files for s in f.segments]
    return {
        "segments": segment_table(seg_rows[:MAX_HTML_SEGMENT_ROWS]),
        "segments_hidden": max(0, len(seg_rows) - MAX_HTML_SEGMENT_ROWS),
        "repeats": segment_table([(f, s) for f in report.files for s in f.repeats], repeats=True,
                                 report=report),
        "repeats_checked": repeats_checked(report),
        "weak": segment_table([(f, s) for f in report.files for s in f.weak]),
        "ambiguous": segment_table([(f, s) for f in report.files for s in f.ambiguous]),
        "cant_tell": [(f.query_file, sp) for f in report.files for sp in f.cant_tell],
        "below": segment_table([(f, s) for f in report.files for s in f.below_floor]),
        "floor": evidence_floor(report),
        "episodes": [(f.query_file, str(e.get("label", "")) + (" (below the evidence floor)"
                                                              if e.get("below_floor") else ""))
                     for f in report.files for e in f.episodes if isinstance(e, Mapping)],
        "indeterminate": [(f.query_file, sp) for f in report.files for sp in f.indeterminate],
        "streams": [(safe_text(f.query_file), row) for f in report.files for row in stream_rows(f)],
        "camera_notes": [(safe_text(f.query_file), lines) for f in report.files if (lines := new_camera_lines(f))],
    }


def _text_overlap_context(block: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The annotation-overlap section: a sentence and the lab's own matched examples."""
    if not block:
        return None
    examples = [ex for ex in block.get("matched_examples", []) if isinstance(ex, Mapping)]
    matched = block.get("matched", 0)
    return {
        "sentence": text_overlap_sentence(block),
        "checked": block.get("status") == "checked",
        "examples": [{"source": ex.get("source", ""), "locator": ex.get("locator", ""),
                      "text": safe_text(ex.get("text", ""), max_len=600),
                      "ngrams": [g.get("ngram", "") for g in ex.get("ngrams", []) if isinstance(g, Mapping)]}
                     for ex in examples],
        "more": matched - len(examples) if isinstance(matched, int) and matched > len(examples) else 0,
    }


def report_context(report: Report) -> dict[str, Any]:
    """Everything ``report.html.j2`` shows, computed from the report."""
    return {
        **_top_context(report), **_files_context(report), **_plots_context(report),
        **_evidence_context(report),
        "text_overlap": _text_overlap_context(report.text_overlap),
        "glossary_terms": _REPORT_TERMS,
        "tool_version": tool_version(report),
        "created": format_date(report.created) if report.created else "",
        "schema": REPORT_SCHEMA,
        "settings": _kv_rows(report.settings),
        "facts_title": {"self-dedupe": "Collection facts", "audit": "Manifest facts"}.get(report.kind,
                                                                                          "Offer facts"),
        "facts": _kv_rows(report.manifest),
    }


def render_report_html(report: Report) -> str:
    """The HTML report as a string (see :func:`write_report_html`)."""
    return render_page("report.html.j2", report_context(report))


def write_report_html(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report as one self-contained HTML file (inline CSS and SVG, no
    scripts, no external assets), atomically.

    Every string that came from a manifest or a file name is neutralised with
    :func:`~overlap_desktop.core.report.formats.safe_text` and HTML-escaped by the
    template, in text, attributes and SVG alike.

    Returns:
        The path written.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, render_report_html(report).encode("utf-8", errors="replace"))
    return p
