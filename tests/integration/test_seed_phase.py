"""Short copies of fast-moving footage are found whatever phase their trim left (the search's
seed grid, ``shards.SEED_STAGGER``), and an index sealed on the older one-phase grid says so and
is mended by ``overlap index --rebuild-shards``.

Footage: a generated scene whose camera pans fast enough that PDQ codes half a second apart
differ by about 105 bits (54 at a quarter second), as a crowd, a panning or a head-mounted camera
does. A manifest samples an offered copy once a second: two 11 s copies of two stretches, trimmed
0.45 s and 0.625 s off the owned sampling grid, then sit half a second from every seed of a
one-phase grid, found no seed, and were counted new. Their look-alike is another stretch of the
same pan, never owned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.index.sealing import ShardSet
from overlap_desktop.core.index.store import open_index
from tests.footage import Scene, render_frames, write_video

FPS, SIZE = 24.0, (320, 240)
#: The pan: 60 canvas pixels a second (the view is 640 canvas pixels wide).
SCENE = Scene(31, velocity=(60.0, 0.0), canvas_hw=(720, 9000))
COPIES = {"copy-phase-0.45": 1.45, "copy-phase-0.625": 12.625}
LOOK_ALIKE = {"later-stretch": 60.0}


def _config(ix: Path) -> Any:
    return api.load_config({"index.path": str(ix)}, environ={}, cwd=ix.parent, user_file=ix.parent / "none.toml")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("seed-phase")
    write_video(root / "owned" / "pan.mp4", render_frames(SCENE, duration=24.0, fps=FPS, size=SIZE), fps=FPS)
    for name, t0 in {**COPIES, **LOOK_ALIKE}.items():
        write_video(root / "offer" / f"{name}.mp4", render_frames(SCENE, duration=11.0, fps=FPS, size=SIZE, t0=t0),
                    fps=FPS, options={"crf": "28"})
    vendor = root / "vendor-index"
    assert not api.index_paths([root / "offer"], index=vendor, config=_config(vendor)).failed
    with open_index(vendor) as v:
        api.export_manifest(v, root / "offer.ovlm", label="fast pan")
    return {"root": root, "manifest": root / "offer.ovlm"}


def _lab(world: dict[str, Path], name: str) -> Path:
    ix = world["root"] / name
    assert not api.index_paths([world["root"] / "owned"], index=ix, config=_config(ix)).failed
    return ix


def _verdicts(world: dict[str, Path], ix: Path) -> dict[str, Any]:
    report = api.compare(world["manifest"], ix, config=_config(ix))
    return {Path(f.query_file).stem: f for f in report.files}


def test_short_copies_of_fast_footage_are_found_at_any_trim_phase(world: dict[str, Path]) -> None:
    v = _verdicts(world, _lab(world, "lab"))
    for name in COPIES:
        f = v[name]
        assert f.matched_seconds >= 10.0 and f.new_seconds <= 1.0, (name, f.matched_seconds, f.new_seconds)
        assert {Path(s.corpus_file).stem for s in f.segments} == {"pan"}
    for name in LOOK_ALIKE:
        assert v[name].matched_seconds == 0.0 and not v[name].segments


def test_an_index_on_the_one_phase_grid_is_pointed_out_and_mended(
        world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # What an earlier build sealed: every seed at the start of its second.
    monkeypatch.setattr(ShardSet, "seed_stagger", 1)
    ix = _lab(world, "old-lab")
    monkeypatch.undo()
    v = _verdicts(world, ix)
    # The failure this grid had: the copies find no seed and are counted new.
    assert all(v[n].matched_seconds == 0.0 and v[n].new_seconds > 10.0 for n in COPIES), \
        {n: (v[n].matched_seconds, v[n].new_seconds) for n in COPIES}
    with open_index(ix, readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 1
    capsys.readouterr()
    assert main(["doctor", "--index", str(ix)]) == 0
    out = capsys.readouterr().out
    assert "[warn] search shards" in out and "can miss short copies of fast-moving footage" in out
    assert main(["index", "--rebuild-shards", "--index", str(ix), "-q"]) == 0
    with open_index(ix, readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 0
    v = _verdicts(world, ix)
    assert all(v[n].matched_seconds >= 10.0 for n in COPIES)
    assert all(v[n].matched_seconds == 0.0 for n in LOOK_ALIKE)
