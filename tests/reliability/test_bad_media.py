"""Bad media: every kind of broken input is reported with a specific reason, the job goes on.

One folder holds two good clips next to 17 kinds of bad input (zero bytes, truncated,
corrupt, wrong content, audio only, unknown codec, 0x0 and absurd frame sizes, files that
change or disappear while being indexed, permission denied, symlink loops, a non-UTF-8
name, broken recordings...). A single ``index_paths`` run over the folder must index the
good clips, and name every bad one with a reason that says what is wrong. A disk that fills
up while indexing is tested on a small tmpfs (Linux, root).

How the awkward cases are produced (documented in docs/reliability.md):
- *permission denied*: the tests run as root, for whom ``chmod 000`` changes nothing, so
  ``av.open`` and the indexer's ``open`` are patched in-process to raise ``PermissionError``
  (errno 13) for that one path; exactly what the OS would raise for another user.
- *changes / disappears during indexing*: the progress callback, on the first report for
  the victim, truncates it (mid-decode), deletes it (while its descriptor is open), or
  deletes a later file before its turn.

``python -m pytest tests/reliability/test_bad_media.py -s`` prints the table kind -> reason.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np
import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index import indexer as indexer_mod
from overlap_desktop.core.index.indexer import IndexSummary, index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import Progress
from overlap_desktop.errors import DiskFullError
from tests.fixtures_recordings import footage, frame_times, ros2_image_msg, write_mcap_generic, write_mcap_ros2

ROOT = Path(__file__).resolve().parents[2]
NON_UTF8 = b"\xff\xfe-clip.mp4"


@dataclass(frozen=True)
class Kind:
    """One kind of bad input: the item's name, where its reason shows up and what it must say."""

    kind: str
    name: str
    where: str  # "failed" (summary.failed), "warning" (summary.warnings) or "log" (a logged warning)
    reason: str  # regex the reason must match (specific: names the problem)


KINDS = [
    Kind("zero bytes", "zero.mp4", "failed", r"empty file \(0 bytes\)"),
    Kind("truncated mp4 (moov missing)", "truncated.mp4", "failed", r"truncated or unfinished MP4.*no moov atom"),
    Kind("corrupt mid-stream", "corrupt_mid.mp4", "warning",
         r"stream v:0: \d+ undecodable packet\(s\) skipped \(damaged file"),
    Kind("random bytes, video extension", "random.mkv", "failed", r"not a video file FFmpeg can read"),
    Kind("audio only", "audio_only.mkv", "failed", r"no video stream \(it has audio\)"),
    Kind("unsupported codec (fourcc patched)", "unknown_codec.mp4", "failed",
         r"unsupported video codec .*no decoder"),
    Kind("0x0 frame size (MCAP Image)", "zero_size.mcap", "failed", r"empty image \(0x0\)"),
    Kind("absurd frame size 100000x100000 (MCAP Image)", "huge_size.mcap", "failed",
         r"100000\s*x\s*100000|100000x100000"),
    Kind("truncated while being indexed", "changing.mp4", "failed", r"changed while (it was )?being indexed"),
    Kind("deleted while being indexed", "vanishing.mp4", "failed",
         r"disappeared while being indexed"),
    Kind("deleted before its turn", "zz_gone.mp4", "failed", r"file not found"),
    Kind("permission denied", "locked.mp4", "failed", r"Permission denied"),
    Kind("symlink loop", "loop_a", "log", r"Too many levels of symbolic links"),
    Kind("non-UTF-8 file name", os.fsdecode(NON_UTF8), "failed", r"file name is not valid UTF-8"),
    Kind("MCAP without image topics", "no_images.mcap", "failed", r"no image topic"),
    Kind("corrupt MCAP chunk", "corrupt_chunk.mcap", "failed", r"corrupt or truncated MCAP"),
    Kind("ROS1 bag with a bad message", "bad_message.bag", "log",
         r"skipped 1 undecodable message.*first problem: .*\S"),
]


# --------------------------------------------------------------------------- making bad files


def _box(data: bytes, fourcc: bytes, start: int = 0) -> int:
    pos = data.find(fourcc, start)
    assert pos > 4, f"{fourcc!r} not found"
    return pos


def _garbage(n: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def _audio_only(path: Path) -> None:
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 8000), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for p in [*s.encode(frame), *s.encode()]:
            c.mux(p)


def _mcap_declared_size(path: Path, width: int, height: int) -> None:
    frames = footage(seconds=1.0)
    msgs = []
    for t, img in zip(frame_times(len(frames)), frames):
        m = ros2_image_msg(img, "rgb8", t)
        m.update(width=width, height=height, step=width * 3)
        msgs.append((t, m))
    write_mcap_ros2(path, {"/camera/image_raw": msgs})


def _mcap_no_images(path: Path) -> None:
    # A std_msgs/String topic only (CDR: 4-byte header, uint32 length, text + NUL).
    text = b"hello\x00"
    payload = b"\x00\x01\x00\x00" + struct.pack("<I", len(text)) + text
    write_mcap_generic(path, schema_name="std_msgs/msg/String", schema_encoding="ros2msg",
                       schema_data=b"string data", message_encoding="cdr",
                       messages=[(t, payload) for t in frame_times(5)], topic="/chatter")


