"""The local fingerprint index: an APSW SQLite database plus search shards, in one folder.

Layout of an index folder::

    index.sqlite3        files, streams (fingerprints as compact blobs), shards, meta
    index.sqlite3-wal    SQLite write-ahead log (WAL mode)
    index.lock           writer lock (OS file lock; holds the writer's pid)
    shards/shard-...     search structures built by :func:`overlap_desktop.core.index.shards.build_shard`

The database is the source of truth. Shards are derived: they hold the usable codes of
a batch of streams in the matcher's search format so that a comparison keeps only one
shard in memory at a time, whatever the corpus size. A shard that covers a stream which
was deleted or re-fingerprinted becomes *stale* and is rebuilt the next time shards are
sealed (:meth:`Index.seal`, called by the indexer at the end of a run and by
:meth:`Index.shards`).

Concurrency: SQLite runs in WAL mode with a 10 s busy timeout, so readers (a
comparison, the GUI) work while one writer indexes. Writers take an OS lock on
``index.lock`` first; a second writer is refused with :class:`IndexBusyError` naming
the holder's pid. ``synchronous=NORMAL``: in WAL mode a commit survives an application
crash; a power cut can lose the last few committed files (never corrupt the database),
and those files are simply fingerprinted again on the next run. That trade buys one
fsync per checkpoint instead of one per file.

Where things are: this module opens an index (:func:`open_index`) and holds the
:class:`Index` class with its life cycle and writing methods. Its reading methods are
in :mod:`~overlap_desktop.core.index.reading`, shard sealing and serving in
:mod:`~overlap_desktop.core.index.sealing`; the table layout and migrations in
:mod:`~overlap_desktop.core.index.schema`, the blob encoding in
:mod:`~overlap_desktop.core.index.blobs`, the writer lock and filesystem checks in
:mod:`~overlap_desktop.core.index.lock`, and SQLite error translation in
:mod:`~overlap_desktop.core.index.db`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.index.blobs import encode_fingerprints, episode_time, info_to_json
from overlap_desktop.core.index.checkpoints import CheckpointStore
from overlap_desktop.core.index.db import (
    DAMAGED_ADVICE,
    DB_NAME,
    apply_bestpractice,
    first_row,
    guard_db,
    open_error,
    system_errno,
    translate_db_error,
)
from overlap_desktop.core.index.lock import WriterLock, network_filesystem
from overlap_desktop.core.index.reading import IndexReader, is_under, norm_path
from overlap_desktop.core.index.schema import LOCK_NAME, SHARD_DIR, init_or_migrate, now_iso
from overlap_desktop.core.index.sealing import DEFAULT_SHARD_CODES, ShardSet
from overlap_desktop.core.types import StreamFingerprints, StreamInfo
from overlap_desktop.errors import IndexError_

if TYPE_CHECKING:  # pragma: no cover
    import apsw

    from overlap_desktop.config import Config

__all__ = ["RECLAIM_BYTES", "RECLAIM_SHARE", "Index", "open_index"]

log = logging.getLogger(__name__)

#: :meth:`Index.reclaim_free_space` runs when at least this share of the database's pages is free...
RECLAIM_SHARE = 0.25
#: ...and at least this many bytes.
RECLAIM_BYTES = 1 << 20

#: The schema that added ``files.stat_key`` (an index opened at an older one, read-only, lacks it).
_STAT_KEY_SCHEMA = 3
#: Milliseconds a connection waits for another one's lock before giving up.
BUSY_TIMEOUT_MS = 10_000


def _current_ids() -> tuple[str, str]:
    """``(algo_id, prep_id)`` of this build's fingerprinting pipeline."""
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID
    from overlap_desktop.core.ingest.prep import PREP_ID

    return ALGO_ID, PREP_ID


