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
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.types import CODE_BYTES, Span, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import IndexBusyError, IndexError_, OverlapError

if TYPE_CHECKING:  # pragma: no cover
    import apsw

    from overlap_desktop.config import Config
    from overlap_desktop.core.index.shards import Shard

__all__ = [
    "DB_NAME",
    "LOCK_NAME",
    "SCHEMA_VERSION",
    "SHARD_DIR",
    "Index",
    "IndexedFile",
    "network_filesystem",
    "open_index",
    "wal_support",
]

log = logging.getLogger(__name__)

#: Version of the database layout; bumped with a migration in :data:`_MIGRATIONS`.
SCHEMA_VERSION = 1
DB_NAME = "index.sqlite3"
LOCK_NAME = "index.lock"
SHARD_DIR = "shards"
#: Seconds a connection waits for another one's lock before giving up.
BUSY_TIMEOUT_MS = 10_000
#: Seconds a dropped shard's folder is kept for readers that listed it before the drop.
SHARD_GRACE_S = 6 * 3600.0
#: Codes per shard. 2M codes = 64 MiB of codes + ~28 MiB of ids resident while searching.
DEFAULT_SHARD_CODES = 2_000_000

# Filesystem types on which SQLite's WAL (shared memory via mmap of -shm) is unsafe.
_NETWORK_FS = frozenset({
    "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p",
    "fuse.sshfs", "sshfs", "ceph", "fuse.ceph", "glusterfs", "fuse.glusterfs", "lustre", "gpfs",
    "davfs", "fuse.davfs2", "fuse.rclone", "beegfs", "fuse.s3fs", "fuse.gcsfuse", "webdav",
    "fuse.smbnetfs", "vboxsf", "fuse.vmhgfs-fuse", "vmhgfs", "prl_fs", "drvfs", "v9fs",
})


# --------------------------------------------------------------------------- data


@dataclass
class IndexedFile:
    """One file (or recording folder) known to the index.

    Attributes:
        id: Row id (stable while the file stays in the index).
        path: Absolute path as it was indexed.
        size: Bytes (for a folder recording: total bytes of its files).
        mtime_ns: Modification time in nanoseconds (newest file for a folder).
        sha256: Hex SHA-256 of the bytes (``None`` until indexed).
        duration_s: Footage duration in seconds (longest stream).
        status: ``"ok"``, ``"error"``, ``"pending"`` (or ``"running"`` while a writer works on it).
        error: Why it failed (plain words), for ``"error"``.
        reader: Name of the reader that opened it.
        streams: Keys of its fingerprinted streams.
        indeterminate_s: Seconds excluded from matching (featureless or static), over all streams.
        fps: Sampling rate its fingerprints were taken at.
        provenance: Where the row came from when it was merged from another index (JSON text), else ``None``.
        indexed_at: UTC ISO time of the last successful fingerprinting.
    """

    id: int
    path: str
    size: int
    mtime_ns: int
    sha256: str | None
    duration_s: float | None
    status: str
    error: str | None
    reader: str | None
    streams: list[str] = field(default_factory=list)
    indeterminate_s: float = 0.0
    fps: float | None = None
    provenance: str | None = None
    indexed_at: str | None = None

    @property
    def hours(self) -> float:
        return (self.duration_s or 0.0) / 3600.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``overlap files --json``)."""
        return {
            "id": self.id, "path": self.path, "size": self.size, "mtime_ns": self.mtime_ns,
            "sha256": self.sha256, "duration_s": self.duration_s, "status": self.status,
            "error": self.error, "reader": self.reader, "streams": list(self.streams),
            "indeterminate_s": self.indeterminate_s, "fps": self.fps,
            "provenance": self.provenance, "indexed_at": self.indexed_at,
        }


# --------------------------------------------------------------------------- blobs

_RAW, _ZSTD = b"\x00", b"\x01"


def _pack(data: bytes) -> bytes:
    """Compress with zstd when that saves space (PDQ codes are near-random; times are not)."""
    import zstandard

    z = zstandard.ZstdCompressor(level=3).compress(data)
    if len(z) < len(data) * 0.95:
        return _ZSTD + z
    return _RAW + data


def _unpack(blob: bytes) -> bytes:
    tag, body = blob[:1], blob[1:]
    if tag == _RAW:
        return bytes(body)
    if tag == _ZSTD:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(body)
    raise IndexError_(f"unknown fingerprint blob encoding {tag!r}; the index may be damaged")


def encode_fingerprints(fp: StreamFingerprints) -> dict[str, Any]:
    """Column values for one stream's fingerprints (times delta-coded, usable bit-packed)."""
    n = len(fp)
    times = np.asarray(fp.times_ns, dtype=np.int64)
    codes = np.ascontiguousarray(fp.codes, dtype=np.uint8)
    if codes.shape != (n, len(fp.variants), CODE_BYTES):
        raise ValueError(f"codes shape {codes.shape} does not match {n} frames x {len(fp.variants)} variants")
    deltas = np.diff(times, prepend=np.int64(0)).astype("<i8")
    usable = np.asarray(fp.usable, dtype=bool)
    return {
        "n": n,
        "times": _pack(deltas.tobytes()),
        "quality": _pack(np.asarray(fp.quality, dtype=np.uint8).tobytes()),
        "codes": _pack(codes.tobytes()),
        "usable": _pack(np.packbits(usable).tobytes()),
        "variants": json.dumps([v.to_dict() for v in fp.variants]),
        "indeterminate": json.dumps([[s.start_s, s.end_s, s.reason] for s in fp.indeterminate]),
        "indeterminate_s": float(sum(s.duration_s for s in fp.indeterminate)),
        "fps": float(fp.fps),
        "duration_s": float(fp.duration_s),
        "n_usable": int(usable.sum()),
        "n_codes": int(usable.sum()) * len(fp.variants),
    }


