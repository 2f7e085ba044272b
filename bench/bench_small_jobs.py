"""Small jobs are never slower by default (issue 38, item 3): serial vs the default vs --workers 2
vs --cluster on jobs of a few short files.

Run from the repository root::

    python bench/bench_small_jobs.py            # every job, 3 interleaved rounds
    python bench/bench_small_jobs.py --rounds 5 --no-cluster

Each run is a separate ``overlap index`` process into a fresh index (start-up, SHA-256, commits
and sealing included), as a user runs it. Runs of one round follow each other (serial, default,
--workers 2, --cluster, serial, ...), so each round's ratio compares runs made seconds apart;
the median over rounds is reported with the spread and the 1-minute load average. The Dask
``LocalCluster`` (2 single-threaded workers) is started once and not timed. What the default
chose (``engine`` of the JSON summary) and any note are printed. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.footage import Scene, render_frames, write_video  # noqa: E402

#: (name, files, seconds, (width, height), crf): short episodes at the sizes labs record.
JOBS = [
    ("2 x 3 s 1280x720", 2, 3.0, (1280, 720), "23"),
    ("6 x 12 s 426x240", 6, 12.0, (426, 240), "23"),
    ("12 x 12 s 426x240", 12, 12.0, (426, 240), "23"),
    ("4 x 12 s 1280x720", 4, 12.0, (1280, 720), "23"),
    ("3 x 12 s 1280x720 crf 12", 3, 12.0, (1280, 720), "12"),
    ("6 x 12 s 1280x720", 6, 12.0, (1280, 720), "23"),
    ("6 x 12 s 1280x720 crf 12", 6, 12.0, (1280, 720), "12"),
    ("24 x 12 s 426x240", 24, 12.0, (426, 240), "23"),
]


def make_job(root: Path, files: int, seconds: float, size: tuple[int, int], crf: str) -> Path:
    """``files`` clips: two rendered sources (2 s of motion looped) copied under ``files`` names."""
    if len(list(root.glob("*.mp4"))) == files:
        return root
    root.mkdir(parents=True, exist_ok=True)
    sources = []
    for k in range(min(2, files)):
        scene = Scene(300 + k, canvas_hw=(1500, 6000), velocity=(120.0, 0.0))
        frames = list(render_frames(scene, duration=2.0, fps=30.0, size=size))
        loop = [frames[i % len(frames)] for i in range(int(seconds * 30))]
        sources.append(write_video(root / f"ep{k:03d}.mp4", loop, fps=30.0,
                                   options={"preset": "veryfast", "crf": crf}))
    for i in range(len(sources), files):
        shutil.copy(sources[i % len(sources)], root / f"ep{i:03d}.mp4")
    return root


def run_index(corpus: Path, idx: Path, *flags: str) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    """``overlap index corpus --index idx FLAGS`` in a fresh process: (wall, CPU of it and its workers, summary)."""
    shutil.rmtree(idx, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "overlap_desktop", "index", str(corpus), "--index", str(idx),
                          "--json", *flags], capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(out.stdout or "{}")
    assert out.returncode == 0 and summary.get("indexed") == len(list(corpus.glob("*.mp4"))), out.stderr[-2000:]
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cluster", action="store_true", help="skip the --cluster runs")
    ap.add_argument("--corpus", type=Path, default=None, help="folder for the generated jobs (kept and reused)")
    ap.add_argument("--only", default="", help="run only the jobs whose name contains this")
    args = ap.parse_args(argv)
    lc = None
    if not args.no_cluster:
        import distributed

        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      host="127.0.0.1")
    try:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            base = args.corpus or tmp / "jobs"
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
            print(f"## Small jobs: serial vs default vs --workers 2 vs --cluster; {cores} cores, "
                  f"{args.rounds} interleaved rounds")
            for name, files, seconds, size, crf in JOBS:
                if args.only and args.only not in name:
                    continue
                corpus = make_job(base / name.replace(" ", ""), files, seconds, size, crf)
                mb = sum(p.stat().st_size for p in corpus.glob("*.mp4")) / 1e6
                runs: list[tuple[str, tuple[str, ...]]] = [("serial", ("--workers", "1")), ("default", ()),
                                                           ("--workers 2", ("--workers", "2"))]
                if lc is not None:
                    runs.append(("--cluster", ("--cluster", lc.scheduler_address)))
                walls: dict[str, list[float]] = {n: [] for n, _ in runs}
                cpus: dict[str, list[float]] = {n: [] for n, _ in runs}
                chose: dict[str, str] = {}
                loads = []
                for _ in range(args.rounds):
                    for label, flags in runs:
                        loads.append(os.getloadavg()[0])
                        wall, cpu, summary = run_index(corpus, tmp / "ix", *flags)
                        walls[label].append(wall)
                        cpus[label].append(cpu)
                        chose[label] = summary.get("engine", "?") + "".join(
                            f" [{w}]" for w in summary.get("warnings", []) if "cluster" in w)
                print(f"### {name}: {files} files, {mb:.1f} MB; 1-min load {min(loads):.1f}-{max(loads):.1f}")
                for label, _ in runs:
                    ratios = sorted(s / w for s, w in zip(walls["serial"], walls[label]))
                    cpu_ratio = float(np.median(cpus[label])) / float(np.median(cpus["serial"]))
                    print(f"  {label:12s} wall median {float(np.median(walls[label])):5.2f} s; speed-up over serial "
                          f"median {float(np.median(ratios)):4.2f}x (rounds {', '.join(f'{r:4.2f}' for r in ratios)}); "
                          f"CPU {cpu_ratio:4.2f}x serial's; ran on: {chose[label]}")
    finally:
        if lc is not None:
            lc.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
