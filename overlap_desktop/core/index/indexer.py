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

import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    from overlap_desktop.core.index.parallel import Engine, FileJob, FileOutcome
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.ingest.readers.base import Reader

__all__ = ["IndexSummary", "fingerprint_file", "index_paths", "walk_candidates"]

log = logging.getLogger(__name__)

#: File and folder names that are never footage (OS metadata, recycle bins).
SYSTEM_NAMES = frozenset({
    "thumbs.db", "desktop.ini", "$recycle.bin", "system volume information", "__macosx",
    "lost+found", "$windows.~bt", "$windows.~ws", "recycler",
})
_WIN_HIDDEN_OR_SYSTEM = 0x2 | 0x4  # FILE_ATTRIBUTE_HIDDEN | FILE_ATTRIBUTE_SYSTEM
_HASH_CHUNK = 1 << 20
#: Progress callbacks at most this often (seconds) within a file.
_PROGRESS_INTERVAL = 0.1


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


# --------------------------------------------------------------------------- walking


def _hidden(entry: os.DirEntry[str] | Path, st: os.stat_result | None = None) -> bool:
    name = entry.name
    if name.startswith(".") or name.lower() in SYSTEM_NAMES or name.startswith("~$"):
        return True
    attrs = getattr(st, "st_file_attributes", 0) if st is not None else 0
    return bool(attrs & _WIN_HIDDEN_OR_SYSTEM)


def _claim(path: Path) -> Reader | None:
    from overlap_desktop.core.ingest.readers import reader_for

    try:
        return reader_for(path)
    except MediaError:
        return None


def walk_candidates(paths: Iterable[str | os.PathLike[str]], *, exclude: Sequence[Path] = (),
                    unlisted: list[tuple[Path, str]] | None = None) -> Iterator[tuple[Path, Reader | None]]:
    """Yield ``(item, reader)`` for every file or recording folder under ``paths``.

    Folders are walked recursively in name order; hidden and system entries are
    skipped (unless named explicitly); symlinked folders are followed once (a loop is
    not followed twice). A folder that cannot be listed is appended to ``unlisted`` with
    the reason (and logged), so callers can report it and must not treat what it holds
    as gone. A folder a reader claims (an image sequence, a LeRobot
    dataset, a rosbag2 folder) is one item and is not descended into. An explicitly
    named file no reader claims is yielded with ``reader=None`` so it can be reported.

    Raises:
        UsageError: a given path does not exist.
    """
    excluded = {os.path.realpath(p) for p in exclude}
    seen_dirs: set[tuple[int, int]] = set()
    seen_items: set[str] = set()

    def emit(p: Path, reader: Reader | None) -> Iterator[tuple[Path, Reader | None]]:
        real = os.path.realpath(p)
        if real in seen_items:
            return
        seen_items.add(real)
        yield p, reader

    def walk_dir(d: Path) -> Iterator[tuple[Path, Reader | None]]:
        try:
            st = d.stat()
        except OSError:
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs or os.path.realpath(d) in excluded:
            return
        seen_dirs.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", d, exc.strerror)
            if unlisted is not None:
                unlisted.append((d, f"cannot list this folder: {exc.strerror or exc}; its files were not indexed"))
            return
        for e in entries:
            try:
                est = e.stat()
            except OSError as exc:
                # A dangling symlink or a symlink loop: say so, the walk goes on.
                log.warning("%s: skipped: %s", e.path, exc.strerror or exc)
                continue
            if _hidden(e, est):
                continue
            p = Path(e.path)
            if stat.S_ISDIR(est.st_mode):
                reader = _claim(p)
                if reader is not None:
                    yield from emit(p, reader)
                else:
                    yield from walk_dir(p)
            elif stat.S_ISREG(est.st_mode):
                reader = _claim(p)
                if reader is not None:
                    yield from emit(p, reader)

    roots = [Path(os.path.abspath(os.fspath(p))) for p in paths]
    for root in roots:
        if not root.exists():
            raise UsageError("no such file or folder", path=root)
    for root in roots:
        if root.is_dir():
            reader = _claim(root)
            if reader is not None:
                yield from emit(root, reader)
            else:
                yield from walk_dir(root)
        else:
            yield from emit(root, _claim(root))


