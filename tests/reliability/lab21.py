"""Shared, small fixtures for the issue-21 hostile-input tests: one indexed clip and the
offer manifest exported from it (so a compare of the offer against the index is 100 %),
and an in-process CLI runner.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.footage import make_clip


@dataclass(frozen=True)
class Lab:
    """A clip, the index holding it and the manifest of that index (read-only: copy it)."""

    clip: Path
    index: Path
    manifest: Path


@pytest.fixture(scope="session")
def lab21(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.indexer import index_paths
    from overlap_desktop.core.manifest.export import export_manifest

    root = tmp_path_factory.mktemp("lab21")
    clip = root / "footage" / "clip.mp4"
    clip.parent.mkdir()
    # 14 s: longer than the default 10 s evidence floor, so the self-compare counts 100 %.
    make_clip(clip, seed=2101, duration=14.0, fps=12.0, size=(128, 96), canvas_hw=(500, 1400))
    index = root / "index"
    cfg = load_config({"index.path": str(index)}, cwd=root, environ={}, user_file=root / "none.toml")
    index_paths([clip], index=index, config=cfg)
    manifest = root / "offer.ovlm"
    export_manifest(index, manifest)
    return Lab(clip=clip, index=index, manifest=manifest)


def copy_lab(lab: Lab, dest: Path) -> Lab:
    """A private copy a test may damage."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(lab.index, dest / "index")
    shutil.copy2(lab.manifest, dest / "offer.ovlm")
    return Lab(clip=lab.clip, index=dest / "index", manifest=dest / "offer.ovlm")


def run_cli(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``overlap ARGV`` in-process: (exit status, stdout, stderr)."""
    from overlap_desktop.cli.main import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err
