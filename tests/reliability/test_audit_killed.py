"""An audit killed in the middle of a long delivered file continues there.

``overlap verify --audit`` runs in a subprocess and is killed with SIGKILL once its saved
progress holds a checkpoint of the 90 s file (the audit saves what indexing saves, in its own
state folder); the next audit reads the file only from that checkpoint, reaches the same verdict
as an uninterrupted one, and leaves no saved progress behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.manifest.export import export_manifest
from overlap_desktop.core.types import NS_PER_S
from overlap_desktop.paths import user_data_folder
from tests.resume_clips import Reads, cfg, write_long_clip

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL semantics are POSIX")

ROOT = Path(__file__).resolve().parents[2]
#: Seconds after which a subprocess that saved nothing counts as hung (a guard, not a measure).
HANG_GUARD_S = 300.0


def _chunks(state: Path) -> int:
    """Checkpoints the saved progress names (its chunks are written before the state that names them)."""
    for p in state.glob("*/progress/*/state.json"):
        try:
            return int(json.loads(json.loads(p.read_text(encoding="utf-8"))["state"])["chunks"])
        except (OSError, ValueError, KeyError):
            return 0  # being replaced this instant
    return 0


def test_sigkill_mid_file_resumes_the_audit_from_the_last_checkpoint(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    delivery = tmp_path / "delivery"
    write_long_clip(delivery / "long.mp4")
    assert index_paths([delivery], config=cfg(tmp_path / "vendor")).indexed == 1
    export_manifest(tmp_path / "vendor", tmp_path / "quote.ovlm", config=cfg(tmp_path / "vendor"), sign=False)
    state = user_data_folder() / "audits"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "overlap_desktop", "verify", str(tmp_path / "quote.ovlm"),
                             "--data", str(delivery), "--audit", "--no-rescreen", "-q"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a hang guard only; never a pass condition
        while _chunks(state) < 1:
            assert proc.poll() is None, f"the audit ended (exit {proc.returncode}) before its first checkpoint"
            assert time.monotonic() < deadline, "the audit saved no progress (hung?)"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        saved = _chunks(state)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    reads = Reads(monkeypatch)
    r = audit_delivery(tmp_path / "quote.ovlm", delivery, config=load_config({}, environ={}))
    assert r.ok, [f.check.words for f in r.files]
    # The first read of the resumed audit starts at the last checkpoint the killed one saved, not at 0
    # (later reads are the check's own second opinion, which there is none of here: it reproduced).
    start = reads.starts[0]
    assert saved >= 1 and 30 * saved * NS_PER_S <= start <= (30 * saved + 4.1) * NS_PER_S
    assert len(reads.starts) == 1
    assert not any(state.rglob("*.npz")) and not any(state.rglob("*.json"))
