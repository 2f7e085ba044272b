"""Scale benchmark of the comparison: a 1-hour manifest against synthetic indexes.

For each corpus size (footage hours) this builds a synthetic corpus on disk: streams
of 30 minutes sampled at 4 fps, each frame stored in ``--variants`` variants, with
codes that behave like real footage (consecutive samples differ by a few bits, and a
scene cut every 2-8 s jumps to an unrelated code), written as the index seals them:
the seed samples only (``--seed-fps``, default the index's one per second, chosen with the
product's ``seed_frames``), batches of whole streams of at most ``--shard-codes`` rows
(default the index's), the product's own ``build_shard``. Verification reads every
4-fps sample (the synthetic streams are regenerated, standing in for SQLite). A 1-hour,
1-fps manifest
is made of planted copies of corpus footage (normal speed, 0.5x, 2x, reversed,
mirrored variant, noisier copies, and two copies turned 270 and 180 degrees) separated
by unrelated footage. The comparison then runs in a fresh process, so its peak RSS is the
comparison's alone, twice over: "upright only" is the engine alone (``compare_streams``,
the offered codes as given); "with orientations" is the call ``compare()`` makes,
``search_orientations(...)`` (core/match/pipeline.py), which adds one pass over the shards with
three turned copies of every offered code (core/ingest/orient.py). The turned copies can
only be found with orientations, so upright recall is at most 18 of the 20.

Corpora larger than ``--max-build-hours`` are not written out (10,000 hours would take
about 28 GB and an hour of CPU to generate): they are the built corpus searched as ``hours / max-build-hours``
replicas, replica ``k`` being every code XOR a fixed random mask (:class:`_ReplicaShard`).
XOR with a constant keeps every Hamming distance, so a replica costs exactly what a
distinct corpus of the same kind of footage costs to search, and is unrelated to the
planted copies. What it does not reproduce is the page cache: the replicas share one
corpus's pages, so figures are for a warm cache (a real 10,000-hour index reads its
pages from disk on the first comparison).

Printed per size and column: compare wall and CPU time (upright: warm, and cold in
brackets; with orientations: warm), recall of the planted segments (found = a reported
segment from the right stream covering >= 80% of it with the speed within 3%; turned
copies apart), false segments, peak RSS, and the kernel (system) CPU time and minor page
faults of the comparison (mapping shard pages); then the CPU time ratio per 10x corpus
for both columns, and every figure as JSON. Neither the synthetic streams' regeneration
nor the replicas' own query plans are counted (both exist only in the simulation). Usage::

    python bench/bench_compare.py                       # 10, 100, 1,000 and 10,000 hours
    python bench/bench_compare.py --hours 10 100 1000 --max-build-hours 100 --shard-codes 16000000
    python bench/bench_compare.py --seed-fps 0 --shard-codes 2000000   # the layout before format 4
    python bench/bench_compare.py --hours 20 200 2000 --max-build-hours 2000 --drop-cache --keep --dir DIR

``--drop-cache`` times the first comparison of the day: every file of the built corpus (no
replicas: give ``--max-build-hours`` at least the largest size) is written back and dropped
from the page cache (``posix_fadvise`` DONTNEED) before a comparison with orientations, the
call ``compare()`` makes; its wall time, the bytes read from storage and the peak RSS are
printed, and the growth of that cold wall time per 10x with a projection to 10,000 hours.
    python bench/bench_compare.py --phase convert --target DIR --dest DIR2 --to-version 2

No timed assertions: this prints figures for bench/RESULTS.md.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from overlap_desktop.core.index.sealing import DEFAULT_SHARD_CODES  # noqa: E402
from overlap_desktop.core.index.shards import DEFAULT_SEED_FPS  # noqa: E402
from overlap_desktop.core.ingest.orient import orient_codes  # noqa: E402
from overlap_desktop.core.match.orientations import OrientedCorpus  # noqa: E402
from overlap_desktop.core.match.segments import MatchParams  # noqa: E402
from overlap_desktop.core.types import StreamFingerprints, Variant  # noqa: E402

STREAM_SECONDS = 1800.0
CORPUS_FPS = 4.0
MASTER_FPS = 8.0  # the "true" footage; the corpus keeps every other frame
#: Bits flipped per master frame inside a scene: consecutive corpus samples (4/s) differ
#: by about 4 bits, one-second samples by about 16, like slowly moving real footage.
FLIPS_PER_MASTER_FRAME = 2
#: Scene lengths in seconds (uniform): at a cut the code jumps to an unrelated one.
SCENE_SECONDS = (2.0, 8.0)


# --------------------------------------------------------------------------- synthetic footage


def _master(sid: int) -> np.ndarray:
    """Identity codes of stream ``sid`` at MASTER_FPS, temporally correlated like footage.

    Inside a scene the code drifts by a few bits per frame (a random walk in bit space);
    at a scene cut, every few seconds, it is replaced by an unrelated random code.
    """
    rng = np.random.default_rng(1_000_003 * sid + 17)
    n = int(STREAM_SECONDS * MASTER_FPS)
    flips = np.zeros((n, 256), np.uint8)
    cols = rng.integers(0, 256, (n, FLIPS_PER_MASTER_FRAME))
    flips[np.arange(n)[:, None], cols] = 1
    lo, hi = (int(x * MASTER_FPS) for x in SCENE_SECONDS)
    cuts = np.cumsum(rng.integers(lo, hi + 1, n // lo + 1))
    cuts = np.r_[0, cuts[cuts < n]]
    # XOR with uniform random bits: the code after a cut is independent of the one before.
    flips[cuts] = rng.integers(0, 2, (cuts.size, 256), dtype=np.uint8)
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
    # Turned offers (appended, so the 18 upright copies above keep their random draws): the
    # offer shows the owned picture rotated 270 and 180 degrees. Their codes are the owned
    # codes turned on bits (what compare's turned pass undoes exactly), plus 16 noise bits:
    # the 10 of the other copies and ~6 for the flip approximation's mean cost measured on
    # real frames (bench/RESULTS.md, "Orientations from codes").
    turned: dict[int, tuple[bool, int]] = {len(plan): (False, 270), len(plan) + 1: (False, 180)}
    plan += [(60, 1.0, 0, 16), (45, 1.0, 0, 16)]
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
        if k in turned:
            piece = orient_codes(piece, turned[k])
        codes.append(_noisy(piece, noise, rng))
        truth.append({"sid": sid, "q0": t, "q1": t + secs, "c0": start, "speed": speed, "variant": var,
                      "noise": noise, "turned": turned.get(k, (False, 0))})
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


def build(directory: Path, hours: float, v: int, shard_codes: int, seed_fps: float | None) -> dict:
    """Write the corpus as the index seals it: seed rows on the product's seed grid, batches of
    whole streams up to ``shard_codes`` rows, rows stream-major, the product's ``build_shard``."""
    from overlap_desktop.core.index.shards import build_shard, seed_frames

    n_streams = int(round(hours * 3600 / STREAM_SECONDS))
    directory.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    buf: list[tuple[int, np.ndarray, np.ndarray]] = []
    n_buf = 0
    shards = 0
    rows = 0

    def flush() -> None:
        nonlocal buf, n_buf, shards
        if not n_buf:
            return
        codes = np.concatenate([c for _, c, _ in buf])
        sids = np.concatenate([np.full(c.shape[0], sid, np.int64) for sid, c, _ in buf])
        fidx = np.concatenate([np.repeat(f, v) for _, _, f in buf])
        vidx = np.tile(np.arange(v, dtype=np.int16), codes.shape[0] // v)
        build_shard(directory / f"shard-{shards:04d}", codes, sids, fidx, vidx, seed_fps=seed_fps)
        shards += 1
        buf, n_buf = [], 0

    for sid in range(n_streams):
        fp = corpus_stream(sid, v)
        frames = seed_frames(fp.times_ns, fp.usable, seed_fps)
        c = np.ascontiguousarray(fp.codes[frames].reshape(-1, 32))
        if n_buf and n_buf + c.shape[0] > shard_codes:
            flush()
        buf.append((sid, c, frames))
        n_buf += c.shape[0]
        rows += c.shape[0]
    flush()
    info = {"hours": hours, "streams": n_streams, "variants": v, "shards": shards, "codes": rows,
            "seed_fps": seed_fps, "shard_codes": shard_codes,
            "build_s": round(time.perf_counter() - t0, 1),
            "bytes": sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())}
    (directory / "corpus.json").write_text(json.dumps(info))
    return info