def _item_stat(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)``; for a folder: total bytes and newest modification."""
    st = path.stat()
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size, st.st_mtime_ns
    size, mtime = 0, st.st_mtime_ns
    for dirpath, dirnames, names in os.walk(path):
        dirnames.sort()
        for n in names:
            try:
                s = os.stat(os.path.join(dirpath, n))
            except OSError:
                continue
            size += s.st_size
            mtime = max(mtime, s.st_mtime_ns)
    return size, mtime


def _sha256_file(path: str, stop: threading.Event) -> str:
    from overlap_desktop.core.fsutil import open_regular

    h = hashlib.sha256()
    # Regular files only: a FIFO would block this thread in open() for ever (and the job's
    # pool.shutdown(wait=True) with it, Ctrl-C included); /dev/zero would never end.
    with open_regular(path) as fh:
        while not stop.is_set():
            block = fh.read(_HASH_CHUNK)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def sha256_item(path: Path, stop: threading.Event | None = None) -> str:
    """SHA-256 of a file's bytes; for a folder, of the sorted list of
    ``relative path, size, sha256`` lines of the files in it."""
    from overlap_desktop.core.fsutil import is_regular_file

    stop = stop or threading.Event()
    if not path.is_dir():
        return _sha256_file(str(path), stop)
    h = hashlib.sha256()
    for dirpath, dirnames, names in os.walk(path):
        dirnames.sort()
        for n in sorted(names):
            full = os.path.join(dirpath, n)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            if not is_regular_file(full):  # FIFO, device, socket, dangling link: named, never read
                h.update(f"{rel}\tnot a regular file\n".encode())
                continue
            h.update(f"{rel}\t{os.path.getsize(full)}\t{_sha256_file(full, stop)}\n".encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- fingerprinting


def _settings(config: Config, variants: Sequence[Variant]) -> str:
    """The settings that change fingerprints; a file fingerprinted with others is redone."""
    return json.dumps({"fps": float(config["index.fps"]), "variants": [v.to_dict() for v in variants],
                       "quality_floor": int(config["index.quality_floor"]),
                       "static_seconds": float(config["index.static_seconds"])}, sort_keys=True)


def _fingerprint_item(path: Path, reader: Reader, *, config: Config, variants: Sequence[Variant],
                      on_fraction: Callable[[float], None] | None, cancel: CancelCallback | None,
                      warnings_out: list[str] | None = None) -> list[tuple[StreamInfo, StreamFingerprints]]:
    from overlap_desktop.core.ingest.fingerprint import fingerprint_stream

    # Readers with options (readers.mcap_time, readers.image_fps, size caps) take them from this run's config.
    configure = getattr(reader, "configure", None)
    if callable(configure):
        configure(config)
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
    from overlap_desktop.core.index.parallel import FileJob
    from overlap_desktop.core.index.store import Index, _under, open_index
    from overlap_desktop.core.ingest.fingerprint import variants_from_config
    from overlap_desktop.core.ingest.frames import check_sample_rate

    config = config if config is not None else load_config()
    paths = [Path(os.path.abspath(os.fspath(p))) for p in paths]
    if not paths:
        raise UsageError("give at least one file or folder to index")
    for p in paths:
        if not p.exists():
            raise UsageError("no such file or folder", path=p)
    fps = float(config["index.fps"])
    summary = IndexSummary()
    low = check_sample_rate(fps, warn=False)
    if low:
        summary.warnings.append(low)
        log.warning("%s", low)
    try:
        variants = tuple(variants_from_config(config))
    except ValueError as exc:
        raise ConfigError(f"bad variant settings: {exc}") from exc
    settings = _settings(config, variants)

    own = not isinstance(index, Index)
    idx: Index = open_index(index, config=config) if own else index  # type: ignore[arg-type]
    summary.index_path = str(idx.path)
    started = time.monotonic()
    engine: Engine | None = None
    try:
        with idx.writer():
            idx.check_compatible()
            unlisted: list[tuple[Path, str]] = []
            items = list(walk_candidates(paths, exclude=[idx.path], unlisted=unlisted))
            if forget_missing and not force:
                _refuse_empty_roots(idx, paths)
            for folder, why in unlisted:
                summary.failed.append((str(folder), why))
            sizes: dict[Path, tuple[int, int]] = {}
            for item, _ in items:
                try:
                    sizes[item] = _item_stat(item)
                except OSError:
                    sizes[item] = (0, 0)
            summary.files_seen = len(items)
            run = _Run(idx, summary, settings, float(sum(s for s, _ in sizes.values())) or 1.0, progress)
            if progress is not None:
                # How many items the walk found, before any work (for "k/N files" displays).
                progress(Progress(stage="scan", done=0, total=len(items), unit="files"))
            run.emit(None, None)
            todo = [item for item, reader in items if reader is not None and _utf8_name(str(item))
                    and idx.file_state(item) != (*sizes[item], "ok", settings)]
            engine = _engine_for(config, todo, sizes)
            if engine is not None:
                summary.engine = engine.description
            try:
                for item, reader in items:
                    run.pump(engine, cancel)
                    size, mtime_ns = sizes[item]
                    if not run.needs_work(item, reader, size, mtime_ns):
                        continue
                    assert reader is not None  # needs_work refused reader-less items
                    job = FileJob(str(item), reader.name, size, mtime_ns, config, variants)
                    idx.mark_file(item, size=size, mtime_ns=mtime_ns, status="running", reader=reader.name)
                    if engine is None:
                        run.serial(job, cancel)
                    else:
                        run.feed(engine, job, cancel)
                while engine is not None and run.in_flight:
                    run.pump(engine, cancel, timeout=_PROGRESS_INTERVAL)
            except (Cancelled, KeyboardInterrupt):
                if engine is not None:
                    run.abort(engine)
                raise
            finally:
                run.sort_failed([i for i, _ in items])

            seen = {os.path.normcase(str(i)) for i, _ in items}
            # Files inside a folder we could not list are unknown, not gone.
            gone = [g for g in _missing_rows(idx, paths, seen)
                    if not any(_under(g, str(folder)) for folder, _ in unlisted)]
            if forget_missing and gone:
                summary.forgotten = idx.remove_files(gone)
            else:
                summary.missing = gone
            if progress is not None:
                progress(Progress(stage="seal", done=0, total=None, unit="shards",
                                  message="building search shards"))
            idx.seal(cancel=cancel)
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
        # Each file is its own transaction: everything finished before the disk filled is kept.
        why = exc.__cause__ if isinstance(exc, DiskFullError) and exc.__cause__ is not None else exc
        full = DiskFullError(f"disk full while writing the index ({why}); {summary.indexed} file(s) finished in "
                             "this run were kept; free some space and run again to continue", path=idx.path)
        full.summary = summary  # type: ignore[attr-defined]
        raise full from exc
    finally:
        if engine is not None:
            engine.close()
        if own:
            idx.close()
    summary.elapsed_s = time.monotonic() - started
    return summary


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


class _Run:
    """The writer's side of one indexing run: checks, commits and progress, for every engine."""

    def __init__(self, idx: Index, summary: IndexSummary, settings: str, total_bytes: float,
                 progress: ProgressCallback | None) -> None:
        self.idx, self.summary, self.settings = idx, summary, settings
        self.total_bytes, self.progress = total_bytes, progress
        self.done_bytes = 0.0
        #: Files handed to an engine and not yet committed, by path.
        self.in_flight: dict[str, FileJob] = {}
        self._last_emit = 0.0

    def emit(self, current: str | None, frac: float | None, message: str | None = None,
             extra_bytes: float = 0.0) -> None:
        if self.progress is not None:
            self.progress(Progress(stage="index", done=self.done_bytes + extra_bytes, total=self.total_bytes,
                                   unit="bytes", current=current, current_done=frac, message=message))

    def _finish(self, path: str, size: int, message: str) -> None:
        self.done_bytes += size
        self.emit(path, 1.0, message)

    def _fail(self, path: str, size: int, reason: str) -> None:
        self.summary.failed.append((path, reason))
        self._finish(path, size, f"failed: {reason}")

    def needs_work(self, item: Path, reader: Reader | None, size: int, mtime_ns: int) -> bool:
        """False (after reporting it) for an item refused outright or unchanged since it was indexed."""
        spath = str(item)
        if reader is None:
            self._fail(spath, size, "no reader supports this kind of file")
            return False
        if not _utf8_name(spath):
            # SQLite text is UTF-8: a name with undecodable bytes (Linux) cannot be stored.
            self._fail(spath, size, "file name is not valid UTF-8 and cannot be stored in the index; "
                                    "rename the file")
            return False
        if self.idx.file_state(item) == (size, mtime_ns, "ok", self.settings):
            self.summary.skipped += 1
            self._finish(spath, size, "unchanged")
            return False
        return True

    def commit(self, job: FileJob, outcome: FileOutcome) -> None:
        """Store one finished file in its own transaction (or mark it pending again if cancelled)."""
        from overlap_desktop.core.index.store import _now

        self.in_flight.pop(job.path, None)
        if outcome.cancelled:
            self.idx.mark_file(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
            return
        self.summary.warnings.extend(outcome.warnings)
        if outcome.streams is None:
            reason = outcome.error or "no frames"
            self.idx.record_failure(job.path, size=job.size, mtime_ns=job.mtime_ns, error=reason,
                                    reader=job.reader, sha256=outcome.sha256)
            self._fail(job.path, job.size, reason)
            return
        streams = outcome.streams
        self.idx.record_file(job.path, size=job.size, mtime_ns=job.mtime_ns, sha256=str(outcome.sha256),
                             reader=job.reader, streams=streams, settings=self.settings, indexed_at=_now())
        dur = max((fp.duration_s for _, fp in streams), default=0.0)
        ind = sum(sum(s.duration_s for s in fp.indeterminate) for _, fp in streams)
        s = self.summary
        s.indexed += 1
        s.hours_indexed += dur / 3600.0
        s.hours_indeterminate += ind / 3600.0
        s.bytes_indexed += job.size
        note = f"indexed {dur:.1f} s"
        if len(streams) > 1:
            note += f" in {len(streams)} streams"
        if ind > 0:
            note += f" ({ind:.1f} s indeterminate)"
        self._finish(job.path, job.size, note)

    def serial(self, job: FileJob, cancel: CancelCallback | None) -> None:
        """Fingerprint ``job`` in this process and commit it."""
        from overlap_desktop.core.index.parallel import run_job

        last = [0.0]

        def on_fraction(f: float) -> None:
            now = time.monotonic()
            if now - last[0] >= _PROGRESS_INTERVAL:
                last[0] = now
                self.emit(job.path, f, extra_bytes=f * job.size)

        try:
            outcome = run_job(job, progress=on_fraction, cancel=cancel)
        except (Cancelled, KeyboardInterrupt):
            self.idx.mark_file(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
            raise
        self.commit(job, outcome)

    def feed(self, engine: Engine, job: FileJob, cancel: CancelCallback | None) -> None:
        """Hand ``job`` to the engine, first committing results while it has enough in flight."""
        while len(self.in_flight) >= engine.capacity:
            self.pump(engine, cancel, timeout=_PROGRESS_INTERVAL)
        # Tracked before anything can raise: its row already says "running", and a cancel must set it
        # back to pending (abort does that for everything in flight).
        self.in_flight[job.path] = job
        check_cancel(cancel)  # a commit just made may have been the one the user cancelled after
        engine.submit(job)

    def pump(self, engine: Engine | None, cancel: CancelCallback | None, timeout: float = 0.0) -> None:
        """Check for a cancel; commit the outcomes that have arrived; report aggregate progress."""
        check_cancel(cancel)
        if engine is None or not self.in_flight:
            return
        for job, outcome in engine.wait(timeout):
            self.commit(job, outcome)
        now = time.monotonic()
        if self.in_flight and now - self._last_emit >= _PROGRESS_INTERVAL:
            self._last_emit = now
            # Progress and ETA over all workers: finished bytes plus each in-flight file's share.
            fractions = engine.fractions()
            partial = sum(f * self.in_flight[p].size for p, f in fractions.items() if p in self.in_flight)
            current = max(fractions, key=lambda p: fractions[p], default=None) if fractions else None
            self.emit(current, fractions.get(current) if current else None, extra_bytes=partial)

    def abort(self, engine: Engine) -> None:
        """Cancel: stop every worker; keep files that finished anyway; the rest become pending."""
        for job, outcome in engine.stop():
            if job.path in self.in_flight:
                self.commit(job, outcome)
        for job in list(self.in_flight.values()):
            self.idx.mark_file(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
        self.in_flight.clear()

    def sort_failed(self, order: Sequence[Path]) -> None:
        """Failures in walk order, whatever order parallel workers finished them in."""
        pos = {str(p): i for i, p in enumerate(order)}
        self.summary.failed.sort(key=lambda f: pos.get(f[0], len(pos)))


def _disk_full(exc: BaseException) -> bool:
    """True for "no space left" from SQLite or the OS (shards, lock file)."""
    import errno

    import apsw

    # DiskFullError: the index already translated SQLite's FullError (core/index.py).
    return isinstance(exc, (apsw.FullError, DiskFullError)) or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC,
                                                                                          errno.EDQUOT))


def _changed_since(item: Path, size: int, mtime_ns: int) -> str | None:
    """Why ``item`` no longer matches the size and mtime seen before it was read, or None."""
    try:
        now = _item_stat(item)
    except OSError:
        return "disappeared while being indexed (deleted or moved)"
    if now != (size, mtime_ns):
        return ("changed while being indexed (size or modification time differ); run the index again "
                "once it is complete")
    return None


def _utf8_name(path: str) -> bool:
    """False for a path holding undecodable bytes (surrogate escapes from os.fsdecode)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_empty_roots(idx: Index, roots: Sequence[Path]) -> None:
    """Refuse ``forget_missing`` under a given folder that is empty while the index holds
    files under it (an unmounted disk's mount point looks exactly like that)."""
    from overlap_desktop.core.index.store import _under

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
    from overlap_desktop.core.index.store import _under

    out = []
    for f in idx.files():
        # Rows merged from another machine's index describe files that live there.
        if os.path.normcase(f.path) in seen or f.provenance:
            continue
        if any(_under(f.path, str(r)) for r in roots) and not os.path.exists(f.path):
            out.append(f.path)
    return out
