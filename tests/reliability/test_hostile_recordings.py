"""Hostile recordings (issue 21, items 1, 4, 5 and the MJPEG part of 8).

* Decompression bombs in MCAP chunks (zstd with and without a declared frame size, lz4
  claiming gigabytes), chunk floods, record floods, ROS 1 bag chunks (bz2, lz4) and
  rosbag2 MCAP storage: refused with a plain MediaError naming the file, never
  decompressed past our caps. Memory is traced with ``tracemalloc`` (tight limits keep
  the tests cheap; the CLI test below uses the defaults).
* Timing gaps: frames at 0 s, 1 s and 1000 h (a video and an MCAP) give a handful of
  samples, and the gap is reported in the stream's extra and the log.
* FIFOs and devices inside claimed folders (image sequences, LeRobot, rosbag2) are never
  read; every run is a subprocess with a hard timeout so a regression fails, not hangs;
  Ctrl-C (SIGINT) always stops ``overlap index``.
* A mid-stream MJPEG size switch hits the pixel cap on the frame that switches.
* Every input above through ``overlap index`` under ``RLIMIT_AS = 2 GiB`` with a 60 s
  guard (the guard catches hangs; it is not a speed assertion).
"""

from __future__ import annotations

import logging
import os
import re
import resource
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

import pytest

from overlap_desktop.core.ingest.readers._bounded import RECORD_FLOOR, TOTAL_FLOOR
from overlap_desktop.core.ingest.readers._images import ReaderSettings
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError
from tests.reliability import hostile_recordings as H

ROOT = Path(__file__).resolve().parents[2]
MiB, GiB = H.MiB, H.GiB

#: Tight caps for the in-process tests: a bomb is refused after 8 MiB, so tracing is cheap.
TIGHT = ReaderLimits(max_message_bytes=4 * MiB, max_chunk_bytes=8 * MiB)
#: Traced memory allowed for one refusal under TIGHT (chunk buffer + its final copy + slack).
TIGHT_PEAK = 3 * 8 * MiB


def _read_all(reader: object, path: Path) -> int:
    """streams() then every frame's pixels, like the indexer; returns the frame count."""
    n = 0
    for s in reader.streams(path):  # type: ignore[attr-defined]
        for f in reader.frames(path, s):  # type: ignore[attr-defined]
            f.to_rgb(8, 8)
            n += 1
    return n


def _refused_within(read: Callable[[], object], pattern: str, peak_limit: int | None) -> tuple[str, int]:
    """``read()`` raises a MediaError matching ``pattern`` with traced memory under
    ``peak_limit`` (``None``: not traced, for loops that tracing slows tenfold)."""
    if peak_limit is not None:
        tracemalloc.start()
    try:
        with pytest.raises(MediaError) as info:
            read()
        peak = tracemalloc.get_traced_memory()[1] if peak_limit is not None else 0
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert re.search(pattern, msg), msg
    if peak_limit is not None:
        assert peak < peak_limit, f"traced peak {peak / MiB:.1f} MiB for: {msg}"
    return msg, peak


def _mcap() -> object:
    from overlap_desktop.core.ingest.readers.mcap import McapReader

    return McapReader(settings=ReaderSettings(limits=TIGHT))


def _bag() -> object:
    from rosbags.highlevel import AnyReader  # noqa: F401 - imported before tracing starts
    from rosbags.typesys import Stores, get_typestore

    from overlap_desktop.core.ingest.readers.rosbag import RosbagReader

    get_typestore(Stores.LATEST)  # builds its types once, outside the traced read
    return RosbagReader(settings=ReaderSettings(limits=TIGHT))


# --------------------------------------------------------------------------- item 1: bombs