def decode_fingerprints(n: int, times: bytes, quality: bytes, codes: bytes, usable: bytes,
                        variants: str, indeterminate: str, fps: float,
                        duration_s: float) -> StreamFingerprints:
    """Inverse of :func:`encode_fingerprints`."""
    vs = tuple(Variant.from_dict(d) for d in json.loads(variants))
    t = np.cumsum(np.frombuffer(_unpack(times), dtype="<i8")).astype(np.int64)
    q = np.frombuffer(_unpack(quality), dtype=np.uint8).copy()
    c = np.frombuffer(_unpack(codes), dtype=np.uint8).reshape(n, len(vs), CODE_BYTES).copy()
    u = np.unpackbits(np.frombuffer(_unpack(usable), dtype=np.uint8), count=n).astype(bool)
    spans = [Span(float(a), float(b), str(r)) for a, b, r in json.loads(indeterminate)]
    return StreamFingerprints(times_ns=t, quality=q, codes=c, variants=vs, usable=u,
                              indeterminate=spans, fps=float(fps), duration_s=float(duration_s))


def _info_to_json(info: StreamInfo) -> str:
    def safe(v: Any) -> Any:
        try:
            json.dumps(v)
            return v
        except (TypeError, ValueError):
            return str(v)

    return json.dumps({
        "key": info.key, "width": info.width, "height": info.height, "duration_s": info.duration_s,
        "codec": info.codec, "rate_hint": info.rate_hint, "rotation": info.rotation,
        "extra": {str(k): safe(v) for k, v in (info.extra or {}).items()},
    })


def _info_from_json(text: str) -> StreamInfo:
    d = json.loads(text)
    return StreamInfo(key=d["key"], width=d.get("width"), height=d.get("height"),
                      duration_s=d.get("duration_s"), codec=d.get("codec"), rate_hint=d.get("rate_hint"),
                      rotation=int(d.get("rotation") or 0), extra=dict(d.get("extra") or {}))


# --------------------------------------------------------------------------- schema

_SCHEMA_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT,
    duration_s REAL,
    reader TEXT,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'pending', 'running')),
    error TEXT,
    settings TEXT,
    fps REAL,
    indeterminate_s REAL NOT NULL DEFAULT 0,
    indexed_at TEXT,
    provenance TEXT
);
CREATE INDEX files_status ON files(status);
CREATE TABLE streams(
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    info TEXT NOT NULL,
    fps REAL NOT NULL,
    n INTEGER NOT NULL,
    n_usable INTEGER NOT NULL,
    n_codes INTEGER NOT NULL,
    variants TEXT NOT NULL,
    duration_s REAL NOT NULL,
    indeterminate TEXT NOT NULL,
    indeterminate_s REAL NOT NULL,
    times BLOB NOT NULL,
    quality BLOB NOT NULL,
    codes BLOB NOT NULL,
    usable BLOB NOT NULL,
    UNIQUE(file_id, key)
);
CREATE TABLE shards(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    sealed INTEGER NOT NULL DEFAULT 0,
    stale INTEGER NOT NULL DEFAULT 0,
    n_codes INTEGER NOT NULL,
    created TEXT NOT NULL
);
-- No foreign key to streams: a deleted stream must leave its shard marked stale, not vanish from it.
CREATE TABLE shard_streams(
    shard_id INTEGER NOT NULL REFERENCES shards(id) ON DELETE CASCADE,
    stream_id INTEGER NOT NULL,
    PRIMARY KEY(shard_id, stream_id)
);
CREATE INDEX shard_streams_stream ON shard_streams(stream_id);
-- Folders of dropped shards, kept for a grace period for readers that listed them.
CREATE TABLE shard_trash(name TEXT PRIMARY KEY, dropped REAL NOT NULL);
CREATE TRIGGER streams_stale BEFORE DELETE ON streams BEGIN
    UPDATE shards SET stale = 1
     WHERE id IN (SELECT shard_id FROM shard_streams WHERE stream_id = OLD.id);
END;
"""

# version -> SQL that upgrades from version-1 to version. v1 is the creation script.
_MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _current_ids() -> tuple[str, str]:
    """``(algo_id, prep_id)`` of this build's fingerprinting pipeline."""
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID
    from overlap_desktop.core.ingest.prep import PREP_ID

    return ALGO_ID, PREP_ID


# --------------------------------------------------------------------------- filesystem checks


def _mount_table() -> list[tuple[str, str]]:
    """``(mount point, fs type)`` pairs on Linux (empty elsewhere)."""
    out: list[tuple[str, str]] = []
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3:
                    # Spaces in mount points are escaped as \040.
                    out.append((parts[1].replace("\\040", " "), parts[2]))
    except OSError:
        pass
    return out


def _existing_ancestor(path: Path) -> Path:
    p = Path(os.path.abspath(path))
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def network_filesystem(path: Path) -> str | None:
    """Say why ``path`` is on a network filesystem (where WAL cannot work), or ``None``.

    Linux: the type of the mount holding the path. Windows: a UNC path or a drive
    Windows reports as remote. Elsewhere the WAL probe in :func:`wal_support` decides.
    """
    raw = os.path.abspath(path)
    if sys.platform == "win32":
        if raw.startswith("\\\\") and not raw.startswith(("\\\\?\\", "\\\\.\\")):
            return f"{raw} is a network share (UNC path)"
        if raw.upper().startswith("\\\\?\\UNC\\"):
            return f"{raw} is a network share (UNC path)"
        try:
            import ctypes

            drive = os.path.splitdrive(raw)[0]
            if drive:
                if ctypes.windll.kernel32.GetDriveTypeW(drive + "\\") == 4:  # DRIVE_REMOTE
                    return f"drive {drive} is a network drive"
        except (AttributeError, OSError):  # pragma: no cover - non-Windows ctypes
            pass
        return None
    real = os.path.realpath(_existing_ancestor(Path(raw)))
    best, fstype = "", ""
    for mount, kind in _mount_table():
        inside = real == mount or real.startswith(mount.rstrip("/") + "/") or mount == "/"
        if inside and len(mount) >= len(best):
            best, fstype = mount, kind
    if fstype.lower() in _NETWORK_FS:
        return f"{real} is on a network filesystem ({fstype} mounted at {best})"
    return None


