"""Fingerprint folders of footage into the index: resumable, one transaction per file.

:func:`index_paths` walks the given files and folders, asks the reader registry which
items it can open, and fingerprints each new or changed item. Unchanged items (same
path, size, modification time and fingerprint settings) are skipped, so re-running
after an interruption or a purchase only does the new work. A file that cannot be
read is recorded with the reason and the job goes on. Cancelling (Ctrl-C, the GUI's
Cancel) keeps every finished file.

The SHA-256 of an item's bytes is computed in a helper thread while the frames are
being decoded (hashlib releases the GIL), so hashing costs almost no wall time.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.parallel import CloseInBackground
from overlap_desktop.core.index.run import PROGRESS_INTERVAL, IndexRun
from overlap_desktop.core.index.walk import changed_since, item_stat, sha256_item, utf8_name, walk_candidates
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    StreamFingerprints,
    StreamInfo,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import Cancelled, ConfigError, DiskFullError, MediaError, OverlapError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.parallel import Engine
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.ingest.readers.base import Reader

# walk_candidates and sha256_item live in core.index.walk; they stay importable from here
# (core.match.compare and older callers), as do item_stat and changed_since (worker tasks).
__all__ = ["IndexSummary", "changed_since", "fingerprint_file", "index_paths", "item_stat", "sha256_item",
           "walk_candidates"]

log = logging.getLogger(__name__)


@dataclass
class IndexSummary:
    """What an indexing run did.

    Attributes:
        files_seen: Items (files or recording folders) a reader claimed.
        indexed: Items fingerprinted in this run.
        skipped: Unchanged items skipped.
        failed: ``(path, reason)`` of items that could not be fingerprinted.
        hours_indexed: Footage hours fingerprinted in this run.
        hours_indeterminate: Of which excluded from matching (featureless / static).
        forgotten: Index rows removed because their file is gone (``forget_missing``).
        missing: Paths in the index under the given roots whose file is gone (kept unless
            ``forget_missing``).
        warnings: Sentences for the user (low sampling rate, skipped streams...).
        cancelled: The run was cancelled; finished items were kept.
        elapsed_s: Wall time of the run.
        bytes_indexed: Bytes of the items fingerprinted in this run.
        index_path: The index folder.
        engine: Where the fingerprinting ran ("this process", "2 worker processes", a cluster).
    """

    files_seen: int = 0
    indexed: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    hours_indexed: float = 0.0
    hours_indeterminate: float = 0.0
    forgotten: int = 0
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cancelled: bool = False
    elapsed_s: float = 0.0
    bytes_indexed: int = 0
    index_path: str = ""
    engine: str = "this process"

    @property
    def ok(self) -> bool:
        return not self.failed and not self.cancelled

    def to_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen, "indexed": self.indexed, "skipped": self.skipped,
            "failed": [{"path": p, "reason": r} for p, r in self.failed],
            "hours_indexed": self.hours_indexed, "hours_indeterminate": self.hours_indeterminate,
            "forgotten": self.forgotten, "missing": list(self.missing), "warnings": list(self.warnings),
            "cancelled": self.cancelled, "elapsed_s": self.elapsed_s, "bytes_indexed": self.bytes_indexed,
            "index_path": self.index_path, "engine": self.engine,
        }


# --------------------------------------------------------------------------- fingerprinting


def _settings(config: Config, variants: Sequence[Variant]) -> str:
    """The settings that change fingerprints; a file fingerprinted with others is redone."""
    return json.dumps({"fps": float(config["index.fps"]), "variants": [v.to_dict() for v in variants],
                       "quality_floor": int(config["index.quality_floor"]),
                       "static_seconds": float(config["index.static_seconds"])}, sort_keys=True)


def _fingerprint_item(path: Path, reader: Reader, *, config: Config, variants: Sequence[Variant],
                      on_fraction: Callable[[float], None] | None, cancel: CancelCallback | None,
                      warnings_out: list[str] | None = None,
                      decoder_threads: int = 0) -> list[tuple[StreamInfo, StreamFingerprints]]:
    from overlap_desktop.core.ingest.fingerprint import fingerprint_stream

    # Readers with options (readers.mcap_time, readers.image_fps, size caps) take them from this run's config.
    configure = getattr(reader, "configure", None)
    if callable(configure):
        configure(config)
    if decoder_threads and getattr(reader, "threads", None) == 0:
        # A worker's share of the cores, when the user left decoder threads automatic:
        # FFmpeg's automatic count assumes the whole machine, and N workers each using
        # every core would spend their time switching between threads.
        reader.threads = decoder_threads  # type: ignore[attr-defined]
    streams = reader.streams(path)
    if not streams:
        raise MediaError("no video or image stream found", path=path)
    total = sum(s.duration_s or 0.0 for s in streams) or None
    done_before = 0.0
    out: list[tuple[StreamInfo, StreamFingerprints]] = []
    errors: list[str] = []
    for s in streams:
        check_cancel(cancel)

        def on_frame(seconds: float, _base: float = done_before) -> None:
            if on_fraction is not None and total:
                on_fraction(min(1.0, (_base + seconds) / total))

        try:
            fp = fingerprint_stream(
                reader.frames(path, s, cancel=cancel), fps=float(config["index.fps"]), variants=variants,
                quality_floor=int(config["index.quality_floor"]),
                static_seconds=float(config["index.static_seconds"]), duration_s=s.duration_s,
                on_frame=on_frame, cancel=cancel)
        except (Cancelled, KeyboardInterrupt):
            raise
        except OverlapError as exc:
            errors.append(f"stream {s.key}: {exc.message}")
            continue
        if len(fp) == 0:
            errors.append(f"stream {s.key}: no decodable frames")
            continue
        out.append((s, fp))
        done_before += s.duration_s or fp.duration_s
        damaged = int((s.extra or {}).get("decode_errors") or 0)
        if damaged and warnings_out is not None:
            warnings_out.append(f"{path}: stream {s.key}: {damaged} undecodable packet(s) skipped (damaged file; "
                                "the rest was indexed)")
    if not out:
        reason = "; ".join(errors) if len(errors) > 1 else (errors[0].split(": ", 1)[1] if errors else
                                                           "no frames")
        raise MediaError(reason, path=path)
    if errors and warnings_out is not None:
        warnings_out.extend(f"{path}: {e} (skipped; other streams indexed)" for e in errors)
    return out


def fingerprint_file(path: str | os.PathLike[str], *, config: Config | None = None,
                     variants: Sequence[Variant] | None = None, progress: ProgressCallback | None = None,
                     cancel: CancelCallback | None = None) -> list[tuple[StreamInfo, StreamFingerprints]]:
    """Fingerprint one file or recording folder without touching any index.

    Used on the query side (audit samples, the demo), so by default only the upright
    variant is hashed; pass ``variants`` (e.g. :func:`variants_from_config`) for corpus-style codes.

    Args:
        path: The file or folder.
        config: Settings (``index.fps``, quality floor, static seconds); default: loaded.
        variants: Variants to hash; default ``(Variant(),)``.
        progress: Receives the fraction of the file done.
        cancel: Polled between frames.

    Returns:
        ``(stream info, fingerprints)`` per stream.

    Raises:
        MediaError: no reader claims the file, or it cannot be decoded.
        Cancelled: ``cancel()`` turned true.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.ingest.readers import reader_for

    config = config if config is not None else load_config()
    p = Path(os.path.abspath(os.fspath(path)))
    if not p.exists():
        raise MediaError("no such file or folder", path=p)
    reader = reader_for(p)

    def on_fraction(f: float) -> None:
        if progress is not None:
            progress(Progress(stage="fingerprint", done=f, total=1.0, unit="files", current=str(p),
                              current_done=f))

    try:
        return _fingerprint_item(p, reader, config=config, variants=tuple(variants or (Variant(),)),
                                 on_fraction=on_fraction, cancel=cancel)
    except (OverlapError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a decoder surprise is still a bad file, not a crash
        raise MediaError(_describe(exc), path=p) from exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OverlapError):
        return exc.message
    if isinstance(exc, MemoryError):
        return "out of memory while decoding"
    text = str(exc).strip() or type(exc).__name__
    return f"cannot decode ({type(exc).__name__}: {text})"


