"""The detection-matrix tables in README.md and docs/ are generated from the toml and must not drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_detection_matrix", ROOT / "docs" / "gen_detection_matrix.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_match_toml() -> None:
    gen = _gen()
    rows = gen.load_rows()
    assert (ROOT / "docs" / "detection-matrix.md").read_text(encoding="utf-8") == gen.render_doc(rows)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == gen.updated_readme(readme, rows)
    for row in rows:
        assert f"`{row['id']}`" in readme


def test_rows_are_well_formed() -> None:
    rows = _gen().load_rows()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate row ids"
    upstream = {
        "identical-rename", "reencode-h265-crf30", "container-swap-mkv", "trim-12s", "trim-arbitrary-phase",
        "splice-15s-plus-other", "merge-two-same", "merge-two-masters", "merge-owned-plus-new", "speed-0.5x",
        "speed-2x", "hflip", "crop-5pct", "crop-15pct", "crop-30pct", "crop-40pct", "crop-bottom-15",
        "crop-top-10", "crop-bottom-8-default", "crop-centre-8-default", "crop-bottom-default-config",
        "letterbox-15pct", "watermark-corner", "colorgrade", "fps-resample-15", "launder-mcap",
        "unrelated-footage", "same-scene-different-view", "clip-below-floor",
    }
    assert upstream <= set(ids)
    not_detected = {r["id"] for r in rows if r["status"] == "not detected"}
    assert {"crop-40pct", "crop-bottom-default-config", "unrelated-footage", "same-scene-different-view",
            "clip-below-floor"} <= not_detected
    for r in rows:
        assert r["status"] in ("designed to detect", "not detected")
        assert r["origin"] in ("upstream", "beyond upstream")
