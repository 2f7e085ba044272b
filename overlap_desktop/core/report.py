"""The comparison report: data model, JSON (versioned), HTML and CSV.

The data model is produced by :mod:`overlap_desktop.core.compare` and rendered here.
The JSON layout is specified in docs/report-schema.md; bump :data:`REPORT_SCHEMA`
on any incompatible change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from overlap_desktop.core.types import Segment, Span

__all__ = ["REPORT_SCHEMA", "FileResult", "Report"]

#: Identifier and version of the report JSON format.
REPORT_SCHEMA = "overlap.report/1"


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
        episodes: For datasets with episodes (LeRobot): per-segment episode labels.
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

    @property
    def matched_percent(self) -> float:
        return 0.0 if self.duration_s <= 0 else min(100.0, 100.0 * self.matched_seconds / self.duration_s)


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

    @property
    def overlap_percent(self) -> float:
        if self.offered_seconds <= 0:
            return 0.0
        return min(100.0, 100.0 * self.matched_seconds / self.offered_seconds)
