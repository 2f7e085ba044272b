"""Shared fixtures for the reliability suite: a small folder of generated clips."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.footage import make_clip


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five short, distinct clips (about 6 s each, 160x120)."""
    root = tmp_path_factory.mktemp("reliability-corpus")
    for i in range(5):
        make_clip(root / f"clip_{i}.mp4", seed=100 + i, duration=6.0, fps=24.0, size=(160, 120),
                  canvas_hw=(600, 1800))
    return root
