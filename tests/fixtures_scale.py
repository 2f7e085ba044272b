"""Session fixtures for the scale-out tests (worker processes, Dask cluster).

Registered in tests/conftest.py (``pytest_plugins``); tests name the fixtures as arguments and
import the helpers (``N_CLIPS``, ``build_and_export``...) by name. The corpus is small on purpose: several
short clips so that more files than workers are in flight, plus one bad file, so that
parallel and serial runs can be compared file for file and byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.config import Config, load_config
from overlap_desktop.core.index.indexer import IndexSummary, index_paths
from overlap_desktop.core.manifest.export import export_manifest
from tests.footage import make_clip

__all__ = ["N_CLIPS", "build_and_export", "scale_config", "scale_corpus", "serial_manifest"]

#: Good clips in the corpus (plus one bad file).
N_CLIPS = 8


@pytest.fixture(scope="session")
def scale_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scale-corpus")
    for i in range(N_CLIPS):
        sub = root / ("cam1" if i % 2 else "cam0")
        make_clip(sub / f"clip{i}.mp4", 40 + i, duration=4.0, fps=15.0, size=(160, 120))
    rng = np.random.default_rng(18)
    (root / "cam0" / "broken.mp4").write_bytes(rng.integers(0, 256, 32 * 1024, dtype=np.uint8).tobytes())
    return root


def scale_config(index: Path, **overrides: object) -> Config:
    return load_config({"index.path": str(index), **overrides}, environ={}, cwd=index.parent)


def build_and_export(corpus: Path, index: Path, out: Path, **overrides: object) -> tuple[IndexSummary, bytes]:
    """Index ``corpus`` with ``overrides`` and export a manifest; returns the summary and its bytes."""
    summary = index_paths([corpus], index=index, config=scale_config(index, **overrides))
    export_manifest(index, out, config=scale_config(index))
    return summary, out.read_bytes()


@pytest.fixture(scope="session")
def serial_manifest(scale_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[IndexSummary, bytes]:
    """The reference: a serial build (one process) of the corpus, exported."""
    tmp = tmp_path_factory.mktemp("scale-serial")
    summary, data = build_and_export(scale_corpus, tmp / "ix", tmp / "serial.ovlm", **{"index.workers": 1})
    assert summary.engine == "this process" and summary.indexed == N_CLIPS
    return summary, data
