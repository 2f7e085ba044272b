"""Scale benchmark of the comparison: a 1-hour manifest against synthetic indexes.

For each corpus size (footage hours) this builds a synthetic corpus on disk: streams
of 30 minutes sampled at 4 fps, each frame stored in ``--variants`` variants, with
codes that drift over time like real footage (a random walk in bit space), written as
search shards of ``--shard-codes`` rows with the product's own ``build_shard``. A
1-hour, 1-fps manifest is made of planted copies of corpus footage (normal speed, 0.5x,
2x, reversed, mirrored variant, noisier copies) separated by unrelated footage. The
product's comparison engine (``compare_streams``) then runs in a fresh process, so
its peak RSS is the comparison's alone.

Printed per size: build time, compare wall and CPU time, recall of the planted
segments (found = a reported segment from the right stream covering >= 80% of it
with the speed within 3%), false segments, and peak RSS; then the time ratio per
10x corpus. Usage::

    python bench/bench_compare.py                       # 10, 100 and 1000 hours
    python bench/bench_compare.py --hours 10 100 300 --probe 0 --shard-codes 8000000

No timed assertions: this prints figures for docs/scale.md.
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.core.match.lines import MatchParams  # noqa: E402
from overlap_desktop.core.types import StreamFingerprints, Variant  # noqa: E402

STREAM_SECONDS = 1800.0
CORPUS_FPS = 4.0
MASTER_FPS = 8.0  # the "true" footage; the corpus keeps every other frame
FLIPS_PER_MASTER_FRAME = 5


# --------------------------------------------------------------------------- synthetic footage


def _master(sid: int) -> np.ndarray:
    """Identity codes of stream ``sid`` at MASTER_FPS: a random walk (temporal correlation)."""
    rng = np.random.default_rng(1_000_003 * sid + 17)
    n = int(STREAM_SECONDS * MASTER_FPS)
    flips = np.zeros((n, 256), np.uint8)
    cols = rng.integers(0, 256, (n, FLIPS_PER_MASTER_FRAME))
    flips[np.arange(n)[:, None], cols] = 1
    flips[0] = rng.integers(0, 2, 256)
    bits = np.bitwise_xor.accumulate(flips, axis=0)
    return np.packbits(bits, axis=1)


def _masks(sid: int, v: int) -> np.ndarray:
    """Per-variant XOR masks: a variant's codes drift like the original but look unrelated to it."""
    rng = np.random.default_rng(7 * sid + 3)
    m = rng.integers(0, 256, (v, 32), dtype=np.uint8)
    m[0] = 0
    return m