MCAP_BOMBS: dict[str, tuple[Callable[[Path], Path], str]] = {
    # The frame header states 512 MiB; the chunk says 1 KiB (the old check trusted the chunk).
    "zstd, frame declares its size": (
        lambda p: H.mcap_zstd_bomb(p, 512 * MiB, declare_frame_size=True),
        r"corrupt compressed data in the chunk at byte \d+: its zstd frame states 536870912 bytes, the chunk "
        r"declares 1024"),
    "zstd, frame hides its size": (
        lambda p: H.mcap_zstd_bomb(p, 512 * MiB, declare_frame_size=False),
        r"corrupt compressed data in the chunk at byte \d+: it expands past the 1024 bytes it declares"),
    "zstd, no summary (scanned)": (
        lambda p: H.mcap_zstd_bomb(p, 512 * MiB, declare_frame_size=True, summary=False),
        r"corrupt compressed data in a chunk: its zstd frame states 536870912 bytes, the chunk declares 1024"),
    # python-lz4's one-shot decompress allocates what the frame header claims (3 GiB).
    "lz4, frame claims 3 GiB": (
        lambda p: H.mcap_lz4_bomb(p, 3 * GiB),
        r"corrupt lz4-compressed data in the chunk at byte \d+"),
    "lz4, no summary (scanned)": (
        lambda p: H.mcap_lz4_bomb(p, 3 * GiB, summary=False),
        r"corrupt lz4-compressed data in a chunk"),
    # Honest chunks, each under the cap, adding up past the file's budget.
    "70 chunks of 8 MiB": (
        lambda p: H.mcap_chunk_flood(p, 70, 8 * MiB),
        rf"expands past {TOTAL_FLOOR // MiB} MiB in total .* decompression bomb"),
}


@pytest.mark.parametrize("kind", list(MCAP_BOMBS))
def test_mcap_decompression_bombs_are_refused_within_the_budget(kind: str, tmp_path: Path) -> None:
    make, pattern = MCAP_BOMBS[kind]
    p = make(tmp_path / "bomb.mcap")
    assert p.stat().st_size < 64 * 1024, "bombs must stay small"
    msg, peak = _refused_within(lambda: _read_all(_mcap(), p), pattern, TIGHT_PEAK)
    assert str(p) in msg
    print(f"mcap bomb [{kind}]: {p.stat().st_size} B file refused, traced peak {peak / MiB:.1f} MiB: {msg}")


def test_mcap_chunk_over_the_cap_is_refused_from_its_declared_size(tmp_path: Path) -> None:
    """A chunk stating 512 MiB is refused before a byte is decompressed."""
    p = H.write_mcap(tmp_path / "big.mcap", [H.Chunk("zstd", H.zstd_zeros(16 * MiB), 512 * MiB)])
    _refused_within(lambda: _read_all(_mcap(), p),
                                r"declares 536870912 bytes uncompressed, over the limit of 8 MiB per chunk",
                                2 * MiB)


