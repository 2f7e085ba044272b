"""What "My library" says: the summary line, the resume banner and each file's status."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from overlap_desktop.gui.common import count_of, fmt_hours
from overlap_desktop.gui.library_data import START_HERE

__all__ = ["INDEXING_TEXT", "NOT_CHECKED_TIP", "NOT_CHECKED_WORDS", "STATUS_WORDS", "done_words", "resume_text",
           "status_cell", "summary_text"]

STATUS_WORDS = {"ok": "Ready", "error": "Could not be read", "pending": "Not finished", "running": "Being read"}
INDEXING_TEXT = "Indexing… files appear here as they are finished."
#: A ready file that changed on disk (a new date, a backup restore) and that a stopped re-scan had
#: not reached: it is compared with its earlier fingerprints, so it is ready, but not up to date.
NOT_CHECKED_WORDS = "Ready, not checked again"
NOT_CHECKED_TIP = ("This file changed on disk (a new date or size) since it was indexed, and indexing was "
                   "stopped before it got here. Offers are compared with its earlier fingerprints until "
                   "then. Click \"Resume indexing\" to check it (same bytes: nothing is read again).")


def status_cell(status: str, path: str, not_checked: Collection[str]) -> tuple[str, str]:
    """``(words, tooltip)`` for a file's Status cell."""
    if status == "ok" and path in not_checked:
        return NOT_CHECKED_WORDS, NOT_CHECKED_TIP
    return STATUS_WORDS.get(status, status), ""


def summary_text(files: Sequence[Any], *, indexing: bool, unfinished: bool) -> str:
    """The line above the file list: what the library holds, or where to start."""
    ok = [f for f in files if f.status == "ok"]
    bad = [f for f in files if f.status == "error"]
    pending = [f for f in files if f.status == "pending"]
    if indexing and not ok and not bad:
        return INDEXING_TEXT  # never "Your library is empty" under a running progress bar
    if not ok and not bad and (unfinished or pending):
        return ("Nothing is in your library yet: indexing was stopped before the first file finished. "
                "Click \"Resume indexing\" to go on.")
    if not files:
        return START_HERE
    hours = sum((f.duration_s or 0.0) for f in ok)
    indet = sum((f.indeterminate_s or 0.0) for f in ok)
    text = f"{count_of(len(ok), 'file')} ready, {fmt_hours(hours)} of footage."
    if indet > 0.5:
        text += (f" {fmt_hours(indet)} could not be judged (static or featureless scenes such "
                 "as a robot standing still); it is never counted either way.")
    if bad:
        text += f" {count_of(len(bad), 'file')} could not be read (see Problem)."
    if pending and not indexing:
        text += f" {len(pending)} not finished yet."
    return text


def resume_text(left: int, not_checked: int, *, startup: bool) -> str:
    """The banner of a job that did not finish: how many files are left, and why some of them are
    listed as ready (a re-scan stopped before it checked them again)."""
    text = "Indexing did not finish last time" if startup else "Indexing was stopped"
    if left:
        text += f" ({count_of(left, 'file')} left)."
    else:
        text += "."
    if not_checked:
        one = not_checked == 1
        who = (("It is" if one else "They are") if not_checked >= left
               else f"{not_checked} of them {'is' if one else 'are'}")
        text += (f" {who} listed as \"{NOT_CHECKED_WORDS}\": changed on disk since indexed, "
                 f"{'it is' if one else 'they are'} compared with {'its' if one else 'their'} earlier "
                 "fingerprints until checked.")
    return text + " Files already finished are kept; resume to do the rest."


def done_words(summary: Any) -> str:
    """What a finished indexing job did, said after the summary line (the progress panel closes)."""
    failed = len(getattr(summary, "failed", []) or [])
    forgotten = int(getattr(summary, "forgotten", 0) or 0)
    if not summary.indexed and not failed and not forgotten:
        text = "Checked just now: nothing new or changed" + (
            f" ({count_of(summary.skipped, 'file')} unchanged)." if summary.skipped else ".")
    else:
        parts = []
        if summary.indexed:
            parts.append(f"{count_of(summary.indexed, 'file')} added or updated "
                         f"({fmt_hours(summary.hours_indexed * 3600.0)})")
        if summary.skipped:
            parts.append(f"{summary.skipped} unchanged")
        if forgotten:
            parts.append(f"{forgotten} gone from disk and forgotten")
        if failed:
            parts.append(f"{failed} could not be read")
        text = "Just now: " + ", ".join(parts) + "."
    for w in list(getattr(summary, "warnings", []) or [])[:3]:
        text += " " + str(w)
    return text
