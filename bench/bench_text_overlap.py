"""Throughput of the text-overlap check, in MB/s of training text.

Generates synthetic training text (random words from a 20k vocabulary, one document per
line) with planted copies of some test examples, then runs the check with 1 worker and
with one per core in the same run. Prints MB/s, the speed-up and recall of the planted
examples.

Usage: python bench/bench_text_overlap.py [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from overlap_desktop.core.textoverlap import Document, text_overlap  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--examples", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}x{rng.integers(1e6)}" for i in range(20_000)])
    tests = [" ".join(rng.choice(vocab, size=int(rng.integers(10, 40)))) for _ in range(args.examples)]
    long_enough = [i for i, t in enumerate(tests) if len(t.split()) >= 14]
    planted = set(rng.choice(long_enough, size=50, replace=False).tolist())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        target = int(args.mb * 1e6)
        with open(path, "w", encoding="utf-8") as fh:
            written, k = 0, 0
            actually: set[int] = set()
            while written < target:
                words = rng.choice(vocab, size=(2000, 60))
                lines = [" ".join(row) for row in words]
                if k < len(planted):
                    actually.add(sorted(planted)[k])
                    ex = tests[sorted(planted)[k]].split()
                    lines[0] = "prefix words " + " ".join(ex[:14]) + " suffix"
                    k += 1
                block = "\n".join(lines) + "\n"
                fh.write(block)
                written += len(block)
        size_mb = path.stat().st_size / 1e6
        docs = [Document(t, "test", str(i)) for i, t in enumerate(tests)]
        results = {}
        for workers in (1, os.cpu_count() or 1):
            t0 = time.perf_counter()
            r = text_overlap(docs, [path], workers=workers)
            dt = time.perf_counter() - t0
            results[workers] = dt
            found = set(r.matched_examples) & actually
            print(f"workers={workers}: {size_mb:.0f} MB in {dt:.1f} s = {size_mb / dt:.1f} MB/s; n={r.n}; "
                  f"planted found {len(found)}/{len(actually)}; other examples {len(set(r.matched_examples) - actually)}")
        if len(results) > 1:
            w = max(results)
            print(f"speed-up with {w} workers: {results[1] / results[w]:.2f}x")


if __name__ == "__main__":
    main()
