"""The index's search shards: sealing them from the database, serving them to a comparison.

Shards are derived data (the database holds every fingerprint); each holds the
seed codes (every variant of the usable samples on the ``seed_fps`` grid,
:func:`~overlap_desktop.core.index.shards.seed_frames`) of a batch of whole streams in the
matcher's search format (:func:`overlap_desktop.core.index.shards.build_shard`), at most
``shard_codes`` rows, so a comparison keeps one shard in memory at a time. New streams
are sealed into new shards, which merge binary-counter fashion (:meth:`ShardSet.seal`).
:class:`ShardSet` is a mixin of :class:`~overlap_desktop.core.index.store.Index`.

Life of a shard: built and recorded as sealed by the writer (:meth:`ShardSet.seal`);
marked stale by a trigger when a stream it covers is deleted or re-fingerprinted;
dropped (row deleted, folder remembered in ``shard_trash``) and rebuilt at the next
seal; its folder swept by a later writer once no reader can still be using it.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.index.db import SHARD_REPAIR_ADVICE, first_row
from overlap_desktop.core.index.plan import QueryPlan
from overlap_desktop.core.index.schema import now_iso
from overlap_desktop.core.index.shards import DEFAULT_MAX_BUCKET, DEFAULT_SEED_FPS, SEED_STAGGER, Hits, Shard
from overlap_desktop.core.types import CODE_BYTES, Progress, ProgressCallback, StreamFingerprints
from overlap_desktop.errors import IndexBusyError, IndexError_, OverlapError

if TYPE_CHECKING:  # pragma: no cover
    import apsw


__all__ = ["DEFAULT_SHARD_CODES", "SHARD_GRACE_S", "LiveShard", "ShardSet"]

log = logging.getLogger(__name__)

#: Seconds a dropped shard's folder is kept for readers that listed it before the drop.
SHARD_GRACE_S = 6 * 3600.0
#: Rows (seed codes) per shard: 8M rows = about 280 footage hours at the default preset and
#: seed grid (8 variants x 1 seed/s), ~720 MB on disk. Building one peaks at about 1 GB
#: (measured 973 MB: the rows with their ids, one chunk's sort, and the tables' pages written
#: through memory maps). A search of one shard touches most of its pages (~750 MB peak RSS),
#: which is what bounds the cap under the 1.5 GB target. Few large shards keep the per-shard
#: work of a comparison from dominating: 36 shards at 10,000 hours where 2M-code shards made 590.
DEFAULT_SHARD_CODES = 8_000_000
#: CPU seconds a rebuild of the search shards costs per stored code (every variant of every
#: sample): reading and decompressing the codes, then building shards from the seed rows.
#: Measured on the reference machine, one core (bench/RESULTS.md, "How long --rebuild-shards
#: takes"): about 7 s per 100 footage hours at the default preset (11.5M codes), a minute per
#: 1,000 hours. A slower laptop may take twice as long: it is a guide for deciding when to run it.
REBUILD_S_PER_CODE = 7.0 / (100 * 3600 * 4 * 8)


def rebuild_estimate_s(codes: int) -> float:
    """Rough seconds :meth:`Sealing.rebuild_shards` takes for an index storing ``codes`` codes."""
    return max(0, int(codes)) * REBUILD_S_PER_CODE


class ShardSet:
    """Sealing, listing and rebuilding search shards (a mixin of ``Index``)."""

    #: Seed samples per second kept in shards (:func:`~overlap_desktop.core.index.shards.seed_frames`);
    #: ``None`` keeps every usable sample. Verification always reads every sample.
    seed_fps: float | None = DEFAULT_SEED_FPS
    #: Phase steps of the seed grid (:data:`~overlap_desktop.core.index.shards.SEED_STAGGER`).
    seed_stagger: int = SEED_STAGGER

    if TYPE_CHECKING:  # provided by Index
        path: Path
        readonly: bool
        shard_codes: int
        _db: apsw.Connection

        @property
        def shard_root(self) -> Path: ...

        def writer(self) -> AbstractContextManager[Any]: ...

        def stream_fingerprints(self, stream_id: int) -> StreamFingerprints: ...

    def _sweep_shards(self, grace_s: float = SHARD_GRACE_S) -> None:
        """Remove shard folders that no row refers to.

        A folder no row ever named (a build interrupted before its row was committed)
        goes at once: only the writer builds, and we hold the lock. A dropped shard's
        folder is kept for ``grace_s`` because a comparison that listed it before it
        was dropped may still be reading it (its hits on deleted streams are filtered,
        see :class:`LiveShard`).
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

    def _pending_codes(self) -> int:
        cur = self._db.execute(
            "SELECT COALESCE(SUM(s.n_codes), 0) FROM streams s JOIN files f ON f.id = s.file_id "
            "WHERE f.status = 'ok' AND s.n_codes > 0 AND s.id NOT IN "
            "(SELECT ss.stream_id FROM shard_streams ss JOIN shards h ON h.id = ss.shard_id "
            " WHERE h.stale = 0 AND h.sealed = 1)")
        return int(first_row(cur, "pending codes")[0])

    def _uncovered_streams(self) -> list[tuple[int, int]]:
        """``(stream id, n_codes)`` of ok streams no fresh shard covers."""
        return list(self._db.execute(
            "SELECT s.id, s.n_codes FROM streams s JOIN files f ON f.id = s.file_id "
            "WHERE f.status = 'ok' AND s.n_codes > 0 AND s.id NOT IN "
            "(SELECT ss.stream_id FROM shard_streams ss JOIN shards h ON h.id = ss.shard_id "
            " WHERE h.stale = 0 AND h.sealed = 1) ORDER BY s.id"))

    def _stream_rows(self, sid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The seed rows of one stream: ``(codes (k*V, 32), frame (k*V,), variant (k*V,))``."""
        from overlap_desktop.core.index.shards import seed_frames

        try:
            fp = self.stream_fingerprints(sid)
        except KeyError:
            return None
        frames = seed_frames(fp.times_ns, fp.usable, self.seed_fps, self.seed_stagger)
        if frames.size == 0:
            return None
        v = len(fp.variants)
        return (np.ascontiguousarray(fp.codes[frames].reshape(-1, CODE_BYTES)), np.repeat(frames, v),
                np.tile(np.arange(v, dtype=np.int16), frames.size))

    def _shard_batches(self, stream_ids: Sequence[int], cancel: Any = None, tracker: _SealProgress | None = None
                       ) -> Iterator[tuple[list[int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]:
        """Batches of streams of at most ``shard_codes`` seed rows each, with their rows.

        Streams are read one at a time, so memory holds one batch (a stream larger than
        the cap makes a shard of its own).
        """
        from overlap_desktop.core.types import check_cancel

        batch: list[int] = []
        parts: list[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
        rows = 0
        for sid in stream_ids:
            check_cancel(cancel)
            got = self._stream_rows(sid)
            n = 0 if got is None else got[0].shape[0]
            if batch and rows + n > self.shard_codes:
                joined = _join(parts)
                parts.clear()  # one copy of the batch's rows in memory, not two
                yield batch, joined
                batch, parts, rows = [], [], 0
            batch.append(sid)
            if got is not None:
                parts.append((sid, got))
                rows += n
            if tracker is not None:
                tracker.read(sid)
        if batch:
            yield batch, _join(parts)

    def _drop_shard(self, shard_id: int, name: str) -> None:
        import time

        # The folder stays until a later writer sweeps it (readers may be using it).
        with self._db:
            self._db.execute("DELETE FROM shards WHERE id = ?", (shard_id,))
            self._db.execute("INSERT OR REPLACE INTO shard_trash(name, dropped) VALUES (?, ?)",
                             (name, time.time()))

    def seal(self, *, cancel: Any = None, progress: ProgressCallback | None = None) -> int:
        """Build shards for every stream no fresh shard covers; rebuild stale shards.

        Takes the writer lock. New streams go into new shards; then, like a binary counter,
        the newest shard is merged with its predecessor while it holds at least half as many
        rows and both fit in one shard. Repeated small indexing runs thus neither leave many
        tiny shards nor rewrite a large shard every time: a row is rewritten about
        log2(cap / run) times, and there are about ``rows / shard_codes`` shards plus a
        logarithmic tail. Returns the number of shards built.

        ``progress`` gets ``stage="seal"`` reports counting the pending streams' fingerprints
        (``unit="codes"``) as they are read, with a message while each shard is built; a merge
        adds its streams to the total, so the count never runs past it.
        """
        with self.writer():
            for sid, name in list(self._db.execute("SELECT id, name FROM shards WHERE stale = 1 OR sealed = 0")):
                self._drop_shard(sid, name)
            pending = self._uncovered_streams()
            if not pending:
                return 0
            self.shard_root.mkdir(parents=True, exist_ok=True)
            tracker = _SealProgress(progress)
            tracker.add(pending)
            built = self._build([s for s, _ in pending], cancel, tracker)
            while True:
                last = list(self._db.execute("SELECT id, name, n_codes FROM shards ORDER BY id DESC LIMIT 2"))
                if len(last) < 2:
                    break
                (new_id, new_name, new_n), (old_id, old_name, old_n) = last
                if 2 * new_n < old_n or new_n + old_n > self.shard_codes:
                    break
                # Dropping both makes exactly their live streams pending: rebuild them as one.
                self._drop_shard(new_id, new_name)
                self._drop_shard(old_id, old_name)
                merged = self._uncovered_streams()
                tracker.add(merged)
                built += self._build([s for s, _ in merged], cancel, tracker)
            return built

    def _build(self, stream_ids: Sequence[int], cancel: Any, tracker: _SealProgress | None = None) -> int:
        """Build and record sealed shards of ``stream_ids`` (the writer lock held)."""
        from overlap_desktop.core.index.shards import build_shard

        built = 0
        for batch, (codes, sids, fidx, vidx) in self._shard_batches(stream_ids, cancel, tracker):
            name = f"shard-{uuid.uuid4().hex[:12]}"
            if tracker is not None:
                tracker.building(int(codes.shape[0]))
            build_shard(self.shard_root / name, codes, sids, fidx, vidx, seed_fps=self.seed_fps,
                        seed_stagger=self.seed_stagger)
            with self._db:
                self._db.execute("INSERT INTO shards(name, sealed, stale, n_codes, created) "
                                 "VALUES (?, 1, 0, ?, ?)", (name, int(codes.shape[0]), now_iso()))
                shard_id = self._db.last_insert_rowid()
                self._db.executemany("INSERT INTO shard_streams(shard_id, stream_id) VALUES (?, ?)",
                                     [(shard_id, s) for s in batch])
                # A stream deleted while we built makes the new shard stale straight away.
                gone = first_row(self._db.execute(
                    "SELECT COUNT(*) FROM shard_streams ss LEFT JOIN streams s ON s.id = ss.stream_id "
                    "WHERE ss.shard_id = ? AND s.id IS NULL", (shard_id,)), "count")[0]
                if gone:
                    self._db.execute("UPDATE shards SET stale = 1 WHERE id = ?", (shard_id,))
            built += 1
        return built

    def older_shards(self) -> int:
        """Sealed, fresh shards in an older layout than a rebuild writes (read, but more slowly).

        Reads each shard's small meta file, not its tables. A shard whose meta cannot be read
        is not counted here: opening it for a search reports the damage.
        """
        from overlap_desktop.core.index.shards import layout_is_current, read_meta

        names = [n for (n,) in self._db.execute("SELECT name FROM shards WHERE sealed = 1 AND stale = 0")]
        metas = [read_meta(self.shard_root / n) for n in names]
        return sum(1 for m in metas if m is not None and not layout_is_current(m))

    def rebuild_shards(self, *, cancel: Any = None, progress: ProgressCallback | None = None) -> int:
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
            return self.seal(cancel=cancel, progress=progress)

    def shards(self) -> Iterator[Shard]:
        """Yield the search shards one at a time (only one is resident at a time).

        Pending work is sealed first when this Index may write and no other process
        holds the writer lock. Otherwise (read-only, or an indexing job is running)
        streams that no fresh shard covers are served from temporary shards built on
        the fly, so a comparison always sees every ``ok`` file.
        """
        if not self.readonly:
            try:
                self.seal()
            except IndexBusyError:
                log.info("index busy: serving unsealed streams from temporary shards")
        listed = list(self._db.execute(
            "SELECT id, name FROM shards WHERE sealed = 1 AND stale = 0 ORDER BY id"))
        for shard_id, name in listed:
            try:
                shard = Shard.open(self.shard_root / name)
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
            live = LiveShard(shard, self)
            try:
                yield live
            finally:
                _close(live)
                del live, shard
        uncovered = self._uncovered_streams()
        if uncovered:
            yield from self._temp_shards(uncovered)

    def _temp_shards(self, streams: list[tuple[int, int]]) -> Iterator[Shard]:
        from overlap_desktop.core.index.shards import build_shard

        for _batch, (codes, sids, fidx, vidx) in self._shard_batches([s for s, _ in streams]):
            if codes.shape[0] == 0:
                continue
            with tempfile.TemporaryDirectory(prefix="overlap-shard-") as tmp:
                build_shard(Path(tmp) / "shard", codes, sids, fidx, vidx, seed_fps=self.seed_fps,
                            seed_stagger=self.seed_stagger)
                shard = Shard.open(Path(tmp) / "shard")
                try:
                    yield shard
                finally:
                    _close(shard)
                    del shard


class LiveShard(Shard):
    """A sealed shard whose hits are limited to streams still in the index.

    A writer may forget or re-fingerprint a file while a comparison is walking the
    shards it listed; hits on such streams would name stream ids that no longer
    exist, so they are dropped here. It is the shard itself (same folder, same
    columns), with :meth:`search` checked and filtered.
    """

    def __init__(self, shard: Shard, index: ShardSet) -> None:
        super().__init__(shard.directory, shard.meta)
        self._index = index

    def __repr__(self) -> str:
        return f"Live{super().__repr__()}"

    def _damaged(self, why: str) -> IndexError_:
        return IndexError_(f"search shard {self.directory.name} is damaged ({why}); {SHARD_REPAIR_ADVICE}",
                           path=self._index.path)

    def search(self, query: np.ndarray | QueryPlan, *, max_distance: int, probe: int = 0,
               max_bucket: int = DEFAULT_MAX_BUCKET) -> Hits:
        try:
            hits = super().search(query, max_distance=max_distance, probe=probe, max_bucket=max_bucket)
        except IndexError_ as exc:
            raise self._damaged(exc.message) from exc
        except OverlapError:
            raise
        except Exception as exc:
            # Flipped bits in a column: a header numpy cannot parse, offsets out of range...
            raise self._damaged(f"{type(exc).__name__}: {exc}") from exc
        return self.live(hits)

    def live(self, hits: Hits) -> Hits:
        """``hits`` of this shard limited to streams still in the index (also for hits found
        elsewhere, by a cluster worker that searched this shard's files)."""
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
            hits = Hits(hits.q_idx[keep], hits.stream_id[keep], hits.frame_idx[keep], hits.variant_idx[keep],
                        hits.distance[keep])
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


class _SealProgress:
    """Progress of one seal: the pending streams' fingerprints read into shards, of all pending.

    Reading a batch's streams from the database and building its shard are the two costs; the
    count moves as streams are read, and a message names the shard while it is built.
    """

    def __init__(self, progress: ProgressCallback | None) -> None:
        self.progress = progress
        self.codes: dict[int, int] = {}
        self.total = 0
        self.done = 0
        self._last = 0
        self.shards = 0

    def add(self, streams: Sequence[tuple[int, int]]) -> None:
        """More streams to seal (``(stream id, codes)``): the first batch, or a merge's."""
        for sid, n in streams:
            self.codes[int(sid)] = int(n)
            self.total += int(n)
        self._report("reading fingerprints for the search shards")

    def read(self, sid: int) -> None:
        self.done += self.codes.get(int(sid), 0)
        # A large library has tens of thousands of streams: one report per 0.5% is plenty.
        if self.done - self._last >= self.total / 200 or self.done >= self.total:
            self._report("reading fingerprints for the search shards")

    def building(self, rows: int) -> None:
        self.shards += 1
        self._report(f"building search shard {self.shards} ({rows:,} fingerprints)")

    def _report(self, message: str) -> None:
        self._last = self.done
        if self.progress is not None:
            self.progress(Progress(stage="seal", done=min(self.done, self.total), total=self.total or None,
                                   unit="codes", message=message))


def _join(parts: list[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One batch's rows, stream-major: ``(codes, stream ids, frames, variants)``."""
    if not parts:
        return (np.zeros((0, CODE_BYTES), np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int32),
                np.zeros(0, np.int16))
    codes = np.concatenate([p[1][0] for p in parts])
    sids = np.concatenate([np.full(p[1][0].shape[0], p[0], np.int64) for p in parts])
    return (codes, sids, np.concatenate([p[1][1] for p in parts]), np.concatenate([p[1][2] for p in parts]))


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        close()
