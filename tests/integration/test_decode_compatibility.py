"""Libraries indexed before the indexing decode's approximations meet offers made after them.

Issue 19 made the indexing reader approximate (H.264/H.265 decoded without deblocking, a sampled
non-reference frame taken from its decoded neighbour, luma straight from the scaler) without
changing ``prep_id``, because the bits it moves (bench/RESULTS.md, "Three bounded approximations")
are fewer than a re-encode moves. This checks that claim end to end on the footage labs buy:
camera-encoded episodes of one fixed-camera rig, indexed the old way (an exact decode, luma
weighted from RGB) on one side and the new way on the other, in both directions. True copies
must be found; new episodes of the same rig must not gain a single owned second.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop import api
from overlap_desktop.core.ingest.pdq_batch import hamming
from tests import manipulations as m
from tests.manipulations import Piece
from tests.rig import RigEpisode

SIZE = (192, 144)
FPS = 30.0
ENC: dict[str, Any] = {"options": {"preset": "veryfast", "crf": "23"}}  # B-frames, deblocking
DUR = 16.0
LIB = {f"rig1-ep{e:02d}": RigEpisode(1, e) for e in range(1, 5)}
COPIES = {  # offered name: (owned master, transform)
    "ctl-reencode-ep02": ("rig1-ep02", None),
    "ctl-mirror-ep03": ("rig1-ep03", m.hflip),
}
NEW_EPISODES = [f"neg-rig1-ep{e:02d}" for e in (11, 12, 13)]


@contextmanager
def _before_issue_19() -> Iterator[None]:
    """Index as the versions before issue 19 did: every used frame decoded exactly, RGB luma."""
    from overlap_desktop.core.ingest import decode_plan
    from overlap_desktop.core.ingest.readers import video

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(video, "FAST_DECODE_CODECS", ())
        mp.setattr(video, "LUMA_CODECS", ())
        mp.setattr(decode_plan, "NEIGHBOUR_MAX_S", 0.0)
        yield


def _index(folder: Path, index: Path, *, old: bool) -> Path:
    # One worker: this process, so the patches of _before_issue_19 apply.
    cfg = api.load_config({"index.path": str(index), "index.workers": 1})
    if old:
        with _before_issue_19():
            assert not api.index_paths([folder], index=index, config=cfg).failed
    else:
        assert not api.index_paths([folder], index=index, config=cfg).failed
    return index


@pytest.fixture(scope="module")
def footage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("decode-compat")
    lib, offer = root / "library", root / "offer"
    m.write_recordings(lib, LIB, duration=DUR, fps=FPS, size=SIZE, **ENC)
    m.write_recordings(offer, {name: RigEpisode(1, int(name[-2:])) for name in NEW_EPISODES}, duration=DUR,
                       fps=FPS, size=SIZE, **ENC)
    for name, (master, transform) in COPIES.items():
        m.write_edit(offer / f"{name}.mp4", [Piece(LIB[master], 2.0, 10.0, master_fps=FPS)], out_fps=FPS,
                     size=SIZE, transform=transform, **ENC)
    return {"root": root, "library": lib, "offer": offer}


@pytest.mark.parametrize(("lab_old", "vendor_old"), [(True, False), (False, True)],
                         ids=["old-library-new-offer", "new-library-old-offer"])
def test_copies_found_and_new_episodes_not_across_versions(footage: dict[str, Path], lab_old: bool,
                                                           vendor_old: bool) -> None:
    root = footage["root"] / ("a" if lab_old else "b")
    lab = _index(footage["library"], root / "lab", old=lab_old)
    vendor = _index(footage["offer"], root / "vendor", old=vendor_old)
    manifest = root / "offer.ovlm"
    with api.open_index(vendor) as v:
        api.export_manifest(v, manifest, label="cross-version offer")
    report = api.compare(manifest, lab, config=api.load_config({"index.path": str(lab)}))
    by_name = {Path(f.query_file).stem: f for f in report.files}
    for name, (master, _t) in COPIES.items():
        f = by_name[name]
        hits = [s for s in f.segments if Path(s.corpus_file).stem == master]
        assert hits, f"{name}: not found ({f.segments}, weak {f.weak})"
        best = max(hits, key=lambda s: s.query_duration)
        assert best.query_duration >= 8.0 and abs((best.corpus_start - best.query_start) - 2.0) <= 1.0, best
        assert best.chance is not None and best.chance <= 0.01
        assert all(Path(s.corpus_file).stem == master for s in f.segments), f.segments
    # The look-alikes: new episodes of the same rig own nothing.
    falsely = {n: [(Path(s.corpus_file).stem, s.query_start, s.query_end) for s in by_name[n].segments]
               for n in NEW_EPISODES if by_name[n].segments}
    assert not falsely, falsely
    assert sum(by_name[n].matched_seconds for n in NEW_EPISODES) == 0.0


def _codes(index: Path) -> dict[str, np.ndarray]:
    with api.open_index(index, readonly=True) as idx:
        return {Path(f.path).stem: fp.codes[fp.quality >= 50] for f, _key, fp in idx.streams()}


def test_the_two_ways_of_indexing_differ_by_a_few_bits(footage: dict[str, Path]) -> None:
    """The setup itself: the old way really is another decode (bits move), but only a few."""
    root = footage["root"] / "c"
    old = _codes(_index(footage["library"], root / "old", old=True))
    new = _codes(_index(footage["library"], root / "new", old=False))
    assert old.keys() == new.keys() == set(LIB)
    d = np.concatenate([hamming(old[k], new[k]).ravel() for k in LIB])
    assert d.any(), "the approximations must move some bits on camera-encoded H.264"
    print(f"old vs new indexing: {d.mean():.2f} bits mean, max {d.max()}")
    assert d.mean() <= 8.0, d.mean()
