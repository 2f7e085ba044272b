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

Every row is sealed with a SHA-256 over what it was saved for (the file's path, size, date and
identity, the settings and version, the stream) and over its state and every chunk (chained,
so a save hashes only its new chunk): a state nudged by one nanosecond, a chunk swapped,
reordered or cut, or a row moved to another file fails the check and the file is read from
the start, so a resumed result is always the uninterrupted one. The seal is a checksum against
damage and editing by hand, not a secret: whoever can rewrite the index can rewrite anything.
"""

from __future__ import annotations

import hashlib
import json
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


_NO_CHAIN = "0" * 64


def _chain(prev: str, chunk: bytes) -> str:
    """The running hash of the chunks: the previous value and this chunk's SHA-256."""
    return hashlib.sha256(bytes.fromhex(prev) + hashlib.sha256(chunk).digest()).hexdigest()


def _seal(*parts: str) -> str:
    """SHA-256 over ``parts``, each length-prefixed (no two lists of parts hash alike)."""
    h = hashlib.sha256(b"overlap-checkpoint-seal/1\x00")
    for part in parts:
        raw = part.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(8, "little") + raw)
    return h.hexdigest()


def _sealed_state(p: str, size: int, mtime_ns: int, stat_key: str | None, made_with: str, stream_key: str,
                  state: str, chain: str) -> str:
    seal = _seal(p, str(int(size)), str(int(mtime_ns)), stat_key or "", made_with, stream_key, state, chain)
    return json.dumps({"sealed": state, "chain": chain, "sha256": seal})


def _unseal(row_state: str) -> tuple[str, str, str]:
    """``(state, chain, seal)`` of a stored row, or ValueError (never sealed: not ours to trust)."""
    try:
        doc = json.loads(row_state)
        state, chain, seal = doc["sealed"], doc["chain"], doc["sha256"]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError("it carries no seal") from exc
    if not all(isinstance(x, str) for x in (state, chain, seal)):
        raise ValueError("its seal is malformed")
    return state, chain, seal


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
        chunk = checkpoint.chunk()
        with self._db:
            # Chunks from this one on belong to an older attempt (a first checkpoint starts afresh; a
            # retried worker continues from the progress it was given).
            self._db.execute("DELETE FROM checkpoint_chunks WHERE path = ? AND seq >= ?", (p, checkpoint.seq))
            chain = self._chain_before(p, checkpoint.seq)
            self._db.execute("INSERT OR REPLACE INTO checkpoint_chunks(path, seq, data) VALUES (?, ?, ?)",
                             (p, checkpoint.seq, chunk))
            chain = _chain(chain, chunk)
            made_with = _made_with(settings)
            self._db.execute(
                "INSERT OR REPLACE INTO checkpoints(path, size, mtime_ns, stat_key, settings, stream_key, state, "
                "saved) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (p, int(size), int(mtime_ns), stat_key, made_with, stream_key,
                 _sealed_state(p, size, mtime_ns, stat_key, made_with, stream_key, checkpoint.state(), chain),
                 now_iso()))

    def _chain_before(self, p: str, seq: int) -> str:
        """The running hash of chunks ``0 .. seq-1``: from the row saved with them (so a save hashes
        only its new chunk), or from the chunks themselves when that row does not say."""
        if seq == 0:
            return _NO_CHAIN
        row = self._db.execute("SELECT state FROM checkpoints WHERE path = ?", (p,)).fetchone()
        try:
            state, chain, _seal_ = _unseal(str(row[0])) if row is not None else ("", "", "")
            if json.loads(state).get("chunks") == seq:
                return chain
        except (ValueError, AttributeError):
            pass
        chain = _NO_CHAIN
        for (blob,) in self._db.execute("SELECT data FROM checkpoint_chunks WHERE path = ? AND seq < ? ORDER BY seq",
                                        (p, seq)):
            chain = _chain(chain, bytes(blob))
        return chain

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
            state = _checked_state(p, size, mtime_ns, stat_key, _made_with(settings), str(row[4]), str(row[5]),
                                   chunks)
            resume = load_resume(state, chunks, variants)
        except ValueError as exc:
            self.drop_checkpoint(p)
            return SavedProgress(note=f"{p}: the progress saved inside this file was damaged ({exc}) and was "
                                      "discarded; the file is read from the start")
        return SavedProgress(str(row[4]), resume)


def _checked_state(p: str, size: int, mtime_ns: int, stat_key: str | None, made_with: str, stream_key: str,
                   row_state: str, chunks: list[bytes]) -> str:
    """The saved state when its seal holds for this file, these settings and these chunks.

    Raises:
        ValueError: it does not (the message says what failed).
    """
    state, chain, seal = _unseal(row_state)
    now = _NO_CHAIN
    for blob in chunks:
        now = _chain(now, blob)
    if now != chain:
        raise ValueError("its parts are not the ones it was saved with")
    if _seal(p, str(int(size)), str(int(mtime_ns)), stat_key or "", made_with, stream_key, state, chain) != seal:
        raise ValueError("it failed its checksum (edited, or saved for another file)")
    return state
