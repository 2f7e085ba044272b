"""The index's storage layer on synthetic fingerprints: round trips, shards, locking, refusals."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import zstandard

from overlap_desktop.core.index import blobs as blobs_mod
from overlap_desktop.core.index import lock as lock_mod
from overlap_desktop.core.index import schema as schema_mod
from overlap_desktop.core.index import store as index_mod
from overlap_desktop.core.index.lock import wal_support
from overlap_desktop.core.index.shards import Hits
from overlap_desktop.core.index.store import Index, open_index
from overlap_desktop.core.types import Span, StreamFingerprints, StreamInfo, Variant
from overlap_desktop.errors import IndexBusyError, IndexError_
from tests.fixtures_index import seed_codes


@pytest.fixture(autouse=True)
def _ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # Storage tests must not depend on the fingerprinting pipeline's identifiers.
    monkeypatch.setattr(index_mod, "_current_ids", lambda: ("test-algo", "test-prep"))


def fake_fp(seed: int, n: int = 40, variants: int = 3, fps: float = 4.0) -> StreamFingerprints:
    rng = np.random.default_rng(seed)
    usable = np.ones(n, dtype=bool)
    usable[n // 4: n // 4 + 3] = False
    return StreamFingerprints(
        times_ns=(np.arange(n, dtype=np.int64) * int(1e9 / fps)),
        quality=rng.integers(0, 101, n).astype(np.uint8),
        codes=rng.integers(0, 256, (n, variants, 32)).astype(np.uint8),
        variants=(Variant(), Variant(mirrored=True), Variant(crop=0.88))[:variants],
        usable=usable,
        indeterminate=[Span(n / 4 / fps, (n / 4 + 3) / fps, "static")],
        fps=fps, duration_s=n / fps)


def add(idx: Index, path: Path, seed: int, **kw: object) -> int:
    path.write_bytes(b"x" * (seed + 1))
    st = path.stat()
    with idx.writer():
        return idx.record_file(path, size=st.st_size, mtime_ns=st.st_mtime_ns, sha256="ab" * 32,
                               reader="fake", streams=[(StreamInfo("v:0", 320, 240, codec="h264"),
                                                        fake_fp(seed, **kw))])  # type: ignore[arg-type]


def test_round_trip_and_metadata(tmp_path: Path) -> None:
    with open_index(tmp_path / "ix") as idx:
        assert idx.schema_version == schema_mod.SCHEMA_VERSION and idx.algo_id == "test-algo"
        assert len(idx.identity) == 36
        fid = add(idx, tmp_path / "a.mp4", 1)
        (f,) = idx.files()
        assert f.id == fid and f.status == "ok" and f.streams == ["v:0"] and f.reader == "fake"
        assert f.duration_s == pytest.approx(10.0) and f.indeterminate_s == pytest.approx(0.75)
        ((ff, key, fp),) = list(idx.streams())
        want = fake_fp(1)
        assert key == "v:0" and ff.path == str(tmp_path / "a.mp4")
        np.testing.assert_array_equal(fp.times_ns, want.times_ns)
        np.testing.assert_array_equal(fp.codes, want.codes)
        np.testing.assert_array_equal(fp.quality, want.quality)
        np.testing.assert_array_equal(fp.usable, want.usable)
        assert fp.variants == want.variants and fp.indeterminate == want.indeterminate
        sid = idx.stream_ids()[0][0]
        assert idx.stream_info(sid)[1] == "v:0"
        assert idx.stream_details(sid).width == 320
        identity = idx.identity
    with open_index(tmp_path / "ix", readonly=True) as idx:
        assert idx.identity == identity and len(idx.files()) == 1
        assert list(idx.streams(paths=[tmp_path / "elsewhere"])) == []
        assert len(list(idx.streams(paths=[tmp_path]))) == 1


def test_shards_cover_usable_codes_and_go_stale(tmp_path: Path) -> None:
    with open_index(tmp_path / "ix") as idx:
        idx.shard_codes = 40  # two 30-row streams cannot share a shard
        for i in range(3):
            add(idx, tmp_path / f"{i}.mp4", i)
        assert idx.seal() == 3
        shards = list(idx.shards())
        # Seeds: one usable sample per second at turning phases (at or after 0, 1/3, 2/3 of it:
        # frames 0, 6, then 8, as the third second has no usable sample that late with frames
        # 10-12 unusable, then 13, 16, 22, ...; 10 s) x 3 variants; the database keeps all 37 x 3.
        assert sum(len(s) for s in shards) == 3 * 10 * 3
        assert all(s.seed_fps == idx.seed_fps == 1.0 for s in shards)
        st = idx.stats()
        assert st["shards"] == 3 and st["pending_codes"] == 0 and st["codes"] == 333
        # A query equal to a stored seed code finds it at distance 0, with its frame and variant;
        # a sample between seeds (frame 5) is not in the shards (verification reads it from SQLite).
        fp = idx.stream_fingerprints(idx.stream_ids()[1][0])
        hits = [s.search(fp.codes[[6, 13], 2], max_distance=0) for s in idx.shards()]
        found = [list(zip(h.stream_id.tolist(), h.frame_idx.tolist(), h.variant_idx.tolist())) for h in hits if len(h)]
        sid1 = idx.stream_ids()[1][0]
        assert found == [[(sid1, 6, 2), (sid1, 13, 2)]]
        assert not any(len(s.search(fp.codes[5, 2][None, :], max_distance=0)) for s in idx.shards())
        # Forgetting a file makes its shard stale; the next seal rebuilds without it.
        assert idx.remove_files([tmp_path / "1.mp4"]) == 1
        assert idx.stats()["shards_stale"] == 1
        idx.seal()
        assert idx.stats()["shards_stale"] == 0
        assert sum(len(s) for s in idx.shards()) == 2 * 30
        # Dropped shard folders wait out a grace period for readers, then are swept;
        # a folder no row ever named (a build killed before its commit) goes at once.
        live = {n for (n,) in idx._db.execute("SELECT name FROM shards")}
        assert live < {p.name for p in idx.shard_root.iterdir()}
        (idx.shard_root / "shard-orphan").mkdir()
        with idx.writer():
            idx._sweep_shards()
            assert live < {p.name for p in idx.shard_root.iterdir()}
            assert not (idx.shard_root / "shard-orphan").exists()
            idx._sweep_shards(grace_s=0)
        assert {p.name for p in idx.shard_root.iterdir()} == live
        assert idx._db.execute("SELECT COUNT(*) FROM shard_trash").fetchone()[0] == 0


def test_hits_on_streams_forgotten_mid_compare_are_dropped(tmp_path: Path) -> None:
    with open_index(tmp_path / "ix") as writer, open_index(tmp_path / "ix", readonly=True) as reader:
        for i in range(2):
            add(writer, tmp_path / f"{i}.mp4", i)
        writer.seal()
        gone_id = writer.stream_ids()[0][0]
        query = writer.stream_fingerprints(gone_id).codes[:, 0]
        shards = reader.shards()
        shard = next(shards)
        assert set(shard.search(query, max_distance=0).stream_id.tolist()) == {gone_id}
        writer.remove_files([tmp_path / "0.mp4"])  # a writer forgets it while the reader holds the shard
        assert len(shard.search(query, max_distance=0)) == 0
        shards.close()


def test_small_runs_merge_like_a_binary_counter(tmp_path: Path) -> None:
    # Each run adds one 30-row stream. The newest shard merges into its predecessor while it
    # holds at least half as many rows and both fit the cap: few shards, few rewrites.
    with open_index(tmp_path / "ix") as idx:
        idx.shard_codes = 240
        sizes, built = [], 0
        for i in range(16):
            add(idx, tmp_path / f"{i}.mp4", i)
            built += idx.seal()
            sizes.append([n for (n,) in idx._db.execute("SELECT n_codes FROM shards ORDER BY id")])
        assert sizes[:5] == [[30], [60], [90], [90, 30], [150]]
        assert all(sum(s) == 30 * (k + 1) and max(s) <= 240 for k, s in enumerate(sizes))
        # Full shards plus a logarithmic tail, never one per run.
        assert all(len(s) <= sum(s) // 240 + 4 for s in sizes), sizes
        assert sizes[-1] == [240, 240], sizes[-1]
        # Shards built in all (each <= 240 rows): about two per run, where refilling the newest
        # shard on every run would rewrite all of its rows each time.
        assert built <= 2 * 16, built
        assert sum(len(s) for s in idx.shards()) == 16 * 30
        # Every stream is still found exactly once.
        for sid, _, _ in idx.stream_ids():
            fp = idx.stream_fingerprints(sid)
            hits = Hits.concat([s.search(fp.codes[[0], 0], max_distance=0) for s in idx.shards()])
            assert hits.stream_id.tolist() == [sid]


def test_seal_progress_counts_to_its_total_through_merges_and_rebuilds(tmp_path: Path) -> None:
    """Sealing reports the streams' fingerprints read, never past the total; a merge (which rebuilds
    shards already sealed) raises the total instead, and a rebuild reports the same way."""
    from overlap_desktop.core.types import Progress

    def check(events: list[Progress], shards: int) -> None:
        assert events and all(e.stage == "seal" and e.unit == "codes" and e.total for e in events)
        assert all(0 <= e.done <= e.total for e in events if e.total)
        totals = [e.total for e in events]
        assert totals == sorted(totals)  # only merges add to it
        assert events[-1].done == events[-1].total
        built = [e.message for e in events if (e.message or "").startswith("building search shard")]
        assert len(built) == shards

    with open_index(tmp_path / "ix") as idx:
        idx.shard_codes = 240
        add(idx, tmp_path / "0.mp4", 0)
        events: list[Progress] = []
        assert idx.seal(progress=events.append) == 1
        check(events, 1)
        codes = dict(idx._db.execute("SELECT id, n_codes FROM streams"))
        assert events[-1].total == sum(codes.values())
        # A second stream: sealed alone, then merged with the first shard (30 + 30 rows): two
        # builds, the merged streams' fingerprints added to the total once more.
        add(idx, tmp_path / "1.mp4", 1)
        events = []
        assert idx.seal(progress=events.append) == 2
        check(events, 2)
        codes = dict(idx._db.execute("SELECT id, n_codes FROM streams"))
        new = codes[max(codes)]
        assert events[0].total == new and events[-1].total == new + sum(codes.values())
        events = []
        assert idx.rebuild_shards(progress=events.append) == 1
        check(events, 1)
        # Many streams: the reading reports are thinned to about one per 0.5% (the GUI and the
        # terminal get a few hundred, not one per stream of a large library).
        for i in range(2, 402):
            add(idx, tmp_path / f"{i}.mp4", i)
        events = []
        idx.seal(progress=events.append)
        reading = [e for e in events if e.message == "reading fingerprints for the search shards"]
        assert 100 <= len(reading) <= 202 and reading[-1].done == events[-1].total
        # Nothing pending: no report at all.
        events = []
        assert idx.seal(progress=events.append) == 0 and events == []


def test_reader_sees_unsealed_streams_while_writer_holds_lock(tmp_path: Path) -> None:
    writer = open_index(tmp_path / "ix")
    reader = open_index(tmp_path / "ix")
    try:
        with writer.writer():
            st = (tmp_path / "a.mp4")
            st.write_bytes(b"1")
            writer.record_file(st, size=1, mtime_ns=1, sha256="0" * 64, reader="fake",
                               streams=[(StreamInfo("v:0"), fake_fp(3))])
            # The reader cannot seal (lock held) but still sees every ok stream.
            assert sum(len(s) for s in reader.shards()) == 30
            assert len(reader.files()) == 1
            with pytest.raises(IndexBusyError, match=f"pid {os.getpid()}"):
                with reader.writer():
                    pass
        with reader.writer():  # released
            pass
    finally:
        writer.close()
        reader.close()


def test_running_rows_become_pending_on_next_writer(tmp_path: Path) -> None:
    with open_index(tmp_path / "ix") as idx:
        with idx.writer():
            idx.mark_file(tmp_path / "x.mp4", size=1, mtime_ns=1, status="running")
    with open_index(tmp_path / "ix") as idx:
        assert idx.files()[0].status == "running"
        with idx.writer():
            assert idx.files()[0].status == "pending"


def test_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(IndexError_, match="no index here yet"):
        open_index(tmp_path / "none", readonly=True)
    with pytest.raises(IndexError_, match="no index here yet"):
        open_index(tmp_path / "none", create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(IndexError_, match="not an index folder"):
        open_index(tmp_path / "file")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "index.sqlite3").write_bytes(bytes(range(256)) * 20)
    with pytest.raises(IndexError_, match="not a database"):
        open_index(tmp_path / "junk")
    with open_index(tmp_path / "ix") as idx:
        idx._db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(IndexError_, match="newer overlap"):
        open_index(tmp_path / "ix")
    with open_index(tmp_path / "ix2") as idx:
        with pytest.raises(IndexError_, match="new folder"):
            idx.check_compatible("other-algo", "test-prep")
    # A network filesystem is refused before SQLite is touched.
    monkeypatch.setattr(lock_mod, "_mount_table", lambda: [("/", "ext4"), (str(tmp_path), "nfs4")])
    with pytest.raises(IndexError_, match="network"):
        open_index(tmp_path / "ix3")
    ok, why = wal_support(tmp_path)
    assert not ok and "network" in why


def test_wal_support_on_local_disk(tmp_path: Path) -> None:
    ok, why = wal_support(tmp_path / "not" / "yet")
    assert ok, why
    assert list(tmp_path.iterdir()) == []  # the probe cleans up


def test_migrations_upgrade_older_indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_index(tmp_path / "ix") as idx:
        add(idx, tmp_path / "a.mp4", 1)
    future = schema_mod.SCHEMA_VERSION + 1
    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", future)
    monkeypatch.setitem(schema_mod._MIGRATIONS, future, "ALTER TABLE files ADD COLUMN note TEXT;")
    with pytest.raises(IndexError_, match="needs upgrading"):  # a table change: readers must wait
        open_index(tmp_path / "ix", readonly=True)
    with open_index(tmp_path / "ix") as idx:
        assert idx.schema_version == future
        assert "note" in [r[1] for r in idx._db.execute("PRAGMA table_info(files)")]
        assert [f.status for f in idx.files()] == ["ok"]  # data survives the upgrade


def v1_codes_blob(codes: np.ndarray, variants: object) -> bytes:
    """The codes blob exactly as schema 1 wrote it: raw, or zstd (no checksum) when 5 % smaller."""
    raw = np.ascontiguousarray(codes, dtype=np.uint8).tobytes()
    z = zstandard.ZstdCompressor(level=3).compress(raw)
    return b"\x01" + z if len(z) < len(raw) * 0.95 else b"\x00" + raw


def still_fp(seed: int) -> StreamFingerprints:
    """A stream whose codes do not change (a still picture): schema 1 stored them zstd-compressed."""
    fp = fake_fp(seed)
    return replace(fp, codes=np.repeat(fp.codes[:1], len(fp), axis=0))


def make_v1_index(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index as overlap with schema 1 made it: version 1 in meta, codes in schema-1 blobs."""
    with monkeypatch.context() as m:
        m.setattr(schema_mod, "SCHEMA_VERSION", 1)
        m.setattr(blobs_mod, "encode_codes", v1_codes_blob)
        with open_index(path / "ix") as idx:
            add(idx, path / "a.mp4", 1)
            with idx.writer():
                idx.record_file(path / "still.mp4", size=1, mtime_ns=1, sha256="cd" * 32, reader="fake",
                                streams=[(StreamInfo("v:0"), still_fp(2))])
            assert idx.schema_version == 1
            assert sorted(t for (t,) in idx._db.execute("SELECT substr(codes, 1, 1) FROM streams")) == [
                b"\x00", b"\x01"]


