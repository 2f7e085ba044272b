"""Deterministic synthetic footage that resembles robot data, made with PyAV + numpy.

A *scene* is a large procedurally textured canvas (several octaves of smoothed noise
plus random shapes: a stand-in for a cluttered workspace). Footage is a camera
window panning across it with moving objects drawn on top. Different seeds give
unrelated scenes; the same seed with another camera path gives "same scene,
different view".

Everything is deterministic in ``seed``: the same call writes a decodable file with
the same pixels (encoders are deterministic with fixed settings).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from scipy import ndimage

__all__ = ["Scene", "render_frames", "read_video", "write_video", "make_clip"]


@dataclass
class Scene:
    """A textured canvas and a camera path over it.

    Attributes:
        seed: Determines texture, objects and path.
        canvas_hw: Canvas size in pixels.
        start_xy: Camera window top-left at t=0 (canvas pixels).
        velocity: Camera pan speed in canvas pixels per second (x, y).
        wobble: Amplitude of a slow vertical wobble (pixels).
        objects: Number of moving discs.
    """

    seed: int
    canvas_hw: tuple[int, int] = (720, 2400)
    start_xy: tuple[float, float] = (40.0, 60.0)
    velocity: tuple[float, float] = (55.0, 0.0)
    wobble: float = 25.0
    objects: int = 4
    _canvas: np.ndarray | None = field(default=None, repr=False)

    def canvas(self) -> np.ndarray:
        if self._canvas is None:
            self._canvas = _make_canvas(self.seed, self.canvas_hw)
        return self._canvas


    def frame(self, t: float, size: tuple[int, int]) -> np.ndarray:
        """RGB uint8 (h, w, 3) of the view at time ``t`` seconds; ``size`` is (w, h)."""
        w, h = size
        canvas = self.canvas()
        ch, cw = canvas.shape[:2]
        # The camera sees a window 2x the output size, sampled with a 2x2 box filter
        # (cheap anti-aliasing so sub-pixel pans stay smooth).
        vw, vh = w * 2, h * 2
        x = self.start_xy[0] + self.velocity[0] * t
        y = self.start_xy[1] + self.velocity[1] * t + self.wobble * np.sin(2 * np.pi * t / 9.0)
        x = float(np.clip(x, 0, cw - vw - 1))
        y = float(np.clip(y, 0, ch - vh - 1))
        xi, yi = int(x), int(y)
        # The 2x2 sums in uint16 (the same integers as widening the whole window first): rows
        # paired through a reshaped view, then columns; half the memory traffic.
        v = canvas[yi:yi + vh, xi:xi + vw].reshape(h, 2, w, 2, 3)
        rows = v[:, 0].astype(np.uint16)
        rows += v[:, 1]
        acc = rows[:, :, 0] + rows[:, :, 1]
        acc >>= 2
        small = acc.astype(np.uint8)
        for cx0, cy0, vx, vy, r, col in _objects(self.seed, self.objects, w, h):
            cx = (cx0 + vx * t) % w
            cy = (cy0 + vy * t) % h
            x0, x1 = max(0, int(cx - r)), min(w, int(cx + r) + 1)
            y0, y1 = max(0, int(cy - r)), min(h, int(cy + r) + 1)
            if x0 >= x1 or y0 >= y1:
                continue
            yy, xx = np.ogrid[y0:y1, x0:x1]
            mask = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
            small[y0:y1, x0:x1][mask] = col
        return small


@functools.lru_cache(maxsize=64)
def _objects(seed: int, n: int, w: int, h: int) -> tuple[tuple[float, float, float, float, float, np.ndarray], ...]:
    """The moving discs' start, velocity, radius and colour: drawn once per scene and frame size
    (they used to be drawn again for every frame, the same draws from the same seed)."""
    rng = np.random.default_rng(seed + 7)
    out = []
    for _ in range(n):
        cx0, cy0 = rng.uniform(0, w), rng.uniform(0, h)
        vx, vy = rng.uniform(-30, 30), rng.uniform(-20, 20)
        r = rng.uniform(6, 15)
        col = rng.integers(0, 256, size=3).astype(np.uint8)
        col.flags.writeable = False
        out.append((cx0, cy0, vx, vy, r, col))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _make_canvas(seed: int, hw: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h, w = hw
    out = np.zeros((h, w, 3), np.float32)
    for sigma, amp in ((40, 90), (12, 60), (4, 35), (1.2, 18)):
        # Mostly luminance structure with a little colour, like real indoor scenes.
        # Low octaves are generated coarse and upsampled: same look, a fraction of the cost.
        f = max(1, int(sigma // 2))
        noise = rng.standard_normal((-(-h // f), -(-w // f))).astype(np.float32)
        noise = ndimage.gaussian_filter(noise, sigma=sigma / f)
        if f > 1:
            noise = ndimage.zoom(noise, f, order=1)[:h, :w]
        noise /= noise.std() + 1e-6
        tint = rng.uniform(0.6, 1.0, size=3).astype(np.float32)
        out += amp * noise[:, :, None] * tint
    out += 128
    # Rectangles and bars: workspace clutter with hard edges.
    for _ in range(int(w * h / 9000)):
        x0, y0 = rng.integers(0, w), rng.integers(0, h)
        rw, rh = rng.integers(10, 120), rng.integers(10, 120)
        out[y0:y0 + rh, x0:x0 + rw] = rng.uniform(0, 255, size=3)
    return np.clip(out, 0, 255).astype(np.uint8)


def render_frames(scene: Scene, *, duration: float, fps: float, size: tuple[int, int] = (320, 240),
                  t0: float = 0.0, speed: float = 1.0,
                  transform: Callable[[np.ndarray], np.ndarray] | None = None) -> Iterator[np.ndarray]:
    """Frames of ``scene`` from scene time ``t0``; ``speed`` < 1 plays slower (more frames
    per scene second), negative plays backwards."""
    n = int(round(duration * fps))
    for i in range(n):
        t = t0 + speed * i / fps
        img = scene.frame(t, size)
        yield transform(img) if transform is not None else img


def write_video(path: Path, frames: Iterator[np.ndarray] | list[np.ndarray], *, fps: float,
                codec: str = "libx264", options: dict[str, str] | None = None,
                pix_fmt: str = "yuv420p", bit_rate: int | None = None) -> Path:
    """Encode RGB frames to ``path`` (container from the suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = Fraction(fps).limit_denominator(1001)
    with av.open(str(path), mode="w") as container:
        stream = None
        for k, img in enumerate(frames):
            if stream is None:
                stream = container.add_stream(codec, rate=rate)
                stream.width = img.shape[1] - img.shape[1] % 2
                stream.height = img.shape[0] - img.shape[0] % 2
                stream.pix_fmt = pix_fmt
                if bit_rate:
                    stream.bit_rate = bit_rate
                # Every frame gets its pts (below). Even so x264's output is not the same from run to
                # run here (one thread or several, seen on the same frames under load), so a test
                # must hold on every encode of its footage, not on one (the dim room below).
                opts = {"preset": "ultrafast", "crf": "20"} if codec == "libx264" else {}
                opts.update(options or {})
                stream.options = opts
                stream.codec_context.time_base = Fraction(1) / rate
            img = np.ascontiguousarray(img[: stream.height, : stream.width])
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = k
            frame.time_base = stream.codec_context.time_base
            for packet in stream.encode(frame):
                container.mux(packet)
        if stream is not None:
            for packet in stream.encode():
                container.mux(packet)
    return path


def read_video(path: Path) -> tuple[list[np.ndarray], float]:
    """Every frame of ``path``'s first video stream as RGB, and its average frame rate."""
    with av.open(str(path)) as container:
        fps = float(container.streams.video[0].average_rate or 25)
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)], fps


def make_clip(path: Path, seed: int, *, duration: float = 20.0, fps: float = 24.0,
              size: tuple[int, int] = (320, 240), t0: float = 0.0, speed: float = 1.0,
              transform: Callable[[np.ndarray], np.ndarray] | None = None,
              codec: str = "libx264", **scene_kw: object) -> Path:
    """Render and encode a clip of scene ``seed`` in one call."""
    scene = Scene(seed, **scene_kw)  # type: ignore[arg-type]
    return write_video(path, render_frames(scene, duration=duration, fps=fps, size=size, t0=t0,
                                           speed=speed, transform=transform), fps=fps, codec=codec)
