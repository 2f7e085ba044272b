"""Scale benchmark of the offer's self-check (repeats inside an offer, core/repeats.py).

Screening compares the offer's manifest with itself after comparing it with the
library. Its cost depends on the size of the *offer* only (not of the library). This
builds synthetic offers of H hours (30-minute streams sampled at 1 fps like a manifest,
codes drifting like real footage), plants internal repeats (a 0.5x copy and a
same-speed copy of earlier streams), runs :func:`find_repeats` in a fresh process and
prints wall and CPU time, peak RSS and whether the planted repeats were found.
Usage::

    python bench/bench_repeats.py --hours 10 100

No timed assertions: this prints figures for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

STREAM_SECONDS = 1800
FLIPS_PER_SECOND = 10


def _walk(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    flips = np.zeros((n, 256), np.uint8)
    flips[np.arange(n)[:, None], rng.integers(0, 256, (n, FLIPS_PER_SECOND))] = 1
    flips[0] = rng.integers(0, 2, 256)
    return np.packbits(np.bitwise_xor.accumulate(flips, axis=0), axis=1)


def _noisy(codes: np.ndarray, nbits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = np.unpackbits(codes, axis=1)
    for row in bits:
        row[rng.choice(256, nbits, replace=False)] ^= 1
    return np.packbits(bits, axis=1)


def run(hours: float) -> dict:
    from overlap_desktop.core.match.repeats import find_repeats
    from overlap_desktop.core.match.segments import MatchParams
    from overlap_desktop.core.match.types import QueryStream
    from overlap_desktop.core.types import StreamFingerprints, Variant

    n_streams = max(2, int(round(hours * 3600 / STREAM_SECONDS)))
    streams = [_walk(1000 + i, STREAM_SECONDS) for i in range(n_streams)]
    # Plant: the last stream opens with stream 0's 100..160 s slowed to 0.5x (120 s), then
    # stream 1's 300..360 s at normal speed.
    slow = streams[0][np.repeat(np.arange(100, 160), 2)]
    same = streams[1][300:360]
    last = streams[-1].copy()
    last[:120] = _noisy(slow, 10, 1)
    last[120:180] = _noisy(same, 10, 2)
    streams[-1] = last
    queries = []
    for i, codes in enumerate(streams):
        n = codes.shape[0]
        fp = StreamFingerprints(
            times_ns=(np.arange(n) * 1e9).astype(np.int64),
            quality=np.full(n, 90, np.uint8),
            codes=codes[:, None, :].copy(),
            variants=(Variant(),),
            usable=np.ones(n, bool),
            indeterminate=[],
            fps=1.0,
            duration_s=float(n),
        )
        queries.append(QueryStream(f"s{i:05d}.mp4", float(n), "v:0", fp))
    t0, c0 = time.perf_counter(), time.process_time()
    files = find_repeats(queries, MatchParams())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    last_file = files[-1]
    found_slow = any(s.corpus_file == "s00000.mp4" and abs(s.speed - 0.5) < 0.03 for s in last_file.segments)
    found_same = any(s.corpus_file == "s00001.mp4" and abs(s.speed - 1.0) < 0.03 for s in last_file.segments)
    false = sum(
        1
        for f in files
        for s in f.segments
        if not (f is last_file and s.corpus_file in ("s00000.mp4", "s00001.mp4"))
    )
    return {
        "hours": hours,
        "streams": n_streams,
        "codes": n_streams * STREAM_SECONDS,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "found_slow": found_slow,
        "found_same": found_same,
        "false_segments": false,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, nargs="+", default=[10.0, 100.0])
    ap.add_argument("--child", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(run(args.child)))
        return
    for h in args.hours:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(h)], capture_output=True, text=True, check=True
        )
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
