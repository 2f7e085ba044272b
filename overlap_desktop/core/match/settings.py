"""The comparison settings read from the configuration into the matcher's thresholds (they
come out again in the report: :func:`~overlap_desktop.core.match.reporting.report_settings`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from overlap_desktop.core.match.segments import MatchParams
from overlap_desktop.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config

__all__ = ["match_params"]


def match_params(config: Config | None = None, floor_seconds: float | None = None) -> MatchParams:
    """Matcher thresholds from the configuration (``match.*`` keys) and an explicit floor."""
    kw: dict[str, Any] = {}
    if config is not None:
        kw["floor_seconds"] = float(config["match.floor_seconds"])
        md = int(config["match.max_distance"])
        if md > 0:
            kw["accept_distance"] = md
            kw["seed_distance"] = min(MatchParams().seed_distance, md)
    if floor_seconds is not None:
        if floor_seconds < 0:
            raise UsageError(f"the evidence floor must not be negative (got {floor_seconds})")
        kw["floor_seconds"] = float(floor_seconds)
    return MatchParams(**kw)