def wal_support(path: Path) -> tuple[bool, str]:
    """Check that an index can live in folder ``path`` (WAL works there).

    Creates a scratch database next to where the index would be and tries WAL on it.

    Returns:
        ``(ok, reason)``; ``reason`` explains a failure or summarises success.
    """
    import apsw

    _apply_bestpractice()
    why = network_filesystem(path)
    if why:
        return False, f"{why}; SQLite's write-ahead log needs a local disk"
    where = _existing_ancestor(Path(path))
    if not where.is_dir():
        return False, f"{where} is not a folder"
    probe_dir = None
    try:
        probe_dir = tempfile.mkdtemp(prefix=".overlap-walprobe-", dir=where)
        db = apsw.Connection(os.path.join(probe_dir, "probe.sqlite3"))
        try:
            mode = db.pragma("journal_mode", "wal")
            db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        finally:
            db.close()
        if str(mode).lower() != "wal":
            return False, f"SQLite refused WAL mode in {where} (got {mode!r})"
        return True, f"WAL works in {where}"
    except (OSError, apsw.Error) as exc:
        return False, f"cannot create a database in {where}: {exc}"
    finally:
        if probe_dir:
            shutil.rmtree(probe_dir, ignore_errors=True)


# --------------------------------------------------------------------------- writer lock


