"""The audit settles the quote's "can't tell" with both sides' pixels, end to end: a rendered
scripted twin (the owned arm motion, objects moved) that the quote reads can't tell ends new at
the audit, while a true copy of one of the owned episodes ends owned and nothing is falsely owned;
a near twin the fingerprints alone count owned (5-8 bits from an owned layout, as close as a
re-encode) ends new on the pixels' second opinion, and the true copy's owned seconds are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.index.store import open_index
from tests.manipulations import Piece
from tests.rig import RigEpisode
from tests.verdict_suites import RIG_DUR, RIG_FPS, RIG_SIZE, Offer, Suite, build


def _ep(trajectory: int, layout: int) -> RigEpisode:
    """A scripted episode of the rig (as the verdict suites render them)."""
    return RigEpisode(5, trajectory, layout=layout, home_s=2.0)


def _whole(t: int, lay: int, **kw: Any) -> Offer:
    return Offer([Piece(_ep(t, lay), 0.0, RIG_DUR, master_fps=RIG_FPS)], RIG_SIZE, RIG_FPS, **kw)


SUITE = Suite("twins", {f"t1-l{lay}": (_ep(1, lay), 0.0, RIG_DUR, RIG_SIZE, RIG_FPS) for lay in (1, 2, 3)},
              {"neg-t1-l8": _whole(1, 8), "ctl-t1-l2": _whole(1, 2, copy_of="t1-l2"), "limit-t1-l5": _whole(1, 5)})


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit-twins")
    build(SUITE, root)
    return root


def test_twin_quoted_cant_tell_ends_new_and_the_copy_ends_owned(suite_root: Path, tmp_path: Path) -> None:
    cfg = api.load_config({"index.path": str(suite_root / "lab-index")})
    with open_index(suite_root / "lab-index", config=cfg, readonly=True) as idx:
        r = audit_delivery(suite_root / "offer.ovlm", suite_root / "offer", index=idx, config=cfg,
                           state_dir=tmp_path)
    assert r.ok and r.settle == "settled with pixels"
    twin = next(f for f in r.files if f.name == "neg-t1-l8.mp4")
    copy = next(f for f in r.files if f.name == "ctl-t1-l2.mp4")
    assert twin.quoted is not None and twin.final is not None and copy.final is not None
    assert twin.quoted.cant_tell >= 5.0 and twin.quoted.owned == 0.0
    assert twin.final.owned == 0.0 and twin.final.cant_tell < twin.quoted.cant_tell
    assert twin.final.new >= twin.quoted.new + 5.0
    assert any(v == "new" for _, _, v, _ in twin.settled)
    assert copy.final.owned >= 0.8 * RIG_DUR


def test_a_near_twin_counted_owned_ends_new_and_the_copy_stays_owned(suite_root: Path, tmp_path: Path) -> None:
    cfg = api.load_config({"index.path": str(suite_root / "lab-index")})
    with open_index(suite_root / "lab-index", config=cfg, readonly=True) as idx:
        r = audit_delivery(suite_root / "offer.ovlm", suite_root / "offer", index=idx, config=cfg,
                           state_dir=tmp_path)
    near = next(f for f in r.files if f.name == "limit-t1-l5.mp4")
    copy = next(f for f in r.files if f.name == "ctl-t1-l2.mp4")
    assert near.quoted is not None and near.final is not None and copy.final is not None and copy.quoted is not None
    assert near.quoted.owned >= 5.0  # the measured limit of fingerprints: this twin reads owned
    assert near.final.owned == 0.0 and near.final.new >= near.quoted.owned and near.changed
    assert any(v == "new" and "counted owned" in why for _, _, v, why in near.settled)
    assert copy.final.owned >= copy.quoted.owned - 0.5
