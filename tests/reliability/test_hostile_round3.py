"""Issue 36: hostile input, round three (settings, rosbag2 metadata, text sources).

Each hostile input goes through the real ``overlap`` command in its own process under
2 GiB of address space and a 60 s hang guard (:mod:`tests.reliability.capped`), and must
end in a plain error naming the file and the problem, never a traceback, an internal
error or a MemoryError. Each has its look-alike that must still work.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.reliability.capped import overlap

# --------------------------------------------------------------------------- overlap.toml


def test_a_thousand_part_dotted_table_name_is_a_config_error(tmp_path: Path) -> None:
    """``[t.t.t....]`` with 1,000 parts in ./overlap.toml: exit 2 naming the file and the depth
    (was: RecursionError, internal error); four levels are still read (and ignored as unknown)."""
    (tmp_path / "overlap.toml").write_text("[" + ".".join(["t"] * 1000) + "]\nx = 1\n")
    ran = overlap("config", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert re.search(r"overlap\.toml: table \[t\.t\.t\.t\] is nested more than 4 levels deep", ran.err), ran.err
    (tmp_path / "overlap.toml").write_text("[t.t.t]\nx = 1\n[index]\nfps = 3\n")
    ok = overlap("config", cwd=tmp_path)
    assert ok.code == 0, ok.text
    assert re.search(r"index\.fps\s.*3", ok.out), ok.out


@pytest.mark.parametrize("raw", ['"yes"', '"no"', '"on"', "1", '"true"'])
def test_on_off_settings_in_a_file_take_only_true_or_false(tmp_path: Path, raw: str) -> None:
    """``anonymize_paths = "yes"`` (or 1, "true") was accepted silently: now exit 2 saying what
    is expected; ``true`` is read as true, and the environment's "yes" still means yes."""
    (tmp_path / "overlap.toml").write_text(f"[export]\nanonymize_paths = {raw}\n")
    ran = overlap("config", "--json", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 2, ran.text
    assert "for export.anonymize_paths (from " in ran.err
    assert "must be true or false (a TOML boolean, without quotes)" in ran.err, ran.err


def test_true_and_false_and_environment_words_still_work(tmp_path: Path) -> None:
    from overlap_desktop.config import load_config

    (tmp_path / "overlap.toml").write_text("[export]\nanonymize_paths = true\n")
    none = tmp_path / "none.toml"
    assert load_config(cwd=tmp_path, environ={}, user_file=none)["export.anonymize_paths"] is True
    env = {"OVERLAP_EXPORT_ANONYMIZE_PATHS": "no"}
    assert load_config(cwd=tmp_path, environ=env, user_file=none)["export.anonymize_paths"] is False


# --------------------------------------------------------------------------- rosbag2 metadata.yaml


def _alias_bomb(folder: Path, levels: int = 9) -> Path:
    """A rosbag2 folder whose ``metadata.yaml`` lists 10^levels file names through nested
    aliases (the file stays under 2 KB)."""
    from tests.fixtures_recordings import footage, write_rosbag2

    write_rosbag2(folder, footage(seconds=0.3), with_jpeg=False)
    meta = folder / "metadata.yaml"
    text = meta.read_text()
    (db,) = folder.glob("*.db3")
    lines = [f"  lol0: &a0 [{', '.join([db.name] * 10)}]"]
    for i in range(1, levels):
        lines.append(f"  lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    head, rest = text.split("rosbag2_bagfile_information:\n", 1)
    text = head + "rosbag2_bagfile_information:\n" + "\n".join(lines) + "\n" + rest
    text = re.sub(r"  relative_file_paths:\n(  - .*\n)+", f"  relative_file_paths: *a{levels - 1}\n", text)
    meta.write_text(text)
    assert meta.stat().st_size < 4096 and "*a8" in text
    return folder


def test_a_yaml_alias_bomb_in_rosbag2_metadata_is_refused(tmp_path: Path) -> None:
    """A 10^9-entry aliased ``relative_file_paths``: refused from the parser's events, before
    anything is expanded (was: 1.6 GB and 33-53 s, then "out of memory while decoding")."""
    pytest.importorskip("rosbags")
    bag = _alias_bomb(tmp_path / "bomb_bag2")
    ran = overlap("index", bag, "--index", tmp_path / "idx", "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert re.search(r"bomb_bag2: metadata\.yaml uses a YAML alias \(\*name\); rosbag2 never writes them", ran.text), \
        ran.text
    assert "out of memory" not in ran.text


def test_rosbag2_metadata_of_the_wrong_shape_is_refused_and_an_honest_one_reads(tmp_path: Path) -> None:
    """Types are checked before use (a mapping where file names belong); a real bag's
    metadata passes the same checks."""
    pytest.importorskip("rosbags")
    from overlap_desktop.core.ingest.readers.rosbag import _bag2_metadata
    from overlap_desktop.errors import MediaError
    from tests.fixtures_recordings import footage, write_rosbag2

    honest = write_rosbag2(tmp_path / "honest", footage(seconds=0.3), with_jpeg=False)
    info = _bag2_metadata(honest)
    assert info is not None and info["relative_file_paths"] == [p.name for p in honest.glob("*.db3")]
    meta = honest / "metadata.yaml"
    meta.write_text(re.sub(r"  relative_file_paths:\n(  - .*\n)+", "  relative_file_paths: {a: 1}\n",
                           meta.read_text()))
    with pytest.raises(MediaError, match=r"relative_file_paths must be a list of file names, not dict"):
        _bag2_metadata(honest)


# --------------------------------------------------------------------------- text-overlap sources

class _Lines:
    """Example sentences sharing no 13-word run (``_LINE.format(i)``)."""

    @staticmethod
    def format(i: int) -> str:
        return " ".join(f"{w}{i}" for w in "robot arm places the red cube on the blue plate near window today".split())


_LINE = _Lines()


def _zst_of_short_lines(path: Path, total: int) -> Path:
    """``total`` bytes of two-word lines, zstd-compressed as a stream (never held whole)."""
    import zstandard

    block = b"ab cd\n" * (1 << 18)
    with open(path, "wb") as fh, zstandard.ZstdCompressor(level=3).stream_writer(fh) as w:
        for _ in range(total // len(block)):
            w.write(block)
    return path


def test_a_compressed_test_file_of_a_billion_bytes_stops_at_the_cap(tmp_path: Path) -> None:
    """``--test`` from a small .zst of 1.5 GiB of short lines: stopped at the example cap
    while streaming, exit 4 naming the file and the cap (was: 1.9 GB, MemoryError, internal
    error); a small compressed test file is still read and matched."""
    bomb = _zst_of_short_lines(tmp_path / "test.txt.zst", 1536 << 20)
    assert bomb.stat().st_size < 1_000_000
    train = tmp_path / "train.txt"
    train.write_text(_LINE.format(1) + "\n")
    ran = overlap("text-overlap", "--test", bomb, "--train", train, "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert "test.txt.zst: the test side holds more than 1,000,000 test examples" in ran.err, ran.err

    import zstandard

    small = tmp_path / "small.txt.zst"
    small.write_bytes(zstandard.ZstdCompressor().compress(
        "".join(_LINE.format(i) + "\n" for i in range(3)).encode()))
    ok = overlap("text-overlap", "--test", small, "--train", train, "-q", cwd=tmp_path)
    assert ok.code == 0, ok.text
    assert "1 of 3 test examples share an n-gram" in ok.out, ok.out


def _parquet(path: Path, **columns: object) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_dictionary_and_view_string_columns_are_read_on_both_sides(tmp_path: Path) -> None:
    """pandas ``category`` columns (dictionary-encoded strings), large_string and string_view:
    read as test and as training text (was: "0 of 0 test examples (0.0%)", exit 0; as training
    data, ignored without a note). A plain string column is read as before."""
    pa = pytest.importorskip("pyarrow")
    texts = [_LINE.format(i) for i in range(4)]
    test = _parquet(tmp_path / "test.parquet", q=pa.array(texts).dictionary_encode(), n=list(range(4)))
    train = tmp_path / "train"
    train.mkdir()
    _parquet(train / "a.parquet", t=pa.array([texts[1]], type=pa.large_string()))
    _parquet(train / "b.parquet", t=pa.array([texts[2]]).dictionary_encode())
    if hasattr(pa, "string_view"):
        _parquet(train / "c.parquet", t=pa.array([texts[3]], type=pa.string_view()))
    _parquet(train / "d.parquet", t=pa.array(["unrelated words about a kitchen and a dog in the garden"]))
    ran = overlap("text-overlap", "--test", test, "--train", train, "-q", cwd=tmp_path)
    ran.assert_plain()
    want = 3 if hasattr(pa, "string_view") else 2
    assert ran.code == 0, ran.text
    assert f"{want} of 4 test examples share an n-gram" in ran.out, ran.out


def test_a_parquet_file_without_text_is_an_error_or_a_listed_skip(tmp_path: Path) -> None:
    """No text column: as the test side, exit 4 naming the columns; in a training folder,
    listed as skipped with the reason (and the text beside it still scanned); a --fields
    column that holds numbers is an error, not 0 %."""
    pytest.importorskip("pyarrow")
    numbers = _parquet(tmp_path / "numbers.parquet", state=[0.5, 1.5], n=[1, 2])
    ran = overlap("text-overlap", "--test", numbers, "--train", numbers, "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert "numbers.parquet: no text column to read (columns: state: double, n: int64)" in ran.err, ran.err

    test = tmp_path / "test.txt"
    test.write_text(_LINE.format(7) + "\n")
    train = tmp_path / "train"
    train.mkdir()
    _parquet(train / "frames.parquet", state=[0.5, 1.5])
    (train / "tasks.txt").write_text(_LINE.format(7) + "\n")
    ok = overlap("text-overlap", "--test", test, "--train", train, "-q", cwd=tmp_path)
    assert ok.code == 0, ok.text
    assert re.search(r"skipped \S*frames\.parquet: no text column \(columns: state: double\)", ok.out), ok.out
    assert "1 of 1 test examples share an n-gram" in ok.out, ok.out

    from overlap_desktop.core.text.overlap import text_overlap
    from overlap_desktop.errors import InputError

    (tmp_path / "blank.txt").write_text("\n  \n")
    with pytest.raises(InputError, match=r"blank\.txt: no test examples in this file"):
        text_overlap([tmp_path / "blank.txt"], [train], workers=1)

    wrong = overlap("text-overlap", "--test", _parquet(tmp_path / "q.parquet", q=["a b"], n=[3]), "--field", "n",
                    "--train", train, "-q", cwd=tmp_path)
    wrong.assert_plain()
    assert wrong.code == 4, wrong.text
    assert "q.parquet: column n (int64) does not hold text" in wrong.err, wrong.err


# --------------------------------------------------------------------------- an unfinished index


def test_an_index_left_empty_by_a_killed_merge_says_so(tmp_path: Path) -> None:
    """A merge killed while creating its destination leaves a database without tables. Read
    an hour later, it says it was never finished and how to remove it (was: "being created by
    another process? try again", for ever); one created a moment ago may still be in the making."""
    import os
    import time

    import apsw

    dest = tmp_path / "dest"
    dest.mkdir()
    conn = apsw.Connection(str(dest / "index.sqlite3"))  # what open_index does before the tables
    conn.pragma("journal_mode", "wal")
    conn.close()
    fresh = overlap("files", "--index", dest, cwd=tmp_path)
    fresh.assert_plain()
    assert fresh.code == 4 and "the index is empty (being created by another process?); try again" in fresh.err
    hour_ago = time.time() - 3600
    os.utime(dest / "index.sqlite3", (hour_ago, hour_ago))
    ran = overlap("files", "--index", dest, cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert re.search(r"index\.sqlite3: this index was never finished: its database is empty \(created 60 min ago "
                     r"by an `overlap index` or `overlap merge` that was stopped before it wrote anything\); it "
                     rf"holds no fingerprints, so remove the folder {re.escape(str(dest))} and run", ran.err), ran.err


# --------------------------------------------------------------------------- ROS 1 index entries


def _ros1_with_index_entries(path: Path, mode: str) -> Path:
    """Eight images (the fourth 512x512, 786 KB) in one chunk, whose index lists the big one
    50,000 times more (``dup``) or adds an entry pointing 40 bytes into it (``inside``)."""
    import numpy as np
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    Image, Header, Time = (ts.types[t] for t in ("sensor_msgs/msg/Image", "std_msgs/msg/Header",
                                                  "builtin_interfaces/msg/Time"))
    rng = np.random.default_rng(36)
    with Writer(path) as w:
        conn = w.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        for i in range(8):
            t = 1_000_000_000 + i * 250_000_000
            h, wd = (512, 512) if i == 3 else (48, 64)
            img = Image(header=Header(seq=i, stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id="cam"),
                        height=h, width=wd, encoding="rgb8", is_bigendian=0, step=wd * 3,
                        data=rng.integers(0, 255, h * wd * 3, dtype=np.uint8))
            w.write(conn, t, ts.serialize_ros1(img, "sensor_msgs/msg/Image"))
            if i == 3:
                entries = w.chunks[-1].connections[conn.id]  # the writer's index of the open chunk
                t3, offset = entries[-1]
                entries.extend([(t3, offset)] * 50_000 if mode == "dup" else [(t3 + 1, offset + 40)])
    return path


def test_overlapping_ros1_index_entries(tmp_path: Path) -> None:
    """ROS 1 index entries that overlap: one message listed 50,000 times is read once (all
    eight images, no 39 GB of copies; indexed, exit 0); an entry pointing inside another
    message is refused as corrupt data naming the topic (was: "cannot decode (ReaderError:
    ...)", the bag reader's own words)."""
    pytest.importorskip("rosbags")
    from overlap_desktop.core.ingest.readers.rosbag import RosbagReader

    dup = _ros1_with_index_entries(tmp_path / "dup.bag", "dup")
    reader = RosbagReader()
    (stream,) = reader.streams(dup)
    times = [f.t_ns for f in reader.frames(dup, stream)]
    assert len(times) == len(set(times)) == 8
    ran = overlap("index", dup, "--index", tmp_path / "idx1", "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 0 and "Indexed 1 file(s)" in ran.out, ran.text

    inside = _ros1_with_index_entries(tmp_path / "inside.bag", "inside")
    ran = overlap("index", inside, "--index", tmp_path / "idx2", "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert "inside.bag: corrupt recording data in topic /camera/image_raw after 4 images" in ran.text, ran.text


# --------------------------------------------------------------------------- rosbag2: MCAP inside file compression


def _file_compressed_mcap_bag(folder: Path, bomb: bool) -> Path:
    """A rosbag2 folder (MCAP storage, ``compression_mode: file``): an honest one, or one whose
    MCAP hides 4 GiB of zeros in a chunk declaring 1 KiB (its .mcap.zstd is ~130 KB)."""
    import zstandard

    import tests.reliability.hostile_recordings as H
    from tests.fixtures_recordings import footage, write_rosbag2

    write_rosbag2(folder, footage(seconds=0.5), storage="mcap", with_jpeg=False)
    (data,) = folder.glob("*.mcap")
    if bomb:
        hidden = H.zstd_zeros(64 << 20, declare_size=False) * 64
        H.write_mcap(data, [H.Chunk("zstd", hidden, 1024)], profile="ros2")
    packed = data.with_name(data.name + ".zstd")
    packed.write_bytes(zstandard.ZstdCompressor().compress(data.read_bytes()))
    data.unlink()
    meta = folder / "metadata.yaml"
    text = meta.read_text().replace("compression_format: ''", "compression_format: zstd")
    text = text.replace("compression_mode: ''", "compression_mode: FILE")
    meta.write_text(text.replace(f"- {data.name}", f"- {packed.name}").replace(f"path: {data.name}",
                                                                              f"path: {packed.name}"))
    return folder


def test_mcap_chunks_inside_a_file_compressed_rosbag2_are_checked_per_chunk(tmp_path: Path) -> None:
    """The whole-file measure passes (the unpacked MCAP is ~130 KB); the chunk inside it that
    expands to 4 GiB is refused at the chunk's own bound, before rosbags unpacks anything (was:
    rosbags decompressed it unchecked). The honest bag of the same shape is indexed."""
    pytest.importorskip("rosbags")
    bomb = _file_compressed_mcap_bag(tmp_path / "bomb_bag2", bomb=True)
    ran = overlap("index", bomb, "--index", tmp_path / "idx1", "-q", cwd=tmp_path)
    ran.assert_plain()
    assert ran.code == 4, ran.text
    assert re.search(r"bomb_bag2: .*corrupt compressed data in (a|the) chunk.*expands past the 1024 bytes it "
                     r"declares", ran.text), ran.text
    honest = _file_compressed_mcap_bag(tmp_path / "honest_bag2", bomb=False)
    ok = overlap("index", honest, "--index", tmp_path / "idx2", "-q", cwd=tmp_path)
    ok.assert_plain()
    assert ok.code == 0 and "Indexed 1 file(s)" in ok.out, ok.text
