"""Indexing throughput of raw robot-dataset frames against the same frames as H.264 (issue 38 item 5).

Writes ``--seconds`` of generated rig footage at ``--fps`` and ``--size`` twice: as an mp4
(libx264, ultrafast) and as an ALOHA episode HDF5 of raw frames (and a zarr ReplayBuffer), then
fingerprints each with the indexing settings (``fingerprint_file``, corpus variants, one
process) ``--repeat`` times and prints footage seconds indexed per CPU second and the ratio
raw / H.264. Raw arrays reach the fingerprint without an encode or decode step, so the ratio
shows what skipping the decoder buys.

``--source CLIP`` uses a real clip's frames instead (decoded, scaled to ``--size`` and looped to
``--seconds``); ``--preset`` is the x264 preset of the mp4 (``ultrafast`` by default, as the
tests write; ``medium`` is x264's and FFmpeg's default, what a lab's recordings usually are).
The synthetic rig is mostly flat colour, which H.264 decodes unusually cheaply.

Usage::

    python bench/bench_rawframes.py --seconds 30 --size 640x480 --fps 30
    python bench/bench_rawframes.py --size 640x480 --fps 25 --source CLIP.mp4 --preset medium

No assertions: this prints figures (timing is never asserted in tests).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.config import load_config  # noqa: E402
from overlap_desktop.core.index.fingerprinting import fingerprint_file  # noqa: E402
from overlap_desktop.core.ingest.fingerprint import variants_from_config  # noqa: E402
from tests.footage import write_video  # noqa: E402
from tests.rig import RigEpisode  # noqa: E402
from tests.robotdata import write_aloha, write_zarr  # noqa: E402


def _cpu(path: Path, config: object, repeat: int) -> float:
    variants = variants_from_config(config)  # type: ignore[arg-type]
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fingerprint_file(path, config=config, variants=variants)  # type: ignore[arg-type]
        best = min(best, time.process_time() - t)
    return best


def _clip_frames(source: Path, n: int, size: tuple[int, int]) -> np.ndarray:
    import av

    out: list[np.ndarray] = []
    with av.open(str(source)) as c:
        for frame in c.decode(video=0):
            out.append(frame.to_ndarray(width=size[0], height=size[1], format="rgb24"))
    if not out:
        raise SystemExit(f"{source}: no frames")
    return np.stack([out[i % len(out)] for i in range(n)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, help="a real clip to take the frames from (default: the synthetic rig)")
    ap.add_argument("--preset", default="ultrafast", help="x264 preset of the mp4")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    n = int(args.seconds * args.fps)
    if args.source is not None:
        frames = _clip_frames(args.source, n, (w, h))
    else:
        ep = RigEpisode(5, 1)
        frames = np.stack([ep.frame(i / args.fps, (w, h)) for i in range(n)])
    config = load_config(overrides={"index.frame_rate": args.fps})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mp4 = write_video(root / "cam.mp4", list(frames), fps=args.fps, options={"preset": args.preset})
        h5 = write_aloha(root / "episode_0.hdf5", {"cam_high": frames})
        zarr = write_zarr(root / "buffer.zarr", [{"cam_high": frames}])
        cpu = {name: _cpu(p, config, args.repeat) for name, p in
               (("h264 mp4", mp4), ("raw HDF5", h5), ("raw zarr (blosc)", zarr))}
    what = args.source.name if args.source is not None else "synthetic rig"
    print(f"{args.seconds:g} s of {w}x{h} at {args.fps:g} fps ({what}; x264 {args.preset}), "
          f"index.fps {config['index.fps']:g}, best of {args.repeat} (CPU seconds, one process)")
    for name, s in cpu.items():
        print(f"  {name:<18} {s:7.2f} s CPU   {args.seconds / s:8.1f} footage s per CPU s")
    for name in ("raw HDF5", "raw zarr (blosc)"):
        print(f"  {name} / h264 throughput: {cpu['h264 mp4'] / cpu[name]:.2f}x")


if __name__ == "__main__":
    main()
