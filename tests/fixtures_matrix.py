"""The detection matrix's footage, indexes and comparisons (tests/integration/test_detection_matrix*.py).

Each row of detection_matrix.toml has a recipe here that makes its offered copy from owned
"masters" with PyAV + numpy (tests/manipulations.py). The vendor side indexes the copies with
default settings and exports manifests; the lab side indexes the masters with the settings the
row names; the comparison runs through overlap_desktop.api.

The rows are split into two parts (:data:`PARTS`), each tested by its own module, so that
pytest-xdist (``--dist loadfile``) runs the two halves on two workers at once. Work both parts
need is done once per run, not once per worker: the master files and the default-settings lab
index are built by whichever worker asks first, in the run's shared temporary folder, while the
other worker makes its own offered copies (see :func:`_shared`). Within a part, rows are grouped
by settings, so each lab index and manifest is built once. Nothing about a row changes with the
part it is in: the same copy, the same lab index, the same assertions.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.core.match.verdicts import verdict_problems
from tests import manipulations as m
from tests.footage import Scene
from tests.manipulations import Piece
from tests.rig import HandheldStill, RigEpisode
from tests.verdict_suites import DATA, Loop, RealClip

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
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
# Real near-static footage (a car park, cars pass twice in its first 15 s, tests/data/hard) and a
# looping pattern (15 repetitions of a 6 s loop), owned; only the default settings group indexes them.
CAR = RealClip(str(DATA / "hard" / "car-park-overhead.mp4"))


def _loop(seed: int, objects: int = 4) -> Loop:
    return Loop(scene(seed, objects=objects), 6.0)


LOOP, LOOP_OTHER, LOOP_MORE_DISCS = _loop(41), _loop(42), _loop(41, objects=6)
DEFAULT_ONLY_MASTERS = (*RIG_MASTERS, "C", "L")

SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "--preset balanced": {"index.preset": "balanced"},
    "--preset thorough": {"index.preset": "thorough"},
    "--crop-edges bottom": {"index.crop_edges": "bottom"},
    "--crop-edges top": {"index.crop_edges": "top"},
    "--dihedral all": {"index.dihedral": "all"},
    "--aspect-crops 0.75": {"index.aspect_crops": "0.75"},
}


@dataclass
class Expect:
    """One expected segment: offered span -> owned span on master ``master`` (reversed: c0 > c1)."""

    master: str
    q0: float
    q1: float
    c0: float
    c1: float
    #: The owned master repeats itself with this period (s): the span may be any repetition.
    period: float = 0.0


@dataclass
class Recipe:
    make: Callable[[Path, dict[str, Path]], Path]
    expect: list[Expect] = field(default_factory=list)
    matched_seconds: float | None = None
    #: Streams of the offered item that must match nothing (another episode in the same container).
    not_owned: tuple[str, ...] = ()


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


def _repack(kind: str, *, stated_rate: float = FPS, source: Any = R, start: float = 5.0,
            seconds: float = 12.0) -> Callable[[Path, dict[str, Path]], Path]:
    """``seconds`` of owned footage (the rig episode R, from ``start``) re-packed as a robot dataset
    the way its own tools write it (tests/robotdata.py); a container holding several episodes also holds
    12 s of another episode of the same rig (R_NEW), which must stay unowned. ``stated_rate``: the
    rate robomimic's env_args states (the vendor indexes the others with ``index.frame_rate`` = FPS)."""

    def make(dst: Path, masters: dict[str, Path]) -> Path:
        import numpy as np

        from tests import robotdata as rd

        owned = np.stack(list(m.render_edit([Piece(source, start, seconds)], out_fps=FPS, size=SIZE)))
        other = np.stack(list(m.render_edit([Piece(R_NEW, 0.0, 12.0)], out_fps=FPS, size=SIZE)))
        if kind.startswith("aloha"):
            frames = other if kind.endswith("new") else owned
            # ALOHA names files by episode; distinct names keep the rows apart in one manifest.
            number = {"aloha": 1, "aloha-jpeg": 2}.get(kind, 3)
            return rd.write_aloha(dst / f"episode_{number}.hdf5", {"cam_high": frames},
                                  compress=kind == "aloha-jpeg")
        if kind == "robomimic":
            return rd.write_robomimic(dst.with_suffix(".hdf5"), [{"agentview_image": owned},
                                                                 {"agentview_image": other}],
                                      control_freq=stated_rate)
        if kind == "rlds":
            return rd.write_rlds(dst / "1.0.0", [{"image": owned}, {"image": other}])
        if kind == "zarr":
            return rd.write_zarr(dst.with_suffix(".zarr"), [{"camera0_rgb": owned}, {"camera0_rgb": other}])
        return rd.write_lerobot_images(dst, [{"observation.images.top": owned},
                                             {"observation.images.top": other}], fps=FPS)

    return make


