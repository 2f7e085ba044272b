"""Concurrency: read and compare while another process indexes; two writers.

tests/integration/test_index_concurrency.py (INDEX helper) holds the writer lock with a
scripted transaction and checks listing and reading. This file extends it to a real
``overlap index`` subprocess doing real work while this process, in a loop:

- opens the index read-only and lists files: every file listed ``ok`` has all its
  streams' fingerprints decodable (no torn reads);
- runs a full ``compare`` of a manifest against the index (what the GUI does while the
  library is being indexed);

with no "database is locked" (any exception fails the test). Then two real index jobs
start on one index, the first paused mid-run by its own progress callback: the second
refuses at once with exit status 2 and a message naming the holder (IndexBusyError), the
first completes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest.export import export_manifest
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


_PAUSED_JOB = """
import sys
from overlap_desktop import api

folder, index = sys.argv[1], sys.argv[2]
pauses = int(sys.argv[3])
paused = []


def progress(p):
    # Pause at the first progress report of the indexing stage and then once past each further
    # 1/pauses of the bytes: the job holds the writer lock and is mid-run. It waits there until
    # the test says go on, so the test meets it mid-run however fast or slow this machine is.
    if p.stage == "index" and len(paused) < pauses and (not paused or p.done >= p.total * len(paused) / pauses):
        paused.append(p.done)
        print("paused", flush=True)
        sys.stdin.readline()


summary = api.index_paths([folder], index=index, config=api.load_config({"index.path": index}),
                          progress=progress)
print(f"indexed {summary.indexed}", flush=True)
"""


def _paused_job(folder: Path, index: Path, pauses: int) -> subprocess.Popen[str]:
    """A real indexing run that stops ``pauses`` times mid-run (see _PAUSED_JOB) until told to go on."""
    return subprocess.Popen([sys.executable, "-c", _PAUSED_JOB, str(folder), str(index), str(pauses)],
                            env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _go_on_when_paused(job: subprocess.Popen[str], read_pass: Callable[[], None],
                       errors: list[BaseException]) -> list[str]:
    """Each time ``job`` reports a pause, run ``read_pass`` and tell it to go on; return the
    lines it printed (read on a thread, so the caller keeps reading meanwhile). What
    ``read_pass`` raises is kept in ``errors`` for the test to raise (and the job goes on)."""
    lines: list[str] = []

    def follow() -> None:
        assert job.stdout is not None and job.stdin is not None
        for line in job.stdout:
            lines.append(line)
            if line == "paused\n":
                try:
                    read_pass()
                except BaseException as exc:  # raised again by the test, on its own thread
                    errors.append(exc)
                finally:
                    job.stdin.write("go on\n")
                    job.stdin.flush()

    threading.Thread(target=follow, daemon=True).start()
    return lines


def test_read_and_compare_while_another_process_indexes(big_folder: Path, offer: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    cfg = load_config(environ={})
    reads = compares = checked = paused_passes = 0
    seen_counts: list[int] = []
    overlaps: list[float] = []
    lock = threading.Lock()

    def read_pass() -> None:
        nonlocal reads, compares, checked
        with lock:
            with open_index(index, readonly=True) as idx:
                ok = idx.files("ok")
                seen_counts.append(len(ok))
                decoded: dict[str, int] = {}
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

    def paused_pass() -> None:
        nonlocal paused_passes
        read_pass()
        paused_passes += 1

    # The writer stops twice mid-run (a pass is made then: the job is certainly in progress,
    # however fast the machine), and between its pauses this thread reads and compares freely
    # while it writes.
    writer = _paused_job(big_folder, index, pauses=2)
    errors: list[BaseException] = []
    lines = _go_on_when_paused(writer, paused_pass, errors)
    try:
        _wait_for_schema(index, writer)
        while writer.poll() is None:
            read_pass()
    finally:
        try:
            writer.wait(timeout=300)
        finally:
            writer.kill()
        err = writer.stderr.read() if writer.stderr else ""
        for pipe in (writer.stdin, writer.stdout, writer.stderr):
            if pipe is not None:
                pipe.close()
    if errors:
        raise errors[0]
    assert writer.returncode == 0, err
    assert lines[-1:] == [f"indexed {COPIES * 5}\n"], (lines, err)
    print(f"\nconcurrency: {reads} read-only passes ({paused_passes} with the writer paused mid-run; "
          f"{checked} finished files checked, counts seen {sorted(set(seen_counts))}), {compares} compares "
          f"(overlap % seen {sorted(set(round(o) for o in overlaps))}) "
          "while `overlap index` wrote; 0 'database is locked'")
    assert paused_passes == 2, lines
    assert seen_counts == sorted(seen_counts)  # progress only grows: no half-visible transaction
    with open_index(index, readonly=True) as idx:
        assert len(idx.files("ok")) == COPIES * 5
    # Once everything is indexed the offer (the same 5 clips of 6 s; floor lowered) is fully owned.
    assert compare(offer, index, config=cfg, floor_seconds=2.0).overlap_percent > 90


def test_second_index_job_refuses_clearly(big_folder: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    # The first job is a real indexing run paused by its own progress callback (a job that just
    # ran could finish before the second one starts on a fast machine, or long after on a slow one).
    first = _paused_job(big_folder, index, pauses=1)
    try:
        assert first.stdout is not None and first.stdin is not None
        line = first.stdout.readline()
        assert line == "paused\n", (line, first.stderr.read() if first.stderr else "")
        second = subprocess.run(_cli("index", str(big_folder), "--index", str(index), "-q"), env=_env(),
                                capture_output=True, text=True, timeout=120)
    finally:
        out, err = first.communicate("go on\n", timeout=300)
    print(f"\nsecond index job: exit {second.returncode}: {second.stderr.strip()}")
    assert first.returncode == 0 and out.strip() == f"indexed {COPIES * 5}", (out, err)
    assert second.returncode == 2, second.stderr
    assert f"pid {first.pid}" in second.stderr and "writing to this index" in second.stderr
    assert "Traceback" not in second.stderr
