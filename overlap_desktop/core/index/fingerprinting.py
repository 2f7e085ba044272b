"""Fingerprinting one file or recording folder: the work an index run hands to an engine.

Everything slow about a file -- decoding, sampling, hashing, the SHA-256 of its bytes -- is
a pure function of the file's bytes and the settings, so it can run anywhere: in the
writer's process, in a worker process on this machine, or on a Dask worker elsewhere (the
engines of :mod:`overlap_desktop.core.engines`). Workers never touch the index; they send
back one :class:`FileOutcome` per file (fingerprints, hash, or the reason it failed), and
the writer (:class:`~overlap_desktop.core.index.run.IndexRun`) commits it in one
transaction. A worker that dies therefore loses only the file it was on, and that file is
simply done again.

The SHA-256 of an item's bytes is computed in a helper thread while the frames are being
decoded (hashlib releases the GIL), so hashing costs almost no wall time. Memory stays
bounded: a worker holds one file's frames at a time and sends back only its fingerprints
(about 1 kB per second of footage at the default preset).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.engines.base import Task
from overlap_desktop.core.engines.base import where as here
from overlap_desktop.core.index.walk import changed_since, item_stat, sha256_item
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    StreamFingerprints,
    StreamInfo,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import Cancelled, MediaError, OverlapError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.ingest.readers.base import Reader
    from overlap_desktop.core.ingest.resume import StreamCheckpoint, StreamResume

#: Receives ``(stream key, checkpoint)`` while a long stream is fingerprinted (the writer saves it).
CheckpointCallback = Callable[[str, "StreamCheckpoint"], None]

log = logging.getLogger(__name__)

__all__ = ["FileJob", "FileOutcome", "describe_failure", "fingerprint_file", "fingerprint_item", "fingerprint_job",
           "fingerprint_settings", "pipeline_facts", "run_job"]


def fingerprint_settings(config: Config, variants: Sequence[Variant]) -> str:
    """The settings that change fingerprints; a file fingerprinted with others is redone."""
    from overlap_desktop.core.ingest.prep import PREP_ID  # a file of an older normalisation is redone

    settings = {"fps": float(config["index.fps"]), "prep": PREP_ID, "variants": [v.to_dict() for v in variants],
                "quality_floor": int(config["index.quality_floor"]),
                "static_seconds": float(config["index.static_seconds"])}
    # The rate of datasets that store none changes their fingerprints' times (only when set,
    # so indexes made before the setting existed stay current).
    if float(config.get("index.frame_rate") or 0):
        settings["frame_rate"] = float(config["index.frame_rate"])
    return json.dumps(settings, sort_keys=True)


def fingerprint_item(path: Path, reader: Reader, *, config: Config, variants: Sequence[Variant],
                     on_fraction: Callable[[float], None] | None, cancel: CancelCallback | None,
                     warnings_out: list[str] | None = None, decoder_threads: int = 0,
                     resume: tuple[str, StreamResume] | None = None,
                     on_checkpoint: CheckpointCallback | None = None) -> list[tuple[StreamInfo, StreamFingerprints]]:
    """Fingerprint every stream of one item with ``reader``; streams that fail are skipped with a warning.

    An item of one stream, read by a reader that can start inside it (``resumable``), is
    checkpointed (``on_checkpoint``) and continued from ``resume`` (``(stream key, saved
    progress)``); others are read from the start (see docs/reliability.md).

    Raises:
        MediaError: no stream gave fingerprints (the reason names each stream's failure).
        Cancelled: ``cancel()`` turned true.
    """
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
    if len(streams) != 1 or not getattr(reader, "resumable", False):
        resume = on_checkpoint = None
    total = sum(s.duration_s or 0.0 for s in streams) or None
    done_before = 0.0
    out: list[tuple[StreamInfo, StreamFingerprints]] = []
    errors: list[str] = []
    for s in streams:
        check_cancel(cancel)

        def on_frame(seconds: float, _base: float = done_before) -> None:
            if on_fraction is not None and total:
                on_fraction(min(1.0, (_base + seconds) / total))

        def run(saved: StreamResume | None, s: StreamInfo = s,
                on_frame: Callable[[float], None] = on_frame) -> StreamFingerprints:
            if saved is None:
                frames = reader.frames(path, s, cancel=cancel)
            else:  # a ``resumable`` reader's frames() takes the time to start from
                frames = reader.frames(path, s, cancel=cancel,  # type: ignore[call-arg]
                                       start_ns=saved.grid.t0_ns + saved.grid.last_t_ns)
            return fingerprint_stream(
                frames, fps=float(config["index.fps"]), variants=variants,
                quality_floor=int(config["index.quality_floor"]),
                static_seconds=float(config["index.static_seconds"]), duration_s=s.duration_s,
                on_frame=on_frame, cancel=cancel, resume=saved,
                on_checkpoint=None if on_checkpoint is None else functools.partial(on_checkpoint, s.key))

        try:
            fp = _resumed(run, resume[1] if resume is not None and resume[0] == s.key else None,
                          on_frame, path, warnings_out)
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
    if warnings_out is not None:
        # Damage a reader read around (a truncated dataset's lost records), named once per file.
        warnings_out.extend(f"{path}: {note}" for s in streams for note in (s.extra or {}).get("reader_notes") or [])
    return out


def _resumed(run: Callable[[StreamResume | None], StreamFingerprints], saved: StreamResume | None,
             on_frame: Callable[[float], None], path: Path, warnings_out: list[str] | None) -> StreamFingerprints:
    """``run(saved)``, or ``run(None)`` (from the start) when continuing from ``saved`` fails for any
    reason but a cancel: saved progress may speed a file up, never make it fail."""
    if saved is None:
        return run(None)
    on_frame(saved.grid.last_t_ns / 1e9)  # the file's progress starts where it was saved
    try:
        return run(saved)
    except (Cancelled, KeyboardInterrupt):
        raise
    except Exception as exc:
        log.debug("resume of %s failed", path, exc_info=True)
        note = (f"{path}: could not continue where the last run stopped ({exc}); the file was read "
                "from the start")
        log.warning("%s", note)
        if warnings_out is not None:
            warnings_out.append(note)
    return run(None)


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
        return fingerprint_item(p, reader, config=config, variants=tuple(variants or (Variant(),)),
                                on_fraction=on_fraction, cancel=cancel)
    except (OverlapError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a decoder surprise is still a bad file, not a crash
        raise MediaError(describe_failure(exc), path=p) from exc


def describe_failure(exc: BaseException) -> str:
    """Why an item could not be fingerprinted, in a sentence for the index and the user."""
    if isinstance(exc, OverlapError):
        return exc.message
    if isinstance(exc, MemoryError):
        return "out of memory while decoding"
    text = str(exc).strip() or type(exc).__name__
    return f"cannot decode ({type(exc).__name__}: {text})"


@dataclass(frozen=True)
class FileJob:
    """One file (or recording folder) to fingerprint, as the writer saw it.

    Attributes:
        path: Absolute path; a remote worker must see the same file at the same path.
        reader: Name of the reader that claimed it (workers look it up by name).
        size: Size in bytes seen by the writer (a folder: total of its files).
        mtime_ns: Modification time seen by the writer (a folder: newest file).
        config: The run's settings (fps, quality floor, reader options...).
        variants: The variants to hash.
        remote: Runs on another machine (a cluster worker): check first that the file is there
            as the writer saw it, and say so in worker terms if not.
    """

    path: str
    reader: str
    size: int
    mtime_ns: int
    config: Config
    variants: tuple[Variant, ...]
    remote: bool = False
    #: The item's identity seen by the writer (:func:`~overlap_desktop.core.index.walk.item_state`);
    #: checked after fingerprinting on the writer's machine.
    stat_key: str = ""
    #: Progress saved inside the file by an interrupted run, ``(stream key, progress)``, to continue from.
    resume: tuple[str, StreamResume] | None = None


@dataclass
class FileOutcome:
    """What fingerprinting one file produced.

    Exactly one of ``streams`` (success) and ``error`` (a sentence) is set. ``sha256``
    may be set on failure too (the index records it for bad files).
    """

    path: str
    streams: list[tuple[StreamInfo, StreamFingerprints]] | None = None
    sha256: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: Stopped by a cancel before finishing (nothing to commit; the file stays pending).
    cancelled: bool = False
    #: Where it ran (``host:pid``), for error messages.
    where: str = ""
    #: Wall seconds the worker spent on the file (the bench derives scheduling overhead from it).
    seconds: float = 0.0


def run_job(job: FileJob, *, progress: Callable[[float], None] | None = None,
            cancel: CancelCallback | None = None, decoder_threads: int = 0,
            on_checkpoint: CheckpointCallback | None = None) -> FileOutcome:
    """Fingerprint one file; the task every engine runs (in-process, pool or cluster).

    On a remote worker the file is checked first: it must exist there with the size and
    modification time the writer saw, otherwise the outcome is an error naming the path
    (a cluster worker that does not mount the footage, or mounts something else at that
    path). Locally the file system is the writer's own, so a file deleted or changed
    meanwhile is reported as such, as in a one-process run.

    ``decoder_threads`` (0: as configured) caps the decoder's threads when the
    configuration leaves them automatic: a pool of N workers gives each its share of
    the cores.

    ``job.resume`` continues a file where an interrupted run saved its progress, and
    ``on_checkpoint`` receives new progress to save (:func:`fingerprint_item`).

    Raises:
        Cancelled: ``cancel()`` turned true (KeyboardInterrupt passes through too).
    """
    started = time.perf_counter()
    out = _run_job(job, progress, cancel, decoder_threads, on_checkpoint)
    out.seconds = time.perf_counter() - started
    return out


def _run_job(job: FileJob, progress: Callable[[float], None] | None, cancel: CancelCallback | None,
             decoder_threads: int, on_checkpoint: CheckpointCallback | None) -> FileOutcome:
    from overlap_desktop.core.ingest.readers import available_readers

    where = here()
    path = Path(job.path)
    if job.remote:
        refused = _check_visible(job, where)
        if refused is not None:
            return FileOutcome(job.path, where=where, error=refused)
    readers, _ = available_readers()
    reader = next((r for r in readers if r.name == job.reader), None)
    if reader is None:
        return FileOutcome(job.path, where=where,
                           error=f"this worker ({where}) has no {job.reader!r} reader; install the same "
                                 "overlap desktop version and extras on every worker")
    stop = threading.Event()
    sha: list[str | None] = [None]
    sha_error: list[BaseException | None] = [None]

    def hash_bytes() -> None:
        # hashlib releases the GIL: hashing runs beside decoding at almost no wall cost.
        try:
            sha[0] = sha256_item(path, stop)
        except OSError as exc:
            sha_error[0] = exc

    hasher = threading.Thread(target=hash_bytes, name="overlap-sha256", daemon=True)
    hasher.start()
    out = FileOutcome(job.path, where=where)
    try:
        out.streams = fingerprint_item(path, reader, config=job.config, variants=job.variants,
                                       on_fraction=progress, cancel=cancel, warnings_out=out.warnings,
                                       decoder_threads=decoder_threads, resume=job.resume,
                                       on_checkpoint=on_checkpoint)
    except (Cancelled, KeyboardInterrupt):
        stop.set()
        hasher.join()
        raise
    except Exception as exc:
        if not isinstance(exc, OverlapError):
            log.debug("unexpected error on %s", path, exc_info=True)
        # A refused file's checksum is of no use, and hashing a large recording to the end would
        # keep a refusal known before any decoding (a missing frame rate) waiting for it.
        stop.set()
        hasher.join()
        out.error, out.sha256 = describe_failure(exc), None
        return out
    hasher.join()
    if sha_error[0] is not None:
        out.streams, out.error = None, describe_failure(sha_error[0])
        return out
    out.sha256 = sha[0]
    # Inode numbers are the writer's file system's: a cluster worker's mount may number them otherwise.
    changed = changed_since(path, job.size, job.mtime_ns, None if job.remote else job.stat_key or None)
    if changed is not None:
        # Fingerprints and hash would describe a mix of old and new bytes: refuse the file
        # now; the next run sees a different size/mtime (or identity) and does it again.
        out.streams, out.sha256, out.error = None, None, changed
    return out


def _check_visible(job: FileJob, where: str) -> str | None:
    """Why a cluster worker cannot use ``job.path`` (not there, or not the writer's file), or None."""

    try:
        seen = item_stat(Path(job.path))
    except OSError as exc:
        return (f"this worker ({where}) cannot see the file ({exc.strerror or exc}); every worker must "
                "see the footage at the same path as the computer running `overlap index` (shared storage mounted at "
                "the same place)")
    if seen != (job.size, job.mtime_ns):
        return (f"this worker ({where}) sees a different file at this path (size {seen[0]} bytes instead of "
                f"{job.size}, or another modification time); the file changed, or the worker mounts other "
                "storage there; run the index again once storage is consistent")
    return None


def pipeline_facts() -> tuple[str, str]:
    """What a cluster worker must share with this computer besides the version: the ids of the
    fingerprint pipeline (codes made by another one would not match)."""
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID
    from overlap_desktop.core.ingest.prep import PREP_ID

    return ALGO_ID, PREP_ID


def fingerprint_job(job: FileJob, *, task: Task) -> FileOutcome:
    """The engine's work function: :func:`run_job` with the task's progress, cancel and thread share.

    A cancel comes back as an outcome marked ``cancelled`` (the writer sets the file pending).
    """
    report, sending = task.report, [True]

    def on_checkpoint(key: str, checkpoint: StreamCheckpoint) -> None:
        # To the writer, which saves it; after one lost report none follow (the saved chunks stay whole).
        if sending[0] and report is not None:
            sending[0] = report((key, checkpoint))

    try:
        # A worker elsewhere checks first that it sees the writer's file at that path.
        return run_job(replace(job, remote=True) if task.remote else job, progress=task.progress,
                       cancel=task.cancelled, decoder_threads=task.threads,
                       on_checkpoint=None if report is None else on_checkpoint)
    except Cancelled:
        return FileOutcome(job.path, cancelled=True, where=task.where)