def convert(src: Path, dst: Path, version: int) -> dict:
    """Copy a built corpus into shard format ``version`` (2, 3 or 4), same rows.

    Lets one run time an older layout against the current one on the same corpus.
    """
    from overlap_desktop.core.index.shards import Shard, build_shard

    dst.mkdir(parents=True, exist_ok=True)
    for d in sorted(src.glob("shard-*")):
        shard = Shard.open(d)
        r = np.arange(shard.count, dtype=np.int64)
        build_shard(dst / d.name, np.asarray(shard.codes), shard.stream_of(r), np.asarray(shard.column("frame_idx")),
                    np.asarray(shard.column("variant_idx")), version=version, seed_fps=shard.seed_fps)
        shard.close()
    info = json.loads((src / "corpus.json").read_text())
    info["bytes"] = sum(f.stat().st_size for f in dst.rglob("*") if f.is_file())
    (dst / "corpus.json").write_text(json.dumps(info))
    return info


def _replica_mask(k: int) -> np.ndarray:
    """XOR mask of replica ``k`` (0 = the built corpus itself, unmasked)."""
    if k == 0:
        return np.zeros(32, np.uint8)
    return np.random.default_rng(9_000_011 + k).integers(0, 256, 32, dtype=np.uint8)


class _ReplicaShard:
    """A built shard seen as replica ``k``: every code XOR a fixed mask, new stream ids.

    XOR with a constant is a bijection that keeps every Hamming distance, so the masked
    shard has the same statistics as another shard of correlated footage (same scene
    structure, same bucket fill) while being unrelated to the original and to the
    planted copies. Searching it means searching with the query codes XOR the mask;
    the masked query plan is made once per replica and compare, not per shard. A real
    index makes one plan for all its shards, so the CPU time of the replicas' extra plans
    is simulation overhead: it is added to ``corpus.replica_plan_cpu`` and not counted.
    """

    def __init__(self, shard: Any, k: int, corpus: _BenchCorpus) -> None:
        self.shard, self.k, self.n_base, self.plans = shard, k, corpus.n_base, corpus.plans
        self.corpus = corpus
        self.chunks = shard.chunks

    def __len__(self) -> int:
        return len(self.shard)

    def search(self, query: Any, *, max_distance: int, probe: int = 0, **kw: Any) -> Any:
        from overlap_desktop.core.index.plan import QueryPlan

        key = (self.k, id(query))
        if key not in self.plans:
            c0 = time.process_time()
            codes = query.codes if isinstance(query, QueryPlan) else np.asarray(query)
            # The query object is kept with its plan, so its id is not reused meanwhile.
            plan = QueryPlan.make(codes ^ _replica_mask(self.k), self.chunks, probe=getattr(query, "probe", probe))
            plan.unique_probes()  # made once per plan, like the real plan's
            self.plans[key] = (query, plan)
            self.corpus.replica_plan_cpu += time.process_time() - c0
        h = self.shard.search(self.plans[key][1], max_distance=max_distance, **kw)
        h.stream_id = h.stream_id + self.k * self.n_base
        return h