class Index(IndexReader, ShardSet, CheckpointStore):
    """An open fingerprint index. Use :func:`open_index` to get one; close it (or use
    ``with``) when done.

    Reading methods work while another process writes. Writing methods need the writer
    lock (:meth:`writer`), which :func:`~overlap_desktop.core.index.indexer.index_paths` takes.

    The methods come in three groups: life cycle and writing (here), reading
    (:class:`~overlap_desktop.core.index.reading.IndexReader`: files, streams,
    fingerprints, stats) and search shards
    (:class:`~overlap_desktop.core.index.sealing.ShardSet`: seal, shards, rebuild_shards).
    """

    def __init__(self, path: Path, conn: apsw.Connection, *, readonly: bool) -> None:
        self.path = path
        self._db = conn
        self.readonly = readonly
        self._lock = WriterLock(path / LOCK_NAME)
        self._lock_depth = 0
        self._mutex = threading.RLock()
        #: Codes per shard when sealing (tests lower it to exercise several shards).
        self.shard_codes = DEFAULT_SHARD_CODES
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self.identity: str = meta["identity"]
        self.algo_id: str = meta["algo_id"]
        self.prep_id: str = meta["prep_id"]
        self.created: str = meta.get("created", "")
        self.schema_version: int = int(meta["schema_version"])

    # ---------------------------------------------------------------- lifecycle

    @property
    def db_path(self) -> Path:
        return self.path / DB_NAME

    @property
    def shard_root(self) -> Path:
        return self.path / SHARD_DIR

    def close(self) -> None:
        with self._mutex:
            while self._lock_depth:
                self._lock_depth = 0
                self._lock.release()
            if self._db is not None:
                self._db.close()
                self._db = None  # type: ignore[assignment]

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, identity={self.identity!r})"

    @contextmanager
    def writer(self) -> Iterator[Index]:
        """Hold the writer lock for a block (re-entrant within this object).

        Raises:
            IndexBusyError: another process (or another open Index) is writing.
            IndexError_: the index was opened read-only.
        """
        if self.readonly:
            raise IndexError_("the index was opened read-only", path=self.path)
        with self._mutex:
            if self._lock_depth == 0:
                self._lock.acquire()
                try:
                    self._recover_after_crash()
                except BaseException:
                    self._lock.release()
                    raise
            self._lock_depth += 1
        try:
            yield self
        finally:
            with self._mutex:
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    try:
                        # Refresh planner statistics while nobody else can be writing.
                        self._db.pragma("optimize")
                    except Exception:
                        log.debug("PRAGMA optimize failed", exc_info=True)
                    finally:
                        self._lock.release()

    def _recover_after_crash(self) -> None:
        """Under a fresh writer lock: rows a dead writer left running become pending;
        shard folders no row refers to are swept (see :meth:`_sweep_shards`)."""
        with self._db:
            self._db.execute("UPDATE files SET status = 'pending' WHERE status = 'running'")
        changes = self._db.changes()
        if changes:
            log.info("%d file(s) left running by an interrupted job are pending again", changes)
        self._sweep_shards()

    def check_compatible(self, algo_id: str | None = None, prep_id: str | None = None) -> None:
        """Refuse to mix fingerprints of another hash or normalisation.

        Raises:
            IndexError_: the index was built with a different ``algo_id``/``prep_id``.
        """
        if algo_id is None or prep_id is None:
            algo_id, prep_id = _current_ids()
        if self.algo_id == algo_id and self.prep_id != prep_id and self._lock_depth and not self.readonly:
            self._upgrade_prep(prep_id)
        if (self.algo_id, self.prep_id) != (algo_id, prep_id):
            raise IndexError_(
                f"this index holds {self.algo_id}/{self.prep_id} fingerprints but this version makes "
                f"{algo_id}/{prep_id}; index into a new folder (--index) instead", path=self.path)

    def _upgrade_prep(self, prep_id: str) -> None:
        """Bring an index of an earlier, comparable normalisation up to ``prep_id``.

        Only for ``prep.PREP_PREDECESSORS`` of the current normalisation, whose usable codes it
        reproduces (see there). The index then says ``prep_id``; each file is fingerprinted again
        by the index run that covers it (its stored settings name the old normalisation), and until
        then its old fingerprints stay in use (their dark samples are still "featureless").
        """
        from overlap_desktop.core.ingest.prep import PREP_ID, PREP_PREDECESSORS

        if prep_id != PREP_ID or self.prep_id not in PREP_PREDECESSORS:
            return
        with self._db:
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'prep_id'", (prep_id,))
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('prep_upgraded_from', ?)",
                             (self.prep_id,))
        log.info("index %s: fingerprints of %s are brought up to %s as files are indexed again",
                 self.path, self.prep_id, prep_id)
        self.prep_id = prep_id

    # ---------------------------------------------------------------- writing

    def _require_writer(self) -> None:
        if self._lock_depth == 0:
            raise RuntimeError("writing to the index needs `with index.writer():`")

    def mark_file(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, status: str,
                  error: str | None = None, reader: str | None = None) -> int:
        """Create or update a file row without touching its fingerprints; returns its id."""
        self._require_writer()
        p = norm_path(path)
        with self._db:
            self._db.execute(
                "INSERT INTO files(path, size, mtime_ns, status, error, reader) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "status = excluded.status, error = excluded.error, "
                "reader = COALESCE(excluded.reader, files.reader)",
                (p, int(size), int(mtime_ns), status, error, reader))
            fid = int(first_row(self._db.execute("SELECT id FROM files WHERE path = ?", (p,)), p)[0])
        return fid

    def mark_unfinished(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, status: str,
                        reader: str | None = None) -> None:
        """Mark a file ``running`` or ``pending`` unless it holds fingerprints (status ``ok``).

        A file being read again (new date, changed bytes, other settings) keeps its old
        fingerprints, size and date until new ones replace them: a Cancel or a crash
        mid-file must not shrink the library, and the old date makes the next run redo it.
        """
        self._require_writer()
        p = norm_path(path)
        row = self._db.execute("SELECT status FROM files WHERE path = ?", (p,)).fetchone()
        if row is not None and row[0] == "ok":
            return
        self.mark_file(p, size=size, mtime_ns=mtime_ns, status=status, reader=reader)

    def indexed_sha256(self, path: str | os.PathLike[str]) -> str | None:
        """The SHA-256 stored with a fingerprinted file (``None``: not fingerprinted)."""
        row = self._db.execute("SELECT sha256 FROM files WHERE path = ? AND status = 'ok'",
                               (norm_path(path),)).fetchone()
        return None if row is None or not row[0] else str(row[0])

    def touch_file(self, path: str | os.PathLike[str], *, mtime_ns: int, stat_key: str | None = None) -> None:
        """Record a new modification time (and identity) for a file whose bytes were checked to
        be the same (a copy to a new disk, a backup restore): its fingerprints stand as they are."""
        self._require_writer()
        p = norm_path(path)
        with self._db:
            self._db.execute("UPDATE files SET mtime_ns = ? WHERE path = ? AND status = 'ok'", (int(mtime_ns), p))
            if stat_key is not None and self.schema_version >= _STAT_KEY_SCHEMA:
                self._db.execute("UPDATE files SET stat_key = ? WHERE path = ? AND status = 'ok'", (stat_key, p))

    # A run's folders stay listed under this meta key until the run finishes: a Cancel, a
    # crash or a quit leaves them, so a comparison can say the library may be incomplete.
    _UNFINISHED_KEY = "unfinished_runs"

    def unfinished_runs(self) -> list[str]:
        """Folders and files of indexing runs that started and did not finish."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (self._UNFINISHED_KEY,)).fetchone()
        try:
            value = json.loads(row[0]) if row is not None else []
        except ValueError:
            return []
        return [str(v) for v in value] if isinstance(value, list) else []

    def begin_run(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        """Note that a run over ``roots`` started (cleared by :meth:`end_run` when it finishes)."""
        self._require_writer()
        runs = self.unfinished_runs()
        runs += [norm_path(r) for r in roots if norm_path(r) not in runs]
        self._set_meta(self._UNFINISHED_KEY, json.dumps(runs))

    def end_run(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        """A run over ``roots`` finished: runs over these paths, or under them, are done."""
        self._require_writer()
        done = [norm_path(r) for r in roots]
        left = [r for r in self.unfinished_runs() if not any(is_under(r, d) for d in done)]
        self._set_meta(self._UNFINISHED_KEY, json.dumps(left) if left else None)

    def reclaim_free_space(self, *, share: float | None = None, least_bytes: int | None = None) -> int:
        """Give the database's free pages back to the disk (``VACUUM``) when they are many.

        Fingerprints of a replaced file (re-encoded, re-muxed) are deleted when the new ones are
        stored, but SQLite keeps the freed pages in the file for later writes: re-scanning a
        re-muxed 20-min file grew an index from 3.8 to 6.2 MB. Called at the end of an indexing
        run (the writer lock held); a reader in the middle of a transaction makes it wait for the
        next run (never an error). The old search shard of such a file is a separate folder,
        removed :data:`~overlap_desktop.core.index.sealing.SHARD_GRACE_S` after it was replaced,
        at the next run.

        Args:
            share: The least share of the file's pages that must be free (default
                :data:`RECLAIM_SHARE`).
            least_bytes: The least free bytes (default :data:`RECLAIM_BYTES`).

        Returns:
            The bytes given back (0: too few free pages, or the database was busy).
        """
        import apsw

        share = RECLAIM_SHARE if share is None else share
        least_bytes = RECLAIM_BYTES if least_bytes is None else least_bytes
        with self.writer():
            free, pages, size = (int(self._db.pragma(p)) for p in ("freelist_count", "page_count", "page_size"))
            if free == 0 or free * size < least_bytes or free < share * pages:
                return 0
            try:
                self._db.execute("VACUUM")
                self._db.pragma("wal_checkpoint(TRUNCATE)")
            except apsw.BusyError:
                log.info("free pages of %s not given back now: the index is being read", self.path)
                return 0
            return free * size

    def _set_meta(self, key: str, value: str | None) -> None:
        with self._db:
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self._db.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def record_failure(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, error: str,
                       reader: str | None = None, sha256: str | None = None) -> None:
        """Record that a file could not be fingerprinted (its old fingerprints are dropped)."""
        self._require_writer()
        p = norm_path(path)
        with self._db:
            self.mark_file(p, size=size, mtime_ns=mtime_ns, status="error", error=error, reader=reader)
            self._db.execute("UPDATE files SET sha256 = ?, duration_s = NULL, fps = NULL, "
                             "indeterminate_s = 0, settings = NULL WHERE path = ?", (sha256, p))
            self._db.execute("DELETE FROM streams WHERE file_id = (SELECT id FROM files WHERE path = ?)", (p,))

    def record_file(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, sha256: str,
                    reader: str | None, streams: Sequence[tuple[StreamInfo, StreamFingerprints]],
                    settings: str | None = None, provenance: str | None = None,
                    indexed_at: str | None = None, stat_key: str | None = None) -> int:
        """Store a file's fingerprints in one transaction (replacing any earlier ones).

        Also the entry point for merging another index (``provenance`` says where the
        row came from). ``stat_key`` is the identity of what was fingerprinted
        (:func:`~overlap_desktop.core.index.walk.item_state`). Returns the file id.
        """
        self._require_writer()
        p = norm_path(path) if provenance is None else str(path)
        encoded = [(info, encode_fingerprints(fp)) for info, fp in streams]
        duration = episode_time(streams)  # a file of several episodes is their sum
        indeterminate = float(sum(e["indeterminate_s"] for _, e in encoded))
        fps = encoded[0][1]["fps"] if encoded else None
        with self._db:
            self._db.execute(
                "INSERT INTO files(path, size, mtime_ns, status) VALUES (?, ?, ?, 'running') "
                "ON CONFLICT(path) DO NOTHING", (p, int(size), int(mtime_ns)))
            fid = int(first_row(self._db.execute("SELECT id FROM files WHERE path = ?", (p,)), p)[0])
            self._db.execute("DELETE FROM streams WHERE file_id = ?", (fid,))
            for info, e in encoded:
                self._db.execute(
                    "INSERT INTO streams(file_id, key, info, fps, n, n_usable, n_codes, variants, duration_s, "
                    "indeterminate, indeterminate_s, times, quality, codes, usable) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (fid, info.key, info_to_json(info), e["fps"], e["n"], e["n_usable"], e["n_codes"],
                     e["variants"], e["duration_s"], e["indeterminate"], e["indeterminate_s"], e["times"],
                     e["quality"], e["codes"], e["usable"]))
            self._db.execute(
                "UPDATE files SET size = ?, mtime_ns = ?, sha256 = ?, duration_s = ?, reader = ?, "
                "status = 'ok', error = NULL, settings = ?, fps = ?, indeterminate_s = ?, indexed_at = ?, "
                "provenance = ? WHERE id = ?",
                (int(size), int(mtime_ns), sha256, duration, reader, settings, fps, indeterminate,
                 indexed_at or now_iso(), provenance, fid))
            if self.schema_version >= _STAT_KEY_SCHEMA:
                self._db.execute("UPDATE files SET stat_key = ? WHERE id = ?", (stat_key, fid))
        return fid

    def file_state(self, path: str | os.PathLike[str]) -> tuple[int, int, str, str | None] | None:
        """``(size, mtime_ns, status, settings)`` of a file row, for the resume check."""
        row = self._db.execute("SELECT size, mtime_ns, status, settings FROM files WHERE path = ?",
                               (norm_path(path),)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]), row[3])

    def file_identity(self, path: str | os.PathLike[str]) -> tuple[str | None, str | None]:
        """``(stat_key, sha256)`` of a file row (``(None, None)`` without one), for the resume
        check: a file whose size and mtime match but whose identity does not was replaced."""
        if self.schema_version < _STAT_KEY_SCHEMA:
            return None, None
        row = self._db.execute("SELECT stat_key, sha256 FROM files WHERE path = ?", (norm_path(path),)).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def set_stat_key(self, path: str | os.PathLike[str], stat_key: str) -> None:
        """Record the identity of an unchanged file (rows from before schema 3, a file whose
        bytes were found identical under another inode)."""
        self._require_writer()
        if self.schema_version < _STAT_KEY_SCHEMA:
            return
        with self._db:
            self._db.execute("UPDATE files SET stat_key = ? WHERE path = ?", (stat_key, norm_path(path)))

    def remove_files(self, paths: Iterable[str | os.PathLike[str]]) -> int:
        """Forget files (their fingerprints; shards covering them become stale). Returns the count."""
        with self.writer():
            n = 0
            with self._db:
                for p in paths:
                    self._db.execute("DELETE FROM files WHERE path = ?", (norm_path(p),))
                    n += self._db.changes()
            return n

    # ---------------------------------------------------------------- shards


for _name in ("check_compatible", "files", "file", "streams", "stream_ids", "stream_fingerprints",
              "stream_info", "stream_details", "stats", "file_state", "file_identity", "seal", "shards",
              "rebuild_shards", "indexed_sha256", "unfinished_runs", "saved_progress"):
    setattr(Index, _name, guard_db(getattr(Index, _name)))
for _name in ("mark_file", "mark_unfinished", "record_failure", "record_file", "set_stat_key", "remove_files",
              "touch_file", "begin_run", "end_run", "_recover_after_crash", "save_checkpoint", "drop_checkpoint"):
    setattr(Index, _name, guard_db(getattr(Index, _name), decoding=False))
del _name


# --------------------------------------------------------------------------- opening


def _connect(db_file: Path, *, readonly: bool, create: bool) -> apsw.Connection:
    import apsw

    apply_bestpractice()
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create and not readonly:
        flags |= apsw.SQLITE_OPEN_CREATE
    conn: apsw.Connection | None = None
    try:
        if readonly and _needs_immutable(db_file):
            # A read-only folder (a backup disk, a read-only mount) without SQLite's -shm
            # file: SQLite cannot create it, so open the database as immutable. That is
            # exact here: nobody can be writing to a folder no one can write to, and there
            # is no write-ahead log holding changes the main file lacks.
            conn = apsw.Connection(_immutable_uri(db_file), flags=flags | apsw.SQLITE_OPEN_URI)
        else:
            conn = apsw.Connection(str(db_file), flags=flags)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        if not readonly:
            mode = str(conn.pragma("journal_mode", "wal")).lower()
            if mode != "wal":
                conn.close()
                raise IndexError_(
                    f"SQLite cannot use write-ahead logging here (journal mode {mode!r}); "
                    "put the index on a local disk", path=db_file.parent)
            conn.pragma("synchronous", "NORMAL")
        conn.pragma("foreign_keys", "ON")
    except apsw.Error as exc:
        raise open_error(exc, db_file, "cannot open the index database", readonly=readonly, conn=conn) from exc
    return conn


def _needs_immutable(db_file: Path) -> bool:
    """True when the folder is read-only, SQLite's -shm file is missing and no
    write-ahead log holds data (then only an immutable open can read the database)."""
    folder = db_file.parent
    shm = db_file.with_name(db_file.name + "-shm")
    wal = db_file.with_name(db_file.name + "-wal")
    if shm.exists() or os.access(folder, os.W_OK):
        return False
    try:
        return not wal.exists() or wal.stat().st_size == 0
    except OSError:
        return False


def _immutable_uri(db_file: Path) -> str:
    # SQLite URIs need only these escaped in the path (no urllib: the product imports no
    # network-capable module, see tests/unit/test_project_guards.py).
    path = db_file.resolve().as_posix()
    for ch, code in (("%", "%25"), ("?", "%3f"), ("#", "%23")):
        path = path.replace(ch, code)
    return "file:" + path + "?immutable=1"


def open_index(path: Path | str | None = None, *, config: Config | None = None, create: bool = True,
               readonly: bool = False) -> Index:
    """Open (or create) the index in folder ``path``.

    Args:
        path: The index folder; default ``config["index.path"]`` (``--index`` /
            ``OVERLAP_INDEX`` / toml / the platform data folder).
        config: Resolved settings (default: :func:`~overlap_desktop.config.load_config`).
        create: Create an empty index when there is none.
        readonly: Open without write access (no sealing, no migrations).

    Returns:
        An :class:`Index` (a context manager; close it when done).

    Raises:
        IndexError_: no index there (``create=False``), the folder is on a network share
            (WAL cannot work), the database is damaged or from a newer version.
    """
    if path is None:
        if config is None:
            from overlap_desktop.config import load_config

            config = load_config()
        path = config.index_path
    folder = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    db_file = folder / DB_NAME
    exists = db_file.is_file()
    if folder.exists() and not folder.is_dir():
        raise IndexError_("is a file, not an index folder", path=folder)
    if not exists and (readonly or not create):
        raise IndexError_("no index here yet; run `overlap index PATH` first", path=folder)
    if exists and not readonly and not create and not os.access(folder, os.W_OK):
        # A caller that only reads (compare, export) on a read-only disk or a backup: open
        # read-only rather than fail; readers then serve unsealed streams from memory.
        log.info("index folder %s is not writable: opening it read-only", folder)
        readonly = True
    if not readonly:
        why = network_filesystem(folder)
        if why:
            raise IndexError_(f"{why}: SQLite's write-ahead log cannot work on a network share; "
                              "put the index on a local disk (--index DIR)", path=folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / SHARD_DIR).mkdir(exist_ok=True)
        except OSError as exc:
            raise IndexError_(f"cannot create the index folder: {exc.strerror}", path=folder) from exc
    conn = _connect(db_file, readonly=readonly, create=create)
    try:
        init_or_migrate(conn, folder, readonly=readonly, current_ids=_current_ids)
        return Index(folder, conn, readonly=readonly)
    except (KeyError, TypeError) as exc:  # a meta row missing or mangled
        conn.close()
        raise IndexError_(f"the index database is damaged (its meta table lacks {exc}); {DAMAGED_ADVICE}",
                          path=db_file) from exc
    except Exception as exc:
        errno_ = system_errno(conn)
        conn.close()
        mapped = translate_db_error(exc, folder, system_errno=errno_)
        if mapped is None:
            raise
        raise mapped from exc
    except BaseException:
        conn.close()
        raise
