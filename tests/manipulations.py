"""Manipulated copies of generated footage, made with PyAV + numpy only (no ffmpeg program).

A *master* is footage of a :class:`~tests.footage.Scene` at a fixed frame rate: master frame ``i``
is ``scene.frame(i / master_fps)``. An offered copy is described as a list of :class:`Piece` s
(which master, which span, at what speed) plus a per-frame pixel transform; output frames are
picked from the master the way a video editor retimes footage (the frame shown at that time,
dropped or repeated, never synthesised), so speed and frame-rate changes are faithful.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from scipy import ndimage

from tests.footage import Scene, write_video

Transform = Callable[[np.ndarray], np.ndarray]

__all__ = [
    "Piece", "render_edit", "write_edit", "write_recordings", "resize", "crop_centre", "crop_edge", "crop_window",
    "letterbox", "watermark", "colorgrade", "grayscale", "hflip", "vflip", "rot90", "rot180",
    "blur_noise", "picture_in_picture", "remux", "transcode",
]


@dataclass(frozen=True)
class Piece:
    """A stretch of a master placed in the offered file.

    Attributes:
        scene: The master's scene.
        start: Master time (s) where the piece starts (for reversed pieces: where playback starts).
        duration: Offered seconds this piece lasts.
        speed: Master seconds per offered second (0.5 = slowed to half speed; -1 = reversed).
        master_fps: The master's frame rate.
    """

    scene: Scene
    start: float
    duration: float
    speed: float = 1.0
    master_fps: float = 24.0


class _FrameCache:
    """The most recently rendered master frames, shared by every edit made in this process.

    Many offered copies are cut from the same stretch of the same master (the detection matrix
    makes some thirty edits of one 20 s piece), and rendering a frame costs more than encoding
    it. A frame is keyed by the scene object, the master frame number, the master rate and the
    size; scenes are deterministic in time, so a cached frame is the frame. Frames are stored
    read-only: a transform that wrote into its input would fail instead of corrupting later
    edits.
    """

    def __init__(self, max_frames: int) -> None:
        self.max_frames = max_frames
        self._frames: OrderedDict[tuple[int, int, float, tuple[int, int]], tuple[object, np.ndarray]] = (
            OrderedDict())

    def frame(self, scene: Scene, i: int, master_fps: float, size: tuple[int, int]) -> np.ndarray:
        key = (id(scene), i, master_fps, size)
        hit = self._frames.get(key)
        if hit is not None and hit[0] is scene:
            self._frames.move_to_end(key)
            return hit[1]
        img = scene.frame(i / master_fps, size)
        img.flags.writeable = False
        # The scene is kept with its frame so its id cannot be reused while the entry lives.
        self._frames[key] = (scene, img)
        if len(self._frames) > self.max_frames:
            self._frames.popitem(last=False)
        return img


#: About 280 MB at 320x240: all of a 40 s master at 24 fps plus the pieces of a few others.
_FRAMES = _FrameCache(1200)


def render_edit(pieces: Sequence[Piece], *, out_fps: float = 24.0, size: tuple[int, int] = (320, 240),
                transform: Transform | None = None) -> Iterator[np.ndarray]:
    """Yield the offered frames for ``pieces`` played one after the other at ``out_fps``.

    Frames are read-only arrays (shared through a cache); transforms return new arrays.
    """
    for piece in pieces:
        n = int(round(piece.duration * out_fps))
        for k in range(n):
            m = piece.start + piece.speed * (k / out_fps)
            # The master frame on screen at master time m (tiny epsilon against float error).
            i = math.floor(m * piece.master_fps + 1e-6)
            img = _FRAMES.frame(piece.scene, i, piece.master_fps, size)
            yield transform(img) if transform is not None else img


def write_edit(path: Path, pieces: Sequence[Piece], *, out_fps: float = 24.0,
               size: tuple[int, int] = (320, 240), transform: Transform | None = None,
               codec: str = "libx264", **kw: object) -> Path:
    return write_video(path, render_edit(pieces, out_fps=out_fps, size=size, transform=transform),
                       fps=out_fps, codec=codec, **kw)  # type: ignore[arg-type]


def write_recordings(folder: Path, recordings: Mapping[str, Any], *, duration: float, fps: float,
                     size: tuple[int, int], **kw: object) -> None:
    """Write each recording (a :class:`Scene` or anything with its ``frame(t, size)``) whole, its
    first ``duration`` seconds, as ``folder/<name>.mp4``."""
    for name, scene in recordings.items():
        write_edit(folder / f"{name}.mp4", [Piece(scene, 0.0, duration, master_fps=fps)], out_fps=fps, size=size,
                   **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- pixel transforms


def resize(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """Scale with swscale (bicubic), the way an editor would."""
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
    return frame.reformat(width=w, height=h, format="rgb24").to_ndarray()


def _even(n: float) -> int:
    return max(2, int(round(n)) // 2 * 2)


def crop_window(keep: float, anchor: tuple[float, float] = (0.5, 0.5), upscale: bool = True) -> Transform:
    """Keep ``keep`` of each dimension, the window's position given by ``anchor`` (0..1 of the slack)."""

    def t(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        cw, ch = _even(w * keep), _even(h * keep)
        x0 = int(round((w - cw) * anchor[0]))
        y0 = int(round((h - ch) * anchor[1]))
        out = img[y0:y0 + ch, x0:x0 + cw]
        return resize(out, w, h) if upscale else np.ascontiguousarray(out)

    return t


def crop_centre(keep: float) -> Transform:
    return crop_window(keep, (0.5, 0.5))


def crop_edge(side: str, depth: float) -> Transform:
    """Remove ``depth`` of the frame from one side (the copy keeps the smaller size)."""

    def t(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        dh, dw = int(round(h * depth)), int(round(w * depth))
        out = {"bottom": img[: h - dh], "top": img[dh:], "left": img[:, dw:], "right": img[:, : w - dw]}[side]
        oh, ow = out.shape[0] // 2 * 2, out.shape[1] // 2 * 2
        return np.ascontiguousarray(out[:oh, :ow])

    return t


def letterbox(bar: float) -> Transform:
    """Squeeze the picture vertically and add black bars of ``bar`` height top and bottom."""

    def t(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        b = _even(h * bar)
        inner = resize(img, w, h - 2 * b)
        out = np.zeros_like(img)
        out[b:b + inner.shape[0]] = inner
        return out

    return t


def _glyph_mask(w: int, h: int, seed: int = 5) -> np.ndarray:
    """Blocky pseudo-text (no font rendering available): 8 'characters' of 5x7 cells."""
    rng = np.random.default_rng(seed)
    cells = rng.random((7, 8 * 6)) < 0.45
    cells[:, 5::6] = False  # spacing between characters
    return np.kron(cells, np.ones((max(1, h // 7), max(1, w // 48)), bool))


def watermark(opacity: float = 0.6) -> Transform:
    """White pseudo-text in the bottom-right corner at ``opacity``."""

    def t(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        mask = _glyph_mask(int(w * 0.35), int(h * 0.1))
        mh, mw = mask.shape
        out = img.astype(np.float32)
        y0, x0 = h - mh - int(h * 0.04), w - mw - int(w * 0.04)
        region = out[y0:y0 + mh, x0:x0 + mw]
        region[mask] = (1 - opacity) * region[mask] + opacity * 255.0
        return out.clip(0, 255).astype(np.uint8)

    return t


def colorgrade(sat: float = 1.4, gamma: float = 1.15, brightness: float = 12.0, contrast: float = 1.1) -> Transform:
    def t(img: np.ndarray) -> np.ndarray:
        x = img.astype(np.float32) / 255.0
        grey = x.mean(axis=2, keepdims=True)
        x = grey + sat * (x - grey)
        x = np.clip(x, 0, 1) ** (1 / gamma)
        x = (x - 0.5) * contrast + 0.5 + brightness / 255.0
        return (np.clip(x, 0, 1) * 255).astype(np.uint8)

    return t


def grayscale(img: np.ndarray) -> np.ndarray:
    y = (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)
    return np.repeat(y[:, :, None], 3, axis=2)


def hflip(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(img[:, ::-1])


def vflip(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(img[::-1])


def rot90(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.rot90(img, 1))


def rot180(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(img[::-1, ::-1])


def blur_noise(sigma: float = 1.2, noise: float = 8.0, seed: int = 3) -> Transform:
    rng = np.random.default_rng(seed)

    def t(img: np.ndarray) -> np.ndarray:
        x = ndimage.gaussian_filter(img.astype(np.float32), sigma=(sigma, sigma, 0))
        x += rng.normal(0, noise, size=x.shape).astype(np.float32)
        return x.clip(0, 255).astype(np.uint8)

    return t


def picture_in_picture(background: Scene, scale: float = 0.5) -> Transform:
    """Shrink the picture to ``scale`` of each dimension over ``background`` footage."""
    state = {"k": 0}

    def t(img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        bg = background.frame(state["k"] / 24.0, (w, h)).copy()
        state["k"] += 1
        small = resize(img, _even(w * scale), _even(h * scale))
        bg[h // 8: h // 8 + small.shape[0], w // 8: w // 8 + small.shape[1]] = small
        return bg

    return t


# --------------------------------------------------------------------------- file-level operations


def remux(src: Path, dst: Path) -> Path:
    """Copy the video packets into another container without re-encoding."""
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        s_in = inp.streams.video[0]
        s_out = out.add_stream_from_template(s_in)
        for packet in inp.demux(s_in):
            if packet.dts is None:
                continue
            packet.stream = s_out
            out.mux(packet)
    return dst


def transcode(src: Path, dst: Path, *, codec: str, options: dict[str, str] | None = None,
              bit_rate: int | None = None, fps: float | None = None) -> Path:
    """Decode ``src`` and encode it again with ``codec`` (e.g. libx265 CRF 30, VP9 at a low bitrate)."""
    frames: list[np.ndarray] = []
    with av.open(str(src)) as inp:
        rate = inp.streams.video[0].average_rate
        for frame in inp.decode(video=0):
            frames.append(frame.to_ndarray(format="rgb24"))
    return write_video(dst, frames, fps=float(fps or rate or Fraction(24)), codec=codec, options=options,
                       bit_rate=bit_rate)
