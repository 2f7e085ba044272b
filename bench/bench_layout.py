"""How far a coarse layout map separates near twins from true copies (issue 33, item 5).

Near twins are scripted repeats whose objects moved by less than PDQ resolves: 6-7.5 bits from
an owned episode, as close as a re-encode, so the comparison counts them owned (the ``limit-*``
offers of tests/verdict_suites.py). The finer spatial check the issue asks for would have to see
the moved objects in something a manifest can carry (about 8 KB per hour are left of its 120 KB).
This bench measures the most a layout map of that kind can show, before any coding for size:

* every frame at 4 samples a second is reduced to the 64x64 luma PDQ hashes (the pipeline's own
  scaling) and averaged over a 16x16 grid of cells; per second of footage the per-cell median;
* for the first 8 s window of each offered clip, the per-cell median of its seconds against the
  owned clip's over the same stretch (under the copy's speed and direction), the owned cells
  mapped onto the offered tones by a quadratic least-squares fit;
* only cells the owned footage holds still over the window (each second within 4 levels of the
  median, one second in five excused) count.

It prints, per pair, the PDQ distance (frame by frame, for pairs at the same time and
orientation), the still cells and the largest differences. A check
that can tell twins from copies needs every twin above every copy by more than what coding
for size loses (4 bits a cell leave a cell known to within 8 levels at best).

A second table asks what grid it takes: the scene's background (the per-cell median of every
frame of the offer, and of the owned stretch under it, so a moving arm drops out) on a 16x16 and
a 32x32 grid of the same 64x64 luma, quadratic tone fit over all cells, largest and second
largest cell differences; then what one window of such a grid costs in a manifest. No assertions.

Usage::

    python bench/bench_layout.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pdqhash

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.core.ingest import prep  # noqa: E402
from tests import manipulations as m  # noqa: E402
from tests.footage import read_video, write_video  # noqa: E402
from tests.rig import RigEpisode  # noqa: E402
from tests.verdict_suites import RIG_FPS, RIG_SIZE  # noqa: E402

MJ = ROOT / "tests" / "data" / "mujoco"
GRID, STILL, WINDOW = 16, 4.0, 8.0


def _cells(rgb: np.ndarray) -> np.ndarray:
    """16x16 cell means of the 64x64 luma PDQ hashes (the pipeline's own scaling, before the
    contrast stretch)."""
    small = prep.resample_luma(prep.luma(prep.to_work_image(rgb)))
    return small.reshape(GRID, 4, GRID, 4).mean(axis=(1, 3)).ravel()


def _encode(frames: list[np.ndarray], fps: float, crf: int) -> list[np.ndarray]:
    """Frames through x264 and back (a reseller's re-encode)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "copy.mp4"
        write_video(path, frames, fps=fps, options={"crf": str(crf), "preset": "medium"})
        return read_video(path)[0]


def _seconds(frames: list[np.ndarray], fps: float) -> np.ndarray:
    """Per second, the per-cell median of the frames sampled 4 times a second."""
    n = len(frames)
    picks = [int(k * fps / 4) for k in range(int(n / fps * 4)) if int(k * fps / 4) < n]
    cells = np.stack([_cells(frames[i]) for i in picks])
    return np.stack([np.median(cells[s * 4:(s + 1) * 4], axis=0) for s in range(len(cells) // 4)])


def _pdq(frames: list[np.ndarray]) -> np.ndarray:
    return np.array([pdqhash.compute(np.ascontiguousarray(f))[0] for f in frames], np.uint8)


def compare(offered: list[np.ndarray], owned: list[np.ndarray], fps: float, *, speed: float = 1.0,
            start: float = 0.0, mirrored: bool = False) -> dict[str, float]:
    """Layout differences of the offer's first window against the owned stretch under it."""
    off_s, own_s = _seconds(offered, fps), _seconds(owned, fps)
    o = np.median(off_s[:int(WINDOW)], axis=0)
    a, b = start, start + WINDOW * speed
    wide = own_s[max(0, int(round(a)) - 1):int(round(b)) + 1]
    w = np.median(wide, axis=0)
    strays = np.sort(np.abs(wide - w), axis=0)
    unrest = strays[max(0, len(wide) - 1 - len(wide) // 5)]
    if mirrored:
        w, unrest = (x.reshape(GRID, GRID)[:, ::-1].ravel() for x in (w, unrest))
    still = unrest <= STILL
    fit = np.polyfit(w[still], o[still], 2)
    d = np.abs(o - np.polyval(fit, w))[still]
    n = min(len(offered), len(owned))
    same_time = speed == 1.0 and not mirrored
    pdq = float((_pdq(offered[:n]) != _pdq(owned[:n])).sum(1).mean()) if same_time else float("nan")
    return {"pdq": pdq, "still": float(still.sum()), "max": float(d.max()), "second": float(np.sort(d)[-2]),
            "over4": float((d >= 4).sum())}


def background(offered: list[np.ndarray], owned: list[np.ndarray], fps: float, grid: int, *,
               speed: float = 1.0, start: float = 0.0, mirrored: bool = False) -> tuple[float, float]:
    """Largest and second largest cell differences of the scene's background (the per-cell median
    over every frame of the offer against the owned frames under it), the owned cells mapped onto
    the offer's tones by a quadratic fit."""
    k = 64 // grid

    def cells(frames: list[np.ndarray]) -> np.ndarray:
        small = np.median(np.stack([prep.resample_luma(prep.luma(prep.to_work_image(f))) for f in frames]), axis=0)
        return small.reshape(grid, k, grid, k).mean(axis=(1, 3))

    first = int(round(start * fps))
    under = [owned[min(len(owned) - 1, first + int(i * speed))] for i in range(len(offered))]
    o, w = cells(offered), cells(under)
    if mirrored:
        w = w[:, ::-1]
    d = np.sort(np.abs(o - np.polyval(np.polyfit(w.ravel(), o.ravel(), 2), w)).ravel())
    return float(d[-1]), float(d[-2])


def main() -> None:
    rows: list[tuple[str, str, dict[str, float]]] = []
    grids: list[tuple[str, str, list[tuple[float, float]]]] = []

    def rig(t: int, lay: int, transform: object = None) -> list[np.ndarray]:
        ep = RigEpisode(5, t, layout=lay, home_s=2.0)
        frames = [ep.frame(i / RIG_FPS, RIG_SIZE) for i in range(int(16 * RIG_FPS))]
        return [transform(f) for f in frames] if callable(transform) else frames

    owned = {(t, lay): _encode(rig(t, lay), RIG_FPS, 21) for t, lay in ((1, 1), (2, 1))}
    for name, (t, lay), src, kw in (
            ("twin l5", (1, 5), (1, 1), {}), ("twin l7", (1, 7), (1, 1), {}), ("twin l6", (2, 6), (2, 1), {}),
            ("copy crf 30", (1, 1), (1, 1), {}), ("copy graded", (1, 1), (1, 1), {"grade": True}),
            ("copy mirrored", (2, 1), (2, 1), {"mirror": True})):
        tf = m.colorgrade(sat=1.0) if kw.get("grade") else (m.hflip if kw.get("mirror") else None)
        off = _encode(rig(t, lay, tf), RIG_FPS, 30)
        rows.append(("generated rig", name, compare(off, owned[src], RIG_FPS, mirrored=bool(kw.get("mirror")))))
        grids.append(("generated rig", name, [background(off, owned[src], RIG_FPS, g, mirrored=bool(kw.get("mirror")))
                                              for g in (16, 32)]))
    mj = {n: read_video(MJ / f"{n}.mp4") for n in ("t1-l1", "t2-l1", "t1-l11", "t1-l12", "t2-l11")}
    for name, clip, base in (("twin l11 (green block moved 6 cm)", "t1-l11", "t1-l1"),
                            ("twin l12 (pale block moved 5 cm)", "t1-l12", "t1-l1"),
                            ("twin t2-l11", "t2-l11", "t2-l1"), ("copy crf 30", "t1-l1", "t1-l1")):
        frames, fps = mj[clip]
        off = _encode(frames, fps, 30)
        rows.append(("MuJoCo rig", name, compare(off, mj[base][0], fps)))
        grids.append(("MuJoCo rig", name, [background(off, mj[base][0], fps, g) for g in (16, 32)]))
    frames, fps = mj["t1-l1"]
    off = _encode([m.colorgrade(sat=1.0)(f) for f in frames], fps, 30)
    grids.append(("MuJoCo rig", "copy graded", [background(off, frames, fps, g) for g in (16, 32)]))
    frames, fps = mj["t2-l1"]
    slow = [frames[min(len(frames) - 1, 30 + i // 2)] for i in range(2 * (len(frames) - 30))]
    off = _encode(slow, fps, 30)
    rows.append(("MuJoCo rig", "copy slowed 0.5x from 3 s", compare(off, frames, fps, speed=0.5, start=3.0)))
    grids.append(("MuJoCo rig", "copy slowed 0.5x from 3 s",
                  [background(off, frames, fps, g, speed=0.5, start=3.0) for g in (16, 32)]))
    print(f"{'footage':14s} {'offer':36s} {'PDQ bits':>8s} {'still cells':>11s} {'largest':>8s} "
          f"{'2nd':>6s} {'cells >= 4':>10s}")
    for where, name, r in rows:
        print(f"{where:14s} {name:36s} {r['pdq']:8.1f} {r['still']:11.0f} {r['max']:8.1f} {r['second']:6.1f} "
              f"{r['over4']:10.0f}")
    print(f"\nbackground, largest / 2nd cell difference\n{'footage':14s} {'offer':36s} {'16x16':>12s} {'32x32':>12s}")
    for where, name, d in grids:
        print(f"{where:14s} {name:36s} " + " ".join(f"{a:5.1f} /{b:5.1f}" for a, b in d))
    print("\nmanifest cost of one 32x32 window, uncompressed (the manifest has about 8 KB/h left):")
    for bits in (2, 4):
        size = 32 * 32 * bits // 8
        print(f"  {bits} bits a cell: {size} B; one window per 30 s: {size * 120 / 1000:.1f} KB/h; "
              f"one per 12 s episode: {size * 300 / 1000:.1f} KB/h")


if __name__ == "__main__":
    main()