def corpus_stream(sid: int, v: int) -> StreamFingerprints:
    m = _master(sid)[:: int(MASTER_FPS / CORPUS_FPS)]
    codes = m[:, None, :] ^ _masks(sid, v)[None, :, :]
    n = codes.shape[0]
    variants = (Variant(),) + tuple(Variant(mirrored=bool(i % 2), crop=1.0 - 0.04 * (i // 2))
                                    for i in range(1, v))
    return StreamFingerprints(
        times_ns=(np.arange(n) * (1e9 / CORPUS_FPS)).astype(np.int64), quality=np.full(n, 90, np.uint8),
        codes=np.ascontiguousarray(codes), variants=variants, usable=np.ones(n, bool), indeterminate=[],
        fps=CORPUS_FPS, duration_s=STREAM_SECONDS)


def _noisy(codes: np.ndarray, nbits: int, rng: np.random.Generator) -> np.ndarray:
    bits = np.unpackbits(codes, axis=1)
    for row in bits:
        row[rng.choice(256, nbits, replace=False)] ^= 1
    return np.packbits(bits, axis=1)


def make_query(n_streams: int, v: int, seed: int = 5) -> tuple[StreamFingerprints, list[dict]]:
    """A 1-hour, 1-fps offered stream of planted copies separated by unrelated footage."""
    rng = np.random.default_rng(seed)
    plan = [  # (seconds, speed, variant, noise bits)
        (15, 1.0, 0, 10), (30, 1.0, 0, 10), (60, 0.5, 0, 10), (120, 2.0, 0, 10), (30, -1.0, 0, 10),
        (45, 1.0, 1, 10), (20, 1.0, 0, 24), (90, 1.0, 2 % v, 10), (12, 1.0, 0, 10), (60, 0.5, 0, 20),
        (40, 2.0, 1 % v, 10), (25, -1.0, 0, 16), (150, 1.0, 0, 10), (35, 1.0, 0, 28), (50, 1.0, 3 % v, 10),
        (18, 2.0, 0, 10), (70, 1.0, 0, 14), (22, 0.5, 0, 10),
    ]
    codes: list[np.ndarray] = []
    truth: list[dict] = []
    t = 0.0
    filler_sid = 10_000_000  # never in the corpus
    for k, (secs, speed, var, noise) in enumerate(plan):
        gap = float(rng.integers(30, 90))
        fm = _master(filler_sid + k)[:: int(MASTER_FPS)][: int(gap)]
        codes.append(fm)
        t += gap
        sid = int(rng.integers(0, n_streams))
        span = abs(speed) * secs
        start = float(rng.uniform(span + 5, STREAM_SECONDS - span - 5)) if speed < 0 else float(
            rng.uniform(5, STREAM_SECONDS - span - 5))
        m = _master(sid) ^ _masks(sid, v)[var]
        qt = np.arange(secs, dtype=float)
        mt = start + speed * qt
        piece = m[np.clip(np.round(mt * MASTER_FPS).astype(int), 0, len(m) - 1)]
        codes.append(_noisy(piece, noise, rng))
        truth.append({"sid": sid, "q0": t, "q1": t + secs, "c0": start, "speed": speed, "variant": var,
                      "noise": noise})
        t += secs
    rest = 3600 - int(t)
    if rest > 0:
        codes.append(_master(filler_sid + 999)[:: int(MASTER_FPS)][:rest])
        t += rest
    allc = np.concatenate(codes)[:3600]
    n = allc.shape[0]
    fp = StreamFingerprints(times_ns=(np.arange(n) * 1e9).astype(np.int64), quality=np.full(n, 90, np.uint8),
                            codes=allc[:, None, :].copy(), variants=(Variant(),), usable=np.ones(n, bool),
                            indeterminate=[], fps=1.0, duration_s=float(n))
    return fp, truth


# --------------------------------------------------------------------------- phases (subprocesses)


def build(directory: Path, hours: float, v: int, shard_codes: int) -> dict:
    from overlap_desktop.core.index.shards import build_shard

    n_streams = int(round(hours * 3600 / STREAM_SECONDS))
    directory.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    buf_c: list[np.ndarray] = []
    buf_s: list[np.ndarray] = []
    n_buf = 0
    shards = 0

    def flush() -> None:
        nonlocal buf_c, buf_s, n_buf, shards
        if not n_buf:
            return
        codes = np.concatenate(buf_c)
        sids = np.concatenate(buf_s)
        per = int(STREAM_SECONDS * CORPUS_FPS)
        fidx = np.tile(np.repeat(np.arange(per, dtype=np.int32), v), len(buf_c))
        vidx = np.tile(np.arange(v, dtype=np.int16), per * len(buf_c))
        build_shard(directory / f"shard-{shards:04d}", codes, sids, fidx, vidx)
        shards += 1
        buf_c, buf_s, n_buf = [], [], 0

    for sid in range(n_streams):
        fp = corpus_stream(sid, v)
        c = fp.codes.reshape(-1, 32)
        if n_buf and n_buf + c.shape[0] > shard_codes:
            flush()
        buf_c.append(c)
        buf_s.append(np.full(c.shape[0], sid, np.int64))
        n_buf += c.shape[0]
    flush()
    info = {"hours": hours, "streams": n_streams, "variants": v, "shards": shards,
            "codes": n_streams * int(STREAM_SECONDS * CORPUS_FPS) * v,
            "build_s": round(time.perf_counter() - t0, 1),
            "bytes": sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())}
    (directory / "corpus.json").write_text(json.dumps(info))
    return info


class _BenchCorpus:
    def __init__(self, directory: Path, v: int, hours: float = 0.0) -> None:
        self.directory = directory
        self.v = v
        self.hours = hours
        #: CPU seconds spent regenerating synthetic fingerprints (a stand-in for the
        #: index's SQLite read); subtracted from the compare time and reported apart.
        self.regen_cpu = 0.0
        self.loads = 0

    def shards(self):  # type: ignore[no-untyped-def]
        from overlap_desktop.core.index.shards import Shard

        for d in sorted(self.directory.glob("shard-*")):
            shard = Shard.open(d)
            try:
                yield shard
            finally:
                shard.close()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        c0 = time.process_time()
        fp = corpus_stream(stream_id, self.v)
        self.regen_cpu += time.process_time() - c0
        self.loads += 1
        return fp

    def describe(self, stream_id: int) -> tuple[str, str]:
        return f"stream-{stream_id}", "v:0"

    def searched_seconds(self) -> float:
        return self.hours * 3600.0


def query(directory: Path, probe: int) -> dict:
    from overlap_desktop.core.match.compare import QueryStream, compare_streams

    info = json.loads((directory / "corpus.json").read_text())
    q, truth = make_query(info["streams"], info["variants"])
    params = MatchParams(probe=probe)
    corpus = _BenchCorpus(directory, info["variants"], float(info["hours"]))
    # Twice: the first run also pays for reading shards into the page cache (cold), the
    # second is the steady state of a machine that compares offers routinely (warm).
    runs = []
    for _ in range(2):
        corpus.regen_cpu = 0.0
        corpus.loads = 0
        w0, c0 = time.perf_counter(), time.process_time()
        found = compare_streams([QueryStream("offer.mp4", 3600.0, "v:0", q)], corpus, params)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        runs.append((wall - corpus.regen_cpu, cpu - corpus.regen_cpu))
    (cold_wall, cold_cpu), (wall, cpu) = runs
    # Counted segments only: weak evidence (a chance count above max_chance) is not a claim.
    segs = [s for _, sid, s in found if s.query_duration >= params.floor_seconds and not s.weak]
    sids = [sid for _, sid, s in found if s.query_duration >= params.floor_seconds and not s.weak]
    hit = 0
    used = set()
    for t in truth:
        if t["q1"] - t["q0"] < params.floor_seconds:
            continue
        for k, (s, sid) in enumerate(zip(segs, sids)):
            ov = min(s.query_end, t["q1"]) - max(s.query_start, t["q0"])
            if sid == t["sid"] and ov >= 0.8 * (t["q1"] - t["q0"]) and abs(s.speed / t["speed"] - 1) <= 0.03:
                hit += 1
                used.add(k)
                break
    planted = sum(1 for t in truth if t["q1"] - t["q0"] >= params.floor_seconds)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cold_wall_s": round(cold_wall, 2),
            "cold_cpu_s": round(cold_cpu, 2), "planted": planted, "found": hit,
            "recall": round(hit / planted, 3), "false_segments": len(segs) - len(used),
            "peak_rss_mb": round(rss_kb / 1024, 1), "stream_loads": corpus.loads,
            "regen_cpu_s": round(corpus.regen_cpu, 2)}


