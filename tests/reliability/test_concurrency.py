"""Concurrency: read and compare while another process indexes; two writers.

tests/integration/test_index_concurrency.py (INDEX helper) holds the writer lock with a
scripted transaction and checks listing and reading. This file extends it to a real
``overlap index`` subprocess doing real work while this process, in a loop:

- opens the index read-only and lists files: every file listed ``ok`` has all its
  streams' fingerprints decodable (no torn reads);
- runs a full ``compare`` of a manifest against the index (what the GUI does while the
  library is being indexed);

with no "database is locked" (any exception fails the test). Then two real index jobs
start on one index: the second refuses at once with exit status 2 and a message naming
the holder (IndexBusyError), the first completes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest.format import export_manifest
from overlap_desktop.core.match.compare import compare
from overlap_desktop.errors import IndexError_

ROOT = Path(__file__).resolve().parents[2]
COPIES = 2  # 5 clips x 2 copies: a writer that runs for a few seconds


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "overlap_desktop", *args]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _wait_for_schema(index: Path, writer: subprocess.Popen[str]) -> None:
    """Wait until the writer has created the index (its empty database says so clearly)."""
    while True:
        assert writer.poll() is None, writer.communicate()
        if (index / "index.sqlite3").exists():
            try:
                with open_index(index, readonly=True):
                    return
            except IndexError_ as exc:
                assert "being created" in str(exc), exc
        time.sleep(0.05)


@pytest.fixture(scope="module")
def big_folder(small_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("concurrency-footage")
    for k in range(COPIES):
        for clip in sorted(small_corpus.glob("*.mp4")):
            shutil.copy(clip, root / f"copy{k}_{clip.name}")
    return root


@pytest.fixture(scope="module")
def offer(small_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("concurrency-offer")
    index_paths([small_corpus], index=work / "index", config=load_config(environ={}))
    with open_index(work / "index", create=False) as idx:
        export_manifest(idx, work / "offer.ovlm", label="offer")
    return work / "offer.ovlm"


def test_read_and_compare_while_another_process_indexes(big_folder: Path, offer: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    writer = subprocess.Popen(_cli("index", str(big_folder), "--index", str(index), "-q"), env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cfg = load_config(environ={})
    reads = compares = checked = 0
    seen_counts: list[int] = []
    overlaps: list[float] = []
    try:
        _wait_for_schema(index, writer)
        while writer.poll() is None:
            with open_index(index, readonly=True) as idx:
                ok = idx.files("ok")
                seen_counts.append(len(ok))
                decoded = {}
                for f, _key, fp in idx.streams():
                    assert len(fp) > 0 and fp.codes.shape == (len(fp), len(fp.variants), 32), f.path
                    decoded[f.path] = decoded.get(f.path, 0) + 1
                for f in ok:  # every file listed as finished has all its streams
                    assert decoded.get(f.path, 0) == len(f.streams), f.path
                    checked += 1
                reads += 1
            report = compare(offer, index, config=cfg, floor_seconds=2.0)
            overlaps.append(report.overlap_percent)
            compares += 1
    finally:
        out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    print(f"\nconcurrency: {reads} read-only passes ({checked} finished files checked, counts seen "
          f"{sorted(set(seen_counts))}), {compares} compares "
          f"(overlap % seen {sorted(set(round(o) for o in overlaps))}) "
          "while `overlap index` wrote; 0 'database is locked'")
    assert reads >= 2 and compares >= 2, "the writer finished before the readers ran: make the job longer"
    assert seen_counts == sorted(seen_counts)  # progress only grows: no half-visible transaction
    with open_index(index, readonly=True) as idx:
        assert len(idx.files("ok")) == COPIES * 5
    # Once everything is indexed the offer (the same 5 clips of 6 s; floor lowered) is fully owned.
    assert compare(offer, index, config=cfg, floor_seconds=2.0).overlap_percent > 90


def test_second_index_job_refuses_clearly(big_folder: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    first = subprocess.Popen(_cli("index", str(big_folder), "--index", str(index), "-q"), env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Wait until the first job has committed a file: it certainly holds the lock then.
        _wait_for_schema(index, first)
        while True:
            assert first.poll() is None, "the first job finished too early"
            with open_index(index, readonly=True) as idx:
                if idx.files("ok"):
                    break
            time.sleep(0.05)
        t = time.monotonic()
        second = subprocess.run(_cli("index", str(big_folder), "--index", str(index), "-q"), env=_env(),
                                capture_output=True, text=True, timeout=120)
        waited = time.monotonic() - t
    finally:
        out, err = first.communicate(timeout=300)
    print(f"\nsecond index job: exit {second.returncode} after {waited:.1f} s: {second.stderr.strip()}")
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr
    assert f"pid {first.pid}" in second.stderr and "writing to this index" in second.stderr
    assert "Traceback" not in second.stderr