def test_mcap_index_naming_one_big_message_many_times_copies_it_once(tmp_path: Path) -> None:
    """A message index listing the same 3 MiB message 50,000 times (an 800 KB file)."""
    from overlap_desktop.core.ingest.readers.mcap import McapReader

    pad = 3 * MiB
    msg = H.message_record(0, H.json_raw_image(2, 2, 0) + b" " * pad)  # JSON ignores trailing blanks
    chunk = H.Chunk("zstd", H.zstd_zeros(len(msg), prefix=msg), len(msg), [(0, 0)] * 50_000)
    p = H.write_mcap(tmp_path / "dup.mcap", [chunk])
    assert p.stat().st_size < 1_000_000
    reader = McapReader(settings=ReaderSettings(limits=TIGHT))
    tracemalloc.start()
    try:
        n = _read_all(reader, p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 1
    # The chunk, its copy, the message and its decoding; 50,000 copies would be 150 GB.
    assert peak < 6 * pad, f"traced peak {peak / MiB:.1f} MiB"


def test_mcap_damaged_message_index_falls_back_to_walking_the_chunk(tmp_path: Path) -> None:
    """Message indexes are only a shortcut: a wrong one does not lose a healthy chunk."""
    recs = [H.message_record(t, H.json_raw_image(2, 2, t)) for t in (0, 100_000_000)]
    raw = b"".join(recs)
    chunk = H.Chunk("", raw, len(raw), [(0, 3), (100_000_000, 7)])  # offsets inside records
    p = H.write_mcap(tmp_path / "badindex.mcap", [chunk])
    assert _read_all(_mcap(), p) == 2


def test_mcap_record_flood_is_refused_by_the_record_budget(tmp_path: Path) -> None:
    """A summary-less MCAP whose chunk is over a million empty records (costly to walk)."""
    from overlap_desktop.core.ingest.readers.mcap import McapReader

    p = H.mcap_record_flood(tmp_path / "flood.mcap", RECORD_FLOOR + 100_000)
    assert p.stat().st_size < 16 * 1024
    reader = McapReader(settings=ReaderSettings(limits=ReaderLimits(max_chunk_bytes=16 * MiB)))
    # Not traced (tracing slows the record walk tenfold); memory is bounded by the 11 MB chunk,
    # and the CLI test runs this input under a 2 GiB address-space limit.
    _refused_within(lambda: _read_all(reader, p), rf"holds over {RECORD_FLOOR} records", None)


BAG_BOMBS: dict[str, tuple[str, Callable[[], bytes], str]] = {
    "bz2, 4 GiB of zeros": ("bz2", lambda: H.bz2_zeros(4 * GiB),
                            r"the chunk at byte \d+ expands past the limit of 8 MiB per chunk"),
    "lz4, frame claims 3 GiB": ("lz4", lambda: H.lz4_declaring(bytes(1000), 3 * GiB),
                                r"corrupt lz4-compressed data in the chunk at byte \d+"),
}


@pytest.mark.parametrize("kind", list(BAG_BOMBS))
def test_ros1_bag_chunk_bombs_are_refused(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("rosbags")
    comp, make, pattern = BAG_BOMBS[kind]
    p = H.rosbag1_bomb(tmp_path / "bomb.bag", comp, make)
    assert p.stat().st_size < 16 * 1024
    reader = _bag()
    msg, peak = _refused_within(lambda: _read_all(reader, p), pattern, TIGHT_PEAK)
    assert str(p) in msg
    print(f"bag bomb [{kind}]: {p.stat().st_size} B refused, traced peak {peak / MiB:.1f} MiB: {msg}")


def test_rosbag2_mcap_storage_bomb_is_refused_before_rosbags_opens_it(tmp_path: Path) -> None:
    pytest.importorskip("rosbags")
    zeros = H.zstd_zeros(64 * MiB, declare_size=False) * 8  # 512 MiB in 8 frames; the chunk says 1 KiB
    folder = H.rosbag2_mcap_bomb(tmp_path / "bag2", lambda p: H.write_mcap(
        p, [H.Chunk("zstd", zeros, 1024)], profile="ros2"))
    reader = _bag()
    msg, _ = _refused_within(lambda: _read_all(reader, folder),
                             r"corrupt compressed data in the chunk at byte \d+: it expands past", TIGHT_PEAK)
    assert str(folder) in msg


def test_rosbag2_file_compression_bomb_is_measured_before_rosbags_unpacks_it(tmp_path: Path) -> None:
    """``compression_mode: file``: rosbags would write the whole decompressed file to disk."""
    pytest.importorskip("rosbags")
    folder = H.rosbag2_file_mode_bomb(tmp_path / "bag2", H.zstd_zeros(64 * MiB, declare_size=False) * 10)
    reader = _bag()
    msg, _ = _refused_within(lambda: _read_all(reader, folder),
                             rf"expands past {TOTAL_FLOOR // MiB} MiB in total .* while reading "
                             r"bag2\.db3\.zstd", TIGHT_PEAK)
    assert str(folder) in msg


def test_rosbag2_message_compression_bombs_are_skipped_within_the_caps(tmp_path: Path) -> None:
    """``compression_mode: message``: every message is a zstd frame of 512 MiB (rosbags would
    decompress each whole); each is refused at the message cap, so the topic has nothing."""
    pytest.importorskip("rosbags")
    folder = H.rosbag2_message_mode_bomb(tmp_path / "bag2", H.zstd_zeros(512 * MiB))
    reader = _bag()
    msg, _ = _refused_within(lambda: _read_all(reader, folder),
                             r"compressed message declares 536870912 bytes, over the limit of 4194304", TIGHT_PEAK)
    assert str(folder) in msg


def test_honest_recordings_still_read_under_the_new_decompression(tmp_path: Path) -> None:
    """The caps do not refuse ordinary chunked recordings (zstd, lz4, none; ROS 1 bz2 and lz4)."""
    from tests.fixtures_recordings import footage, mcap_raw_footage, write_rosbag1

    frames = footage(seconds=1.0)
    for comp in ("zstd", "lz4", "none"):
        p = mcap_raw_footage(tmp_path / f"ok_{comp}.mcap", frames=frames, chunk_compression=comp)
        assert _read_all(_mcap(), p) == len(frames)
    pytest.importorskip("rosbags")
    from rosbags.rosbag1 import Writer

    for comp in ("bz2", "lz4"):
        orig = Writer.__init__

        def init(self: Writer, path: Path, _orig: Callable[..., None] = orig, _c: str = comp) -> None:
            _orig(self, path)
            self.set_compression(Writer.CompressionFormat[_c.upper()])

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Writer, "__init__", init)
            p = write_rosbag1(tmp_path / f"ok_{comp}.bag", frames, with_jpeg=False, with_other=False)
        assert _read_all(_bag(), p) == len(frames)
    for mode in ("MESSAGE", "FILE"):
        folder = H.rosbag2_compressed(tmp_path / f"ok_{mode}", mode)
        assert _read_all(_bag(), folder) == len(frames)


# --------------------------------------------------------------------------- item 4: timing gaps


@pytest.mark.parametrize("kind", ["video", "mcap"])
def test_a_1000_hour_gap_costs_a_few_samples_and_is_reported(kind: str, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    from overlap_desktop.core.ingest.frames import MAX_HOLD_S, sample_on_grid
    from overlap_desktop.core.ingest.readers.mcap import McapReader
    from overlap_desktop.core.ingest.readers.video import VideoReader

    if kind == "video":
        p, reader = H.video_time_gap(tmp_path / "gap.mkv"), VideoReader()
    else:
        p, reader = H.mcap_time_gap(tmp_path / "gap.mcap"), McapReader()
    assert p.stat().st_size < 64 * 1024
    (stream,) = reader.streams(p)
    fps = 4.0
    with caplog.at_level(logging.WARNING):
        # islice: before the fix this was 14.4 million samples; stop at 1000 so a regression fails fast.
        samples = list(islice(sample_on_grid(reader.frames(p, stream), fps, duration_s=stream.duration_s), 1000))
    # Three frames, each held at most MAX_HOLD_S (plus the grid point at the frame itself).
    assert len(samples) <= 3 * (MAX_HOLD_S * fps + 1), len(samples)
    assert samples[-1].t_ns >= 3600 * 1000 * 10**9  # the frame after the gap is sampled at its time
    gaps = stream.extra["timing_gaps"]
    assert gaps["count"] == 1 and gaps["longest_s"] == pytest.approx(1000 * 3600 - 1, abs=0.01)
    assert gaps["first_at_s"] == pytest.approx(1.0)
    assert any("1 gap(s) in the frame times" in r.getMessage() and str(p) in r.getMessage()
               for r in caplog.records)
    print(f"timing gap [{kind}]: {p.stat().st_size} B, {len(samples)} samples, extra {gaps}")


# --------------------------------------------------------------------------- item 8: MJPEG switch


def test_mjpeg_switching_size_mid_stream_hits_the_cap(tmp_path: Path) -> None:
    from overlap_desktop.core.ingest.readers.video import VideoReader

    p = H.mjpeg_size_switch(tmp_path / "switch.mkv")
    reader = VideoReader()
    (stream,) = reader.streams(p)
    assert (stream.width, stream.height) == (64, 48)  # the first frame is small
    with pytest.raises(MediaError, match=r"absurd frame size 16400x16 at 1\.000 s: the picture size changed "
                                         r"mid-stream \(limit 16384 px per side"):
        for f in reader.frames(p, stream):
            f.to_rgb(8, 8)


def test_mjpeg_switch_over_the_pixel_cap_is_refused_before_decoding(tmp_path: Path) -> None:
    """The pixel cap (not only the side cap) applies to every frame, from the JPEG header."""
    from overlap_desktop.core.ingest.readers.video import VideoReader

    p = H.mjpeg_size_switch(tmp_path / "switch.mkv", big=(640, 480))
    reader = VideoReader(ReaderLimits(max_pixels=100_000))
    (stream,) = reader.streams(p)
    with pytest.raises(MediaError, match=r"absurd frame size 640x480 at 1\.000 s.*100000 pixels"):
        for f in reader.frames(p, stream):
            f.to_rgb(8, 8)


# --------------------------------------------------------------------------- item 5: FIFOs, devices

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                reason="needs FIFOs and /dev/zero (POSIX)")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("OVERLAP_INDEX", None)
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "overlap_desktop", *args]