# --------------------------------------------------------------------------- the job


@dataclass
class _Request:
    """What one :func:`index_paths` call asked for, resolved and checked."""

    roots: list[Path]
    config: Config
    variants: tuple[Variant, ...]
    settings: str
    forget_missing: bool
    force: bool
    progress: ProgressCallback | None
    cancel: CancelCallback | None


@dataclass
class _Plan:
    """The walk's result: every item found, its size and mtime, and which ones need work."""

    items: list[tuple[Path, Reader | None]]
    sizes: dict[Path, tuple[int, int]]
    unlisted: list[tuple[Path, str]]
    todo: list[Path]


def index_paths(paths: Iterable[str | os.PathLike[str]], *, index: Index | Path | str | None = None,
                config: Config | None = None, forget_missing: bool = False, force: bool = False,
                progress: ProgressCallback | None = None,
                cancel: CancelCallback | None = None) -> IndexSummary:
    """Fingerprint every file and recording under ``paths`` into the index.

    Resumable: unchanged items are skipped; changed ones are fingerprinted again;
    items gone from disk are forgotten only with ``forget_missing``. Each item is
    committed in its own transaction, so an interruption loses at most the item in
    progress. Bad items are recorded (status ``error`` with the reason) and the job
    goes on.

    Args:
        paths: Files and folders.
        index: An open :class:`Index`, an index folder, or ``None`` for ``config["index.path"]``.
        config: Settings (default: loaded with the usual precedence).
        forget_missing: Remove index rows under ``paths`` whose file no longer exists.
            Refused (before any work) when a given folder is empty while the index holds
            files under it: an unmounted disk leaves an empty mount point, and forgetting
            every entry then would lose days of indexing. ``force`` allows it.
        force: Forget even under an empty folder (see ``forget_missing``).
        progress: Receives :class:`Progress` (``unit="bytes"``; ``current`` is the item and
            ``current_done`` its fraction; ``message`` is set once per finished item).
        cancel: Polled between frames and items.

    Returns:
        An :class:`IndexSummary`.

    Raises:
        UsageError: a path does not exist.
        IndexBusyError: another process is writing to the index.
        IndexError_: the index is unusable (network share, newer schema, other algo/prep).
        Cancelled: ``cancel()`` turned true (or Ctrl-C); finished items are kept. The
            exception's ``summary`` attribute holds the partial :class:`IndexSummary`.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.store import Index, open_index

    config = config if config is not None else load_config()
    summary = IndexSummary()
    req = _resolve_request(paths, config, summary, forget_missing=forget_missing, force=force,
                           progress=progress, cancel=cancel)
    idx: Index = index if isinstance(index, Index) else open_index(index, config=config)
    own = idx is not index
    summary.index_path = str(idx.path)
    started = time.monotonic()
    try:
        with idx.writer():
            idx.check_compatible()
            # Listed until the run finishes: a stopped run leaves the library incomplete.
            idx.begin_run(req.roots)
            _index_locked(idx, req, summary)
            idx.end_run(req.roots)
    except (Cancelled, KeyboardInterrupt) as exc:
        summary.cancelled = True
        summary.elapsed_s = time.monotonic() - started
        if isinstance(exc, Cancelled):
            exc.summary = summary  # type: ignore[attr-defined]
            raise
        # Ctrl-C: report it like a cancel so callers get the partial summary.
        cancelled = Cancelled()
        cancelled.summary = summary  # type: ignore[attr-defined]
        raise cancelled from exc
    except Exception as exc:
        if not _disk_full(exc):
            raise
        raise _disk_full_error(exc, summary, idx.path) from exc
    finally:
        if own:
            idx.close()
    summary.elapsed_s = time.monotonic() - started
    return summary


def _resolve_request(paths: Iterable[str | os.PathLike[str]], config: Config, summary: IndexSummary, *,
                     forget_missing: bool, force: bool, progress: ProgressCallback | None,
                     cancel: CancelCallback | None) -> _Request:
    """Check the roots and the fingerprint settings before the index is even opened."""
    from overlap_desktop.core.ingest.fingerprint import variants_from_config
    from overlap_desktop.core.ingest.frames import check_sample_rate

    roots = [Path(os.path.abspath(os.fspath(p))) for p in paths]
    if not roots:
        raise UsageError("give at least one file or folder to index")
    for p in roots:
        if not p.exists():
            raise UsageError("no such file or folder", path=p)
    low = check_sample_rate(float(config["index.fps"]), warn=False)
    if low:
        summary.warnings.append(low)
        log.warning("%s", low)
    try:
        variants = tuple(variants_from_config(config))
    except ValueError as exc:
        raise ConfigError(f"bad variant settings: {exc}") from exc
    return _Request(roots, config, variants, _settings(config, variants), forget_missing, force, progress, cancel)


def _index_locked(idx: Index, req: _Request, summary: IndexSummary) -> None:
    """The run under the writer lock: plan, fingerprint and commit, forget or report the
    missing, seal the shards."""
    plan = _plan(idx, req, summary)
    run = IndexRun(idx, summary, req.settings, float(sum(s for s, _ in plan.sizes.values())) or 1.0,
                   req.progress)
    if req.progress is not None:
        # How many items the walk found, before any work (for "k/N files" displays).
        req.progress(Progress(stage="scan", done=0, total=len(plan.items), unit="files"))
    run.emit(None, None)
    engine = _engine_for(req.config, plan.todo, plan.sizes)
    if engine is not None:
        summary.engine = engine.description
    try:
        _fingerprint_all(run, plan, engine, req)
    except BaseException:
        if engine is not None:
            engine.close()
        raise
    # Every file is committed: the workers exit (interpreter teardown, joins) while the writer
    # settles missing files and seals the shards, instead of before.
    closing = CloseInBackground(engine) if engine is not None else None
    try:
        _settle_missing(idx, req, plan, summary)
        idx.seal(cancel=req.cancel, progress=req.progress)
    except BaseException:
        if closing is not None:
            closing.join(raise_error=False)
        raise
    if closing is not None:
        closing.join()


def _plan(idx: Index, req: _Request, summary: IndexSummary) -> _Plan:
    """Walk the roots; stat every item; list those that are new or changed since they were indexed."""
    unlisted: list[tuple[Path, str]] = []
    items = list(walk_candidates(req.roots, exclude=[idx.path], unlisted=unlisted))
    if req.forget_missing and not req.force:
        _refuse_empty_roots(idx, req.roots)
    for folder, why in unlisted:
        summary.failed.append((str(folder), why))
    sizes: dict[Path, tuple[int, int]] = {}
    for item, _ in items:
        try:
            sizes[item] = item_stat(item)
        except OSError:
            sizes[item] = (0, 0)
    summary.files_seen = len(items)
    todo = [item for item, reader in items if reader is not None and utf8_name(str(item))
            and idx.file_state(item) != (*sizes[item], "ok", req.settings)]
    return _Plan(items, sizes, unlisted, todo)


def _fingerprint_all(run: IndexRun, plan: _Plan, engine: Engine | None, req: _Request) -> None:
    """Fingerprint and commit every item that needs it: here in walk order, or on the engine
    largest first.

    Each item's row says ``running`` while it is being worked on; a cancel sets every
    unfinished one back to ``pending`` (files that finished anyway are committed).
    """
    from overlap_desktop.core.index.parallel import FileJob

    order = plan.items
    if engine is not None:
        # Largest first (longest-processing-time first): a big file started last would
        # leave the other workers idle while it finishes. Stable, so equal sizes keep walk order.
        order = sorted(plan.items, key=lambda it: -plan.sizes[it[0]][0])
    try:
        for item, reader in order:
            run.pump(engine, req.cancel)
            size, mtime_ns = plan.sizes[item]
            if not run.needs_work(item, reader, size, mtime_ns, req.cancel):
                continue
            assert reader is not None  # needs_work refused reader-less items
            job = FileJob(str(item), reader.name, size, mtime_ns, req.config, req.variants)
            run.idx.mark_unfinished(item, size=size, mtime_ns=mtime_ns, status="running", reader=reader.name)
            if engine is None:
                run.serial(job, req.cancel)
            else:
                run.feed(engine, job, req.cancel)
        while engine is not None and run.in_flight:
            run.pump(engine, req.cancel, timeout=PROGRESS_INTERVAL)
    except (Cancelled, KeyboardInterrupt):
        if engine is not None:
            run.abort(engine)
        raise
    finally:
        run.sort_failed([i for i, _ in plan.items])


def _settle_missing(idx: Index, req: _Request, plan: _Plan, summary: IndexSummary) -> None:
    """Index rows under the roots whose file is gone: forgotten (``forget_missing``) or listed."""
    from overlap_desktop.core.index.reading import _under

    seen = {os.path.normcase(str(i)) for i, _ in plan.items}
    # Files inside a folder we could not list are unknown, not gone.
    gone = [g for g in _missing_rows(idx, req.roots, seen)
            if not any(_under(g, str(folder)) for folder, _ in plan.unlisted)]
    if req.forget_missing and gone:
        summary.forgotten = idx.remove_files(gone)
    else:
        summary.missing = gone


def _disk_full_error(exc: BaseException, summary: IndexSummary, where: Path) -> DiskFullError:
    """The error for a full disk: each file is its own transaction, so everything finished is kept."""
    why = exc.__cause__ if isinstance(exc, DiskFullError) and exc.__cause__ is not None else exc
    full = DiskFullError(f"disk full while writing the index ({why}); {summary.indexed} file(s) finished in "
                         "this run were kept; free some space and run again to continue", path=where)
    full.summary = summary  # type: ignore[attr-defined]
    return full


#: With ``index.workers = 0`` (one per core), a run with less new footage than this stays
#: in this process: starting worker processes (a Python and FFmpeg import each, about a
#: second of CPU) would cost more than it saves. An explicit ``--workers N`` always
#: uses N processes.
AUTO_MIN_BYTES = 32 * 1024 * 1024


def _engine_for(config: Config, todo: Sequence[Path], sizes: dict[Path, tuple[int, int]]) -> Engine | None:
    """Where this run's files are fingerprinted: ``None`` for this process, else a pool or a cluster."""
    from overlap_desktop.core.index.parallel import ProcessEngine, default_workers

    if not todo:
        return None
    address = str(config["index.cluster"] or "")
    if address:
        from overlap_desktop.core.index.cluster import DaskEngine

        return DaskEngine(address)
    wanted = int(config["index.workers"])
    n = min(wanted or default_workers(), len(todo))
    if n <= 1 or (wanted == 0 and sum(sizes[p][0] for p in todo) < AUTO_MIN_BYTES):
        return None
    return ProcessEngine(n)


