"""Crash safety: an indexing process killed with SIGKILL resumes to the same index.

An `overlap index` subprocess is killed at random moments (spread over the whole run:
mid-file, between files, during commits and shard sealing) and restarted until it
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
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "overlap_desktop", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _integrity_ok(index_dir: Path) -> None:
    """SQLite's integrity check, opened the way the product opens an index after a crash:
    read-write, so the write-ahead log of the killed process is recovered first (a read-only
    open cannot recover it and fails with "attempt to write a readonly database")."""
    dbs = list(index_dir.glob("*.sqlite3")) + list(index_dir.glob("*.db"))
    assert dbs, f"no database in {index_dir}"
    conn = apsw.Connection(str(dbs[0]), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        rows = list(conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()
    assert rows == [("ok",)], rows


def _root(index_dir: Path, out: Path) -> str:
    with api.open_index(index_dir, create=False) as idx:
        summary = api.export_manifest(idx, out, label="crash test")
    return str(summary.root)


@pytest.fixture(scope="module")
def crash_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight clips: enough work (a few seconds) that kill points land inside files,
    commits and shard sealing, not only in interpreter start-up."""
    from tests.footage import make_clip

    root = tmp_path_factory.mktemp("crash-corpus")
    for i in range(8):
        make_clip(root / f"clip_{i}.mp4", seed=200 + i, duration=10.0, fps=24.0, size=(320, 240),
                  canvas_hw=(720, 2400))
    return root


@pytest.fixture(scope="module")
def startup_s() -> float:
    """Seconds the CLI needs to start and exit doing nothing: kills before that prove little."""
    t0 = time.monotonic()
    subprocess.run(_cli("--version"), env=_env(), capture_output=True, timeout=60, check=True)
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def reference(crash_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, float]:
    idx = tmp_path_factory.mktemp("crash-reference") / "index"
    t0 = time.monotonic()
    proc = subprocess.run(_cli("index", str(crash_corpus), "--index", str(idx), "-q"), env=_env(),
                          capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    return _root(idx, idx.parent / "ref.ovlm"), elapsed


def test_sigkill_during_indexing_resumes_to_identical_index(crash_corpus: Path, tmp_path: Path,
                                                            reference: tuple[str, float],
                                                            startup_s: float) -> None:
    ref_root, ref_elapsed = reference
    rng = random.Random(1234)
    idx = tmp_path / "index"
    kills = attempts = completed = 0
    t0 = time.monotonic()
    # The kill window adapts to this machine: it starts at the reference run's length and
    # shrinks whenever a run finishes before its kill lands (a faster or less loaded run than
    # the reference), so kills keep landing inside the work however fast the machine is.
    hi = max(0.3, ref_elapsed)
    # Keep going until KILLS runs were really killed. A run that finishes before its kill
    # lands must already equal the reference; the index is then wiped so the next runs have
    # work left to interrupt (otherwise later runs only re-check unchanged files).
    while kills < KILLS:
        attempts += 1
        assert attempts <= 10 * KILLS, f"only {kills} of {attempts} runs could be killed (a hang guard)"
        proc = subprocess.Popen(_cli("index", str(crash_corpus), "--index", str(idx), "-q"), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Spread the kill points over the working part of a run (files, commits, sealing).
        time.sleep(rng.uniform(min(startup_s, hi * 0.5), hi))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        else:
            hi = max(0.1, hi * 0.7)
        rc = proc.wait(timeout=60)
        if idx.exists() and any(idx.glob("*.sqlite3")):
            _integrity_ok(idx)
        if rc == 0:
            completed += 1
            assert _root(idx, tmp_path / f"complete-{completed}.ovlm") == ref_root
            shutil.rmtree(idx)
    # Resume after the last kill and finish the job.
    proc = subprocess.run(_cli("index", str(crash_corpus), "--index", str(idx), "-q"), env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _integrity_ok(idx)
    root = _root(idx, tmp_path / "after.ovlm")
    print(f"\ncrash safety: {kills} SIGKILLs in {attempts} runs ({completed} finished before their kill "
          f"and matched the reference), {time.monotonic() - t0:.1f} s; reference run {ref_elapsed:.1f} s; "
          f"start-up {startup_s:.1f} s; roots equal: {root == ref_root}")
    assert root == ref_root


_EXPORT_LOOP = """
import sys
from overlap_desktop import api
idx, out = sys.argv[1], sys.argv[2]
with api.open_index(idx, create=False) as index:
    while True:
        api.export_manifest(index, out, label=sys.argv[3])
"""


def test_sigkill_during_export_never_tears_the_file(small_corpus: Path, tmp_path: Path,
                                                    reference: tuple[str, float]) -> None:
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
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        m = api.read_manifest(out)  # must parse: old intact or new complete
        outcomes["old" if m.label == "old" else "new"] += 1
        assert m.label in ("old", "new")
        if m.label == "old":
            assert m.root == old_root
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("index", "offer.ovlm")]
    print(f"\nexport kills: {KILLS}, outcomes {outcomes}, leftover temp files: {leftovers}")
