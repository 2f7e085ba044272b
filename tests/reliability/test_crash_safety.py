"""Crash safety: an indexing process killed with SIGKILL resumes to the same index.

An `overlap index` subprocess is killed with SIGKILL at points in the work read from its own
database (while a file is being fingerprinted, right after the k-th commit, once every file is
committed: shard sealing), never at a time measured on one run, and restarted until it
completes. After every kill SQLite's integrity check must pass, and the finished index
must export to the same Merkle root as an uninterrupted run (same files, same
fingerprints). An export killed mid-write must leave either the old manifest intact or
the new one complete, never a torn file.

Figures (kills, resumes, time) are printed; docs/reliability.md records them.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from overlap_desktop import api

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL semantics are POSIX")

KILLS = int(os.environ.get("OVERLAP_CRASH_KILLS", "20"))
#: Clips in the crash corpus.
N_FILES = 8
#: Seconds after which a subprocess that has not finished counts as hung (a guard, not a measure).
HANG_GUARD_S = 600.0
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "overlap_desktop", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _integrity_ok(index_dir: Path) -> None:
    """SQLite's integrity check on an index opened the way the product opens one after a crash:
    through :func:`overlap_desktop.api.open_index`, read-write, so SQLite first recovers the
    write-ahead log the killed process left (a read-only open cannot, and fails with "attempt to
    write a readonly database"); the check then runs on that same connection."""
    with api.open_index(index_dir, create=False) as idx:
        assert not idx.readonly, f"{index_dir} opened read-only: the crash recovery path was not taken"
        rows = list(idx._db.execute("PRAGMA integrity_check"))  # the product's own connection
    assert rows == [("ok",)], rows


def _root(index_dir: Path, out: Path) -> str:
    with api.open_index(index_dir, create=False) as idx:
        summary = api.export_manifest(idx, out, label="crash test")
    return str(summary.root)


def _progress(index_dir: Path) -> tuple[int, int]:
    """(files committed, files being worked on) as the writer has committed them so far.

    Read from the index database with a short-lived read-only connection (WAL lets it read
    while the writer writes); (0, 0) while the database does not exist or is being created.
    """
    db = index_dir / "index.sqlite3"
    if not db.is_file():
        return 0, 0
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0, 0
    try:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM files GROUP BY status"))
    except apsw.Error:  # schema not there yet, or busy for a moment
        return 0, 0
    finally:
        conn.close()
    return int(counts.get("ok", 0)), int(counts.get("running", 0))


@pytest.fixture(scope="module")
def crash_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight clips, so kill points land inside files, between commits and in shard sealing."""
    from tests.footage import make_clip

    root = tmp_path_factory.mktemp("crash-corpus")
    for i in range(N_FILES):
        make_clip(root / f"clip_{i}.mp4", seed=200 + i, duration=10.0, fps=24.0, size=(320, 240),
                  canvas_hw=(720, 2400))
    return root


@pytest.fixture(scope="module")
def reference(crash_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Merkle root of an uninterrupted run."""
    idx = tmp_path_factory.mktemp("crash-reference") / "index"
    proc = subprocess.run(_cli("index", str(crash_corpus), "--index", str(idx), "-q"), env=_env(),
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr
    return _root(idx, idx.parent / "ref.ovlm")


def _run_and_kill_at(corpus: Path, idx: Path, target: float) -> tuple[bool, float]:
    """Start `overlap index` and SIGKILL it once its committed progress reaches ``target``.

    Progress is ``files committed + 0.5 while a further file is being worked on``, read from
    the database, so the kill point is a point in the work (mid-file, right after a commit,
    or once every file is committed: during shard sealing), however fast the machine is.

    Returns:
        (killed, progress seen at the kill or at the end).
    """
    proc = subprocess.Popen(_cli("index", str(corpus), "--index", str(idx), "-q"), env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = 0.0
    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a hang guard only; never a pass condition
        while proc.poll() is None:
            ok, running = _progress(idx)
            seen = ok + (0.5 if running else 0.0)
            if seen >= target:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
                return True, seen
            assert time.monotonic() < deadline, f"overlap index made no progress past {seen} (hung?)"
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    assert proc.returncode == 0, f"overlap index failed with exit {proc.returncode} before its kill"
    return False, seen


def test_sigkill_during_indexing_resumes_to_identical_index(crash_corpus: Path, tmp_path: Path,
                                                            reference: str) -> None:
    rng = random.Random(1234)
    idx = tmp_path / "index"
    kills = attempts = completed = 0
    kill_points: list[float] = []
    # Each run is killed at a point in the work chosen from what is left: while the next file
    # is being fingerprinted (x.5), right after the k-th commit (k), or once all files are
    # committed (sealing and the end of the run). A run that finishes before the kill lands
    # (possible only for the last point, or when a killed run had committed every file) must
    # already equal the reference; the index is then wiped so later runs have work to interrupt.
    # The writer commits finished files in batches, so the points seen cluster where commits land.
    while kills < KILLS:
        attempts += 1
        assert attempts <= 3 * KILLS, f"only {kills} of {attempts} runs could be killed"
        done, _ = _progress(idx)
        points = [k / 2 for k in range(2 * done + 1, 2 * N_FILES + 1)]
        # Every file committed by a killed run: this run only seals and ends; let it finish
        # (target past the end) so the resume from a kill during sealing is checked too.
        target = rng.choice(points) if points else float("inf")
        killed, seen = _run_and_kill_at(crash_corpus, idx, target)
        if killed:
            kills += 1
            kill_points.append(seen)
            _integrity_ok(idx)
        else:
            completed += 1
            _integrity_ok(idx)
            assert _root(idx, tmp_path / f"complete-{completed}.ovlm") == reference
            shutil.rmtree(idx)
    # Resume after the last kill and finish the job.
    proc = subprocess.run(_cli("index", str(crash_corpus), "--index", str(idx), "-q"), env=_env(),
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr
    _integrity_ok(idx)
    root = _root(idx, tmp_path / "after.ovlm")
    print(f"\ncrash safety: {kills} SIGKILLs in {attempts} runs ({completed} finished before their kill "
          f"and matched the reference); kill points (files committed, .5 = mid-file): "
          f"{sorted(kill_points)}; roots equal: {root == reference}")
    assert root == reference


_EXPORT_LOOP = """
import sys
from overlap_desktop import api
idx, out = sys.argv[1], sys.argv[2]
with api.open_index(idx, create=False) as index:
    while True:
        api.export_manifest(index, out, label=sys.argv[3])
        print("exported", flush=True)
"""


def test_sigkill_during_export_never_tears_the_file(small_corpus: Path, tmp_path: Path) -> None:
    idx = tmp_path / "index"
    assert subprocess.run(_cli("index", str(small_corpus), "--index", str(idx), "-q"), env=_env(),
                          capture_output=True, timeout=300).returncode == 0
    out = tmp_path / "offer.ovlm"
    with api.open_index(idx, create=False) as index:
        api.export_manifest(index, out, label="old")
    old_root = api.read_manifest(out).root
    rng = random.Random(99)
    outcomes = {"old": 0, "new": 0}
    for _ in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", _EXPORT_LOOP, str(idx), str(out), "new"], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        # Once the first export is done the loop is always in the middle of another one, so the
        # kill lands in an export whenever it comes; the random pause only varies where.
        assert proc.stdout is not None and proc.stdout.readline() == "exported\n"
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        m = api.read_manifest(out)  # must parse: old intact or new complete
        outcomes["old" if m.label == "old" else "new"] += 1
        assert m.label in ("old", "new")
        if m.label == "old":
            assert m.root == old_root
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("index", "offer.ovlm")]
    print(f"\nexport kills: {KILLS}, outcomes {outcomes}, leftover temp files: {leftovers}")
