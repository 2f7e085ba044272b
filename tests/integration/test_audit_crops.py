"""Query-side crop search on real footage: copies cut past the quote's reach are found at delivery,
later moments of the same camera cut the same way are not.

Library: 40 s of a real fixed camera (tests/data/fixedcam/room-people.mp4), indexed with the
default (fast) ladder. Offers: 20 s of it cut to a 95% window against a corner (the ladder's
rungs are centred), and shrunk into a corner of other footage (picture in picture); each has a
look-alike, a later moment of the same camera with the same edit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.core.audit.crops import crop_tap, search_crops
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.ingest.readers import reader_for
from tests import manipulations as m
from tests import verdict_suites as vs
from tests.manipulations import Piece
from tests.verdict_suites import DATA, RealClip

SIZE = (384, 216)
OFFERS = {
    "copy-corner95": (10.0, m.crop_window(0.95, (0.0, 0.0)), True),
    "copy-pip": (10.0, "pip", True),
    "later-corner95": (45.0, m.crop_window(0.95, (0.0, 0.0)), False),
    "later-pip": (45.0, "pip", False),
}


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[api.Segment]]:
    root = tmp_path_factory.mktemp("crops")
    room = RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    other = RealClip(str(DATA / "video" / "nasa_13013.mp4"))
    m.write_edit(root / "lib" / "room.mp4", [Piece(room, 0.0, 40.0, master_fps=10.0)], out_fps=10.0, size=SIZE)
    cfg = api.load_config({"index.path": str(root / "idx")})
    assert not api.index_paths([root / "lib"], index=root / "idx", config=cfg).failed
    tap = crop_tap(cfg)
    for name, (start, edit, _) in OFFERS.items():
        tf = m.picture_in_picture(other) if edit == "pip" else edit
        path = m.write_edit(root / "offer" / f"{name}.mp4", [Piece(room, start, 20.0, master_fps=10.0)],
                            out_fps=10.0, size=SIZE, transform=tf, options={"crf": "28"})
        reader = reader_for(path)
        for info in reader.streams(path):  # the audit's decode pass, as it feeds the tap
            tap.begin(name, path, info)
            for frame in reader.frames(path, info):
                tap.frame(frame)
            tap.end()
    with open_index(root / "idx", config=cfg, create=False) as index:
        return search_crops(tap, index, config=cfg)


@pytest.mark.parametrize("name", [n for n, o in OFFERS.items() if o[2]])
def test_cut_copy_is_found_with_its_edit(found: dict[str, list[api.Segment]], name: str) -> None:
    segs = found.get(name, [])
    assert segs, f"{name}: no copy found"
    assert {Path(s.corpus_file).name for s in segs} == {"room.mp4"}
    assert max(s.query_end - s.query_start for s in segs) >= 10.0
    for s in segs:  # on the true line: offered t at owned 10 + t
        assert s.corpus_start - s.query_start == pytest.approx(10.0, abs=0.6)
        assert s.chance is not None and s.chance <= 1e-6
        assert s.query_stream == "v:0"
    if name == "copy-corner95":
        assert {s.variant.describe() for s in segs} == {"off-centre cropped to 95%"}
    else:  # the whole owned picture, shrunk: no crop to report
        assert all(s.variant.is_identity for s in segs)


@pytest.mark.parametrize("name", [n for n, o in OFFERS.items() if not o[2]])
def test_later_moment_cut_the_same_way_stays_unmatched(found: dict[str, list[api.Segment]], name: str) -> None:
    assert found.get(name, []) == []


def test_scripted_replays_are_never_owned_through_a_window(tmp_path: Path) -> None:
    """The rendered rig's verdict suite (tests/verdict_suites.py): repeats of an owned arm motion (blocks
    moved) that the quote leaves "can't tell" must not become owned because a window a little off the
    whole frame lines up with one owned episode; a copy's windows may only find its own source."""
    suite = vs.mujoco()
    vs.build(suite, tmp_path)
    cfg = api.load_config({"index.path": str(tmp_path / "lab-index")})
    tap = crop_tap(cfg)
    for path in sorted((tmp_path / "offer").glob("*.mp4")):
        reader = reader_for(path)
        for info in reader.streams(path):
            tap.begin(path.stem, path, info)
            for frame in reader.frames(path, info):
                tap.frame(frame)
            tap.end()
    with open_index(tmp_path / "lab-index", config=cfg, create=False) as index:
        found = search_crops(tap, index, config=cfg)
    sources = {name: {Path(s.corpus_file).stem for s in segs} for name, segs in found.items()}
    wrong = {name: src for name, src in sources.items()
             if suite.offers[name].copy_of is None or src != {suite.offers[name].copy_of}}
    assert wrong == {}
