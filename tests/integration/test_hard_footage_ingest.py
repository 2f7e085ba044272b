"""Hard real footage at the fingerprint level: dark, low-contrast rigs and small frames with overlays.

Issue 33, items 1 and 3. Each class has copies that must be found and other moments of the same
camera that must not be owned (look-alikes), indexed and compared the way a user would
(``api.index_paths`` -> ``api.export_manifest`` -> ``api.compare``, default settings).

* Dark rigs (tuning set): the fixed room camera of tests/data/fixedcam at a tenth of its range
  with sensor noise (a dim arena; derived, see tests/data/SOURCES.md), and a lens-cap recording
  (blank, vignetted, noisy) that must stay "can't tell".
* Held-out (never used to choose a constant): the overhead car-park camera of
  tests/data/hard/car-park-overhead.mp4, real low-contrast footage as shot (grey asphalt, PDQ
  quality ~30 before the contrast stretch), and the same footage darkened further.
* Small frames with a burned-in clock: the room camera at 320x240 with an on-screen clock; a
  copy with 5% cut from every border must be found at the default preset (and with
  ``--preset balanced``), as on larger frames; the same camera later, cut alike, must not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from overlap_desktop import api
from tests import manipulations as m
from tests.footage import write_video
from tests.rig import RigEpisode

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"
ROOM = DATA / "fixedcam" / "room-people.mp4"
CARPARK = DATA / "hard" / "car-park-overhead.mp4"

_SEGMENTS = {0: "abcefg", 1: "cf", 2: "acdeg", 3: "acdfg", 4: "bcdf", 5: "abdfg", 6: "abdefg", 7: "acf",
             8: "abcdefg", 9: "abcdfg"}


def _digit(d: int, h: int, w: int, t: int) -> np.ndarray:
    """A seven-segment digit as a boolean mask (segments a-g: top, upper left, upper right,
    middle, lower left, lower right, bottom)."""
    g = np.zeros((h, w), bool)
    mid = h // 2
    parts = {"a": (slice(0, t), slice(None)), "b": (slice(0, mid), slice(0, t)),
             "c": (slice(0, mid), slice(w - t, w)), "d": (slice(mid - t // 2, mid + (t + 1) // 2), slice(None)),
             "e": (slice(mid, h), slice(0, t)), "f": (slice(mid, h), slice(w - t, w)),
             "g": (slice(h - t, h), slice(None))}
    for s in _SEGMENTS[d]:
        g[parts[s]] = True
    return g


def burn_clock(img: np.ndarray, seconds: int) -> np.ndarray:
    """A CCTV-style clock (white digits, HH:MM:SS) burned into the top-left corner."""
    h, w = img.shape[:2]
    ch = max(7, int(h * 0.06))
    cw, t = max(4, int(ch * 0.55)), max(1, ch // 6)
    out = img.copy()
    x, y = int(w * 0.03), int(h * 0.03)
    for c in f"{12:02d}:{(seconds // 60) % 60:02d}:{seconds % 60:02d}":
        if c == ":":
            for yy in (y + ch // 3, y + 2 * ch // 3):
                out[yy:yy + t, x + t:x + 2 * t] = 255
            x += 3 * t
            continue
        out[y:y + ch, x:x + cw][_digit(int(c), ch, cw, t)] = 255
        x += cw + 2 * t
    return out


def darken(scale: float, offset: float = 14.0, noise: float = 3.0, seed: int = 7) -> m.Transform:
    """A dim camera: the picture's range times ``scale`` above a black level, plus sensor noise."""
    rng = np.random.default_rng(seed)

    def t(img: np.ndarray) -> np.ndarray:
        grain = rng.normal(0.0, noise, img.shape[:2])[..., None]
        return np.clip(img.astype(np.float32) * scale + offset + grain, 0, 255).astype(np.uint8)

    return t


def _read(src: Path, size: tuple[int, int], t0: float, t1: float) -> tuple[list[np.ndarray], list[float], float]:
    frames, times = [], []
    with av.open(str(src)) as c:
        rate = float(c.streams.video[0].average_rate or 25)
        for fr in c.decode(video=0):
            if fr.time is None or fr.time < t0 - 1e-6:
                continue
            if fr.time >= t1 - 1e-6:
                break
            frames.append(fr.to_ndarray(format="rgb24", width=size[0], height=size[1]))
            times.append(float(fr.time))
    return frames, times, rate


