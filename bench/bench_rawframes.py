"""Indexing throughput of raw robot-dataset frames against the same frames as H.264 (issue 38 item 5).

Writes ``--seconds`` of generated rig footage at ``--fps`` and each ``--size`` twice: as an mp4
(libx264, ultrafast) and as an ALOHA episode HDF5 of raw frames (and a zarr ReplayBuffer), then
fingerprints each with the indexing settings (``fingerprint_file``, corpus variants, one
process) in ``--repeat`` interleaved rounds and prints footage seconds indexed per CPU second
and the ratio raw / H.264 (best round, and the spread of the per-round ratios). Raw arrays
reach the fingerprint without an encode or decode step, so the ratio shows what skipping the
decoder buys.

``--source CLIP`` uses a real clip's frames instead (decoded, scaled to ``--size`` and looped to
``--seconds``); ``--preset`` is the x264 preset of the mp4 (``ultrafast`` by default, as the
tests write; ``medium`` is x264's and FFmpeg's default, what a lab's recordings usually are).
The synthetic rig is mostly flat colour, which H.264 decodes unusually cheaply.

``drift`` measures what the raw readers' luma from the scaler (``ArrayScaler.luma``, used when
indexing) costs in PDQ bits against the exact path (RGB scaled by swscale, weighted by PDQ):
every real clip in ``../shared/realdata`` (up to ``--seconds`` of its frames at its own size,
as raw HDF5) and the generated rig at each ``--size``; extra Hamming distance over every
variant of every informative sample (quality >= 50), as ``bench_ingest.py exact`` does for video.

Usage::

    python bench/bench_rawframes.py --seconds 20 --size 640x480 1280x720 320x240 --fps 30
    python bench/bench_rawframes.py --size 640x480 --fps 25 --source CLIP.mp4 --preset medium
    python bench/bench_rawframes.py drift --seconds 10

No assertions: this prints figures (timing is never asserted in tests).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.config import load_config  # noqa: E402
from overlap_desktop.core.index.fingerprinting import fingerprint_file  # noqa: E402
from overlap_desktop.core.ingest.fingerprint import fingerprint_stream, variants_from_config  # noqa: E402
from tests.footage import write_video  # noqa: E402
from tests.rig import RigEpisode  # noqa: E402
from tests.robotdata import write_aloha, write_zarr  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
PATHS = ("h264 mp4", "raw HDF5", "raw zarr (blosc)")


def _cpu(path: Path, config: Any, variants: Any) -> float:
    t = time.process_time()
    fingerprint_file(path, config=config, variants=variants)
    return time.process_time() - t


def _clip_frames(source: Path, n: int, size: tuple[int, int] | None) -> np.ndarray:
    import av

    out: list[np.ndarray] = []
    with av.open(str(source)) as c:
        for frame in c.decode(video=0):
            kw = {"width": size[0], "height": size[1]} if size else {}
            out.append(frame.to_ndarray(format="rgb24", **kw))
            if size is None and len(out) >= n:
                break
    if not out:
        raise SystemExit(f"{source}: no frames")
    if size is None:  # drift: the clip's own frames, not looped
        return np.stack(out)
    return np.stack([out[i % len(out)] for i in range(n)])


def _rig(n: int, fps: float, size: tuple[int, int]) -> np.ndarray:
    ep = RigEpisode(5, 1)
    return np.stack([ep.frame(i / fps, size) for i in range(n)])


def _throughput(frames: np.ndarray, args: argparse.Namespace, label: str) -> None:
    h, w = frames.shape[1:3]
    config = load_config(overrides={"index.frame_rate": args.fps})
    variants = variants_from_config(config)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = (write_video(root / "cam.mp4", list(frames), fps=args.fps, options={"preset": args.preset}),
                 write_aloha(root / "episode_0.hdf5", {"cam_high": frames}),
                 write_zarr(root / "buffer.zarr", [{"cam_high": frames}]))
        for p in files:  # warm: imports, page cache, swscale contexts
            fingerprint_file(p, config=config, variants=variants)
        rounds: list[list[float]] = []
        for _ in range(args.repeat):  # interleaved, so load moves every path alike
            rounds.append([_cpu(p, config, variants) for p in files])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{args.seconds:g} s of {w}x{h} at {args.fps:g} fps ({label}; x264 {args.preset}), "
          f"index.fps {config['index.fps']:g}, {args.repeat} rounds (CPU s, one process; load {load:.1f})")
    best = [min(r[i] for r in rounds) for i in range(len(PATHS))]
    for i, name in enumerate(PATHS):
        spread = ", ".join(f"{r[i]:.3f}" for r in rounds)
        print(f"  {name:<18} best {best[i]:6.3f} s  {args.seconds / best[i]:7.1f} footage s per CPU s  ({spread})")
    for i in (1, 2):
        ratios = [r[0] / r[i] for r in rounds]
        print(f"  {PATHS[i]} / h264: best {best[0] / best[i]:.2f}x, rounds {min(ratios):.2f}-{max(ratios):.2f}x "
              f"(median {statistics.median(ratios):.2f}x)")


# --------------------------------------------------------------------------- drift


def _codes(path: Path, exact: bool) -> Any:
    from overlap_desktop.core.ingest.readers.hdf5.aloha import AlohaReader

    config = load_config(overrides={"index.frame_rate": 30.0})
    reader = AlohaReader(config=config, sample_fps=float(config["index.fps"]), exact=exact)
    [info] = reader.streams(path)
    return fingerprint_stream(reader.frames(path, info), fps=float(config["index.fps"]),
                              variants=variants_from_config(config), duration_s=info.duration_s)


def _bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.unpackbits(np.bitwise_xor(a, b), axis=-1).sum(axis=-1)


def _drift(frames: np.ndarray, root: Path, name: str, pooled: list[np.ndarray]) -> None:
    path = write_aloha(root / f"{name}.hdf5", {"cam": frames})
    exact, fast = _codes(path, True), _codes(path, False)
    ok = exact.quality >= 50
    d = _bits(exact.codes[ok], fast.codes[ok]).ravel()
    if d.size:
        pooled.append(d)
    h, w = frames.shape[1:3]
    cell = "-" if not d.size else f"{d.mean():.2f} / {np.percentile(d, 95):.0f} / {d.max()}"
    print(f"| {name} | {w}x{h} | {int(ok.sum())} | {cell} |")


def bench_drift(args: argparse.Namespace) -> None:
    n = int(args.seconds * 30)
    clips = [Path(p) for pat in ("video/*", "vpdq/*.mp4") for p in sorted(glob.glob(str(REALDATA / pat)))]
    pooled: list[np.ndarray] = []
    print("| frames (raw HDF5) | size | samples (q >= 50) | scaler luma vs exact: mean / p95 / max bits |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for clip in clips:
            try:
                frames = _clip_frames(clip, n, None)
            except Exception as exc:  # a clip PyAV cannot decode is skipped, and said so
                print(f"| {clip.name} | - | - | skipped: {exc} |")
                continue
            if frames.shape[1] * frames.shape[2] > 1920 * 1080:
                frames = _clip_frames(clip, n, (1280, 720))
            _drift(frames, root, clip.name, pooled)
        for size in args.size:
            w, h = (int(x) for x in size.split("x"))
            _drift(_rig(n, 30.0, (w, h)), root, f"generated rig {size}", pooled)
    d = np.concatenate(pooled)
    print(f"| **pooled** | | | **{d.mean():.2f} / {np.percentile(d, 95):.0f} / {d.max()}** |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", default="throughput", choices=("throughput", "drift"))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--size", nargs="+", default=["640x480"], help="one or more WIDTHxHEIGHT")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, help="a real clip to take the frames from (default: the synthetic rig)")
    ap.add_argument("--preset", default="ultrafast", help="x264 preset of the mp4")
    args = ap.parse_args()
    if args.what == "drift":
        bench_drift(args)
        return
    n = int(args.seconds * args.fps)
    for size in args.size:
        w, h = (int(x) for x in size.split("x"))
        if args.source is not None:
            _throughput(_clip_frames(args.source, n, (w, h)), args, args.source.name)
        else:
            _throughput(_rig(n, args.fps, (w, h)), args, "synthetic rig")


if __name__ == "__main__":
    main()
