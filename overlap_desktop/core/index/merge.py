"""Combine fingerprint indexes built on several machines into one.

A lab (or a vendor) can fingerprint parts of a large collection on several machines
and merge the indexes afterwards: fingerprints are copied as they are, never
recomputed, so the merge takes seconds per thousand files and needs no footage.

Rules:

* Every source must hold fingerprints of the same hash and normalisation
  (``algo_id``/``prep_id``) as the destination; otherwise nothing is merged and the
  error names both values. Mixing them would make distances meaningless.
* Provenance is kept: each merged row records the source index identity, the source
  folder and the file's original path (and, for a row that was itself merged, the
  earlier origin), so a match can be traced to the machine that indexed the file.
* Identical files (same SHA-256 and size) are stored once: the first copy wins, and
  later copies are counted as duplicates.
* A path that already names *different* content in the destination keeps its
  content; the incoming file is stored under ``PATH@<source identity prefix>``.
* Merging the same source twice changes nothing (its rows are recognised).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import (
    WRITE_ERRNOS,
    DiskFullError,
    IndexError_,
    UsageError,
    WriteError,
    write_failure_reason,
)

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.reading import IndexedFile
    from overlap_desktop.core.index.store import Index

__all__ = ["MergeSummary", "merge_indexes"]


@dataclass
class MergeSummary:
    """What a merge did.

    Attributes:
        destination: The destination index folder.
        destination_identity: Its identity (uuid).
        sources: One dict per source: ``path``, ``identity``, ``files`` (ok files seen),
            ``merged``, ``duplicates``, ``skipped``.
        merged: Files copied into the destination.
        duplicates: ``(source path, kept path)`` of files not copied because identical
            content (SHA-256 + size) was already there.
        renamed: ``(original path, stored path)`` where the path named other content.
        skipped: ``(source path, reason)`` of rows not copied (failed or unfinished files).
        hours_merged: Footage hours copied.
    """

    destination: Path
    destination_identity: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    merged: int = 0
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    hours_merged: float = 0.0


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _origin(src: Index, f: IndexedFile) -> dict[str, Any]:
    """The provenance record for a row copied from ``src``."""
    prov: dict[str, Any] = {
        "source_index": src.identity,
        "source_path": str(src.path),
        "original_path": f.path,
        "indexed_at": f.indexed_at,
        "merged_at": _now(),
    }
    if f.provenance:
        # The row was itself merged: keep where it really came from.
        try:
            earlier = json.loads(f.provenance)
        except ValueError:
            earlier = {"note": f.provenance}
        prov["via"] = earlier
    return prov


def _provenance_of(f: IndexedFile) -> dict[str, Any] | None:
    if not f.provenance:
        return None
    try:
        d = json.loads(f.provenance)
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


def _same_origin(existing: IndexedFile, src: Index, f: IndexedFile) -> bool:
    prov = _provenance_of(existing)
    if not prov:
        return False
    return prov.get("source_index") == src.identity and prov.get("original_path") == f.path


def _open_sources(sources: Sequence[Index | Path | str], stack: list[Index]) -> list[Index]:
    from overlap_desktop.core.index.store import Index, open_index

    out: list[Index] = []
    for s in sources:
        if isinstance(s, Index):
            out.append(s)
        else:
            idx = open_index(Path(s), create=False, readonly=True)
            stack.append(idx)
            out.append(idx)
    return out


def merge_indexes(sources: Sequence[Index | Path | str], dest: Index | Path | str | None = None, *,
                  config: Config | None = None, progress: ProgressCallback | None = None,
                  cancel: CancelCallback | None = None) -> MergeSummary:
    """Copy the fingerprints of several indexes into ``dest``.

    Args:
        sources: Index folders (or open indexes) to copy from; opened read-only.
        dest: The destination folder or open index (created when missing); default:
            the configured index (``config["index.path"]``).
        config: Resolved settings (for the default destination).
        progress: Receives ``Progress(stage="merge", unit="files")`` per file.
        cancel: Polled between files; files merged so far are kept.

    Returns:
        A :class:`MergeSummary`.

    Raises:
        UsageError: no sources, or a source is the destination itself.
        IndexError_: a source is not an index, or a source's algo/prep differs from
            the destination's (both values named; nothing is merged).
        IndexBusyError: another process is writing to the destination.
        Cancelled: ``cancel`` returned True (finished files are kept).
    """
    from overlap_desktop.core.index.store import Index, open_index

    if not sources:
        raise UsageError("name at least one index to merge from")
    opened: list[Index] = []
    try:
        if isinstance(dest, Index):
            target = dest
        else:
            if dest is None:
                if config is None:
                    from overlap_desktop.config import load_config

                    config = load_config()
                dest = config.index_path
            target = open_index(Path(dest), create=True)
            opened.append(target)
        srcs = _open_sources(sources, opened)
        # Check everything before writing anything: a refused merge leaves no half-merged index.
        seen_ids: set[str] = set()
        for s in srcs:
            if s.identity == target.identity or os.path.realpath(s.path) == os.path.realpath(target.path):
                raise UsageError("cannot merge an index into itself", path=s.path)
            if (s.algo_id, s.prep_id) != (target.algo_id, target.prep_id):
                raise IndexError_(
                    f"holds {s.algo_id} / {s.prep_id} fingerprints but the destination {target.path} holds "
                    f"{target.algo_id} / {target.prep_id}; fingerprints of different hashes or "
                    "normalisations cannot be mixed (re-index that machine's footage with this version)",
                    path=s.path)
            if s.identity in seen_ids:
                raise UsageError("the same index is named twice", path=s.path)
            seen_ids.add(s.identity)
        summary = MergeSummary(destination=target.path, destination_identity=target.identity)
        try:
            return _merge(srcs, target, summary, progress=progress, cancel=cancel)
        except Exception as exc:
            if not _disk_full(exc):
                raise
            why = exc.__cause__ if isinstance(exc, WriteError) and exc.__cause__ is not None else exc
            if _only_full(exc):
                full: WriteError = DiskFullError(
                    f"disk full while merging into this index ({why}); the {summary.merged} file(s) merged "
                    "before the disk filled were kept; free some space and run the same merge again (files "
                    "already merged are recognised and skipped)", path=target.path)
            else:
                reason = getattr(exc, "reason", None) or write_failure_reason(getattr(exc, "errno", None), str(why))
                full = WriteError(
                    f"cannot write while merging into this index ({reason}); the {summary.merged} file(s) "
                    "merged before were kept; fix the cause and run the same merge again (files already "
                    "merged are recognised and skipped)", path=target.path)
            full.summary = summary  # type: ignore[attr-defined]
            raise full from exc
    finally:
        for idx in reversed(opened):
            idx.close()


def _disk_full(exc: BaseException) -> bool:
    """True for every shape a full disk takes while merging: the index's own error, SQLite's
    ``FullError`` (from a statement outside a guarded method) and ``ENOSPC`` from shard files."""

    import apsw

    # Any failed write (a file-size limit, a quota, a failing disk) is reported the same way.
    return isinstance(exc, (WriteError, apsw.FullError, apsw.IOError)) or (
        isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS)


def _only_full(exc: BaseException) -> bool:
    """True when the failed write was a full disk (or quota)."""
    import errno

    import apsw

    if isinstance(exc, WriteError):
        return isinstance(exc, DiskFullError)
    return isinstance(exc, apsw.FullError) or (
        isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT))


def _merge(srcs: list[Index], target: Index, summary: MergeSummary, *, progress: ProgressCallback | None,
           cancel: CancelCallback | None) -> MergeSummary:
    plans = [(s, s.files("ok"), s.files()) for s in srcs]
    total = sum(len(ok) for _, ok, _ in plans)
    done = 0
    with target.writer():
        by_content: dict[tuple[str, int], str] = {}
        by_path: dict[str, IndexedFile] = {}
        for f in target.files():
            # Every status: a local row that failed must not be overwritten by a merged one.
            by_path[f.path] = f
            if f.sha256 and f.status == "ok":
                by_content.setdefault((f.sha256, int(f.size)), f.path)
        for src, ok_files, all_files in plans:
            info: dict[str, Any] = {"path": str(src.path), "identity": src.identity, "files": len(ok_files),
                                    "merged": 0, "duplicates": 0, "skipped": 0}
            summary.sources.append(info)
            for f in all_files:
                if f.status != "ok":
                    summary.skipped.append((f.path, f.error or f"not fingerprinted ({f.status})"))
                    info["skipped"] += 1
            streams_of: dict[int, list[tuple[int, str]]] = {}
            for sid, fid, key in src.stream_ids():
                streams_of.setdefault(fid, []).append((sid, key))
            for f in ok_files:
                check_cancel(cancel)
                if progress is not None:
                    progress(Progress(stage="merge", done=done, total=total, unit="files", current=f.path))
                done += 1
                content = (f.sha256, int(f.size)) if f.sha256 else None
                kept = by_content.get(content) if content else None
                if kept is not None:
                    summary.duplicates.append((f.path, kept))
                    info["duplicates"] += 1
                    continue
                path = f.path
                existing = by_path.get(path)
                if existing is not None and not _same_origin(existing, src, f):
                    path = f"{f.path}@{src.identity[:8]}"
                    summary.renamed.append((f.path, path))
                streams = []
                for sid, _key in streams_of.get(f.id, []):
                    fp = src.stream_fingerprints(sid)
                    streams.append((src.stream_details(sid), fp))
                state = src.file_state(f.path)
                settings = state[3] if state is not None else None
                target.record_file(path, size=f.size, mtime_ns=f.mtime_ns, sha256=f.sha256 or "",
                                   reader=f.reader, streams=streams, settings=settings,
                                   provenance=json.dumps(_origin(src, f), ensure_ascii=False),
                                   indexed_at=f.indexed_at)
                if content:
                    by_content[content] = path
                by_path[path] = f
                summary.merged += 1
                info["merged"] += 1
                summary.hours_merged += f.hours
        if progress is not None:
            progress(Progress(stage="merge", done=done, total=total, unit="files",
                              message="building search shards"))
        target.seal(cancel=cancel)
    return summary
