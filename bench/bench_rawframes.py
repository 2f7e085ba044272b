"""Indexing throughput of raw robot-dataset frames against the same frames as H.264 (issue 38 item 5).

Writes ``--seconds`` of generated rig footage at ``--fps`` and ``--size`` twice: as an mp4
(libx264, ultrafast) and as an ALOHA episode HDF5 of raw frames (and a zarr ReplayBuffer), then
fingerprints each with the indexing settings (``fingerprint_file``, corpus variants, one
process) ``--repeat`` times and prints footage seconds indexed per CPU second and the ratio
raw / H.264. Raw arrays reach the fingerprint without an encode or decode step, so the ratio
shows what skipping the decoder buys.

Usage::

    python bench/bench_rawframes.py --seconds 30 --size 640x480 --fps 30

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    ep = RigEpisode(5, 1)
    frames = np.stack([ep.frame(i / args.fps, (w, h)) for i in range(int(args.seconds * args.fps))])
    config = load_config(overrides={"index.frame_rate": args.fps})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mp4 = write_video(root / "cam.mp4", list(frames), fps=args.fps)
        h5 = write_aloha(root / "episode_0.hdf5", {"cam_high": frames})
        zarr = write_zarr(root / "buffer.zarr", [{"cam_high": frames}])
        cpu = {name: _cpu(p, config, args.repeat) for name, p in
               (("h264 mp4", mp4), ("raw HDF5", h5), ("raw zarr (blosc)", zarr))}
    print(f"{args.seconds:g} s of {w}x{h} at {args.fps:g} fps, index.fps {config['index.fps']:g}, "
          f"best of {args.repeat} (CPU seconds, one process)")
    for name, s in cpu.items():
        print(f"  {name:<18} {s:7.2f} s CPU   {args.seconds / s:8.1f} footage s per CPU s")
    for name in ("raw HDF5", "raw zarr (blosc)"):
        print(f"  {name} / h264 throughput: {cpu['h264 mp4'] / cpu[name]:.2f}x")


if __name__ == "__main__":
    main()
