"""Shard format 5 (issue 38 item 4: fewer bytes for a cold comparison to read) gives the report
format 4 gave: an index whose shards are rewritten in format 4 compares an offer to the same
JSON and HTML, is counted as an older layout, and `overlap index --rebuild-shards` brings it
back to format 5 with the same report again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.index.shards import SHARD_VERSION, Shard
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.report.formats import format_date
from tests.fixtures_index import rewrite_shards
from tests.footage import make_clip

pytestmark = pytest.mark.slow

SIZE = (160, 120)
FPS = 12.0


def run(argv: list[str]) -> int:
    return main([*argv, "-q"])


def _compare(world: dict[str, Path], out: Path) -> tuple[dict[str, Any], str]:
    """The report as JSON and HTML, without the time it was made (the rest must match byte for byte)."""
    assert run(["compare", str(world["manifest"]), "--index", str(world["lab"]), "-o", str(out / "r.json"),
                "--html", str(out / "r.html")]) == 0
    report = json.loads((out / "r.json").read_text(encoding="utf-8"))
    created = report.pop("created")
    return report, (out / "r.html").read_text(encoding="utf-8").replace(format_date(created), "")


def _versions(ix: Path) -> list[int]:
    return [Shard.open(d).version for d in sorted((ix / "shards").iterdir()) if d.is_dir()]


def test_format_4_and_format_5_shards_give_the_same_report(tmp_path: Path) -> None:
    owned, offer = tmp_path / "owned", tmp_path / "offer"
    make_clip(owned / "a.mp4", 11, duration=30, fps=FPS, size=SIZE)
    make_clip(owned / "b.mp4", 12, duration=20, fps=FPS, size=SIZE)
    make_clip(offer / "slow.mp4", 11, duration=24, fps=FPS, size=SIZE, t0=4.0, speed=0.5)
    make_clip(offer / "copy.mp4", 12, duration=12, fps=FPS, size=SIZE, t0=3.0)
    make_clip(offer / "new.mp4", 13, duration=20, fps=FPS, size=SIZE)
    world = {"lab": tmp_path / "lab", "manifest": tmp_path / "offer.ovlm"}
    assert run(["index", str(owned), "--index", str(world["lab"])]) == 0
    assert run(["index", str(offer), "--index", str(tmp_path / "vendor")]) == 0
    assert run(["export", "-o", str(world["manifest"]), "--index", str(tmp_path / "vendor")]) == 0
    assert _versions(world["lab"]) == [SHARD_VERSION] and SHARD_VERSION == 5

    outs = [tmp_path / f"out{k}" for k in range(3)]
    for o in outs:
        o.mkdir()
    new_json, new_html = _compare(world, outs[0])
    found = {Path(f["query_file"]).name: f for f in new_json["files"]}
    assert found["slow.mp4"]["segments"] and found["copy.mp4"]["segments"] and found["new.mp4"]["segments"] == []

    # The same rows in format 4 (an index sealed by the previous build): the same answer...
    assert rewrite_shards(world["lab"], 4) == 1
    assert _versions(world["lab"]) == [4]
    with open_index(world["lab"], readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 1
    old_json, old_html = _compare(world, outs[1])
    assert old_json == new_json and old_html == new_html  # byte for byte: segments, boundaries, figures

    # ... and a rebuild writes format 5 again, with the same answer.
    assert run(["index", "--rebuild-shards", "--index", str(world["lab"])]) == 0
    assert _versions(world["lab"]) == [5]
    with open_index(world["lab"], readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 0
    again, again_html = _compare(world, outs[2])
    assert again == new_json and again_html == new_html

