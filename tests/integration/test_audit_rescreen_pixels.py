"""The audit's re-screen with the delivered pixels: a corner crop the quote's pixel-free screen
cannot show is found owned at delivery, through the crop search riding on the audit's decode;
a later moment of the same camera cut the same way stays not owned.

Library: 40 s of a real fixed camera (tests/data/fixedcam/room-people.mp4). Delivery: 20 s of it
cut to a 95% window against a corner, and the look-alike (a later moment, the same cut).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.store import open_index
from tests import manipulations as m
from tests.manipulations import Piece
from tests.verdict_suites import DATA, RealClip

SIZE = (384, 216)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("audit-pixels")
    room = RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    m.write_edit(root / "lib" / "room.mp4", [Piece(room, 0.0, 40.0, master_fps=10.0)], out_fps=10.0, size=SIZE)
    cfg = api.load_config({"index.path": str(root / "lab")})
    assert not api.index_paths([root / "lib"], index=root / "lab", config=cfg).failed
    cut = m.crop_window(0.95, (0.0, 0.0))
    for name, start in (("copy-corner95.mp4", 10.0), ("later-corner95.mp4", 45.0)):
        m.write_edit(root / "delivery" / name, [Piece(room, start, 20.0, master_fps=10.0)], out_fps=10.0,
                     size=SIZE, transform=cut, options={"crf": "28"})
    assert main(["index", str(root / "delivery"), "--index", str(root / "vendor"), "-q"]) == 0
    assert main(["export", "-o", str(root / "quote.ovlm"), "--index", str(root / "vendor"), "--no-sign",
                 "-q"]) == 0
    return {"root": root, "lab": root / "lab", "delivery": root / "delivery", "quote": root / "quote.ovlm"}


def test_a_corner_crop_is_found_owned_at_delivery_and_its_look_alike_is_not(world: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    cfg = api.load_config({"index.path": str(world["lab"])})
    with open_index(world["lab"], config=cfg, readonly=True) as idx:
        r = audit_delivery(world["quote"], world["delivery"], index=idx, config=cfg, state_dir=tmp_path)
        plain = audit_delivery(world["quote"], world["delivery"], index=idx, config=cfg, crops=False,
                               state_dir=tmp_path / "plain")
    assert r.ok  # an honest quote: bytes and fingerprints hold
    copy = next(f for f in r.files if f.name == "copy-corner95.mp4")
    later = next(f for f in r.files if f.name == "later-corner95.mp4")
    assert copy.quoted is not None and copy.final is not None and later.final is not None
    # The pixel-free screen (the quote's, and the delivered codes without crops) does not claim it...
    assert copy.quoted.owned < 5.0
    assert next(f for f in plain.files if f.name == copy.name).final.owned < 5.0  # type: ignore[union-attr]
    # ...the delivered frames' crops do, and the file's verdict changed.
    assert copy.final.owned >= 10.0 and copy.crop_seconds >= 10.0 and copy.changed
    assert "room.mp4" in copy.copy_of
    assert later.final.owned == 0.0 and later.crop_seconds == 0.0