def codes_by_path(idx: Index) -> dict[str, np.ndarray]:
    return {Path(f.path).name: fp.codes for f, _key, fp in idx.streams()}


def test_schema_1_index_reads_as_is_then_migrates_on_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_v1_index(tmp_path, monkeypatch)
    want = {"a.mp4": fake_fp(1).codes, "still.mp4": still_fp(2).codes}
    # Read-only (a backup, a read-only disk, `overlap merge` sources): read as it is, not upgraded.
    with open_index(tmp_path / "ix", readonly=True) as idx:
        assert idx.schema_version == 1
        got = codes_by_path(idx)
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
        assert sum(len(s) for s in idx.shards()) == seed_codes(idx) == 2 * 10 * 3  # served unsealed from memory
    # A writer upgrades; the old blobs stay as they are and still read; new streams get tag 2.
    with open_index(tmp_path / "ix") as idx:
        assert idx.schema_version == schema_mod.SCHEMA_VERSION
        assert dict(idx._db.execute("SELECT key, value FROM meta"))["schema_version"] == str(idx.schema_version)
        add(idx, tmp_path / "b.mp4", 3)
        tags = dict(idx._db.execute("SELECT f.path, substr(s.codes, 1, 1) FROM streams s JOIN files f "
                                    "ON f.id = s.file_id"))
        assert {Path(k).name: v for k, v in tags.items()} == {"a.mp4": b"\x00", "still.mp4": b"\x01",
                                                               "b.mp4": b"\x02"}
        got = codes_by_path(idx)
        want["b.mp4"] = fake_fp(3).codes
        assert all(np.array_equal(got[k], want[k]) for k in want)
        assert idx.seal() >= 1 and sum(len(s) for s in idx.shards()) == seed_codes(idx) == 3 * 10 * 3
    # Overlap with schema 1 refuses the upgraded index with its usual message, reader or writer.
    current = schema_mod.SCHEMA_VERSION
    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", 1)
    for readonly in (True, False):
        with pytest.raises(IndexError_, match=f"schema version {current}, made by a newer overlap"):
            open_index(tmp_path / "ix", readonly=readonly)


