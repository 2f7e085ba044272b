"""The writer's side of one indexing run: resume checks, one commit per file, progress.

Whatever engine fingerprints the files (this process, worker processes, a Dask
cluster), :class:`IndexRun` is the only code that writes their outcomes to the index,
one transaction per file, in the process that holds the writer lock. It also keeps
the user's progress over all files in flight and, on cancel, puts every unfinished
file back to ``pending`` so the next run does it again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.blobs import episode_time
from overlap_desktop.core.index.walk import changed_since, sha256_item, utf8_name
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import Cancelled

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.fingerprinting import FileJob, FileOutcome
    from overlap_desktop.core.index.parallel import FileEngine
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.ingest.readers.base import Reader
    from overlap_desktop.core.ingest.resume import StreamCheckpoint

__all__ = ["PROGRESS_INTERVAL", "IndexRun", "IndexSummary"]

log = logging.getLogger(__name__)

#: Progress callbacks at most this often (seconds) within a file.
PROGRESS_INTERVAL = 0.1


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


class _CancelEvent(threading.Event):
    """A stop event for :func:`sha256_item` that is set once ``cancel()`` turns true."""

    def __init__(self, cancel: CancelCallback | None) -> None:
        super().__init__()
        self._cancel = cancel

    def is_set(self) -> bool:
        return super().is_set() or bool(self._cancel is not None and self._cancel())


class IndexRun:
    """The writer's side of one indexing run: checks, commits and progress, for every engine."""

    def __init__(self, idx: Index, summary: IndexSummary, settings: str, total_bytes: float,
                 progress: ProgressCallback | None) -> None:
        self.idx, self.summary, self.settings = idx, summary, settings
        self.total_bytes, self.progress = total_bytes, progress
        self.done_bytes = 0.0
        #: Files whose progress could not be saved once: no more is saved for them this run.
        self._not_saving: set[str] = set()
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

    def needs_work(self, item: Path, reader: Reader | None, size: int, mtime_ns: int,
                   stat_key: str | None = None, cancel: CancelCallback | None = None) -> bool:
        """False (after reporting it) for an item refused outright or unchanged since it was indexed.

        Unchanged means the same size, mtime and settings and, given ``stat_key``, the same
        file identity (inode and change time, issue 36). When only the date or the identity
        differ, the bytes are hashed (:meth:`_same_bytes`): the same SHA-256 means the same
        bytes (a copy to a new disk, a backup restore; issue 34), so the fingerprints stand
        and only the date and identity are updated. Anything else is fingerprinted again,
        and the old fingerprints stay until the new ones replace them.
        """
        spath = str(item)
        if reader is None:
            self._fail(spath, size, "no reader supports this kind of file")
            return False
        if not utf8_name(spath):
            # SQLite text is UTF-8: a name with undecodable bytes (Linux) cannot be stored.
            self._fail(spath, size, "file name is not valid UTF-8 and cannot be stored in the index; "
                                    "rename the file")
            return False
        state = self.idx.file_state(item)
        if state is None or state[0] != size or state[2:] != ("ok", self.settings):
            return True
        if state[1] == mtime_ns:
            stored, _sha = self.idx.file_identity(item)
            if stat_key is None or stored == stat_key or stored is None:
                # Rows written before schema 3 carry no identity: size and mtime are trusted
                # as before and the identity is recorded from now on.
                if stat_key is not None and stored is None:
                    self.idx.set_stat_key(item, stat_key)
                self.summary.skipped += 1
                self._finish(spath, size, "unchanged")
                return False
        if not self._same_bytes(item, size, mtime_ns, stat_key, cancel):
            return True
        self.idx.touch_file(item, mtime_ns=mtime_ns, stat_key=stat_key)
        self.summary.skipped += 1
        self._finish(spath, size, "unchanged (same bytes, new date)")
        return False

    def _same_bytes(self, item: Path, size: int, mtime_ns: int, stat_key: str | None,
                    cancel: CancelCallback | None) -> bool:
        """Whether ``item`` still has the SHA-256 its fingerprints were made from.

        Hashing is far cheaper than decoding. The file is looked at again after the hash: one
        changed or swapped while it was hashed is not vouched for (it is fingerprinted again).
        """
        known = self.idx.indexed_sha256(item)
        if known is None:
            return False
        self.emit(str(item), 0.0, "checking whether the bytes changed")
        try:
            now = sha256_item(item, _CancelEvent(cancel))
        except OSError:
            return False  # unreadable now: fingerprinting it reports why
        check_cancel(cancel)  # a stopped hash is partial: never compare it
        return now == known and changed_since(item, size, mtime_ns, stat_key) is None

    def commit(self, job: FileJob, outcome: FileOutcome) -> None:
        """Store one finished file in its own transaction (or mark it pending again if cancelled)."""
        from overlap_desktop.core.index.schema import now_iso

        self.in_flight.pop(job.path, None)
        if outcome.cancelled:
            self.idx.mark_unfinished(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
            return
        # Finished or failed: progress saved inside the file is of no further use.
        self.idx.drop_checkpoint(job.path)
        self.summary.warnings.extend(outcome.warnings)
        if outcome.streams is not None and job.stat_key:
            # Last look before recording, on the writer's own file system (a cluster worker's
            # mount may number inodes otherwise, so only this check can see a swap there).
            changed = changed_since(Path(job.path), job.size, job.mtime_ns, job.stat_key)
            if changed is not None:
                outcome.streams, outcome.sha256, outcome.error = None, None, changed
        if outcome.streams is None:
            reason = outcome.error or "no frames"
            self.idx.record_failure(job.path, size=job.size, mtime_ns=job.mtime_ns, error=reason,
                                    reader=job.reader, sha256=outcome.sha256)
            self._fail(job.path, job.size, reason)
            return
        streams = outcome.streams
        self.idx.record_file(job.path, size=job.size, mtime_ns=job.mtime_ns, sha256=str(outcome.sha256),
                             reader=job.reader, streams=streams, settings=self.settings, indexed_at=now_iso(),
                             stat_key=job.stat_key or None)
        dur = episode_time(streams)
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

    def with_saved_progress(self, job: FileJob) -> FileJob:
        """``job`` with the progress an interrupted run saved inside the file, when it is usable
        (the same file and settings), saying so; damaged progress is dropped with a warning."""
        from dataclasses import replace

        found = self.idx.saved_progress(job.path, size=job.size, mtime_ns=job.mtime_ns,
                                        stat_key=job.stat_key or None, settings=self.settings,
                                        variants=len(job.variants))
        if found.note:
            self.summary.warnings.append(found.note)
        if found.resume is None:
            return job
        f = found.resume.fraction
        self.emit(job.path, f, f"resuming at {f:.0%} (progress saved by the interrupted run)",
                  extra_bytes=f * job.size)
        return replace(job, resume=(found.stream_key, found.resume))

    def save_progress(self, job: FileJob, key: str, checkpoint: StreamCheckpoint) -> None:
        """Save a checkpoint of ``job`` (stream ``key``) made here or sent by a worker."""
        if job.path in self._not_saving:
            return
        try:
            self.idx.save_checkpoint(job.path, checkpoint, size=job.size, mtime_ns=job.mtime_ns,
                                     stat_key=job.stat_key or None, settings=self.settings, stream_key=key)
        except Exception as exc:  # saving progress is a bonus: never fail the file over it
            # None after a failed one either: the saved chunks must stay whole.
            self._not_saving.add(job.path)
            log.warning("%s: cannot save progress inside the file (%s); an interruption restarts it", job.path,
                        exc)

    def _save_reports(self, engine: FileEngine) -> None:
        """Save the checkpoints workers sent, of files still in flight (one that was committed
        meanwhile needs none: its commit dropped its progress)."""
        for path, (key, checkpoint) in engine.reports():
            job = self.in_flight.get(path)
            if job is not None:
                self.save_progress(job, key, checkpoint)

    def serial(self, job: FileJob, cancel: CancelCallback | None) -> None:
        """Fingerprint ``job`` in this process and commit it, saving its progress as it goes."""
        from overlap_desktop.core.index.fingerprinting import run_job

        last = [0.0]

        def on_checkpoint(key: str, checkpoint: StreamCheckpoint) -> None:
            self.save_progress(job, key, checkpoint)

        def on_fraction(f: float) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL:
                last[0] = now
                self.emit(job.path, f, extra_bytes=f * job.size)

        try:
            outcome = run_job(job, progress=on_fraction, cancel=cancel, on_checkpoint=on_checkpoint)
        except (Cancelled, KeyboardInterrupt):
            self.idx.mark_unfinished(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
            raise
        self.commit(job, outcome)

    def feed(self, engine: FileEngine, job: FileJob, cancel: CancelCallback | None) -> None:
        """Hand ``job`` to the engine, first committing results while it has enough in flight."""
        try:
            while len(self.in_flight) >= engine.capacity:
                self.pump(engine, cancel, timeout=PROGRESS_INTERVAL)
        except (Cancelled, KeyboardInterrupt):
            # Its row already says "running" and abort only settles files in flight: a file
            # left "running" would be listed as being read until the next run.
            self.idx.mark_unfinished(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
            raise
        # Tracked before anything can raise: its row already says "running", and a cancel must set it
        # back to pending (abort does that for everything in flight).
        self.in_flight[job.path] = job
        check_cancel(cancel)  # a commit just made may have been the one the user cancelled after
        engine.submit(job)

    def pump(self, engine: FileEngine | None, cancel: CancelCallback | None, timeout: float = 0.0) -> None:
        """Check for a cancel; commit the outcomes that have arrived; report aggregate progress."""
        check_cancel(cancel)
        if engine is None or not self.in_flight:
            return
        self._save_reports(engine)  # before the commits: a file's commit drops its saved progress
        for job, outcome in engine.wait(timeout):
            self.commit(job, outcome)
        now = time.monotonic()
        if self.in_flight and now - self._last_emit >= PROGRESS_INTERVAL:
            self._last_emit = now
            # Progress and ETA over all workers: finished bytes plus each in-flight file's share.
            fractions = engine.fractions()
            partial = sum(f * self.in_flight[p].size for p, f in fractions.items() if p in self.in_flight)
            current = max(fractions, key=lambda p: fractions[p], default=None) if fractions else None
            self.emit(current, fractions.get(current) if current else None, extra_bytes=partial)

    def abort(self, engine: FileEngine) -> None:
        """Cancel: stop every worker; keep files that finished anyway; the rest become pending."""
        stopped = engine.stop()
        self._save_reports(engine)  # the last progress the stopped workers sent
        for job, outcome in stopped:
            if job.path in self.in_flight:
                self.commit(job, outcome)
        for job in list(self.in_flight.values()):
            self.idx.mark_unfinished(job.path, size=job.size, mtime_ns=job.mtime_ns, status="pending")
        self.in_flight.clear()

    def sort_failed(self, order: Sequence[Path]) -> None:
        """Failures in walk order, whatever order parallel workers finished them in."""
        pos = {str(p): i for i, p in enumerate(order)}
        self.summary.failed.sort(key=lambda f: pos.get(f[0], len(pos)))