def _sub(args: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--variants", type=int, default=8, help="codes per frame (default preset: 8)")
    ap.add_argument("--shard-codes", type=int, default=2_000_000)
    ap.add_argument("--probe", type=int, default=MatchParams().probe)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the built corpora")
    ap.add_argument("--phase", choices=["build", "query"], help=argparse.SUPPRESS)
    ap.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.phase == "build":
        print(json.dumps(build(a.target, a.hours[0], a.variants, a.shard_codes)))
        return 0
    if a.phase == "query":
        print(json.dumps(query(a.target, a.probe)))
        return 0
    work = a.dir or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    rows = []
    print(f"variants={a.variants} shard_codes={a.shard_codes} probe={a.probe} work={work}", flush=True)
    for hours in a.hours:
        target = work / f"corpus-{int(hours)}h-v{a.variants}-s{a.shard_codes}"
        if (target / "corpus.json").exists():
            info = json.loads((target / "corpus.json").read_text())
        else:
            info = _sub(["--phase", "build", "--target", str(target), "--hours", str(hours),
                         "--variants", str(a.variants), "--shard-codes", str(a.shard_codes)])
        res = _sub(["--phase", "query", "--target", str(target), "--probe", str(a.probe)])
        row = {**info, **res}
        rows.append(row)
        print(f"{hours:>7.0f} h  codes {info['codes'] / 1e6:7.1f} M  shards {info['shards']:4d}  "
              f"disk {info['bytes'] / 1e9:6.2f} GB  build {info['build_s']:7.1f} s | compare wall "
              f"{res['wall_s']:6.2f} s cpu {res['cpu_s']:6.2f} s (cold: wall {res.get('cold_wall_s', 0):6.2f} s "
              f"cpu {res.get('cold_cpu_s', 0):6.2f} s)  recall {res['found']}/{res['planted']}  "
              f"false {res['false_segments']}  loads {res['stream_loads']}  peak RSS {res['peak_rss_mb']:7.1f} MB", flush=True)
        if not a.keep:
            shutil.rmtree(target, ignore_errors=True)
    for prev, cur in zip(rows, rows[1:]):
        f = cur["hours"] / prev["hours"]
        r = cur["cpu_s"] / max(prev["cpu_s"], 1e-6)
        print(f"{prev['hours']:.0f} h -> {cur['hours']:.0f} h (x{f:.0f} corpus): cpu time x{r:.2f} "
              f"(per 10x: x{r ** (1 / np.log10(f)) if f > 1 else float('nan'):.2f})")
    if a.dir is None and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
