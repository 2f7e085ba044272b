"""The reading side of an index: its files, their streams and fingerprints, and statistics.

:class:`IndexReader` is a mixin of :class:`~overlap_desktop.core.index.store.Index`;
everything here works while another process writes (SQLite WAL readers never block).
Paths are stored absolute and normalised (:func:`norm_path`), symlinks kept as named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.blobs import decode_fingerprints, info_from_json
from overlap_desktop.core.index.db import DAMAGED_ADVICE, DB_NAME, first_row
from overlap_desktop.core.index.sealing import rebuild_estimate_s
from overlap_desktop.core.types import StreamFingerprints, StreamInfo
from overlap_desktop.errors import IndexError_

if TYPE_CHECKING:  # pragma: no cover
    import apsw

__all__ = ["IndexReader", "IndexedFile", "is_under", "norm_path"]


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
        frame_rate: Frame rate a robot dataset's frames were timed at (``None`` for files whose
            frames carry their own times), filled by :meth:`IndexReader.with_frame_rates`.
        frame_rate_source: Where that rate came from (``"stored (...)"`` or ``"--frame-rate ..."``).
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
    frame_rate: float | None = None
    frame_rate_source: str | None = None

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
            "frame_rate": self.frame_rate, "frame_rate_source": self.frame_rate_source,
        }


_FILE_COLS = ("id, path, size, mtime_ns, sha256, duration_s, status, error, reader, fps, "
              "indeterminate_s, provenance, indexed_at")
_STREAM_FP_COLS = "n, times, quality, codes, usable, variants, indeterminate, fps, duration_s"


class IndexReader:
    """Queries on the ``files`` and ``streams`` tables (a mixin of ``Index``)."""

    if TYPE_CHECKING:  # provided by Index
        path: Path
        identity: str
        schema_version: int
        algo_id: str
        prep_id: str
        _db: apsw.Connection

        @property
        def shard_root(self) -> Path: ...

        def _pending_codes(self) -> int: ...

        def older_shards(self) -> int: ...

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

    def with_frame_rates(self, files: list[IndexedFile]) -> list[IndexedFile]:
        """``files`` with the frame rate their streams were timed at, for readers that time
        frames by a rate (robot datasets: ``StreamInfo.extra["rate_source"]``)."""
        rates: dict[int, tuple[float, str]] = {}
        for fid, rate, source in self._db.execute(
                "SELECT file_id, json_extract(info, '$.rate_hint'), json_extract(info, '$.extra.rate_source') "
                "FROM streams WHERE info LIKE '%rate_source%'"):
            if source is not None and rate is not None:
                rates.setdefault(int(fid), (float(rate), str(source)))
        for f in files:
            if f.id in rates:
                f.frame_rate, f.frame_rate_source = rates[f.id]
        return files

    def file(self, path: str | os.PathLike[str]) -> IndexedFile | None:
        """The row for ``path`` (absolute or relative to the current folder), or ``None``."""
        rows = self._file_rows("WHERE path = ?", (norm_path(path),))
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
            roots = [norm_path(p) for p in paths]
            files = {i: f for i, f in files.items() if any(is_under(f.path, r) for r in roots)}
        ids = [sid for sid, fid in self._db.execute("SELECT id, file_id FROM streams ORDER BY file_id, id")
               if fid in files]
        for sid in ids:
            row = self._db.execute(f"SELECT file_id, key, {_STREAM_FP_COLS} FROM streams WHERE id = ?",
                                   (sid,)).fetchone()
            if row is None:  # deleted by a writer since we listed
                continue
            yield files[row[0]], row[1], self._decode(sid, row[2:])

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
        return self._decode(int(stream_id), row)

    def _decode(self, stream_id: int, row: Sequence[Any]) -> StreamFingerprints:
        """Decode a ``_STREAM_FP_COLS`` row; a damaged blob is reported with its stream and file."""
        try:
            return decode_fingerprints(*row)
        except IndexError_ as exc:
            found = self._db.execute("SELECT f.path, s.key FROM streams s JOIN files f ON f.id = s.file_id "
                                     "WHERE s.id = ?", (stream_id,)).fetchone()
            where = f"{found[0]} [{found[1]}]" if found else f"stream {stream_id}"
            raise IndexError_(f"fingerprints of {where}: {exc.message}; {DAMAGED_ADVICE}",
                              path=self.path / DB_NAME) from exc

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
        return info_from_json(row[0])

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: files per status, hours, codes, shards, bytes on disk."""
        by_status = dict(self._db.execute("SELECT status, COUNT(*) FROM files GROUP BY status"))
        hours, ind = first_row(self._db.execute(
            "SELECT COALESCE(SUM(duration_s), 0), COALESCE(SUM(indeterminate_s), 0) FROM files "
            "WHERE status = 'ok'"), "totals")
        n_streams, frames, codes, blob_bytes = first_row(self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(SUM(n_codes), 0), "
            "COALESCE(SUM(length(times) + length(quality) + length(codes) + length(usable)), 0) "
            "FROM streams s JOIN files f ON f.id = s.file_id WHERE f.status = 'ok'"), "totals")
        n_shards, shard_codes, stale = first_row(self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n_codes), 0), COALESCE(SUM(stale), 0) FROM shards"), "totals")
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
            "shards_older_layout": self.older_shards(),
            "shards_rebuild_estimate_s": round(rebuild_estimate_s(int(codes)), 1),
            "shard_codes": int(shard_codes),
            "pending_codes": self._pending_codes(),
            "db_bytes": int(db_bytes),
            "shard_bytes": int(shard_bytes),
            "bytes": int(db_bytes + shard_bytes),
        }

    # ---------------------------------------------------------------- writing



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


def norm_path(path: str | os.PathLike[str]) -> str:
    """The form paths are stored in: absolute, normalised, symlinks kept as named."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def is_under(path: str, root: str) -> bool:
    a, b = os.path.normcase(path), os.path.normcase(root)
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)