class _BenchCorpus:
    """The built corpus, ``replicas`` times (replica ``k`` through :class:`_ReplicaShard`)."""

    def __init__(self, directory: Path, v: int, hours: float = 0.0, replicas: int = 1) -> None:
        self.directory = directory
        self.v = v
        self.hours = hours
        self.replicas = replicas
        self.n_base = int(json.loads((directory / "corpus.json").read_text())["streams"])
        self.plans: dict[tuple[int, int], Any] = {}
        #: CPU seconds spent regenerating synthetic fingerprints (a stand-in for the
        #: index's SQLite read); subtracted from the compare time and reported apart.
        self.regen_cpu = 0.0
        #: CPU seconds of the replicas' own query plans (:class:`_ReplicaShard`), not counted.
        self.replica_plan_cpu = 0.0
        self.loads = 0

    def shards(self) -> Iterator[Any]:
        from overlap_desktop.core.index.shards import Shard

        self.plans.clear()
        for k in range(self.replicas):
            for d in sorted(self.directory.glob("shard-*")):
                shard = Shard.open(d)
                try:
                    yield shard if k == 0 else _ReplicaShard(shard, k, self)
                finally:
                    shard.close()
        self.plans.clear()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        c0 = time.process_time()
        k, base = divmod(stream_id, self.n_base)
        fp = corpus_stream(base, self.v)
        if k:
            fp.codes[...] ^= _replica_mask(k)
        self.regen_cpu += time.process_time() - c0
        self.loads += 1
        return fp

    def describe(self, stream_id: int) -> tuple[str, str]:
        return f"stream-{stream_id}", "v:0"

    def searched_seconds(self) -> float:
        return self.hours * 3600.0


