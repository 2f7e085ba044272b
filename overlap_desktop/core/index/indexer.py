"""Fingerprint folders of footage into the index: resumable, one transaction per file.

:func:`index_paths` walks the given files and folders, asks the reader registry which
items it can open, and fingerprints each new or changed item. Unchanged items (same
path, size, modification time and fingerprint settings) are skipped, so re-running
after an interruption or a purchase only does the new work. A file that cannot be
read is recorded with the reason and the job goes on. Cancelling (Ctrl-C, the GUI's
Cancel) keeps every finished file.

Where the files are fingerprinted -- here, in worker processes, on a Dask cluster -- is
chosen once per run (:func:`_engine_for`); the work itself is
:mod:`overlap_desktop.core.index.fingerprinting`'s and the commits are
:class:`~overlap_desktop.core.index.run.IndexRun`'s.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.engines.base import CloseInBackground
from overlap_desktop.core.index.fingerprinting import FileJob, fingerprint_settings
from overlap_desktop.core.index.run import PROGRESS_INTERVAL, IndexRun, IndexSummary
from overlap_desktop.core.index.walk import item_state, utf8_name, walk_candidates
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, Variant
from overlap_desktop.errors import (
    WRITE_ERRNOS,
    Cancelled,
    ConfigError,
    DiskFullError,
    UsageError,
    WriteError,
    write_failure_reason,
)

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.parallel import FileEngine
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.ingest.readers.base import Reader

__all__ = ["index_paths"]

log = logging.getLogger(__name__)


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
    #: Each item's identity (inode and change time, :func:`item_state`), "" when it cannot be read.
    keys: dict[Path, str] = field(default_factory=dict)


def index_paths(paths: Iterable[str | os.PathLike[str]], *, index: Index | Path | str | None = None,
                config: Config | None = None, forget_missing: bool = False, force: bool = False,
                progress: ProgressCallback | None = None,
                cancel: CancelCallback | None = None) -> IndexSummary:
    """Fingerprint every file and recording under ``paths`` into the index.

    Resumable: unchanged items are skipped; changed ones are fingerprinted again;
    items gone from disk are forgotten only with ``forget_missing``. Each item is
    committed in its own transaction, so an interruption loses at most the item in
    progress. Bad items are recorded (status ``error`` with the reason) and the job
    goes on. Inside a long video file (one stream, a reader that can seek), progress is
    saved every :data:`~overlap_desktop.core.ingest.resume.CHECKPOINT_S` of footage when
    it is fingerprinted in this process, and the next run continues from there.

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
            ``current_done`` its fraction; ``message`` is set once per finished item, and when an
            item continues from progress an interrupted run saved inside it: "resuming at 62% ...").
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
            # Pages of replaced fingerprints back to the disk, when there are many.
            idx.reclaim_free_space()
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
    return _Request(roots, config, variants, fingerprint_settings(config, variants), forget_missing, force,
                    progress, cancel)


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
    engine = _engine_for(req.config, plan.todo, plan.sizes, summary)
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
    keys: dict[Path, str] = {}
    for item, _ in items:
        try:
            size, mtime, keys[item] = item_state(item)
            sizes[item] = (size, mtime)
        except OSError:
            sizes[item], keys[item] = (0, 0), ""
    summary.files_seen = len(items)
    todo = [item for item, reader in items if reader is not None and utf8_name(str(item))
            and idx.file_state(item) != (*sizes[item], "ok", req.settings)]
    return _Plan(items, sizes, unlisted, todo, keys)


def _fingerprint_all(run: IndexRun, plan: _Plan, engine: FileEngine | None, req: _Request) -> None:
    """Fingerprint and commit every item that needs it: here in walk order, or on the engine
    largest first.

    Each item's row says ``running`` while it is being worked on; a cancel sets every
    unfinished one back to ``pending`` (files that finished anyway are committed).
    """
    order = plan.items
    if engine is not None:
        # Largest first (longest-processing-time first): a big file started last would
        # leave the other workers idle while it finishes. Stable, so equal sizes keep walk order.
        order = sorted(plan.items, key=lambda it: -plan.sizes[it[0]][0])
    try:
        for item, reader in order:
            run.pump(engine, req.cancel)
            size, mtime_ns = plan.sizes[item]
            key = plan.keys.get(item, "")
            if not run.needs_work(item, reader, size, mtime_ns, key or None, req.cancel):
                continue
            assert reader is not None  # needs_work refused reader-less items
            job = run.with_saved_progress(
                FileJob(str(item), reader.name, size, mtime_ns, req.config, req.variants, stat_key=key))
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
    from overlap_desktop.core.index.reading import is_under

    seen = {os.path.normcase(str(i)) for i, _ in plan.items}
    # Files inside a folder we could not list are unknown, not gone.
    gone = [g for g in _missing_rows(idx, req.roots, seen)
            if not any(is_under(g, str(folder)) for folder, _ in plan.unlisted)]
    if req.forget_missing and gone:
        summary.forgotten = idx.remove_files(gone)
    else:
        summary.missing = gone


