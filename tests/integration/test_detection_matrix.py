"""Every row of detection_matrix.toml, executed.

Each row's offered copy is generated from owned "masters" with PyAV + numpy (tests/manipulations.py).
The vendor side indexes the copies with default settings and exports manifests; the lab side indexes
the masters with the settings the row names; the comparison runs through overlap_desktop.api. A
"designed to detect" row must find the right owned file, the segment spans within 1 s, the speed
within 3% where speed changed, and the variant; a "not detected" row must report no segment at or
above the evidence floor. Rows are grouped by settings so each lab index and manifest is built once.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from tests import manipulations as m
from tests.footage import Scene
from tests.manipulations import Piece
from tests.rig import HandheldStill, RigEpisode

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
ROWS = {r["id"]: r for r in tomllib.loads((ROOT / "detection_matrix.toml").read_text("utf-8"))["row"]}

SIZE = (320, 240)
FPS = 24.0
CANVAS = (1200, 3600)


def scene(seed: int, **kw: Any) -> Scene:
    kw.setdefault("velocity", (25.0, 0.0))
    return Scene(seed, canvas_hw=CANVAS, **kw)


# Owned masters (the lab's corpus). A and B: 40 s at 24 fps; D: 30 s at 60 fps.
A, B, D = scene(11), scene(12), scene(14)
# Footage nobody owns.
NEW1, NEW2, NEW3 = scene(21), scene(22), scene(23)
# The same room as A, another part of it (A's camera never gets below y=565 on a 1200-high canvas).
A_OTHER_VIEW = scene(11, start_xy=(40.0, 650.0))
# Same-rig footage (fixed camera, one workspace): owned episode R, a fixed-camera recording F whose
# first half is owned, and a hand-held still S. Only the default settings group indexes them.
R, R_NEW, R_NOISY = RigEpisode(7, 1), RigEpisode(7, 2), RigEpisode(7, 3, arm_scale=1.5, noise=6.0)
F = RigEpisode(9, 1)
S, S_AGAIN = HandheldStill(3, 1), HandheldStill(3, 2)
RIG_MASTERS = ("R", "F", "S")

SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "--preset balanced": {"index.preset": "balanced"},
    "--preset thorough": {"index.preset": "thorough"},
    "--crop-edges bottom": {"index.crop_edges": "bottom"},
    "--crop-edges top": {"index.crop_edges": "top"},
    "--dihedral all": {"index.dihedral": "all"},
}


@dataclass
class Expect:
    """One expected segment: offered span -> owned span on master ``master`` (reversed: c0 > c1)."""

    master: str
    q0: float
    q1: float
    c0: float
    c1: float


@dataclass
class Recipe:
    make: Callable[[Path, dict[str, Path]], Path]
    expect: list[Expect] = field(default_factory=list)
    matched_seconds: float | None = None


def edit(pieces: list[Piece], *, transform: m.Transform | None = None, out_fps: float = FPS,
         size: tuple[int, int] = SIZE, codec: str = "libx264", suffix: str = ".mp4", **kw: Any
         ) -> Callable[[Path, dict[str, Path]], Path]:
    def make(dst: Path, masters: dict[str, Path]) -> Path:
        return m.write_edit(dst.with_suffix(suffix), pieces, out_fps=out_fps, size=size, transform=transform,
                            codec=codec, **kw)

    return make


def from_master(op: Callable[[Path, Path], Path], suffix: str = ".mp4") -> Callable[[Path, dict[str, Path]], Path]:
    def make(dst: Path, masters: dict[str, Path]) -> Path:
        return op(masters["A"], dst.with_suffix(suffix))

    return make


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


def _launder_mcap(dst: Path, masters: dict[str, Path]) -> Path:
    from tests import fixtures_recordings as rec  # written with the robotics readers

    frames = list(m.render_edit([Piece(A, 6.0, 20.0)], out_fps=FPS, size=SIZE))
    return rec.write_mcap_images(dst.with_suffix(".mcap"), frames, fps=FPS, encoding="jpeg")


def _rot270(img: Any) -> Any:
    """Turned 90 degrees clockwise (the bit-approximate path of the compare-time orientations)."""
    import numpy as np

    return np.ascontiguousarray(np.rot90(img, 3))


FULL_A = [Expect("A", 0, 40, 0, 40)]
SEG = [Expect("A", 0, 20, 5, 25)]  # the default 20 s piece starting 5 s into A
piece = [Piece(A, 5.0, 20.0)]

RECIPES: dict[str, Recipe] = {
    "identical-rename": Recipe(from_master(_copy), FULL_A),
    "reencode-h265-crf30": Recipe(from_master(lambda s, d: m.transcode(s, d, codec="libx265",
                                                                        options={"crf": "30", "preset": "ultrafast"})), FULL_A),
    "container-swap-mkv": Recipe(from_master(m.remux, ".mkv"), FULL_A),
    "trim-12s": Recipe(edit([Piece(A, 14.0, 12.0)]), [Expect("A", 0, 12, 14, 26)]),
    "trim-arbitrary-phase": Recipe(edit([Piece(A, 7.37, 20.0)]), [Expect("A", 0, 20, 7.37, 27.37)]),
    "splice-15s-plus-other": Recipe(edit([Piece(A, 5.0, 15.0), Piece(NEW1, 0.0, 15.0)]),
                                    [Expect("A", 0, 15, 5, 20)], matched_seconds=15.0),
    "merge-two-same": Recipe(edit([Piece(A, 2.0, 12.0), Piece(A, 25.0, 12.0)]),
                             [Expect("A", 0, 12, 2, 14), Expect("A", 12, 24, 25, 37)]),
    "merge-two-masters": Recipe(edit([Piece(A, 3.0, 12.0), Piece(B, 20.0, 12.0)]),
                                [Expect("A", 0, 12, 3, 15), Expect("B", 12, 24, 20, 32)]),
    "merge-owned-plus-new": Recipe(edit([Piece(A, 10.0, 15.0), Piece(NEW2, 0.0, 15.0)]),
                                   [Expect("A", 0, 15, 10, 25)], matched_seconds=15.0),
    "speed-0.5x": Recipe(edit([Piece(A, 5.0, 24.0, speed=0.5)]), [Expect("A", 0, 24, 5, 17)]),
    "speed-2x": Recipe(edit([Piece(A, 2.0, 15.0, speed=2.0)]), [Expect("A", 0, 15, 2, 32)]),
    "hflip": Recipe(edit(piece, transform=m.hflip), SEG),
    "crop-5pct": Recipe(edit(piece, transform=m.crop_centre(0.95)), SEG),
    "crop-15pct": Recipe(edit(piece, transform=m.crop_centre(0.85)), SEG),
    "crop-30pct": Recipe(edit(piece, transform=m.crop_centre(0.70)), SEG),
    "crop-40pct": Recipe(edit(piece, transform=m.crop_centre(0.60))),
    "crop-bottom-15": Recipe(edit(piece, transform=m.crop_edge("bottom", 0.15)), SEG),
    "crop-top-10": Recipe(edit(piece, transform=m.crop_edge("top", 0.10)), SEG),
    "crop-bottom-8-default": Recipe(edit(piece, transform=m.crop_edge("bottom", 0.08)), SEG),
    "crop-centre-8-default": Recipe(edit(piece, transform=m.crop_centre(0.92)), SEG),
    "crop-bottom-default-config": Recipe(edit(piece, transform=m.crop_edge("bottom", 0.15))),
    "letterbox-15pct": Recipe(edit(piece, transform=m.letterbox(0.15)), SEG),
    "watermark-corner": Recipe(edit(piece, transform=m.watermark(0.6)), SEG),
    "colorgrade": Recipe(edit(piece, transform=m.colorgrade()), SEG),
    "fps-resample-15": Recipe(edit(piece, out_fps=15.0), SEG),
    "launder-mcap": Recipe(_launder_mcap, [Expect("A", 0, 20, 6, 26)]),
    "unrelated-footage": Recipe(edit([Piece(NEW3, 0.0, 20.0)])),
    "same-scene-different-view": Recipe(edit([Piece(A_OTHER_VIEW, 0.0, 20.0)])),
    "clip-below-floor": Recipe(edit([Piece(A, 10.0, 6.0)])),
    "reverse": Recipe(edit([Piece(A, 30.0, 20.0, speed=-1.0)]), [Expect("A", 0, 20, 30, 10)]),
    "rotate-90": Recipe(edit(piece, transform=m.rot90), SEG),
    "rotate-180": Recipe(edit(piece, transform=m.rot180), SEG),
    "vflip": Recipe(edit(piece, transform=m.vflip), SEG),
    "rotate-270": Recipe(edit(piece, transform=_rot270), SEG),
    "crop-offcentre": Recipe(edit(piece, transform=m.crop_window(0.85, (0.1, 0.15))), SEG),
    "downscale-half": Recipe(edit(piece, transform=lambda img: m.resize(img, 160, 120)), SEG),
    "fps-60-to-24": Recipe(edit([Piece(D, 3.0, 20.0, master_fps=60.0)]), [Expect("D", 0, 20, 3, 23)]),
    "grayscale": Recipe(edit(piece, transform=m.grayscale), SEG),
    "reencode-vp9-low": Recipe(edit(piece, codec="libvpx-vp9", suffix=".webm", bit_rate=120_000), SEG),
    "reencode-av1-low": Recipe(edit(piece, codec="libsvtav1", suffix=".mkv", bit_rate=120_000,
                                    options={"preset": "12"}), SEG),
    "crop-60pct-extended": Recipe(edit(piece, transform=m.crop_centre(0.60)), SEG),
    "noise-blur": Recipe(edit(piece, transform=m.blur_noise()), SEG),
    "picture-in-picture": Recipe(edit(piece, transform=m.picture_in_picture(NEW1))),
    "same-rig-new-episode": Recipe(edit([Piece(R_NEW, 0.0, 30.0)])),
    "same-rig-sensor-noise": Recipe(edit([Piece(R_NOISY, 0.0, 30.0)])),
    "fixed-camera-later": Recipe(edit([Piece(F, 32.0, 28.0)])),
    "still-rerecorded": Recipe(edit([Piece(S_AGAIN, 0.0, 20.0)])),
    "same-rig-reencode": Recipe(edit([Piece(R, 5.0, 20.0)], options={"crf": "30", "preset": "ultrafast"}),
                                [Expect("R", 0, 20, 5, 25)]),
    "same-rig-half-speed": Recipe(edit([Piece(R, 4.0, 24.0, speed=0.5)]), [Expect("R", 0, 24, 4, 16)]),
    "same-rig-mirrored": Recipe(edit([Piece(R, 5.0, 20.0)], transform=m.hflip), [Expect("R", 0, 20, 5, 25)]),
    "same-rig-crop-92": Recipe(edit([Piece(R, 5.0, 20.0)], transform=m.crop_centre(0.92)),
                               [Expect("R", 0, 20, 5, 25)]),
    # Issue 19: orientations searched at compare time, with turned look-alikes that must not match.
    "same-rig-new-episode-rotate-90": Recipe(edit([Piece(R_NEW, 0.0, 20.0)], transform=m.rot90)),
    "same-rig-new-episode-rotate-180": Recipe(edit([Piece(R_NEW, 0.0, 20.0)], transform=m.rot180)),
    "same-rig-new-episode-vflip": Recipe(edit([Piece(R_NEW, 0.0, 20.0)], transform=m.vflip)),
    "same-rig-rotate-90": Recipe(edit([Piece(R, 5.0, 20.0)], transform=m.rot90), [Expect("R", 0, 20, 5, 25)]),
    "same-rig-rotate-270": Recipe(edit([Piece(R, 5.0, 20.0)], transform=_rot270)),
}


def test_every_row_has_a_recipe() -> None:
    assert set(RECIPES) == set(ROWS)


# --------------------------------------------------------------------------- session fixtures


@pytest.fixture(scope="session")
def masters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("matrix-owned")
    out = {}
    for name, sc, dur, fps in (("A", A, 40.0, FPS), ("B", B, 40.0, FPS), ("D", D, 30.0, 60.0),
                               ("R", R, 30.0, FPS), ("F", F, 30.0, FPS), ("S", S, 20.0, FPS)):
        out[name] = m.write_edit(root / f"master_{name}.mp4", [Piece(sc, 0.0, dur, master_fps=fps)],
                                 out_fps=fps, size=SIZE)
    return out


@pytest.fixture(scope="session")
def offered(tmp_path_factory: pytest.TempPathFactory, masters: dict[str, Path]) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("matrix-offered")
    return {rid: recipe.make(root / f"offer_{rid}", masters) for rid, recipe in RECIPES.items()}


@pytest.fixture(scope="session")
def vendor_index(tmp_path_factory: pytest.TempPathFactory, offered: dict[str, Path]) -> Path:
    idx = tmp_path_factory.mktemp("matrix-vendor-index")
    cfg = api.load_config({"index.path": str(idx)})
    summary = api.index_paths(list(offered.values()), index=idx, config=cfg)
    assert not summary.failed, summary.failed
    return idx


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory, masters: dict[str, Path], offered: dict[str, Path],
            vendor_index: Path) -> dict[str, Any]:
    """One lab index and one comparison per settings group; returns row id -> FileResult."""
    out: dict[str, Any] = {}
    groups: dict[str, list[str]] = {}
    for rid, row in ROWS.items():
        groups.setdefault(str(row["settings"]), []).append(rid)
    for settings, rids in groups.items():
        work = tmp_path_factory.mktemp("matrix-" + settings.strip("-").replace(" ", "-"))
        lab = work / "lab-index"
        cfg = api.load_config({"index.path": str(lab), **SETTINGS[settings]})
        owned = [p for k, p in masters.items() if settings == "default" or k not in RIG_MASTERS]
        summary = api.index_paths(owned, index=lab, config=cfg)
        assert not summary.failed, summary.failed
        manifest = work / "offer.ovlm"
        with api.open_index(vendor_index) as vidx:
            api.export_manifest(vidx, manifest, paths=[offered[r] for r in rids], label=f"matrix {settings}")
        report = api.compare(manifest, lab, config=cfg)
        by_name = {Path(f.query_file).name: f for f in report.files}
        for rid in rids:
            name = offered[rid].name
            assert name in by_name, f"{rid}: {name} missing from the report ({sorted(by_name)})"
            out[rid] = by_name[name]
    return out


# --------------------------------------------------------------------------- the rows


def _check_detected(rid: str, result: Any, recipe: Recipe, row: dict[str, Any]) -> None:
    segs = result.segments
    assert segs, f"{rid}: nothing matched (below floor: {len(result.below_floor)})"
    for exp in recipe.expect:
        master = f"master_{exp.master}.mp4"
        cands = [s for s in segs if Path(s.corpus_file).name == master]
        assert cands, f"{rid}: no segment against {master}; got {[Path(s.corpus_file).name for s in segs]}"
        best = min(cands, key=lambda s: abs(s.query_start - exp.q0) + abs(s.query_end - exp.q1)
                   + abs(s.corpus_start - exp.c0) + abs(s.corpus_end - exp.c1))
        got = (best.query_start, best.query_end, best.corpus_start, best.corpus_end)
        want = (exp.q0, exp.q1, exp.c0, exp.c1)
        assert all(abs(g - w) <= 1.0 for g, w in zip(got, want)), f"{rid}: span {got} != {want} (±1 s)"
        if "expect_speed" in row:
            assert best.speed == pytest.approx(row["expect_speed"], rel=0.03), f"{rid}: speed {best.speed}"
        else:
            assert best.speed == pytest.approx(1.0, rel=0.03), f"{rid}: speed {best.speed}"
        v = best.variant
        if row.get("expect_mirrored"):
            assert v.mirrored, f"{rid}: variant {v} not reported as mirrored"
        if row.get("expect_crop"):
            assert v.crop < 1.0, f"{rid}: variant {v} not reported as a crop"
        if "expect_edge" in row:
            assert v.edge == row["expect_edge"], f"{rid}: variant {v} not reported as {row['expect_edge']} edge crop"
        if row.get("expect_rotation"):
            assert v.rotation != 0, f"{rid}: variant {v} not reported as rotated"
    if recipe.matched_seconds is not None:
        assert result.matched_seconds == pytest.approx(recipe.matched_seconds, abs=1.5), (
            f"{rid}: matched {result.matched_seconds} s, expected only the owned {recipe.matched_seconds} s")


@pytest.mark.slow
@pytest.mark.parametrize("rid", list(ROWS))
def test_row(rid: str, reports: dict[str, Any]) -> None:
    row, recipe, result = ROWS[rid], RECIPES[rid], reports[rid]
    if row["status"] == "designed to detect":
        _check_detected(rid, result, recipe, row)
    else:
        assert not result.segments, (
            f"{rid}: claimed 'not detected' but matched "
            f"{[(Path(s.corpus_file).name, round(s.query_start, 1), round(s.query_end, 1)) for s in result.segments]}")
        if rid == "clip-below-floor":
            # A short clip is not counted, but the evidence is listed, not hidden.
            assert any(Path(s.corpus_file).name == "master_A.mp4" for s in result.below_floor), (
                f"{rid}: below-floor evidence missing")
