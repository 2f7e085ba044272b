"""The last stage of a comparison: per-file results gathered into the report model, with the
settings that reached them (``Report.settings``), so a report says how it was reached."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.search import MAX_HITS_PER_FRAME
from overlap_desktop.core.match.accounting import union_seconds
from overlap_desktop.core.match.evidence import EVIDENCE_ID
from overlap_desktop.core.match.floor import FLOOR_DECADES, FLOOR_GRACE
from overlap_desktop.core.match.results import SPEED_TOLERANCE
from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.core.report.model import FileResult, Report

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.store import Index

__all__ = ["build_report", "report_settings"]


def build_report(kind: str, files: list[FileResult], *, manifest: dict[str, Any], settings: dict[str, Any],
                 text_overlap: dict[str, Any] | None = None) -> Report:
    """The report of one comparison: its per-file results, their totals, the facts of the offer
    (``manifest``), the settings that reached them and, for ``compare``, the annotation overlap."""
    ind_total = sum(union_seconds([(sp.start_s, sp.end_s) for sp in f.indeterminate]) for f in files)
    return Report(
        kind=kind,
        offered_seconds=round(sum(f.duration_s for f in files), 3),
        matched_seconds=round(sum(f.matched_seconds for f in files), 3),
        real_footage_seconds=round(sum(f.real_footage_seconds for f in files), 3),
        indeterminate_seconds=round(ind_total, 3),
        cant_tell_seconds=round(sum(f.cant_tell_seconds for f in files), 3),
        files=files,
        manifest=manifest,
        settings=settings,
        text_overlap=text_overlap,
        created=datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    )


def report_settings(params: MatchParams, *, algo: str, prep: str, index: Index | None = None,
                    extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's ``settings`` block: the thresholds, the search and the evidence model used."""
    out: dict[str, Any] = {
        "algo": algo,
        "prep": prep,
        "floor_seconds": params.floor_seconds,
        "thresholds": {
            "seed_distance": params.seed_distance,
            "accept_distance": params.accept_distance,
            "extend_distance": params.extend_distance,
            "gap_seconds": params.gap_seconds,
            "min_frames": params.min_frames,
            "min_accept_ratio": params.min_accept_ratio,
            "speed_range": [params.min_speed, params.max_speed],
            "speed_tolerance": SPEED_TOLERANCE,
        },
        "search": {"method": "multi-index hashing, 10 x 24-bit chunks", "probe": params.probe,
                   "max_hits_per_frame": MAX_HITS_PER_FRAME},
        "evidence": {"model": EVIDENCE_ID, "max_chance": params.max_chance,
                     "list_chance": params.list_chance, "floor_grace": FLOOR_GRACE,
                     "floor_decades": FLOOR_DECADES},
    }
    if index is not None:
        out["index"] = {"identity": index.identity, "path": str(index.path),
                        "schema_version": index.schema_version}
    if extra:
        out.update(extra)
    return out