def _clip(dst: Path, src: Path, t0: float, t1: float, *, size: tuple[int, int] = (320, 240),
          transform: m.Transform | None = None, clock: bool = False, crf: str = "23", threads: str = "") -> Path:
    frames, times, rate = _read(src, size, t0, t1)
    out = [burn_clock(f, 3600 + int(t)) if clock else f for f, t in zip(frames, times)]
    if transform is not None:
        out = [transform(f) for f in out]
    options = {"preset": "veryfast", "crf": crf} | ({"threads": threads} if threads else {})
    return write_video(dst, out, fps=rate, options=options)


def _lens_cap(dst: Path, seconds: float = 14.0, fps: float = 10.0) -> Path:
    """A camera with its cap on: a vignetted black level with sensor noise, nothing else."""
    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[:240, :320]
    shade = 18.0 * (1 - 0.35 * (((yy - 120) / 120) ** 2 + ((xx - 160) / 160) ** 2))
    frames = [np.clip(shade + rng.normal(0, 3.0, shade.shape), 0, 255).astype(np.uint8)[..., None].repeat(3, 2)
              for _ in range(int(seconds * fps))]
    return write_video(dst, frames, fps=fps, options={"preset": "veryfast", "crf": "23"})


def _compare(root: Path, lib: Path, offer: Path, presets: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    vendor = root / "vendor"
    assert not api.index_paths([offer], index=vendor, config=api.load_config({"index.path": str(vendor)})).failed
    with api.open_index(vendor) as v:
        api.export_manifest(v, root / "offer.ovlm", label="hard footage")
    out = {}
    for preset in presets:
        lab = root / f"lab-{preset}"
        cfg = api.load_config({"index.path": str(lab), "index.preset": preset})
        assert not api.index_paths([lib], index=lab, config=cfg).failed
        rep = api.compare(root / "offer.ovlm", lab, config=cfg)
        out[preset] = {Path(f.query_file).stem: f for f in rep.files}
    return out


def _found(f: Any, master: str, c0: float, dur: float) -> None:
    cands = [s for s in f.segments if Path(s.corpus_file).stem == master]
    assert cands, f"{Path(f.query_file).stem}: not found (segments {f.segments}, weak {f.weak})"
    best = max(cands, key=lambda s: s.query_duration)
    assert abs((best.corpus_start - best.query_start) - c0) <= 1.0, best
    assert best.speed == pytest.approx(1.0, rel=0.05)  # still moments blur the slope of real footage
    assert best.chance is not None and best.chance <= 0.01
    assert best.query_duration >= 0.5 * dur, best


def _not_owned(files: dict[str, Any]) -> None:
    falsely = {n: [(Path(s.corpus_file).stem, s.query_start, s.query_end, s.chance) for s in f.segments]
               for n, f in files.items() if n.startswith("neg-") and f.segments}
    assert not falsely, falsely


# --------------------------------------------------------------------------- small frames, burned-in clock


@pytest.fixture(scope="module")
def small_crop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    if not ROOM.is_file():
        pytest.skip("tests/data/fixedcam footage missing")
    root = tmp_path_factory.mktemp("small-crop")
    lib, offer = root / "library", root / "offer"
    _clip(lib / "room-clock.mp4", ROOM, 0.0, 30.0, clock=True)
    # 5% cut from every border of owned seconds 14-28, scaled back to 320x240 and re-encoded.
    _clip(offer / "ctl-room-clock-crop90.mp4", lib / "room-clock.mp4", 14.0, 28.0, transform=m.crop_centre(0.90),
          crf="26")
    # The same camera later (never owned), cut the same way.
    _clip(offer / "neg-room-clock-later-crop90.mp4", ROOM, 34.0, 60.0, clock=True, transform=m.crop_centre(0.90))
    return _compare(root, lib, offer, ("fast", "balanced"))


@pytest.mark.parametrize("preset", ["fast", "balanced"])
def test_small_frame_crop_with_clock_is_found(small_crop: dict[str, dict[str, Any]], preset: str) -> None:
    _found(small_crop[preset]["ctl-room-clock-crop90"], "room-clock", 14.0, 14.0)


@pytest.mark.parametrize("preset", ["fast", "balanced"])
def test_small_frame_crop_look_alike_is_not_owned(small_crop: dict[str, dict[str, Any]], preset: str) -> None:
    _not_owned(small_crop[preset])


# --------------------------------------------------------------------------- dark, low-contrast rigs

RIG_SIZE, RIG_FPS = (192, 144), 12.0
DIM = 0.25  # a quarter of the range above a black level, sensor noise sigma 3: a dim arena


@pytest.fixture(scope="module")
def dark(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (ROOM.is_file() and CARPARK.is_file()):
        pytest.skip("tests/data footage missing")
    root = tmp_path_factory.mktemp("dark")
    lib, offer = root / "library", root / "offer"
    _clip(lib / "room-dark.mp4", ROOM, 0.0, 30.0, transform=darken(DIM))
    _clip(lib / "carpark.mp4", CARPARK, 0.0, 15.0)
    for e in (3, 4):
        m.write_edit(lib / f"rig-dark-ep{e:02d}.mp4", [m.Piece(RigEpisode(1, e), 0.0, 16.0, master_fps=RIG_FPS)],
                     out_fps=RIG_FPS, size=RIG_SIZE, transform=darken(DIM, seed=e), options={"crf": "23"})
    # True copies: owned seconds cut from the owned files (their sensor noise is the owned noise), re-encoded.
    _clip(offer / "ctl-dark-room.mp4", lib / "room-dark.mp4", 16.0, 30.0, crf="28")
    _clip(offer / "ctl-dark-rig.mp4", lib / "rig-dark-ep03.mp4", 2.0, 14.0, size=RIG_SIZE, crf="28")
    # Look-alikes: later moments of the same cameras, other episodes of the same dim rig.
    _clip(offer / "neg-dark-room-later.mp4", ROOM, 34.0, 60.0, transform=darken(DIM, seed=23))
    _clip(offer / "neg-carpark-later.mp4", CARPARK, 16.0, 30.0)
    for e in (13, 14):
        m.write_edit(offer / f"neg-dark-rig-ep{e:02d}.mp4", [m.Piece(RigEpisode(1, e), 0.0, 14.0, master_fps=RIG_FPS)],
                     out_fps=RIG_FPS, size=RIG_SIZE, transform=darken(DIM, seed=e), options={"crf": "23"})
    _lens_cap(offer / "blank-lens-cap.mp4")
    return _compare(root, lib, offer, ("fast",))["fast"]


def test_dark_rig_copy_is_found(dark: dict[str, Any]) -> None:
    _found(dark["ctl-dark-rig"], "rig-dark-ep03", 2.0, 12.0)


def test_dark_near_static_copy_is_only_ever_its_source(dark: dict[str, Any]) -> None:
    """A measured gap (issue 33): at the manifest's 1 sample/s the dim room copy's frames sit
    14-32 bits from their source and 14-84 from the closest other moment, so its 1x line is
    mostly the same motion without proving the same moment. How it reads depends on how x264
    happened to encode it (tests/footage.py): owned on 22 of 102 encodes measured, otherwise
    "can't tell", with a few seconds left new on a few encodes (the family below asserts how
    few). It is never owned as anyone else's footage."""
    f = dark["ctl-dark-room"]
    assert {Path(s.corpus_file).stem for s in f.segments} <= {"room-dark"}, f.segments
    assert f.matched_seconds + f.cant_tell_seconds + f.new_seconds >= f.duration_s - 0.1


def test_dark_look_alikes_are_not_owned(dark: dict[str, Any]) -> None:
    _not_owned(dark)
    assert sum(n.startswith("neg-") for n in dark) == 4


@pytest.mark.parametrize("name", ["neg-dark-room-later", "neg-carpark-later", "neg-dark-rig-ep13", "neg-dark-rig-ep14"])
def test_dark_footage_is_judged_not_featureless(dark: dict[str, Any], name: str) -> None:
    """Before the contrast stretch most of these read "featureless" (PDQ quality 3-50). Now they
    are judged; still stretches of them are "static" (can't tell), as in bright footage. Judged
    seconds near-identical to owned footage of the same dim room may be "can't tell" (the rule
    that new is only what is shown not owned), so the judged time asserted is new and can't tell
    together. The later room read 12 s new on every run inspected, and 4.5 s on one encode."""
    f = dark[name]
    featureless = sum(s.end_s - s.start_s for s in f.indeterminate if s.reason == "featureless")
    assert featureless <= 0.1 * f.duration_s, (name, f.indeterminate)
    assert f.new_seconds + f.cant_tell_seconds >= 0.2 * f.duration_s, (name, f.new_seconds, f.cant_tell,
                                                                       f.indeterminate)
    assert not f.segments, (name, f.segments)


def test_a_lens_cap_recording_stays_cant_tell(dark: dict[str, Any]) -> None:
    f = dark["blank-lens-cap"]
    assert not f.segments
    assert f.new_seconds == 0.0, f
    assert f.indeterminate_seconds >= 0.9 * f.duration_s, f


# --------------------------------------------------------------------------- the dim room, encoded otherwise

#: (library crf, offered copies' crfs): encodes of the dim room and of its copy (one x264 thread),
#: chosen before the change they test was measured. Before it 6-7 of these 9 copies kept new
#: seconds (6.5-14.5 s in all, three runs): a copy's line is trimmed where the owned side is
#: static, and those frames sit 18-28 bits from the frame on their line, 12-16 from other moments
#: of the same owned file. After it 1-2 did (0.5-2.5 s). x264's output varies from run to run here
#: (tests/footage.py), so the assertion is on the family: over 102 encodes (crf 19-30, 1-3
#: threads) 8 still kept new seconds after the change (0.5-4 s; 6 s once), 94 none.
ENCODES = {21: (26, 27, 28), 22: (26, 27, 28), 25: (26, 27, 28)}


@pytest.fixture(scope="module")
def dark_family(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each library encode with its three copies and a splice look-alike, compared."""
    if not (ROOM.is_file() and CARPARK.is_file()):
        pytest.skip("tests/data footage missing")
    out: dict[str, Any] = {}
    for lib_crf, copy_crfs in ENCODES.items():
        root = tmp_path_factory.mktemp(f"dark-crf{lib_crf}")
        lib, offer = root / "library", root / "offer"
        _clip(lib / "room-dark.mp4", ROOM, 0.0, 30.0, transform=darken(DIM), crf=str(lib_crf), threads="1")
        for crf in copy_crfs:
            _clip(offer / f"ctl-dark-room-lib{lib_crf}-crf{crf}.mp4", lib / "room-dark.mp4", 16.0, 30.0, crf=str(crf),
                  threads="1")
        # The look-alike of "not shown new": 14 s of the copy, then 10 s of another camera nobody owns.
        copy, _, rate = _read(lib / "room-dark.mp4", (320, 240), 16.0, 30.0)
        other, _, _ = _read(CARPARK, (320, 240), 16.0, 26.0)
        step = max(1, round(len(other) / (10.0 * rate)))
        write_video(offer / f"neg-dark-room-then-carpark-lib{lib_crf}.mp4", copy + other[::step][: int(10 * rate)],
                    fps=rate, options={"preset": "veryfast", "crf": "28"})
        out.update(_compare_each(root, lib, sorted(offer.iterdir())))
    return out


def _compare_each(root: Path, lib: Path, offers: list[Path]) -> dict[str, Any]:
    """Each offered file in an offer of its own (copies of one footage offered together would be
    each other's repeats, never new), against one library indexed once, at the fast preset."""
    lab = root / "lab"
    cfg = api.load_config({"index.path": str(lab), "index.preset": "fast"})
    assert not api.index_paths([lib], index=lab, config=cfg).failed
    out = {}
    for k, path in enumerate(offers):
        vendor = root / f"vendor-{k}"
        assert not api.index_paths([path], index=vendor, config=api.load_config({"index.path": str(vendor)})).failed
        with api.open_index(vendor) as v:
            api.export_manifest(v, root / f"offer-{k}.ovlm", label="hard footage")
        [f] = api.compare(root / f"offer-{k}.ovlm", lab, config=cfg).files
        out[path.stem] = f
    return out


def test_dim_room_copies_are_almost_never_new_whatever_the_encode(dark_family: dict[str, Any]) -> None:
    """Frames no line holds but that sit near-identical to the owned file the copy has lines to
    are "can't tell", not new; the copies are never anyone else's footage."""
    copies = {n: f for n, f in dark_family.items() if n.startswith("ctl-")}
    assert len(copies) == 9
    new = {n: (f.new_seconds, f.cant_tell) for n, f in copies.items() if f.new_seconds > 0}
    assert len(new) <= 3, new
    for name, f in copies.items():
        assert {Path(s.corpus_file).stem for s in f.segments} <= {"room-dark"}, (name, f.segments)


def test_new_footage_spliced_after_a_dim_copy_stays_new(dark_family: dict[str, Any]) -> None:
    splices = {n: f for n, f in dark_family.items() if n.startswith("neg-dark-room-then-carpark")}
    assert len(splices) == 3
    for name, f in splices.items():
        assert not [s for s in f.segments if s.query_end > 14.5], (name, f.segments)
        tail = [sp for sp in f.cant_tell if sp.end_s > 15.0]
        assert sum(min(sp.end_s, f.duration_s) - max(sp.start_s, 15.0) for sp in tail) <= 1.0, (name, f.cant_tell)
        assert f.new_seconds >= 8.0, (name, f.new_seconds, f.cant_tell)