def _score(found: list[tuple[int, int, Any]], truth: list[dict], params: MatchParams) -> dict:
    """Recall of the planted copies and false segments among counted segments.

    Stream ids of turned passes are tagged (:class:`OrientedCorpus`); the real id is the
    tag's remainder. A turned copy counts only when it is found from the right stream.
    """
    # Counted segments only: weak evidence (a chance count above max_chance) is not a claim.
    kept = [(sid % OrientedCorpus._TAG, s) for _, sid, s in found
            if s.query_duration >= params.floor_seconds and not s.weak]
    hit = hit_turned = 0
    used = set()
    for t in truth:
        if t["q1"] - t["q0"] < params.floor_seconds:
            continue
        for k, (sid, s) in enumerate(kept):
            ov = min(s.query_end, t["q1"]) - max(s.query_start, t["q0"])
            if sid == t["sid"] and ov >= 0.8 * (t["q1"] - t["q0"]) and abs(s.speed / t["speed"] - 1) <= 0.03:
                hit += 1
                hit_turned += t["turned"] != (False, 0)
                used.add(k)
                break
    planted = [t for t in truth if t["q1"] - t["q0"] >= params.floor_seconds]
    return {"planted": len(planted), "found": hit,
            "planted_turned": sum(t["turned"] != (False, 0) for t in planted), "found_turned": hit_turned,
            "false_segments": len(kept) - len(used)}


def drop_pages(directory: Path) -> dict:
    """Drop the page cache of every file under ``directory`` (written back first, then
    ``posix_fadvise(DONTNEED)``), so the next read meets the disk as the first comparison of the
    day does. Returns the files and bytes dropped, and the bytes still cached as ``fincore``
    (util-linux) counts them, when it is installed."""
    files = [f for f in directory.rglob("*") if f.is_file()]
    total = 0
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    cached = None
    if shutil.which("fincore") and files:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, files)],
                             capture_output=True, text=True, check=False)
        cached = sum(int(x) for x in out.stdout.split() if x.isdigit())
    return {"files": len(files), "bytes": total, "still_cached_bytes": cached}