#: Runs the CLI like ``python -m overlap_desktop`` and prints the process's peak RSS on exit:
#: VmHWM (this program's own high-water mark) where Linux gives it, else ru_maxrss (which
#: also counts the forking parent's size, an upper bound).
_MEASURED = ("import atexit, resource, runpy, sys\n"
             "def _peak():\n"
             "    try:\n"
             "        for line in open('/proc/self/status'):\n"
             "            if line.startswith('VmHWM:'):\n"
             "                return int(line.split()[1])\n"
             "    except OSError:\n"
             "        pass\n"
             "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "atexit.register(lambda: sys.stderr.write(f'peak_rss_kib={_peak()}\\n'))\n"
             "sys.argv = ['overlap'] + sys.argv[1:]\n"
             "runpy.run_module('overlap_desktop', run_name='__main__')\n")


def _peak_rss_mib(stderr: str) -> float | None:
    m = re.search(r"peak_rss_kib=(\d+)", stderr)
    return int(m.group(1)) / 1024 if m else None


def _limit_memory() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (2 * GiB, 2 * GiB))


def _index(path: Path, idx: Path, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``overlap index`` in a subprocess under 2 GiB of address space; the timeout turns a
    hang into a failure."""
    try:
        return subprocess.run([sys.executable, "-c", _MEASURED, "index", str(path), "--index", str(idx), "-q"],
                              env=_env(), text=True, check=False,
                              capture_output=True, timeout=timeout, preexec_fn=_limit_memory, cwd=str(path.parent))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"overlap index {path.name} did not finish within {timeout:.0f} s (hung?); "
                    f"stderr so far: {exc.stderr!r}")


def _image_sequence_with_traps(folder: Path) -> Path:
    from tests.fixtures_recordings import footage, write_image_sequence

    write_image_sequence(folder, footage(seconds=1.0), fps=10.0)
    os.symlink("/dev/zero", folder / "frame_11.png")  # a "still" that never ends
    os.mkfifo(folder / "frame_12.png")  # a still that blocks forever
    os.mkfifo(folder / "notes.txt")  # a sidecar FIFO
    return folder


@needs_fifo
def test_image_sequence_with_a_fifo_and_dev_zero_is_indexed_without_them(tmp_path: Path) -> None:
    folder = _image_sequence_with_traps(tmp_path / "seq")
    proc = _index(folder, tmp_path / "idx")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Indexed 1 file(s)" in out, out
    assert re.search(r"left out 3 entries that are not a regular file .*frame_11\.png, frame_12\.png, notes\.txt",
                     out), out
    assert "Traceback" not in out


@needs_fifo
def test_lerobot_dataset_with_fifo_and_dev_zero_is_indexed_without_them(tmp_path: Path) -> None:
    from tests.fixtures_recordings import write_lerobot

    root = write_lerobot(tmp_path / "ds", episodes=((0, 1.0),), cameras=("observation.images.top",))
    (root / "meta" / "episodes.jsonl").unlink()
    os.mkfifo(root / "meta" / "episodes.jsonl")  # the episode table is a FIFO
    os.symlink("/dev/zero", root / "videos" / "observation.images.top" / "chunk-000" / "file-001.mp4")
    proc = _index(root, tmp_path / "idx")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Indexed 1 file(s)" in out, out
    assert "Traceback" not in out


@needs_fifo
def test_lerobot_info_json_fifo_is_not_claimed_and_does_not_block(tmp_path: Path) -> None:
    from tests.fixtures_recordings import write_lerobot

    root = write_lerobot(tmp_path / "ds", episodes=((0, 1.0),), cameras=("observation.images.top",))
    (root / "meta" / "info.json").unlink()
    os.mkfifo(root / "meta" / "info.json")
    proc = _index(root, tmp_path / "idx")
    out = proc.stdout + proc.stderr
    # Not a dataset any more: the walk indexes the mp4 inside it as an ordinary video.
    assert proc.returncode == 0, out
    assert "Traceback" not in out


@needs_fifo
def test_rosbag2_with_a_fifo_database_is_refused_not_blocked(tmp_path: Path) -> None:
    pytest.importorskip("rosbags")
    from tests.fixtures_recordings import footage, write_rosbag2

    folder = write_rosbag2(tmp_path / "bag2", footage(seconds=0.3), with_jpeg=False)
    (db,) = folder.glob("*.db3")
    db.unlink()
    os.mkfifo(db)
    proc = _index(folder, tmp_path / "idx")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert re.search(rf"{re.escape(db.name)}: a FIFO \(named pipe\) is not a regular file; only regular files are "
                     "read", out), out


def _wait_for_files_in_index(index: Path, proc: subprocess.Popen[str], guard_s: float = 300.0) -> None:
    """Return once the `overlap index` run ``proc`` has rows in its index's files table, or has ended."""
    import apsw

    deadline = time.monotonic() + guard_s  # a hang guard only
    while proc.poll() is None:
        db = index / "index.sqlite3"
        if db.is_file():
            try:
                conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
                try:
                    if next(iter(conn.execute("SELECT COUNT(*) FROM files")))[0]:
                        return
                finally:
                    conn.close()
            except apsw.Error:
                pass  # the schema is being created
        assert time.monotonic() < deadline, "overlap index registered no file (hung?)"
        time.sleep(0.01)


@needs_fifo
def test_ctrl_c_stops_overlap_index_on_a_folder_with_a_fifo(tmp_path: Path) -> None:
    """SIGINT during a run over clips plus a claimed folder holding a FIFO: the process ends
    (exit 130, or 0 if it finished first) instead of hanging in pool.shutdown(wait=True)."""
    from tests.footage import make_clip

    root = tmp_path / "media"
    _image_sequence_with_traps(root / "seq")
    for i in range(2):
        make_clip(root / f"clip_{i}.mp4", seed=40 + i, duration=4.0, fps=24.0, size=(160, 120))
    proc = subprocess.Popen(_cli("index", str(root), "--index", str(tmp_path / "idx"), "-q"), env=_env(),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limit_memory)
    try:
        # Ctrl-C once the run has registered its items in the index (its signal handling is in
        # place and the workers are busy), never after a fixed sleep that a loaded machine can
        # spend still starting the interpreter. A run that ends first is fine (exit 0).
        _wait_for_files_in_index(tmp_path / "idx", proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)  # a hang guard, far beyond a real stop
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"overlap index ignored Ctrl-C for 120 s; stderr: {err[-2000:]}")
    assert proc.returncode in (130, 0), (proc.returncode, err[-2000:])
    assert "Traceback" not in err