def _disk_full(exc: BaseException) -> bool:
    """True for "no space left" from SQLite or the OS (shards, lock file)."""
    import errno

    import apsw

    # DiskFullError: the index already translated SQLite's FullError (core/index.py).
    return isinstance(exc, (apsw.FullError, DiskFullError)) or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC,
                                                                                          errno.EDQUOT))


def _refuse_empty_roots(idx: Index, roots: Sequence[Path]) -> None:
    """Refuse ``forget_missing`` under a given folder that is empty while the index holds
    files under it (an unmounted disk's mount point looks exactly like that)."""
    from overlap_desktop.core.index.reading import _under

    for root in roots:
        if not root.is_dir():
            continue
        try:
            with os.scandir(root) as it:
                if next(it, None) is not None:
                    continue
        except OSError:
            continue  # reported as unlisted; nothing under it is forgotten
        held = sum(1 for f in idx.files() if not f.provenance and _under(f.path, str(root)))
        if held:
            raise UsageError(f"--forget-missing: this folder is empty but the index holds {held} file(s) under "
                             "it; if it is a disk that is not mounted, mount it and run again (nothing was "
                             "forgotten); add --force to forget them anyway", path=root)


def _missing_rows(idx: Index, roots: Sequence[Path], seen: set[str]) -> list[str]:
    """Index paths under ``roots`` that no longer exist on disk."""
    from overlap_desktop.core.index.reading import _under

    out = []
    for f in idx.files():
        # Rows merged from another machine's index describe files that live there.
        if os.path.normcase(f.path) in seen or f.provenance:
            continue
        if any(_under(f.path, str(r)) for r in roots) and not os.path.exists(f.path):
            out.append(f.path)
    return out
