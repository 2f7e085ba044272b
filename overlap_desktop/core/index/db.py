"""SQLite set-up shared by every index connection, and SQLite's failures in plain words.

Flipped bits, a lock held by another copy of overlap, a full disk or a read-only
folder surface from SQLite (and from decoding stored blobs) as many different
exceptions; :func:`translate_db_error` turns each into the one clear
:class:`~overlap_desktop.errors.OverlapError` the user should see, and
:func:`guard_db` applies that to the :class:`~overlap_desktop.core.index.store.Index`
methods.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from overlap_desktop.errors import IndexBusyError, IndexError_, OverlapError

__all__ = [
    "DAMAGED_ADVICE",
    "DB_NAME",
    "SHARD_REPAIR_ADVICE",
    "apply_bestpractice",
    "guard_db",
    "open_error",
    "system_errno",
    "translate_db_error",
]

log = logging.getLogger(__name__)

#: The database file inside an index folder.
DB_NAME = "index.sqlite3"

_bestpractice_lock = threading.Lock()
_bestpractice_applied = False


def apply_bestpractice() -> None:
    """Apply APSW's recommended SQLite settings once per process (before the first connection)."""
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


#: What to do about a damaged database, said once for every message that reports one.
DAMAGED_ADVICE = ("restore the index folder from a backup, or move it away and run `overlap index` on your "
                   "footage again (a new index is built; fingerprints are recomputed)")
#: What to do about damaged search shards: they are derived data, rebuilt from the database.
SHARD_REPAIR_ADVICE = "run `overlap index --rebuild-shards` to rebuild them from the index database"
#: errno values of a full disk (a quota is one too: the user's share of it is full).
_FULL_ERRNOS = frozenset(e for e in (getattr(errno, "ENOSPC", None), getattr(errno, "EDQUOT", None)) if e)
_BUSY_MESSAGE = ("another copy of overlap is using this index right now (SQLite: {exc}); wait for it to "
                 "finish or close it, then try again")


def translate_db_error(exc: BaseException, path: Path, *, decoding: bool = True,
                       system_errno: int = 0) -> BaseException | None:
    """The user-facing error for an exception raised while using the index database, or
    ``None`` when it is not about the database (a bug, a cancel: let it through).

    Flipped bits surface in many shapes (SQLite's "malformed" or "not a database",
    text that is no longer UTF-8, a compressed blob that no longer decompresses); each
    says the database is damaged and what to do. A lock timeout says another copy is
    using the index, never that the file is not an index. A write that fails for another
    reason (a file-size limit, a quota, a failing disk: SQLite's "disk I/O error") names
    the database and the operating system's reason (``system_errno``: the connection's
    last OS error, which SQLite keeps apart from its own message).
    """
    import apsw

    from overlap_desktop.errors import WRITE_ERRNOS, DiskFullError, WriteError, write_failure_reason

    if isinstance(exc, OverlapError):
        return None
    db = path / DB_NAME
    if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return IndexBusyError(_BUSY_MESSAGE.format(exc=exc), path=path)
    if isinstance(exc, apsw.FullError):
        return DiskFullError(f"disk full while writing the index ({exc}); finished work was kept; free some "
                             "space and run again", path=path)
    if isinstance(exc, apsw.IOError) or (isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS):
        code = exc.errno if isinstance(exc, OSError) else system_errno
        where = Path(exc.filename) if isinstance(exc, OSError) and exc.filename else db
        cls = DiskFullError if code in _FULL_ERRNOS else WriteError
        what = "cannot write the index" if code in WRITE_ERRNOS and code != errno.EIO else \
            "input/output error on the index"
        reason = f"{write_failure_reason(code, str(exc))}; {'SQLite' if isinstance(exc, apsw.Error) else 'OS'}: {exc}"
        err = cls(f"{what} ({reason}); finished work was kept; fix the cause and run again", path=where)
        err.reason = reason  # type: ignore[attr-defined]  # for callers that word their own message
        return err
    damaged: tuple[type[BaseException], ...] = (apsw.CorruptError, apsw.NotADBError, UnicodeDecodeError,
                                                json.JSONDecodeError)
    try:
        import zstandard

        damaged = (*damaged, zstandard.ZstdError)
    except ImportError:  # pragma: no cover - a core dependency
        pass
    # A plain ValueError while decoding stored rows is damage; while writing it is a bug.
    plain_value_error = decoding and isinstance(exc, ValueError) and type(exc).__module__ == "builtins"
    if isinstance(exc, damaged) or plain_value_error:
        return IndexError_(f"the index database is damaged ({type(exc).__name__}: {exc}); {DAMAGED_ADVICE}",
                           path=db)
    return None


def guard_db(method: Any, *, decoding: bool = True) -> Any:
    """Wrap an :class:`Index` method (plain or generator) so database damage, lock
    timeouts and a full disk become clear :class:`OverlapError` s."""
    import contextlib
    import functools
    import inspect

    @contextlib.contextmanager
    def translated(path: Path, conn: Any) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            mapped = translate_db_error(exc, path, decoding=decoding, system_errno=system_errno(conn))
            if mapped is None:
                raise
            raise mapped from exc

    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def gen(self: Any, *args: Any, **kwargs: Any) -> Any:
            with translated(self.path, self._db):
                yield from method(self, *args, **kwargs)

        return gen

    @functools.wraps(method)
    def plain(self: Any, *args: Any, **kwargs: Any) -> Any:
        with translated(self.path, self._db):
            return method(self, *args, **kwargs)

    return plain


def system_errno(conn: Any) -> int:
    """The errno of the connection's last failed OS call (0 when unknown or closed)."""
    try:
        return int(getattr(conn, "system_errno", 0) or 0)
    except Exception:  # a closed connection raises
        return 0


def open_error(exc: BaseException, db_file: Path, what: str, *, readonly: bool = True,
               conn: Any = None) -> OverlapError:
    """A clear error for a failure while opening the database: a lock timeout is another
    copy at work, damage is damage, a read-only folder is named as such."""
    import apsw

    mapped = translate_db_error(exc, db_file.parent, system_errno=system_errno(conn))
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


def first_row(cursor: Any, what: str) -> Any:
    """The first row of a query that always yields one (a count, a row just written).

    Raises:
        KeyError: ``what`` (there was no row: the database lacks something it must hold;
            :func:`~overlap_desktop.core.index.store.open_index` reports a meta row missing so).
    """
    row = cursor.fetchone()
    if row is None:
        raise KeyError(what)
    return row
