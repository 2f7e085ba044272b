"""``overlap compare --hide-paths`` (issue 34, item 15): report files a buyer forwards to a seller
name the lab's files without the lab's folders; the terminal keeps the full paths."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from tests.footage import make_clip

SIZE = (160, 120)
FPS = 12.0


def run(argv: list[str]) -> int:
    return main([*argv, "-q"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hide-paths")
    owned = root / "customer-x-secret" / "kitchen"
    make_clip(owned / "owned-a.mp4", 11, duration=16, fps=FPS, size=SIZE)
    make_clip(root / "offer" / "copy.mp4", 11, duration=10, fps=FPS, size=SIZE, t0=2.0)
    lab, vendor = root / "lab-index", root / "vendor-index"
    assert run(["index", str(owned), "--index", str(lab)]) == 0
    assert run(["index", str(root / "offer"), "--index", str(vendor)]) == 0
    manifest = root / "offer.ovlm"
    assert run(["export", "-o", str(manifest), "--index", str(vendor)]) == 0
    return {"root": root, "lab": lab, "manifest": manifest}


def test_hide_paths_leaves_folder_names_out_of_every_report_file(world: dict[str, Path], tmp_path: Path) -> None:
    outs = {k: tmp_path / f"hidden.{k}" for k in ("json", "html", "csv")}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["compare", str(world["manifest"]), "--index", str(world["lab"]), "--json", str(outs["json"]),
                     "--html", str(outs["html"]), "--csv", str(outs["csv"]), "--hide-paths"])
    assert code == 0
    for path in outs.values():
        text = path.read_text(encoding="utf-8")
        assert "customer-x-secret" not in text and str(world["root"]) not in text, path.name
        assert "owned-a.mp4" in text, path.name
    # The look-alike: without the flag the same reports name the folders.
    full = tmp_path / "full.html"
    assert run(["compare", str(world["manifest"]), "--index", str(world["lab"]), "--html", str(full)]) == 0
    assert "customer-x-secret" in full.read_text(encoding="utf-8")