def query(directory: Path, probe: int, replicas: int = 1, repeats: int = 1, drop: bool = False) -> dict:
    """Time one comparison of the 1-hour offer: upright only, then as ``compare()`` runs it.

    Each warm comparison runs ``repeats`` times and the median CPU time is reported (every run's
    is kept in ``cpu_runs`` / ``o_cpu_runs``): a one-off slow run on a shared machine otherwise
    moved the growth ratio by +-0.3 (bench/RESULTS.md).

    "Upright" is ``compare_streams`` alone (the offered codes as given); "oriented" is the
    call ``compare()`` makes, ``search_orientations(...)``: the upright
    pass plus one pass with the three turned copies of every offered code.
    """
    from overlap_desktop.core.match.pipeline import compare_streams, search_orientations
    from overlap_desktop.core.match.types import QueryStream

    info = json.loads((directory / "corpus.json").read_text())
    q, truth = make_query(info["streams"], info["variants"])
    params = MatchParams(probe=probe)
    corpus = _BenchCorpus(directory, info["variants"], float(info["hours"]) * replicas, replicas)
    queries = [QueryStream("offer.mp4", 3600.0, "v:0", q)]

    kernel: dict[str, dict[str, float]] = {}

    def timed(oriented: bool, name: str = "") -> tuple[float, float, list[tuple[int, int, Any]]]:
        corpus.regen_cpu = 0.0
        corpus.replica_plan_cpu = 0.0
        corpus.loads = 0
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        w0, c0 = time.perf_counter(), time.process_time()
        if oriented:
            found, _view = search_orientations(queries, corpus, params)
        else:
            found = compare_streams(queries, corpus, params)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        # Kernel time and minor page faults (mapping shard pages, fresh anonymous memory):
        # what mapping the shards costs, apart from the array work in user time.
        kernel[name] = {"sys_s": round(r1.ru_stime - r0.ru_stime, 2), "minflt": r1.ru_minflt - r0.ru_minflt,
                        "replica_plan_cpu_s": round(corpus.replica_plan_cpu, 3)}
        # Regenerating synthetic fingerprints stands in for the index's SQLite read, and the
        # replicas' own query plans exist only in the simulation: neither is counted.
        sim = corpus.regen_cpu + corpus.replica_plan_cpu
        return wall - sim, cpu - sim, found

    # Upright twice: the first run also pays for reading shards into the page cache (cold),
    # the second is the steady state of a machine that compares offers routinely (warm).
    # With ``drop`` the cold runs start from an empty page cache (drop_pages), and the call
    # compare() makes (with orientations) is timed cold too, from an empty cache again.
    cold: dict[str, Any] = {}
    if drop:
        cold["dropped"] = drop_pages(directory)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        o_cold_wall, o_cold_cpu, o_cold_found = timed(True, "cold_o")
        cold.update(o_cold_wall_s=round(o_cold_wall, 2), o_cold_cpu_s=round(o_cold_cpu, 2),
                    o_cold_recall=_score(o_cold_found, truth, params)["found"],
                    o_cold_peak_rss_mb=round(max(rss0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024, 1),
                    o_cold_read_mb=round(_read_bytes() / 1e6, 1))
        drop_pages(directory)
    cold_wall, cold_cpu, _ = timed(False, "cold")
    runs = [timed(False, "") for _ in range(max(1, repeats))]
    wall, cpu = float(np.median([r[0] for r in runs])), float(np.median([r[1] for r in runs]))
    found = runs[-1][2]
    up = _score(found, truth, params)
    up_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    up_loads, up_regen = corpus.loads, corpus.regen_cpu
    o_runs = [timed(True, "o_") for _ in range(max(1, repeats))]
    o_wall, o_cpu = float(np.median([r[0] for r in o_runs])), float(np.median([r[1] for r in o_runs]))
    o_found = o_runs[-1][2]
    ori = _score(o_found, truth, params)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cold_wall_s": round(cold_wall, 2),
            "cold_cpu_s": round(cold_cpu, 2), **up, "recall": round(up["found"] / up["planted"], 3),
            "peak_rss_mb": round(up_rss / 1024, 1), "stream_loads": up_loads, "regen_cpu_s": round(up_regen, 2),
            "o_wall_s": round(o_wall, 2), "o_cpu_s": round(o_cpu, 2), **{f"o_{k}": v for k, v in ori.items()},
            "o_peak_rss_mb": round(rss_kb / 1024, 1), "o_stream_loads": corpus.loads,
            "cpu_runs": [round(r[1], 2) for r in runs], "o_cpu_runs": [round(r[1], 2) for r in o_runs],
            "o_regen_cpu_s": round(corpus.regen_cpu, 2), **cold,
            **{f"{k}{f}": v for k, d in kernel.items() if k != "cold" for f, v in d.items()}}


