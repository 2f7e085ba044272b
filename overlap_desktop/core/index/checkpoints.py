"""Saved progress inside files an interrupted run had not finished (schema 4).

While a long file is fingerprinted, :func:`~overlap_desktop.core.ingest.fingerprint.fingerprint_stream`
hands out a :class:`~overlap_desktop.core.ingest.resume.StreamCheckpoint` every
:data:`~overlap_desktop.core.ingest.resume.CHECKPOINT_S` of footage; the writer stores it here,
each in its own small transaction: the row (what the progress was saved for) is replaced and the
new chunk of samples is added, so the bytes written grow with the footage, not with its square.

Saved progress is used only for the same file -- size, modification time and identity
(inode and change time, :func:`~overlap_desktop.core.index.walk.item_state`) -- the same
fingerprint settings and the same overlap version; anything else, or a row or chunk that does not read back, is deleted
and the file is read from the start, saying why. A finished (or failed) file's progress
is deleted with its commit.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from overlap_desktop import __version__
from overlap_desktop.core.index.reading import norm_path
from overlap_desktop.core.index.schema import now_iso
from overlap_desktop.core.ingest.resume import StreamCheckpoint, StreamResume, load_resume

if TYPE_CHECKING:  # pragma: no cover
    import apsw

__all__ = ["CHECKPOINT_SCHEMA", "CheckpointStore", "SavedProgress"]

log = logging.getLogger(__name__)

#: The schema that added the checkpoint tables.
CHECKPOINT_SCHEMA = 4


def _made_with(settings: str) -> str:
    """The settings a checkpoint is saved with: the run's fingerprint settings and this overlap's
    version (another version may decode or sample differently, so its samples must not be joined)."""
    return f"{settings}\noverlap {__version__}"


@dataclass(frozen=True)
class SavedProgress:
    """What :meth:`CheckpointStore.saved_progress` found for a file.

    Attributes:
        stream_key: The stream the progress belongs to.
        resume: The progress, joined and checked; ``None`` when there was none usable.
        note: Why saved progress was discarded (a sentence for the user), else "".
    """

    stream_key: str = ""
    resume: StreamResume | None = None
    note: str = ""


class CheckpointStore:
    """The :class:`~overlap_desktop.core.index.store.Index` methods for saved in-file progress."""

    if TYPE_CHECKING:  # pragma: no cover
        _db: apsw.Connection
        schema_version: int

        def _require_writer(self) -> None: ...

    def save_checkpoint(self, path: str | os.PathLike[str], checkpoint: StreamCheckpoint, *, size: int,
                        mtime_ns: int, stat_key: str | None, settings: str, stream_key: str) -> None:
        """Store one checkpoint of ``path`` (a first one, ``seq`` 0, replaces any older progress)."""
        self._require_writer()
        if self.schema_version < CHECKPOINT_SCHEMA:
            return
        p = norm_path(path)
        with self._db:
            # Chunks from this one on belong to an older attempt (a first checkpoint starts afresh; a
            # retried worker continues from the progress it was given).
            self._db.execute("DELETE FROM checkpoint_chunks WHERE path = ? AND seq >= ?", (p, checkpoint.seq))
            self._db.execute("INSERT OR REPLACE INTO checkpoint_chunks(path, seq, data) VALUES (?, ?, ?)",
                             (p, checkpoint.seq, checkpoint.chunk()))
            self._db.execute(
                "INSERT OR REPLACE INTO checkpoints(path, size, mtime_ns, stat_key, settings, stream_key, state, "
                "saved) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (p, int(size), int(mtime_ns), stat_key, _made_with(settings), stream_key, checkpoint.state(),
                 now_iso()))

    def drop_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Forget the saved progress of ``path`` (finished, failed, changed or damaged)."""
        self._require_writer()
        if self.schema_version < CHECKPOINT_SCHEMA:
            return
        p = norm_path(path)
        if self._db.execute("SELECT 1 FROM checkpoints WHERE path = ?", (p,)).fetchone() is None \
                and self._db.execute("SELECT 1 FROM checkpoint_chunks WHERE path = ?", (p,)).fetchone() is None:
            return  # the usual case: no transaction (and no disk sync) per finished file
        with self._db:
            self._db.execute("DELETE FROM checkpoint_chunks WHERE path = ?", (p,))
            self._db.execute("DELETE FROM checkpoints WHERE path = ?", (p,))

    def saved_progress(self, path: str | os.PathLike[str], *, size: int, mtime_ns: int, stat_key: str | None,
                       settings: str, variants: int) -> SavedProgress:
        """The usable saved progress of ``path``; progress saved for another file or other
        settings, or damaged, is deleted (and ``note`` says so when it was damaged)."""
        if self.schema_version < CHECKPOINT_SCHEMA:
            return SavedProgress()
        p = norm_path(path)
        row = self._db.execute("SELECT size, mtime_ns, stat_key, settings, stream_key, state FROM checkpoints "
                               "WHERE path = ?", (p,)).fetchone()
        if row is None:
            return SavedProgress()
        if (int(row[0]), int(row[1]), row[2], row[3]) != (int(size), int(mtime_ns), stat_key, _made_with(settings)):
            # Another file now, other settings or another overlap: its samples would not be this run's.
            log.info("%s: saved progress is for another version of the file or other settings; read from the start",
                     p)
            self.drop_checkpoint(p)
            return SavedProgress()
        chunks = [bytes(b) for (b,) in self._db.execute(
            "SELECT data FROM checkpoint_chunks WHERE path = ? ORDER BY seq", (p,))]
        try:
            resume = load_resume(str(row[5]), chunks, variants)
        except ValueError as exc:
            self.drop_checkpoint(p)
            return SavedProgress(note=f"{p}: the progress saved inside this file was damaged ({exc}) and was "
                                      "discarded; the file is read from the start")
        return SavedProgress(str(row[4]), resume)
