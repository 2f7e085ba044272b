"""Does an offer's manifest describe the sample footage a seller showed? The audit's verdict per file.

``overlap audit`` fingerprints the sample and looks for it in the manifest
(:func:`~overlap_desktop.core.match.compare.audit_sample`); this module turns that report
into the answer: which sample files the manifest covers well enough, which it does not,
and which cannot be judged at all (static or featureless footage matches nothing, so it
must not count against the seller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - `overlap --help` reads DEFAULT_REQUIRE: keep this module light
    from overlap_desktop.core.report.model import FileResult, Report

__all__ = ["DEFAULT_REQUIRE", "covered_percent", "uncovered_files"]

#: Default share (percent) of each sample file's judgeable time the manifest must cover.
DEFAULT_REQUIRE = 80.0


def _judgeable_seconds(f: FileResult) -> float:
    return max(0.0, f.duration_s - f.indeterminate_seconds)


def covered_percent(f: FileResult) -> float | None:
    """Matched time over judgeable time (duration minus indeterminate time), in percent.

    Returns:
        ``None`` when nothing of the file can be judged.
    """
    judgeable = _judgeable_seconds(f)
    return None if judgeable <= 0.0 else 100.0 * f.matched_seconds / judgeable


def uncovered_files(report: Report, require: float = DEFAULT_REQUIRE) -> tuple[list[FileResult], list[FileResult]]:
    """Split an audit report's sample files into (covered less than ``require`` %, not judgeable).

    Args:
        report: What :func:`~overlap_desktop.core.match.compare.audit_sample` returned.
        require: The share of each file's judgeable time that must be covered, in percent.

    Returns:
        ``(short, unjudged)``, each in the report's order.
    """
    short: list[FileResult] = []
    unjudged: list[FileResult] = []
    for f in report.files:
        pct = covered_percent(f)
        if pct is None:
            unjudged.append(f)
        elif pct + 1e-9 < require:
            short.append(f)
    return short, unjudged