def _advise_random() -> None:
    """Map shards with ``MADV_RANDOM`` instead of the huge-page hint (this process only)."""
    import mmap

    from overlap_desktop.core.index import arrays

    def advise(mm: mmap.mmap) -> bool:
        mm.madvise(mmap.MADV_RANDOM)
        return True

    arrays.advise_hugepages = advise  # type: ignore[assignment]


def _read_bytes() -> int:
    """Bytes this process has read from storage so far (Linux ``/proc/self/io``; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _sub(args: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _runs(values: list[float]) -> str:
    """The CPU seconds of every warm run, when there were several (the median is printed before)."""
    return f"(median of {', '.join(f'{v:.2f}' for v in values)}) " if len(values) > 1 else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, nargs="+", default=[10, 100, 1000, 10000])
    ap.add_argument("--variants", type=int, default=8, help="codes per frame (default preset: 8)")
    ap.add_argument("--shard-codes", type=int, default=DEFAULT_SHARD_CODES,
                    help="rows per shard (default: the index's, %(default)s)")
    ap.add_argument("--seed-fps", type=float, default=DEFAULT_SEED_FPS,
                    help="seed samples per second kept in shards (default: the index's; 0 = every sample)")
    ap.add_argument("--probe", type=int, default=MatchParams().probe)
    ap.add_argument("--repeats", type=int, default=3,
                    help="warm comparisons per size and mode; the median CPU time is reported")
    ap.add_argument("--max-build-hours", type=float, default=1000.0,
                    help="larger corpora are replicas of a corpus this size (see _ReplicaShard)")
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the built corpora")
    ap.add_argument("--phase", choices=["build", "query", "convert"], help=argparse.SUPPRESS)
    ap.add_argument("--to-version", type=int, default=4, help=argparse.SUPPRESS)
    ap.add_argument("--dest", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--replicas", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--advise", choices=["hugepage", "random"], default="hugepage",
                    help="how the shard maps are advised: the product's huge-page hint, or (an experiment, "
                         "the product unchanged) MADV_RANDOM, which reads only the pages a search touches")
    ap.add_argument("--drop-cache", action="store_true",
                    help="time the first comparison cold: every index file's pages dropped (posix_fadvise DONTNEED)")
    a = ap.parse_args(argv)
    if a.phase == "build":
        print(json.dumps(build(a.target, a.hours[0], a.variants, a.shard_codes, a.seed_fps or None)))
        return 0
    if a.phase == "query":
        if a.advise == "random":
            _advise_random()
        print(json.dumps(query(a.target, a.probe, a.replicas, a.repeats, a.drop_cache)))
        return 0
    if a.phase == "convert":
        print(json.dumps(convert(a.target, a.dest, a.to_version)))
        return 0
    work = a.dir or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    rows = []
    print(f"variants={a.variants} shard_codes={a.shard_codes} seed_fps={a.seed_fps:g} probe={a.probe} work={work} "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for hours in sorted(a.hours):
        base = min(hours, a.max_build_hours)
        replicas = max(1, int(round(hours / base)))
        target = work / f"corpus-{int(base)}h-v{a.variants}-s{a.shard_codes}-f{a.seed_fps:g}"
        if (target / "corpus.json").exists():
            info = json.loads((target / "corpus.json").read_text())
        else:
            info = _sub(["--phase", "build", "--target", str(target), "--hours", str(base),
                         "--variants", str(a.variants), "--shard-codes", str(a.shard_codes),
                         "--seed-fps", str(a.seed_fps)])
        res = _sub(["--phase", "query", "--target", str(target), "--probe", str(a.probe),
                    "--replicas", str(replicas), "--repeats", str(a.repeats), "--advise", a.advise,
                    *(["--drop-cache"] * a.drop_cache)])
        row = {**info, **res, "hours": base * replicas, "replicas": replicas}
        rows.append(row)
        print(f"{row['hours']:>7.0f} h  codes {info['codes'] * replicas / 1e6:7.1f} M  shards "
              f"{info['shards'] * replicas:4d}  disk {info['bytes'] / 1e9:6.2f} GB ({info['bytes'] / base / 1e6:5.1f} "
              f"MB/h{f', x{replicas} replicas' if replicas > 1 else ''})  build {info['build_s']:7.1f} s", flush=True)
        print(f"         upright only     : cpu {res['cpu_s']:6.2f} s {_runs(res['cpu_runs'])}wall "
              f"{res['wall_s']:6.2f} s (cold: cpu {res['cold_cpu_s']:6.2f} s wall {res['cold_wall_s']:6.2f} s)  "
              f"recall {res['found']}/{res['planted']} "
              f"(turned {res['found_turned']}/{res['planted_turned']})  false {res['false_segments']}  "
              f"loads {res['stream_loads']}  peak RSS {res['peak_rss_mb']:7.1f} MB  sys {res['sys_s']:5.2f} s  "
              f"minor faults {res['minflt']}  replica plans {res['replica_plan_cpu_s']:.2f} s (not counted)",
              flush=True)
        print(f"         with orientations: cpu {res['o_cpu_s']:6.2f} s {_runs(res['o_cpu_runs'])}wall "
              f"{res['o_wall_s']:6.2f} s (warm)  recall {res['o_found']}/{res['o_planted']} (turned "
              f"{res['o_found_turned']}/{res['o_planted_turned']})  false {res['o_false_segments']}  loads "
              f"{res['o_stream_loads']}  peak RSS {res['o_peak_rss_mb']:7.1f} MB  sys {res['o_sys_s']:5.2f} s  "
              f"minor faults {res['o_minflt']}  replica plans {res['o_replica_plan_cpu_s']:.2f} s (not counted)",
              flush=True)
        if "o_cold_wall_s" in res:
            d = res["dropped"]
            print(f"         cold, with orientations (pages of {d['files']} files, {d['bytes'] / 1e9:.2f} GB dropped; "
                  f"{(d['still_cached_bytes'] or 0) / 1e6:.1f} MB still cached): wall {res['o_cold_wall_s']:6.2f} s  "
                  f"cpu {res['o_cold_cpu_s']:6.2f} s  read {res['o_cold_read_mb']:.0f} MB from storage  "
                  f"recall {res['o_cold_recall']}  peak RSS {res['o_cold_peak_rss_mb']:.1f} MB", flush=True)
        if not a.keep and base < a.max_build_hours:
            shutil.rmtree(target, ignore_errors=True)
    for prev, cur in zip(rows, rows[1:]):
        f = cur["hours"] / prev["hours"]
        e = 1 / np.log10(f) if f > 1 else float("nan")
        r = cur["cpu_s"] / max(prev["cpu_s"], 1e-6)
        ro = cur["o_cpu_s"] / max(prev["o_cpu_s"], 1e-6)
        print(f"{prev['hours']:.0f} h -> {cur['hours']:.0f} h (x{f:.0f} corpus): cpu time upright x{r:.2f} "
              f"(per 10x: x{r ** e:.2f}), with orientations x{ro:.2f} (per 10x: x{ro ** e:.2f})")
        if "o_cold_wall_s" in cur and "o_cold_wall_s" in prev:
            rc = cur["o_cold_wall_s"] / max(prev["o_cold_wall_s"], 1e-6)
            print(f"  cold wall with orientations x{rc:.2f} (per 10x: x{rc ** e:.2f}); projected to 10,000 h: "
                  f"{cur['o_cold_wall_s'] * (10000 / cur['hours']) ** (np.log10(rc ** e)):.1f} s")
    print(json.dumps(rows))
    if a.dir is None and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
