"""Suites for the verdict rule (issue 33): every offered second owned, new, or "can't tell", truly.

Each suite is a library the lab owns and an offer of true copies (must be found, attributed to
their source only) and look-alikes (must never be owned). Three classes:

- **scripted** — scripted repeats on one rig (:class:`tests.rig.RigEpisode` with ``layout``): the
  same arm trajectory replayed with the loose objects moved, every episode starting at the rig's
  home pose. Twins of one trajectory sit 15-31 bits apart (measured with
  ``python bench/bench_verdicts.py --distances``; rendered MuJoCo rigs in issue 33: 9.5-16.5).
  Near twins (layouts the fingerprint cannot tell apart, 5-8 bits, as close as a re-encode) are
  listed as ``limit-*`` offers: measured and reported by the bench, not asserted. Their owned
  twins' true copies, colour graded and mirrored, must be found.
- **short** — short real pieces just above the floor (issue 33, item 6) from tests/data/fixedcam:
  a 15 s reversed copy, a file reassembled from two 12 s pieces of one owned clip, a 20 s piece
  rescaled (384x216 -> 320x180, the ratio of the reported 768x432 -> 640x360) and re-timed (10 -> 25
  fps), a 12 s re-encode, 9.6 s mirrored copies (a little below the floor); look-alikes are later
  moments of the same fixed cameras, each copy's with the same length and the same manipulation.
- **mujoco** — a rendered robot rig (tests/data/mujoco, MuJoCo, software EGL): scripted repeats of
  one arm motion with the blocks moved (20-28 bits from their owned twins), another motion from
  the same home pose, and true copies (re-encode, 0.5x, mirror).
- **heldout** — real footage nobody tuned on: an overhead car park (tests/data/heldout, near-static
  asphalt with cars passing) and NASA footage from tests/data/video: copies of owned stretches (among
  them 12 s reversed and 9.6 s mirrored pieces, issue 33 item 6) and later moments of the same camera.
  A copy the comparison is measured to miss carries its reason in ``Offer.gap``: asserted as a gap
  (never owned elsewhere, mostly "can't tell"), not counted as found.
- **periodic** — a looping pattern (synthetic): pieces of it match every repetition, owned either way;
  the loop re-recorded with more discs and another loop are not owned.
- **nearstatic** — copies of near-static stretches of real fixed cameras (a person standing still in
  the room, the car park between cars), rescaled, sped up, slowed, re-encoded: never new.

Used by tests/integration/test_verdicts.py (asserts) and bench/bench_verdicts.py (prints).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

from overlap_desktop import api
from tests import manipulations as m
from tests.manipulations import Piece
from tests.rig import RigEpisode

DATA = Path(__file__).resolve().parent / "data"
RIG_SIZE = (192, 144)
RIG_FPS = 12.0
RIG_DUR = 16.0
#: A true copy is re-encoded as a reseller would (another quality than the library's file).
COPY_ENC: dict[str, Any] = {"options": {"crf": "30"}}


@functools.lru_cache(maxsize=8)
def _decoded(path: str, size: tuple[int, int]) -> tuple[np.ndarray, list[np.ndarray]]:
    times, frames = [], []
    with av.open(path) as c:
        for fr in c.decode(video=0):
            if fr.time is None:
                continue
            times.append(float(fr.time))
            frames.append(fr.to_ndarray(format="rgb24", width=size[0], height=size[1]))
    return np.asarray(times), frames


@dataclass(frozen=True)
class RealClip:
    """A real video as a scene: ``frame(t, size)`` is the frame shown at ``t`` (seconds from its start)."""

    path: str

    def frame(self, t: float, size: tuple[int, int]) -> np.ndarray:
        times, frames = _decoded(self.path, size)
        i = int(np.clip(np.searchsorted(times, t + 1e-6) - 1, 0, len(frames) - 1))
        return frames[i]

    def duration(self) -> float:
        with av.open(self.path) as c:
            return float(c.duration or 0) / 1e6


@dataclass
class Offer:
    """One offered file: its pieces, output size and rate, and what a true verdict is.

    Attributes:
        copy_of: For a true copy: the owned file (stem) it copies; ``None`` for a look-alike.
        owned_share: Least share of the offer's seconds a found copy must have counted owned.
        transform: Pixel transform applied to every frame.
    """

    pieces: list[Piece]
    size: tuple[int, int]
    fps: float
    copy_of: str | None = None
    owned_share: float = 0.6
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    enc: dict[str, Any] = field(default_factory=lambda: dict(COPY_ENC))
    #: A true copy the comparison is measured to miss, and why (asserted as a gap, not hidden) ...
    gap: str | None = None
    #: ... and the seconds of it measured new then (a gap may not leave more; none is left new
    #: since near-identical frames and frames between owned samples that changed are "can't tell").
    gap_new_s: float = 0.0

    @property
    def duration(self) -> float:
        return sum(p.duration for p in self.pieces)


@dataclass
class Suite:
    """A library (name -> (scene, start, seconds, size, fps)) and offers (name -> :class:`Offer`)."""

    name: str
    library: dict[str, tuple[Any, float, float, tuple[int, int], float]]
    offers: dict[str, Offer]


def _ep(trajectory: int, layout: int) -> RigEpisode:
    return RigEpisode(5, trajectory, layout=layout, home_s=2.0)


#: Measured: a copy of a scripted episode with its saturation boosted (and gamma, contrast) sits
#: 12.6-13.1 bits from its source and 19.8-20.5 from the nearest owned twin over 7 encodes (crf
#: 27-33): not clearly closer (ratio 0.63-0.65, the rule asks 0.6), so it reads "the same motion as
#: several owned episodes", never new and never another episode's.
SATURATED_TWIN_GAP = "a saturation-graded copy of one of several scripted twins reads ambiguous"


def scripted() -> Suite:
    lib = {f"t{t}-l{lay}": (_ep(t, lay), 0.0, RIG_DUR, RIG_SIZE, RIG_FPS)
           for t, lay in ((1, 1), (1, 2), (1, 3), (2, 1), (2, 2))}

    def whole(t: int, lay: int, **kw: Any) -> Offer:
        return Offer([Piece(_ep(t, lay), 0.0, RIG_DUR, master_fps=RIG_FPS)], RIG_SIZE, RIG_FPS, **kw)

    offers = {
        # New scripted repeats: the same arm motion, the objects elsewhere.
        "neg-t1-l8": whole(1, 8), "neg-t1-l9": whole(1, 9), "neg-t2-l3": whole(2, 3), "neg-t2-l8": whole(2, 8),
        # Another trajectory: only the home pose (first 2 s) is shared with every owned episode.
        "neg-t3-l1": whole(3, 1), "neg-t4-l2": whole(4, 2),
        # True copies: attributed to their source, not to its scripted twins.
        "ctl-t1-l2": whole(1, 2, copy_of="t1-l2", owned_share=0.8),
        "ctl-t2-l1-part": Offer([Piece(_ep(2, 1), 3.0, 12.0, master_fps=RIG_FPS)], RIG_SIZE, RIG_FPS,
                                copy_of="t2-l1", owned_share=0.8),
        "ctl-t1-l3-slow": Offer([Piece(_ep(1, 3), 4.0, 16.0, speed=0.5, master_fps=RIG_FPS)], RIG_SIZE,
                                RIG_FPS, copy_of="t1-l3", owned_share=0.8),
        # Near twins: 5-8 bits from an owned layout, as close as a re-encode (a measured limit) ...
        "limit-t1-l5": whole(1, 5), "limit-t1-l7": whole(1, 7), "limit-t2-l6": whole(2, 6),
        # ... and true copies of the episodes they are twins of, graded and mirrored.
        "ctl-t1-l1-graded": whole(1, 1, copy_of="t1-l1", owned_share=0.8, transform=m.colorgrade(sat=1.0)),
        "ctl-t1-l1-saturated": whole(1, 1, copy_of="t1-l1", owned_share=0.8, transform=m.colorgrade(),
                                     gap=SATURATED_TWIN_GAP),
        "ctl-t2-l1-mirrored": whole(2, 1, copy_of="t2-l1", owned_share=0.8, transform=m.hflip),
    }
    return Suite("scripted", lib, offers)


#: Measured (issue 33, item 6): the reversed 15 s copy cut at 35.5 s holds 4 samples of motion after
#: 10 s of empty room. Shards keep one seed per second, so 2 of them seed; the dense expansion finds all
#: 4 (0-6 bits), but the two in the owned pause share their vote among 3 and 5 equally close owned
#: frames, so the line gets 2.5 of the 3 votes a line needs (core/match/lines.py) and is never drawn.
#: None of it is new: its one sample of motion no search hit held near-identical (6 bits from its
#: source) was 1.2 s new until offered frames were compared with every owned stream a search hit.
ROOM_REVERSED_PHASE_GAP = "a reversed line into an owned pause gets 2.5 of the 3 votes a line needs"


def short() -> Suite:
    room = RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    table = RealClip(str(DATA / "fixedcam" / "table-bottles.mp4"))
    rs, ts = (384, 216), (320, 180)
    lib = {"room-owned": (room, 0.0, 40.0, rs, 10.0), "table-owned": (table, 0.0, 20.0, ts, 15.0)}
    offers = {
        "ctl-room-reversed-15s": Offer([Piece(room, 35.0, 15.0, speed=-1.0, master_fps=10.0)], rs, 10.0,
                                       copy_of="room-owned"),
        "ctl-room-two-pieces-12s": Offer([Piece(room, 26.0, 12.0, master_fps=10.0),
                                          Piece(room, 4.0, 12.0, master_fps=10.0)], rs, 10.0,
                                         copy_of="room-owned"),
        "ctl-room-rescaled-20s": Offer([Piece(room, 18.0, 20.0, master_fps=10.0)], (320, 180), 25.0,
                                       copy_of="room-owned"),
        "ctl-table-reencode-12s": Offer([Piece(table, 6.0, 12.0, master_fps=15.0)], ts, 15.0,
                                        copy_of="table-owned"),
        "ctl-table-reversed-12s": Offer([Piece(table, 19.0, 12.0, speed=-1.0, master_fps=15.0)], ts, 15.0,
                                        copy_of="table-owned"),
        # A mirrored copy a little shorter than the 10 s floor (its evidence is overwhelming).
        "ctl-room-mirrored-9.6s": Offer([Piece(room, 22.0, 9.6, master_fps=10.0)], rs, 10.0,
                                        copy_of="room-owned", transform=m.hflip),
        "ctl-table-mirrored-9.6s": Offer([Piece(table, 6.0, 9.6, master_fps=15.0)], ts, 15.0,
                                         copy_of="table-owned", transform=m.hflip),
        # Pieces cut half a sample off the owned sampling grid (an editor cuts anywhere).
        "ctl-room-rescaled-20s-phase": Offer([Piece(room, 18.3, 20.0, master_fps=10.0)], (320, 180), 25.0,
                                             copy_of="room-owned"),
        "ctl-table-mirrored-9.6s-phase": Offer([Piece(table, 6.5, 9.6, master_fps=15.0)], ts, 15.0,
                                               copy_of="table-owned", transform=m.hflip),
        "ctl-room-reversed-15s-phase": Offer([Piece(room, 35.5, 15.0, speed=-1.0, master_fps=10.0)], rs, 10.0,
                                             copy_of="room-owned", gap=ROOM_REVERSED_PHASE_GAP),
        # Later moments of the same fixed cameras: never owned.
        "neg-room-later": Offer([Piece(room, 44.0, 17.0, master_fps=10.0)], rs, 10.0),
        "neg-table-later": Offer([Piece(table, 24.0, 15.0, master_fps=15.0)], ts, 15.0),
        # ... and each copy's look-alike: a later moment of the same length, the same manipulation.
        "neg-room-reversed-15s": Offer([Piece(room, 60.0, 15.0, speed=-1.0, master_fps=10.0)], rs, 10.0),
        "neg-room-two-pieces-12s": Offer([Piece(room, 49.5, 12.0, master_fps=10.0),
                                          Piece(room, 41.0, 12.0, master_fps=10.0)], rs, 10.0),
        "neg-room-rescaled-20s": Offer([Piece(room, 41.5, 20.0, master_fps=10.0)], (320, 180), 25.0),
        "neg-room-mirrored-9.6s": Offer([Piece(room, 50.0, 9.6, master_fps=10.0)], rs, 10.0, transform=m.hflip),
        "neg-table-reversed-12s": Offer([Piece(table, 38.0, 12.0, speed=-1.0, master_fps=15.0)], ts, 15.0),
        "neg-table-mirrored-9.6s": Offer([Piece(table, 26.0, 9.6, master_fps=15.0)], ts, 15.0, transform=m.hflip),
    }
    return Suite("short", lib, offers)


#: Measured on the held-out car park (issue 33, item 6): 8 of the reversed copy's 10 samples sit
#: within 14 bits of their source, but a car crossing between two owned samples puts 2 at 54-58
#: bits (100-150 from every neighbour), so the line's mean, 18 bits, reads "merely alike"; as a
#: reversed line of 6 moments it then reads chance 2.7. Its near-identical frames are "can't tell",
#: and so are the two over the car (2 s new before): the owned samples either side of their place on
#: the line differ by 134-138 bits, so what was filmed between them was never fingerprinted.
CARPARK_REVERSED_GAP = "a reversed line over a fast-moving car reads 'merely alike' (chance 2.7)"


def heldout() -> Suite:
    car = RealClip(str(DATA / "heldout" / "carpark.mp4"))
    nasa = RealClip(str(DATA / "video" / "nasa_13013.mp4"))
    cs, ns = (384, 216), (320, 180)
    lib = {"carpark-owned": (car, 0.0, 15.0, cs, 12.5), "nasa-owned": (nasa, 0.0, 13.0, ns, 25.0)}
    offers = {
        "ctl-carpark-reencode": Offer([Piece(car, 1.0, 13.0, master_fps=12.5)], cs, 12.5, copy_of="carpark-owned"),
        "ctl-carpark-rescaled": Offer([Piece(car, 2.0, 12.0, master_fps=12.5)], (320, 180), 25.0,
                                      copy_of="carpark-owned"),
        "ctl-nasa-reversed-12s": Offer([Piece(nasa, 12.5, 12.0, speed=-1.0, master_fps=25.0)], ns, 25.0,
                                       copy_of="nasa-owned"),
        "ctl-nasa-reencode-12s": Offer([Piece(nasa, 0.5, 12.0, master_fps=25.0)], ns, 25.0, copy_of="nasa-owned"),
        # Pieces just above and a little below the floor (issue 33, item 6), held out as well.
        "ctl-carpark-reversed-12s": Offer([Piece(car, 14.0, 12.0, speed=-1.0, master_fps=12.5)], cs, 12.5,
                                          copy_of="carpark-owned", gap=CARPARK_REVERSED_GAP),
        "ctl-carpark-mirrored-9.6s": Offer([Piece(car, 3.0, 9.6, master_fps=12.5)], cs, 12.5,
                                           copy_of="carpark-owned", transform=m.hflip),
        "ctl-nasa-mirrored-9.6s": Offer([Piece(nasa, 2.0, 9.6, master_fps=25.0)], ns, 25.0, copy_of="nasa-owned",
                                        transform=m.hflip),
        # Later moments of the same car park (cars pass the same spots): never owned.
        "neg-carpark-later": Offer([Piece(car, 16.0, 7.0, master_fps=12.5)], cs, 12.5),
        "neg-carpark-last": Offer([Piece(car, 23.0, 7.0, master_fps=12.5)], cs, 12.5),
        "neg-carpark-reversed-12s": Offer([Piece(car, 29.5, 12.0, speed=-1.0, master_fps=12.5)], cs, 12.5),
        "neg-carpark-mirrored-9.6s": Offer([Piece(car, 19.0, 9.6, master_fps=12.5)], cs, 12.5, transform=m.hflip),
    }
    return Suite("heldout", lib, offers)


def mujoco() -> Suite:
    """Rendered robot rig (tests/data/mujoco, made by its render_rig.py): scripted repeats and copies."""

    def clip(name: str) -> RealClip:
        return RealClip(str(DATA / "mujoco" / f"{name}.mp4"))

    size, fps = (160, 120), 10.0
    lib = {f"mj-{n}": (clip(n), 0.0, 12.0, size, fps) for n in ("t1-l1", "t1-l2", "t2-l1")}

    def whole(name: str, **kw: Any) -> Offer:
        return Offer([Piece(clip(name), 0.0, 12.0, master_fps=fps)], size, fps, **kw)

    offers = {
        # The same arm motion as two owned episodes (t1) or one (t2), the blocks elsewhere.
        "neg-mj-t1-l3": whole("t1-l3"), "neg-mj-t1-l4": whole("t1-l4"), "neg-mj-t2-l2": whole("t2-l2"),
        # Another motion from the same home pose and the same blocks.
        "neg-mj-t3-l1": whole("t3-l1"),
        # Near twins: one block moved 5-6 cm, 6.0-6.4 bits from the owned episode after the home
        # pose, as close as a re-encode (a measured limit, as the scripted suite's).
        "limit-mj-t1-l11": whole("t1-l11"), "limit-mj-t1-l12": whole("t1-l12"), "limit-mj-t2-l11": whole("t2-l11"),
        # The same repeats trimmed off the owned sampling grid (an editor cuts anywhere). t1-l3 has
        # two owned twins: it must read "the same motion as several owned episodes" however the
        # offer's samples fall (it was owned 9.5 s at a 0.5 s trim before twins were looked up
        # from the owned side, core/match/twins.py). t2-l2 has one: a measured limit (the same
        # motion as the one owned episode, 22-27 bits from it, as close as a graded crop).
        "neg-mj-t1-l3-trim": Offer([Piece(clip("t1-l3"), 0.5, 11.5, master_fps=fps)], size, fps),
        "limit-mj-t2-l2-trim": Offer([Piece(clip("t2-l2"), 0.7, 11.3, master_fps=fps)], size, fps),
        "ctl-mj-t1-l2": whole("t1-l2", copy_of="mj-t1-l2"),
        "ctl-mj-t2-l1-slow": Offer([Piece(clip("t2-l1"), 3.0, 12.0, speed=0.5, master_fps=fps)], size, fps,
                                   copy_of="mj-t2-l1"),
        "ctl-mj-t1-l1-mirror": whole("t1-l1", copy_of="mj-t1-l1", transform=m.hflip),
    }
    return Suite("mujoco", lib, offers)


#: Measured: a person standing still at the room's table changes under 2% of the
#: pixels a second, so every moment of the stretch looks like every other (the ingest marks most
#: of the offered copy static); what it does hold near-identical is "can't tell", none of it new.
STILL_GAP = "too still to place in time: near-identical to owned footage, can't tell (never new)"
#: Measured: the 1.25x copy of the car park's first 14 s (two cars pass, the rest still asphalt)
#: draws its line, but as an odd-speed line over few moments it reads weak evidence.
CARPARK_FAST_GAP = "a 1.25x line over near-static asphalt reads weak evidence (can't tell, never new)"


def nearstatic() -> Suite:
    """Copies of near-static stretches of real fixed cameras: rescaled, sped up, slowed,
    re-encoded. Most of their time is too still to place in time, so they may read
    "can't tell"; none of it may read new. The room is tuning footage; the car park's offers were
    made after the rule was written (the rule itself was drawn from the held-out suite's reversed
    car-park gap, so they are not held out from it)."""
    room = RealClip(str(DATA / "fixedcam" / "room-people.mp4"))
    car = RealClip(str(DATA / "heldout" / "carpark.mp4"))
    rs, small = (384, 216), (256, 144)
    lib = {"room-owned": (room, 0.0, 50.0, (640, 360), 10.0), "carpark-owned": (car, 0.0, 15.0, (768, 432), 12.5)}
    offers = {
        # A person standing still at the table (26-41 s: under 2% of pixels change a second).
        "ctl-room-still-rescaled": Offer([Piece(room, 26.0, 15.0, master_fps=10.0)], small, 25.0,
                                         copy_of="room-owned", gap=STILL_GAP),
        "ctl-room-still-fast": Offer([Piece(room, 26.0, 12.0, speed=1.25, master_fps=10.0)], rs, 10.0,
                                     copy_of="room-owned", gap=STILL_GAP),
        # The last seconds are the empty room after the person left.
        "ctl-room-empty-slow": Offer([Piece(room, 40.0, 16.0, speed=0.5, master_fps=10.0)], rs, 10.0,
                                     copy_of="room-owned", owned_share=0.2),
        "ctl-room-still-reencode": Offer([Piece(room, 28.0, 13.0, master_fps=10.0)], rs, 10.0,
                                         copy_of="room-owned", gap=STILL_GAP),
        "ctl-carpark-rescaled": Offer([Piece(car, 1.0, 13.0, master_fps=12.5)], small, 25.0, copy_of="carpark-owned"),
        "ctl-carpark-fast": Offer([Piece(car, 1.0, 11.2, speed=1.25, master_fps=12.5)], rs, 12.5,
                                  copy_of="carpark-owned", gap=CARPARK_FAST_GAP),
        "ctl-carpark-slow": Offer([Piece(car, 8.5, 12.0, speed=0.5, master_fps=12.5)], rs, 12.5,
                                  copy_of="carpark-owned", owned_share=0.2),
        # Later moments of the same cameras, with the same manipulations: never owned.
        "neg-room-still-rescaled": Offer([Piece(room, 52.5, 9.5, master_fps=10.0)], small, 25.0),
        "neg-room-later-fast": Offer([Piece(room, 51.0, 8.8, speed=1.25, master_fps=10.0)], rs, 10.0),
        "neg-carpark-rescaled": Offer([Piece(car, 16.0, 14.0, master_fps=12.5)], small, 25.0),
        "neg-carpark-fast": Offer([Piece(car, 16.0, 11.2, speed=1.25, master_fps=12.5)], rs, 12.5),
        "neg-carpark-slow": Offer([Piece(car, 19.0, 12.0, speed=0.5, master_fps=12.5)], rs, 12.5),
    }
    return Suite("nearstatic", lib, offers)


@dataclass(frozen=True)
class Loop:
    """A scene that repeats itself every ``period`` seconds (a looping test pattern)."""

    scene: Any
    period: float

    def frame(self, t: float, size: tuple[int, int]) -> np.ndarray:
        return np.asarray(self.scene.frame(t % self.period, size))


#: Measured: a copy cut a tenth of a second between the owned samples of this pan (25
#: canvas pixels a second, 4 owned samples a second) sits 12-24 bits from the owned frames, as far
#: as a re-recording of the loop with one or two more discs (18-23 bits): neither is counted.
LOOP_OFF_GRID_GAP = "cut between the owned samples of a fast loop: as far from them as a re-recorded loop"


def periodic() -> Suite:
    """A looping pattern the lab owns 90 s of (15 repetitions of a 6 s loop) and pieces of it: each
    matches every repetition, so which moment was copied is ambiguous, but all are owned. The same
    loop re-recorded with more discs, and another loop, are not owned. Synthetic (tests/footage.py)."""
    from tests.footage import Scene

    def loop(seed: int, objects: int = 4) -> Loop:
        return Loop(Scene(seed, canvas_hw=(720, 2400), velocity=(25.0, 0.0), objects=objects), 6.0)

    own, size, fps = loop(31), (192, 144), 12.0
    lib = {"loop-owned": (own, 0.0, 90.0, size, fps)}
    offers = {
        "ctl-loop-a": Offer([Piece(own, 3.25, 12.0, master_fps=fps)], size, fps, copy_of="loop-owned", owned_share=0.8),
        "ctl-loop-b": Offer([Piece(own, 20.0, 12.0, master_fps=fps)], size, fps, copy_of="loop-owned", owned_share=0.8),
        "ctl-loop-long": Offer([Piece(own, 10.0, 40.0, master_fps=fps)], size, fps, copy_of="loop-owned",
                               owned_share=0.8),
        "ctl-loop-off-grid": Offer([Piece(own, 10.4, 12.0, master_fps=fps)], size, fps, copy_of="loop-owned",
                                   gap=LOOP_OFF_GRID_GAP, gap_new_s=5.0),
        # The same loop re-recorded with one or two more discs, and another loop: never owned.
        "neg-loop-more-discs": Offer([Piece(loop(31, 6), 3.3, 12.0, master_fps=fps)], size, fps),
        "neg-loop-one-more-disc": Offer([Piece(loop(31, 5), 10.1, 12.0, master_fps=fps)], size, fps),
        "neg-other-loop": Offer([Piece(loop(32), 0.0, 24.0, master_fps=fps)], size, fps),
    }
    return Suite("periodic", lib, offers)


SUITES: dict[str, Callable[[], Suite]] = {"scripted": scripted, "mujoco": mujoco, "short": short,
                                          "heldout": heldout, "nearstatic": nearstatic, "periodic": periodic}


def build(suite: Suite, root: Path) -> Path:
    """Write the suite's footage, index library and offer, export the offer's manifest; return it."""
    lib, offer = root / "library", root / "offer"
    manifest = root / "offer.ovlm"
    if manifest.exists():
        return manifest
    for name, (scene, start, secs, size, fps) in suite.library.items():
        m.write_edit(lib / f"{name}.mp4", [Piece(scene, start, secs, master_fps=fps)], out_fps=fps, size=size)
    for name, o in suite.offers.items():
        m.write_edit(offer / f"{name}.mp4", o.pieces, out_fps=o.fps, size=o.size, transform=o.transform, **o.enc)
    for d, src in ((root / "lab-index", lib), (root / "vendor-index", offer)):
        cfg = api.load_config({"index.path": str(d)})
        assert not api.index_paths([src], index=d, config=cfg).failed
    with api.open_index(root / "vendor-index") as v:
        api.export_manifest(v, manifest, label=f"{suite.name} offer")
    return manifest


def new_but_near(root: Path, report: Any, bits: int = 16) -> dict[str, list[tuple[float, int]]]:
    """Per offered file of a suite built under ``root``: its samples inside time the report calls
    new that sit within ``bits`` of some owned frame (any stream, any variant, still time included),
    as (offered second, distance). The rule says there are none: near-identical is never new."""
    from overlap_desktop.core.index.arrays import popcount_xor
    from overlap_desktop.core.index.store import open_index
    from overlap_desktop.core.manifest.parse import read_manifest
    from overlap_desktop.core.match.accounting import union_seconds
    from overlap_desktop.core.match.corpora import IndexCorpus
    from overlap_desktop.core.match.offer import manifest_queries

    queries = manifest_queries(read_manifest(root / "offer.ovlm"))
    with open_index(root / "lab-index", create=False) as idx:
        corpus = IndexCorpus(idx)
        owned = [c.codes.reshape(-1, c.codes.shape[-1]) for sid, _, _ in idx.stream_ids()
                 for c in [corpus.fingerprints(sid)]]
    codes = np.concatenate(owned)
    out: dict[str, list[tuple[float, int]]] = {}
    for f in report.files:
        if f.new_seconds <= 0:
            continue
        taken = [(s.query_start, s.query_end) for s in f.segments]
        taken += [(sp.start_s, sp.end_s) for sp in [*f.indeterminate, *f.cant_tell, *getattr(f, "repeats", [])]
                  if hasattr(sp, "start_s")]
        for q in (q for q in queries if q.file == f.query_file):
            t = q.fp.times_ns / 1e9
            for i, ti in enumerate(t.tolist()):
                if union_seconds([(a, b) for a, b in taken if a - 1e-6 <= ti <= b + 1e-6]) > 0:
                    continue
                d = int(popcount_xor(q.fp.codes[i, 0][None, :], codes).min())
                if d <= bits:
                    out.setdefault(Path(f.query_file).stem, []).append((ti, d))
    return out


def run(suite: Suite, root: Path, **compare_kw: Any) -> Any:
    """Build (or reuse) the suite under ``root`` and compare its offer with its library."""
    manifest = build(suite, root)
    cfg = api.load_config({"index.path": str(root / "lab-index")})
    return api.compare(manifest, root / "lab-index", config=cfg, **compare_kw)


@dataclass
class Verdict:
    """What a report says about one offer, against what is true."""

    name: str
    duration: float
    owned: float
    new: float
    cant_tell: float
    sources: set[str]
    copy_of: str | None

    @property
    def false_owned(self) -> float:
        """Seconds counted owned that are not (all owned seconds of a look-alike)."""
        return self.owned if self.copy_of is None else 0.0

    def found(self, share: float) -> bool:
        return self.copy_of is not None and self.sources == {self.copy_of} and self.owned >= share * self.duration


def verdicts(suite: Suite, report: Any) -> dict[str, Verdict]:
    out = {}
    for f in report.files:
        name = Path(f.query_file).stem
        o = suite.offers[name]
        out[name] = Verdict(name, f.duration_s, f.matched_seconds, f.new_seconds, f.cant_tell_seconds,
                            {Path(s.corpus_file).stem for s in f.segments}, o.copy_of)
    return out
