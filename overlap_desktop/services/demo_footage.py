"""Small deterministic footage for ``overlap demo``, made with numpy and PyAV.

The demo must work on a fresh machine with nothing but the installed product (no
test package, no ffmpeg program, no downloads), so it renders its own footage: a
procedurally textured workspace seen through a panning camera, with a few moving
objects on top. The same ``seed`` always gives the same pixels, on every platform
(numpy's PCG64 generator is portable), so the demo's answer is reproducible.

This module is Qt-free and imports PyAV lazily (only :func:`write_clip` needs it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

__all__ = ["DemoScene", "centre_crop", "mirror", "render", "write_clip"]

Transform = Callable[[np.ndarray], np.ndarray]


def _upsample(grid: np.ndarray, h: int, w: int, cell: int) -> np.ndarray:
    """Bilinear upsampling of a coarse (gh, gw) grid to (h, w), one grid cell = ``cell`` pixels."""
    ys = np.arange(h, dtype=np.float32) / cell
    xs = np.arange(w, dtype=np.float32) / cell
    y0, x0 = ys.astype(np.int64), xs.astype(np.int64)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    # Smoothstep weights hide the grid lines plain bilinear leaves in value noise.
    fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)
    a = grid[y0][:, x0]
    b = grid[y0][:, x0 + 1]
    c = grid[y0 + 1][:, x0]
    d = grid[y0 + 1][:, x0 + 1]
    return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy


def _canvas(seed: int, h: int, w: int) -> np.ndarray:
    """A cluttered-workspace texture: octaves of value noise plus hard-edged boxes."""
    rng = np.random.default_rng(seed)
    out = np.full((h, w, 3), 128.0, np.float32)
    for cell, amp in ((96, 70.0), (24, 45.0), (6, 22.0)):
        grid = rng.standard_normal((h // cell + 2, w // cell + 2)).astype(np.float32)
        noise = _upsample(grid, h, w, cell)
        tint = rng.uniform(0.6, 1.0, size=3).astype(np.float32)
        out += amp * noise[:, :, None] * tint
    # Boxes and bars: strong edges, like tools, bins and table borders.
    for _ in range(max(8, h * w // 7000)):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        bw, bh = int(rng.integers(8, 90)), int(rng.integers(8, 90))
        out[y0:y0 + bh, x0:x0 + bw] = rng.uniform(0, 255, size=3)
    return np.clip(out, 0, 255).astype(np.uint8)


@dataclass
class DemoScene:
    """A textured workspace and a camera panning across it.

    Attributes:
        seed: Determines texture, objects and camera wobble.
        size: Output frame size (width, height) in pixels.
        pan: Camera speed in pixels per second (x); the canvas is made wide enough
            for ``max_seconds`` of panning.
        max_seconds: Longest scene time that will be rendered.
        objects: Number of moving discs drawn over the texture.
    """

    seed: int
    size: tuple[int, int] = (320, 240)
    pan: float = 36.0
    max_seconds: float = 30.0
    objects: int = 4
    _canvas: np.ndarray | None = field(default=None, init=False, repr=False)
    _discs: list[tuple[float, float, float, float, float, np.ndarray]] = field(
        default_factory=list, init=False, repr=False)

    def _ensure(self) -> np.ndarray:
        if self._canvas is None:
            w, h = self.size
            cw = int(w + self.pan * self.max_seconds) + 8
            ch = h + 48  # room for the vertical wobble
            self._canvas = _canvas(self.seed, ch, cw)
            rng = np.random.default_rng(self.seed + 1_000_003)
            self._discs = [(rng.uniform(0, w), rng.uniform(0, h), rng.uniform(-28, 28),
                            rng.uniform(-18, 18), rng.uniform(7, 16),
                            rng.integers(0, 256, size=3).astype(np.uint8))
                           for _ in range(self.objects)]
        return self._canvas

    def frame(self, t: float) -> np.ndarray:
        """The view at scene time ``t`` seconds: ``uint8`` RGB of shape (height, width, 3)."""
        canvas = self._ensure()
        w, h = self.size
        x = int(np.clip(round(4 + self.pan * t), 0, canvas.shape[1] - w))
        y = int(np.clip(round(24 + 20 * np.sin(2 * np.pi * t / 8.0)), 0, canvas.shape[0] - h))
        img = canvas[y:y + h, x:x + w].copy()
        for cx0, cy0, vx, vy, r, colour in self._discs:
            cx, cy = (cx0 + vx * t) % w, (cy0 + vy * t) % h
            x0, x1 = max(0, int(cx - r)), min(w, int(cx + r) + 1)
            y0, y1 = max(0, int(cy - r)), min(h, int(cy + r) + 1)
            if x0 >= x1 or y0 >= y1:
                continue
            yy, xx = np.ogrid[y0:y1, x0:x1]
            img[y0:y1, x0:x1][(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = colour
        return img


def render(scene: DemoScene, *, start: float, seconds: float, fps: float, speed: float = 1.0,
           transform: Transform | None = None) -> Iterator[np.ndarray]:
    """Frames of a clip ``seconds`` long showing scene time from ``start`` onwards.

    Args:
        scene: What the camera sees.
        start: Scene time (seconds) of the clip's first frame.
        seconds: Clip duration in seconds.
        fps: Frames per second of the clip.
        speed: Scene seconds per clip second (0.5 = a slowed copy, twice as long).
        transform: Applied to each frame (mirror, crop...).

    Returns:
        An iterator of ``uint8`` RGB frames.
    """
    for i in range(int(round(seconds * fps))):
        img = scene.frame(start + speed * i / fps)
        yield transform(img) if transform is not None else img


def mirror(img: np.ndarray) -> np.ndarray:
    """Left-right mirror (what a vendor does to make a copy look new)."""
    return np.ascontiguousarray(img[:, ::-1])


def centre_crop(keep: float) -> Transform:
    """A transform that keeps the centred ``keep`` fraction of each dimension and scales
    the result back to the original size (a zoom-crop)."""
    import av

    def apply(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        ch, cw = int(round(h * keep)), int(round(w * keep))
        y0, x0 = (h - ch) // 2, (w - cw) // 2
        part = np.ascontiguousarray(img[y0:y0 + ch, x0:x0 + cw])
        frame = av.VideoFrame.from_ndarray(part, format="rgb24")
        return frame.to_ndarray(format="rgb24", width=w, height=h)

    return apply


def write_clip(path: Path, frames: Iterator[np.ndarray], *, fps: float) -> Path:
    """Encode RGB frames as H.264 in MP4 (settings fixed, so output is reproducible).

    Args:
        path: Output file; its folder is created.
        frames: ``uint8`` RGB frames of one even size.
        fps: Frame rate.

    Returns:
        ``path``.
    """
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with av.open(str(tmp), mode="w", format="mp4") as container:
        stream = None
        for k, img in enumerate(frames):
            if stream is None:
                stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
                stream.width, stream.height = img.shape[1], img.shape[0]
                stream.pix_fmt = "yuv420p"
                # One thread, and each frame's pts set: x264's output then does not depend on the
                # machine's core count or vary from run to run (frames without a pts gave differing
                # files now and then).
                stream.options = {"preset": "ultrafast", "crf": "22", "threads": "1"}
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = k  # in the stream's time base, 1/rate
            for packet in stream.encode(frame):
                container.mux(packet)
        if stream is not None:
            for packet in stream.encode():
                container.mux(packet)
    tmp.replace(path)
    return path
