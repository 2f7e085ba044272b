"""Indexing and comparing on a Dask cluster (issue 18, item 2), against a real LocalCluster:
separate worker processes, talking to the client over TCP like remote machines would."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.engines import cluster as cluster_mod
from overlap_desktop.core.index import parallel
from overlap_desktop.core.index.indexer import IndexSummary
from overlap_desktop.core.types import Progress
from overlap_desktop.errors import MissingDependencyError, UsageError
from tests.fixtures_scale import N_CLIPS, build_and_export, scale_config

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two single-threaded worker processes (with nannies, which restart a killed worker)."""
    home = tmp_path_factory.mktemp("dask-workers-cwd")
    old_cwd, old_pp = os.getcwd(), os.environ.get("PYTHONPATH")
    # Workers import this checkout (not another installed copy), also when a nanny restarts a killed
    # one later (it inherits the environment then), and start in an empty folder.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), old_pp) if p)
    os.chdir(home)
    try:
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      host="127.0.0.1", local_directory=str(home))
        os.chdir(old_cwd)
        yield lc.scheduler_address
        lc.close()
    finally:
        os.chdir(old_cwd)
        if old_pp is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_pp


@pytest.fixture(autouse=True)
def cluster_for_any_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test corpus is far below the size a cluster is worth (tests/unit/test_engine_choice.py):
    send it to the cluster anyway, to test the cluster path."""
    monkeypatch.setattr(parallel, "CLUSTER_MIN_BYTES", 0)


@pytest.fixture
def client(dask_cluster: str) -> Iterator[object]:
    c = distributed.Client(dask_cluster, set_as_default=False)
    c.wait_for_workers(2, timeout=120)
    try:
        yield c
    finally:
        c.close()


def test_index_on_the_cluster_exports_the_serial_bytes(
        dask_cluster: str, scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes], tmp_path: Path) -> None:
    serial, serial_bytes = serial_manifest
    summary, data = build_and_export(scale_corpus, tmp_path / "ix", tmp_path / "c.ovlm",
                                     **{"index.cluster": dask_cluster})
    assert summary.engine.startswith(f"Dask cluster {dask_cluster}")
    assert summary.indexed == N_CLIPS and summary.failed == serial.failed
    assert data == serial_bytes
    # Resume is unchanged: a second run through the cluster finds nothing to do.
    again = api.index_paths([scale_corpus], index=tmp_path / "ix",
                            config=scale_config(tmp_path / "ix", **{"index.cluster": dask_cluster}))
    assert again.indexed == 0 and again.skipped == N_CLIPS


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_worker_killed_mid_job_is_survived(
        dask_cluster: str, client: object, scale_corpus: Path, serial_manifest: tuple[IndexSummary, bytes],
        tmp_path: Path) -> None:
    killed: list[str] = []

    def progress(p: Progress) -> None:
        if killed or p.stage != "index" or not (p.message or "").startswith("indexed"):
            return
        # One file is committed: kill a worker that is running one of ours right now, if any.
        busy = [w for w, keys in client.processing().items() if keys]  # type: ignore[attr-defined]
        victim = busy[0] if busy else min(client.scheduler_info()["workers"])  # type: ignore[attr-defined]
        pid = client.run(os.getpid, workers=[victim])[victim]  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGKILL)
        killed.append(victim)

    ix = tmp_path / "ix"
    config = scale_config(ix, **{"index.cluster": dask_cluster})
    summary = api.index_paths([scale_corpus], index=ix, config=config, progress=progress)
    assert killed
    assert summary.indexed == N_CLIPS and len(summary.failed) == 1
    api.export_manifest(ix, tmp_path / "m.ovlm", config=config)
    assert (tmp_path / "m.ovlm").read_bytes() == serial_manifest[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc/self/cwd")
def test_a_path_the_workers_cannot_see_is_refused_naming_it(
        dask_cluster: str, client: object, scale_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # /proc/self/cwd is each process's own working folder: this process (cwd = the corpus) sees the
    # files, the workers (started in an empty folder) do not -- like footage on a disk only the
    # client mounts.
    monkeypatch.chdir(scale_corpus)
    seen_by_client = Path("/proc/self/cwd/cam1")
    clip = seen_by_client / "clip1.mp4"
    assert clip.exists()
    ix = tmp_path / "ix"
    code = main(["index", str(seen_by_client), "--index", str(ix), "--cluster", dask_cluster])
    out = capsys.readouterr().out
    assert code == 4
    assert f"{clip}: this worker (" in out and "cannot see the file" in out and "same path" in out
    with api.open_index(ix, readonly=True) as idx:
        row = idx.file(clip)
        assert row is not None and row.status == "error" and "cannot see" in (row.error or "")


def test_compare_on_the_cluster_gives_the_local_report(
        dask_cluster: str, scale_corpus: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    config = scale_config(ix, **{"index.workers": 1})
    api.index_paths([scale_corpus], index=ix, config=config)
    offer = tmp_path / "offer.ovlm"
    api.export_manifest(ix, offer, paths=[scale_corpus / "cam1"], config=config)
    # The clips are 4 s long: below the default 10 s evidence floor.
    local = api.report_to_dict(api.compare(offer, ix, config=config, floor_seconds=1.0))
    seen: list[Progress] = []
    remote = api.report_to_dict(api.compare(offer, ix, config=config, floor_seconds=1.0, cluster=dask_cluster,
                                            progress=seen.append))
    for r in (local, remote):
        r.pop("created", None)
    assert remote == local
    assert any(p.stage == "search" and p.unit == "shards" for p in seen)
    assert local["files"] and all(f["segments"] for f in local["files"])  # the offer is found


def test_missing_extra_and_unreachable_scheduler_are_clear(
        scale_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    monkeypatch.setattr(cluster_mod, "CONNECT_TIMEOUT_S", 2.0)
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        cluster_mod.connect("tcp://127.0.0.1:9", timeout=2.0)
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the 'cluster' extra were not installed
    with pytest.raises(MissingDependencyError, match=r"overlap-desktop\[cluster\]"):
        cluster_mod.connect("tcp://127.0.0.1:9")
    assert main(["index", str(scale_corpus), "--index", str(ix), "--cluster", "tcp://127.0.0.1:9", "-q"]) == 2
    assert "pip install" in capsys.readouterr().err


def test_cli_compare_cluster_flag(dask_cluster: str, scale_corpus: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    config = scale_config(ix, **{"index.workers": 1})
    api.index_paths([scale_corpus / "cam1"], index=ix, config=config)
    offer = tmp_path / "offer.ovlm"
    api.export_manifest(ix, offer, config=config)
    capsys.readouterr()
    args = ["compare", str(offer), "--index", str(ix), "--floor", "1", "-q", "--json", str(tmp_path / "{}.json")]
    assert main([*args[:-1], str(tmp_path / "local.json")]) == 0
    assert main([*args[:-1], str(tmp_path / "remote.json"), "--cluster", dask_cluster]) == 0
    import json

    local, remote = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("local", "remote"))
    local.pop("created", None)
    remote.pop("created", None)
    assert local == remote and local["files"]
    assert main([*args[:-1], str(tmp_path / "x.json"), "--cluster"]) == 2  # no index.cluster set
    assert "index.cluster" in capsys.readouterr().err


def test_each_machine_shares_its_cores_among_its_task_slots(dask_cluster: str) -> None:
    class Client:
        def scheduler_info(self) -> dict[str, dict[str, dict[str, int]]]:
            return {"workers": {"tcp://10.0.0.5:40001": {"nthreads": 2}, "tcp://10.0.0.5:40002": {"nthreads": 1},
                                "tcp://10.0.0.6:40001": {"nthreads": 4}}}

    assert cluster_mod._slots_by_host(Client()) == {"10.0.0.5": 3, "10.0.0.6": 4}
    assert cluster_mod._decoder_share({}) == 0  # outside a worker: as configured
    # On the real cluster's workers (2 single-threaded workers on this machine), each gets its share.
    client = distributed.Client(dask_cluster, set_as_default=False)
    try:
        slots = cluster_mod._slots_by_host(client)
        assert slots == {"127.0.0.1": 2}
        # As a task (get_worker() knows its worker only there), pinned to each worker in turn.
        shares = [client.submit(cluster_mod._decoder_share, slots, workers=[w], pure=False).result()
                  for w in client.scheduler_info()["workers"]]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        assert shares == [max(1, cores // 2)] * 2
    finally:
        client.close()
