"""``text_overlap`` on a real Dask LocalCluster (separate worker processes)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.text import overlap as to
from overlap_desktop.core.text import sources
from overlap_desktop.errors import InputError

distributed = pytest.importorskip("distributed")


def test_local_cluster_gives_the_serial_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    vocab = [f"v{i}" for i in range(5000)]
    tests = [" ".join(rng.choice(vocab, size=18)) for _ in range(6)]
    folder = tmp_path / "train"
    folder.mkdir()
    for f in range(3):
        lines = [" ".join(rng.choice(vocab, size=25)) for _ in range(400)]
        lines[100 + f] = "pre " + tests[f] + " post"
        lines[300] = tests[5]  # in every file
        (folder / f"part{f}.txt").write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.setattr(sources, "BLOCK_BYTES", 16 * 1024)  # planned on the client: several ranges per file
    docs = [to.Document(t, "test", str(i)) for i, t in enumerate(tests)]
    serial = to.text_overlap(docs, [folder], workers=1).to_dict()
    assert serial["matched_examples"] == [0, 1, 2, 5]
    # Worker processes import this checkout, not an installed copy.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                      os.environ.get("PYTHONPATH", "")]))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster:
        on_cluster = to.text_overlap(docs, [folder], cluster=cluster.scheduler_address).to_dict()
        assert on_cluster == serial
        # A path the workers cannot see (here: removed after planning) is named in the error.
        gone = tmp_path / "gone.txt"
        gone.write_text(tests[0], encoding="utf-8")
        real_plan = sources.plan_tasks

        def plan_then_remove(srcs: list[sources.Source], i: int) -> list[sources.Task]:
            tasks = real_plan(srcs, i)
            if srcs[i].path == str(gone):
                gone.unlink()
            return tasks

        monkeypatch.setattr(sources, "plan_tasks", plan_then_remove)
        with pytest.raises(InputError, match="gone.txt.*every worker must see this path"):
            to.text_overlap(docs, [gone], cluster=cluster.scheduler_address)
