"""Indexing in worker processes (issue 18, item 1): same bytes as a serial build, resumable,
cancellable through the api's callbacks (as the GUI uses it), and a dead worker is survived."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.engines import CloseInBackground
from overlap_desktop.core.index import fingerprinting, indexer, parallel
from overlap_desktop.core.index.indexer import IndexSummary
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import CancelToken, Progress
from overlap_desktop.errors import Cancelled
from tests.fixtures_scale import N_CLIPS, build_and_export, scale_config


def test_parallel_build_exports_the_same_bytes_as_a_serial_build(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path) -> None:
    serial, serial_bytes = serial_manifest
    summary, data = build_and_export(scale_corpus, tmp_path / "ix", tmp_path / "par.ovlm", **{"index.workers": 2})
    assert summary.engine == "2 worker processes"
    assert summary.indexed == N_CLIPS and summary.files_seen == serial.files_seen
    # The bad file is refused with the same reason, and failures are listed in walk order.
    assert summary.failed == serial.failed and len(summary.failed) == 1
    assert data == serial_bytes
    assert multiprocessing.active_children() == []


def test_a_cluster_is_not_used_for_a_small_job_and_the_summary_says_so(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path) -> None:
    """A few MB through --cluster: fingerprinted here (no connection is even tried: the address is
    a closed port), the note names the job's size, and the export is the serial one."""
    serial, serial_bytes = serial_manifest
    summary, data = build_and_export(scale_corpus, tmp_path / "ix", tmp_path / "c.ovlm",
                                     **{"index.cluster": "tcp://127.0.0.1:9"})
    assert summary.engine == "this process" and summary.indexed == N_CLIPS
    notes = [w for w in summary.warnings if "cluster was not used" in w]
    assert len(notes) == 1 and f"{N_CLIPS + 1} file(s)" in notes[0], summary.warnings
    assert summary.failed == serial.failed and data == serial_bytes