def test_overlap_index_upgrades_a_schema_1_index(clip_folder: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.cli.main import main

    monkeypatch.undo()  # the real pipeline ids: `overlap index` checks them
    ix = tmp_path / "ix"
    with monkeypatch.context() as m:
        m.setattr(schema_mod, "SCHEMA_VERSION", 1)
        m.setattr(blobs_mod, "encode_codes", v1_codes_blob)
        assert main(["index", str(clip_folder / "a.mp4"), "--index", str(ix), "-q"]) == 0
    with open_index(ix, readonly=True) as idx:
        assert idx.schema_version == 1
        old = codes_by_path(idx)["a.mp4"]
    assert main(["index", str(clip_folder), "--index", str(ix), "-q"]) == 0
    with open_index(ix, readonly=True) as idx:
        assert idx.schema_version == schema_mod.SCHEMA_VERSION and [f.status for f in idx.files()] == ["ok"] * 3
        tags = sorted(t for (t,) in idx._db.execute("SELECT substr(codes, 1, 1) FROM streams"))
        assert tags == [b"\x00", b"\x02", b"\x02"]  # a.mp4 unchanged, so not fingerprinted again
        got = codes_by_path(idx)
        assert np.array_equal(got["a.mp4"], old) and got["b.mkv"].shape[1] == old.shape[1]
        assert sum(len(s) for s in idx.shards()) == seed_codes(idx) > 0


def test_damaged_codes_blob_names_the_file(tmp_path: Path) -> None:
    with open_index(tmp_path / "ix") as idx:
        add(idx, tmp_path / "a.mp4", 1)
        sid = idx.stream_ids()[0][0]
        blob = bytearray(idx._db.execute("SELECT codes FROM streams WHERE id = ?", (sid,)).fetchone()[0])
        blob[len(blob) // 2] ^= 0x10
        with idx.writer():
            idx._db.execute("UPDATE streams SET codes = ? WHERE id = ?", (bytes(blob), sid))
        with pytest.raises(IndexError_, match=r"fingerprints of .*a\.mp4 \[v:0\]: damaged fingerprint codes blob"):
            idx.stream_fingerprints(sid)
        with pytest.raises(IndexError_, match="damaged fingerprint codes blob"):
            list(idx.streams())


def test_merge_reads_a_schema_1_source_and_writes_bit_planes(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.core.index.merge import merge_indexes

    make_v1_index(tmp_path, monkeypatch)
    summary = merge_indexes([tmp_path / "ix"], tmp_path / "merged")
    assert summary.merged == 2
    with open_index(tmp_path / "ix", readonly=True) as src:
        assert src.schema_version == 1  # a merge source is only read, never upgraded
    with open_index(tmp_path / "merged", readonly=True) as idx:
        assert idx.schema_version == schema_mod.SCHEMA_VERSION
        assert [t for (t,) in idx._db.execute("SELECT substr(codes, 1, 1) FROM streams")] == [b"\x02"] * 2
        got = codes_by_path(idx)
        assert np.array_equal(got["a.mp4"], fake_fp(1).codes) and np.array_equal(got["still.mp4"], still_fp(2).codes)


def test_format_3_shards_still_serve_and_rebuild_upgrades_them(tmp_path: Path) -> None:
    # An index sealed before format 4 holds every usable sample in format-3 shards. It keeps
    # answering (no migration step); `overlap index --rebuild-shards` rewrites it in format 4.
    from overlap_desktop.core.index.shards import SHARD_VERSION, Shard, build_shard

    with open_index(tmp_path / "ix") as idx:
        for i in range(2):
            add(idx, tmp_path / f"{i}.mp4", i)
        idx.seal()
        sid = idx.stream_ids()[1][0]
        fp = idx.stream_fingerprints(sid)
        for (name,) in list(idx._db.execute("SELECT name FROM shards")):
            rows = [(s, idx.stream_fingerprints(s)) for (s,) in idx._db.execute(
                "SELECT ss.stream_id FROM shard_streams ss JOIN shards h ON h.id = ss.shard_id "
                "WHERE h.name = ?", (name,))]
            codes = np.concatenate([f.codes[f.usable].reshape(-1, 32) for _, f in rows])
            sids = np.concatenate([np.full(f.usable.sum() * 3, s) for s, f in rows])
            frames = np.concatenate([np.repeat(np.flatnonzero(f.usable), 3) for _, f in rows])
            variants = np.tile(np.arange(3), codes.shape[0] // 3)
            build_shard(idx.shard_root / name, codes, sids, frames, variants, version=3)
        old = list(idx.shards())
        assert [s.version for s in old] == [3] and len(old[0]) == 2 * 37 * 3
        # A sample between seeds (frame 5) is found in the old shards, with its stream id.
        hits = Hits.concat([s.search(fp.codes[[6, 5], 2], max_distance=0) for s in idx.shards()])
        assert list(zip(hits.q_idx.tolist(), hits.stream_id.tolist(), hits.frame_idx.tolist())) == [
            (0, sid, 6), (1, sid, 5)]
        assert idx.rebuild_shards() == 1
        new = list(idx.shards())
        assert [(s.version, s.seed_fps, len(s)) for s in new] == [(SHARD_VERSION, 1.0, 2 * 10 * 3)]
        assert all(Shard.open(p).version == SHARD_VERSION for p in idx.shard_root.iterdir())
        hits = Hits.concat([s.search(fp.codes[[6, 5], 2], max_distance=0) for s in idx.shards()])
        assert list(zip(hits.q_idx.tolist(), hits.stream_id.tolist(), hits.frame_idx.tolist())) == [(0, sid, 6)]
