"""The public API of overlap desktop.

The CLI and the GUI are thin shells over these functions; so are scripts and
pipelines. Long-running functions take keyword-only ``progress`` (a callable that
receives :class:`~overlap_desktop.core.types.Progress`) and ``cancel`` (a callable
returning ``True`` to stop; checked between frames and files) and raise
:class:`~overlap_desktop.errors.Cancelled` after keeping finished work.

Names are resolved lazily so that importing this module (e.g. at GUI start-up)
does not load PyAV, pyqtgraph or the matcher until they are used.

The CLI and the GUI import this module and nothing else of the package (checked by
import-linter, see tests/unit/test_layers.py): the errors, exit statuses, settings and
progress types they need are exported here too, and so is every question they ask of
the core (``library_status``, ``check_offer``, ...).
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

# name -> module that defines it. One table, so the surface is visible in one place. A name added or moved
# here is also imported under `if TYPE_CHECKING:` at the end of this file, so type checkers see it.
_EXPORTS: dict[str, str] = {
    # configuration and environment
    "Config": "overlap_desktop.config",
    "load_config": "overlap_desktop.config",
    "SETTINGS": "overlap_desktop.config",
    "MAX_THREADS": "overlap_desktop.config",
    "user_config_file": "overlap_desktop.paths",
    "default_index_dir": "overlap_desktop.paths",
    "atomic_write_bytes": "overlap_desktop.core.fsutil",
    "doctor": "overlap_desktop.services.doctor",
    "missing_display_libraries": "overlap_desktop.services.display_libs",
    "display_libraries_message": "overlap_desktop.services.display_libs",
    "qt_uses_xcb": "overlap_desktop.services.display_libs",
    "FrameRateNeed": "overlap_desktop.services.frame_rates",
    "frame_rate_needs": "overlap_desktop.services.frame_rates",
    "index_with_frame_rates": "overlap_desktop.services.frame_rates",
    "self_dedupe_reused": "overlap_desktop.services.dedupe_cache",
    "needs_frame_rate": "overlap_desktop.services.frame_rates",
    "available_readers": "overlap_desktop.core.ingest.readers",
    "episode_spans_for": "overlap_desktop.core.ingest.readers.lerobot",
    # errors and exit statuses (every error the api raises is an OverlapError)
    "ExitCode": "overlap_desktop.errors",
    "OverlapError": "overlap_desktop.errors",
    "UsageError": "overlap_desktop.errors",
    "ConfigError": "overlap_desktop.errors",
    "InputError": "overlap_desktop.errors",
    "MediaError": "overlap_desktop.errors",
    "ManifestError": "overlap_desktop.errors",
    "IndexError_": "overlap_desktop.errors",
    "IndexBusyError": "overlap_desktop.errors",
    "DiskFullError": "overlap_desktop.errors",
    "WriteError": "overlap_desktop.errors",
    "WRITE_ERRNOS": "overlap_desktop.errors",
    "write_failure_reason": "overlap_desktop.errors",
    "MissingDependencyError": "overlap_desktop.errors",
    "CheckFailed": "overlap_desktop.errors",
    "Cancelled": "overlap_desktop.errors",
    # shared types
    "Progress": "overlap_desktop.core.types",
    "ProgressCallback": "overlap_desktop.core.types",
    "CancelCallback": "overlap_desktop.core.types",
    "CancelToken": "overlap_desktop.core.types",
    "Variant": "overlap_desktop.core.types",
    "Segment": "overlap_desktop.core.types",
    "StreamFingerprints": "overlap_desktop.core.types",
    # Core 1: fingerprints and the index
    "fingerprint_file": "overlap_desktop.core.index.fingerprinting",
    "index_paths": "overlap_desktop.core.index.indexer",
    "IndexSummary": "overlap_desktop.core.index.run",
    "open_index": "overlap_desktop.core.index.store",
    "Index": "overlap_desktop.core.index.store",
    "IndexedFile": "overlap_desktop.core.index.reading",
    # "is there a library yet?" and what it holds
    "library_status": "overlap_desktop.core.index.status",
    "LibraryStatus": "overlap_desktop.core.index.status",
    "library_files": "overlap_desktop.core.index.status",
    "library_completeness": "overlap_desktop.core.index.status",
    "LibraryCompleteness": "overlap_desktop.core.index.status",
    # Core 2: manifests and delivery verification
    "export_manifest": "overlap_desktop.core.manifest.export",
    "read_manifest": "overlap_desktop.core.manifest.parse",
    "inspect_manifest": "overlap_desktop.core.manifest.inspect",
    "Manifest": "overlap_desktop.core.manifest.format",
    "ExportSummary": "overlap_desktop.core.manifest.export",
    "write_manifest": "overlap_desktop.core.manifest.export",
    "ManifestFile": "overlap_desktop.core.manifest.format",
    "ManifestStream": "overlap_desktop.core.manifest.format",
    "TextNgrams": "overlap_desktop.core.manifest.format",
    "check_offer": "overlap_desktop.core.manifest.compat",
    "OfferCheck": "overlap_desktop.core.manifest.compat",
    "verify_delivery": "overlap_desktop.core.manifest.verify",
    "VerifyResult": "overlap_desktop.core.manifest.verify",
    "verify_verdict": "overlap_desktop.core.manifest.verify",
    "is_clutter": "overlap_desktop.core.manifest.verify",
    "write_verify_html": "overlap_desktop.core.manifest.verify",
    "write_verify_json": "overlap_desktop.core.manifest.verify",
    # the delivery audit: the quote checked against the footage that arrived
    "audit_delivery": "overlap_desktop.core.audit.run",
    "AuditResult": "overlap_desktop.core.audit.result",
    "FileAudit": "overlap_desktop.core.audit.result",
    "REPRODUCE_BITS": "overlap_desktop.core.audit.reproduce",
    "make_receipt": "overlap_desktop.core.audit.receipt",
    "write_receipt": "overlap_desktop.core.audit.receipt",
    "check_receipt": "overlap_desktop.core.audit.receipt",
    "audit_verdict": "overlap_desktop.core.audit.receipt",
    "file_line": "overlap_desktop.core.audit.receipt",
    "RECEIPT_SCHEMA": "overlap_desktop.core.audit.receipt",
    "write_receipt_html": "overlap_desktop.core.audit.receipt_html",
    # signed quotes (issue 37): the vendor's key, the buyer's known vendors, plain words
    "create_signing_key": "overlap_desktop.core.manifest.keys",
    "load_signing_key": "overlap_desktop.core.manifest.keys",
    "signing_key_info": "overlap_desktop.core.manifest.keys",
    "signing_key_file": "overlap_desktop.core.manifest.keys",
    "public_key_text": "overlap_desktop.core.manifest.keys",
    "VendorKey": "overlap_desktop.core.manifest.keys",
    "PASSPHRASE_ENV": "overlap_desktop.core.manifest.keys",
    "known_vendors": "overlap_desktop.core.manifest.vendors",
    "known_vendors_file": "overlap_desktop.core.manifest.vendors",
    "trust_key_file": "overlap_desktop.core.manifest.vendors",
    "forget_vendor": "overlap_desktop.core.manifest.vendors",
    "KnownVendor": "overlap_desktop.core.manifest.vendors",
    "signature_sentence": "overlap_desktop.core.report.signing",
    "signature_changed": "overlap_desktop.core.report.signing",
    "mixed_script_mark": "overlap_desktop.core.report.signing",
    "report_signature_lines": "overlap_desktop.core.report.signing",
    # Core 3: matching and reports
    "compare": "overlap_desktop.core.match.compare",
    "self_dedupe": "overlap_desktop.core.match.compare",
    "compare_offers": "overlap_desktop.core.match.compare",
    "audit_sample": "overlap_desktop.core.match.compare",
    "uncovered_files": "overlap_desktop.core.match.coverage",
    "covered_percent": "overlap_desktop.core.match.coverage",
    "DEFAULT_REQUIRE": "overlap_desktop.core.match.coverage",
    "merge_indexes": "overlap_desktop.core.index.merge",
    "Report": "overlap_desktop.core.report.model",
    "write_report_json": "overlap_desktop.core.report.json_io",
    "write_report_html": "overlap_desktop.core.report.html",
    "write_report_csv": "overlap_desktop.core.report.csv_io",
    "load_report_json": "overlap_desktop.core.report.json_io",
    # plain words for reports (shared by CLI, HTML and GUI so they say the same thing)
    "headline": "overlap_desktop.core.report.wording",
    "headline_details": "overlap_desktop.core.report.wording",
    "describe_flags": "overlap_desktop.core.report.segment_words",
    "describe_segment": "overlap_desktop.core.report.segment_words",
    "ambiguous_episodes": "overlap_desktop.core.report.segment_words",
    "format_percent": "overlap_desktop.core.report.formats",
    "format_clock": "overlap_desktop.core.report.formats",
    "format_duration": "overlap_desktop.core.report.formats",
    "format_estimate": "overlap_desktop.core.report.formats",
    "FileResult": "overlap_desktop.core.report.model",
    "MergeSummary": "overlap_desktop.core.index.merge",
    "safe_text": "overlap_desktop.core.report.formats",
    "report_to_dict": "overlap_desktop.core.report.json_io",
    "new_footage_sentence": "overlap_desktop.core.report.wording",
    "describe_repeat": "overlap_desktop.core.report.segment_words",
    "chance_words": "overlap_desktop.core.report.segment_words",
    "speed_words": "overlap_desktop.core.report.segment_words",
    "speed_text": "overlap_desktop.core.report.segment_words",
    "speed_cell": "overlap_desktop.core.report.segment_words",
    "stream_rows": "overlap_desktop.core.report.stream_words",
    "stream_lines": "overlap_desktop.core.report.stream_words",
    "new_camera_lines": "overlap_desktop.core.report.stream_words",
    "format_amount": "overlap_desktop.core.report.formats",
    "identical_files": "overlap_desktop.core.report.model",
    "hide_folder_names": "overlap_desktop.core.report.redact",
    "DISTANCE_SCALE": "overlap_desktop.core.report.scale",
    "DistanceLevel": "overlap_desktop.core.report.scale",
    "distance_colour": "overlap_desktop.core.report.scale",
    "distance_words": "overlap_desktop.core.report.scale",
    "distance_level_indices": "overlap_desktop.core.report.scale",
    "format_date": "overlap_desktop.core.report.formats",
    "stream_words": "overlap_desktop.core.report.formats",
    "GLOSSARY": "overlap_desktop.core.report.glossary",
    "glossary_tip": "overlap_desktop.core.report.glossary",
    "judged_unmatched_seconds": "overlap_desktop.core.report.model",
    "repeats_checked": "overlap_desktop.core.report.model",
    # one owned frame for display (the GUI's match preview)
    "frame_at": "overlap_desktop.services.preview",
    # first run
    "run_demo": "overlap_desktop.services.demo",
    "default_demo_dir": "overlap_desktop.services.demo",
    "VendorWorkspace": "overlap_desktop.services.workspaces",
    "list_vendor_workspaces": "overlap_desktop.services.workspaces",
    "remove_vendor_workspace": "overlap_desktop.services.workspaces",
    "note_vendor_workspace": "overlap_desktop.services.workspaces",
    "folder_has_footage": "overlap_desktop.services.workspaces",
    "folder_contents_words": "overlap_desktop.services.workspaces",
    "vendor_workspaces_root": "overlap_desktop.services.workspaces",
    # text overlap (overlapy method)
    "text_overlap": "overlap_desktop.core.text.overlap",
    "check_hashed_overlap": "overlap_desktop.core.text.overlap",
    "keyed_ngram_hashes": "overlap_desktop.core.text.ngrams",
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
    from overlap_desktop.services.workspaces import name_from_label

    # Letters of every script are kept ("Offre été 日本" and "Offre été 中国" do not share a file
    # name); separators, reserved characters and invisible ones are not.
    stem = name_from_label(label)
    if stem.upper() in {"CON", "PRN", "AUX", "NUL"} or re.fullmatch(r"(?i)(COM|LPT)\d", stem):
        stem = ""
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
    from overlap_desktop.services.workspaces import vendor_workspaces_root, workspace_folder_name

    # Letters of every script are kept: "Offre été 日本" and "Offre été 中国" get their own workspaces.
    folder = vendor_workspaces_root() / workspace_folder_name(label)
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
    # The same names as _EXPORTS, written by tools/sync_api_typing.py (tests/unit/test_layers.py
    # keeps the two in step), so `api.open_index(...)` in the shells is type-checked, not Any.
    from overlap_desktop.config import MAX_THREADS, SETTINGS, Config, load_config
    from overlap_desktop.core.audit.receipt import (
        RECEIPT_SCHEMA,
        audit_verdict,
        check_receipt,
        file_line,
        make_receipt,
        write_receipt,
    )
    from overlap_desktop.core.audit.receipt_html import write_receipt_html
    from overlap_desktop.core.audit.reproduce import REPRODUCE_BITS
    from overlap_desktop.core.audit.result import AuditResult, FileAudit
    from overlap_desktop.core.audit.run import audit_delivery
    from overlap_desktop.core.fsutil import atomic_write_bytes
    from overlap_desktop.core.index.fingerprinting import fingerprint_file
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.index.merge import MergeSummary, merge_indexes
    from overlap_desktop.core.index.reading import IndexedFile
    from overlap_desktop.core.index.run import IndexSummary
    from overlap_desktop.core.index.status import (
        LibraryCompleteness,
        LibraryStatus,
        library_completeness,
        library_files,
        library_status,
    )
    from overlap_desktop.core.index.store import Index, open_index
    from overlap_desktop.core.ingest.readers import available_readers
    from overlap_desktop.core.ingest.readers.lerobot import episode_spans_for
    from overlap_desktop.core.manifest.compat import OfferCheck, check_offer
    from overlap_desktop.core.manifest.export import ExportSummary, export_manifest, write_manifest
    from overlap_desktop.core.manifest.format import Manifest, ManifestFile, ManifestStream, TextNgrams
    from overlap_desktop.core.manifest.inspect import inspect_manifest
    from overlap_desktop.core.manifest.keys import (
        PASSPHRASE_ENV,
        VendorKey,
        create_signing_key,
        load_signing_key,
        public_key_text,
        signing_key_file,
        signing_key_info,
    )
    from overlap_desktop.core.manifest.parse import read_manifest
    from overlap_desktop.core.manifest.vendors import (
        KnownVendor,
        forget_vendor,
        known_vendors,
        known_vendors_file,
        trust_key_file,
    )
    from overlap_desktop.core.manifest.verify import (
        VerifyResult,
        is_clutter,
        verify_delivery,
        verify_verdict,
        write_verify_html,
        write_verify_json,
    )
    from overlap_desktop.core.match.annotations import annotation_overlap
    from overlap_desktop.core.match.compare import audit_sample, compare, compare_offers, self_dedupe
    from overlap_desktop.core.match.coverage import DEFAULT_REQUIRE, covered_percent, uncovered_files
    from overlap_desktop.core.report.csv_io import write_report_csv
    from overlap_desktop.core.report.formats import (
        format_amount,
        format_clock,
        format_date,
        format_duration,
        format_estimate,
        format_percent,
        safe_text,
        stream_words,
    )
    from overlap_desktop.core.report.glossary import GLOSSARY, glossary_tip
    from overlap_desktop.core.report.html import write_report_html
    from overlap_desktop.core.report.json_io import load_report_json, report_to_dict, write_report_json
    from overlap_desktop.core.report.model import (
        FileResult,
        Report,
        identical_files,
        judged_unmatched_seconds,
        repeats_checked,
    )
    from overlap_desktop.core.report.redact import hide_folder_names
    from overlap_desktop.core.report.scale import (
        DISTANCE_SCALE,
        DistanceLevel,
        distance_colour,
        distance_level_indices,
        distance_words,
    )
    from overlap_desktop.core.report.segment_words import (
        ambiguous_episodes,
        chance_words,
        describe_flags,
        describe_repeat,
        describe_segment,
        speed_cell,
        speed_text,
        speed_words,
    )
    from overlap_desktop.core.report.signing import (
        mixed_script_mark,
        report_signature_lines,
        signature_changed,
        signature_sentence,
    )
    from overlap_desktop.core.report.stream_words import new_camera_lines, stream_lines, stream_rows
    from overlap_desktop.core.report.wording import headline, headline_details, new_footage_sentence
    from overlap_desktop.core.text.ngrams import keyed_ngram_hashes
    from overlap_desktop.core.text.overlap import TextOverlapResult, check_hashed_overlap, text_overlap
    from overlap_desktop.core.types import (
        CancelCallback,
        CancelToken,
        Progress,
        ProgressCallback,
        Segment,
        StreamFingerprints,
        Variant,
    )
    from overlap_desktop.errors import (
        WRITE_ERRNOS,
        Cancelled,
        CheckFailed,
        ConfigError,
        DiskFullError,
        ExitCode,
        IndexBusyError,
        IndexError_,
        InputError,
        ManifestError,
        MediaError,
        MissingDependencyError,
        OverlapError,
        UsageError,
        WriteError,
        write_failure_reason,
    )
    from overlap_desktop.paths import default_index_dir, user_config_file
    from overlap_desktop.services.dedupe_cache import self_dedupe_reused
    from overlap_desktop.services.demo import default_demo_dir, run_demo
    from overlap_desktop.services.display_libs import display_libraries_message, missing_display_libraries, qt_uses_xcb
    from overlap_desktop.services.doctor import doctor
    from overlap_desktop.services.frame_rates import (
        FrameRateNeed,
        frame_rate_needs,
        index_with_frame_rates,
        needs_frame_rate,
    )
    from overlap_desktop.services.preview import frame_at
    from overlap_desktop.services.workspaces import (
        VendorWorkspace,
        folder_contents_words,
        folder_has_footage,
        list_vendor_workspaces,
        note_vendor_workspace,
        remove_vendor_workspace,
        vendor_workspaces_root,
    )