def test_default_uses_every_core_and_cancel_stops_all_workers(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The GUI's path: api.index_paths with the default settings, a progress and a cancel callback."""
    # The corpus is tiny; make worker start-up free so the default runs in parallel.
    monkeypatch.setattr(parallel, "START_BYTES", 0)
    monkeypatch.setattr(parallel, "default_workers", lambda: 2)
    monkeypatch.setattr(parallel, "machine_load", lambda: None)  # other jobs on the machine would keep it serial
    ix = tmp_path / "ix"
    token = CancelToken()
    seen: list[Progress] = []

    def progress(p: Progress) -> None:
        seen.append(p)
        if p.stage == "index" and p.message and p.message.startswith("indexed"):
            token.cancel()  # cancel as soon as the first file is committed

    config = scale_config(ix)
    assert config["index.workers"] == 0
    with pytest.raises(Cancelled) as info:
        api.index_paths([scale_corpus], index=ix, config=config, progress=progress, cancel=token)
    partial: IndexSummary = info.value.summary  # type: ignore[attr-defined]
    assert partial.cancelled and partial.engine == "2 worker processes"
    assert 1 <= partial.indexed < N_CLIPS
    # Every worker process was stopped and joined.
    assert multiprocessing.active_children() == []
    # Aggregate progress over all workers: bytes of the whole run, never past the total.
    index_events = [p for p in seen if p.stage == "index"]
    assert index_events and all(p.unit == "bytes" and p.total and p.done <= p.total for p in index_events)
    with open_index(ix, readonly=True) as idx:
        statuses = [f.status for f in idx.files()]
    # Nothing half-written: finished files are ok, the others pending (never left "running").
    assert statuses.count("ok") == partial.indexed and "running" not in statuses
    # Resume: the same call finishes the job, and the result is the serial build's.
    again = api.index_paths([scale_corpus], index=ix, config=config)
    assert again.indexed == N_CLIPS - partial.indexed and again.skipped == partial.indexed
    api.export_manifest(ix, tmp_path / "resumed.ovlm", config=config)
    assert (tmp_path / "resumed.ovlm").read_bytes() == serial_manifest[1]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_worker_process_killed_mid_job_is_survived(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    killed: list[int] = []

    def progress(p: Progress) -> None:
        if not killed and p.stage == "index" and p.message and p.message.startswith("indexed"):
            children = multiprocessing.active_children()
            assert children, "the pool's worker processes should be running"
            os.kill(children[0].pid, signal.SIGKILL)  # type: ignore[arg-type]
            killed.append(children[0].pid)  # type: ignore[arg-type]

    config = scale_config(ix, **{"index.workers": 2})
    summary = api.index_paths([scale_corpus], index=ix, config=config, progress=progress)
    assert killed
    assert summary.indexed == N_CLIPS and len(summary.failed) == 1
    api.export_manifest(ix, tmp_path / "m.ovlm", config=config)
    assert (tmp_path / "m.ovlm").read_bytes() == serial_manifest[1]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_file_handed_over_after_a_worker_died_is_still_fingerprinted(scale_corpus: Path, tmp_path: Path) -> None:
    # The race behind a flaky run: a worker dies, the pool learns it, and the writer hands over the
    # next file before wait() has collected the files that died. The pool refuses it
    # (BrokenProcessPool from submit); that must not end the job: the file is run in a fresh pool.
    import time

    from overlap_desktop.core.ingest.fingerprint import variants_from_config

    config = scale_config(tmp_path / "ix", **{"index.workers": 1})
    clips = sorted(p for p in (scale_corpus / "cam0").glob("clip*.mp4"))[:2]

    def job(p: Path) -> parallel.FileJob:
        st = p.stat()
        return parallel.FileJob(str(p), "video", st.st_size, st.st_mtime_ns, config, variants_from_config(config))

    engine = parallel.ProcessEngine(1)
    try:
        engine.submit(job(clips[0]))
        deadline = time.monotonic() + 300  # a hang guard, not a pass condition
        while not multiprocessing.active_children() and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = multiprocessing.active_children()[0]
        os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
        while not engine.engine._pool._broken and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)
        engine.submit(job(clips[1]))  # refused by the broken pool: parked, not raised
        outcomes: dict[str, parallel.FileOutcome] = {}
        while len(outcomes) < 2 and time.monotonic() < deadline:
            outcomes.update({j.path: o for j, o in engine.wait(1.0)})
    finally:
        engine.close()
    assert sorted(outcomes) == sorted(str(p) for p in clips)
    assert all(o.error is None and o.streams for o in outcomes.values()), outcomes


def test_default_keeps_a_small_job_in_one_process(scale_corpus: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Starting worker processes costs about a second each; a few MB of new footage is not worth it,
    # even on an idle machine.
    monkeypatch.setattr(parallel, "machine_load", lambda: 0.0)
    ix = tmp_path / "ix"
    summary = api.index_paths([scale_corpus / "cam1"], index=ix, config=scale_config(ix))
    assert summary.engine == "this process" and summary.indexed == N_CLIPS // 2


def test_cli_workers_flag(scale_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    assert main(["index", str(scale_corpus), "--index", str(ix), "--workers", "2", "-q"]) == 4  # the bad file
    out = capsys.readouterr().out
    assert "fingerprinted by:    2 worker processes" in out and f"Indexed {N_CLIPS} file(s)" in out
    assert main(["index", str(scale_corpus), "--index", str(ix), "--workers", "-1", "-q"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_workers_setting_is_validated() -> None:
    from overlap_desktop.config import load_config
    from overlap_desktop.errors import ConfigError

    assert load_config({"index.workers": "3"}, environ={})["index.workers"] == 3
    with pytest.raises(ConfigError, match="index.workers"):
        load_config(environ={"OVERLAP_INDEX_WORKERS": "-2"})
    with pytest.raises(ConfigError, match="index.cluster"):
        load_config({"index.cluster": "myhost:8786"}, environ={})


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killing_the_writer_leaves_no_half_written_work_and_no_orphan_workers(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path) -> None:
    import subprocess

    psutil = pytest.importorskip("psutil")
    ix = tmp_path / "ix"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "overlap_desktop", "index", str(scale_corpus), "--index", str(ix),
                             "--workers", "2"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # one line per finished file
            if ": indexed" in line:
                break
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert workers
        proc.kill()
        proc.wait(timeout=60)
        # The workers notice their writer is gone and exit instead of decoding on as orphans.
        _, alive = psutil.wait_procs(workers, timeout=60)
        assert alive == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()
    with open_index(ix, readonly=True) as idx:
        ok = [f for f in idx.files() if f.status == "ok"]
        assert ok  # (the kill usually lands before the last file; the test holds either way)
    config = scale_config(ix, **{"index.workers": 2})
    resumed = api.index_paths([scale_corpus], index=ix, config=config)
    assert resumed.skipped == len(ok) and resumed.indexed == N_CLIPS - len(ok)
    api.export_manifest(ix, tmp_path / "m.ovlm", config=config)
    assert (tmp_path / "m.ovlm").read_bytes() == serial_manifest[1]


class _InlineEngine:
    """An engine that runs each job in this process when results are awaited, recording the feed order."""

    capacity = 2
    description = "inline"

    def __init__(self) -> None:
        self.fed: list[str] = []
        self._queued: list[parallel.FileJob] = []
        self.closed = False

    def submit(self, job: parallel.FileJob) -> None:
        self.fed.append(job.path)
        self._queued.append(job)

    def wait(self, timeout: float) -> list[tuple[parallel.FileJob, parallel.FileOutcome]]:
        out = [(job, fingerprinting.run_job(job)) for job in self._queued]
        self._queued.clear()
        return out

    def fractions(self) -> dict[str, float]:
        return {}

    def reports(self) -> list[tuple[str, object]]:
        return []

    def stop(self) -> list[tuple[parallel.FileJob, parallel.FileOutcome]]:
        self._queued.clear()
        return []

    def close(self) -> None:
        self.closed = True


def test_an_engine_is_fed_the_largest_files_first_and_the_result_is_unchanged(
        scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _InlineEngine()
    monkeypatch.setattr(indexer, "_engine_for", lambda *a: engine)
    summary, data = build_and_export(scale_corpus, tmp_path / "ix", tmp_path / "lpt.ovlm")
    walk = [str(p) for p, _ in indexer.walk_candidates([scale_corpus])]
    sizes = {p: os.path.getsize(p) for p in walk}
    assert len(set(sizes.values())) > 2  # the corpus has files of several sizes, or this proves nothing
    # Longest (largest) first, ties in walk order; failures still reported in walk order.
    assert engine.fed == sorted(walk, key=lambda p: -sizes[p]) and engine.fed != walk
    assert summary.failed == serial_manifest[0].failed and summary.indexed == N_CLIPS
    assert data == serial_manifest[1] and engine.closed


def test_pool_workers_share_the_cores_for_decoder_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.config import load_config
    from overlap_desktop.errors import MediaError

    monkeypatch.setattr(parallel, "default_workers", lambda: 8)
    pool = parallel.ProcessEngine(3)
    try:
        assert pool.decoder_threads == 2
    finally:
        pool.close()

    class Reader:
        threads = -1

        def configure(self, config: object) -> None:
            self.threads = int(config["index.threads"])  # type: ignore[index]

        def streams(self, path: Path) -> list[object]:
            return []

    for configured, share, expected in ((0, 2, 2), (0, 0, 0), (3, 2, 3)):
        reader = Reader()
        with pytest.raises(MediaError):
            fingerprinting.fingerprint_item(Path("x.mp4"), reader,  # type: ignore[arg-type]
                                            config=load_config({"index.threads": configured}, environ={}),
                                            variants=(), on_fraction=None, cancel=None, decoder_threads=share)
        # The worker's share applies only when the user left the decoder threads automatic.
        assert reader.threads == expected


def test_closing_in_the_background_reports_a_failure() -> None:
    class Failing(_InlineEngine):
        def close(self) -> None:
            raise OSError("cannot stop")

    with pytest.raises(OSError, match="cannot stop"):
        CloseInBackground(Failing()).join()  # type: ignore[arg-type]
    CloseInBackground(Failing()).join(raise_error=False)  # type: ignore[arg-type]  # logged only
    ok = _InlineEngine()
    CloseInBackground(ok).join()  # type: ignore[arg-type]
    assert ok.closed
