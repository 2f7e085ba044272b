"""Throughput and memory of the text-overlap scan, in MB/s of training text.

Generates synthetic training text (random words from a 20k vocabulary, one document per
line, 60 words a line) with planted copies of some test examples, then scans it in one run:

- a plain read of the same bytes, and a read that also splits them into words (the least
  work any tokenizer does; on a shared machine absolute figures move with the load, ratios
  to this baseline and MB per CPU-second much less);
- the scan in this process (``--workers 1``), with 2 worker processes, and on a 2-worker Dask
  ``LocalCluster`` (separate processes) unless ``--no-cluster``;

and prints MB/s (wall), the ratio to the read+split baseline, the speed-up over one worker,
MB per CPU-second and the peak RSS of the whole process tree (both sampled every 0.1 s), and
the recall of the planted examples.

Usage: python bench/bench_text_overlap.py [--mb 1024] [--examples 2000] [--no-cluster]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from overlap_desktop.core.text.overlap import Document, text_overlap


class PeakRss:
    """Peak resident memory and CPU time of this process and all its descendants, sampled in a
    thread (CPU seconds are what a loaded, shared machine does not inflate much: they give the
    throughput per core when the wall clock is shared with other work)."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak = 0
        self.cpu_start: dict[int, float] = {}
        self.cpu_last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _total(self) -> int:
        total = 0
        for p in [self._proc, *self._proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
                t = p.cpu_times()
                self.cpu_last[p.pid] = t.user + t.system
                self.cpu_start.setdefault(p.pid, 0.0 if self.started else t.user + t.system)
            except Exception:
                continue
        return total

    @property
    def cpu(self) -> float:
        """CPU seconds used by the tree while sampling."""
        return sum(v - self.cpu_start.get(pid, 0.0) for pid, v in self.cpu_last.items())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._total())
            time.sleep(0.1)

    def __enter__(self) -> PeakRss:
        self.started = False
        self.base = self._total()
        self.started = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._total()


def generate(path: Path, mb: float, tests: list[str], rng: np.random.Generator, vocab: np.ndarray) -> set[int]:
    """Write ``mb`` MB of text; returns the planted test examples (14 tokens of each, in
    later copies of the base block, so every one is a match at n <= 14)."""
    base_lines = [" ".join(row) for row in rng.choice(vocab, size=(16_000, 60))]
    base = ("\n".join(base_lines) + "\n").encode()
    long_enough = [i for i, t in enumerate(tests) if len(t.split()) >= 14]
    planted = sorted(rng.choice(long_enough, size=50, replace=False).tolist())
    target = int(mb * 1e6)
    copies = max(1, -(-target // len(base)))
    per_copy = -(-len(planted) // copies)
    written, k = 0, 0
    with open(path, "wb") as fh:
        for c in range(copies):
            lines = []
            for _ in range(per_copy):
                if k < len(planted):
                    lines.append("prefix words " + " ".join(tests[planted[k]].split()[:14]) + " suffix")
                    k += 1
            block = ("\n".join(lines) + "\n").encode() if lines else b""
            # A per-copy marker keeps the copies from being identical text.
            fh.write(f"copy {c} of the base block\n".encode() + block + base)
            written += len(base)
            if written >= target:
                break
    return set(planted)


def timed(label: str, size_mb: float, fn: Callable[[], Any], read_mbs: float,
          one: float | None) -> tuple[Any, float]:
    with PeakRss() as rss:
        t0 = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t0
    mbs = size_mb / dt
    extra = f", {one and mbs / one:.2f}x one worker" if one else ""
    print(f"{label}: {size_mb:.0f} MB in {dt:.1f} s = {mbs:.1f} MB/s wall ({mbs / read_mbs:.2f} of the read+split "
          f"baseline{extra}); {size_mb / rss.cpu:.1f} MB per CPU-second ({rss.cpu:.0f} CPU-s over the process "
          f"tree); peak RSS {rss.peak / 2**20:.0f} MiB (tree, before {rss.base / 2**20:.0f} MiB)")
    return r, mbs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1024.0)
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--no-cluster", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}x{rng.integers(1e6)}" for i in range(20_000)])
    tests = [" ".join(rng.choice(vocab, size=int(rng.integers(10, 40)))) for _ in range(args.examples)]
    docs = [Document(t, "test", str(i)) for i, t in enumerate(tests)]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start "
          f"(shared with other work: compare ratios, not absolute MB/s)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        t0 = time.perf_counter()
        planted = generate(path, args.mb, tests, rng, vocab)
        size_mb = path.stat().st_size / 1e6
        print(f"generated {size_mb:.0f} MB in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        with open(path, "rb") as fh:
            while fh.read(8 << 20):
                pass
        plain = size_mb / (time.perf_counter() - t0)
        # The least any scan must do: read the bytes and split them into words (one C call a block).
        t0, c0 = time.perf_counter(), time.process_time()
        with open(path, "rb") as fh:
            while block := fh.read(8 << 20):
                block.split()
        read_mbs = size_mb / (time.perf_counter() - t0)
        print(f"plain read: {plain:.0f} MB/s; read + split into words: {read_mbs:.0f} MB/s wall, "
              f"{size_mb / (time.process_time() - c0):.0f} MB per CPU-second")

        def report(r: Any) -> None:
            found = set(r.matched_examples) & planted
            print(f"    n={r.n}; planted found {len(found)}/{len(planted)}; "
                  f"other examples {len(set(r.matched_examples) - planted)}")

        r1, one = timed("workers=1", size_mb, lambda: text_overlap(docs, [path], workers=1), read_mbs, None)
        report(r1)
        r2, _ = timed("workers=2", size_mb, lambda: text_overlap(docs, [path], workers=2), read_mbs, one)
        report(r2)
        assert r2.to_dict() == r1.to_dict(), "2 workers must give the 1-worker result"
        if not args.no_cluster:
            from distributed import LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                              silence_logs=40) as cluster:
                # Workers import the scanner on their first task; a running cluster has done that.
                t0 = time.perf_counter()
                warm = Path(tmp) / "warm.txt"
                warm.write_text(tests[0] + "\n", encoding="utf-8")
                text_overlap(docs[:10], [warm], cluster=cluster.scheduler_address)
                print(f"cluster warm-up (connect, first imports on the workers): {time.perf_counter() - t0:.1f} s")
                rc, _ = timed("LocalCluster(2 workers)", size_mb,
                              lambda: text_overlap(docs, [path], cluster=cluster.scheduler_address),
                              read_mbs, one)
            report(rc)
            assert rc.to_dict() == r1.to_dict(), "the cluster must give the 1-worker result"


if __name__ == "__main__":
    main()
