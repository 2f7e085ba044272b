"""Plain words for reports, shared by the CLI, the HTML report and the app so they say the same.

This module holds the sentences about a whole report (the headline and what qualifies it);
numbers and untrusted text are formatted by :mod:`~overlap_desktop.core.report.formats`, one
matched stretch is described by :mod:`~overlap_desktop.core.report.segment_words`. Import each
word from the module that defines it (the shells get them all from ``overlap_desktop.api``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overlap_desktop.core.report.formats import (
    format_duration,
    format_percent,
    pair_of_durations,
    safe_text,
)
from overlap_desktop.core.report.model import Report, repeats_checked

__all__ = ["evidence_floor", "headline", "headline_details", "manifest_label", "new_footage_sentence",
           "text_overlap_sentence"]


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
    amounts = pair_of_durations(report.matched_seconds, report.offered_seconds)
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
    # The demo compares with its own sample library: "you already own" would be untrue (issue 34).
    owned = "footage in the demo's sample library (not yours)" if report.demo_library else "footage you already own"
    # "These hours" only when there are hours: a 31 s offer is "this footage".
    if report.offered_seconds >= 3600:
        return f"{pct} of these hours ({amounts}) match {owned}."
    return f"{pct} of this footage ({amounts}) matches {owned}."


def new_footage_sentence(report: Report) -> str:
    """The figure a buyer pays for, in one sentence (``compare`` reports; ``""`` otherwise).

    Example: ``"New footage you would actually get: 0.5 of 2.0 h (25%): not owned and not
    repeated inside the offer."`` New footage is judged time that is neither owned nor a
    repeat of other offered footage; time that could not be judged is never counted as new.
    Reports made before repeats were checked say so instead of claiming there are none.
    """
    if report.kind != "compare":
        return ""
    amounts = pair_of_durations(report.new_seconds, report.offered_seconds)
    offered = report.offered_seconds
    share = format_percent(100.0 * report.new_seconds / offered) if offered > 0 else "0%"
    if repeats_checked(report):
        tail = (f" Can't tell for {format_duration(report.cant_tell_seconds)} (counted neither way)."
                if report.cant_tell_seconds > 0 else "")
        return (f"New footage you would actually get: {amounts} ({share}), not owned and not repeated "
                f"inside the offer.{tail}")
    return (f"New footage you would get: {amounts} ({share}), not owned (this report did not check the "
            "offer for repeats inside it).")


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
        library = "the demo's sample library" if report.demo_library else "your library"
        out.append(f"The other {format_duration(unmatched)} ({share}) matched nothing in {library}.")
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