def _disk_full_error(exc: BaseException, summary: IndexSummary, where: Path) -> WriteError:
    """The error for a full disk or another failed write (a file-size limit, a quota, a failing
    disk): each file is its own transaction, so everything finished is kept."""
    why = exc.__cause__ if isinstance(exc, WriteError) and exc.__cause__ is not None else exc
    path = getattr(exc, "path", None) or where
    kept = f"{summary.indexed} file(s) finished in this run were kept"
    if _full(exc):
        err: WriteError = DiskFullError(f"disk full while writing the index ({why}); {kept}; free some space and "
                                        "run again to continue", path=where)
    else:
        reason = getattr(exc, "reason", None) or write_failure_reason(getattr(exc, "errno", None), str(why))
        err = WriteError(f"cannot write the index ({reason}); {kept}; fix the cause and run again to "
                         "continue", path=path)
    err.summary = summary  # type: ignore[attr-defined]
    return err


def _engine_for(config: Config, todo: Sequence[Path], sizes: dict[Path, tuple[int, int]],
                summary: IndexSummary | None = None) -> FileEngine | None:
    """Where this run's files are fingerprinted: ``None`` for this process, else a pool or a cluster
    (the policy is :func:`~overlap_desktop.core.index.parallel.choose_engine`)."""
    from overlap_desktop.core.index.parallel import (
        ProcessEngine,
        choose_engine,
        cluster_engine,
        default_workers,
        machine_load,
    )

    address = str(config["index.cluster"] or "")
    choice = choose_engine([sizes[p][0] for p in todo], workers=int(config["index.workers"]),
                           cores=default_workers(), cluster=address, load=machine_load())
    if choice.note and summary is not None:
        summary.warnings.append(choice.note)
        log.info("%s", choice.note)
    if choice.kind == "cluster":
        return cluster_engine(address)
    return ProcessEngine(choice.workers) if choice.kind == "processes" else None


def _disk_full(exc: BaseException) -> bool:
    """True for a write that failed for a reason outside overlap, from SQLite or the OS
    (shards, lock file): a full disk, a file-size limit, a quota, a read-only or failing disk."""
    import apsw

    # WriteError: the index already translated SQLite's error (core/index/db.py).
    return isinstance(exc, (apsw.FullError, apsw.IOError, WriteError)) or (
        isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS)


def _full(exc: BaseException) -> bool:
    """True when the failed write was a full disk (or quota), not another write error."""
    import errno

    import apsw

    if isinstance(exc, WriteError):
        return isinstance(exc, DiskFullError)
    return isinstance(exc, apsw.FullError) or (isinstance(exc, OSError) and exc.errno in (
        errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)))


def _refuse_empty_roots(idx: Index, roots: Sequence[Path]) -> None:
    """Refuse ``forget_missing`` under a given folder that is empty while the index holds
    files under it (an unmounted disk's mount point looks exactly like that)."""
    from overlap_desktop.core.index.reading import is_under

    for root in roots:
        if not root.is_dir():
            continue
        try:
            with os.scandir(root) as it:
                if next(it, None) is not None:
                    continue
        except OSError:
            continue  # reported as unlisted; nothing under it is forgotten
        held = sum(1 for f in idx.files() if not f.provenance and is_under(f.path, str(root)))
        if held:
            raise UsageError(f"--forget-missing: this folder is empty but the index holds {held} file(s) under "
                             "it; if it is a disk that is not mounted, mount it and run again (nothing was "
                             "forgotten); add --force to forget them anyway", path=root)


def _missing_rows(idx: Index, roots: Sequence[Path], seen: set[str]) -> list[str]:
    """Index paths under ``roots`` that no longer exist on disk."""
    from overlap_desktop.core.index.reading import is_under

    out = []
    for f in idx.files():
        # Rows merged from another machine's index describe files that live there.
        if os.path.normcase(f.path) in seen or f.provenance:
            continue
        if any(is_under(f.path, str(r)) for r in roots) and not os.path.exists(f.path):
            out.append(f.path)
    return out
