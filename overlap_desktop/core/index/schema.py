"""The index database's layout: table definitions, version and migrations.

``meta`` holds the schema version, the index's identity (a UUID, also written into
exported manifests) and the ids of the fingerprinting pipeline that filled it.
``files`` has one row per file or recording folder; ``streams`` one row per
fingerprinted stream with its arrays as blobs (:mod:`overlap_desktop.core.index.blobs`);
``shards`` and ``shard_streams`` say which sealed search shard covers which streams;
``shard_trash`` remembers dropped shard folders that readers may still be using.

To change the layout: add ``_MIGRATIONS[n]`` (SQL upgrading ``n - 1`` to ``n``) and
bump :data:`SCHEMA_VERSION`; :func:`init_or_migrate` applies pending migrations the
next time a writer opens the index.

Versions: 1 is the first layout. 2 (same tables) adds the bit-plane codes blob (tag 2 in
:mod:`~overlap_desktop.core.index.blobs`); the bump is what makes an older overlap refuse
such an index ("made by a newer overlap") instead of failing on an unknown blob tag. 3 adds
``files.stat_key`` (inode and change time of what was fingerprinted), so a file replaced by
another of the same size and modification time is seen as changed (issue 36). 4 adds
``checkpoints`` and ``checkpoint_chunks``: the saved progress inside a long file that an
interrupted run had not finished (:mod:`~overlap_desktop.core.index.checkpoints`, issue 34).
"""

from __future__ import annotations

import datetime as _dt
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.index.db import DB_NAME, first_row, open_error
from overlap_desktop.errors import IndexError_

if TYPE_CHECKING:  # pragma: no cover
    import apsw

__all__ = ["LOCK_NAME", "SCHEMA_VERSION", "SHARD_DIR", "init_or_migrate", "now_iso"]

log = logging.getLogger(__name__)

#: Version of the database layout; bumped with a migration in :data:`_MIGRATIONS`.
SCHEMA_VERSION = 4
LOCK_NAME = "index.lock"
SHARD_DIR = "shards"

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

# Schema 2 changes no table: new and re-fingerprinted streams get bit-plane codes blobs, and
# the blobs already stored (raw codes, tags 0 and 1) are left as they are, because they still
# read. Re-encoding them here would rewrite every stream in the one transaction that opens the
# index for writing (minutes and a write-ahead log as large as the fingerprints, for a large
# library, when someone adds one file), and would not give disk space back anyway: SQLite
# keeps freed pages in the file until a VACUUM, which needs up to twice the space and the
# index to itself. `overlap merge` into a new index writes every stream anew, compactly.
_SCHEMA_V2 = "-- schema 2: codes blobs may use the bit-plane encoding (tag 2); no table changes"

# Schema 3: the identity of what was fingerprinted, "inode:ctime_ns" (a folder: its own inode and
# the newest change time in it). NULL for rows written before: the resume check then trusts size
# and mtime as before, and records the identity the next time it sees the file unchanged.
_SCHEMA_V3 = "ALTER TABLE files ADD COLUMN stat_key TEXT;"

# Schema 4: progress inside a file being fingerprinted, saved every few tens of seconds of footage so
# an interrupted run continues there. One row per file (what it was saved for: the file's size, date
# and identity, the run's settings, the stream) and its chunks of samples in order. Only the writer
# reads or writes them; an older index simply has none.
_SCHEMA_V4 = """
CREATE TABLE checkpoints(
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    stat_key TEXT,
    settings TEXT NOT NULL,
    stream_key TEXT NOT NULL,
    state TEXT NOT NULL,
    saved TEXT NOT NULL
);
CREATE TABLE checkpoint_chunks(
    path TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY(path, seq)
);
"""

# version -> SQL that upgrades from version-1 to version. v1 is the creation script.
_MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: _SCHEMA_V4}

# Versions whose migration changes no table and whose older rows still decode: an index that
# lacks only these is read as it is when opened read-only (a library on a read-only disk or a
# backup, `overlap merge` sources, the status shown at start) instead of being refused as
# "needs upgrading". Only a writer upgrades it.
# Schema 3's column and schema 4's tables are read and written by the writer only.
_READABLE_AS_IS = frozenset({2, 3, 4})


def now_iso() -> str:
    """The current UTC time as ISO text to the second (``indexed_at``, ``created``)."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


#: An empty database older than this was not being created: creating the tables takes milliseconds.
_CREATION_SECONDS = 60.0


def _empty_database(path: Path) -> IndexError_:
    """The error for an index database without tables, opened read-only.

    Another process may have just created the file and not yet its tables; but an empty
    file that has stayed empty was left by an ``overlap index`` or ``overlap merge`` stopped
    while creating it (issue 36: "try again" then never helped).
    """
    import time

    db = path / DB_NAME
    try:
        age = time.time() - db.stat().st_mtime
    except OSError:
        age = 0.0
    if age < _CREATION_SECONDS:
        return IndexError_("the index is empty (being created by another process?); try again in a moment",
                           path=db)
    return IndexError_(f"this index was never finished: its database is empty (created {age / 60:.0f} min ago by "
                       "an `overlap index` or `overlap merge` that was stopped before it wrote anything); it holds "
                       f"no fingerprints, so remove the folder {path} and run that command again", path=db)


def init_or_migrate(conn: apsw.Connection, path: Path, *, readonly: bool,
                    current_ids: Callable[[], tuple[str, str]]) -> None:
    """Create the schema in an empty database, or upgrade an older one to :data:`SCHEMA_VERSION`.

    Args:
        conn: A connection to ``path / DB_NAME``.
        path: The index folder (for messages).
        readonly: Refuse to create or upgrade instead of writing.
        current_ids: Returns ``(algo_id, prep_id)`` recorded in a new index's meta table.

    Raises:
        IndexError_: not an overlap index, made by a newer version, or needs an upgrade
            while opened read-only.
    """
    import apsw


    try:
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is not None
    except apsw.Error as exc:
        raise open_error(exc, path / DB_NAME, "cannot read the index database", conn=conn) from exc
    if not has_meta:
        if readonly:
            if not first_row(conn.execute("SELECT COUNT(*) FROM sqlite_master"), "tables")[0]:
                raise _empty_database(path)
            raise IndexError_("not an overlap index (no meta table)", path=path / DB_NAME)
        tables = first_row(conn.execute("SELECT COUNT(*) FROM sqlite_master"), "tables")[0]
        if tables:
            raise IndexError_("this database is not an overlap index", path=path / DB_NAME)
        algo_id, prep_id = current_ids()
        with conn:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
                conn.execute(_MIGRATIONS[1])
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
                    ("schema_version", "1"), ("identity", str(uuid.uuid4())), ("algo_id", algo_id),
                    ("prep_id", prep_id), ("created", now_iso())])
    version = int(first_row(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"),
                            "schema_version")[0])
    if version > SCHEMA_VERSION:
        raise IndexError_(f"this index has schema version {version}, made by a newer overlap "
                          f"(this one reads up to {SCHEMA_VERSION}); upgrade overlap", path=path)
    if version < SCHEMA_VERSION:
        if readonly:
            if all(v in _READABLE_AS_IS for v in range(version + 1, SCHEMA_VERSION + 1)):
                return
            raise IndexError_(f"this index has schema version {version} and needs upgrading; "
                              "open it once without read-only", path=path)
        with conn:
            for v in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute(_MIGRATIONS[v])
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(v),))
        log.info("index %s upgraded from schema %d to %d", path, version, SCHEMA_VERSION)