class _WriterLock:
    """An exclusive OS lock on ``index.lock`` (released by the OS if the process dies)."""

    # Windows byte-range locks block reads of the locked bytes, so lock far past the pid text.
    _WIN_OFFSET = 1 << 16

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def holder(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return "unknown"
        return text.split("\n", 1)[0] or "unknown"

    def acquire(self) -> None:
        fh = open(self.path, "a+b")
        try:
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI
                import msvcrt

                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise IndexBusyError(
                f"another overlap process ({self.holder()}) is writing to this index; "
                "wait for it to finish or stop it", path=self.path.parent) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n".encode())
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.seek(0)
            fh.truncate()
            if sys.platform == "win32":  # pragma: no cover
                import msvcrt

                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        except OSError:  # pragma: no cover - closing releases the lock anyway
            pass
        finally:
            fh.close()


# --------------------------------------------------------------------------- the index

_bestpractice_lock = threading.Lock()
_bestpractice_applied = False


def _apply_bestpractice() -> None:
    global _bestpractice_applied
    with _bestpractice_lock:
        if not _bestpractice_applied:
            import apsw
            import apsw.bestpractice
            import apsw.ext

            bp = apsw.bestpractice
            # All of the recommended settings except two. connection_optimize: its
            # ``PRAGMA optimize`` at open time may write statistics, which fails with
            # "database is locked" while another process holds a write transaction, so a
            # reader could not even open the index during indexing; the writer runs
            # ``PRAGMA optimize`` itself when it releases the writer lock. library_logging:
            # it logs at ERROR on the root logger, which prints SQLite's chatter next to our
            # own clear error; we log SQLite's messages at DEBUG instead (shown with -v).
            bp.apply(tuple(f for f in bp.recommended if f not in (bp.connection_optimize, bp.library_logging)))
            try:
                apsw.ext.log_sqlite(level=logging.DEBUG, logger=logging.getLogger("overlap_desktop.sqlite"))
            except apsw.Error:  # SQLite already initialised by someone else: keep its logging
                pass
            _bestpractice_applied = True


_FILE_COLS = ("id, path, size, mtime_ns, sha256, duration_s, status, error, reader, fps, "
              "indeterminate_s, provenance, indexed_at")
_STREAM_FP_COLS = "n, times, quality, codes, usable, variants, indeterminate, fps, duration_s"


class Index:
    """An open fingerprint index. Use :func:`open_index` to get one; close it (or use
    ``with``) when done.

    Reading methods work while another process writes. Writing methods need the writer
    lock (:meth:`writer`), which :func:`~overlap_desktop.core.index.indexer.index_paths` takes.
    """

    def __init__(self, path: Path, conn: apsw.Connection, *, readonly: bool) -> None:
        self.path = path
        self._db = conn
        self.readonly = readonly
        self._lock = _WriterLock(path / LOCK_NAME)
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

    def _sweep_shards(self, grace_s: float = SHARD_GRACE_S) -> None:
        """Remove shard folders that no row refers to.

        A folder no row ever named (a build interrupted before its row was committed)
        goes at once: only the writer builds, and we hold the lock. A dropped shard's
        folder is kept for ``grace_s`` because a comparison that listed it before it
        was dropped may still be reading it (its hits on deleted streams are filtered,
        see :class:`_LiveShard`).
        """
        import time

        if not self.shard_root.is_dir():
            return
        known = {name for (name,) in self._db.execute("SELECT name FROM shards")}
        trash = dict(self._db.execute("SELECT name, dropped FROM shard_trash"))
        now = time.time()
        gone: list[str] = []
        for entry in self.shard_root.iterdir():
            if entry.name in known:
                continue
            dropped = trash.get(entry.name)
            if dropped is None or now - dropped > grace_s:
                shutil.rmtree(entry, ignore_errors=True)
                if not entry.exists():
                    gone.append(entry.name)
        gone.extend(n for n in trash if not (self.shard_root / n).exists())
        if gone:
            with self._db:
                self._db.executemany("DELETE FROM shard_trash WHERE name = ?", [(n,) for n in set(gone)])

    def check_compatible(self, algo_id: str | None = None, prep_id: str | None = None) -> None:
        """Refuse to mix fingerprints of another hash or normalisation.

        Raises:
            IndexError_: the index was built with a different ``algo_id``/``prep_id``.
        """
        if algo_id is None or prep_id is None:
            algo_id, prep_id = _current_ids()
        if (self.algo_id, self.prep_id) != (algo_id, prep_id):
            raise IndexError_(
                f"this index holds {self.algo_id}/{self.prep_id} fingerprints but this version makes "
                f"{algo_id}/{prep_id}; index into a new folder (--index) instead", path=self.path)

    # ---------------------------------------------------------------- reading

    def _file_rows(self, where: str = "", params: Sequence[Any] = ()) -> list[IndexedFile]:
        rows = list(self._db.execute(f"SELECT {_FILE_COLS} FROM files {where} ORDER BY path", params))
        keys: dict[int, list[str]] = {}
        for fid, key in self._db.execute("SELECT file_id, key FROM streams ORDER BY file_id, id"):
            keys.setdefault(fid, []).append(key)
        return [self._make_file(r, keys.get(r[0], [])) for r in rows]

    @staticmethod
    def _make_file(r: Sequence[Any], keys: list[str]) -> IndexedFile:
        return IndexedFile(id=r[0], path=r[1], size=r[2], mtime_ns=r[3], sha256=r[4], duration_s=r[5],
                           status=r[6], error=r[7], reader=r[8], streams=list(keys) if r[6] == "ok" else [],
                           fps=r[9], indeterminate_s=r[10] or 0.0, provenance=r[11], indexed_at=r[12])

    def files(self, status: str | None = None) -> list[IndexedFile]:
        """Every file in the index, sorted by path (optionally only one status)."""
        if status is None:
            return self._file_rows()
        return self._file_rows("WHERE status = ?", (status,))

    def file(self, path: str | os.PathLike[str]) -> IndexedFile | None:
        """The row for ``path`` (absolute or relative to the current folder), or ``None``."""
        rows = self._file_rows("WHERE path = ?", (_norm(path),))
        return rows[0] if rows else None

    def _file_by_id(self, file_id: int) -> IndexedFile:
        rows = self._file_rows("WHERE id = ?", (file_id,))
        if not rows:
            raise KeyError(file_id)
        return rows[0]

    def streams(self, paths: Iterable[str | os.PathLike[str]] | None = None
                ) -> Iterator[tuple[IndexedFile, str, StreamFingerprints]]:
        """Yield ``(file, stream key, fingerprints)`` for every stream of every ``ok`` file,
        or only of the files at or under ``paths``. Fingerprints load one stream at a time."""
        files = {f.id: f for f in self.files("ok")}
        if paths is not None:
            roots = [_norm(p) for p in paths]
            files = {i: f for i, f in files.items() if any(_under(f.path, r) for r in roots)}
        ids = [sid for sid, fid in self._db.execute("SELECT id, file_id FROM streams ORDER BY file_id, id")
               if fid in files]
        for sid in ids:
            row = self._db.execute(f"SELECT file_id, key, {_STREAM_FP_COLS} FROM streams WHERE id = ?",
                                   (sid,)).fetchone()
            if row is None:  # deleted by a writer since we listed
                continue
            yield files[row[0]], row[1], decode_fingerprints(*row[2:])

    def stream_ids(self) -> list[tuple[int, int, str]]:
        """``(stream id, file id, key)`` of every stream of an ``ok`` file."""
        return list(self._db.execute(
            "SELECT s.id, s.file_id, s.key FROM streams s JOIN files f ON f.id = s.file_id "
            "WHERE f.status = 'ok' ORDER BY s.id"))

    def stream_fingerprints(self, stream_id: int) -> StreamFingerprints:
        """The fingerprints of one stream (all variants).

        Raises:
            KeyError: no such stream (deleted since it was found).
        """
        row = self._db.execute(f"SELECT {_STREAM_FP_COLS} FROM streams WHERE id = ?",
                               (int(stream_id),)).fetchone()
        if row is None:
            raise KeyError(stream_id)
        return decode_fingerprints(*row)

    def stream_info(self, stream_id: int) -> tuple[IndexedFile, str]:
        """``(file, stream key)`` of a stream id found in a shard.

        Raises:
            KeyError: no such stream.
        """
        row = self._db.execute("SELECT file_id, key FROM streams WHERE id = ?", (int(stream_id),)).fetchone()
        if row is None:
            raise KeyError(stream_id)
        return self._file_by_id(row[0]), row[1]

    def stream_details(self, stream_id: int) -> StreamInfo:
        """The reader's :class:`StreamInfo` recorded for a stream (size, codec, rotation...)."""
        row = self._db.execute("SELECT info FROM streams WHERE id = ?", (int(stream_id),)).fetchone()
        if row is None:
            raise KeyError(stream_id)
        return _info_from_json(row[0])

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: files per status, hours, codes, shards, bytes on disk."""
        by_status = dict(self._db.execute("SELECT status, COUNT(*) FROM files GROUP BY status"))
        hours, ind = self._db.execute(
            "SELECT COALESCE(SUM(duration_s), 0), COALESCE(SUM(indeterminate_s), 0) FROM files "
            "WHERE status = 'ok'").fetchone()
        n_streams, frames, codes, blob_bytes = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(SUM(n_codes), 0), "
            "COALESCE(SUM(length(times) + length(quality) + length(codes) + length(usable)), 0) "
            "FROM streams s JOIN files f ON f.id = s.file_id WHERE f.status = 'ok'").fetchone()
        n_shards, shard_codes, stale = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n_codes), 0), COALESCE(SUM(stale), 0) FROM shards").fetchone()
        # The -shm file is SQLite's shared-memory index of the WAL, not data.
        db_bytes = sum(_size(self.path / (DB_NAME + s)) for s in ("", "-wal"))
        shard_bytes = _tree_size(self.shard_root)
        return {
            "path": str(self.path),
            "identity": self.identity,
            "schema_version": self.schema_version,
            "algo_id": self.algo_id,
            "prep_id": self.prep_id,
            "files": int(sum(by_status.values())),
            "files_ok": int(by_status.get("ok", 0)),
            "files_error": int(by_status.get("error", 0)),
            "files_pending": int(by_status.get("pending", 0) + by_status.get("running", 0)),
            "streams": int(n_streams),
            "hours": float(hours) / 3600.0,
            "hours_indeterminate": float(ind) / 3600.0,
            "frames": int(frames),
            "codes": int(codes),
            "fingerprint_bytes": int(blob_bytes),
            "shards": int(n_shards),
            "shards_stale": int(stale),
            "shard_codes": int(shard_codes),
            "pending_codes": self._pending_codes(),
            "db_bytes": int(db_bytes),
            "shard_bytes": int(shard_bytes),
            "bytes": int(db_bytes + shard_bytes),
        }

    # ---------------------------------------------------------------- writing

    def _require_writer(self) -> None:
        if self._lock_depth == 0:
            raise RuntimeError("writing to the index needs `with index.writer():`")

    def mark_file(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, status: str,
                  error: str | None = None, reader: str | None = None) -> int:
        """Create or update a file row without touching its fingerprints; returns its id."""
        self._require_writer()
        p = _norm(path)
        with self._db:
            self._db.execute(
                "INSERT INTO files(path, size, mtime_ns, status, error, reader) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "status = excluded.status, error = excluded.error, "
                "reader = COALESCE(excluded.reader, files.reader)",
                (p, int(size), int(mtime_ns), status, error, reader))
            return int(self._db.execute("SELECT id FROM files WHERE path = ?", (p,)).fetchone()[0])

    def record_failure(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, error: str,
                       reader: str | None = None, sha256: str | None = None) -> None:
        """Record that a file could not be fingerprinted (its old fingerprints are dropped)."""
        self._require_writer()
        p = _norm(path)
        with self._db:
            self.mark_file(p, size=size, mtime_ns=mtime_ns, status="error", error=error, reader=reader)
            self._db.execute("UPDATE files SET sha256 = ?, duration_s = NULL, fps = NULL, "
                             "indeterminate_s = 0, settings = NULL WHERE path = ?", (sha256, p))
            self._db.execute("DELETE FROM streams WHERE file_id = (SELECT id FROM files WHERE path = ?)", (p,))

    def record_file(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, sha256: str,
                    reader: str | None, streams: Sequence[tuple[StreamInfo, StreamFingerprints]],
                    settings: str | None = None, provenance: str | None = None,
                    indexed_at: str | None = None) -> int:
        """Store a file's fingerprints in one transaction (replacing any earlier ones).

        Also the entry point for merging another index (``provenance`` says where the
        row came from). Returns the file id.
        """
        self._require_writer()
        p = _norm(path) if provenance is None else str(path)
        encoded = [(info, encode_fingerprints(fp)) for info, fp in streams]
        duration = max((e["duration_s"] for _, e in encoded), default=0.0)
        indeterminate = float(sum(e["indeterminate_s"] for _, e in encoded))
        fps = encoded[0][1]["fps"] if encoded else None
        with self._db:
            self._db.execute(
                "INSERT INTO files(path, size, mtime_ns, status) VALUES (?, ?, ?, 'running') "
                "ON CONFLICT(path) DO NOTHING", (p, int(size), int(mtime_ns)))
            fid = int(self._db.execute("SELECT id FROM files WHERE path = ?", (p,)).fetchone()[0])
            self._db.execute("DELETE FROM streams WHERE file_id = ?", (fid,))
            for info, e in encoded:
                self._db.execute(
                    "INSERT INTO streams(file_id, key, info, fps, n, n_usable, n_codes, variants, duration_s, "
                    "indeterminate, indeterminate_s, times, quality, codes, usable) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (fid, info.key, _info_to_json(info), e["fps"], e["n"], e["n_usable"], e["n_codes"],
                     e["variants"], e["duration_s"], e["indeterminate"], e["indeterminate_s"], e["times"],
                     e["quality"], e["codes"], e["usable"]))
            self._db.execute(
                "UPDATE files SET size = ?, mtime_ns = ?, sha256 = ?, duration_s = ?, reader = ?, "
                "status = 'ok', error = NULL, settings = ?, fps = ?, indeterminate_s = ?, indexed_at = ?, "
                "provenance = ? WHERE id = ?",
                (int(size), int(mtime_ns), sha256, duration, reader, settings, fps, indeterminate,
                 indexed_at or _now(), provenance, fid))
        return fid

    def file_state(self, path: str | os.PathLike[str]) -> tuple[int, int, str, str | None] | None:
        """``(size, mtime_ns, status, settings)`` of a file row, for the resume check."""
        row = self._db.execute("SELECT size, mtime_ns, status, settings FROM files WHERE path = ?",
                               (_norm(path),)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]), row[3])

    def remove_files(self, paths: Iterable[str | os.PathLike[str]]) -> int:
        """Forget files (their fingerprints; shards covering them become stale). Returns the count."""
        with self.writer():
            n = 0
            with self._db:
                for p in paths:
                    self._db.execute("DELETE FROM files WHERE path = ?", (_norm(p),))
                    n += self._db.changes()
            return n

    # ---------------------------------------------------------------- shards

    def _pending_codes(self) -> int:
        row = self._db.execute(
            "SELECT COALESCE(SUM(s.n_codes), 0) FROM streams s JOIN files f ON f.id = s.file_id "
            "WHERE f.status = 'ok' AND s.n_codes > 0 AND s.id NOT IN "
            "(SELECT ss.stream_id FROM shard_streams ss JOIN shards h ON h.id = ss.shard_id "
            " WHERE h.stale = 0 AND h.sealed = 1)").fetchone()
        return int(row[0])

    def _uncovered_streams(self) -> list[tuple[int, int]]:
        """``(stream id, n_codes)`` of ok streams no fresh shard covers."""
        return list(self._db.execute(
            "SELECT s.id, s.n_codes FROM streams s JOIN files f ON f.id = s.file_id "
            "WHERE f.status = 'ok' AND s.n_codes > 0 AND s.id NOT IN "
            "(SELECT ss.stream_id FROM shard_streams ss JOIN shards h ON h.id = ss.shard_id "
            " WHERE h.stale = 0 AND h.sealed = 1) ORDER BY s.id"))

    def _batches(self, streams: list[tuple[int, int]]) -> list[list[int]]:
        batches: list[list[int]] = []
        cur: list[int] = []
        cur_n = 0
        for sid, n in streams:
            if cur and cur_n + n > self.shard_codes:
                batches.append(cur)
                cur, cur_n = [], 0
            cur.append(sid)
            cur_n += n
        if cur:
            batches.append(cur)
        return batches

    def _shard_arrays(self, stream_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        codes_l, sid_l, fidx_l, var_l = [], [], [], []
        for sid in stream_ids:
            try:
                fp = self.stream_fingerprints(sid)
            except KeyError:
                continue
            frames = np.flatnonzero(fp.usable).astype(np.int32)
            v = len(fp.variants)
            if frames.size == 0:
                continue
            codes_l.append(fp.codes[frames].reshape(-1, CODE_BYTES))
            fidx_l.append(np.repeat(frames, v))
            var_l.append(np.tile(np.arange(v, dtype=np.int16), frames.size))
            sid_l.append(np.full(frames.size * v, sid, dtype=np.int64))
        if not codes_l:
            return (np.zeros((0, CODE_BYTES), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int32),
                    np.zeros(0, np.int16))
        return (np.ascontiguousarray(np.concatenate(codes_l)), np.concatenate(sid_l),
                np.concatenate(fidx_l), np.concatenate(var_l))

    def _drop_shard(self, shard_id: int, name: str) -> None:
        import time

        # The folder stays until a later writer sweeps it (readers may be using it).
        with self._db:
            self._db.execute("DELETE FROM shards WHERE id = ?", (shard_id,))
            self._db.execute("INSERT OR REPLACE INTO shard_trash(name, dropped) VALUES (?, ?)",
                             (name, time.time()))

    def seal(self, *, cancel: Any = None) -> int:
        """Build shards for every stream no fresh shard covers; rebuild stale shards.

        Takes the writer lock. The newest shard is refilled when it has room, so
        repeated small indexing runs do not leave many tiny shards. Returns the number
        of shards built.
        """
        from overlap_desktop.core.index.shards import build_shard
        from overlap_desktop.core.types import check_cancel

        with self.writer():
            for sid, name in list(self._db.execute("SELECT id, name FROM shards WHERE stale = 1 OR sealed = 0")):
                self._drop_shard(sid, name)
            pending = self._uncovered_streams()
            if not pending:
                return 0
            total = sum(n for _, n in pending)
            last = self._db.execute(
                "SELECT id, name, n_codes FROM shards ORDER BY id DESC LIMIT 1").fetchone()
            if last is not None and last[2] + total <= self.shard_codes:
                # Refill: dropping the newest shard makes its streams pending for this build.
                self._drop_shard(last[0], last[1])
                pending = self._uncovered_streams()
            built = 0
            self.shard_root.mkdir(parents=True, exist_ok=True)
            for batch in self._batches(pending):
                check_cancel(cancel)
                codes, sids, fidx, vidx = self._shard_arrays(batch)
                name = f"shard-{uuid.uuid4().hex[:12]}"
                build_shard(self.shard_root / name, codes, sids, fidx, vidx)
                with self._db:
                    self._db.execute("INSERT INTO shards(name, sealed, stale, n_codes, created) "
                                     "VALUES (?, 1, 0, ?, ?)", (name, int(codes.shape[0]), _now()))
                    shard_id = self._db.last_insert_rowid()
                    self._db.executemany("INSERT INTO shard_streams(shard_id, stream_id) VALUES (?, ?)",
                                         [(shard_id, s) for s in batch])
                    # A stream deleted while we built makes the new shard stale straight away.
                    gone = self._db.execute(
                        "SELECT COUNT(*) FROM shard_streams ss LEFT JOIN streams s ON s.id = ss.stream_id "
                        "WHERE ss.shard_id = ? AND s.id IS NULL", (shard_id,)).fetchone()[0]
                    if gone:
                        self._db.execute("UPDATE shards SET stale = 1 WHERE id = ?", (shard_id,))
                built += 1
            return built

    def rebuild_shards(self, *, cancel: Any = None) -> int:
        """Drop every search shard and build them again from the database.

        Shards are derived data (the fingerprints live in the database), so this repairs
        any damage to them. Takes the writer lock. Returns the number of shards built.

        Raises:
            IndexBusyError: another process is writing to the index.
        """
        with self.writer():
            for sid, name in list(self._db.execute("SELECT id, name FROM shards")):
                self._drop_shard(sid, name)
            # The dropped folders are damaged or about to be replaced: remove them now,
            # not after the grace period meant for readers of healthy shards.
            self._sweep_shards(grace_s=0.0)
            return self.seal(cancel=cancel)

    def shards(self) -> Iterator[Shard]:
        """Yield the search shards one at a time (only one is resident at a time).

        Pending work is sealed first when this Index may write and no other process
        holds the writer lock. Otherwise (read-only, or an indexing job is running)
        streams that no fresh shard covers are served from temporary shards built on
        the fly, so a comparison always sees every ``ok`` file.
        """
        from overlap_desktop.core.index.shards import Shard as _Shard

        if not self.readonly:
            try:
                self.seal()
            except IndexBusyError:
                log.info("index busy: serving unsealed streams from temporary shards")
        listed = list(self._db.execute(
            "SELECT id, name FROM shards WHERE sealed = 1 AND stale = 0 ORDER BY id"))
        for shard_id, name in listed:
            try:
                shard = _Shard.open(self.shard_root / name)
            except (OSError, ValueError, IndexError_) as exc:
                # Dropped by a writer since we listed it: serve its live streams from a temp shard.
                # A shard still on disk but unreadable is damaged: the answer stays right (the
                # temporary shard is built from the database), but say how to repair it.
                level = logging.WARNING if (self.shard_root / name).exists() else logging.INFO
                log.log(level, "search shard %s unreadable (%s); using a temporary copy built from the "
                        "database; %s", name, exc, SHARD_REPAIR_ADVICE if level == logging.WARNING else "")
                ids = [r[0] for r in self._db.execute(
                    "SELECT stream_id FROM shard_streams WHERE shard_id = ?", (shard_id,))]
                yield from self._temp_shards([(i, 0) for i in ids])
                continue
            try:
                yield _LiveShard(shard, self)  # type: ignore[misc]
            finally:
                _close(shard)
                del shard
        uncovered = self._uncovered_streams()
        if uncovered:
            yield from self._temp_shards(uncovered)

    def _temp_shards(self, streams: list[tuple[int, int]]) -> Iterator[Shard]:
        from overlap_desktop.core.index.shards import Shard as _Shard
        from overlap_desktop.core.index.shards import build_shard

        for batch in self._batches(streams):
            codes, sids, fidx, vidx = self._shard_arrays(batch)
            if codes.shape[0] == 0:
                continue
            with tempfile.TemporaryDirectory(prefix="overlap-shard-") as tmp:
                build_shard(Path(tmp) / "shard", codes, sids, fidx, vidx)
                shard = _Shard.open(Path(tmp) / "shard")
                try:
                    yield shard
                finally:
                    _close(shard)
                    del shard


#: What to do about a damaged database, said once for every message that reports one.
_DAMAGED_ADVICE = ("restore the index folder from a backup, or move it away and run `overlap index` on your "
                   "footage again (a new index is built; fingerprints are recomputed)")
#: What to do about damaged search shards: they are derived data, rebuilt from the database.
SHARD_REPAIR_ADVICE = "run `overlap index --rebuild-shards` to rebuild them from the index database"
_BUSY_MESSAGE = ("another copy of overlap is using this index right now (SQLite: {exc}); wait for it to "
                 "finish or close it, then try again")


def _translate_db_error(exc: BaseException, path: Path, *, decoding: bool = True) -> BaseException | None:
    """The user-facing error for an exception raised while using the index database, or
    ``None`` when it is not about the database (a bug, a cancel: let it through).

    Flipped bits surface in many shapes (SQLite's "malformed" or "not a database",
    text that is no longer UTF-8, a compressed blob that no longer decompresses); each
    says the database is damaged and what to do. A lock timeout says another copy is
    using the index, never that the file is not an index.
    """
    import apsw

    from overlap_desktop.errors import DiskFullError, OverlapError

    if isinstance(exc, OverlapError):
        return None
    db = path / DB_NAME
    if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return IndexBusyError(_BUSY_MESSAGE.format(exc=exc), path=path)
    if isinstance(exc, apsw.FullError):
        return DiskFullError(f"disk full while writing the index ({exc}); finished work was kept; free some "
                             "space and run again", path=path)
    damaged = (apsw.CorruptError, apsw.NotADBError, UnicodeDecodeError, json.JSONDecodeError)
    try:
        import zstandard

        damaged = (*damaged, zstandard.ZstdError)
    except ImportError:  # pragma: no cover - a core dependency
        pass
    # A plain ValueError while decoding stored rows is damage; while writing it is a bug.
    plain_value_error = decoding and isinstance(exc, ValueError) and type(exc).__module__ == "builtins"
    if isinstance(exc, damaged) or plain_value_error:
        return IndexError_(f"the index database is damaged ({type(exc).__name__}: {exc}); {_DAMAGED_ADVICE}",
                           path=db)
    return None


def _guard_db(method: Any, *, decoding: bool = True) -> Any:
    """Wrap an :class:`Index` method (plain or generator) so database damage, lock
    timeouts and a full disk become clear :class:`OverlapError` s."""
    import functools
    import inspect

    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def gen(self: Index, *args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(self, *args, **kwargs)
            except Exception as exc:
                mapped = _translate_db_error(exc, self.path, decoding=decoding)
                if mapped is None:
                    raise
                raise mapped from exc

        return gen

    @functools.wraps(method)
    def plain(self: Index, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            mapped = _translate_db_error(exc, self.path, decoding=decoding)
            if mapped is None:
                raise
            raise mapped from exc

    return plain


for _name in ("check_compatible", "files", "file", "streams", "stream_ids", "stream_fingerprints",
              "stream_info", "stream_details", "stats", "file_state", "seal", "shards", "rebuild_shards"):
    setattr(Index, _name, _guard_db(getattr(Index, _name)))
for _name in ("mark_file", "record_failure", "record_file", "remove_files", "_recover_after_crash"):
    setattr(Index, _name, _guard_db(getattr(Index, _name), decoding=False))
del _name


class _LiveShard:
    """A sealed shard whose hits are limited to streams still in the index.

    A writer may forget or re-fingerprint a file while a comparison is walking the
    shards it listed; hits on such streams would name stream ids that no longer
    exist, so they are dropped here. Everything else is delegated to the shard.
    """

    def __init__(self, shard: Shard, index: Index) -> None:
        self._shard = shard
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)

    def __len__(self) -> int:
        return len(self._shard)

    def __repr__(self) -> str:
        return f"Live{self._shard!r}"

    def _damaged(self, why: str) -> IndexError_:
        return IndexError_(f"search shard {self._shard.directory.name} is damaged ({why}); {SHARD_REPAIR_ADVICE}",
                           path=self._index.path)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        try:
            hits = self._shard.search(*args, **kwargs)
        except IndexError_ as exc:
            raise self._damaged(exc.message) from exc
        except OverlapError:
            raise
        except Exception as exc:
            # Flipped bits in a column: a header numpy cannot parse, offsets out of range...
            raise self._damaged(f"{type(exc).__name__}: {exc}") from exc
        if len(hits) == 0:
            return hits
        ids = [int(i) for i in np.unique(hits.stream_id)]
        live: dict[int, tuple[int, int]] = {}
        for k in range(0, len(ids), 500):  # stay far below SQLite's bound-parameter limit
            part = ids[k:k + 500]
            live.update((r[0], (int(r[1]), len(json.loads(r[2])))) for r in self._index._db.execute(
                "SELECT s.id, s.n, s.variants FROM streams s JOIN files f ON f.id = s.file_id "
                f"WHERE f.status = 'ok' AND s.id IN ({','.join('?' * len(part))})", part))
        if len(live) < len(ids):
            keep = np.isin(hits.stream_id, np.asarray(list(live), dtype=np.int64))
            hits = type(hits)(*(getattr(hits, f)[keep] for f in
                                ("q_idx", "stream_id", "frame_idx", "variant_idx", "distance")))
        # A hit must name a frame and a variant its stream has: anything else is a damaged
        # column, which would otherwise fail deep inside the matcher.
        if len(hits):
            sid = np.asarray(hits.stream_id, dtype=np.int64)
            order = np.asarray(sorted(live), dtype=np.int64)
            limits = np.asarray([live[i] for i in sorted(live)], dtype=np.int64).reshape(-1, 2)
            pos = np.searchsorted(order, sid)
            fi, vi = np.asarray(hits.frame_idx, dtype=np.int64), np.asarray(hits.variant_idx, dtype=np.int64)
            if ((fi < 0) | (fi >= limits[pos, 0]) | (vi < 0) | (vi >= limits[pos, 1])).any():
                raise self._damaged("a search hit names a frame or variant its stream does not have")
        return hits


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        close()


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _tree_size(root: Path) -> int:
    total = 0
    if root.is_dir():
        for dirpath, _, names in os.walk(root):
            total += sum(_size(Path(dirpath) / n) for n in names)
    return total


def _norm(path: str | os.PathLike[str]) -> str:
    """The form paths are stored in: absolute, normalised, symlinks kept as named."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def _under(path: str, root: str) -> bool:
    a, b = os.path.normcase(path), os.path.normcase(root)
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


# --------------------------------------------------------------------------- opening


def _connect(db_file: Path, *, readonly: bool, create: bool) -> apsw.Connection:
    import apsw

    _apply_bestpractice()
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create and not readonly:
        flags |= apsw.SQLITE_OPEN_CREATE
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
        raise _open_error(exc, db_file, "cannot open the index database", readonly=readonly) from exc
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


def _open_error(exc: BaseException, db_file: Path, what: str, *, readonly: bool = True) -> OverlapError:
    """A clear error for a failure while opening the database: a lock timeout is another
    copy at work, damage is damage, a read-only folder is named as such."""
    import apsw

    mapped = _translate_db_error(exc, db_file.parent)
    if mapped is not None:
        return mapped  # type: ignore[return-value]
    if isinstance(exc, (apsw.CantOpenError, apsw.ReadOnlyError)) and not os.access(db_file.parent, os.W_OK):
        if not readonly:
            return IndexError_(f"{what}: the index folder is read-only and this command writes to the index; "
                               "copy the folder to a writable disk, or choose another --index",
                               path=db_file.parent)
        wal = db_file.with_name(db_file.name + "-wal")
        held = " while a write-ahead log (-wal) holds changes" if wal.exists() else ""
        return IndexError_(f"{what}: the index folder is read-only and SQLite cannot create its shared-memory "
                           f"file ({DB_NAME}-shm){held}; open it once on a writable disk (any overlap command "
                           "does), or copy the folder to a writable place", path=db_file.parent)
    return IndexError_(f"{what}: {exc}", path=db_file)


def _init_or_migrate(conn: apsw.Connection, path: Path, *, readonly: bool) -> None:
    import apsw

    try:
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is not None
    except apsw.Error as exc:
        raise _open_error(exc, path / DB_NAME, "cannot read the index database") from exc
    if not has_meta:
        if readonly:
            if not conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                # An empty database: another process has just created it and not yet its schema.
                raise IndexError_("the index is empty (being created by another process?); try again in a "
                                  "moment", path=path / DB_NAME)
            raise IndexError_("not an overlap index (no meta table)", path=path / DB_NAME)
        tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise IndexError_("this database is not an overlap index", path=path / DB_NAME)
        algo_id, prep_id = _current_ids()
        with conn:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
                conn.execute(_MIGRATIONS[1])
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
                    ("schema_version", "1"), ("identity", str(uuid.uuid4())), ("algo_id", algo_id),
                    ("prep_id", prep_id), ("created", _now())])
    version = int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise IndexError_(f"this index has schema version {version}, made by a newer overlap "
                          f"(this one reads up to {SCHEMA_VERSION}); upgrade overlap", path=path)
    if version < SCHEMA_VERSION:
        if readonly:
            raise IndexError_(f"this index has schema version {version} and needs upgrading; "
                              "open it once without read-only", path=path)
        with conn:
            for v in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute(_MIGRATIONS[v])
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(v),))
        log.info("index %s upgraded from schema %d to %d", path, version, SCHEMA_VERSION)


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
        _init_or_migrate(conn, folder, readonly=readonly)
        return Index(folder, conn, readonly=readonly)
    except (KeyError, TypeError) as exc:  # a meta row missing or mangled
        conn.close()
        raise IndexError_(f"the index database is damaged (its meta table lacks {exc}); {_DAMAGED_ADVICE}",
                          path=db_file) from exc
    except Exception as exc:
        conn.close()
        mapped = _translate_db_error(exc, folder)
        if mapped is None:
            raise
        raise mapped from exc
    except BaseException:
        conn.close()
        raise