def _mcap_corrupt_chunk(path: Path) -> None:
    from tests.fixtures_recordings import mcap_raw_footage

    mcap_raw_footage(path, frames=footage(seconds=4.0))
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 4096] = _garbage(4096, 7)
    path.write_bytes(bytes(data))


def _bag_bad_message(path: Path) -> None:
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    from tests.fixtures_recordings import _rosbags_image

    ts = get_typestore(Stores.ROS1_NOETIC)
    frames = footage(seconds=3.0)
    with Writer(path) as writer:
        conn = writer.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=ts)
        for i, (t, img) in enumerate(zip(frame_times(len(frames)), frames)):
            msg = _rosbags_image(ts, img, "rgb8", t)
            if i == len(frames) // 2:
                # Declares 160x120 rgb8 but carries 10 bytes of pixels.
                msg.data = np.zeros(10, np.uint8)
            writer.write(conn, t, ts.serialize_ros1(msg, "sensor_msgs/msg/Image"))


@pytest.fixture(scope="module")
def bad_folder(small_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-media")
    good = small_corpus / "clip_0.mp4"
    data = good.read_bytes()
    shutil.copy(good, root / "good_a.mp4")
    shutil.copy(small_corpus / "clip_1.mp4", root / "good_b.mp4")
    (root / "zero.mp4").write_bytes(b"")
    moov = _box(data, b"moov")
    mdat = _box(data, b"mdat")
    assert moov > mdat, "the fixture's mp4 must have its moov atom at the end"
    (root / "truncated.mp4").write_bytes(data[:moov - 4])
    mid = bytearray(data)
    a = mdat + (moov - mdat) // 3
    mid[a:a + (moov - mdat) // 4] = _garbage((moov - mdat) // 4, 1)
    (root / "corrupt_mid.mp4").write_bytes(bytes(mid))
    (root / "random.mkv").write_bytes(_garbage(50_000, 2))
    _audio_only(root / "audio_only.mkv")
    avc1 = _box(data, b"avc1", _box(data, b"stsd"))  # the sample entry, not the ftyp brand
    (root / "unknown_codec.mp4").write_bytes(data[:avc1] + b"zq9x" + data[avc1 + 4:])
    _mcap_declared_size(root / "zero_size.mcap", 0, 0)
    _mcap_declared_size(root / "huge_size.mcap", 100_000, 100_000)
    for name in ("changing.mp4", "vanishing.mp4", "zz_gone.mp4", "locked.mp4"):
        shutil.copy(small_corpus / "clip_2.mp4", root / name)
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "self_dir")  # a folder loop: followed once, not forever
    shutil.copy(small_corpus / "clip_3.mp4", os.path.join(os.fsencode(root), NON_UTF8))
    _mcap_no_images(root / "no_images.mcap")
    _mcap_corrupt_chunk(root / "corrupt_chunk.mcap")
    _bag_bad_message(root / "bad_message.bag")
    return root


# --------------------------------------------------------------------------- the run


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Run:
    summary: IndexSummary
    index: Path
    log: list[str]
    folder: Path


@pytest.fixture(scope="module")
def bad_run(bad_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    import av

    folder = bad_folder
    locked = str(folder / "locked.mp4")
    done: set[str] = set()

    def progress(p: Progress) -> None:
        cur = p.current
        if cur is None or cur in done or p.current_done is None or p.current_done >= 1.0:
            return
        name = os.path.basename(cur)
        if name == "changing.mp4":
            done.add(cur)
            os.truncate(cur, os.path.getsize(cur) * 2 // 5)
            os.remove(folder / "zz_gone.mp4")
        elif name == "vanishing.mp4":
            done.add(cur)
            os.remove(cur)

    real_av_open = av.open

    def av_open(file: object, *a: object, **kw: object) -> object:
        if str(file) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return real_av_open(file, *a, **kw)

    def fake_open(file: object, *a: object, **kw: object) -> object:
        if os.fspath(file) == locked:  # type: ignore[call-overload]
            raise PermissionError(13, "Permission denied", locked)
        return open(file, *a, **kw)  # type: ignore[call-overload]

    handler = _Records()
    logger = logging.getLogger("overlap_desktop")
    logger.addHandler(handler)
    index = tmp_path_factory.mktemp("bad-media-index") / "index"
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(av, "open", av_open)
            mp.setattr(indexer_mod, "open", fake_open, raising=False)
            summary = index_paths([folder], index=index, config=load_config(environ={}), progress=progress)
    finally:
        logger.removeHandler(handler)
    yield Run(summary, index, handler.lines, folder)


def _reason(run: Run, kind: Kind) -> str | None:
    full = os.path.join(str(run.folder), kind.name)
    if kind.where == "failed":
        return next((r for p, r in run.summary.failed if p == full), None)
    lines = run.summary.warnings if kind.where == "warning" else run.log
    return next((line for line in lines if full in line or kind.name in line), None)


@pytest.mark.parametrize("kind", KINDS, ids=[k.kind for k in KINDS])
def test_bad_input_is_reported_with_a_specific_reason(bad_run: Run, kind: Kind) -> None:
    reason = _reason(bad_run, kind)
    print(f"\nbad media: {kind.kind:45s} -> [{kind.where}] {reason}")
    assert reason is not None, (f"{kind.name} not reported in {kind.where}: failed={bad_run.summary.failed} "
                                f"warnings={bad_run.summary.warnings} log={bad_run.log}")
    assert re.search(kind.reason, reason), reason


def test_the_job_completes_and_indexes_the_good_files(bad_run: Run) -> None:
    s = bad_run.summary
    failed = {os.path.basename(p) for p, _ in s.failed}
    with open_index(bad_run.index, readonly=True) as idx:
        files = {os.path.basename(f.path): f for f in idx.files()}
        ok = {n for n, f in files.items() if f.status == "ok"}
        # Good clips (and the damaged-but-usable ones) are indexed with decodable fingerprints.
        assert {"good_a.mp4", "good_b.mp4", "corrupt_mid.mp4", "bad_message.bag"} <= ok, files
        for f, _key, fp in idx.streams():
            assert len(fp) > 0 and fp.codes.shape[1:] == (len(fp.variants), 32), f.path
        # Refused files are remembered with their reason (shown by `overlap files`), except
        # the non-UTF-8 name SQLite cannot hold and the file that was gone before its turn.
        for p, reason in s.failed:
            name = os.path.basename(p)
            if name in (os.fsdecode(NON_UTF8),):
                continue
            assert name in files and files[name].status == "error" and files[name].error == reason, name
    assert not failed & ok
    assert s.files_seen >= len(KINDS) - 2
    print(f"\nbad media run: {s.files_seen} items, {s.indexed} indexed, {len(s.failed)} refused, "
          f"{len(s.warnings)} warning(s), {s.elapsed_s:.1f} s")


def test_cli_reports_bad_files_and_exits_4(bad_folder: Path, tmp_path: Path) -> None:
    """The real CLI (a subprocess, real stdout encoding) prints every reason, including the
    non-UTF-8 name, without a traceback; exit status 4 = some input refused."""
    folder = tmp_path / "f"
    folder.mkdir()
    for name in ("good_a.mp4", "zero.mp4", "random.mkv"):
        shutil.copy(bad_folder / name, folder / name)
    shutil.copy(os.path.join(os.fsencode(bad_folder), NON_UTF8), os.path.join(os.fsencode(folder), NON_UTF8))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "overlap_desktop", "index", str(folder), "--index",
                           str(tmp_path / "ix")], capture_output=True, env=env, timeout=120)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    print(f"\nbad media CLI: exit {proc.returncode}")
    assert proc.returncode == 4, out
    assert "Traceback" not in out and "internal error" not in out, out
    for text in ("empty file (0 bytes)", "not a video file FFmpeg can read", "not valid UTF-8"):
        assert text in out, out


# --------------------------------------------------------------------------- disk full


def _integrity(index: Path) -> list[tuple[str, ...]]:
    conn = apsw.Connection(str(index / "index.sqlite3"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    if sys.platform != "linux" or shutil.which("mount") is None:
        pytest.skip("needs Linux mount (tmpfs) to make a small disk")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root / CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_during_indexing(small_corpus: Path, small_tmpfs: Path) -> None:
    """A 200 KiB disk fills while indexing 5 clips: a clear message (exit 2 from the CLI),
    the database passes its integrity check, finished files are intact, and a rerun after
    space is freed completes."""
    index = small_tmpfs / "index"
    with pytest.raises(DiskFullError, match="disk full while writing the index") as info:
        index_paths([small_corpus], index=index, config=load_config(environ={}))
    assert info.value.exit_code == 2
    partial = info.value.summary  # type: ignore[attr-defined]
    assert _integrity(index) == [("ok",)]
    with open_index(index, readonly=True) as idx:
        kept = [f for f in idx.files() if f.status == "ok"]
        for f, _key, fp in idx.streams():
            assert len(fp) > 0, f.path
    # The CLI says the same in one line, no traceback.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "overlap_desktop", "index", str(small_corpus), "--index",
                           str(index), "-q"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "disk full" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # Free space (grow the disk) and run again: everything completes.
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_tmpfs)], check=True, capture_output=True)
    summary = index_paths([small_corpus], index=index, config=load_config(environ={}))
    assert _integrity(index) == [("ok",)]
    with open_index(index, readonly=True) as idx:
        assert sorted(f.status for f in idx.files()) == ["ok"] * 5
    print(f"\ndisk full: {len(kept)} file(s) kept when the disk filled (summary said {partial.indexed}); "
          f"message: {str(info.value)!r}; CLI exit {proc.returncode}; rerun indexed {summary.indexed}, "
          f"skipped {summary.skipped}")
    assert summary.indexed + summary.skipped == 5
