"""A run killed in the middle of a long file continues there (issue 34, item 6).

`overlap index` runs in a subprocess and is killed with SIGKILL once the index holds a
checkpoint of the file (30 s or more of its 90 s: the last 60 s leave a loaded machine time to
see it before the file is done); the next run must read the file only from the last one
and store exactly the fingerprints an uninterrupted run stores. Progress is polled from the
database, so the kill lands at a point in the work however fast the machine is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.types import NS_PER_S
from tests.resume_clips import Reads, assert_same, cfg, chunks_saved, stored, write_long_clip

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL semantics are POSIX")

ROOT = Path(__file__).resolve().parents[2]
#: Seconds after which a subprocess that saved nothing counts as hung (a guard, not a measure).
HANG_GUARD_S = 300.0


def test_sigkill_mid_file_resumes_from_the_last_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = write_long_clip(tmp_path / "long.mp4")
    ix = tmp_path / "idx"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "overlap_desktop", "index", str(clip), "--index", str(ix), "-q"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a hang guard only; never a pass condition
        while chunks_saved(ix) < 1:
            assert proc.poll() is None, f"overlap index ended (exit {proc.returncode}) before its first checkpoint"
            assert time.monotonic() < deadline, "overlap index saved no progress (hung?)"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        saved = chunks_saved(ix)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    reads = Reads(monkeypatch)
    summary = index_paths([clip], config=cfg(ix))
    assert summary.indexed == 1 and not summary.warnings
    (start,) = reads.starts
    # From the last checkpoint the killed run saved (every 30 s of footage), not from 0.
    assert saved >= 1 and 30 * saved * NS_PER_S <= start <= (30 * saved + 4.1) * NS_PER_S
    assert reads.first_ns == [start]
    resumed = stored(ix)
    monkeypatch.undo()
    assert index_paths([clip], config=cfg(tmp_path / "uninterrupted")).indexed == 1
    assert_same(resumed, stored(tmp_path / "uninterrupted"))