# --------------------------------------------------------------------------- every input, CLI, 2 GiB


def _cli_inputs(tmp: Path) -> Iterator[tuple[str, Path, int, str]]:
    """(name, path, expected exit status, pattern in the output), default reader caps."""
    z64 = H.zstd_zeros(64 * MiB, declare_size=True)
    yield ("mcap zstd frame claiming 4 GiB",
           H.write_mcap(tmp / "a.mcap", [H.Chunk("zstd", H.zstd_declaring(z64, 4 * GiB - 1), 1024)]),
           4, r"a\.mcap: corrupt or truncated MCAP .*corrupt (zstd-)?compressed data in the chunk at byte \d+")
    hidden = H.zstd_zeros(64 * MiB, declare_size=False) * 64  # 64 frames: 4 GiB of zeros
    yield ("mcap zstd hiding its size, 4 GiB, chunk says 300 MiB",
           H.write_mcap(tmp / "b.mcap", [H.Chunk("zstd", hidden, 300 * MiB)], summary=False),
           4, r"b\.mcap: corrupt or truncated MCAP .*corrupt compressed data in a chunk: "
              r"it expands past the 314572800 bytes it declares")
    yield ("mcap lz4 claiming 3 GiB", H.mcap_lz4_bomb(tmp / "c.mcap", 3 * GiB),
           4, r"c\.mcap: corrupt or truncated MCAP .*corrupt lz4-compressed data in the chunk")
    yield ("mcap 9 chunks of 64 MiB", H.mcap_chunk_flood(tmp / "d.mcap", 9, 64 * MiB),
           4, r"d\.mcap: its compressed data expands past 512 MiB in total")
    yield ("mcap 1.1 million empty records", H.mcap_record_flood(tmp / "e.mcap", RECORD_FLOOR + 100_000),
           4, r"e\.mcap: its compressed data holds over 1000000 records")
    yield ("ROS 1 bag bz2 4 GiB", H.rosbag1_bomb(tmp / "f.bag", "bz2", lambda: H.bz2_zeros(4 * GiB)),
           4, r"f\.bag: the chunk at byte \d+ expands past the limit of 320 MiB per chunk")
    yield ("ROS 1 bag lz4 claiming 3 GiB",
           H.rosbag1_bomb(tmp / "g.bag", "lz4", lambda: H.lz4_declaring(bytes(1000), 3 * GiB)),
           4, r"g\.bag: corrupt recording.*corrupt lz4-compressed data in the chunk")
    yield ("rosbag2 mcap storage bomb",
           H.rosbag2_mcap_bomb(tmp / "h_bag2", lambda p: H.write_mcap(
               p, [H.Chunk("zstd", hidden, 1024)], profile="ros2")),
           4, r"h_bag2: cannot open the recording: corrupt (zstd-)?compressed data in the chunk")
    yield ("rosbag2 compression_mode file, 4 GiB",
           H.rosbag2_file_mode_bomb(tmp / "m_bag2", hidden), 4, r"m_bag2: .*expands past 512 MiB in total")
    yield ("rosbag2 compression_mode message, frames claiming 4 GiB",
           H.rosbag2_message_mode_bomb(tmp / "n_bag2", H.zstd_declaring(z64, 4 * GiB - 1)), 4,
           r"n_bag2: .*compressed message declares 4294967295 bytes, over the limit")
    yield ("video frames at 0 s, 1 s, 1000 h", H.video_time_gap(tmp / "i.mkv"), 0, r"Indexed 1 file")
    yield ("mcap messages at 0 s, 1 s, 1000 h", H.mcap_time_gap(tmp / "j.mcap"), 0, r"Indexed 1 file")
    yield ("MJPEG 64x48 switching to 16400x16", H.mjpeg_size_switch(tmp / "k.mkv"),
           4, r"k\.mkv: absurd frame size 16400x16 at 1\.000 s")
    if hasattr(os, "mkfifo"):
        yield ("image sequence with FIFO and /dev/zero", _image_sequence_with_traps(tmp / "l_seq"), 0,
               r"left out 3 entries")


def test_every_hostile_recording_through_the_cli_under_2_gib(tmp_path: Path) -> None:
    """Each input (< 1 MB) through ``overlap index`` with RLIMIT_AS = 2 GiB and a 60 s guard:
    the expected exit status and reason, no traceback, no internal error."""
    pytest.importorskip("rosbags")
    rows = []
    for name, path, status, pattern in _cli_inputs(tmp_path / "in"):
        size = path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.iterdir()
                                                              if f.is_file())
        assert size < 1_000_000, (name, size)
        t = time.monotonic()
        proc = _index(path, tmp_path / f"idx_{path.stem}")
        took = time.monotonic() - t
        out = proc.stdout + proc.stderr
        assert "Traceback" not in out and "internal error" not in out, (name, out[-3000:])
        assert proc.returncode == status, (name, proc.returncode, out[-3000:])
        assert re.search(pattern, out), (name, out[-3000:])
        peak = _peak_rss_mib(proc.stderr)
        assert peak is not None and peak < 2048, (name, peak)
        rows.append(f"  {name}: {size} B, exit {proc.returncode}, {took:.1f} s, peak RSS {peak:.0f} MiB")
    print("hostile recordings through the CLI (RLIMIT_AS 2 GiB):\n" + "\n".join(rows))
