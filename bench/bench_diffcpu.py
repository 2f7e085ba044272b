"""Indexing CPU against pure-decode CPU as a user's process spends it (issue 38, item 1).

Run from the repository root::

    python bench/bench_diffcpu.py               # 426x240 and 1280x720, 60 s vs 2 s, 3 rounds

For each resolution, a big clip (``--seconds``) and a tiny one (2 s) of the same footage are
(a) decoded by a bare PyAV script (every frame, ``thread_type="AUTO"``) and (b) indexed by a
whole ``overlap index FILE --index NEW --workers 1`` process, each in its own process, rounds
interleaved. The figure is the *differential* CPU (user + sys of the process and its children):
big minus tiny, so interpreter start-up, imports, opening the index and sealing cancel and what
remains is the per-footage-second cost. The ratio printed is decode CPU / index CPU: 1.0 means
indexing costs what decoding costs; above 1.0 indexing is cheaper (it skips work a full decode
does). The minimum over rounds of each CPU figure is used (other load only adds CPU time through
cache and frequency effects; it never removes any). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.footage import Scene, render_frames, write_video  # noqa: E402

DECODE = """
import sys, av
with av.open(sys.argv[1]) as c:
    s = c.streams.video[0]
    s.thread_type = "AUTO"
    n = sum(1 for _ in c.decode(s))
print(n)
"""


def make_clip(path: Path, seconds: float, size: tuple[int, int]) -> Path:
    """``seconds`` of H.264 at ``size``: 2 s of rendered motion looped (decoded in full all the same)."""
    scene = Scene(11, canvas_hw=(1500, 6000), velocity=(120.0, 0.0))
    frames = list(render_frames(scene, duration=2.0, fps=30.0, size=size))
    loop = [frames[i % len(frames)] for i in range(int(seconds * 30))]
    return write_video(path, loop, fps=30.0, options={"preset": "veryfast", "crf": "23"})


def child_cpu(args: list[str]) -> float:
    """CPU seconds (user + sys) of running ``args`` to completion in a child process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out.returncode == 0, out.stderr[-2000:]
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the big clip")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"## Differential CPU: overlap index vs pure PyAV decode, {args.seconds:.0f} s minus 2 s, "
          f"min of {args.rounds} interleaved rounds; 1-min load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for size in ((426, 240), (1280, 720)):
            clips = {"big": make_clip(tmp / f"big{size[1]}.mp4", args.seconds, size),
                     "tiny": make_clip(tmp / f"tiny{size[1]}.mp4", 2.0, size)}
            cpu: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.rounds):
                for name, clip in clips.items():
                    cpu.setdefault(("decode", name), []).append(
                        child_cpu([sys.executable, "-c", DECODE, str(clip)]))
                    shutil.rmtree(tmp / "ix", ignore_errors=True)
                    cpu.setdefault(("index", name), []).append(child_cpu(
                        [sys.executable, "-m", "overlap_desktop", "index", str(clip), "--index", str(tmp / "ix"),
                         "--workers", "1", "-q"]))
            best = {k: min(v) for k, v in cpu.items()}
            dec = best["decode", "big"] - best["decode", "tiny"]
            idx = best["index", "big"] - best["index", "tiny"]
            print(f"{size[0]}x{size[1]}: decode {best['decode', 'big']:.2f} - {best['decode', 'tiny']:.2f} = "
                  f"{dec:.2f} s CPU; index {best['index', 'big']:.2f} - {best['index', 'tiny']:.2f} = {idx:.2f} s CPU; "
                  f"ratio decode/index {dec / idx:.2f}x (1-min load now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