def _rot270(img: Any) -> Any:
    """Turned 90 degrees clockwise (the bit-approximate path of the compare-time orientations)."""
    import numpy as np

    return np.ascontiguousarray(np.rot90(img, 3))


FULL_A = [Expect("A", 0, 40, 0, 40)]
def _to_square(img: Any) -> Any:
    """The centre square of a 4:3 picture (75% of its width at full height)."""
    import numpy as np

    h, w = img.shape[:2]
    return np.ascontiguousarray(img[:, (w - h) // 2:(w - h) // 2 + h])


def _tiled(left: Any, right: Any, start: float = 5.0) -> Callable[[Path, dict[str, Path]], Path]:
    """20 s of two scenes side by side in one picture, as act-plus-plus's compress_data.py writes an
    episode's cameras (``np.concatenate(all_cam_images, axis=1)``): 640x240, two 4:3 tiles."""

    def make(dst: Path, masters: dict[str, Path]) -> Path:
        import numpy as np

        from tests.footage import write_video

        a = m.render_edit([Piece(left, start, 20.0)], out_fps=FPS, size=SIZE)
        b = m.render_edit([Piece(right, start, 20.0)], out_fps=FPS, size=SIZE)
        return write_video(dst.with_suffix(".mp4"), [np.concatenate([x, y], axis=1) for x, y in zip(a, b)],
                           fps=FPS)

    return make


def _grid(scenes: tuple[Any, Any, Any, Any]) -> Callable[[Path, dict[str, Path]], Path]:
    """20 s of four scenes in a 2x2 grid (640x480: four 320x240 quarters), a preview layout."""

    def make(dst: Path, masters: dict[str, Path]) -> Path:
        import numpy as np

        from tests.footage import write_video

        quads = [m.render_edit([Piece(sc, 5.0, 20.0)], out_fps=FPS, size=SIZE) for sc in scenes]
        frames = [np.concatenate([np.concatenate([a, b], axis=1), np.concatenate([c, d], axis=1)], axis=0)
                  for a, b, c, d in zip(*quads)]
        return write_video(dst.with_suffix(".mp4"), frames, fps=FPS)

    return make


SEG = [Expect("A", 0, 20, 5, 25)]  # the default 20 s piece starting 5 s into A
piece = [Piece(A, 5.0, 20.0)]
# Rows that offer the same copy (with other settings or another expectation) share one recipe
# function: the copy is made once and copied for the second row (see _part_reports).
_CROP_BOTTOM_15 = edit(piece, transform=m.crop_edge("bottom", 0.15))
_CROP_CENTRE_60 = edit(piece, transform=m.crop_centre(0.60))

RECIPES: dict[str, Recipe] = {
    "identical-rename": Recipe(from_master(_copy), FULL_A),
    "reencode-h265-crf30": Recipe(from_master(lambda s, d: m.transcode(
        s, d, codec="libx265", options={"crf": "30", "preset": "ultrafast"})), FULL_A),
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
    "crop-40pct": Recipe(_CROP_CENTRE_60),
    "crop-bottom-15": Recipe(_CROP_BOTTOM_15, SEG),
    "crop-top-10": Recipe(edit(piece, transform=m.crop_edge("top", 0.10)), SEG),
    "crop-bottom-8-default": Recipe(edit(piece, transform=m.crop_edge("bottom", 0.08)), SEG),
    "crop-centre-8-default": Recipe(edit(piece, transform=m.crop_centre(0.92)), SEG),
    "crop-bottom-default-config": Recipe(_CROP_BOTTOM_15),
    "letterbox-15pct": Recipe(edit(piece, transform=m.letterbox(0.15)), SEG),
    "watermark-corner": Recipe(edit(piece, transform=m.watermark(0.6)), SEG),
    "colorgrade": Recipe(edit(piece, transform=m.colorgrade()), SEG),
    "fps-resample-15": Recipe(edit(piece, out_fps=15.0), SEG),
    "launder-mcap": Recipe(_launder_mcap, [Expect("A", 0, 20, 6, 26)]),
    "unrelated-footage": Recipe(edit([Piece(NEW3, 0.0, 20.0)])),
    "same-scene-different-view": Recipe(edit([Piece(A_OTHER_VIEW, 0.0, 20.0)])),
    "clip-below-floor": Recipe(edit([Piece(A, 10.0, 6.0)])),
    "hflip-9s-below-floor": Recipe(edit([Piece(A, 5.0, 9.0)], transform=m.hflip), [Expect("A", 0, 9, 5, 14)]),
    "hflip-9s-other-view": Recipe(edit([Piece(A_OTHER_VIEW, 0.0, 9.0)], transform=m.hflip)),
    "reverse": Recipe(edit([Piece(A, 30.0, 20.0, speed=-1.0)]), [Expect("A", 0, 20, 30, 10)]),
    "rotate-90": Recipe(edit(piece, transform=m.rot90), SEG),
    "rotate-180": Recipe(edit(piece, transform=m.rot180), SEG),
    "vflip": Recipe(edit(piece, transform=m.vflip), SEG),
    "rotate-270": Recipe(edit(piece, transform=_rot270), SEG),
    "crop-offcentre": Recipe(edit(piece, transform=m.crop_window(0.85, (0.1, 0.15))), SEG),
    "downscale-half": Recipe(edit(piece, transform=lambda img: m.resize(img, 160, 120)), SEG),
    "fps-60-to-24": Recipe(edit([Piece(D, 3.0, 20.0, master_fps=60.0)]), [Expect("D", 0, 20, 3, 23)]),
    "grayscale": Recipe(edit(piece, transform=m.grayscale), SEG),
    # libvpx's "good" quality at its fastest speed (cpu-used 5): half the encoding CPU of its
    # default speed, at the same 120 kbit/s target (the file comes out about 5% larger).
    "reencode-vp9-low": Recipe(edit(piece, codec="libvpx-vp9", suffix=".webm", bit_rate=120_000,
                                    options={"deadline": "good", "cpu-used": "5"}), SEG),
    "reencode-av1-low": Recipe(edit(piece, codec="libsvtav1", suffix=".mkv", bit_rate=120_000,
                                    options={"preset": "12"}), SEG),
    "crop-60pct-extended": Recipe(_CROP_CENTRE_60, SEG),
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
    # Robot datasets (issue 32): owned rig footage re-packed as each container is found at speed 1.00;
    # the other episode of the same rig in the same container is not.
    "launder-aloha-hdf5": Recipe(_repack("aloha"), [Expect("R", 0, 12, 5, 17)]),
    "launder-aloha-jpeg": Recipe(_repack("aloha-jpeg"), [Expect("R", 0, 12, 5, 17)]),
    "launder-robomimic": Recipe(_repack("robomimic"), [Expect("R", 0, 12, 5, 17)],
                                not_owned=("data/demo_1/obs/agentview_image",)),
    "launder-rlds": Recipe(_repack("rlds"), [Expect("R", 0, 12, 5, 17)],
                           not_owned=("train/episode_1/steps/observation/image",)),
    "launder-zarr": Recipe(_repack("zarr"), [Expect("R", 0, 12, 5, 17)], not_owned=("episode_1/camera0_rgb",)),
    "launder-lerobot-images": Recipe(_repack("lerobot"), [Expect("R", 0, 12, 5, 17)],
                                     not_owned=("data/chunk-000/file-000.parquet/episode_1/observation.images.top",)),
    "same-rig-new-episode-aloha": Recipe(_repack("aloha-new")),
    # Aspect crops: the 4:3 master centre-cropped to square (as 16:9 to 4:3: 75% of the width kept).
    "aspect-crop-to-square": Recipe(edit(piece, transform=_to_square), SEG),
    "aspect-crop-to-square-default": Recipe(edit(piece, transform=_to_square)),
    # Tiled previews: two owned masters side by side are found tile by tile; two unowned scenes are not.
    "tiled-preview-2": Recipe(_tiled(A, B), [Expect("A", 0, 20, 5, 25), Expect("B", 0, 20, 5, 25)]),
    "tiled-preview-new": Recipe(_tiled(NEW1, NEW2, start=0.0)),
    "tiled-preview-2x2": Recipe(_grid((A, NEW1, NEW2, B)), [Expect("A", 0, 20, 5, 25), Expect("B", 0, 20, 5, 25)]),
    # As the speed-2x row, on the same master: the container, not the footage, changed the speed.
    # Near-static real footage, rescaled and sped up, and later moments of it; a piece of a
    # looping pattern (every repetition owned), the loop re-recorded with two more discs, another loop.
    "near-static-rescaled": Recipe(edit([Piece(CAR, 1.0, 13.0, master_fps=12.5)],
                                        transform=lambda img: m.resize(img, 160, 120)),
                                   [Expect("C", 0, 13, 1, 14)]),
    "near-static-sped-up": Recipe(edit([Piece(CAR, 1.0, 11.2, speed=1.25, master_fps=12.5)]),
                                  [Expect("C", 0, 11.2, 1, 15)]),
    "near-static-later": Recipe(edit([Piece(CAR, 16.0, 14.0, master_fps=12.5)],
                                     transform=lambda img: m.resize(img, 160, 120))),
    "near-static-later-sped-up": Recipe(edit([Piece(CAR, 16.0, 11.2, speed=1.25, master_fps=12.5)])),
    "periodic-piece": Recipe(edit([Piece(LOOP, 3.25, 12.0)]), [Expect("L", 0, 12, 3.25, 15.25, period=6.0)]),
    "periodic-more-discs": Recipe(edit([Piece(LOOP_MORE_DISCS, 3.25, 12.0)])),
    "periodic-other-loop": Recipe(edit([Piece(LOOP_OTHER, 0.0, 12.0)])),
    "frame-rate-wrong-2x": Recipe(_repack("robomimic", stated_rate=2 * FPS, source=A, start=2.0, seconds=30.0),
                                  [Expect("A", 0, 15, 2, 32)],
                                  not_owned=("data/demo_1/obs/agentview_image",)),
}



#: Rows whose offered copy is made from a master *file* (the others only need the master scenes).
FROM_MASTER_FILE = ("identical-rename", "reencode-h265-crf30", "container-swap-mkv")

#: The second part: every row with non-default settings (their lab indexes are built only here),
#: the same-rig rows (their footage is the dearest to render), the rows that need footage of
#: the other scenes (B, D, NEW1-3) and a few costly encodes; the first part is the rest, mostly
#: edits of A, whose frames it renders once. The split only balances the work between two
#: workers (measured: part "a" took twice part "b" before the scene rows moved over).
_PART_B = {rid for rid, row in ROWS.items() if row["settings"] != "default"} | {
    "same-rig-new-episode", "same-rig-sensor-noise", "fixed-camera-later", "still-rerecorded",
    "same-rig-reencode", "same-rig-half-speed", "same-rig-mirrored", "same-rig-crop-92",
    "same-rig-new-episode-rotate-90", "same-rig-new-episode-rotate-180", "same-rig-new-episode-vflip",
    "same-rig-rotate-90", "same-rig-rotate-270",
    "reencode-vp9-low", "reencode-av1-low", "picture-in-picture", "noise-blur",
    "splice-15s-plus-other", "merge-owned-plus-new", "merge-two-masters", "unrelated-footage", "fps-60-to-24",
    "colorgrade", "speed-0.5x", "reverse", "letterbox-15pct", "tiled-preview-2", "tiled-preview-new",
    "tiled-preview-2x2",
    # Same copy as crop-bottom-15 (part "b"), so it is made once (see _part_reports).
    "crop-bottom-default-config",
    "near-static-rescaled", "near-static-sped-up", "near-static-later", "near-static-later-sped-up",
    "periodic-piece", "periodic-more-discs", "periodic-other-loop"}
PARTS: dict[str, list[str]] = {
    "a": [rid for rid in ROWS if rid not in _PART_B],
    "b": [rid for rid in ROWS if rid in _PART_B],
}

#: Seconds a worker waits for another to build shared work before calling it hung (a guard only).
HANG_GUARD_S = 1800.0


# --------------------------------------------------------------------------- shared between workers


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """The folder all workers of this run share: the parent of each xdist worker's own base temp."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _shared(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """Build folder ``name`` once per test run, however many xdist workers ask for it.

    The first worker to create the lock folder (``mkdir`` is atomic) runs ``make(folder)`` and
    then writes a ``.done`` marker; the others wait for the marker (or a ``.failed`` one, which
    fails them with the builder's error). The work is deterministic, so every worker would have
    built the same files.
    """
    root = _shared_root(factory)
    out, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    try:
        (root / f"{name}.lock").mkdir(parents=True)
    except FileExistsError:
        deadline = time.monotonic() + HANG_GUARD_S
        while not done.exists():
            if failed.exists():
                pytest.fail(f"building {name} failed in another worker:\n{failed.read_text('utf-8')}")
            assert time.monotonic() < deadline, f"{name}: another worker never finished building it"
            time.sleep(0.2)
        return out
    try:
        out.mkdir()
        make(out)
    except BaseException:
        failed.write_text(traceback.format_exc(), "utf-8")
        raise
    done.touch()
    return out


def _write_masters(root: Path) -> None:
    for name, sc, dur, fps in (("A", A, 40.0, FPS), ("B", B, 40.0, FPS), ("D", D, 30.0, 60.0),
                               ("R", R, 30.0, FPS), ("F", F, 30.0, FPS), ("S", S, 20.0, FPS),
                               ("C", CAR, 15.0, 12.5), ("L", LOOP, 90.0, FPS)):
        m.write_edit(root / f"master_{name}.mp4", [Piece(sc, 0.0, dur, master_fps=fps)], out_fps=fps, size=SIZE)


def _masters(factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The owned master files (built once per run, shared by the workers)."""
    root = _shared(factory, "matrix-owned", _write_masters)
    return {name: root / f"master_{name}.mp4" for name in ("A", "B", "D", "R", "F", "S", "C", "L")}


def _lab_index(factory: pytest.TempPathFactory, masters: dict[str, Path], settings: str) -> Path:
    """The lab's index of the masters with ``settings``; the default one is shared by both parts."""

    def make(work: Path) -> None:
        lab = work / "lab-index"
        cfg = api.load_config({"index.path": str(lab), **SETTINGS[settings]})
        owned = [p for k, p in masters.items() if settings == "default" or k not in DEFAULT_ONLY_MASTERS]
        summary = api.index_paths(owned, index=lab, config=cfg)
        assert not summary.failed, summary.failed

    name = "matrix-lab-" + settings.strip("-").replace(" ", "-")
    if settings == "default":
        return _shared(factory, name, make) / "lab-index"
    work = factory.mktemp(name)
    make(work)
    return work / "lab-index"


# --------------------------------------------------------------------------- session fixtures


def _part_reports(factory: pytest.TempPathFactory, part: str) -> dict[str, Any]:
    """Make one part's offered copies, index them as the vendor, and compare each settings
    group's manifest with the lab index of those settings; returns row id -> FileResult."""
    rids = PARTS[part]
    root = factory.mktemp(f"matrix-offered-{part}")
    # Copies made from the master scenes first: the other worker may be building the master
    # files meanwhile, and only then are they waited for.
    made: dict[int, Path] = {}

    def offer(rid: str, masters: dict[str, Path]) -> Path:
        make = RECIPES[rid].make
        if id(make) in made:
            # The same recipe as an earlier row: the same bytes (deterministic encoders), copied.
            src = made[id(make)]
            return _copy(src, (root / f"offer_{rid}").with_suffix(src.suffix))
        made[id(make)] = out = make(root / f"offer_{rid}", masters)
        return out

    offered = {rid: offer(rid, {}) for rid in rids if rid not in FROM_MASTER_FILE}
    masters = _masters(factory)
    offered.update({rid: offer(rid, masters) for rid in rids if rid in FROM_MASTER_FILE})
    vendor = factory.mktemp(f"matrix-vendor-index-{part}")
    # index.frame_rate: the robot-dataset rows store no rate (robomimic's stated rate still wins).
    summary = api.index_paths([offered[r] for r in rids], index=vendor, config=api.load_config(
        {"index.path": str(vendor), "index.frame_rate": FPS}))
    assert not summary.failed, summary.failed
    groups: dict[str, list[str]] = {}
    for rid in rids:
        groups.setdefault(str(ROWS[rid]["settings"]), []).append(rid)
    out: dict[str, Any] = {}
    # The shared default index last: by then the other worker has usually built it.
    for settings in sorted(groups, key=lambda s: s == "default"):
        group = groups[settings]
        lab = _lab_index(factory, masters, settings)
        cfg = api.load_config({"index.path": str(lab), **SETTINGS[settings]})
        manifest = factory.mktemp(f"matrix-offer-{part}") / "offer.ovlm"
        with api.open_index(vendor) as vidx:
            api.export_manifest(vidx, manifest, paths=[offered[r] for r in group], label=f"matrix {settings}")
        report = api.compare(manifest, lab, config=cfg)
        # Issue 33: "new" only where shown unowned, on every row's report.
        assert verdict_problems(report) == [], verdict_problems(report)
        by_name = {Path(f.query_file).name: f for f in report.files}
        for rid in group:
            name = offered[rid].name
            assert name in by_name, f"{rid}: {name} missing from the report ({sorted(by_name)})"
            out[rid] = by_name[name]
    return out


@pytest.fixture(scope="session")
def matrix_part_a(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Row id -> FileResult for the rows of part "a"."""
    return _part_reports(tmp_path_factory, "a")


@pytest.fixture(scope="session")
def matrix_part_b(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Row id -> FileResult for the rows of part "b"."""
    return _part_reports(tmp_path_factory, "b")


# --------------------------------------------------------------------------- the checks


def _check_detected(rid: str, result: Any, recipe: Recipe, row: dict[str, Any]) -> None:
    segs = result.segments
    assert segs, f"{rid}: nothing matched (below floor: {len(result.below_floor)})"
    for exp in recipe.expect:
        master = f"master_{exp.master}.mp4"
        cands = [s for s in segs if Path(s.corpus_file).name == master]
        assert cands, f"{rid}: no segment against {master}; got {[Path(s.corpus_file).name for s in segs]}"
        def shift(s: Any, exp: Expect = exp) -> float:
            """Whole periods between the segment's owned span and the expected one (a loop)."""
            return round((s.corpus_start - exp.c0) / exp.period) * exp.period if exp.period else 0.0

        best = min(cands, key=lambda s: abs(s.query_start - exp.q0) + abs(s.query_end - exp.q1)
                   + abs(s.corpus_start - shift(s) - exp.c0) + abs(s.corpus_end - shift(s) - exp.c1))
        got = (best.query_start, best.query_end, best.corpus_start - shift(best), best.corpus_end - shift(best))
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
    for key in recipe.not_owned:
        assert not [s for s in segs if s.query_stream == key], (
            f"{rid}: another episode in the same container ({key}) matched")
    if recipe.matched_seconds is not None:
        assert result.matched_seconds == pytest.approx(recipe.matched_seconds, abs=1.5), (
            f"{rid}: matched {result.matched_seconds} s, expected only the owned {recipe.matched_seconds} s")


def check_row(rid: str, result: Any) -> None:
    """Assert row ``rid``'s status (and, for "designed to detect", the owned file, spans, speed
    and variant) on its comparison result."""
    row, recipe = ROWS[rid], RECIPES[rid]
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
