"""Generated same-rig robot footage: one fixed camera over one workspace, many episodes.

This is the footage robotics labs actually buy, and the hardest case for a fingerprint
matcher: every frame of every episode shows the same table, the same objects and the
same arm, so any two frames sit only 20-50 bits apart. A new episode from the same rig
is *new data* and must never be reported as owned.

A :class:`RigEpisode` has the ``frame(t, size)`` method of :class:`tests.footage.Scene`,
so it plugs into :class:`tests.manipulations.Piece` and every manipulation there
(speed changes, crops, mirroring, re-encodes). ``rig`` fixes the workspace (texture,
objects, arm base, lighting); ``episode`` fixes the arm's trajectory, which pauses now
and then (static stretches, as real teleoperation does) and moves one object when it
"grasps" it. Everything is deterministic in the seeds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

__all__ = ["HandheldStill", "RigEpisode"]


@functools.lru_cache(maxsize=8)
def _workspace(rig: int, size: tuple[int, int]) -> np.ndarray:
    """The static view: a textured table with clutter, float32 (h, w, 3)."""
    w, h = size
    rng = np.random.default_rng(1000 + rig)
    out = np.full((h, w, 3), 118.0, np.float32)
    for sigma, amp in ((h / 6, 40.0), (h / 24, 22.0), (1.5, 10.0)):
        noise = ndimage.gaussian_filter(rng.standard_normal((h, w)).astype(np.float32), sigma)
        noise /= noise.std() + 1e-6
        out += amp * noise[:, :, None] * rng.uniform(0.7, 1.0, 3).astype(np.float32)
    # Table edge and a back wall: strong static structure, like a real bench.
    out[: h // 4] = out[: h // 4] * 0.55 + 40
    # Static clutter: boxes, a tray, tools.
    for _ in range(7):
        x0, y0 = int(rng.integers(0, w - 30)), int(rng.integers(h // 4, h - 20))
        bw, bh = int(rng.integers(12, 50)), int(rng.integers(8, 35))
        out[y0:y0 + bh, x0:x0 + bw] = rng.uniform(20, 235, 3)
    return out


@functools.lru_cache(maxsize=8)
def _grid(w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel row and column coordinates, float32 (h, w) each (read-only, shared by every frame)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    yy.flags.writeable = False
    xx.flags.writeable = False
    return yy, xx


@dataclass(frozen=True)
class RigEpisode:
    """One episode of a fixed-camera rig.

    Attributes:
        rig: Workspace seed (same rig = same camera, table, objects and arm).
        episode: Trajectory seed (another episode = another motion of the arm).
        arm_scale: Thickness and reach of the arm (a bigger arm covers more of the view).
        noise: Standard deviation of per-frame sensor noise (grey levels).
        pause_every: Mean seconds between pauses of the arm.
        layout: Placement seed of the loose objects on the table (0: none). A *scripted
            repeat* is the same ``episode`` (the same arm trajectory, replayed) with another
            ``layout``: same motion, objects moved, nothing copied.
        home_s: Seconds the arm rests at the rig's home pose before it moves (every episode
            of a rig starts from the same resting pose, as real rigs do).
    """

    rig: int
    episode: int
    arm_scale: float = 1.0
    noise: float = 0.0
    pause_every: float = 9.0
    layout: int = 0
    home_s: float = 0.0

    def _joints(self, t: float) -> tuple[float, float, float]:
        """Joint angles at time ``t``: the home pose, then smooth random motion with pauses."""
        if t < self.home_s:
            return -np.pi / 2, 0.9, -0.9
        t -= self.home_s
        rng = np.random.default_rng(50_000 + 97 * self.rig + self.episode)
        # Pauses: the arm holds still for 1.5-3 s now and then (the clock stops).
        starts = np.cumsum(rng.uniform(0.5, 1.5, 64) * self.pause_every)
        lengths = rng.uniform(1.5, 3.0, 64)
        held = 0.0
        for s, ln in zip(starts, lengths):
            if s >= t:
                break
            held += min(ln, t - s)
        tau = t - held
        angles = []
        ramp = min(1.0, t / 1.5) if self.home_s > 0 else 1.0  # leave the home pose smoothly
        home = (-np.pi / 2, 0.9, -0.9)
        for k in range(3):
            freqs = rng.uniform(0.05, 0.35, 3)
            phases = rng.uniform(0, 2 * np.pi, 3)
            amps = rng.uniform(0.15, 0.5, 3) * (1.0 if k else 0.7)
            base = (-np.pi / 2, 0.6, -0.5)[k] + rng.uniform(-0.4, 0.4)
            a = base + float(np.sum(amps * np.sin(2 * np.pi * freqs * tau + phases)))
            angles.append(home[k] + ramp * (a - home[k]))
        return angles[0], angles[1], angles[2]

    def frame(self, t: float, size: tuple[int, int]) -> np.ndarray:
        """RGB uint8 (h, w, 3) at time ``t`` seconds; ``size`` is (w, h)."""
        w, h = size
        img = _workspace(self.rig, size).copy()
        yy, xx = _grid(w, h)
        if self.layout:
            # Loose objects (blocks, a bowl-sized disc) placed by the layout seed, under the arm.
            lrng = np.random.default_rng(70_000 + 131 * self.rig + self.layout)
            for k in range(3):
                cx, cy = lrng.uniform(0.12, 0.88) * w, lrng.uniform(0.35, 0.85) * h
                r = lrng.uniform(0.026, 0.04) * h
                colour = lrng.uniform(25, 235, 3).astype(np.float32)
                inside = ((np.abs(xx - cx) < r) & (np.abs(yy - cy) < r)) if k % 2 else np.hypot(xx - cx, yy - cy) < r
                img[inside] = colour
        # Arm: base at the bottom centre, three links.
        a0, a1, a2 = self._joints(t)
        reach = 0.30 * h * self.arm_scale
        pts = [(0.5 * w, 0.98 * h)]
        ang = a0
        for k, (da, ln) in enumerate(((0.0, 1.0), (a1, 0.85), (a2, 0.5))):
            ang = ang + da if k else a0
            x0, y0 = pts[-1]
            pts.append((x0 + ln * reach * np.cos(ang), y0 + ln * reach * np.sin(ang)))
        widths = np.array([11.0, 8.0, 6.0]) * self.arm_scale * h / 240
        shade = (190.0, 170.0, 150.0)
        for k in range(3):
            (x0, y0), (x1, y1) = pts[k], pts[k + 1]
            dx, dy = x1 - x0, y1 - y0
            # Only the link's bounding box (widened by its width and a margin) can be within
            # its width of it: the same per-pixel arithmetic as over the whole frame, on a
            # fraction of the pixels.
            pad = float(widths[k]) + 2.0
            c0, c1 = max(0, int(min(x0, x1) - pad)), min(w, int(max(x0, x1) + pad) + 1)
            r0, r1 = max(0, int(min(y0, y1) - pad)), min(h, int(max(y0, y1) + pad) + 1)
            if c0 >= c1 or r0 >= r1:
                continue
            by, bx = yy[r0:r1, c0:c1], xx[r0:r1, c0:c1]
            u = np.clip(((bx - x0) * dx + (by - y0) * dy) / max(dx * dx + dy * dy, 1e-6), 0, 1)
            d = np.hypot(bx - (x0 + u * dx), by - (y0 + u * dy))
            m = d < widths[k]
            img[r0:r1, c0:c1][m] = (np.array([shade[k], shade[k] * 0.95, shade[k] * 0.8], np.float32)
                                    - 40 * (d[m, None] / widths[k]))
        # Gripper: a dark block at the tip.
        gx, gy = pts[-1]
        g = (np.abs(xx - gx) < 7 * self.arm_scale) & (np.abs(yy - gy) < 5 * self.arm_scale)
        img[g] = (35.0, 35.0, 40.0)
        if self.noise > 0:
            rng = np.random.default_rng(int(t * 1000) + 7919 * self.episode)
            img += rng.normal(0, self.noise, img.shape).astype(np.float32)
        return np.clip(img, 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class HandheldStill:
    """A still picture (a poster, a parked scene) filmed by a hand-held camera.

    The same ``still`` filmed again with another ``take`` shows the same picture with
    different drift and sway: same scene, different recording, nothing copied.
    """

    still: int
    take: int
    drift_px: float = 7.0

    def frame(self, t: float, size: tuple[int, int]) -> np.ndarray:
        w, h = size
        big = _workspace(100 + self.still, (w + 40, h + 40))
        rng = np.random.default_rng(9000 + 31 * self.still + self.take)
        fx, fy = rng.uniform(0.1, 0.4, 2)
        px, py = rng.uniform(0, 2 * np.pi, 2)
        x = 20 + self.drift_px * np.sin(2 * np.pi * fx * t + px)
        y = 20 + self.drift_px * np.sin(2 * np.pi * fy * t + py)
        xi, yi = int(round(x)), int(round(y))
        return np.clip(big[yi:yi + h, xi:xi + w], 0, 255).astype(np.uint8)
