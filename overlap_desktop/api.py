"""The public API of overlap desktop.

The CLI and the GUI are thin shells over these functions; so are scripts and
pipelines. Long-running functions take keyword-only ``progress`` (a callable that
receives :class:`~overlap_desktop.core.types.Progress`) and ``cancel`` (a callable
returning ``True`` to stop; checked between frames and files) and raise
:class:`~overlap_desktop.errors.Cancelled` after keeping finished work.

Names are resolved lazily so that importing this module (e.g. at GUI start-up)
does not load PyAV, pyqtgraph or the matcher until they are used.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# name -> module that defines it. One table, so the surface is visible in one place.
_EXPORTS: dict[str, str] = {
    # configuration and environment
    "Config": "overlap_desktop.config",
    "load_config": "overlap_desktop.config",
    "SETTINGS": "overlap_desktop.config",
    "doctor": "overlap_desktop.services.doctor",
    "available_readers": "overlap_desktop.core.ingest.readers",
    "episode_spans_for": "overlap_desktop.core.ingest.readers.lerobot",
    # shared types
    "Progress": "overlap_desktop.core.types",
    "CancelToken": "overlap_desktop.core.types",
    "Variant": "overlap_desktop.core.types",
    "Segment": "overlap_desktop.core.types",
    "StreamFingerprints": "overlap_desktop.core.types",
    # Core 1: fingerprints and the index
    "fingerprint_file": "overlap_desktop.core.index.indexer",
    "index_paths": "overlap_desktop.core.index.indexer",
    "IndexSummary": "overlap_desktop.core.index.indexer",
    "open_index": "overlap_desktop.core.index.store",
    "Index": "overlap_desktop.core.index.store",
    "IndexedFile": "overlap_desktop.core.index.reading",
    # Core 2: manifests and delivery verification
    "export_manifest": "overlap_desktop.core.manifest.format",
    "read_manifest": "overlap_desktop.core.manifest.format",
    "inspect_manifest": "overlap_desktop.core.manifest.format",
    "Manifest": "overlap_desktop.core.manifest.format",
    "ExportSummary": "overlap_desktop.core.manifest.format",
    "write_manifest": "overlap_desktop.core.manifest.format",
    "ManifestFile": "overlap_desktop.core.manifest.format",
    "ManifestStream": "overlap_desktop.core.manifest.format",
    "TextNgrams": "overlap_desktop.core.manifest.sections",
    "verify_delivery": "overlap_desktop.core.manifest.verify",
    "VerifyResult": "overlap_desktop.core.manifest.verify",
    "verify_verdict": "overlap_desktop.core.manifest.verify",
    "is_clutter": "overlap_desktop.core.manifest.verify",
    "write_verify_html": "overlap_desktop.core.manifest.verify",
    "write_verify_json": "overlap_desktop.core.manifest.verify",
    # Core 3: matching and reports
    "compare": "overlap_desktop.core.match.compare",
    "self_dedupe": "overlap_desktop.core.match.compare",
    "compare_offers": "overlap_desktop.core.match.compare",
    "audit_sample": "overlap_desktop.core.match.compare",
    "merge_indexes": "overlap_desktop.core.index.merge",
    "Report": "overlap_desktop.core.report.model",
    "write_report_json": "overlap_desktop.core.report.model",
    "write_report_html": "overlap_desktop.core.report.model",
    "write_report_csv": "overlap_desktop.core.report.model",
    "load_report_json": "overlap_desktop.core.report.model",
    # plain words for reports (shared by CLI, HTML and GUI so they say the same thing)
    "headline": "overlap_desktop.core.report.model",
    "headline_details": "overlap_desktop.core.report.model",
    "describe_flags": "overlap_desktop.core.report.model",
    "describe_segment": "overlap_desktop.core.report.model",
    "format_percent": "overlap_desktop.core.report.model",
    "format_clock": "overlap_desktop.core.report.model",
    "format_duration": "overlap_desktop.core.report.model",
    "FileResult": "overlap_desktop.core.report.model",
    "MergeSummary": "overlap_desktop.core.index.merge",
    "safe_text": "overlap_desktop.core.report.model",
    "report_to_dict": "overlap_desktop.core.report.model",
    "new_footage_sentence": "overlap_desktop.core.report.model",
    "describe_repeat": "overlap_desktop.core.report.model",
    "chance_words": "overlap_desktop.core.report.model",
    "speed_words": "overlap_desktop.core.report.model",
    "speed_text": "overlap_desktop.core.report.model",
    "DISTANCE_SCALE": "overlap_desktop.core.report.model",
    "DistanceLevel": "overlap_desktop.core.report.model",
    "distance_colour": "overlap_desktop.core.report.model",
    "distance_words": "overlap_desktop.core.report.model",
    "format_date": "overlap_desktop.core.report.model",
    "stream_words": "overlap_desktop.core.report.model",
    "GLOSSARY": "overlap_desktop.core.report.model",
    "glossary_tip": "overlap_desktop.core.report.model",
    "judged_unmatched_seconds": "overlap_desktop.core.report.model",
    "repeats_checked": "overlap_desktop.core.report.model",
    # one owned frame for display (the GUI's match preview)
    "frame_at": "overlap_desktop.services.preview",
    # first run
    "run_demo": "overlap_desktop.services.demo",
    "default_demo_dir": "overlap_desktop.services.demo",
    # text overlap (overlapy method)
    "text_overlap": "overlap_desktop.core.text.overlap",
    "check_hashed_overlap": "overlap_desktop.core.text.overlap",
    "keyed_ngram_hashes": "overlap_desktop.core.text.overlap",
    "TextOverlapResult": "overlap_desktop.core.text.overlap",
    "annotation_overlap": "overlap_desktop.core.match.annotations",
}

#: Defined in this module: where the desktop app keeps and saves things.
_LOCAL = ("documents_dir", "file_name_for", "vendor_workspace")

__all__ = sorted([*_EXPORTS, *_LOCAL])


def file_name_for(label: str | None, suffix: str, *, fallback: str = "overlap") -> str:
    """A file name made from an offer's label, safe on every platform.

    Args:
        label: The offer's label (chosen by a seller: any characters, any length).
        suffix: What follows the name, e.g. ``"-report.html"`` or ``".ovlm"``.
        fallback: Used when nothing of the label is left.

    Returns:
        E.g. ``"Q3-kitchen-teleop-report.html"`` for ``"Q3 kitchen teleop"``.
    """
    import re
    import unicodedata

    text = unicodedata.normalize("NFKD", label or "").encode("ascii", "ignore").decode("ascii")
    # Letters, digits, dots, dashes and underscores only: no separators, no reserved names' colons.
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:60].strip("-._")
    return (stem or fallback) + suffix


def documents_dir() -> Path:
    """The user's Documents folder (the home folder when there is none): where save dialogs start."""
    import platformdirs

    docs = Path(platformdirs.user_documents_dir())
    return docs if docs.is_dir() else Path.home()


def vendor_workspace(label: str, *, library: str | os.PathLike[str] | None = None) -> Path:
    """The private index folder where a seller's offer is fingerprinted, one per offer.

    Preparing a manifest must never write the offered footage into the lab's own
    library (screening that offer later would then report it as owned), so each
    offer gets its own index in the user data folder, named after the offer.

    Args:
        label: The offer's name as the seller typed it.
        library: The lab's library index folder; refusing to return it is a last guard.

    Returns:
        ``<user data folder>/vendor-workspaces/<name from label>`` (not created here).

    Raises:
        ValueError: the workspace would be the library itself.
    """
    import platformdirs

    from overlap_desktop.paths import APP_AUTHOR, APP_NAME

    root = Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR)) / "vendor-workspaces"
    folder = root / file_name_for(label, "", fallback="offer")
    if library is not None and folder.resolve() == Path(library).resolve():
        raise ValueError(f"the workspace for {label!r} would be the library itself ({library})")
    return folder


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    pass
